#if canImport(Glibc)
import Glibc
#endif
import OATCore
import OATDevices
import OATFiles
import OATQueueEngine
import OATStreaming
import OATTestSupport
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

/// How the chained stream reaches the player.
enum ChainFeed: String, Sendable, CaseIterable, CustomTestStringConvertible {
    /// A local file: one 32 KiB read holds both links, so one parse call sees the second link
    /// begin (and end) before the first link's decoder is made.
    case wholeFile
    /// HTTP on demand, throttled to 1 000-byte writes: each link's pages arrive in small pieces.
    case httpPieces
    /// HTTP with no length and no ranges (live), throttled the same way.
    case livePieces
    /// HTTP live, as fast as loopback goes.
    case live
    var testDescription: String { rawValue }
}

/// A chained Ogg Opus stream (two ffmpeg-encoded files with the same encoder setup back to back,
/// the second logical stream starting mid-way), fed whole and in pieces, on demand and live:
/// each link's pre-skip (decoder priming) is trimmed, so the second link's audio is exactly what
/// ffmpeg gives decoding it on its own, from its first frame (before that fix, its 312 frames of
/// priming played at the join), and the count played is the same however the bytes came.
///
/// Before the fix of the whole-file case, the first link's decoder took the packet table the
/// parser held after the call, the second link's (its setup being equal, it was not seen as
/// another link's): the first link was cut to the second link's valid-frame count.
@Suite struct StreamingPlayerChainedOpusTests {
    @Test(arguments: ChainFeed.allCases)
    func eachLinksPreSkipIsTrimmed(feed: ChainFeed) async throws {
        let live = feed == .live || feed == .livePieces
        let dir = try ScratchDirectory("splayer-chain-opus")
        defer { dir.remove() }
        let a = dir.path + "/a.ogg", b = dir.path + "/b.ogg"
        // Links of different lengths and end paddings (48 000 + 648 and 36 000 + 168 frames), so
        // one link's packet table given to the other shows.
        try #require(makeFixture(a, rate: 48000, channels: 2, seconds: 1, codec: ["-c:a", "libopus", "-b:a", "48k"]))
        try #require(makeFixture(b, rate: 48000, channels: 2, seconds: 0.75, codec: ["-c:a", "libopus", "-b:a", "48k"]))
        let first = try #require(decodeWithFFmpeg(a))
        let second = try #require(decodeWithFFmpeg(b))
        let chained = try #require(Corpus.read(a)) + (try #require(Corpus.read(b)))
        // The whole chain in one read of the file source (32 KiB).
        try #require(chained.count < 32 << 10, "the chain is \(chained.count) bytes")
        let server = try TestHTTPServer()
        defer { server.stop() }
        var route = TestHTTPServer.Route(body: .bytes(chained), contentType: "audio/ogg")
        if live {
            route.acceptsRanges = false
            route.sendsContentLength = false
        }
        if feed == .httpPieces || feed == .livePieces { route.throttleBytesPerSecond = 20_000 }
        server.route("/chain.opus", route)
        let chainFile = dir.path + "/chain.opus"
        #expect(writeFile(chainFile, chained))
        let out = dir.path + "/out.wav"
        let log = StreamingEventLog()
        var policy = BufferingPolicy()
        policy.rejoinsLiveStreamAtEnd = false
        let player = StreamingPlayer(policy: policy, output: wavOutput(out), onEvent: log.handler)
        let task = log.attach(player)
        await player.play(feed == .wholeFile ? chainFile : server.url("/chain.opus"))
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
        print("chained Opus (\(feed)): played \(frames) frames, ffmpeg per link \(firstFrames) + \(secondFrames) = \(expected); "
              + "second link at frame \(start) (SNR \(joinSNR) dB)")
        // Each link's pre-skip is trimmed: the second link's first frame is its first real
        // frame (SNR from there), and nothing of its priming plays (no frames before it).
        #expect(joinSNR > 30, "the second link does not match ffmpeg's decode (SNR \(joinSNR) dB at \(start))")
        // A link's end padding (its last packet's frames past the last granule) is not trimmed
        // (the player learns the link's end only after its packets were decoded): the first
        // link's plays before the second link, the last link's at the end. Each link's padding
        // is what ffmpeg's Ogg muxer leaves: its last 20 ms packet less the frames its last
        // granule keeps, known from the files.
        let tableA = try #require(try AudioFile(path: a).packetTableInfo), tableB = try #require(try AudioFile(path: b).packetTableInfo)
        #expect(tableA.numberValidFrames == Int64(firstFrames) && tableB.numberValidFrames == Int64(secondFrames))
        let padA = Int(tableA.remainderFrames), padB = Int(tableB.remainderFrames)
        #expect(padA > 0 && padA < 960 && padB > 0 && padB < 960, "paddings \(padA), \(padB)")
        #expect(start == firstFrames + padA, "second link at \(start), the first link has \(firstFrames) frames and \(padA) of padding")
        #expect(frames == firstFrames + padA + secondFrames + padB,
                "played \(frames) frames, expected \(firstFrames) + \(padA) + \(secondFrames) + \(padB)")
    }
}
