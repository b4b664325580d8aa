#if canImport(Glibc)
import Glibc
#endif
@testable import OATNetwork
import OATCore
import OATTestSupport
import Testing

/// Feeds `bytes` to `decoder`, appending what it decodes to `out`.
private func feed(_ decoder: inout ChunkedDecoder, _ bytes: [UInt8], _ out: inout [UInt8]) throws(ChunkError) {
    let p = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, bytes.count), alignment: 1)
    defer { p.deallocate() }
    p.copyBytes(from: bytes)
    var decoded: [UInt8] = []
    try decoder.feed(UnsafeRawBufferPointer(rebasing: p[0..<bytes.count])) { decoded.append(contentsOf: $0) }
    out += decoded
}

/// The plain-socket HTTP/1.1 transport that carries `http://` without libcurl (issue 18): its
/// URL rules, the chunked decoder, and whole requests against real loopback servers, including
/// servers that break HTTP.
@Suite struct PlainHTTPTests {
    // MARK: pure parts

    @Test func whichURLsGoOverThePlainSocket() {
        let o = HTTPOptions()
        #expect(PlainHTTPURL.carries("http://127.0.0.1:8000/stream", options: o))
        #expect(PlainHTTPURL.carries("HTTP://example.org", options: o))
        #expect(!PlainHTTPURL.carries("https://example.org/", options: o))
        #expect(!PlainHTTPURL.carries("http://user:pw@example.org/", options: o))
        #expect(!PlainHTTPURL.carries("http:///path", options: o))
        #expect(!PlainHTTPURL.carries("http://exa mple.org/", options: o))
        #expect(!PlainHTTPURL.carries("http://example.org:70000/", options: o))
        var proxied = o
        proxied.proxy = "http://127.0.0.1:3128"
        #expect(!PlainHTTPURL.carries("http://example.org/", options: proxied))
        var curl = o
        curl.prefersLibcurl = true
        #expect(!PlainHTTPURL.carries("http://example.org/", options: curl))
        var auth = o
        auth.username = "u"
        #expect(!PlainHTTPURL.carries("http://example.org/", options: auth))

        let u = PlainHTTPURL("http://[::1]:8080/a/b.mp3?x=1#frag")
        #expect(u?.host == "::1")
        #expect(u?.port == 8080)
        #expect(u?.target == "/a/b.mp3?x=1")
        #expect(u?.hostHeader == "[::1]:8080")
        let bare = PlainHTTPURL("http://radio.example?q")
        #expect(bare?.target == "/?q")
        #expect(bare?.port == 80)
        #expect(bare?.hostHeader == "radio.example")
    }

    @Test func redirectLocationsResolveAgainstTheURL() throws {
        let u = try #require(PlainHTTPURL("http://h:81/dir/file.mp3?x"))
        #expect(u.resolve(location: "https://other/x") == "https://other/x")
        #expect(u.resolve(location: "//other:82/y") == "http://other:82/y")
        #expect(u.resolve(location: "/root") == "http://h:81/root")
        #expect(u.resolve(location: "next.mp3") == "http://h:81/dir/next.mp3")
        #expect(u.resolve(location: "?y") == "http://h:81/dir/file.mp3?y")
        #expect(u.resolve(location: "  ") == nil)
    }

    @Test func theRequestCarriesRangeICYAndTheExtraHeaders() throws {
        var o = HTTPOptions()
        o.headers = [.init(name: "X-Test", value: "1"), .init(name: "User-Agent", value: "mine"), .init(name: "Evil", value: "a\r\nInjected: 1")]
        let u = try #require(PlainHTTPURL("http://h:81/s"))
        let text = String(decoding: u.request(offset: 1234, options: o), as: UTF8.self)
        #expect(text.hasPrefix("GET /s HTTP/1.1\r\nHost: h:81\r\n"))
        #expect(text.contains("\r\nRange: bytes=1234-\r\n"))
        #expect(text.contains("\r\nIcy-MetaData: 1\r\n"))
        #expect(text.contains("\r\nX-Test: 1\r\n"))
        #expect(text.contains("\r\nUser-Agent: mine\r\n"))
        #expect(!text.contains("OpenAudioToolbox"))
        #expect(!text.contains("Injected"))
        #expect(text.hasSuffix("\r\n\r\n"))
        #expect(!String(decoding: u.request(offset: 0, options: HTTPOptions()), as: UTF8.self).contains("Range"))
    }

    @Test func chunkedBodiesDecodeWhateverTheSplit() throws {
        let wire = Array("4;ext=1\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nTrailer: x\r\n\r\nIGNORED".utf8)
        for split in 0...wire.count {
            var d = ChunkedDecoder()
            var out: [UInt8] = []
            try feed(&d, Array(wire[0..<split]), &out)
            try feed(&d, Array(wire[split...]), &out)
            #expect(String(decoding: out, as: UTF8.self) == "Wikipedia in\r\n\r\nchunks.", "split at \(split)")
            #expect(d.state == .done)
        }
    }

    @Test func hostileChunkFramingIsAnErrorNotATrap() {
        func decode(_ bytes: [UInt8]) -> String? {
            var d = ChunkedDecoder()
            var out: [UInt8] = []
            do throws(ChunkError) {
                try feed(&d, bytes, &out)
                return nil
            } catch { return error.message }
        }
        #expect(decode(Array("zz\r\n".utf8))?.contains("invalid chunk size") == true)
        #expect(decode(Array("FFFFFFFFFFFFFFFFFFFF\r\n".utf8))?.contains("too large") == true)
        #expect(decode(Array("\r\n".utf8))?.contains("empty") == true)
        #expect(decode(Array("3\r\nabcX\r\n".utf8))?.contains("CR LF") == true)
        #expect(decode([UInt8](repeating: 0x31, count: 10)) == nil)   // unfinished, not an error yet
        #expect(decode(Array("1;".utf8) + [UInt8](repeating: 0x61, count: 5000))?.contains("longer than") == true)
        #expect(decode(Array("0\r\n".utf8) + Array(String(repeating: "X-T: 1\r\n", count: 4000).utf8))?.contains("trailer") == true)
    }

    @Test func httpDatesParse() {
        #expect(parseHTTPDate("Sun, 06 Nov 1994 08:49:37 GMT") == 784_111_777)
        #expect(parseHTTPDate("Sunday, 06-Nov-94 08:49:37 GMT") == 784_111_777)
        #expect(parseHTTPDate("Sun Nov  6 08:49:37 1994") == 784_111_777)
        #expect(parseHTTPDate("yesterday") == nil)
    }

    // MARK: against servers

    @Test func plainHTTPDeliversTheSameAsLibcurl() throws {
        let server = try TestHTTPServer()
        defer { server.stop() }
        let payload = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
        server.serve("/file", bytes: payload, contentType: "audio/mpeg; charset=x")
        var chunked = TestHTTPServer.Route(body: .bytes(payload))
        chunked.chunked = true
        chunked.sendsContentLength = false
        server.route("/chunked", chunked)
        for path in ["/file", "/chunked"] {
            let plain = HTTPByteSource(url: server.url(path), options: quickOptions())
            let info = try plain.open(at: 0)
            #expect(plain.usesPlainSocket)
            let got = try drain(plain).bytes
            #expect(got == payload, "\(path): \(got.count) bytes")
            var o = quickOptions()
            o.prefersLibcurl = true
            let curl = HTTPByteSource(url: server.url(path), options: o)
            let curlInfo = try curl.open(at: 0)
            #expect(!curl.usesPlainSocket)
            #expect(try drain(curl).bytes == payload)
            #expect(info.contentType == curlInfo.contentType)
            #expect(info.totalLength == curlInfo.totalLength)
            #expect(info.isSeekable == curlInfo.isSeekable)
            #expect(info.url == curlInfo.url)
        }
        let req = try #require(server.requests(to: "/file").first)
        #expect(req.headers["icy-metadata"] == "1")
        #expect(req.headers["host"] == "127.0.0.1:\(server.port)")
    }

    @Test func rangeRequestsAndSeeking() throws {
        let server = try TestHTTPServer()
        defer { server.stop() }
        let payload = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        server.serve("/f", bytes: payload)
        let source = HTTPByteSource(url: server.url("/f"), options: quickOptions())
        let info = try source.open(at: 40_000)
        #expect(source.usesPlainSocket)
        #expect(info.startOffset == 40_000)
        #expect(info.totalLength == 100_000)
        #expect(info.isSeekable)
        #expect(try drain(source).bytes == Array(payload[40_000...]))
        #expect(server.requests(to: "/f").last?.range == "bytes=40000-")
        // A server that ignores Range: the skip is read and dropped.
        var noRanges = TestHTTPServer.Route(body: .bytes(payload))
        noRanges.acceptsRanges = false
        server.route("/norange", noRanges)
        let skip = HTTPByteSource(url: server.url("/norange"), options: quickOptions())
        _ = try skip.open(at: 1000)
        #expect(try drain(skip).bytes == Array(payload[1000...]))
    }

    @Test func redirectsAreFollowedAndBounded() throws {
        let server = try TestHTTPServer()
        defer { server.stop() }
        server.serve("/end", bytes: [1, 2, 3])
        server.redirect("/a", to: "/b")
        server.redirect("/b", to: server.url("/end"), status: 301)
        let source = HTTPByteSource(url: server.url("/a"), options: quickOptions())
        let info = try source.open(at: 0)
        #expect(source.usesPlainSocket)
        #expect(info.url == server.url("/end"))
        #expect(try drain(source).bytes == [1, 2, 3])
        for i in 0..<8 { server.redirect("/loop\(i)", to: "/loop\(i + 1)") }
        let loop = HTTPByteSource(url: server.url("/loop0"), options: quickOptions())
        #expect { _ = try loop.open(at: 0) } throws: { e in
            let e = e as? AudioError
            return e?.code == .network && e?.message.contains("too many redirects") == true && e?.message.contains("longer than 5") == true
        }
        #expect(server.requests(to: "/loop5").count == 1)
        #expect(server.requests(to: "/loop6").isEmpty)
        // Off plain http (here https to a closed port): libcurl takes over the chain.
        let probe = try TestHTTPServer()
        let closedPort = probe.port
        probe.stop()
        server.redirect("/tls", to: "https://127.0.0.1:\(closedPort)/x")
        var once = quickOptions()
        once.reconnect.openAttempts = 1
        let tls = HTTPByteSource(url: server.url("/tls"), options: once)
        #expect { _ = try tls.open(at: 0) } throws: { ($0 as? AudioError)?.underlying?.contains("curl") == true }
        #expect(!tls.usesPlainSocket)
    }

    @Test func icyStatusLineAndMetadata() throws {
        let server = try TestHTTPServer()
        defer { server.stop() }
        var r = TestHTTPServer.Route(body: .bytes((0..<50_000).map { UInt8(truncatingIfNeeded: $0) }), contentType: "audio/mpeg")
        r.icyStatusLine = true
        r.icyMetaInterval = 8192
        r.sendsContentLength = false
        server.route("/live", r)
        server.setTitle("Artist - Song", for: "/live")
        var o = quickOptions()
        o.reconnect.rejoinsEndedLiveStreams = false
        let source = HTTPByteSource(url: "icy://127.0.0.1:\(server.port)/live", options: o)
        let info = try source.open(at: 0)
        #expect(source.usesPlainSocket)
        #expect(info.icy?.metaInterval == 8192)
        #expect(info.isLive)
        #expect(info.contentType == "audio/mpeg")
        let d = try drain(source)
        #expect(d.bytes == (0..<50_000).map { UInt8(truncatingIfNeeded: $0) })
        #expect(d.metadata.contains { $0.title == "Artist - Song" })
    }

    @Test func anEarlyCloseResumesWithARange() throws {
        let server = try TestHTTPServer()
        defer { server.stop() }
        let payload = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        var r = TestHTTPServer.Route(body: .bytes(payload))
        r.faults = [.disconnect(afterBytes: 70_000)]
        server.route("/cut", r)
        let source = HTTPByteSource(url: server.url("/cut"), options: quickOptions())
        _ = try source.open(at: 0)
        let d = try drain(source)
        #expect(d.bytes == payload)
        #expect(d.reconnects.count == 1)
        #expect(d.reconnects.first?.1 == true)
        #expect(server.requests(to: "/cut").count == 2)
        #expect(server.requests(to: "/cut").last?.range.map { $0.hasPrefix("bytes=") && $0 != "bytes=0-" } == true)
    }

    @Test func aConnectionRefusedIsANetworkError() throws {
        let probe = try TestHTTPServer()
        let port = probe.port
        probe.stop()
        var o = quickOptions()
        o.reconnect.openAttempts = 1
        let source = HTTPByteSource(url: "http://127.0.0.1:\(port)/", options: o)
        #expect { _ = try source.open(at: 0) } throws: { e in
            let e = e as? AudioError
            return e?.code == .network && e?.message.contains("cannot read") == true && e?.underlying?.contains("refused") == true
        }
        #expect(source.usesPlainSocket)
    }

    // MARK: servers that break HTTP

    @Test func aHugeHeadIsRejectedWithABoundedRead() throws {
        // One header line of 10 MB without an end, and a head of many small fields.
        let server = try ScriptedTCPServer([
            [.text("HTTP/1.1 200 OK\r\nX-Huge: "), .repeated(0x41, count: 10 << 20)],
            [.text("HTTP/1.1 200 OK\r\n" + String(repeating: "X-Field: value\r\n", count: 10_000) + "\r\nbody")],
        ])
        defer { server.stop() }
        for _ in 0..<2 {
            let source = HTTPByteSource(url: server.url("/h"), options: quickOptions())
            let run = withDeadline(8, cancel: { source.cancel() }) { () throws(AudioError) in try source.open(at: 0) }
            #expect(!run.timedOut)
            let e = try #require(failure(run.result))
            #expect(e.code == .limitExceeded, "\(e)")
            #expect(e.message.contains("exceeds 65536 bytes"), "\(e)")
        }
        #expect(server.requests.count == 2)   // not retried
    }

    @Test func garbageInsteadOfAStatusLineIsInvalidData() throws {
        let server = try ScriptedTCPServer([[.send([0x00, 0xFF, 0x13, 0x37]), .text("\n\r\n\r\n")]])
        defer { server.stop() }
        let source = HTTPByteSource(url: server.url("/"), options: quickOptions())
        #expect { _ = try source.open(at: 0) } throws: { e in
            let e = e as? AudioError
            return e?.code == .invalidData && e?.message.contains("status line") == true
        }
        let bad = try ScriptedTCPServer([[.text("HTTP/1.1 abc\r\n\r\n")]])
        defer { bad.stop() }
        #expect { _ = try HTTPByteSource(url: bad.url("/"), options: quickOptions()).open(at: 0) } throws: {
            ($0 as? AudioError)?.message.contains("invalid status line") == true
        }
    }

    @Test func hostileFramingFailsClearly() throws {
        let server = try ScriptedTCPServer([
            [.text("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nQQ\r\n")],
            [.text("HTTP/1.1 200 OK\r\nContent-Length: 12, 13\r\n\r\nhello")],
            [.text("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n")],
            [.text("HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n")],
        ])
        defer { server.stop() }
        var o = quickOptions()
        o.reconnect = .never
        let chunk = HTTPByteSource(url: server.url("/1"), options: o)
        _ = try chunk.open(at: 0)
        #expect { _ = try drain(chunk) } throws: { ($0 as? AudioError)?.message.contains("bad chunked encoding") == true }
        #expect { _ = try HTTPByteSource(url: server.url("/2"), options: o).open(at: 0) } throws: {
            ($0 as? AudioError)?.message.contains("invalid Content-Length") == true
        }
        #expect { _ = try HTTPByteSource(url: server.url("/3"), options: o).open(at: 0) } throws: {
            ($0 as? AudioError)?.code == .unsupportedFormat
        }
        #expect { _ = try HTTPByteSource(url: server.url("/4"), options: o).open(at: 0) } throws: {
            ($0 as? AudioError)?.message.contains("invalid Content-Length") == true
        }
    }

    @Test func aServerClosingEarlyIsAFaultNotAnEnd() throws {
        let server = try ScriptedTCPServer([
            [.text("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this")],
            [.text("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n")],
            [.text("HTTP/1.1 200 OK\r\nContent-")],
        ])
        defer { server.stop() }
        var o = quickOptions()
        o.reconnect = .never
        let length = HTTPByteSource(url: server.url("/1"), options: o)
        _ = try length.open(at: 0)
        #expect { _ = try drain(length) } throws: { ($0 as? AudioError)?.code == .network }
        let chunked = HTTPByteSource(url: server.url("/2"), options: o)
        _ = try chunked.open(at: 0)
        #expect { _ = try drain(chunked) } throws: { ($0 as? AudioError)?.underlying?.contains("chunked") == true }
        #expect { _ = try HTTPByteSource(url: server.url("/3"), options: o).open(at: 0) } throws: {
            ($0 as? AudioError)?.message.contains("before the response head") == true
        }
    }

    @Test func aStalledServerTimesOutAndCancelIsPrompt() throws {
        let server = try ScriptedTCPServer([
            [.text("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nabc"), .hang],
            [.hang],
        ])
        defer { server.stop() }
        var o = quickOptions()
        o.reconnect = .never
        o.reconnect.stallTimeout = 0.5
        let stalled = HTTPByteSource(url: server.url("/1"), options: o)
        _ = try stalled.open(at: 0)
        let start = monotonic()
        #expect { _ = try drain(stalled) } throws: { ($0 as? AudioError)?.code == .timedOut }
        #expect(monotonic() - start < 3)
        // No head at all, a long stall timeout: cancel() ends the open at once.
        var patient = quickOptions()
        patient.reconnect.stallTimeout = 60
        let hanging = HTTPByteSource(url: server.url("/2"), options: patient)
        let run = withDeadline(0.5, cancel: { hanging.cancel() }) { () throws(AudioError) in try hanging.open(at: 0) }
        #expect(run.timedOut)
        #expect(failure(run.result)?.code == .cancelled)
        #expect(run.elapsed < 1.5, "cancel took \(run.elapsed) s")
    }
}
