#if canImport(Glibc)
import Glibc
#endif
import OATCore
import OATDevices
import OATQueueEngine
import OATStreaming
import OATTestSupport
import Synchronization
import Testing

/// Collects a player's events with the time they arrived.
final class StreamingEventLog: Sendable {
    private let log = Locked<[(time: UInt64, event: StreamingPlayerEvent)]>([])
    let start = HostTime.now()

    /// Records an event (pass as the player's `onEvent`: it runs on the player's thread, so the
    /// log does not depend on the cooperative pool, which parallel blocking tests can starve).
    var handler: @Sendable (StreamingPlayerEvent) -> Void {
        { [self] e in log.withLock { $0.append((HostTime.now(), e)) } }
    }

    /// Drains `player.events` (the AsyncStream path; the log itself is filled by ``handler``).
    func attach(_ player: StreamingPlayer) -> Task<Void, Never> {
        Task { for await _ in player.events {} }
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
        let log = StreamingEventLog()
        let player = StreamingPlayer(output: wavOutput(out), onEvent: log.handler)
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
        let log = StreamingEventLog()
        let player = StreamingPlayer(output: wavOutput(out), onEvent: log.handler)
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
        let log = StreamingEventLog()
        let player = StreamingPlayer(output: { format throws(AudioError) in try AudioOutput.open(.null(realTime: false), format: format).device }, onEvent: log.handler)
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
        let log = StreamingEventLog()
        let player = StreamingPlayer(output: { format throws(AudioError) in try AudioOutput.open(.null(realTime: false), format: format).device }, onEvent: log.handler)
        await #expect(throws: AudioError.self) { try await player.setVolume(1.5) }
        try await player.setVolume(0.25, fade: 0)
        #expect(await player.currentVolume == 0.25)
    }
}

/// Playlists and HLS through the player (local files, fast WAV output; PLS over loopback HTTP).
@Suite struct StreamingPlayerPlaylistTests {
    /// An M3U list of two local files (relative entries) plays both, in order, to the end.
    @Test func m3uListPlaysItsEntries() async throws {
        let dir = try ScratchDirectory("splayer-m3u")
        defer { dir.remove() }
        try #require(makeFixture(dir.path + "/a.wav", rate: 44100, channels: 2, seconds: 0.5, codec: ["-c:a", "pcm_s16le"]))
        try #require(makeFixture(dir.path + "/b.wav", rate: 44100, channels: 2, seconds: 0.7, codec: ["-c:a", "pcm_s16le"]))
        #expect(writeFile(dir.path + "/list.m3u", Array("#EXTM3U\n#EXTINF:1,A\na.wav\n#EXTINF:1,B\nb.wav\n".utf8)))
        let out = dir.path + "/out.wav"
        let log = StreamingEventLog()
        let player = StreamingPlayer(output: wavOutput(out), onEvent: log.handler)
        let task = log.attach(player)
        await player.play(dir.path + "/list.m3u")
        #expect(await log.waitFor(20, isStopped))
        let queue = await player.queue
        await player.stop()
        task.cancel()
        #expect(log.stopReason == .ended)
        #expect(queue == [dir.path + "/a.wav", dir.path + "/b.wav"])
        let started = log.events.compactMap { if case .itemStarted(let i, let u, _) = $0 { "\(i):\(u.split(separator: "/").last ?? "")" } else { nil } }
        #expect(started == ["0:a.wav", "1:b.wav"])
        let played = try readFloatWAV(out).samples
        #expect(played.count / 2 == 22050 + 30870)
    }

    /// A PLS served over HTTP names an MP3 on the same server: it plays.
    @Test func plsOverHTTPPlaysItsEntry() async throws {
        let dir = try ScratchDirectory("splayer-pls")
        defer { dir.remove() }
        let file = dir.path + "/a.mp3"
        try #require(makeFixture(file, rate: 44100, channels: 2, seconds: 1, codec: ["-c:a", "libmp3lame", "-b:a", "128k"]))
        let server = try TestHTTPServer()
        defer { server.stop() }
        server.route("/a.mp3", TestHTTPServer.Route(body: .file(file), contentType: "audio/mpeg"))
        server.serve("/radio.pls", bytes: Array("[playlist]\nNumberOfEntries=1\nFile1=/a.mp3\nTitle1=Station\n".utf8), contentType: "audio/x-scpls")
        let out = dir.path + "/out.wav"
        let log = StreamingEventLog()
        let player = StreamingPlayer(output: wavOutput(out), onEvent: log.handler)
        let task = log.attach(player)
        await player.play(server.url("/radio.pls"))
        #expect(await log.waitFor(20, isStopped))
        await player.stop()
        task.cancel()
        #expect(log.stopReason == .ended)
        #expect(server.requests(to: "/a.mp3").count == 1)
        let reference = try decodeWithToolbox(file).samples
        let played = try readFloatWAV(out).samples
        #expect(played.count == reference.count)
    }

    /// An on-demand HLS presentation (AAC in MPEG-TS segments, made by ffmpeg) plays to its end
    /// through HLSByteSource: about its duration, and the source's audio.
    @Test func hlsPresentationPlays() async throws {
        let dir = try ScratchDirectory("splayer-hls")
        defer { dir.remove() }
        let source = dir.path + "/source.wav"
        try #require(makeFixture(source, rate: 44100, channels: 2, seconds: 4, codec: ["-c:a", "pcm_f32le"]))
        try #require(runFFmpeg(["-i", source, "-c:a", "aac", "-b:a", "192k", "-f", "hls", "-hls_time", "1",
                                "-hls_playlist_type", "vod", "-hls_segment_filename", dir.path + "/seg%d.ts", dir.path + "/index.m3u8"]))
        let out = dir.path + "/out.wav"
        let log = StreamingEventLog()
        let player = StreamingPlayer(output: wavOutput(out), onEvent: log.handler)
        let task = log.attach(player)
        await player.play(dir.path + "/index.m3u8")
        #expect(await log.waitFor(30, isStopped))
        await player.stop()
        task.cancel()
        #expect(log.stopReason == .ended, "\(log.events.suffix(4))")
        let played = try readFloatWAV(out).samples
        let frames = played.count / 2
        #expect(abs(frames - 4 * 44100) < 4096, "played \(frames) frames of about \(4 * 44100)")
        let reference = try decodeWithToolbox(source).samples
        // Somewhere in the middle the played audio is the source's (AAC at 192k: > 20 dB).
        var best = -Double.infinity
        let at = 2 * 44100
        for lag in -3000...3000 where at + lag >= 0 {
            best = max(best, segmentSNR(played, at, reference, at + lag, frames: 2048, channels: 2))
        }
        #expect(best > 20, "best SNR \(best)")
    }
}

/// Pausing a live stream keeps receiving into the timeshift file; resume plays from where it
/// paused; a full timeshift file drops its oldest audio (a discontinuity, then the newer audio).
@Suite struct PlaybackTimeshiftTests {
    @Test(arguments: [false, true])
    func pausedLiveStreamIsRecordedToDisk(_ overflow: Bool) async throws {
        let dir = try ScratchDirectory("splayer-timeshift")
        defer { dir.remove() }
        let source = dir.path + "/a.wav"
        try #require(makeFixture(source, rate: 44100, channels: 2, seconds: 7, codec: ["-c:a", "pcm_s16le"]))
        let reference = try decodeWithToolbox(source).samples
        var policy = BufferingPolicy()
        policy.rejoinsLiveStreamAtEnd = false
        policy.maximumBufferedBytes = 64 << 10
        policy.timeshiftBytes = overflow ? 128 << 10 : 64 << 20
        // A live stream that arrives faster than it plays (a burst), ending after one pass
        // (not joined again).
        let factory: ByteSourceFactory = { url throws(AudioError) in ScriptedByteSource(path: url, script: .init(), live: true) }
        let out = dir.path + "/out.wav"
        let log = StreamingEventLog()
        let player = StreamingPlayer(policy: policy, output: wavOutput(out, realTime: true), sourceFactory: factory, onEvent: log.handler)
        let task = log.attach(player)
        await player.play(source)
        #expect(await log.waitFor(5, isPlaying))
        await player.pause()
        try await Task.sleep(for: .milliseconds(600))
        let buffered = await player.statistics.bufferedBytes
        await player.resume()
        // The whole file (7 s) plays.
        try await Task.sleep(for: .seconds(7.2))
        await player.stop()
        task.cancel()
        print("timeshift overflow=\(overflow): \(buffered) bytes waiting while paused")
        let played = try readFloatWAV(out).samples
        let alignment = alignSegments(recording: played, reference: reference, channels: 2)
        print("timeshift overflow=\(overflow): \(alignment)")
        let first = try #require(alignment.segments.first)
        #expect(first.referenceFrame == 0)
        if overflow {
            // Bounded: memory limit + timeshift file + one chunk in flight; the oldest audio was
            // dropped, so the first run stops short, and playback went on after the gap.
            #expect(buffered <= (64 << 10) + (128 << 10) + (32 << 10))
            #expect(first.frames < reference.count / 2 - 10_000)
            #expect(PlaybackStreamingPlayerTests.audibleFrames(played, from: first.recordingEnd) > 22_050)
        } else {
            // Memory holds 64 KiB (+ one 32 KiB chunk): the rest waited in the timeshift file.
            #expect(buffered > 96 << 10, "more than the memory limit waited (on disk)")
            #expect(first.frames >= reference.count / 2 - 2048, "the whole pass played in one run: \(first)")
        }
    }
}

/// Playlists found by their Content-Type or content (no playlist extension), and seeking inside
/// an on-demand HLS presentation.
@Suite struct StreamingPlayerPlaylistSniffTests {
    /// A PLS with a playlist Content-Type, an M3U sent as `text/plain`, and an HLS playlist sent
    /// as `application/octet-stream`, none with a playlist extension: each is followed and its
    /// audio plays to the end (every frame of the MP3 entry once).
    @Test func playlistsWithoutExtensionAreFollowed() async throws {
        let dir = try ScratchDirectory("splayer-sniff")
        defer { dir.remove() }
        let file = dir.path + "/a.mp3"
        try #require(makeFixture(file, rate: 44100, channels: 2, seconds: 1, codec: ["-c:a", "libmp3lame", "-b:a", "128k"]))
        let wav = dir.path + "/source.wav"
        try #require(makeFixture(wav, rate: 44100, channels: 2, seconds: 3, codec: ["-c:a", "pcm_f32le"]))
        try #require(runFFmpeg(["-i", wav, "-c:a", "aac", "-b:a", "160k", "-f", "hls", "-hls_time", "1",
                                "-hls_playlist_type", "vod", "-hls_segment_filename", dir.path + "/seg%d.ts", dir.path + "/index.m3u8"]))
        let server = try TestHTTPServer()
        defer { server.stop() }
        server.route("/a.mp3", TestHTTPServer.Route(body: .file(file), contentType: "audio/mpeg"))
        server.serve("/station", bytes: Array("[playlist]\nNumberOfEntries=1\nFile1=/a.mp3\n".utf8), contentType: "audio/x-scpls")
        server.serve("/listen", bytes: Array("#EXTM3U\n#EXTINF:-1,Radio\n/a.mp3\n".utf8), contentType: "text/plain")
        server.route("/hls/index", TestHTTPServer.Route(body: .file(dir.path + "/index.m3u8"), contentType: "application/octet-stream"))
        for i in 0..<8 where !fileBytes(dir.path + "/seg\(i).ts").isEmpty {
            server.route("/hls/seg\(i).ts", TestHTTPServer.Route(body: .file(dir.path + "/seg\(i).ts"), contentType: "video/mp2t"))
        }
        let reference = try decodeWithToolbox(file).samples
        for (path, expectedFrames) in [("/station", reference.count / 2), ("/listen", reference.count / 2), ("/hls/index", 3 * 44100)] {
            let out = dir.path + "/out\(String(path.map { $0 == "/" ? "-" : $0 })).wav"
            let log = StreamingEventLog()
            let player = StreamingPlayer(output: wavOutput(out), onEvent: log.handler)
            let task = log.attach(player)
            await player.play(server.url(path))
            #expect(await log.waitFor(30, isStopped), "\(path) did not stop")
            await player.stop()
            task.cancel()
            #expect(log.stopReason == .ended, "\(path): \(log.events.suffix(4))")
            let frames = try readFloatWAV(out).samples.count / 2
            if path == "/hls/index" {
                #expect(abs(frames - expectedFrames) < 4096, "\(path): \(frames) frames of about \(expectedFrames)")
            } else {
                #expect(frames == expectedFrames, "\(path): \(frames) frames, expected \(expectedFrames)")
            }
        }
    }

    /// Two playlists without extensions that list each other stop with a clear limit error
    /// instead of expanding for ever.
    @Test func playlistsListingEachOtherStop() async throws {
        let server = try TestHTTPServer()
        defer { server.stop() }
        server.serve("/one", bytes: Array("#EXTM3U\n/two\n".utf8), contentType: "text/plain")
        server.serve("/two", bytes: Array("#EXTM3U\n/one\n".utf8), contentType: "text/plain")
        let log = StreamingEventLog()
        let player = StreamingPlayer(output: { format throws(AudioError) in try AudioOutput.open(.null(realTime: false), format: format).device }, onEvent: log.handler)
        let task = log.attach(player)
        await player.play(server.url("/one"))
        #expect(await log.waitFor(30, isStopped))
        await player.stop()
        task.cancel()
        let errors = log.events.compactMap { if case .error(_, let e) = $0 { e } else { nil } }
        #expect(errors.contains { $0.code == .limitExceeded && "\($0)".contains("list each other") }, "\(errors)")
    }
}

/// Seeking inside an on-demand HLS presentation, played in real time (timing-sensitive: runs in
/// the serial real-time group).
@Suite struct PlaybackHLSSeekTests {
    /// Seeking in an on-demand HLS presentation (AAC in MPEG-TS, 1 s segments) plays from the
    /// target: after the seek the output continues with the source's audio at that time, and
    /// the rest of the presentation follows (no repeat, no hole).
    @Test func seekInsideHLSPresentation() async throws {
        let dir = try ScratchDirectory("splayer-hls-seek")
        defer { dir.remove() }
        let source = dir.path + "/source.wav"
        try #require(makeFixture(source, rate: 44100, channels: 2, seconds: 6, codec: ["-c:a", "pcm_f32le"]))
        try #require(runFFmpeg(["-i", source, "-c:a", "aac", "-b:a", "192k", "-f", "hls", "-hls_time", "1",
                                "-hls_playlist_type", "vod", "-hls_segment_filename", dir.path + "/seg%d.ts", dir.path + "/index.m3u8"]))
        let out = dir.path + "/out.wav"
        let log = StreamingEventLog()
        let player = StreamingPlayer(output: wavOutput(out, realTime: true), onEvent: log.handler)
        let task = log.attach(player)
        await player.play(dir.path + "/index.m3u8")
        #expect(await log.waitFor(20, isPlaying))
        let target = 3.7
        try await player.seek(to: target)
        #expect(await log.waitFor(30, isStopped))
        await player.stop()
        task.cancel()
        #expect(log.stopReason == .ended, "\(log.events.suffix(4))")
        let seeks = log.events.compactMap { if case .seeked(_, let s, let estimated, let newRequest) = $0 { (s, estimated, newRequest) } else { nil } }
        try #require(seeks.count == 1, "\(log.events)")
        #expect(abs(seeks[0].0 - target) < 0.001 && !seeks[0].1 && seeks[0].2)
        let played = try readFloatWAV(out).samples
        let reference = try decodeWithToolbox(source).samples
        let frames = played.count / 2
        // If the seek is right, the last (6 - target) s of the output are the source from the
        // target on: look for the source's audio just after the target around that point.
        let expectedAfter = Int((6 - target) * 44100)
        let probe = Int(target * 44100) + 4410
        let guess = frames - expectedAfter + 4410
        var best = (lag: 0, snr: -Double.infinity)
        for lag in stride(from: -3000, through: 3000, by: 1) where guess + lag >= 0 && guess + lag + 1024 <= frames {
            let s = segmentSNR(played, guess + lag, reference, probe, frames: 1024, channels: 2)
            if s > best.snr { best = (lag, s) }
        }
        print("HLS seek figure: the audio at \(target) s is \(best.lag) frames from where an exact seek puts it (SNR \(dB(best.snr)))")
        #expect(best.snr > 20, "the audio after the seek was not found (best \(best.snr) dB)")
        #expect(abs(best.lag) < 2048, "the output after the seek is \(best.lag) frames off")
        // Later audio follows at the same offset (no repeat, no hole).
        let late = Int(5.2 * 44100)
        let lateOut = guess + best.lag + (late - probe)
        var lateBest = -Double.infinity
        for d in -64...64 where lateOut + d >= 0 && lateOut + d + 1024 <= frames {
            lateBest = max(lateBest, segmentSNR(played, lateOut + d, reference, late, frames: 1024, channels: 2))
        }
        #expect(lateBest > 20, "audio at 5.2 s does not follow the seek point (\(lateBest) dB)")
    }
}

/// An MP4 whose `moov` follows its `mdat`, over HTTP: the player jumps over the `mdat` with a
/// Range request for the `moov`, then comes back for the data, instead of downloading the
/// whole file before the first sample.
@Suite struct StreamingPlayerMoovAtEndTests {
    /// Top-level MP4 boxes: (type, offset, size).
    func boxes(_ bytes: [UInt8]) -> [(String, Int, Int)] {
        var out: [(String, Int, Int)] = []
        var at = 0
        while at + 8 <= bytes.count {
            var size = Int(bytes[at]) << 24 | Int(bytes[at + 1]) << 16 | Int(bytes[at + 2]) << 8 | Int(bytes[at + 3])
            let type = String(decoding: bytes[(at + 4)..<(at + 8)], as: UTF8.self)
            if size == 1, at + 16 <= bytes.count {
                size = bytes[(at + 8)..<(at + 16)].reduce(0) { $0 << 8 | Int($1) }
            }
            if size < 8 { break }
            out.append((type, at, size))
            at += size
        }
        return out
    }

    @Test func moovAfterMdatIsFetchedWithARangeRequest() async throws {
        let dir = try ScratchDirectory("splayer-moov")
        defer { dir.remove() }
        let file = dir.path + "/late.m4a"
        try #require(makeFixture(file, rate: 44100, channels: 2, seconds: 40, codec: ["-c:a", "aac", "-b:a", "256k"]))
        let bytes = try #require(Corpus.read(file))
        let top = boxes(bytes)
        let moov = try #require(top.first { $0.0 == "moov" }, "\(top.map(\.0))")
        let mdat = try #require(top.first { $0.0 == "mdat" })
        try #require(moov.1 > mdat.1, "ffmpeg wrote the moov first: \(top.map(\.0))")
        let server = try TestHTTPServer()
        defer { server.stop() }
        var route = TestHTTPServer.Route(body: .file(file), contentType: "audio/mp4")
        route.throttleBytesPerSecond = 1 << 20
        server.route("/late.m4a", route)
        let out = dir.path + "/out.wav"
        let log = StreamingEventLog()
        let player = StreamingPlayer(output: wavOutput(out), onEvent: log.handler)
        let task = log.attach(player)
        await player.play(server.url("/late.m4a"))
        #expect(await log.waitFor(60, isStopped))
        await player.stop()
        task.cancel()
        #expect(log.stopReason == .ended, "\(log.events.suffix(4))")
        let ranges = server.requests(to: "/late.m4a").map { $0.range ?? "-" }
        print("moov-at-end figure: \(bytes.count) bytes, mdat at \(mdat.1), moov at \(moov.1); requests: \(ranges)")
        #expect(ranges.contains("bytes=\(moov.1)-"), "no Range request for the moov at \(moov.1): \(ranges)")
        // First audio well before the whole mdat could have arrived at 1 MiB/s.
        let playing = log.timed.first { isPlaying($0.event) }?.seconds ?? 99
        let download = Double(bytes.count) / Double(1 << 20)
        print("moov-at-end figure: playing after \(playing) s; downloading the file takes \(download) s")
        #expect(playing < download / 2, "playing after \(playing) s")
        let reference = try decodeWithToolbox(file).samples
        let played = try readFloatWAV(out).samples
        #expect(played.count == reference.count, "\(played.count / 2) frames played, \(reference.count / 2) in the file")
    }
}

/// The optional crossfade between queue items (equal power).
@Suite struct StreamingPlayerCrossfadeTests {
    /// The amplitude of `frequency` in channel 0 over `frames` frames from `start`.
    func amplitude(_ samples: [Float], frequency: Double, start: Int, frames: Int) -> Double {
        toneAmplitude(samples, freq: frequency, rate: 44100, from: start, count: frames, channels: 2)
    }

    /// Two 2 s items (440 Hz, then 880 Hz, both at 0.5) with a 1 s crossfade: 3 s in all, only
    /// the first tone before the overlap and only the second after it, and in the middle of the
    /// overlap each at cos/sin(45°) = -3 dB (the summed power constant).
    @Test func twoItemsOverlapByTheFadeWithEqualPower() async throws {
        let dir = try ScratchDirectory("splayer-xfade")
        defer { dir.remove() }
        let a = dir.path + "/a.wav", b = dir.path + "/b.wav"
        try #require(runFFmpeg(["-f", "lavfi", "-i", "aevalsrc=0.5*sin(2*PI*440*t)|0.5*sin(2*PI*440*t):s=44100:d=2", "-c:a", "pcm_f32le", a]))
        try #require(runFFmpeg(["-f", "lavfi", "-i", "aevalsrc=0.5*sin(2*PI*880*t)|0.5*sin(2*PI*880*t):s=44100:d=2", "-c:a", "pcm_f32le", b]))
        var policy = BufferingPolicy()
        policy.crossfadeSeconds = 1
        let out = dir.path + "/out.wav"
        let log = StreamingEventLog()
        let player = StreamingPlayer(policy: policy, output: wavOutput(out), onEvent: log.handler)
        let task = log.attach(player)
        await player.play([a, b])
        #expect(await log.waitFor(30, isStopped))
        await player.stop()
        task.cancel()
        #expect(log.stopReason == .ended, "\(log.events.suffix(4))")
        let played = try readFloatWAV(out).samples
        #expect(played.count / 2 == 3 * 44100, "\(played.count / 2) frames, expected \(3 * 44100)")
        let w = 2205
        let before = (amplitude(played, frequency: 440, start: 22050, frames: w), amplitude(played, frequency: 880, start: 22050, frames: w))
        let middle = (amplitude(played, frequency: 440, start: 66150 - w / 2, frames: w), amplitude(played, frequency: 880, start: 66150 - w / 2, frames: w))
        let after = (amplitude(played, frequency: 440, start: 110250, frames: w), amplitude(played, frequency: 880, start: 110250, frames: w))
        print("crossfade figure: 440/880 Hz amplitude before \(before), middle \(middle), after \(after)")
        #expect(abs(before.0 - 0.5) < 0.01 && before.1 < 0.01)
        #expect(abs(after.1 - 0.5) < 0.01 && after.0 < 0.01)
        let half = 0.5 * 0.5.squareRoot()
        #expect(abs(middle.0 - half) < 0.02 && abs(middle.1 - half) < 0.02, "middle of the fade: \(middle), expected \(half) each")
        // No click: the largest sample-to-sample step stays that of the tones.
        var step: Float = 0
        for i in 1..<(played.count / 2) { step = max(step, abs(played[2 * i] - played[2 * i - 2])) }
        // Bound: both tones at full amplitude together step by at most 2π(440 + 880)·0.5/44100 = 0.094.
        #expect(step < 0.094, "largest step \(step)")
    }
}
