#if canImport(Glibc)
import Glibc
#endif
import AudioTestSupport
import OpenAudioToolbox
import Synchronization
import Testing

/// A device that renders only when the test asks, with the frame count the test gives.
final class ManualOutputDevice: AudioOutputDevice, @unchecked Sendable {
    let format: AudioDeviceFormat
    let name = "manual"
    let framesPerRender: Int
    private let callback = Mutex<AudioRenderCallback?>(nil)
    private let events = AudioDeviceEventQueue()

    init(format: AudioDeviceFormat, framesPerRender: Int) {
        self.format = format
        self.framesPerRender = framesPerRender
    }

    var latency: Double { 0 }
    var playedFrames: Int64 { 0 }
    var renderedFrames: Int64 { 0 }
    var droppedEventCount: Int { 0 }
    var isStarted: Bool { callback.withLock { $0 != nil } }
    func start(_ render: @escaping AudioRenderCallback) throws(AudioError) { callback.withLock { $0 = render } }
    func pause() throws(AudioError) {}
    func resume() throws(AudioError) {}
    func stop(drain: Bool) { callback.withLock { $0 = nil } }
    func close() { callback.withLock { $0 = nil } }
    func takeEvents() -> [AudioDeviceEvent] { events.take() }

    /// One render call of `frames` frames: what it returned and how many frames were silent
    /// (all channels zero).
    func render(_ frames: Int) -> (result: AudioRenderResult, silentFrames: Int)? {
        guard let render = callback.withLock({ $0 }) else { return nil }
        let channels = format.channels
        let storage = UnsafeMutablePointer<Float>.allocate(capacity: frames * channels)
        storage.initialize(repeating: 0, count: frames * channels)
        defer { storage.deallocate() }
        let pointers = UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>.allocate(capacity: channels)
        defer { pointers.deallocate() }
        for c in 0..<channels { pointers[c] = storage + c * frames }
        let result = render(pointers, frames, AudioTimeStamp(sampleTime: 0, hostTime: HostTime.now(), rateScalar: 1, flags: .sampleHostTimeValid))
        let silent = (0..<frames).filter { i in (0..<channels).allSatisfy { storage[$0 * frames + i] == 0 } }.count
        return (result, silent)
    }
}

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
        let device = Mutex<ManualOutputDevice?>(nil)
        let player = try AudioFilePlayer(paths: [path], output: { format throws(AudioError) in
            let d = ManualOutputDevice(format: format, framesPerRender: request / 4)
            device.withLock { $0 = d }
            return d
        })
        defer { player.stop() }
        try player.play()
        let d = try #require(device.withLock { $0 })
        #expect(d.isStarted)
        // The device's first request: its whole buffer, at once.
        let (result, silent) = try #require(d.render(request))
        #expect(result.frames == request)
        #expect(silent == 0, "\(silent) of the first \(request) frames were silence")
        #expect(player.underrunCount == 0)
    }
}
