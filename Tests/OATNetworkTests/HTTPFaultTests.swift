import OATCore
import OATNetwork
import OATTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Every scripted fault of the test server with its expected outcome.
@Suite struct HTTPFaultTests {
    @Test func midStreamDisconnectsResumeAtTheExactByte() throws {
        let server = try TestHTTPServer()
        defer { server.stop() }
        let body = testBytes(400_000, seed: 7)
        var r = TestHTTPServer.Route(body: .bytes(body), contentType: "audio/mpeg")
        r.faults = [.disconnect(afterBytes: 10_000), .disconnect(afterBytes: 123_457), .disconnect(afterBytes: 1), .disconnect(afterBytes: 0), .dropConnection]
        server.route("/f.mp3", r)
        let source = HTTPByteSource(url: server.url("/f.mp3"), options: quickOptions())
        _ = try source.open(at: 0)
        let got = try drain(source, chunk: 3000)
        #expect(firstDifference(got.bytes, body) == nil)
        #expect(got.reconnects.count == 4)
        #expect(got.reconnects.allSatisfy { $0.1 })
        let ranges = server.requests(to: "/f.mp3").map { $0.range }
        #expect(ranges == [nil, "bytes=10000-", "bytes=133457-", "bytes=133458-", "bytes=133458-", "bytes=133458-"])
        #expect(source.statistics.reconnects == 4)
        #expect(source.statistics.requests == 6)
    }

    @Test func aStallReconnectsAndAPermanentStallGivesUp() throws {
        let server = try TestHTTPServer()
        defer { server.stop() }
        let body = testBytes(100_000, seed: 3)
        var r = TestHTTPServer.Route(body: .bytes(body))
        r.faults = [.stall(afterBytes: 5000, seconds: 5)]
        server.route("/s", r)
        var o = quickOptions()
        o.reconnect.stallTimeout = 0.5
        let source = HTTPByteSource(url: server.url("/s"), options: o)
        _ = try source.open(at: 0)
        let start = monotonic()
        let got = try drain(source)
        #expect(firstDifference(got.bytes, body) == nil)
        #expect(got.reconnects.count == 1)
        #expect(monotonic() - start < 4)
        #expect(server.requests(to: "/s").last?.range == "bytes=5000-")

        var dead = TestHTTPServer.Route(body: .bytes(body))
        dead.faults = Array(repeating: .stall(afterBytes: 1000, seconds: 10), count: 40)
        server.route("/dead", dead)
        o.reconnect.giveUpAfter = 1.5
        let stuck = HTTPByteSource(url: server.url("/dead"), options: o)
        _ = try stuck.open(at: 0)
        let t0 = monotonic()
        #expect { _ = try drain(stuck) } throws: { e in
            let e = e as? AudioError
            return e?.code == .timedOut && e?.message.contains("gave up") == true
        }
        let elapsed = monotonic() - t0
        #expect(elapsed < 6)
        #expect(elapsed > 0.9)
    }

    @Test func throttlingBelowTheBitRateStillDeliversEverything() throws {
        let server = try TestHTTPServer()
        defer { server.stop() }
        let body = testBytes(60_000, seed: 4)
        var r = TestHTTPServer.Route(body: .bytes(body))
        r.throttleBytesPerSecond = 100_000
        server.route("/slow", r)
        let source = HTTPByteSource(url: server.url("/slow"), options: quickOptions())
        _ = try source.open(at: 0)
        let start = monotonic()
        let got = try drain(source)
        let elapsed = monotonic() - start
        #expect(firstDifference(got.bytes, body) == nil)
        #expect(got.reconnects.isEmpty)
        #expect(elapsed > 0.4)
    }

    @Test func retryAfterSecondsIsHonoured() throws {
        let server = try TestHTTPServer()
        defer { server.stop() }
        var r = TestHTTPServer.Route(body: .bytes([9, 8, 7]))
        r.faults = [.status(503, retryAfter: "1")]
        server.route("/busy", r)
        let source = HTTPByteSource(url: server.url("/busy"), options: quickOptions())
        let start = monotonic()
        _ = try source.open(at: 0)
        let elapsed = monotonic() - start
        #expect(elapsed >= 0.95)
        #expect(elapsed < 2.5)
        #expect(firstDifference(try drain(source).bytes, [9, 8, 7]) == nil)
        #expect(server.requests(to: "/busy").count == 2)
    }

    @Test func retryAfterAsAnHTTPDateIsHonouredFor429() throws {
        let server = try TestHTTPServer()
        defer { server.stop() }
        var now = time(nil)
        now += 2
        var tm = tm()
        gmtime_r(&now, &tm)
        var buf = [UInt8](repeating: 0, count: 64)
        let len = buf.withUnsafeMutableBufferPointer { p in
            p.withMemoryRebound(to: CChar.self) { strftime($0.baseAddress, 64, "%a, %d %b %Y %H:%M:%S GMT", &tm) }
        }
        let date = String(decoding: buf[0..<len], as: UTF8.self)
        var r = TestHTTPServer.Route(body: .bytes([1]))
        r.faults = [.status(429, retryAfter: date)]
        server.route("/limited", r)
        let source = HTTPByteSource(url: server.url("/limited"), options: quickOptions())
        let start = monotonic()
        _ = try source.open(at: 0)
        let elapsed = monotonic() - start
        #expect(elapsed >= 0.9)
        #expect(elapsed < 3.5)
    }

    @Test func serverErrorsAreRetriedThenReported() throws {
        let server = try TestHTTPServer()
        defer { server.stop() }
        var r = TestHTTPServer.Route(body: .bytes([1]))
        r.faults = Array(repeating: .status(500, retryAfter: nil), count: 10)
        server.route("/broken", r)
        let source = HTTPByteSource(url: server.url("/broken"), options: quickOptions())
        #expect { _ = try source.open(at: 0) } throws: { ($0 as? AudioError)?.description.contains("HTTP 500") == true }
        #expect(server.requests(to: "/broken").count == 3)   // openAttempts
    }

    @Test func hugeHeadersAreRefused() throws {
        let server = try TestHTTPServer()
        defer { server.stop() }
        var r = TestHTTPServer.Route(body: .bytes([1, 2]))
        r.extraHeaders = (0..<40).map { "X-Filler-\($0): " + String(repeating: "a", count: 2000) }
        server.route("/huge", r)
        let source = HTTPByteSource(url: server.url("/huge"), options: quickOptions())
        #expect { _ = try source.open(at: 0) } throws: { ($0 as? AudioError)?.code == .limitExceeded }
    }

    @Test func basicAuthFromOptionsAndURL() throws {
        let server = try TestHTTPServer()
        defer { server.stop() }
        var r = TestHTTPServer.Route(body: .bytes([5, 6]))
        r.requiredAuthorization = "Basic dXNlcjpwYXNz"   // user:pass
        server.route("/private", r)
        var o = quickOptions()
        o.username = "user"
        o.password = "pass"
        let withOptions = HTTPByteSource(url: server.url("/private"), options: o)
        _ = try withOptions.open(at: 0)
        #expect(firstDifference(try drain(withOptions).bytes, [5, 6]) == nil)
        let inURL = HTTPByteSource(url: "http://user:pass@127.0.0.1:\(server.port)/private", options: quickOptions())
        _ = try inURL.open(at: 0)
        let without = HTTPByteSource(url: server.url("/private"), options: quickOptions())
        #expect { _ = try without.open(at: 0) } throws: { ($0 as? AudioError)?.description.contains("401") == true }
        let wrong = HTTPByteSource(url: "http://user:nope@127.0.0.1:\(server.port)/private", options: quickOptions())
        #expect { _ = try wrong.open(at: 0) } throws: { e in
            let d = (e as? AudioError)?.description ?? ""
            return d.contains("401") && !d.contains("nope")
        }
    }

    @Test func customHeadersAreSent() throws {
        let server = try TestHTTPServer()
        defer { server.stop() }
        server.serve("/h", bytes: [1])
        var o = quickOptions()
        o.headers = [ByteSourceInfo.HeaderField(name: "X-Token", value: "abc")]
        o.requestsICYMetadata = false
        let source = HTTPByteSource(url: server.url("/h"), options: o)
        _ = try source.open(at: 0)
        #expect(server.requests.last?.headers["x-token"] == "abc")
        #expect(server.requests.last?.headers["icy-metadata"] == nil)
    }

    @Test func aLiveStreamRejoinsDiscontinuouslyWithMetadataRestarted() throws {
        let server = try TestHTTPServer()
        defer { server.stop() }
        var r = TestHTTPServer.Route(body: .endlessPattern, contentType: "audio/mpeg")
        r.icyMetaInterval = 4000
        r.faults = [.disconnect(afterBytes: 30_000)]
        server.route("/radio", r)
        server.setTitle("First", for: "/radio")
        let source = HTTPByteSource(url: server.url("/radio"), options: quickOptions())
        let info = try source.open(at: 0)
        #expect(info.isLive)
        #expect(!info.isSeekable)
        var buffer = [UInt8](repeating: 0, count: 2048)
        var audio: [UInt8] = []
        var titles: [(String?, Int64)] = []
        var rejoinAt: Int? = nil
        while audio.count < 80_000 {
            switch try buffer.withUnsafeMutableBytes({ try source.read(into: $0) }) {
            case .bytes(let n):
                audio += buffer[0..<n]
                if audio.count >= 20_000 { server.setTitle("Second", for: "/radio") }
            case .metadata(let m): titles.append((m.title, m.audioByteOffset))
            case .reconnected(_, let continuous):
                #expect(!continuous)
                rejoinAt = audio.count
            case .end: Issue.record("a live stream ended"); return
            }
        }
        let cut = try #require(rejoinAt)
        #expect(cut == 30_000)
        // Before the cut, the pattern from 0; after it, the pattern from 0 again (a rejoin).
        #expect(audio[0..<cut].enumerated().allSatisfy { $0.element == TestHTTPServer.patternByte(at: Int64($0.offset)) })
        #expect(audio[cut...].enumerated().allSatisfy { $0.element == TestHTTPServer.patternByte(at: Int64($0.offset)) })
        #expect(titles.first?.0 == "First")
        #expect(titles.first?.1 == 4000)
        #expect(titles.contains { $0.0 == "Second" && $0.1 == Int64(cut + 4000) })
    }

    @Test func liveTitlesChangeWhileStreaming() throws {
        let server = try TestHTTPServer()
        defer { server.stop() }
        var r = TestHTTPServer.Route(body: .endlessPattern)
        r.icyMetaInterval = 1000
        r.throttleBytesPerSecond = 200_000
        server.route("/onair", r)
        server.setTitle("A", for: "/onair")
        let source = HTTPByteSource(url: server.url("/onair"), options: quickOptions())
        _ = try source.open(at: 0)
        var buffer = [UInt8](repeating: 0, count: 512)
        var count = 0
        var titles: [String] = []
        while count < 60_000 {
            switch try buffer.withUnsafeMutableBytes({ try source.read(into: $0) }) {
            case .bytes(let n):
                count += n
                if count >= 20_000 && titles == ["A"] { server.setTitle("B", for: "/onair") }
            case .metadata(let m): titles.append(m.title ?? "")
            default: break
            }
        }
        #expect(titles == ["A", "B"])
    }

    @Test func hugeAndInvalidMetadataBlocksKeepTheAudioIntact() throws {
        let server = try TestHTTPServer()
        defer { server.stop() }
        let body = testBytes(20_000, seed: 9)
        var r = TestHTTPServer.Route(body: .bytes(body))
        r.icyMetaInterval = 2000
        r.sendsContentLength = false
        let hugeTitle = "StreamTitle='" + String(repeating: "x", count: 255 * 16 - 15) + "';"
        var huge = [UInt8(255)] + Array(hugeTitle.utf8)
        huge += [UInt8](repeating: 0, count: 255 * 16 + 1 - huge.count)
        let garbage = [UInt8(2)] + (0..<32).map { UInt8(($0 * 37) & 0x1F) }
        r.icyRawBlocks = [huge, garbage, [1] + Array("no equals here\0\0".utf8)]
        server.route("/meta", r)
        var o = quickOptions()
        o.reconnect.rejoinsEndedLiveStreams = false
        let source = HTTPByteSource(url: server.url("/meta"), options: o)
        _ = try source.open(at: 0)
        let got = try drain(source, chunk: 777)
        #expect(firstDifference(got.bytes, body) == nil)
        #expect(got.metadata.count == 1)
        #expect(got.metadata.first?.title?.count == 255 * 16 - 15)
    }

    @Test func aServerIgnoringIcyMetadataPlaysCleanly() throws {
        let server = try TestHTTPServer()
        defer { server.stop() }
        var r = TestHTTPServer.Route(body: .endlessPattern, contentType: "audio/aacp")
        r.extraHeaders = ["icy-name: No Meta"]
        server.route("/plain", r)
        let source = HTTPByteSource(url: server.url("/plain"))
        let info = try source.open(at: 0)
        #expect(info.icy?.metaInterval == nil)
        #expect(info.icy?.name == "No Meta")
        var buffer = [UInt8](repeating: 0, count: 4096)
        var audio: [UInt8] = []
        while audio.count < 50_000 {
            if case .bytes(let n) = try buffer.withUnsafeMutableBytes({ try source.read(into: $0) }) { audio += buffer[0..<n] }
        }
        #expect(audio.enumerated().allSatisfy { $0.element == TestHTTPServer.patternByte(at: Int64($0.offset)) })
    }

    @Test func aLoopingFileIsAnEndlessLiveBody() throws {
        let dir = try ScratchDirectory("loop")
        defer { removeTree(dir.path) }
        let file = testBytes(5000, seed: 21)
        #expect(writeFile(dir.path + "/loop.bin", file))
        let server = try TestHTTPServer()
        defer { server.stop() }
        server.route("/loop", TestHTTPServer.Route(body: .loopingFile(dir.path + "/loop.bin"), contentType: "audio/mpeg"))
        let source = HTTPByteSource(url: server.url("/loop"))
        let info = try source.open(at: 0)
        #expect(info.isLive)
        #expect(info.totalLength == nil)
        var buffer = [UInt8](repeating: 0, count: 4096)
        var audio: [UInt8] = []
        while audio.count < 12_000 {
            if case .bytes(let n) = try buffer.withUnsafeMutableBytes({ try source.read(into: $0) }) { audio += buffer[0..<n] }
        }
        #expect(firstDifference(Array(audio[0..<12_000]), file + file + Array(file[0..<2000])) == nil)
    }

    @Test func memoryStaysBoundedWhenTheReaderIsSlow() throws {
        let server = try TestHTTPServer()
        defer { server.stop() }
        server.route("/endless", TestHTTPServer.Route(body: .endlessPattern))
        var o = quickOptions()
        o.bufferLimit = 8192
        let source = HTTPByteSource(url: server.url("/endless"), options: o)
        _ = try source.open(at: 0)
        var buffer = [UInt8](repeating: 0, count: 16)
        for _ in 0..<2000 { _ = try buffer.withUnsafeMutableBytes { try source.read(into: $0) } }
        usleep(200_000)
        for _ in 0..<10 { _ = try buffer.withUnsafeMutableBytes { try source.read(into: $0) } }
        #expect(source.statistics.bytesDelivered >= 2010)
        #expect(source.statistics.bytesReceived < 200_000)
        source.close()
    }

    @Test func cancelDuringBackoffIsPrompt() throws {
        let server = try TestHTTPServer()
        defer { server.stop() }
        var r = TestHTTPServer.Route(body: .bytes([1]))
        r.faults = [.status(503, retryAfter: "20")]
        server.route("/wait", r)
        let source = HTTPByteSource(url: server.url("/wait"))
        let canceller = try JoinableThread(name: "test") { usleep(300_000); source.cancel() }
        let start = monotonic()
        #expect { _ = try source.open(at: 0) } throws: { ($0 as? AudioError)?.code == .cancelled }
        #expect(monotonic() - start < 2)
        canceller.join()
    }

    @Test func connectionRefusedFailsAfterTheOpenAttempts() throws {
        // A port that was free a moment ago: nothing listens there.
        let server = try TestHTTPServer()
        let port = server.port
        server.stop()
        let source = HTTPByteSource(url: "http://127.0.0.1:\(port)/x", options: quickOptions())
        let start = monotonic()
        #expect { _ = try source.open(at: 0) } throws: { ($0 as? AudioError)?.code == .network }
        #expect(monotonic() - start < 3)
    }
}

/// TLS against `openssl s_server` with a certificate generated at test time.
@Suite struct HTTPSTests {
    @Test func aSelfSignedCertificateIsRefusedByDefaultAndAcceptedWithTheOptIn() throws {
        guard let openssl = ChildProcess.which("openssl") else {
            Issue.record("openssl is missing (Scripts/setup.sh installs it)")
            return
        }
        let dir = try ScratchDirectory("tls")
        defer { removeTree(dir.path) }
        let gen = try ChildProcess.spawn(openssl, ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                                                   "-keyout", dir.path + "/key.pem", "-out", dir.path + "/cert.pem"])
        let deadline = monotonic() + 20
        while gen.isRunning && monotonic() < deadline { usleep(20_000) }
        gen.terminate()
        // A free port: bind 0 through the test server, release it, hand it to s_server.
        let probe = try TestHTTPServer()
        let port = probe.port
        probe.stop()
        let server = try ChildProcess.spawn(openssl, ["s_server", "-accept", "127.0.0.1:\(port)", "-cert", dir.path + "/cert.pem",
                                                      "-key", dir.path + "/key.pem", "-www", "-quiet"])
        defer { server.terminate() }
        let url = "https://127.0.0.1:\(port)/"
        var o = quickOptions()
        o.reconnect.openAttempts = 1
        // Wait until it accepts.
        var up = false
        for _ in 0..<100 {
            var insecure = o
            insecure.allowsInsecureTLS = true
            if (try? HTTPByteSource(url: url, options: insecure).open(at: 0)) != nil { up = true; break }
            usleep(50_000)
        }
        #expect(up)
        let strict = HTTPByteSource(url: url, options: o)
        #expect { _ = try strict.open(at: 0) } throws: { ($0 as? AudioError)?.message.contains("TLS certificate") == true }
        var insecure = o
        insecure.allowsInsecureTLS = true
        let lax = HTTPByteSource(url: url, options: insecure)
        let info = try lax.open(at: 0)
        #expect(info.url.hasPrefix("https://"))
        #expect(try drain(lax, limit: 1 << 20).bytes.count > 0)
        // Trusting the certificate explicitly works with verification on.
        var pinned = o
        pinned.caBundlePath = dir.path + "/cert.pem"
        _ = try HTTPByteSource(url: url, options: pinned).open(at: 0)
    }
}
