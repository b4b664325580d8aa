#if canImport(Glibc)
import Glibc
#endif
import OATTestSupport
import OpenAudioToolbox
import Synchronization
import Testing

/// AudioFilePlayer decodes ahead, before the device starts, as much time at every rate: the
/// device's first request (afplay's PulseAudio stream asks for its whole 0.4 s target at once)
/// is served from decoded audio, not padded with silence. With queue buffers of a fixed 4096
/// frames (six of them) a 96 kHz file had 0.26 s decoded, and its first 0.4 s underran.
@Suite struct FilePlayerStartTests {
    @Test(.requires(TestResource.ffmpegMissing), arguments: [(8000, 1), (44100, 2), (96000, 2), (192000, 2), (48000, 8)])
    func theFirstRequestOfTheDeviceIsServedWhole(_ setup: (rate: Int, channels: Int)) throws {
        let scratch = try ScratchDirectory("player-start")
        defer { scratch.remove() }
        let path = scratch.path + "/clip.wav"
        let layout = [1: "mono", 2: "stereo", 8: "7.1"][setup.channels]!
        let tones = (0..<setup.channels).map { "0.3*sin(2*PI*\(300 + 200 * $0)*t+1)" }.joined(separator: "|")
        try #require(runFFmpeg(["-f", "lavfi", "-i", "aevalsrc=\(tones):s=\(setup.rate):d=2:c=\(layout)", "-c:a", "pcm_f32le", path]))
        let request = Int(0.4 * Double(setup.rate))
        let device = Locked<HandDrivenOutputDevice?>(nil)
        let player = try AudioFilePlayer(paths: [path], output: { format throws(AudioError) in
            let d = HandDrivenOutputDevice(format: format, framesPerRender: request / 4)
            device.withLock { $0 = d }
            return d
        })
        defer { player.stop() }
        try player.play()
        let d = try #require(device.withLock { $0 })
        #expect(d.isStarted)
        // The device's first request: its whole buffer, at once.
        let (result, planes) = try #require(d.render(request, fill: 0))
        let silent = (0..<request).filter { i in planes.allSatisfy { $0[i] == 0 } }.count
        #expect(result.frames == request)
        #expect(silent == 0, "\(silent) of the first \(request) frames were silence")
        #expect(player.underrunCount == 0)
    }
}
