#if canImport(Glibc)
import Glibc
#endif
import AudioCore
import AudioDevices
import AudioQueueEngine
import AudioStreaming
import AudioTestSupport
import Testing

/// StreamingPlayer over HTTP against the loopback fault-injecting server, into a WAV file
/// written as fast as the player feeds it (not real time).
@Suite struct StreamingPlayerHTTPTests {
    /// An on-demand MP3 whose connection drops mid-stream resumes with a Range request at the
    /// next byte: every frame plays exactly once, no repeat and no hole.
    @Test func onDemandDisconnectPlaysEveryFrameOnce() async throws {
        let dir = try ScratchDirectory("splayer-http")
        defer { dir.remove() }
        let file = dir.path + "/a.mp3"
        try #require(makeFixture(file, rate: 44100, channels: 2, seconds: 3, codec: ["-c:a", "libmp3lame", "-b:a", "128k"]))
        let reference = try decodeWithToolbox(file).samples
        let server = try TestHTTPServer()
        defer { server.stop() }
        var route = TestHTTPServer.Route(body: .file(file), contentType: "audio/mpeg")
        route.faults = [.disconnect(afterBytes: 20_011)]
        server.route("/a.mp3", route)
        let out = dir.path + "/out.wav"
        let log = StreamingEventLog()
        let player = StreamingPlayer(output: wavOutput(out), onEvent: log.handler)
        let task = log.attach(player)
        await player.play(server.url("/a.mp3"))
        #expect(await log.waitFor(20, isStopped))
        let stats = await player.statistics
        await player.stop()
        task.cancel()
        #expect(log.stopReason == .ended)
        #expect(log.events.contains { if case .reconnected(_, true) = $0 { true } else { false } })
        _ = stats
        let requests = server.requests(to: "/a.mp3")
        #expect(requests.count == 2)
        #expect(requests.last?.range == "bytes=20011-")
        let played = try readFloatWAV(out).samples
        #expect(played.count == reference.count, "played \(played.count / 2) frames of \(reference.count / 2)")
        let alignment = alignSegments(recording: played, reference: reference, channels: 2)
        #expect(alignment.segments.count == 1 && alignment.unmatchedFrames == 0, "\(alignment)")
    }

    /// A live stream (no length, no ranges) that drops is rejoined: the player reports a
    /// discontinuous reconnect and keeps playing.
    @Test func liveStreamRejoinsAndKeepsPlaying() async throws {
        let dir = try ScratchDirectory("splayer-http-live")
        defer { dir.remove() }
        let file = dir.path + "/a.mp3"
        try #require(makeFixture(file, rate: 44100, channels: 2, seconds: 2, codec: ["-c:a", "libmp3lame", "-b:a", "128k"]))
        let bytes = try #require(Corpus.read(file))
        let server = try TestHTTPServer()
        defer { server.stop() }
        var route = TestHTTPServer.Route(body: .looping(bytes), contentType: "audio/mpeg")
        route.acceptsRanges = false
        route.sendsContentLength = false
        route.icyMetaInterval = 8192
        route.throttleBytesPerSecond = 64_000
        route.faults = [.disconnect(afterBytes: 40_000)]
        server.route("/live.mp3", route)
        server.setTitle("Live One", for: "/live.mp3")
        let out = dir.path + "/out.wav"
        let log = StreamingEventLog()
        let player = StreamingPlayer(output: wavOutput(out, realTime: false), onEvent: log.handler)
        let task = log.attach(player)
        await player.play(server.url("/live.mp3"))
        #expect(await log.waitFor(10) { if case .reconnected(_, false) = $0 { true } else { false } })
        // Audio keeps coming after the rejoin.
        let before = await player.position.seconds
        try await Task.sleep(for: .seconds(1.5))
        let after = await player.position.seconds
        let stats = await player.statistics
        let info = await player.sourceInfo
        await player.stop()
        task.cancel()
        #expect(after > before + 0.5, "position \(before) -> \(after) after the rejoin")
        #expect(stats.reconnects >= 1)
        #expect(info?.isLive == true)
        #expect(log.events.contains { if case .metadata(let m, _, _) = $0 { m.title == "Live One" } else { false } })
        #expect(log.stopReason == .stopped)
    }

    /// A 404 stops with an error promptly, naming the status.
    @Test func notFoundStopsWithAnErrorPromptly() async throws {
        let server = try TestHTTPServer()
        defer { server.stop() }
        var route = TestHTTPServer.Route(body: .bytes([]), contentType: "text/plain")
        route.status = 404
        server.route("/missing.mp3", route)
        let log = StreamingEventLog()
        let player = StreamingPlayer(output: { format throws(AudioError) in try AudioOutput.open(.null(realTime: false), format: format).device }, onEvent: log.handler)
        let task = log.attach(player)
        let start = HostTime.now()
        await player.play(server.url("/missing.mp3"))
        #expect(await log.waitFor(5, isStopped))
        task.cancel()
        // Timed on the player's own thread (from its first event to the stop), so a starved
        // cooperative pool in a parallel test run does not count.
        let timed = log.timed
        let seconds = (timed.last { isStopped($0.event) }?.seconds ?? 99) - (timed.first?.seconds ?? 0)
        _ = start
        print("404: stopped(error) after \(seconds) s")
        // No retries for a 404: well under the reconnect policy's give-up time (60 s).
        #expect(seconds < 5, "stopped after \(seconds) s")
        guard case .error(let e) = log.stopReason else {
            Issue.record("expected an error stop, got \(String(describing: log.stopReason))")
            return
        }
        #expect(e.description.contains("404"), "\(e)")
    }
}

/// An item that fails mid-way (its connection drops and the reconnect gets a 404): the session's
/// stop reason follows the last item of the queue, and the failed item keeps its error event.
@Suite struct StreamingPlayerMidwayFailureTests {
    /// Serves `good.mp3` normally and `bad.mp3` (the same bytes) dropping after 20 011 bytes,
    /// with a 404 for the reconnect; plays `names` to the end and returns the log and the frames played.
    func play(_ names: [String]) async throws -> (log: StreamingEventLog, frames: Int, fileFrames: Int) {
        let dir = try ScratchDirectory("splayer-midway")
        defer { dir.remove() }
        let file = dir.path + "/a.mp3"
        try #require(makeFixture(file, rate: 44100, channels: 2, seconds: 2, codec: ["-c:a", "libmp3lame", "-b:a", "128k"]))
        let fileFrames = try decodeWithToolbox(file).samples.count / 2
        let server = try TestHTTPServer()
        defer { server.stop() }
        server.route("/good.mp3", TestHTTPServer.Route(body: .file(file), contentType: "audio/mpeg"))
        var bad = TestHTTPServer.Route(body: .file(file), contentType: "audio/mpeg")
        bad.faults = [.disconnect(afterBytes: 20_011), .status(404, retryAfter: nil)]
        server.route("/bad.mp3", bad)
        let out = dir.path + "/out.wav"
        let log = StreamingEventLog()
        let player = StreamingPlayer(output: wavOutput(out), onEvent: log.handler)
        let task = log.attach(player)
        await player.play(names.map { server.url("/\($0)") })
        #expect(await log.waitFor(20, isStopped))
        await player.stop()
        task.cancel()
        let frames = try readFloatWAV(out).samples.count / 2
        return (log, frames, fileFrames)
    }

    func errors(_ log: StreamingEventLog) -> [(Int, AudioError)] {
        log.events.compactMap { if case .error(let i, let e) = $0 { (i, e) } else { nil } }
    }

    /// The only item fails after some audio played: the session stops with its error.
    @Test func theLastItemFailingMidWayStopsWithItsError() async throws {
        let (log, frames, fileFrames) = try await play(["bad.mp3"])
        let errors = errors(log)
        #expect(errors.count == 1 && errors.first?.0 == 0, "\(log.events)")
        #expect(frames > 0 && frames < fileFrames, "played \(frames) of \(fileFrames) frames")
        guard case .error(let e) = log.stopReason else {
            Issue.record("expected an error stop, got \(String(describing: log.stopReason))")
            return
        }
        #expect(e == errors.first?.1)
        #expect(e.description.contains("404"), "\(e)")
    }

    /// A good item, then one failing mid-way: the session stops with the second one's error.
    @Test func aQueueWhoseLastItemFailsStopsWithTheError() async throws {
        let (log, frames, fileFrames) = try await play(["good.mp3", "bad.mp3"])
        #expect(errors(log).map(\.0) == [1], "\(log.events)")
        #expect(frames > fileFrames && frames < 2 * fileFrames, "played \(frames) frames")
        guard case .error = log.stopReason else {
            Issue.record("expected an error stop, got \(String(describing: log.stopReason))")
            return
        }
    }

    /// An item failing mid-way, then a good one that plays to its end: the error event stays,
    /// the session ends normally.
    @Test func aFailedItemFollowedByAGoodOneEnds() async throws {
        let (log, frames, fileFrames) = try await play(["bad.mp3", "good.mp3"])
        #expect(errors(log).map(\.0) == [0], "\(log.events)")
        #expect(frames > fileFrames && frames < 2 * fileFrames, "played \(frames) frames")
        #expect(log.stopReason == .ended)
        #expect(log.events.contains(.itemFinished(index: 1, url: log.events.compactMap { if case .itemStarted(1, let u, _) = $0 { u } else { nil } }.first ?? "")))
    }
}

/// A chained Ogg Opus stream (two ffmpeg-encoded files back to back, the second logical stream
/// starting mid-way), on demand and live: each link's pre-skip (decoder priming) is trimmed, so
/// the second link's audio is exactly what ffmpeg gives decoding it on its own, from its first
/// frame (before the fix, its 312 frames of priming played at the join).
@Suite struct StreamingPlayerChainedOpusTests {
    @Test(arguments: [false, true])
    func eachLinksPreSkipIsTrimmed(live: Bool) async throws {
        let dir = try ScratchDirectory("splayer-chain-opus")
        defer { dir.remove() }
        let a = dir.path + "/a.ogg", b = dir.path + "/b.ogg"
        try #require(makeFixture(a, rate: 48000, channels: 2, seconds: 1, codec: ["-c:a", "libopus", "-b:a", "96k"]))
        try #require(makeFixture(b, rate: 48000, channels: 2, seconds: 1.5, codec: ["-c:a", "libopus", "-b:a", "96k"]))
        let first = try #require(decodeWithFFmpeg(a))
        let second = try #require(decodeWithFFmpeg(b))
        let chained = try #require(Corpus.read(a)) + (try #require(Corpus.read(b)))
        let server = try TestHTTPServer()
        defer { server.stop() }
        var route = TestHTTPServer.Route(body: .bytes(chained), contentType: "audio/ogg")
        if live {
            route.acceptsRanges = false
            route.sendsContentLength = false
        }
        server.route("/chain.opus", route)
        let out = dir.path + "/out.wav"
        let log = StreamingEventLog()
        var policy = BufferingPolicy()
        policy.rejoinsLiveStreamAtEnd = false
        let player = StreamingPlayer(policy: policy, output: wavOutput(out), onEvent: log.handler)
        let task = log.attach(player)
        await player.play(server.url("/chain.opus"))
        #expect(await log.waitFor(20, isStopped))
        await player.stop()
        task.cancel()
        #expect(log.stopReason == .ended, "\(String(describing: log.stopReason))")
        let played = try readFloatWAV(out)
        #expect(played.channels == 2)
        let frames = played.samples.count / 2
        let firstFrames = first.count / 2, secondFrames = second.count / 2
        let expected = firstFrames + secondFrames
        // Where the second link begins: the offset (in the packet after the first link) whose
        // audio matches ffmpeg's decode of the second link on its own.
        func match(at start: Int) -> Double {
            let n = min(second.count, played.samples.count - 2 * start)
            guard n > 0 else { return -.infinity }
            return snr(Array(second.prefix(n)), Array(played.samples[(2 * start)..<(2 * start + n)]))
        }
        let start = (firstFrames..<(firstFrames + 960)).max { match(at: $0) < match(at: $1) } ?? firstFrames
        let joinSNR = match(at: start)
        print("chained Opus (live \(live)): played \(frames) frames, ffmpeg per link \(firstFrames) + \(secondFrames) = \(expected); "
              + "second link at frame \(start) (SNR \(joinSNR) dB)")
        // Each link's pre-skip is trimmed: the second link's first frame is its first real
        // frame (SNR from there), and nothing of its priming plays (no frames before it).
        #expect(joinSNR > 30, "the second link does not match ffmpeg's decode (SNR \(joinSNR) dB at \(start))")
        // A link's end padding (its last packet's frames past the last granule, 648 here) is not
        // trimmed (the player learns the link's end only after its packets were played out):
        // the first link's plays before the second link, the last link's at the end.
        #expect(start - firstFrames < 960, "second link at \(start), the first link has \(firstFrames) frames")
        #expect(frames - (start + secondFrames) >= 0 && frames - (start + secondFrames) < 960, "played \(frames), the second link ends at \(start + secondFrames)")
    }
}
