import OATCore
import OATNetwork
import OATTestSupport
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Reads a source to its end, collecting audio bytes and events; gives up after `limit` bytes.
struct Drained {
    var bytes: [UInt8] = []
    var metadata: [StreamMetadata] = []
    var reconnects: [(ByteSourceInfo, Bool)] = []
}

func drain(_ source: any ByteSource, limit: Int = 64 << 20, chunk: Int = 8192) throws -> Drained {
    var out = Drained()
    var buffer = [UInt8](repeating: 0, count: chunk)
    while out.bytes.count < limit {
        let r = try buffer.withUnsafeMutableBytes { try source.read(into: $0) }
        switch r {
        case .bytes(let n): out.bytes += buffer[0..<n]
        case .metadata(let m): out.metadata.append(m)
        case .reconnected(let info, let continuous): out.reconnects.append((info, continuous))
        case .end: return out
        }
    }
    return out
}

func testBytes(_ count: Int, seed: Int = 1) -> [UInt8] {
    var x = UInt32(truncatingIfNeeded: seed &* 2654435761 &+ 12345)
    return (0..<count).map { _ in
        x = x &* 1664525 &+ 1013904223
        return UInt8(truncatingIfNeeded: x >> 24)
    }
}

/// Fast-retrying options for tests.
func quickOptions() -> HTTPOptions {
    var o = HTTPOptions()
    o.reconnect.initialBackoff = 0.02
    o.reconnect.maximumBackoff = 0.1
    o.reconnect.stallTimeout = 1
    o.reconnect.giveUpAfter = 5
    return o
}

@Suite struct HTTPByteSourceTests {
    @Test func fetchesAWholeResourceWithInfo() throws {
        let server = try TestHTTPServer()
        defer { server.stop() }
        let body = testBytes(300_000)
        server.serve("/a.mp3", bytes: body, contentType: "Audio/MPEG; charset=x")
        let source = HTTPByteSource(url: server.url("/a.mp3"))
        let info = try source.open(at: 0)
        #expect(info.contentType == "audio/mpeg")
        #expect(info.totalLength == 300_000)
        #expect(info.isSeekable)
        #expect(!info.isLive)
        #expect(info.header("accept-ranges") == "bytes")
        let got = try drain(source)
        #expect(firstDifference(got.bytes, body) == nil)
        #expect(source.statistics.requests == 1)
        #expect(source.statistics.bytesDelivered == 300_000)
        let req = try #require(server.requests.first)
        #expect(req.headers["icy-metadata"] == "1")
        #expect(req.headers["user-agent"]?.contains("OpenAudioToolbox") == true)
        #expect(req.range == nil)
    }

    @Test func opensAtAnOffsetWithARangeRequest() throws {
        let server = try TestHTTPServer()
        defer { server.stop() }
        let body = testBytes(100_000)
        server.serve("/b", bytes: body)
        let source = HTTPByteSource(url: server.url("/b"))
        let info = try source.open(at: 12_345)
        #expect(info.startOffset == 12_345)
        #expect(info.totalLength == 100_000)
        #expect(firstDifference(try drain(source).bytes, Array(body[12_345...])) == nil)
        #expect(server.requests.last?.range == "bytes=12345-")
    }

    @Test func aServerIgnoringRangeIsSkippedWhenSmallAndRefusedWhenLarge() throws {
        let server = try TestHTTPServer()
        defer { server.stop() }
        let body = testBytes(3_000_000)
        var r = TestHTTPServer.Route(body: .bytes(body))
        r.acceptsRanges = false
        server.route("/c", r)
        let source = HTTPByteSource(url: server.url("/c"))
        _ = try source.open(at: 1000)
        #expect(firstDifference(try drain(source).bytes, Array(body[1000...])) == nil)
        let far = HTTPByteSource(url: server.url("/c"))
        #expect { _ = try far.open(at: 2_000_000) } throws: { ($0 as? AudioError)?.message.contains("ignored the range") == true }
    }

    @Test func followsRedirectChainsAndRefusesLongOnes() throws {
        let server = try TestHTTPServer()
        defer { server.stop() }
        server.serve("/final", bytes: [1, 2, 3])
        for i in 0..<7 { server.redirect("/r\(i)", to: i == 6 ? "/final" : "/r\(i + 1)") }
        let ok = HTTPByteSource(url: server.url("/r2"))   // 4 redirects
        let info = try ok.open(at: 0)
        #expect(info.url.hasSuffix("/final"))
        #expect(firstDifference(try drain(ok).bytes, [1, 2, 3]) == nil)
        let tooLong = HTTPByteSource(url: server.url("/r0"))   // 6 redirects
        #expect { _ = try tooLong.open(at: 0) } throws: { e in
            let e = e as? AudioError
            return e?.message.contains("too many redirects") == true && e?.message.contains("longer than 5") == true
        }
    }

    @Test(arguments: [401, 403, 404, 410])
    func clientErrorsFailFastNamingURLAndStatus(status: Int) throws {
        let server = try TestHTTPServer()
        defer { server.stop() }
        var r = TestHTTPServer.Route(body: .bytes([1]))
        r.faults = Array(repeating: .status(status, retryAfter: nil), count: 5)
        server.route("/x", r)
        let source = HTTPByteSource(url: server.url("/x"), options: quickOptions())
        let start = monotonic()
        #expect { _ = try source.open(at: 0) } throws: { e in
            let d = (e as? AudioError)?.description ?? ""
            return d.contains("/x") && d.contains("\(status)")
        }
        #expect(server.requests(to: "/x").count == 1)
        #expect(monotonic() - start < 2)
    }

    @Test func icyStatusLineAndMetadataAreHandled() throws {
        let server = try TestHTTPServer()
        defer { server.stop() }
        let body = testBytes(50_000)
        var r = TestHTTPServer.Route(body: .bytes(body), contentType: "audio/mpeg")
        r.icyStatusLine = true
        r.icyMetaInterval = 8192
        r.sendsContentLength = false
        r.acceptsRanges = false
        r.extraHeaders = ["icy-name: Test Radio", "icy-genre: Jazz", "icy-br: 128", "icy-url: http://example.invalid/"]
        server.route("/live", r)
        server.setTitle("Artist - Song", for: "/live")
        var o = HTTPOptions()
        o.reconnect.rejoinsEndedLiveStreams = false   // this finite ICY body really ends
        let source = HTTPByteSource(url: server.url("/live"), options: o)
        let info = try source.open(at: 0)
        #expect(info.isLive)
        #expect(info.icy?.name == "Test Radio")
        #expect(info.icy?.genre == "Jazz")
        #expect(info.icy?.bitRate == 128)
        #expect(info.icy?.metaInterval == 8192)
        let got = try drain(source, chunk: 1000)
        #expect(firstDifference(got.bytes, body) == nil)
        #expect(got.metadata.count == 1)
        #expect(got.metadata.first?.title == "Artist - Song")
        #expect(got.metadata.first?.audioByteOffset == 8192)
    }

    @Test func chunkedBodiesArrive() throws {
        let server = try TestHTTPServer()
        defer { server.stop() }
        let body = testBytes(70_001)
        var r = TestHTTPServer.Route(body: .bytes(body))
        r.chunked = true
        r.acceptsRanges = false
        server.route("/chunked", r)
        let source = HTTPByteSource(url: server.url("/chunked"))
        let info = try source.open(at: 0)
        #expect(info.totalLength == nil)
        #expect(firstDifference(try drain(source).bytes, body) == nil)
    }

    @Test func cancelWakesABlockedRead() throws {
        let server = try TestHTTPServer()
        defer { server.stop() }
        var r = TestHTTPServer.Route(body: .endlessPattern)
        r.faults = [.stall(afterBytes: 1000, seconds: 30)]
        server.route("/stall", r)
        var o = HTTPOptions()
        o.reconnect.stallTimeout = 60
        let source = HTTPByteSource(url: server.url("/stall"), options: o)
        _ = try source.open(at: 0)
        let canceller = try JoinableThread(name: "test") { usleep(300_000); source.cancel() }
        let start = monotonic()
        #expect { _ = try drain(source) } throws: { ($0 as? AudioError)?.code == .cancelled }
        #expect(monotonic() - start < 2)
        canceller.join()
    }
}

/// Compares byte arrays without printing them: nil when equal, else where they differ.
func firstDifference(_ a: [UInt8], _ b: [UInt8]) -> String? {
    if a == b { return nil }
    let n = min(a.count, b.count)
    for i in 0..<n where a[i] != b[i] { return "differ at byte \(i) (counts \(a.count), \(b.count))" }
    return "counts \(a.count) and \(b.count) differ"
}

@Suite struct HTTPProxyAndThroughputTests {
    @Test func anExplicitProxyIsUsed() throws {
        // The test server plays the proxy: the request target is the absolute URL.
        let proxy = try TestHTTPServer()
        defer { proxy.stop() }
        proxy.serve("http://radio.invalid/stream.mp3", bytes: [4, 5, 6], contentType: "audio/mpeg")
        var o = quickOptions()
        o.proxy = proxy.url("")
        let source = HTTPByteSource(url: "http://radio.invalid/stream.mp3", options: o)
        _ = try source.open(at: 0)
        #expect(firstDifference(try drain(source).bytes, [4, 5, 6]) == nil)
        #expect(proxy.requests.first?.target == "http://radio.invalid/stream.mp3")
    }

    @Test func loopbackThroughputAndTimeToFirstByte() throws {
        let server = try TestHTTPServer()
        defer { server.stop() }
        server.route("/fast", TestHTTPServer.Route(body: .endlessPattern))
        let source = HTTPByteSource(url: server.url("/fast"))
        let t0 = monotonic()
        _ = try source.open(at: 0)
        var buffer = [UInt8](repeating: 0, count: 65536)
        var first: Double? = nil
        var total = 0
        while total < 16 << 20 {
            if case .bytes(let n) = try buffer.withUnsafeMutableBytes({ try source.read(into: $0) }) {
                if first == nil { first = monotonic() - t0 }
                total += n
            }
        }
        let seconds = monotonic() - t0
        let mbps = Double(total) / seconds / 1e6
        print("HTTPByteSource loopback: first byte after \(Int((first ?? 0) * 1000)) ms, \(Int(mbps)) MB/s over \(total >> 20) MiB")
        #expect((first ?? 10) < 2)
        #expect(mbps > 2)   // 320 kbit/s audio is 0.04 MB/s
        source.close()
    }
}
