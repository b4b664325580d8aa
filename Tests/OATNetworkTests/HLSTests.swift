import OATCore
import OATFiles
import OATNetwork
import OATTestSupport
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite struct HLSTests {
    static let seconds = 8.0

    /// A WAV source and ffmpeg HLS output from it (with a timed-ID3 stream when `id3`).
    func makeHLS(_ dir: ScratchDirectory, name: String, codec: [String], extra: [String] = [], id3: Bool = true) throws -> String {
        let wav = dir.path + "/source.wav"
        if fileBytes(wav).isEmpty { #expect(HLSFixtures.source(wav, seconds: Self.seconds)) }
        var inputs = ["-i", wav]
        var maps = ["-map", "0:a"]
        if id3 {
            let id3Path = dir.path + "/id3.ts"
            #expect(writeFile(id3Path, HLSFixtures.id3OnlyTransportStream([(0, "Opening"), (3, "Middle"), (6, "Closing")])))
            inputs += ["-i", id3Path]
            maps += ["-map", "1:d", "-c:d", "copy"]
        }
        let playlist = dir.path + "/\(name).m3u8"
        #expect(runFFmpeg(inputs + maps + codec + ["-f", "hls", "-hls_time", "2", "-hls_playlist_type", "vod",
                                                  "-hls_segment_filename", dir.path + "/\(name)-%d" + (extra.contains("fmp4") ? ".m4s" : ".ts")]
                          + extra + [playlist]))
        try #require(!fileBytes(playlist).isEmpty)
        return playlist
    }

    func checkAudio(_ drained: DrainedSource, hint: AudioFileType, dir: ScratchDirectory, fromSeconds: Double = 0, minimumSNR: Double = 12) throws {
        let decoded = try decodeElementary(drained.bytes, hint: hint, discontinuities: drained.discontinuities)
        let source = try decodeWithToolbox(dir.path + "/source.wav")
        #expect(decoded.channels == 2)
        let skip = Int(fromSeconds * 44_100) * 2
        let reference = Array(source.samples[min(skip, source.samples.count)...])
        let (s, lag) = alignedSNR(reference: reference, test: decoded.samples, channels: 2)
        #expect(s > minimumSNR, "SNR \(s) dB at lag \(lag)")
        let frames = decoded.samples.count / 2
        let expected = reference.count / 2
        print("HLS figure: \(hint) from \(fromSeconds) s: SNR \(dB(s)) at lag \(lag), \(frames) frames vs \(expected) in the source, \(drained.bytes.count) bytes")
        // Within one AAC/MP3 priming and padding of the source length.
        #expect(abs(frames - expected) <= 3 * 1152, "\(frames) frames decoded, \(expected) expected")
    }

    /// Decodes the bytes before each title's offset and checks its time.
    func checkTitles(_ drained: DrainedSource, hint: AudioFileType, expected: [(String, Double)], tolerance: Double = 0.35) throws {
        #expect(drained.metadata.map { $0.title ?? "" } == expected.map(\.0))
        for (m, (_, seconds)) in zip(drained.metadata, expected) {
            let prefix = try decodeElementary(Array(drained.bytes[..<Int(m.audioByteOffset)]), hint: hint)
            let t = Double(prefix.samples.count / max(1, prefix.channels)) / 44_100
            #expect(abs(t - seconds) < tolerance, "\(m.title ?? "") at \(t) s, expected \(seconds)")
            print("HLS figure: title \(m.title ?? "") at \(t) s (byte \(m.audioByteOffset)), expected \(seconds) s")
        }
    }

    @Test func vodAACInTransportStream() throws {
        let dir = try ScratchDirectory("hls")
        defer { dir.remove() }
        let playlist = try makeHLS(dir, name: "aac", codec: ["-c:a", "aac", "-b:a", "128k"])
        let source = HLSByteSource(url: playlist)
        let info = try source.open(at: 0)
        #expect(info.contentType == "audio/aac")
        #expect(!info.isLive)
        #expect(abs((source.duration ?? 0) - Self.seconds) < 0.1)
        let drained = try DrainedSource(source)
        try checkAudio(drained, hint: .aacADTS, dir: dir)
        try checkTitles(drained, hint: .aacADTS, expected: [("Opening", 0), ("Middle", 3), ("Closing", 6)], tolerance: 0.08)
        #expect(source.statistics.bytesDelivered == Int64(drained.bytes.count))
        #expect(source.statistics.requests == 1 + source.mediaPlaylist.segments.count)
    }

    @Test func vodMP3InTransportStream() throws {
        let dir = try ScratchDirectory("hls")
        defer { dir.remove() }
        let playlist = try makeHLS(dir, name: "mp3", codec: ["-c:a", "libmp3lame", "-b:a", "192k"])
        let source = HLSByteSource(url: "file://" + playlist)
        #expect(try source.open(at: 0).contentType == "audio/mpeg")
        let drained = try DrainedSource(source)
        try checkAudio(drained, hint: .mp3, dir: dir)
        try checkTitles(drained, hint: .mp3, expected: [("Opening", 0), ("Middle", 3), ("Closing", 6)], tolerance: 0.08)
    }

    @Test func vodFragmentedMP4() throws {
        let dir = try ScratchDirectory("hls")
        defer { dir.remove() }
        let playlist = try makeHLS(dir, name: "fmp4", codec: ["-c:a", "aac", "-b:a", "128k"],
                                   extra: ["-hls_segment_type", "fmp4", "-hls_fmp4_init_filename", "fmp4-init.mp4"], id3: false)
        let source = HLSByteSource(url: playlist)
        #expect(try source.open(at: 0).contentType == "audio/mp4")
        #expect(source.mediaPlaylist.segments.first?.map != nil)
        let drained = try DrainedSource(source)
        try checkAudio(drained, hint: .m4a, dir: dir)
        // After a seek the init section comes again, then the fragment holding the time.
        let again = HLSByteSource(url: playlist)
        _ = try again.open(at: 0)
        let start = try again.seek(toTime: 4.5)
        #expect(start > 3.5 && start <= 4.5)
        let tail = try DrainedSource(again)
        #expect(Array(tail.bytes[4..<8]) == Array("ftyp".utf8))
        try checkAudio(tail, hint: .m4a, dir: dir, fromSeconds: start)
    }

    @Test func packedAudioWithID3Timestamps() throws {
        let dir = try ScratchDirectory("hls")
        defer { dir.remove() }
        let wav = dir.path + "/source.wav"
        #expect(HLSFixtures.source(wav, seconds: Self.seconds))
        #expect(runFFmpeg(["-i", wav, "-c:a", "aac", "-b:a", "128k", "-f", "segment", "-segment_time", "2",
                           "-segment_format", "adts", dir.path + "/raw-%d.aac"]))
        let raws = listDirectory(dir.path).filter { $0.hasPrefix("raw-") }.sorted { $0.count == $1.count ? $0 < $1 : $0.count < $1.count }
        try #require(raws.count >= 3)
        var lines = ["#EXTM3U", "#EXT-X-TARGETDURATION:3", "#EXT-X-VERSION:3"]
        var titles: [(String, Double)] = []
        var t = 0.0
        for (i, name) in raws.enumerated() {
            let body = fileBytes(dir.path + "/" + name)
            let title: String? = i == 1 ? nil : "Part \(i)"   // segment 1 carries only a time stamp
            if let title { titles.append((title, t)) }
            let tag = HLSFixtures.id3(title: title, timestamp: Int64(t * 90_000))
            #expect(writeFile(dir.path + "/packed-\(i).aac", tag + body))
            let frames = try decodeElementary(body, hint: .aacADTS).samples.count / 2
            let d = Double(frames) / 44_100
            lines += ["#EXTINF:\(d),", "packed-\(i).aac"]
            t += d
        }
        lines.append("#EXT-X-ENDLIST")
        writeText(dir.path + "/packed.m3u8", lines.joined(separator: "\n") + "\n")
        let source = HLSByteSource(url: dir.path + "/packed.m3u8")
        #expect(try source.open(at: 0).contentType == "audio/aac")
        let drained = try DrainedSource(source)
        try checkAudio(drained, hint: .aacADTS, dir: dir)
        try checkTitles(drained, hint: .aacADTS, expected: titles, tolerance: 0.05)
    }

    @Test func masterPlaylistVariantChoice() throws {
        let dir = try ScratchDirectory("hls")
        defer { dir.remove() }
        _ = try makeHLS(dir, name: "low", codec: ["-c:a", "aac", "-b:a", "48k"], id3: false)
        _ = try makeHLS(dir, name: "high", codec: ["-c:a", "libmp3lame", "-b:a", "192k"], id3: false)
        writeText(dir.path + "/master.m3u8", """
            #EXTM3U
            #EXT-X-STREAM-INF:BANDWIDTH=64000,CODECS="mp4a.40.2"
            low.m3u8
            #EXT-X-STREAM-INF:BANDWIDTH=220000,CODECS="mp4a.40.34"
            high.m3u8
            #EXT-X-STREAM-INF:BANDWIDTH=150000,CODECS="avc1.42e00a,mp4a.40.2",RESOLUTION=320x240
            video.m3u8

            """)
        for (limit, name, type) in [(nil, "high", "audio/mpeg"), (Optional(100_000), "low", "audio/aac"), (Optional(1), "low", "audio/aac"),
                                    (Optional(300_000), "high", "audio/mpeg")] {
            var options = HLSOptions()
            options.maximumBandwidth = limit
            let source = HLSByteSource(url: dir.path + "/master.m3u8", options: options)
            let info = try source.open(at: 0)
            #expect(source.chosenVariant?.uri == dir.path + "/\(name).m3u8", "limit \(String(describing: limit))")
            #expect(info.contentType == type)
            source.close()
        }
    }

    @Test func seekPicksTheSegmentAndReportsItsStart() throws {
        let dir = try ScratchDirectory("hls")
        defer { dir.remove() }
        let playlist = try makeHLS(dir, name: "seek", codec: ["-c:a", "aac", "-b:a", "128k"], id3: false)
        let source = HLSByteSource(url: playlist)
        _ = try source.open(at: 0)
        var buffer = [UInt8](repeating: 0, count: 1000)
        _ = try buffer.withUnsafeMutableBytes { try source.read(into: $0) }
        let start = try source.seek(toTime: 5.0)
        let segments = source.mediaPlaylist.segments
        let expectedStart = segments[0].duration + segments[1].duration
        #expect(abs(start - expectedStart) < 1e-9)
        let drained = try DrainedSource(source)
        try checkAudio(drained, hint: .aacADTS, dir: dir, fromSeconds: start)
        #expect(throws: AudioError.self) { try source.seek(toTime: .nan) }
    }

    @Test func liveWindowIsFollowedToTheEnd() throws {
        let dir = try ScratchDirectory("hls")
        defer { dir.remove() }
        let wav = dir.path + "/source.wav"
        #expect(HLSFixtures.source(wav, seconds: 6))
        let playlist = dir.path + "/live.m3u8"
        let ffmpeg = try #require(ChildProcess.which("ffmpeg"))
        let process = try ToolProcess(ffmpeg, ["-hide_banner", "-loglevel", "error", "-nostdin", "-re", "-i", wav, "-c:a", "aac", "-b:a", "128k",
                                               "-f", "hls", "-hls_time", "1", "-hls_list_size", "3", playlist],
                                      outputPath: dir.path + "/ffmpeg.log")
        defer { process.stop() }
        // Wait for the first playlist.
        var waited = 0
        while fileBytes(playlist).isEmpty && waited < 100 { usleep(50_000); waited += 1 }
        var options = HLSOptions()
        options.maximumUnchangedReloads = 20
        let source = HLSByteSource(url: playlist, options: options)
        let info = try source.open(at: 0)
        #expect(info.isLive)
        let firstSequence = source.mediaPlaylist.mediaSequence
        let drained = try DrainedSource(source)
        #expect(process.wait(timeout: 20) == 0)
        #expect(source.mediaPlaylist.hasEndList)
        #expect(drained.discontinuities.isEmpty)
        // We joined at the first segment listed when we opened; everything from there, no repeats.
        let decoded = try decodeElementary(drained.bytes, hint: .aacADTS)
        let reference = try decodeWithToolbox(wav)
        let skipped = Double(firstSequence) * 1.0
        let (s, lag) = alignedSNR(reference: Array(reference.samples[(Int(skipped * 44_100) * 2)...]), test: decoded.samples, channels: 2,
                                  maxLag: 44_100 / 2, from: 22_050)
        #expect(s > 12, "SNR \(s) dB at lag \(lag)")
        print("HLS figure: live joined at sequence \(firstSequence), SNR \(dB(s)) at lag \(lag), requests \(source.statistics.requests)")
        let frames = decoded.samples.count / 2
        let expected = reference.samples.count / 2 - Int(skipped * 44_100) + lag
        #expect(abs(frames - expected) <= 3 * 1152, "\(frames) frames, \(expected) expected (joined at sequence \(firstSequence))")
    }

    /// A live presentation simulated by playlist versions (a 3-segment window moving 2 segments per
    /// reload, ENDLIST in the last) and a segment that cannot be fetched: it is skipped after the
    /// retries, reported as one discontinuity, and nothing is delivered twice.
    @Test func liveSlidingWindowSkipsAFailedSegment() throws {
        let dir = try ScratchDirectory("hls")
        defer { dir.remove() }
        let vod = try makeHLS(dir, name: "w", codec: ["-c:a", "aac", "-b:a", "128k"], extra: ["-hls_time", "1"], id3: false)
        let segments = try #require(HLSPlaylist.parse(bytes: fileBytes(vod), url: vod).media?.segments)
        try #require(segments.count >= 6)
        var versions: [String] = []
        var k = 0
        while true {
            let window = Array(segments[k..<min(segments.count, k + 3)])
            var text = "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXT-X-MEDIA-SEQUENCE:\(k)\n"
            for s in window { text += "#EXTINF:\(s.duration),\n\(s.uri)\n" }
            let last = k + 3 >= segments.count
            if last { text += "#EXT-X-ENDLIST\n" }
            versions.append(dir.path + "/live-\(versions.count).m3u8")
            writeText(versions.last!, text)
            if last { break }
            k += 2
        }
        let playlistPath = dir.path + "/live.m3u8"
        let failing = segments[3].uri
        final class Counter: Sendable { let value = Locked(0) }
        let loads = Counter(), failures = Counter()
        let paths = versions
        var options = HLSOptions()
        options.retryDelay = 0.01
        let source = HLSByteSource(url: playlistPath, options: options) { (u: String) throws(AudioError) -> any ByteSource in
            if u == playlistPath {
                let n = loads.value.withLock { $0 += 1; return $0 - 1 }
                return FileByteSource(path: paths[min(n, paths.count - 1)])
            }
            if u == failing {
                failures.value.withLock { $0 += 1 }
                throw AudioError(.network, component: "test", "injected: \(u) unreachable")
            }
            return FileByteSource(path: u)
        }
        let info = try source.open(at: 0)
        #expect(info.isLive)
        let drained = try DrainedSource(source)
        #expect(drained.discontinuities.count == 1)
        #expect(failures.value.withLock { $0 } == 1 + options.fetchRetries)
        #expect(source.statistics.reconnects == 1)
        #expect(loads.value.withLock { $0 } >= versions.count)
        let decoded = try decodeElementary(drained.bytes, hint: .aacADTS, discontinuities: drained.discontinuities)
        let reference = try decodeWithToolbox(dir.path + "/source.wav")
        let (s, lag) = alignedSNR(reference: reference.samples, test: decoded.samples, channels: 2, maxLag: 2048)
        #expect(s > 12, "SNR \(s) dB at lag \(lag)")
        let missing = Int(segments[3].duration * 44_100)
        let frames = decoded.samples.count / 2
        let expected = reference.samples.count / 2 - missing
        // Each ADTS run (before and after the gap) carries its own priming frame.
        #expect(abs(frames - expected) <= 4 * 1152, "\(frames) frames, \(expected) expected without segment 3")
        print("HLS figure: live window skip: \(frames) frames for \(expected) expected, SNR \(dB(s)), \(loads.value.withLock { $0 }) playlist loads")
    }

    /// A packager restart (media sequence going backwards) is rejoined with one discontinuity.
    /// Issue 27: a live playlist claiming `#EXT-X-TARGETDURATION:86400` is reloaded within
    /// `maximumReloadInterval` (10 s), not a day later: with nothing new it gives up with
    /// `.timedOut` after two reloads (10 s, then 5 s), within 20 s.
    @Test func aDayLongTargetDurationIsReloadedWithinTheCap() throws {
        let dir = try ScratchDirectory("hls-target")
        defer { dir.remove() }
        let vod = try makeHLS(dir, name: "day", codec: ["-c:a", "aac", "-b:a", "64k"], id3: false)
        let text = String(decoding: fileBytes(vod), as: UTF8.self)
        let live = text.split(separator: "\n", omittingEmptySubsequences: false).compactMap { line -> String? in
            if line.hasPrefix("#EXT-X-TARGETDURATION") { return "#EXT-X-TARGETDURATION:86400" }
            if line.hasPrefix("#EXT-X-ENDLIST") || line.hasPrefix("#EXT-X-PLAYLIST-TYPE") { return nil }
            return String(line)
        }.joined(separator: "\n")
        let playlist = dir.path + "/live.m3u8"
        #expect(writeText(playlist, live))
        var options = HLSOptions()
        options.maximumUnchangedReloads = 1
        let source = HLSByteSource(url: playlist, options: options)
        let info = try source.open(at: 0)
        #expect(info.isLive)
        let outcome = Locked<AudioError?>(nil)
        let finished = Atomic<Bool>(false)
        let started = HLSTests.monotonic()
        let reader = try JoinableThread(name: "hls-day-reader") {
            do { _ = try DrainedSource(source) } catch let e as AudioError { outcome.withLock { $0 = e } } catch {}
            finished.store(true, ordering: .releasing)
        }
        while !finished.load(ordering: .acquiring) && HLSTests.monotonic() - started < 30 { usleep(20_000) }
        let seconds = HLSTests.monotonic() - started
        if !finished.load(ordering: .acquiring) { source.cancel() }
        reader.join()
        print("HLS figure: TARGETDURATION 86400 gave up after \(seconds) s: \(outcome.withLock { $0 }.map { "\($0)" } ?? "no error")")
        #expect(seconds < 20, "the live playlist was not reloaded within the cap (\(seconds) s)")
        #expect(outcome.withLock { $0 }?.code == .timedOut, "\(String(describing: outcome.withLock { $0 }))")
    }

    static func monotonic() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    @Test func livePackagerRestartIsRejoined() throws {
        let dir = try ScratchDirectory("hls")
        defer { dir.remove() }
        let vod = try makeHLS(dir, name: "r", codec: ["-c:a", "aac", "-b:a", "128k"], extra: ["-hls_time", "1"], id3: false)
        let segments = try #require(HLSPlaylist.parse(bytes: fileBytes(vod), url: vod).media?.segments)
        try #require(segments.count >= 8)
        func version(_ sequence: Int, _ range: Range<Int>, end: Bool) -> String {
            var text = "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXT-X-MEDIA-SEQUENCE:\(sequence)\n"
            for s in segments[range] { text += "#EXTINF:\(s.duration),\n\(s.uri)\n" }
            return text + (end ? "#EXT-X-ENDLIST\n" : "")
        }
        // Sequence 10... for segments 0-3, then the packager restarts at sequence 0 with segment 4.
        let texts = [version(10, 0..<3, end: false), version(11, 1..<4, end: false),
                     version(0, 4..<7, end: false), version(0, 4..<segments.count, end: true)]
        var paths: [String] = []
        for (i, t) in texts.enumerated() {
            paths.append(dir.path + "/restart-\(i).m3u8")
            writeText(paths[i], t)
        }
        let playlistPath = dir.path + "/restart.m3u8"
        final class Counter: Sendable { let value = Locked(0) }
        let loads = Counter()
        let versions = paths
        let source = HLSByteSource(url: playlistPath) { (u: String) throws(AudioError) -> any ByteSource in
            if u == playlistPath {
                let n = loads.value.withLock { $0 += 1; return $0 - 1 }
                return FileByteSource(path: versions[min(n, versions.count - 1)])
            }
            return FileByteSource(path: u)
        }
        _ = try source.open(at: 0)
        let drained = try DrainedSource(source)
        #expect(drained.discontinuities.count == 1)
        #expect(source.statistics.reconnects == 1)
        let decoded = try decodeElementary(drained.bytes, hint: .aacADTS, discontinuities: drained.discontinuities)
        let reference = try decodeWithToolbox(dir.path + "/source.wav")
        let frames = decoded.samples.count / 2
        // Every segment once: the whole source plus one priming frame per run.
        #expect(abs(frames - reference.samples.count / 2) <= 4 * 1152, "\(frames) frames for \(reference.samples.count / 2)")
        let (snrValue, lag) = alignedSNR(reference: reference.samples, test: decoded.samples, channels: 2, maxLag: 2048)
        #expect(snrValue > 12, "SNR \(snrValue) at lag \(lag)")
    }

    @Test func faultsAndRefusals() throws {
        let dir = try ScratchDirectory("hls")
        defer { dir.remove() }
        let playlist = try makeHLS(dir, name: "f", codec: ["-c:a", "aac", "-b:a", "128k"], id3: false)
        // Encrypted segments are refused with the playlist line.
        let text = String(decoding: fileBytes(playlist), as: UTF8.self)
        writeText(dir.path + "/enc.m3u8", text.replacingOccurrences("#EXTINF", "#EXT-X-KEY:METHOD=AES-128,URI=\"k.bin\"\n#EXTINF"))
        let enc = HLSByteSource(url: dir.path + "/enc.m3u8")
        do {
            _ = try enc.open(at: 0)
            Issue.record("encrypted segment accepted")
        } catch {
            #expect(error.code == .unsupportedFormat)
            #expect(error.message.contains("AES-128") && error.message.contains("line"), "\(error)")
        }
        // A segment that fails twice then works is retried; a missing one in VOD fails after the retries.
        final class Counter: Sendable { let value = Locked(0) }
        let failures = Counter()
        var options = HLSOptions()
        options.retryDelay = 0.01
        let flaky = HLSByteSource(url: playlist, options: options) { (u: String) throws(AudioError) -> any ByteSource in
            if u.hasSuffix("f-1.ts") {
                let n = failures.value.withLock { $0 += 1; return $0 }
                if n <= 2 { throw AudioError(.network, component: "test", "injected fault \(n)") }
            }
            return FileByteSource(path: u)
        }
        _ = try flaky.open(at: 0)
        let drained = try DrainedSource(flaky)
        try checkAudio(drained, hint: .aacADTS, dir: dir)
        #expect(failures.value.withLock { $0 } == 3)
        unlink(dir.path + "/f-2.ts")
        let broken = HLSByteSource(url: playlist, options: options)
        _ = try broken.open(at: 0)
        #expect(throws: AudioError.self) { _ = try DrainedSource(broken) }
        // A remote playlist naming local files is refused; byte offsets other than 0 are refused.
        #expect(throws: AudioError.self) { try HLSByteSource(url: playlist).open(at: 10) }
        // cancel() makes reads throw .cancelled.
        let c = HLSByteSource(url: playlist)
        _ = try c.open(at: 0)
        c.cancel()
        do {
            _ = try DrainedSource(c)
            Issue.record("read after cancel")
        } catch let e as AudioError {
            #expect(e.code == .cancelled)
        }
    }
}

/// HLS over real loopback HTTP (TestHTTPServer, HTTPByteSource through the default factory).
@Suite struct HLSOverHTTPTests {
    /// Serves every file of `dir` at `/hls/NAME`.
    func serveDirectory(_ server: TestHTTPServer, _ dir: String, faults: [String: [TestHTTPServer.Fault]] = [:]) {
        for name in listDirectory(dir) {
            let type = name.hasSuffix(".m3u8") ? "application/vnd.apple.mpegurl" : name.hasSuffix(".ts") ? "video/mp2t" : "application/octet-stream"
            var route = TestHTTPServer.Route(body: .file(dir + "/" + name), contentType: type)
            route.faults = faults[name] ?? []
            server.route("/hls/" + name, route)
        }
    }

    @Test func masterAndSegmentsOverHTTPWithFaults() throws {
        let dir = try ScratchDirectory("hls-http")
        defer { dir.remove() }
        let t = HLSTests()
        _ = try t.makeHLS(dir, name: "low", codec: ["-c:a", "aac", "-b:a", "48k"], id3: false)
        _ = try t.makeHLS(dir, name: "hi", codec: ["-c:a", "aac", "-b:a", "128k"])
        writeText(dir.path + "/master.m3u8", """
            #EXTM3U
            #EXT-X-STREAM-INF:BANDWIDTH=64000,CODECS="mp4a.40.2"
            low.m3u8
            #EXT-X-STREAM-INF:BANDWIDTH=160000,CODECS="mp4a.40.2"
            hi.m3u8

            """)
        let server = try TestHTTPServer()
        defer { server.stop() }
        // Segment 1 drops its connection after 5000 bytes once (resumed by Range inside the HTTP
        // source); segment 2 answers 503 twice (retried).
        serveDirectory(server, dir.path, faults: ["hi-1.ts": [.disconnect(afterBytes: 5000)],
                                                  "hi-2.ts": [.status(503, retryAfter: nil), .status(503, retryAfter: nil)]])
        var options = HLSOptions()
        options.maximumBandwidth = 200_000
        options.retryDelay = 0.02
        options.http = quickOptions()
        let source = HLSByteSource(url: server.url("/hls/master.m3u8"), options: options)
        let info = try source.open(at: 0)
        #expect(info.contentType == "audio/aac")
        #expect(source.chosenVariant?.uri == server.url("/hls/hi.m3u8"))
        let drained = try DrainedSource(source)
        try t.checkAudio(drained, hint: .aacADTS, dir: dir)
        try t.checkTitles(drained, hint: .aacADTS, expected: [("Opening", 0), ("Middle", 3), ("Closing", 6)], tolerance: 0.08)
        #expect(server.requests(to: "/hls/hi-1.ts").count == 2)
        #expect(server.requests(to: "/hls/hi-1.ts").last?.range == "bytes=5000-")
        #expect(server.requests(to: "/hls/hi-2.ts").count == 3)
        #expect(server.requests(to: "/hls/low-0.ts").isEmpty)
    }

    @Test func permanentErrorsAndLocalReferencesFailFast() throws {
        let dir = try ScratchDirectory("hls-http")
        defer { dir.remove() }
        let server = try TestHTTPServer()
        defer { server.stop() }
        server.serve("/x/media.m3u8", bytes: Array("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\ngone.ts\n#EXT-X-ENDLIST\n".utf8),
                     contentType: "application/vnd.apple.mpegurl")
        var options = HLSOptions()
        options.retryDelay = 0.02
        options.http = quickOptions()
        let source = HLSByteSource(url: server.url("/x/media.m3u8"), options: options)
        let started = monotonic()
        do {
            _ = try source.open(at: 0)
            Issue.record("a missing segment was accepted")
        } catch {
            #expect(error.underlying == "HTTP 404", "\(error)")
        }
        #expect(monotonic() - started < 3)
        #expect(server.requests(to: "/x/gone.ts").count == 1)
        // A remote playlist naming a local file is refused before anything is fetched from it.
        server.serve("/x/evil.m3u8", bytes: Array("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\nfile:///etc/passwd\n".utf8))
        do {
            _ = try HLSByteSource(url: server.url("/x/evil.m3u8"), options: options).open(at: 0)
            Issue.record("local reference accepted")
        } catch {
            #expect(error.message.contains("line 4"), "\(error)")
        }
    }
}
