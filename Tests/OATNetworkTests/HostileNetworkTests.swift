#if canImport(Glibc)
import Glibc
#endif
import OATCore
import OATNetwork
import OATTestSupport
import Dispatch
import Synchronization
import Testing

/// Runs `body` on its own thread. When it has not returned after `seconds`, `cancel` is called
/// (so a test of a hang ends in bounded time) and the result says so.
func withDeadline<T: Sendable>(_ seconds: Double, cancel: @escaping @Sendable () -> Void,
                               _ body: @escaping @Sendable () throws(AudioError) -> T) -> (result: Result<T, AudioError>, elapsed: Double, timedOut: Bool) {
    let box = Locked<Result<T, AudioError>?>(nil)
    let done = DispatchSemaphore(value: 0)
    let start = monotonic()
    DispatchQueue.global().async {
        let r: Result<T, AudioError>
        do throws(AudioError) { r = .success(try body()) } catch { r = .failure(error) }
        box.withLock { $0 = r }
        done.signal()
    }
    var timedOut = false
    if done.wait(timeout: .now() + seconds) == .timedOut {
        timedOut = true
        cancel()
        done.wait()
    }
    let elapsed = monotonic() - start
    return (box.withLock { $0! }, elapsed, timedOut)
}

/// The error of a failed result, if any.
func failure<T>(_ r: Result<T, AudioError>) -> AudioError? {
    if case .failure(let e) = r { e } else { nil }
}

/// Hostile servers and inputs (issue 16, sections 3 and 4): each case is bounded in memory,
/// requests or time, and ends with a clear error where it cannot play.
@Suite struct HostileNetworkTests {
    /// Endless `100 Continue` heads: the open fails after a few, at once, with `limitExceeded`
    /// (not retried), instead of after tens of seconds.
    @Test func endlessInterimResponsesFailQuickly() throws {
        let server = try TestHTTPServer()
        defer { server.stop() }
        var r = TestHTTPServer.Route(body: .bytes([1, 2, 3]))
        r.faults = [.interimResponses(count: Int.max, interval: 0.02)]
        server.route("/continue", r)
        let source = HTTPByteSource(url: server.url("/continue"), options: quickOptions())
        let run = withDeadline(8, cancel: { source.cancel() }) { () throws(AudioError) in try source.open(at: 0) }
        print("endless 100 Continue: failed after \(run.elapsed) s: \(String(describing: failure(run.result)))")
        #expect(!run.timedOut, "still opening after 8 s")
        let e = try #require(failure(run.result))
        #expect(e.code == .limitExceeded, "\(e)")
        #expect(e.message.contains("interim"), "\(e)")
        #expect(run.elapsed < 2)
        #expect(server.requests(to: "/continue").count == 1)
        // A couple of interim heads (100 Continue, 103 Early Hints) are fine.
        var ok = TestHTTPServer.Route(body: .bytes([1, 2, 3]))
        ok.faults = [.interimResponses(count: 2, interval: 0)]
        server.route("/two", ok)
        let two = HTTPByteSource(url: server.url("/two"), options: quickOptions())
        _ = try two.open(at: 0)
        #expect(try drain(two).bytes == [1, 2, 3])
    }

    /// A live HLS playlist whose segments are all empty fails with a clear error after
    /// `maximumSegmentsWithoutAudio` of them, instead of buffering for ever.
    @Test func liveHLSOfEmptySegmentsFails() throws {
        let dir = try ScratchDirectory("hostile-hls")
        defer { dir.remove() }
        let empty = dir.path + "/empty.aac"
        try #require(writeFile(empty, []))
        let playlistPath = dir.path + "/live.m3u8"
        final class Counter: Sendable { let value = Locked(0) }
        let loads = Counter()
        let scratch = dir.path
        let source = HLSByteSource(url: playlistPath) { (u: String) throws(AudioError) -> any ByteSource in
            if u == playlistPath {
                // Each reload: three more empty segments, never an end.
                let n = loads.value.withLock { $0 += 1; return $0 - 1 }
                var text = "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXT-X-MEDIA-SEQUENCE:\(n * 3)\n"
                for _ in 0..<6 { text += "#EXTINF:1.0,\nempty.aac\n" }
                let path = scratch + "/v\(n).m3u8"
                writeText(path, text)
                return FileByteSource(path: path)
            }
            return FileByteSource(path: u)
        }
        let run = withDeadline(20, cancel: { source.cancel() }) { () throws(AudioError) in
            _ = try source.open(at: 0)
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 16)
            defer { buffer.deallocate() }
            while true {
                if try source.read(into: buffer) == .end { return 0 }
            }
        }
        print("live HLS of empty segments: ended after \(run.elapsed) s, \(loads.value.withLock { $0 }) playlist loads: \(String(describing: failure(run.result)))")
        #expect(!run.timedOut, "still buffering after 20 s")
        let e = try #require(failure(run.result))
        #expect(e.code == .invalidData, "\(e)")
        #expect(e.message.contains("brought no audio"), "\(e)")
    }

    /// `ByteRangeCache.defaultDirectory` follows XDG_CACHE_HOME, then HOME, then TMPDIR.
    @Test func cacheDirectoryFollowsXDG() {
        #expect(ByteRangeCache.defaultDirectory(environment: ["XDG_CACHE_HOME": "/x/cache/", "HOME": "/home/u"]) == "/x/cache/openaudiotoolbox/http")
        #expect(ByteRangeCache.defaultDirectory(environment: ["XDG_CACHE_HOME": "relative", "HOME": "/home/u"]) == "/home/u/.cache/openaudiotoolbox/http")
        #expect(ByteRangeCache.defaultDirectory(environment: ["TMPDIR": "/scratch"]) == "/scratch/openaudiotoolbox-\(getuid())-cache")
        #expect(ByteRangeCache.defaultDirectory(environment: [:]) == "/tmp/openaudiotoolbox-\(getuid())-cache")
    }
}
