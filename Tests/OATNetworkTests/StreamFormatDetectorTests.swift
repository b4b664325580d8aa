import OATCore
import OATFiles
import OATNetwork
import OATTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite struct StreamFormatDetectorTests {
    static func corpus(_ relative: String) -> [UInt8]? {
        guard let root = Corpus.root else { return nil }
        return Corpus.read(root + "/ffmpeg-generated/" + relative)
    }

    @Test(.requires(TestResource.corpusMissing)) func sniffsCorpusFilesOfEveryContainer() throws {
        _ = try TestResource.corpusRoot()
        let cases: [(String, AudioFileType)] = [
            ("mp3/l3_cbr128_44k_st_info.mp3", .mp3), ("mp3/l3_id3v24.mp3", .mp3), ("mp3/l2_44k_st_192k.mp2", .mp2),
            ("adts/aac_lc_44k_st.aac", .aacADTS), ("adts/aac_lc_id3v2.aac", .aacADTS),
            ("m4a/aac_faststart.m4a", .m4a), ("m4a/aac_moov_at_end.m4a", .m4a),
            ("ogg/vorbis_st.ogg", .ogg), ("ogg/opus_st.opus", .ogg),
        ]
        for (file, type) in cases {
            let bytes = try #require(Self.corpus(file), "\(file)")
            let d = StreamFormatDetector.detect(contentType: nil, url: "http://h/stream", prefix: Array(bytes.prefix(StreamFormatDetector.sniffLength)))
            #expect(StreamFormatDetector.compatibleForTests(d.kind, .audio(type)), "\(file): \(String(describing: d.kind))")
            #expect(d.evidence == .content)
        }
    }

    @Test(.requires(TestResource.corpusMissing)) func aLyingContentTypeIsOverruledByTheContent() throws {
        let aac = try #require(Self.corpus("adts/aac_lc_44k_st.aac"), "corpus file ffmpeg-generated/adts/aac_lc_44k_st.aac")
        let d = StreamFormatDetector.detect(contentType: "audio/mpeg", url: "http://radio/stream.mp3", prefix: Array(aac.prefix(65536)))
        #expect(d.kind == .audio(.aacADTS))
        #expect(d.declared == .audio(.mp3))
        #expect(d.note?.contains("audio/mpeg") == true)
        #expect(d.fileTypeHint == .aacADTS)
    }

    @Test func garbageIsReportedAsUnknownClearly() {
        var x: UInt32 = 99
        let noise = (0..<65536).map { _ -> UInt8 in x = x &* 1103515245 &+ 12345; return UInt8(truncatingIfNeeded: x >> 16) & 0x7F | 0x01 }
        let d = StreamFormatDetector.detect(contentType: "audio/mpeg", url: "http://h/a.mp3", prefix: noise, isComplete: true)
        #expect(d.kind == nil)
        #expect(d.note?.contains("unknown format") == true)
        #expect(d.note?.contains("audio MPEG Layer 3") == true)
        let html = Array("<!DOCTYPE html><html><body>Not here</body></html>".utf8)
        let h = StreamFormatDetector.detect(contentType: "audio/aac", url: "http://h/x", prefix: html, isComplete: true)
        #expect(h.kind == nil)
        #expect(h.note?.contains("HTML") == true)
    }

    @Test func playlistsAreRecognisedByTypeExtensionAndContent() {
        #expect(StreamFormatDetector.kind(forContentType: "audio/x-scpls") == .playlist(.pls))
        #expect(StreamFormatDetector.kind(forContentType: "audio/x-mpegurl") == .playlist(.m3u))
        #expect(StreamFormatDetector.kind(forContentType: "audio/mpegurl") == .playlist(.m3u))
        #expect(StreamFormatDetector.kind(forContentType: "application/vnd.apple.mpegurl") == .playlist(.hls))
        #expect(StreamFormatDetector.kind(forContentType: "application/x-mpegURL; charset=utf-8") == .playlist(.hls))
        #expect(StreamFormatDetector.kind(forURL: "http://h/list.PLS?x=1") == .playlist(.pls))
        #expect(StreamFormatDetector.kind(forURL: "http://h/a.m3u") == .playlist(.m3u))
        #expect(StreamFormatDetector.kind(forURL: "http://h/a.m3u8#frag") == .playlist(.hls))
        #expect(StreamFormatDetector.kind(forURL: "http://h.example.com/") == nil)
        let pls = Array("\u{FEFF}\n[Playlist]\nFile1=http://a/b\n".utf8)
        #expect(StreamFormatDetector.sniff(pls) == .playlist(.pls))
        #expect(StreamFormatDetector.sniff(Array("#EXTM3U\n#EXTINF:-1,x\nhttp://a/b\n".utf8)) == .playlist(.m3u))
        #expect(StreamFormatDetector.sniff(Array("#EXTM3U\n#EXT-X-TARGETDURATION:6\nseg.ts\n".utf8)) == .playlist(.hls))
        #expect(StreamFormatDetector.sniff(Array("http://radio.example/stream\n".utf8)) == .playlist(.m3u))
        // An "HLS" type serving a plain M3U is the plain M3U.
        let d = StreamFormatDetector.detect(contentType: "application/vnd.apple.mpegurl", url: "http://h/x.m3u8", prefix: Array("#EXTM3U\nhttp://a/b.mp3\n".utf8), isComplete: true)
        #expect(d.playlist == .m3u)
        #expect(d.note == nil)
    }

    @Test func typesAndExtensionsMapToContainers() {
        #expect(StreamFormatDetector.kind(forContentType: "Audio/MPEG") == .audio(.mp3))
        #expect(StreamFormatDetector.kind(forContentType: "audio/aacp") == .audio(.aacADTS))
        #expect(StreamFormatDetector.kind(forContentType: "application/ogg") == .audio(.ogg))
        #expect(StreamFormatDetector.kind(forContentType: "application/octet-stream") == nil)
        #expect(StreamFormatDetector.kind(forURL: "/music/song.flac") == .audio(.flac))
        #expect(StreamFormatDetector.kind(forURL: "song.opus") == .audio(.ogg))
        // No bytes yet: the declared type is trusted and the note says so.
        let d = StreamFormatDetector.detect(contentType: "audio/flac", url: "http://h/x", prefix: [])
        #expect(d.kind == .audio(.flac))
        #expect(d.evidence == .contentType)
    }

    @Test(.requires(TestResource.corpusMissing)) func lyingContentTypeOverHTTPIsDetectedFromTheFirstBytes() throws {
        let aac = try #require(Self.corpus("adts/aac_lc_44k_st.aac"), "corpus file ffmpeg-generated/adts/aac_lc_44k_st.aac")
        let server = try TestHTTPServer()
        defer { server.stop() }
        server.serve("/stream.mp3", bytes: aac, contentType: "audio/mpeg")
        let source = HTTPByteSource(url: server.url("/stream.mp3"))
        let info = try source.open(at: 0)
        var prefix: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16384)
        while prefix.count < StreamFormatDetector.sniffLength {
            guard case .bytes(let n) = try buffer.withUnsafeMutableBytes({ try source.read(into: $0) }) else { break }
            prefix += buffer[0..<n]
        }
        let d = StreamFormatDetector.detect(contentType: info.contentType, url: info.url, prefix: prefix)
        #expect(d.kind == .audio(.aacADTS))
        #expect(d.note != nil)
    }
}

@Suite struct ByteSourceFactoryTests {
    @Test func schemesPickTheirSources() throws {
        #expect(try ByteSources.make(url: "-") is StandardInputByteSource)
        #expect(try ByteSources.make(url: "http://h/a") is HTTPByteSource)
        #expect(try ByteSources.make(url: "HTTPS://h/a") is HTTPByteSource)
        let icy = try ByteSources.make(url: "icy://h:8000/live") as? HTTPByteSource
        #expect(icy?.url == "http://h:8000/live")
        #expect((try ByteSources.make(url: "file:///tmp/a%20b.mp3") as? FileByteSource)?.path == "/tmp/a b.mp3")
        #expect((try ByteSources.make(url: "/tmp/x.wav") as? FileByteSource)?.path == "/tmp/x.wav")
        #expect(throws: AudioError.self) { _ = try ByteSources.make(url: "ftp://h/a") }
    }

    @Test func standardInputReadsAPipeAndIsNotSeekable() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let source = StandardInputByteSource(descriptor: fds[0])
        defer { close(fds[0]) }
        let payload = testBytes(10_000, seed: 5)
        let writeEnd = fds[1]
        let writer = try JoinableThread(name: "test") {
            payload.withUnsafeBytes { _ = write(writeEnd, $0.baseAddress, $0.count) }
            close(writeEnd)
        }
        let info = try source.open(at: 0)
        #expect(!info.isSeekable)
        let got = try drain(source)
        writer.join()
        #expect(firstDifference(got.bytes, payload) == nil)
        #expect(throws: AudioError.self) { _ = try source.open(at: 100) }
    }

    @Test func cancelWakesAStandardInputRead() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let source = StandardInputByteSource(descriptor: fds[0])
        _ = try source.open(at: 0)
        let canceller = try JoinableThread(name: "test") { usleep(200_000); source.cancel() }
        let start = monotonic()
        #expect { _ = try drain(source) } throws: { ($0 as? AudioError)?.code == .cancelled }
        #expect(monotonic() - start < 1.5)
        canceller.join()
    }
}

extension StreamFormatDetector {
    /// Same container family (the MPEG layers, MP4 brands).
    static func compatibleForTests(_ a: StreamContentKind?, _ b: StreamContentKind) -> Bool {
        guard let a else { return false }
        if a == b { return true }
        if case .audio(let x) = a, case .audio(let y) = b {
            let mp4: Set<AudioFileType> = [.m4a, .mpeg4]
            return mp4.contains(x) && mp4.contains(y)
        }
        return false
    }
}
