#if canImport(Glibc)
import Glibc
#endif
import OATCore
import OATDevices
import OATQueueEngine
import OATStreaming
import OATTestSupport
import Testing

/// A reconnect policy with every time divided by `scale` (10: a 60 s outage is tested as 6 s).
func scaledPolicy(_ scale: Double) -> ReconnectPolicy {
    var p = ReconnectPolicy()
    p.connectTimeout /= scale
    p.stallTimeout /= scale
    p.initialBackoff /= scale
    p.maximumBackoff /= scale
    p.giveUpAfter /= scale
    p.healthyAfter /= scale
    p.maximumRetryAfter /= scale
    return p
}

/// A source factory giving HTTP sources with `policy`.
func httpSources(_ policy: ReconnectPolicy) -> ByteSourceFactory {
    { url throws(AudioError) in
        var o = HTTPOptions()
        o.reconnect = policy
        return HTTPByteSource(url: url, options: o)
    }
}

/// Network faults against StreamingPlayer (real time: the outages are scripted in seconds, so
/// the suite runs serially with the other `Playback` suites): outages of 2 s and of 60 s (at a
/// tenth of the time scale, with the policy scaled alike) on on-demand and live streams, a
/// 1 byte/s trickle, and a format change mid-stream.
@Suite(.serialized) struct PlaybackNetworkFaultTests {
    /// An on-demand MP3 whose network drops after 20 011 bytes for `outage` seconds: the player
    /// resumes with a Range request at the next byte, every frame plays exactly once.
    func onDemandOutage(seconds outage: Double, policy: ReconnectPolicy, playerStall: Double) async throws {
        let dir = try ScratchDirectory("netfault-od")
        defer { dir.remove() }
        let file = dir.path + "/a.mp3"
        try #require(makeFixture(file, rate: 44100, channels: 2, seconds: 3, codec: ["-c:a", "libmp3lame", "-b:a", "128k"]))
        let reference = try decodeWithToolbox(file).samples
        let server = try TestHTTPServer()
        defer { server.stop() }
        var route = TestHTTPServer.Route(body: .file(file), contentType: "audio/mpeg")
        route.faults = [.outage(afterBytes: 20_011, seconds: outage)]
        server.route("/a.mp3", route)
        let out = dir.path + "/out.wav"
        let log = StreamingEventLog()
        var bp = BufferingPolicy()
        bp.stallTimeout = playerStall
        let player = StreamingPlayer(policy: bp, output: wavOutput(out), sourceFactory: httpSources(policy), onEvent: log.handler)
        let task = log.attach(player)
        await player.play(server.url("/a.mp3"))
        #expect(await log.waitFor(outage * 3 + 20, isStopped))
        await player.stop()
        task.cancel()
        #expect(log.stopReason == .ended, "\(String(describing: log.stopReason))")
        let resumed = log.timed.first { if case .reconnected(_, true) = $0.event { true } else { false } }
        #expect(resumed != nil)
        let requests = server.requests(to: "/a.mp3")
        #expect(requests.count >= 3, "\(requests.count) requests: the outage dropped none")
        #expect(requests.last?.range == "bytes=20011-")
        let played = try readFloatWAV(out).samples
        #expect(played.count == reference.count, "played \(played.count / 2) frames of \(reference.count / 2)")
        let alignment = alignSegments(recording: played, reference: reference, channels: 2)
        #expect(alignment.segments.count == 1 && alignment.unmatchedFrames == 0, "\(alignment)")
        print("on-demand outage \(outage) s: \(requests.count) requests, resumed at \(resumed.map { String($0.seconds) } ?? "-") s")
    }

    @Test func onDemandOutageOf2SecondsResumesAtTheExactByte() async throws {
        try await onDemandOutage(seconds: 2, policy: ReconnectPolicy(), playerStall: 15)
    }

    @Test func onDemandOutageOf60SecondsAtATenthOfTheTimeScale() async throws {
        try await onDemandOutage(seconds: 6, policy: scaledPolicy(10), playerStall: 1.5)
    }

    /// A live ICY stream whose network drops for `outage` seconds is rejoined (discontinuous)
    /// and keeps playing.
    func liveOutage(seconds outage: Double, policy: ReconnectPolicy, playerStall: Double) async throws {
        let dir = try ScratchDirectory("netfault-live")
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
        route.faults = [.outage(afterBytes: 40_000, seconds: outage)]
        server.route("/live.mp3", route)
        server.setTitle("Live One", for: "/live.mp3")
        let out = dir.path + "/out.wav"
        let log = StreamingEventLog()
        var bp = BufferingPolicy()
        bp.stallTimeout = playerStall
        let player = StreamingPlayer(policy: bp, output: wavOutput(out, realTime: false), sourceFactory: httpSources(policy), onEvent: log.handler)
        let task = log.attach(player)
        await player.play(server.url("/live.mp3"))
        let rejoined = await log.waitFor(outage * 3 + 10) { if case .reconnected(_, false) = $0 { true } else { false } }
        #expect(rejoined)
        let before = await player.position.seconds
        try await Task.sleep(for: .seconds(1.5))
        let after = await player.position.seconds
        let stats = await player.statistics
        await player.stop()
        task.cancel()
        #expect(after > before + 0.5, "position \(before) -> \(after) after the rejoin")
        #expect(stats.reconnects >= 1)
        #expect(!log.events.contains { if case .error = $0 { true } else { false } }, "\(log.events)")
        #expect(log.stopReason == .stopped)
        #expect(server.requests(to: "/live.mp3").count >= 3)
        print("live outage \(outage) s: \(server.requests(to: "/live.mp3").count) requests, position \(before) -> \(after)")
    }

    @Test func liveOutageOf2SecondsRejoins() async throws {
        try await liveOutage(seconds: 2, policy: ReconnectPolicy(), playerStall: 15)
    }

    @Test func liveOutageOf60SecondsAtATenthOfTheTimeScale() async throws {
        try await liveOutage(seconds: 6, policy: scaledPolicy(10), playerStall: 1.5)
    }

    /// An outage longer than the give-up time ends in a clear error, not endless buffering.
    @Test func anOutageLongerThanTheGiveUpTimeStopsWithAClearError() async throws {
        let dir = try ScratchDirectory("netfault-giveup")
        defer { dir.remove() }
        let file = dir.path + "/a.mp3"
        try #require(makeFixture(file, rate: 44100, channels: 2, seconds: 3, codec: ["-c:a", "libmp3lame", "-b:a", "128k"]))
        let server = try TestHTTPServer()
        defer { server.stop() }
        var route = TestHTTPServer.Route(body: .file(file), contentType: "audio/mpeg")
        route.faults = [.outage(afterBytes: 20_011, seconds: 60)]
        server.route("/a.mp3", route)
        let log = StreamingEventLog()
        var bp = BufferingPolicy()
        bp.stallTimeout = 1.5
        let policy = scaledPolicy(30)   // gives up after 4 s
        let player = StreamingPlayer(policy: bp, output: wavOutput(dir.path + "/out.wav"), sourceFactory: httpSources(policy), onEvent: log.handler)
        let task = log.attach(player)
        await player.play(server.url("/a.mp3"))
        #expect(await log.waitFor(20, isStopped))
        await player.stop()
        task.cancel()
        let timed = log.timed
        let seconds = (timed.last { isStopped($0.event) }?.seconds ?? 99) - (timed.first?.seconds ?? 0)
        // The item fails with the source's error; what it had decoded plays out, then the
        // session stops with that error.
        let failure = log.events.compactMap { if case .error(_, let e) = $0 { e } else { nil } }.first
        guard let e = failure else {
            Issue.record("expected an error event, got \(log.events)")
            return
        }
        #expect(log.stopReason == .error(e), "\(String(describing: log.stopReason))")
        #expect(e.description.contains("gave up"), "\(e)")
        #expect(e.description.contains("/a.mp3"), "\(e)")
        #expect(seconds > 3 && seconds < 10, "stopped after \(seconds) s")
        print("outage past give-up: stopped after \(seconds) s: \(e)")
    }

    /// A server that sends the head and then one byte per second: the source treats it as a
    /// stall (reconnects), then gives up with a clear error; the player never buffers forever.
    @Test func aOneBytePerSecondTrickleEndsInAClearError() async throws {
        let dir = try ScratchDirectory("netfault-trickle")
        defer { dir.remove() }
        let file = dir.path + "/a.mp3"
        try #require(makeFixture(file, rate: 44100, channels: 2, seconds: 3, codec: ["-c:a", "libmp3lame", "-b:a", "128k"]))
        let server = try TestHTTPServer()
        defer { server.stop() }
        var route = TestHTTPServer.Route(body: .file(file), contentType: "audio/mpeg")
        route.throttleBytesPerSecond = 1
        server.route("/a.mp3", route)
        let log = StreamingEventLog()
        var policy = scaledPolicy(15)    // stall window 1 s, gives up after 8 s
        policy.minimumBytesPerSecond = 64
        let player = StreamingPlayer(output: wavOutput(dir.path + "/out.wav"), sourceFactory: httpSources(policy), onEvent: log.handler)
        let task = log.attach(player)
        await player.play(server.url("/a.mp3"))
        #expect(await log.waitFor(30, isStopped))
        await player.stop()
        task.cancel()
        let timed = log.timed
        let seconds = (timed.last { isStopped($0.event) }?.seconds ?? 99) - (timed.first?.seconds ?? 0)
        guard case .error(let e) = log.stopReason else {
            Issue.record("expected an error stop, got \(String(describing: log.stopReason))")
            return
        }
        #expect(e.code == .timedOut, "\(e)")
        #expect(e.description.contains("bytes/s") && e.description.contains("gave up"), "\(e)")
        #expect(server.requests(to: "/a.mp3").count >= 3)
        #expect(seconds > 7 && seconds < 20, "stopped after \(seconds) s")
        print("trickle: stopped after \(seconds) s, \(server.requests(to: "/a.mp3").count) requests: \(e)")
    }

    /// A trickle that is slow but above the minimum (a low bit rate stream) is not a fault.
    @Test func aSlowButSufficientStreamIsNotAFault() throws {
        let server = try TestHTTPServer()
        defer { server.stop() }
        let body = (0..<6000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        var route = TestHTTPServer.Route(body: .bytes(body))
        route.throttleBytesPerSecond = 2000
        server.route("/slow", route)
        var o = HTTPOptions()
        o.reconnect.stallTimeout = 0.5
        o.reconnect.minimumBytesPerSecond = 500
        let source = HTTPByteSource(url: server.url("/slow"), options: o)
        _ = try source.open(at: 0)
        var got: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 4096)
        loop: while true {
            let r = try buf.withUnsafeMutableBytes { try source.read(into: $0) }
            switch r {
            case .bytes(let n): got += buf[0..<n]
            case .end: break loop
            default: continue
            }
        }
        #expect(got == body)
        #expect(source.statistics.reconnects == 0)
    }

    /// A chained Ogg Vorbis file (44.1 kHz stereo, then 22.05 kHz mono) served over HTTP plays
    /// through the format change: both links are heard, the second resampled to the device
    /// format of the first, and the item ends normally.
    @Test func chainedOggWithARateAndChannelChangePlaysThrough() async throws {
        let dir = try ScratchDirectory("netfault-chain")
        defer { dir.remove() }
        let a = dir.path + "/a.ogg", b = dir.path + "/b.ogg"
        try #require(makeFixture(a, rate: 44100, channels: 2, seconds: 2, codec: ["-c:a", "libvorbis", "-q:a", "5"]))
        try #require(makeFixture(b, rate: 22050, channels: 1, seconds: 2, codec: ["-c:a", "libvorbis", "-q:a", "5"]))
        let first = try decodeWithToolbox(a)
        let chained = try #require(Corpus.read(a)) + (try #require(Corpus.read(b)))
        let server = try TestHTTPServer()
        defer { server.stop() }
        server.route("/chain.ogg", TestHTTPServer.Route(body: .bytes(chained), contentType: "audio/ogg"))
        let out = dir.path + "/out.wav"
        let log = StreamingEventLog()
        let player = StreamingPlayer(output: wavOutput(out), onEvent: log.handler)
        let task = log.attach(player)
        await player.play(server.url("/chain.ogg"))
        #expect(await log.waitFor(20, isStopped))
        await player.stop()
        task.cancel()
        #expect(log.stopReason == .ended, "\(String(describing: log.stopReason))")
        #expect(!log.events.contains { if case .error = $0 { true } else { false } }, "\(log.events)")
        let played = try readFloatWAV(out)
        #expect(played.channels == 2)
        let frames = played.samples.count / 2
        print("chained Ogg: played \(frames) frames (2 x 88200 expected)")
        #expect(abs(frames - 176_400) < 4096, "played \(frames) frames")
        // The first link exactly, then the second link: not silence.
        let head = Array(played.samples.prefix(first.samples.count))
        #expect(snr(first.samples, head) > 60)
        let tail = played.samples.dropFirst(first.samples.count + 8192)
        let power = tail.reduce(0.0) { $0 + Double($1 * $1) } / Double(max(1, tail.count))
        #expect(power > 1e-3, "the second link is silent (power \(power))")
    }

    /// A live ICY stream whose MP3 bit rate switches from 128 to 64 kbit/s and back (the server
    /// loops two encodings) plays through the switches: no error, no reconnect, position advancing.
    @Test func icyStreamSwitchingMP3BitRatePlaysThrough() async throws {
        let dir = try ScratchDirectory("netfault-bitrate")
        defer { dir.remove() }
        let hi = dir.path + "/hi.mp3", lo = dir.path + "/lo.mp3"
        try #require(makeFixture(hi, rate: 44100, channels: 2, seconds: 1, codec: ["-c:a", "libmp3lame", "-b:a", "128k", "-write_xing", "0"]))
        try #require(makeFixture(lo, rate: 44100, channels: 2, seconds: 1, codec: ["-c:a", "libmp3lame", "-b:a", "64k", "-write_xing", "0"]))
        let bytes = try #require(Corpus.read(hi)) + (try #require(Corpus.read(lo)))
        let server = try TestHTTPServer()
        defer { server.stop() }
        var route = TestHTTPServer.Route(body: .looping(bytes), contentType: "audio/mpeg")
        route.acceptsRanges = false
        route.sendsContentLength = false
        route.icyStatusLine = true
        route.icyMetaInterval = 8192
        route.throttleBytesPerSecond = 48_000
        server.route("/radio", route)
        server.setTitle("Bitrate", for: "/radio")
        let out = dir.path + "/out.wav"
        let log = StreamingEventLog()
        let player = StreamingPlayer(output: wavOutput(out), onEvent: log.handler)
        let task = log.attach(player)
        await player.play(server.url("/radio"))
        #expect(await log.waitFor(10, isPlaying))
        try await Task.sleep(for: .seconds(3))
        let position = await player.position.seconds
        let stats = await player.statistics
        await player.stop()
        task.cancel()
        // 3 s at 48 kB/s is about 6 passes of the 128k/64k pair: 6 switches or more.
        print("ICY bit-rate switch: position \(position) s, reconnects \(stats.reconnects)")
        #expect(position > 4, "position \(position)")
        #expect(stats.reconnects == 0)
        #expect(!log.events.contains { if case .error = $0 { true } else { false } }, "\(log.events)")
        #expect(log.stopReason == .stopped)
        let played = try readFloatWAV(out).samples
        // No long silent run: the audio continues across every switch (at most 2 MP3 frames of
        // near-silence at each join, from the encoders' priming).
        var run = 0, longest = 0
        for f in 0..<(played.count / 2) {
            if abs(played[2 * f]) < 1e-4 && abs(played[2 * f + 1]) < 1e-4 { run += 1; longest = max(longest, run) } else { run = 0 }
        }
        #expect(longest < 2 * 1152 + 1105, "a silent run of \(longest) frames")
    }
}
