import OATCore
import OATNetwork
import Testing

@Suite struct PlaylistTests {
    func parse(_ text: String, url: String = "http://radio.example.com/lists/station.pls", type: String? = nil,
               depth: Int = 0, limits: PlaylistLimits = PlaylistLimits()) throws(AudioError) -> Playlist {
        try Playlist.parse(bytes: Array(text.utf8), url: url, contentType: type, depth: depth, limits: limits)
    }

    @Test func shoutcastPLS() throws {
        let text = """
        [playlist]
        numberofentries=3
        File1=http://ice1.example.com:8000/stream
        Title1=(#1 - 25/500) Groove Salad
        Length1=-1
        File2=relay/stream.mp3
        Title2=Relay
        Length2=-1
        File3=/abs/path.aac
        Length3=245
        Version=2
        """
        let p = try parse(text.replacingOccurrences("\n", "\r\n"))
        #expect(p.format == .pls)
        #expect(p.entries.map(\.url) == ["http://ice1.example.com:8000/stream",
                                          "http://radio.example.com/lists/relay/stream.mp3",
                                          "http://radio.example.com/abs/path.aac"])
        #expect(p.entries[0].title == "(#1 - 25/500) Groove Salad")
        #expect(p.entries[0].duration == nil)
        #expect(p.entries[2].duration == 245)
        #expect(p.entries[1].line == 6)
    }

    @Test func plsOrdersByNumberNotLine() throws {
        let p = try parse("[playlist]\nFile2=b.mp3\nFile1=a.mp3\nNumberOfEntries=2\n")
        #expect(p.entries.map(\.url) == ["http://radio.example.com/lists/a.mp3", "http://radio.example.com/lists/b.mp3"])
    }

    @Test func extendedM3UWithBOMAndRelativeURLs() throws {
        let text = "\u{FEFF}#EXTM3U\n#EXTINF:123,Artist - Title\n../music/one.mp3\n# a comment\n\n#EXTINF:-1 tvg-id=\"x\",Live Radio\nhttps://live.example.com/radio?x=1&y=2\n"
        let p = try parse(text, url: "http://h.example.com/a/b/list.m3u")
        #expect(p.format == .extendedM3U)
        #expect(p.entries.count == 2)
        #expect(p.entries[0] == PlaylistEntry(url: "http://h.example.com/a/music/one.mp3", title: "Artist - Title", duration: 123, line: 3))
        #expect(p.entries[1].url == "https://live.example.com/radio?x=1&y=2")
        #expect(p.entries[1].title == "Live Radio")
        #expect(p.entries[1].duration == nil)
    }

    @Test func plainM3UAndLatin1Fallback() throws {
        // "Café.mp3" in Latin-1 (0xE9), which is not valid UTF-8.
        var bytes = Array("/music/Caf".utf8) + [0xE9] + Array(".mp3\r\nsecond.mp3\r\n".utf8)
        let p = try Playlist.parse(bytes: bytes, url: "/home/u/list.m3u")
        #expect(p.format == .m3u)
        #expect(p.entries.map(\.url) == ["/music/Café.mp3", "/home/u/second.mp3"])
        bytes = Array("#EXTM3U\r\n#EXTINF:5,Caf\u{E9} UTF-8\r\nfile:///tmp/x.mp3\r\n".utf8)
        let q = try Playlist.parse(bytes: bytes, url: "/home/u/list.m3u")
        #expect(q.entries == [PlaylistEntry(url: "/tmp/x.mp3", title: "Café UTF-8", duration: 5, line: 3)])
    }

    @Test func remotePlaylistCannotNameLocalFiles() {
        for bad in ["file:///etc/passwd", "file:relative", "ftp://x/y", "FILE:/x"] {
            let pls = "[playlist]\nFile1=\(bad)\n"
            #expect(throws: AudioError.self) { try parse(pls) }
            do {
                _ = try parse("#EXTM3U\n#EXTINF:1,x\n\(bad)\n", url: "https://e.example.com/x.m3u")
                Issue.record("accepted \(bad)")
            } catch {
                #expect(error.message.contains("line 3"), "\(error)")
            }
        }
        // The absolute path resolves against the remote host, so it is allowed (http).
        #expect((try? parse("[playlist]\nFile1=/stream\n"))?.entries.first?.url == "http://radio.example.com/stream")
    }

    @Test func errorsNameTheLine() {
        do {
            _ = try parse("[playlist]\nFile1=a.mp3\nthis is not a key value\n")
            Issue.record("accepted")
        } catch {
            #expect(error.code == .invalidData)
            #expect(error.message.contains("PLS line 3"), "\(error)")
        }
        do {
            _ = try parse("#EXTM3U\n#EXTINF:abc,x\na.mp3\n", url: "http://x/y.m3u")
            Issue.record("accepted")
        } catch {
            #expect(error.message.contains("line 2"), "\(error)")
        }
    }

    @Test func limits() {
        var limits = PlaylistLimits()
        limits.maximumBytes = 100
        #expect(throws: AudioError.self) { try parse("#EXTM3U\n" + String(repeating: "a.mp3\n", count: 30), limits: limits) }
        limits = PlaylistLimits()
        limits.maximumEntries = 10
        do {
            _ = try parse(String(repeating: "a.mp3\n", count: 11), url: "http://x/y.m3u", limits: limits)
            Issue.record("accepted")
        } catch {
            #expect(error.code == .limitExceeded)
        }
        #expect(throws: AudioError.self) { try parse("[playlist]\nFile1=a\n", depth: 5) }
        #expect((try? parse("[playlist]\nFile1=a\n", depth: 4)) != nil)
        limits = PlaylistLimits()
        limits.maximumLineLength = 50
        #expect(throws: AudioError.self) { try parse(String(repeating: "x", count: 51) + "\n", url: "http://x/y.m3u", limits: limits) }
    }

    @Test func garbageIsRefused() {
        #expect(throws: AudioError.self) { try parse("", url: "http://x/y.m3u") }
        #expect(throws: AudioError.self) { try parse("<html><body>404</body></html>", url: "http://x/y.m3u") }
        #expect(throws: AudioError.self) { try Playlist.parse(bytes: [0xFF, 0xFB, 0x90, 0, 0, 0], url: "http://x/y.m3u") }
        #expect(throws: AudioError.self) { try parse("[playlist]\nNumberOfEntries=0\n") }
        #expect(throws: AudioError.self) { try parse("File1=a.mp3\n", url: "http://x/y.pls") }
    }

    /// Found by the playlist fuzzer: file URLs with a host or a relative path, and URLs without a
    /// host, used to come out as empty or relative entries.
    @Test func fuzzFindingsMalformedReferences() {
        for (ref, base) in [("file://", "file:///tmp/x/list.m3u"), ("file://MEDIA:TYPE=AUDIO", "/tmp/list.m3u"),
                            ("File:=xexample/s", "file:///tmp/x/list.pls"), ("http://", "/tmp/list.m3u"),
                            ("//", "http://h/x.m3u"), ("file://host/share/a.mp3", "/tmp/list.m3u"),
                            ("//host/share/a.mp3", "/tmp/list.m3u")] {
            do {
                let p = try Playlist.parse(bytes: Array("#EXTM3U\n#EXTINF:1,x\n\(ref)\n".utf8), url: base)
                Issue.record("accepted '\(ref)' as \(p.entries.map(\.url))")
            } catch {
                #expect(error.message.contains("line 3"), "\(error)")
            }
        }
        #expect((try? Playlist.parse(bytes: Array("file://localhost/a%20b.mp3\n".utf8), url: "/tmp/l.m3u"))?.entries.first?.url == "/a%20b.mp3")
        #expect((try? Playlist.parse(bytes: Array("[playlist]\nFile1=////\n".utf8), url: "file:///tmp/x/l.pls"))?.entries.first?.url == "/")
    }

    @Test func detection() {
        #expect(Playlist.isPlaylist(bytes: [], url: "http://x/a.PLS", contentType: nil))
        #expect(Playlist.isPlaylist(bytes: [], url: "http://x/a", contentType: "application/vnd.apple.mpegurl"))
        #expect(Playlist.isPlaylist(bytes: Array("\r\n[Playlist]\r\n".utf8), url: "http://x/a", contentType: "audio/mpeg"))
        #expect(Playlist.isPlaylist(bytes: Array("#EXTM3U\n".utf8), url: "http://x/a", contentType: nil))
        #expect(!Playlist.isPlaylist(bytes: [0xFF, 0xFB, 0x90], url: "http://x/a.mp3", contentType: "audio/mpeg"))
        #expect(PlaylistEntry(url: "http://x/list.m3u8?token=1", line: 1).looksLikePlaylist)
    }

    @Test func urlResolution() {
        let base = PlaylistURL("http://a/b/c/d;p?q")
        // RFC 3986 section 5.4.1 examples.
        let cases = ["g": "http://a/b/c/g", "./g": "http://a/b/c/g", "g/": "http://a/b/c/g/", "/g": "http://a/g",
                     "//g": "http://g", "?y": "http://a/b/c/d;p?y", "g?y": "http://a/b/c/g?y", "": "http://a/b/c/d;p?q",
                     ".": "http://a/b/c/", "..": "http://a/b/", "../g": "http://a/b/g", "../..": "http://a/",
                     "../../g": "http://a/g", "../../../g": "http://a/g", "g;x=1/../y": "http://a/b/c/y"]
        for (ref, expected) in cases {
            #expect(base.resolving(ref).text == expected, "\(ref)")
        }
    }

    // MARK: HLS

    @Test func hlsMasterPlaylist() throws {
        let text = """
        #EXTM3U
        #EXT-X-VERSION:4
        #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="English",LANGUAGE="en",DEFAULT=YES,AUTOSELECT=YES,CHANNELS="2",URI="audio/en.m3u8"
        #EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="subs",NAME="English",URI="subs/en.m3u8"
        #EXT-X-STREAM-INF:BANDWIDTH=64000,CODECS="mp4a.40.5"
        low/index.m3u8
        #EXT-X-STREAM-INF:BANDWIDTH=128000,AVERAGE-BANDWIDTH=120000,CODECS="mp4a.40.2"
        mid/index.m3u8
        #EXT-X-STREAM-INF:BANDWIDTH=320000,CODECS="mp4a.40.2"
        high/index.m3u8
        #EXT-X-STREAM-INF:BANDWIDTH=2000000,CODECS="avc1.4d401f,mp4a.40.2",RESOLUTION=1280x720,AUDIO="aud"
        video/index.m3u8
        """
        let p = try parse(text, url: "https://cdn.example.com/live/master.m3u8")
        #expect(p.format == .hlsMaster)
        let master = try #require(p.hls?.master)
        #expect(master.variants.count == 4)
        #expect(master.variants[1].codecs == ["mp4a.40.2"])
        #expect(master.variants[1].averageBandwidth == 120_000)
        #expect(master.variants[3].codecs == ["avc1.4d401f", "mp4a.40.2"])
        #expect(!master.variants[3].isAudioOnly)
        #expect(master.audioRenditions.count == 1)
        #expect(master.audioRenditions[0].uri == "https://cdn.example.com/live/audio/en.m3u8")
        #expect(master.chooseVariant(maximumBandwidth: nil)?.uri == "https://cdn.example.com/live/high/index.m3u8")
        #expect(master.chooseVariant(maximumBandwidth: 200_000)?.bandwidth == 128_000)
        #expect(master.chooseVariant(maximumBandwidth: 10)?.bandwidth == 64_000)
        #expect(master.audioRendition(for: master.variants[3])?.name == "English")
    }

    @Test func hlsMediaPlaylist() throws {
        let text = """
        #EXTM3U
        #EXT-X-VERSION:7
        #EXT-X-TARGETDURATION:6
        #EXT-X-MEDIA-SEQUENCE:1041
        #EXT-X-PLAYLIST-TYPE:EVENT
        #EXT-X-KEY:METHOD=NONE
        #EXT-X-MAP:URI="init.mp4",BYTERANGE="720@0"
        #EXT-X-PROGRAM-DATE-TIME:2026-11-22T03:00:00.000Z
        #EXTINF:5.98,first
        #EXT-X-BYTERANGE:1000@720
        media.mp4
        #EXTINF:6.0,
        #EXT-X-BYTERANGE:1200
        media.mp4
        #EXT-X-DISCONTINUITY
        #EXTINF:6.0,
        seg-1043.m4s
        #EXT-X-KEY:METHOD=AES-128,URI="key.bin",IV=0x0102
        #EXTINF:6.0,
        seg-1044.m4s
        #EXT-X-ENDLIST
        """
        let p = try parse(text, url: "http://h/a/media.m3u8")
        #expect(p.format == .hlsMedia)
        let m = try #require(p.hls?.media)
        #expect(m.targetDuration == 6)
        #expect(m.mediaSequence == 1041)
        #expect(m.playlistType == .event)
        #expect(m.hasEndList)
        #expect(m.segments.map(\.sequence) == [1041, 1042, 1043, 1044])
        #expect(m.segments[0].byteRange == HLSByteRange(length: 1000, offset: 720))
        #expect(m.segments[1].byteRange == HLSByteRange(length: 1200, offset: 1720))
        #expect(m.segments[0].title == "first")
        #expect(m.segments[0].programDateTime == "2026-11-22T03:00:00.000Z")
        #expect(m.segments[0].map == HLSMap(uri: "http://h/a/init.mp4", byteRange: HLSByteRange(length: 720, offset: 0)))
        #expect(m.segments[2].discontinuity)
        #expect(!m.segments[1].discontinuity)
        #expect(m.segments[3].key.method == .aes128)
        #expect(abs(m.totalDuration - 23.98) < 1e-9)
    }

    @Test func hlsMalformed() {
        let cases: [(String, String)] = [
            ("#EXTM3U\n#EXT-X-TARGETDURATION:x\n", "line 2"),
            ("#EXTM3U\n#EXT-X-TARGETDURATION:4\nseg.ts\n", "line 3"),
            ("#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXTINF:nan,\nseg.ts\n", "line 3"),
            ("#EXTM3U\n#EXT-X-STREAM-INF:CODECS=\"mp4a.40.2\"\nlow.m3u8\n", "line 2"),
            ("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1,CODECS=\"mp4a\nlow.m3u8\n", "line 2"),
            ("#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXT-X-BYTERANGE:100\n#EXTINF:1,\nseg.ts\n", "line 5"),
            ("#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXTINF:1,\nfile:///etc/passwd\n", "line 4"),
            ("#EXTM3U\n#EXT-X-MEDIA-SEQUENCE:1\n#EXTINF:1,\na.ts\n", "TARGETDURATION"),
        ]
        for (text, needle) in cases {
            do {
                _ = try parse(text, url: "http://h/x.m3u8")
                Issue.record("accepted: \(text)")
            } catch {
                #expect(error.message.contains(needle), "\(error) for \(text)")
            }
        }
    }
}

extension String {
    func replacingOccurrences(_ a: String, _ b: String) -> String {
        split(separator: a, omittingEmptySubsequences: false).joined(separator: b)
    }
}

@Suite struct PlaylistExpansionTests {
    /// A fake web of playlists keyed by URL.
    func fetcher(_ pages: [String: String]) -> (String) throws(AudioError) -> Playlist.Fetched {
        { (url: String) throws(AudioError) -> Playlist.Fetched in
            guard let text = pages[url] else { throw AudioError(.network, component: "test", "404 \(url)") }
            return Playlist.Fetched(bytes: Array(text.utf8), url: url)
        }
    }

    @Test func nestedPlaylistsExpandInOrder() throws {
        let pages = [
            "http://h/top.pls": "[playlist]\nFile1=a.mp3\nFile2=sub/list.m3u\nTitle2=Sub\nFile3=live/master.m3u8\nFile4=z.mp3\n",
            "http://h/sub/list.m3u": "#EXTM3U\n#EXTINF:10,B\nb.mp3\nc.mp3\n",
            "http://h/live/master.m3u8": "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\nlow.m3u8\n",
        ]
        let entries = try Playlist.expand(url: "http://h/top.pls", fetch: fetcher(pages))
        #expect(entries.map(\.url) == ["http://h/a.mp3", "http://h/sub/b.mp3", "http://h/sub/c.mp3", "http://h/live/master.m3u8", "http://h/z.mp3"])
        #expect(entries[1].title == "B")
    }

    @Test func nestingAndCyclesAreBounded() {
        let pages = ["http://h/a.m3u": "b.m3u\n", "http://h/b.m3u": "a.m3u\n"]
        do {
            _ = try Playlist.expand(url: "http://h/a.m3u", fetch: fetcher(pages))
            Issue.record("cycle accepted")
        } catch {
            #expect(error.code == .limitExceeded, "\(error)")
        }
        var limits = PlaylistLimits()
        limits.maximumNestingDepth = 1
        let chain = ["http://h/1.m3u": "2.m3u\n", "http://h/2.m3u": "3.m3u\n", "http://h/3.m3u": "x.mp3\n"]
        #expect(throws: AudioError.self) { try Playlist.expand(url: "http://h/1.m3u", limits: limits, fetch: fetcher(chain)) }
        limits.maximumNestingDepth = 2
        #expect((try? Playlist.expand(url: "http://h/1.m3u", limits: limits, fetch: fetcher(chain)))?.map(\.url) == ["http://h/x.mp3"])
    }
}
