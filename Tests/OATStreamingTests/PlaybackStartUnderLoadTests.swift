#if canImport(Glibc)
import Glibc
#endif
import OATCore
import OATDevices
import OATNetwork
import OATStreaming
import OATTestSupport
import Testing

/// Playback starts only once the audio counted toward the start target is in the output
/// queue's play ring, not merely enqueued: the queue's own thread copies enqueued buffers into
/// the ring, and under load it can lag behind the decoder. The player used to start the device
/// as soon as 0.15 s had been *enqueued*; a device whose first pull came before the queue's
/// thread had copied the second buffer found the ring short and played silence (CI:
/// `PlaybackTimeshiftTests` recorded 1,004 frames, then 20 frames of silence — the first
/// buffer held the 1,004 frames of the first 4 KiB the source read, the device pulls 1,024).
///
/// A live PCM stream that arrives in a burst (the first read a short 4 KiB, as a file source
/// and many servers give), started ten times into a real-time WAV output while threads keep
/// every core busy: every start is gap-free (no padded silence between the first and the last
/// frame played) and the device never found the ring short.
@Suite(.serialized) struct PlaybackStartUnderLoadTests {
    /// Runs of exactly silent frames (every channel 0: what the output pads a short render
    /// with) of `minimumFrames` or more between the first and the last non-silent frame.
    static func paddedSilences(_ samples: [Float], channels: Int, minimumFrames: Int = 2) -> [(frame: Int, frames: Int)] {
        // Exactly zero in every channel: the ring scanner's gaps with the smallest threshold.
        PlaybackRingUnderLoadTests.gaps(samples, channels: channels, minimumFrames: minimumFrames, threshold: .leastNonzeroMagnitude)
    }

    @Test func liveStreamStartsWithoutAGapUnderCPULoad() async throws {
        let dir = try ScratchDirectory("start-load")
        defer { dir.remove() }
        let source = dir.path + "/live.wav"
        try #require(makeFixture(source, rate: 44100, channels: 2, seconds: 3, codec: ["-c:a", "pcm_s16le"]))
        let factory: ByteSourceFactory = { url throws(AudioError) in ScriptedByteSource(path: url, script: .init(), live: true) }
        var policy = BufferingPolicy()
        policy.rejoinsLiveStreamAtEnd = false
        // Two hogs per core (at least four): the queue's thread competes for a core.
        let hogs = try PlaybackRingUnderLoadTests.CPUHogs(count: max(4, 2 * Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))))
        defer { hogs.stop() }
        var failures: [String] = []
        let runs = 10
        for run in 0..<runs {
            let out = dir.path + "/out\(run).wav"
            let log = StreamingEventLog()
            let player = StreamingPlayer(policy: policy, output: wavOutput(out, realTime: true), sourceFactory: factory, onEvent: log.handler)
            let task = log.attach(player)
            await player.play(source)
            let started = await log.waitFor(10) { if case .firstAudio = $0 { true } else { false } }
            try await Task.sleep(for: .milliseconds(500))
            let stats = await player.statistics
            await player.stop()
            task.cancel()
            guard started else {
                failures.append("run \(run): no first audio: \(log.events.suffix(4))")
                continue
            }
            let played = try readFloatWAV(out).samples
            let silences = Self.paddedSilences(played, channels: 2)
            print("start under load, run \(run): first audio \(stats.timeToFirstAudio.map { "\(Int(($0 * 1000).rounded())) ms" } ?? "-"), played \(played.count / 2) frames, output underruns \(stats.outputUnderruns), padded silences \(silences.map { "\($0.frames) frames at \($0.frame)" })")
            if played.count / 2 < 11_025 { failures.append("run \(run): only \(played.count / 2) frames played") }
            if !silences.isEmpty || stats.outputUnderruns > 0 {
                failures.append("run \(run): \(stats.outputUnderruns) short renders, silences \(silences.map { "\($0.frames) frames at \($0.frame)" })")
            }
        }
        #expect(failures.isEmpty, "\(failures.count) of \(runs) starts had a gap: \(failures)")
    }
}
