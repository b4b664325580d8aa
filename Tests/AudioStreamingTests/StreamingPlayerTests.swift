#if canImport(Glibc)
import Glibc
#endif
import AudioCore
import AudioDevices
import AudioQueueEngine
import AudioStreaming
import AudioTestSupport
import Synchronization
import Testing

/// Collects a player's events with the time they arrived.
final class StreamingEventLog: Sendable {
    private let log = Mutex<[(time: UInt64, event: StreamingPlayerEvent)]>([])
    let start = HostTime.now()

    /// Starts a task that records `player`'s events.
    func attach(_ player: StreamingPlayer) -> Task<Void, Never> {
        Task { [self] in
            for await e in player.events { log.withLock { $0.append((HostTime.now(), e)) } }
        }
    }

    var events: [StreamingPlayerEvent] { log.withLock { $0.map(\.event) } }
    var timed: [(seconds: Double, event: StreamingPlayerEvent)] {
        log.withLock { $0.map { (HostTime.seconds(ticks: $0.time - start), $0.event) } }
    }

    var states: [String] {
        events.compactMap { if case .state(let s) = $0 { s.name } else { nil } }
    }

    var stopReason: StreamingStopReason? {
        for e in events.reversed() { if case .state(.stopped(let r)) = e { return r } }
        return nil
    }

    /// Waits (polling, up to `seconds`) until an event matches.
    func waitFor(_ seconds: Double, _ predicate: (StreamingPlayerEvent) -> Bool) async -> Bool {
        let deadline = HostTime.now() + HostTime.ticks(seconds: seconds)
        while HostTime.now() < deadline {
            if events.contains(where: predicate) { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return events.contains(where: predicate)
    }
}

func isStopped(_ e: StreamingPlayerEvent) -> Bool {
    if case .state(.stopped) = e { true } else { false }
}

func isPlaying(_ e: StreamingPlayerEvent) -> Bool {
    if case .state(.playing) = e { true } else { false }
}

/// A device factory writing to a WAV file (as fast as the player feeds it, or in real time).
func wavOutput(_ path: String, realTime: Bool = false) -> AudioOutputDeviceFactory {
    { format throws(AudioError) in try AudioOutput.open(.wav(path: path, realTime: realTime), format: format).device }
}

/// Reads a float WAV written by the WAV output (interleaved samples, channels).
func readFloatWAV(_ path: String) throws -> (samples: [Float], channels: Int) {
    let d = try decodeWithToolbox(path)
    return (d.samples, d.channels)
}

@Suite struct StreamingPlayerTests {
    /// A PCM file plays to its end through the queue: every frame exactly once, in order, and the
    /// states and item events come in the documented order.
    @Test func playsAFileToTheEndWithStatesAndItemEvents() async throws {
        let dir = try ScratchDirectory("splayer")
        defer { dir.remove() }
        let source = dir.path + "/a.wav"
        try #require(makeFixture(source, rate: 44100, channels: 2, seconds: 1.5, codec: ["-c:a", "pcm_f32le"]))
        let out = dir.path + "/out.wav"
        let player = StreamingPlayer(output: wavOutput(out))
        let log = StreamingEventLog()
        let task = log.attach(player)
        await player.play(source)
        #expect(await log.waitFor(20, isStopped))
        await player.stop()
        task.cancel()
        #expect(log.stopReason == .ended)
        let states = log.states
        #expect(states.first == "connecting")
        #expect(states.contains("playing"))
        #expect(states.last == "stopped")
        let events = log.events
        #expect(events.contains { if case .itemStarted(0, _, _) = $0 { true } else { false } })
        #expect(events.contains { if case .itemFinished(0, _) = $0 { true } else { false } })
        #expect(events.contains { if case .firstAudio = $0 { true } else { false } })
        let reference = try decodeWithToolbox(source)
        let played = try readFloatWAV(out)
        #expect(played.samples.count == reference.samples.count, "played \(played.samples.count / 2) frames of \(reference.samples.count / 2)")
        #expect(snr(reference.samples, played.samples) > 90)
        let stats = await player.statistics
        _ = stats
    }

    /// Two halves of one signal, each an MP3 with its own encoder delay and padding, play as one
    /// queue with no gap and no overlap: exactly the frames of both decodes back to back.
    @Test func gaplessJoinOfTwoMP3sHasTheExactFrameCount() async throws {
        let dir = try ScratchDirectory("splayer-gapless")
        defer { dir.remove() }
        let total = 88_200, split = 50_000
        let source = dir.path + "/source.wav"
        try #require(makeFixture(source, rate: 44100, channels: 2, seconds: 2, codec: ["-c:a", "pcm_f32le"]))
        let first = dir.path + "/first.mp3", second = dir.path + "/second.mp3"
        let mp3 = ["-c:a", "libmp3lame", "-b:a", "256k"]
        try #require(runFFmpeg(["-i", source, "-af", "atrim=end_sample=\(split)"] + mp3 + [first]))
        try #require(runFFmpeg(["-i", source, "-af", "atrim=start_sample=\(split),asetpts=PTS-STARTPTS"] + mp3 + [second]))
        let a = try decodeWithToolbox(first), b = try decodeWithToolbox(second)
        let out = dir.path + "/out.wav"
        let player = StreamingPlayer(output: wavOutput(out))
        let log = StreamingEventLog()
        let task = log.attach(player)
        await player.play([first, second])
        #expect(await log.waitFor(20, isStopped))
        await player.stop()
        task.cancel()
        #expect(log.stopReason == .ended)
        let played = try readFloatWAV(out)
        #expect(played.samples.count == 2 * total, "played \(played.samples.count / 2) frames, expected \(total)")
        let joined = a.samples + b.samples
        let alignment = alignSegments(recording: played.samples, reference: joined, channels: 2)
        #expect(alignment.segments.count == 1)
        #expect(alignment.unmatchedFrames == 0)
        let finished = log.events.compactMap { if case .itemFinished(let i, _) = $0 { i } else { nil } }
        #expect(finished == [0, 1])
    }

    /// A missing file ends in stopped(error) promptly with a message naming the path.
    @Test func missingFileStopsWithAnError() async throws {
        let player = StreamingPlayer(output: { format throws(AudioError) in try AudioOutput.open(.null(realTime: false), format: format).device })
        let log = StreamingEventLog()
        let task = log.attach(player)
        await player.play("/nonexistent/nothing.mp3")
        #expect(await log.waitFor(5, isStopped))
        task.cancel()
        guard case .error(let e) = log.stopReason else {
            Issue.record("expected an error stop, got \(String(describing: log.stopReason))")
            return
        }
        #expect(e.message.contains("/nonexistent/nothing.mp3"))
    }

    /// Volume is validated and kept.
    @Test func volumeOutOfRangeThrows() async throws {
        let player = StreamingPlayer(output: { format throws(AudioError) in try AudioOutput.open(.null(realTime: false), format: format).device })
        await #expect(throws: AudioError.self) { try await player.setVolume(1.5) }
        try await player.setVolume(0.25, fade: 0)
        #expect(await player.currentVolume == 0.25)
    }
}
