import OATCore
import OATNetwork
import OATTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite struct CacheTests {
    func read(_ source: any ByteSource, count: Int) throws -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 8192)
        while out.count < count {
            let want = min(buffer.count, count - out.count)
            let r = try buffer.withUnsafeMutableBytes { try source.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<want])) }
            switch r {
            case .bytes(let n): out += buffer[0..<n]
            case .end: return out
            default: continue
            }
        }
        return out
    }

    @Test func whatWasHeardReplaysOffline() throws {
        let dir = try ScratchDirectory("cache")
        defer { removeTree(dir.path) }
        let body = testBytes(300_000, seed: 11)
        let server = try TestHTTPServer()
        server.serve("/song.mp3", bytes: body, contentType: "audio/mpeg")
        let url = server.url("/song.mp3")
        do {
            let cache = try ByteRangeCache(directory: dir.path, sizeLimit: 10 << 20)
            let source = CachingByteSource(upstream: HTTPByteSource(url: url, options: quickOptions()), url: url, cache: cache)
            _ = try source.open(at: 0)
            #expect(firstDifference(try read(source, count: 120_000), Array(body[0..<120_000])) == nil)
            source.close()
        }
        server.stop()
        // A new cache object on the same directory (a new process), with the server gone.
        let cache = try ByteRangeCache(directory: dir.path, sizeLimit: 10 << 20)
        #expect(cache.entry(for: url)?.ranges == [0..<120_000])
        var o = quickOptions()
        o.reconnect.openAttempts = 1
        let offline = CachingByteSource(upstream: HTTPByteSource(url: url, options: o), url: url, cache: cache)
        let info = try offline.open(at: 0)
        #expect(info.totalLength == 300_000)
        #expect(info.contentType == "audio/mpeg")
        #expect(firstDifference(try read(offline, count: 120_000), Array(body[0..<120_000])) == nil)
        #expect(offline.statistics.bytesFromCache == 120_000)
        #expect(offline.statistics.requests == 0)
        // Beyond the cached part the network is needed, and it is gone.
        #expect(throws: AudioError.self) { _ = try read(offline, count: 10) }
    }

    @Test func aReadIntoAGapFetchesOnlyTheGap() throws {
        let dir = try ScratchDirectory("cache")
        defer { removeTree(dir.path) }
        let body = testBytes(400_000, seed: 12)
        let server = try TestHTTPServer()
        defer { server.stop() }
        server.serve("/g", bytes: body)
        let url = server.url("/g")
        let cache = try ByteRangeCache(directory: dir.path, sizeLimit: 10 << 20)
        let first = CachingByteSource(upstream: HTTPByteSource(url: url), url: url, cache: cache)
        _ = try first.open(at: 0)
        _ = try read(first, count: 100_000)
        _ = try first.open(at: 200_000)
        #expect(firstDifference(try read(first, count: 100_000), Array(body[200_000..<300_000])) == nil)
        first.close()
        #expect(cache.entry(for: url)?.ranges == [0..<100_000, 200_000..<300_000])
        let before = server.requests(to: "/g").count

        let second = CachingByteSource(upstream: HTTPByteSource(url: url), url: url, cache: cache)
        _ = try second.open(at: 0)
        let all = try read(second, count: 400_000)
        #expect(firstDifference(all, body) == nil)
        let newRanges = server.requests(to: "/g").dropFirst(before).map { $0.range }
        #expect(newRanges == ["bytes=100000-", "bytes=300000-"])
        #expect(second.statistics.bytesFromCache == 200_000)
        #expect(cache.entry(for: url)?.ranges == [0..<400_000])
    }

    @Test func leastRecentlyUsedResourcesAreEvictedWhole() throws {
        let dir = try ScratchDirectory("cache")
        defer { removeTree(dir.path) }
        let cache = try ByteRangeCache(directory: dir.path, sizeLimit: 250_000)
        let chunk = testBytes(100_000, seed: 13)
        for (i, name) in ["a", "b", "c"].enumerated() {
            let url = "http://h/\(name)"
            cache.describe(url: url, totalLength: 100_000, contentType: nil)
            chunk.withUnsafeBytes { cache.write(url: url, at: 0, $0) }
            cache.flush(url: url)
            if i < 2 { sleep(1) }   // distinct last-use seconds
        }
        #expect(cache.entry(for: "http://h/a") == nil)
        #expect(cache.entry(for: "http://h/b")?.cachedBytes == 100_000)
        #expect(cache.entry(for: "http://h/c")?.cachedBytes == 100_000)
        #expect(cache.totalCachedBytes <= 250_000)
        #expect(access(dir.path + "/" + ByteRangeCache.key(for: "http://h/a") + ".data", F_OK) != 0)
    }

    @Test func damagedMapsAreDiscardedAndClaimsAreClippedToTheData() throws {
        let dir = try ScratchDirectory("cache")
        defer { removeTree(dir.path) }
        let url = "http://h/x"
        let key = ByteRangeCache.key(for: url)
        #expect(key.count == 32)
        #expect(ByteRangeCache.key(for: "../../etc/passwd").allSatisfy { $0.isHexDigit })
        do {
            let cache = try ByteRangeCache(directory: dir.path, sizeLimit: 1 << 20)
            cache.describe(url: url, totalLength: 1000, contentType: "audio/mpeg")
            testBytes(500).withUnsafeBytes { cache.write(url: url, at: 0, $0) }
            cache.flush(url: url)
        }
        // A killed writer: the map claims more than the data file holds.
        let map = dir.path + "/" + key + ".map"
        #expect(writeFile(map, Array("OATCACHE 1\nurl \(url)\nlength 1000\ntype -\nused 1\nrange 0 900\n".utf8)))
        let clipped = try ByteRangeCache(directory: dir.path, sizeLimit: 1 << 20)
        #expect(clipped.entry(for: url)?.ranges == [0..<500])
        // Garbage map: discarded with its data.
        #expect(writeFile(map, [0xFF, 0x00, 0x13]))
        let fresh = try ByteRangeCache(directory: dir.path, sizeLimit: 1 << 20)
        #expect(fresh.entry(for: url) == nil)
        #expect(access(dir.path + "/" + key + ".data", F_OK) != 0)
    }

    @Test func liveStreamsPassThroughUncached() throws {
        let dir = try ScratchDirectory("cache")
        defer { removeTree(dir.path) }
        let server = try TestHTTPServer()
        defer { server.stop() }
        server.route("/live", TestHTTPServer.Route(body: .endlessPattern))
        let url = server.url("/live")
        let cache = try ByteRangeCache(directory: dir.path, sizeLimit: 1 << 20)
        let source = CachingByteSource(upstream: HTTPByteSource(url: url), url: url, cache: cache)
        let info = try source.open(at: 0)
        #expect(info.isLive)
        let got = try read(source, count: 50_000)
        #expect(got.count == 50_000)
        #expect(cache.entry(for: url) == nil)
        #expect(cache.totalCachedBytes == 0)
    }
}
