#if canImport(Glibc)
import Glibc
#endif
import OATTestSupport
import OpenAudioToolbox
import Testing

/// Issue 19: a file's channel layout reaches the output device. A 6-channel file was labelled
/// 5.1 and an 8-channel one 7.1 by their counts alone, so a 6.0 file's back-centre channel played
/// on the LFE and its side channels on the rear speakers. Each case is a WAV
/// (WAVE_FORMAT_EXTENSIBLE with its channel mask, as FFmpeg writes it) with a distinct tone per
/// channel, played with the file player (afplay's path) and the streaming player to a private
/// PulseAudio null sink that has every position involved; the monitor is recorded at the sink's
/// map and each tone must be loudest on its own position and absent from the others'.
@Suite(.serialized, .requires(TestResource.first(TestResource.pulseAudioMissing, TestResource.ffmpegMissing)))
struct PlaybackChannelLayoutTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var layout: String
        /// The sink position each channel of the file must land on, in file order.
        var positions: [String]
        var testDescription: String { layout }
    }

    /// FFmpeg's layouts, in its (the WAVE mask's) channel order.
    static let cases = [
        Case(layout: "quad", positions: ["front-left", "front-right", "rear-left", "rear-right"]),
        Case(layout: "6.0", positions: ["front-left", "front-right", "front-center", "rear-center", "side-left", "side-right"]),
        Case(layout: "hexagonal", positions: ["front-left", "front-right", "front-center", "rear-left", "rear-right", "rear-center"]),
    ]
    static let sinkMap = ["front-left", "front-right", "front-center", "lfe", "rear-left", "rear-right", "rear-center", "side-left", "side-right"]
    static let tones: [Double] = [330, 470, 610, 750, 890, 1030]
    static let rate = 48_000

    /// Amplitude of `frequency` in channel `channel` of interleaved `samples` (Goertzel).
    static func amplitude(_ samples: [Float], channel: Int, channels: Int, frequency: Double) -> Double {
        let n = samples.count / channels
        guard n > 0 else { return 0 }
        let w = 2 * Double.pi * frequency / Double(rate)
        let c = 2 * cos(w)
        var s1 = 0.0, s2 = 0.0
        for i in 0..<n {
            let s = Double(samples[i * channels + channel]) + c * s1 - s2
            s2 = s1
            s1 = s
        }
        let power = s1 * s1 + s2 * s2 - c * s1 * s2
        return 2 * sqrt(max(0, power)) / Double(n)
    }

    static func makeFile(_ c: Case, in dir: String) throws -> String {
        let path = dir + "/\(c.layout).wav"
        let expression = (0..<c.positions.count).map { "0.3*sin(2*PI*\(Int(tones[$0]))*t)" }.joined(separator: "|")
        try #require(runFFmpeg(["-f", "lavfi", "-i", "aevalsrc=\(expression):s=\(rate):d=1.5:c=\(c.layout)", "-c:a", "pcm_f32le", path]))
        return path
    }

    /// Checks where each tone landed in a recording of the sink's monitor.
    static func check(_ c: Case, _ recorded: [Float], _ what: String) {
        let channels = sinkMap.count
        #expect(recorded.count / channels > rate / 2, "\(what): recorded only \(recorded.count / channels) frames")
        for (k, position) in c.positions.enumerated() {
            let levels = (0..<channels).map { amplitude(recorded, channel: $0, channels: channels, frequency: tones[k]) }
            let expected = sinkMap.firstIndex(of: position)!
            // Loudest there (a sink position the file lacks may carry a copy as loud: PulseAudio
            // remixes into unmatched positions).
            let loudest = levels.max() ?? 0
            #expect(loudest > 0.05 && levels[expected] >= loudest * 0.9,
                    "\(what): channel \(k)'s tone (\(Int(tones[k])) Hz) plays at \(levels[expected]) on \(position), \(loudest) elsewhere: \(levels)")
            // Absent from the other positions the file uses (a sink position the file lacks may
            // be remixed from its neighbours).
            for other in c.positions where other != position {
                let o = sinkMap.firstIndex(of: other)!
                #expect(levels[o] < levels[expected] / 30, "\(what): channel \(k)'s tone leaks onto \(other): \(levels[o]) against \(levels[expected])")
            }
        }
    }

    static func daemon() throws -> (PulseTestDaemon, PulseTestDaemon.Sink) {
        let sink = PulseTestDaemon.Sink(name: "oat_layout", rate: rate, channels: sinkMap.count, channelMap: sinkMap.joined(separator: ","))
        return (try PulseTestDaemon(sinks: [sink]), sink)
    }

    @Test(arguments: cases)
    func filePlayerPlacesEachChannel(_ c: Case) throws {
        let dir = try ScratchDirectory("layout")
        defer { dir.remove() }
        let path = try Self.makeFile(c, in: dir.path)
        let (daemon, sink) = try Self.daemon()
        defer { daemon.stop() }
        let recording = try daemon.recordMonitor(of: sink, to: dir.path + "/monitor.raw")
        let player = try AudioFilePlayer(paths: [path], output: pulseOutput(daemon))
        defer { player.stop() }
        try player.play()
        #expect(waitUntil(15) { player.currentState == .ended })
        sleep(seconds: 0.3)
        Self.check(c, recording.stop(), "file player, \(c.layout)")
    }

    @Test(arguments: cases)
    func streamingPlayerPlacesEachChannel(_ c: Case) async throws {
        let dir = try ScratchDirectory("layout-stream")
        defer { dir.remove() }
        let path = try Self.makeFile(c, in: dir.path)
        let (daemon, sink) = try Self.daemon()
        defer { daemon.stop() }
        let recording = try daemon.recordMonitor(of: sink, to: dir.path + "/monitor.raw")
        let player = StreamingPlayer(output: pulseOutput(daemon))
        await player.play(path)
        var ended = false
        for _ in 0..<300 {
            if case .stopped = await player.state { ended = true; break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(ended)
        await player.stop()
        sleep(seconds: 0.3)
        Self.check(c, recording.stop(), "streaming player, \(c.layout)")
    }
}
