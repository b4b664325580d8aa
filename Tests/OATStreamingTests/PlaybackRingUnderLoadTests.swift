#if canImport(Glibc)
import Glibc
#endif
import OATCore
import OATDevices
import OATNetwork
import OATQueueEngine
import OATStreaming
import OATTestSupport
import Synchronization
import Testing

/// A live stream's play ring is sized in time (``BufferingPolicy/liveRingSeconds``, 0.7 s by default; it was
/// 2 s), the deeper reserve waits in received bytes. A live stream from a jittery server (a
/// slow start, then a network stall of 1.5 s) played into a private PulseAudio null sink while
/// two threads keep both cores busy: no underrun, and no gap in the audio recorded from the
/// sink's monitor, with the old 2 s ring and with the new default alike.
@Suite(.serialized) struct PlaybackRingUnderLoadTests {
    /// Threads spinning on the CPU until stopped.
    final class CPUHogs: Sendable {
        private final class RunFlag: Sendable { let running = Atomic<Bool>(true) }
        private let flag: RunFlag
        private let threads: [JoinableThread]

        init(count: Int) throws {
            let flag = RunFlag()
            self.flag = flag
            threads = try (0..<count).map { i in
                try JoinableThread(name: "cpu-hog-\(i)") {
                    var x: UInt64 = 1
                    while flag.running.load(ordering: .relaxed) {
                        for _ in 0..<10_000 { x = x &* 6364136223846793005 &+ 1442695040888963407 }
                    }
                    if x == 0 { print("cpu hog: \(x)") }
                }
            }
        }

        func stop() {
            flag.running.store(false, ordering: .relaxed)
            for t in threads { t.join() }
        }
    }

    /// Silences of at least `minimumFrames` frames (every channel below `threshold`) between the
    /// first and the last non-silent frame of `samples`: the dropouts a listener would hear.
    static func gaps(_ samples: [Float], channels: Int, minimumFrames: Int, threshold: Float = 0.001) -> [(frame: Int, frames: Int)] {
        let frames = samples.count / channels
        var found: [(frame: Int, frames: Int)] = []
        var run = 0
        var started = false
        for f in 0..<frames {
            var silent = true
            for c in 0..<channels where abs(samples[f * channels + c]) >= threshold { silent = false; break }
            if silent {
                run += 1
            } else {
                if started && run >= minimumFrames { found.append((f - run, run)) }
                started = true
                run = 0
            }
        }
        return found
    }

    @Test(arguments: [2.0, BufferingPolicy().liveRingSeconds])
    func jitteryLiveStreamUnderCPULoadDoesNotDropOut(ringSeconds: Double) async throws {
        let dir = try ScratchDirectory("ring-load")
        defer { dir.remove() }
        let file = dir.path + "/live.mp3"
        // Longer than the play: the stream never loops (an MP3 joined to itself has a short
        // silence at the joint, the encoder's padding).
        try #require(makeFixture(file, rate: 44100, channels: 2, seconds: 40, codec: ["-c:a", "libmp3lame", "-b:a", "128k"]))
        let bytes = try #require(Corpus.read(file))

        let daemon = try PulseTestDaemon(sampleRate: 44100, channels: 2)
        defer { daemon.stop() }
        let server = try TestHTTPServer()
        defer { server.stop() }
        var route = TestHTTPServer.Route(body: .looping(bytes), contentType: "audio/mpeg")
        route.acceptsRanges = false
        route.sendsContentLength = false
        // 1.25x the stream's rate: the reserve grows by a quarter of a second every second from
        // the 0.15 s playback starts on (about 2.1 s at 8 s), then the network stalls for 1.5 s.
        route.throttleBytesPerSecond = 20_000
        route.faults = [.stall(afterBytes: 160_000, seconds: 1.5)]
        server.route("/live.mp3", route)

        let recording = try daemon.recordMonitor(to: "\(daemon.directory)/monitor.raw")
        let sink = daemon.sinkName, serverName = daemon.server
        let output: AudioOutputDeviceFactory = { format throws(AudioError) in
            try AudioOutput.open(.pulse(sink: sink), format: format, options: AudioOutput.Options(pulseServer: serverName)).device
        }
        var policy = BufferingPolicy()
        policy.liveRingSeconds = ringSeconds
        policy.steadyOutputLatency = 0.4   // as afplay
        let log = StreamingEventLog()
        let hogs = try CPUHogs(count: 2)
        defer { hogs.stop() }
        let player = StreamingPlayer(policy: policy, output: output, onEvent: log.handler)
        let task = log.attach(player)
        await player.play(server.url("/live.mp3"))
        #expect(await log.waitFor(10) { if case .firstAudio = $0 { true } else { false } })
        try await Task.sleep(for: .seconds(13))
        let stats = await player.statistics
        let info = await player.sourceInfo
        await player.stop()
        task.cancel()
        hogs.stop()
        try await Task.sleep(for: .seconds(0.3))
        let samples = recording.stop()

        let gaps = Self.gaps(samples, channels: 2, minimumFrames: 441)
        print("ring \(ringSeconds) s under load: played \(stats.playedSeconds) s, underruns \(stats.underruns), output underruns \(stats.outputUnderruns), gaps of 10 ms or more \(gaps.map { "\($0.frames) frames at \($0.frame)" })")
        #expect(info?.isLive == true, "a live stream (the ring under test is the live one)")
        #expect(stats.playedSeconds > 10, "played \(stats.playedSeconds) s")
        #expect(stats.underruns == 0, "the player rebuffered \(stats.underruns) times")
        #expect(stats.outputUnderruns == 0, "the device found the ring short \(stats.outputUnderruns) times")
        #expect(gaps.isEmpty, "silences in the recorded audio: \(gaps)")
        #expect(server.requests(to: "/live.mp3").count == 1, "the stall did not end the connection")
    }
}
