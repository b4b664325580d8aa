import OATTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 27 section 2: hostile inputs that hung `afplay -t 3`. PCM at 1 Hz ran for more than
/// 20 s (it now fails at once, naming the file and the rate outside 1000...768000 Hz), and plain
/// http chunked framing past libcurl's limits (a size of 2^64-1 followed by endless data, a 1 MB
/// chunk extension, a size with 10,000 leading zeros) was retried for 40-60 s and more (it is now
/// an error that is not retried).
@Suite(.serialized) struct AfplayHostileInputHangTests {
    static var enabled: Bool { builtProduct("afplay") != nil || getenv("CI").map { String(cString: $0) } == "true" }

    /// A 1 Hz mono 16-bit file of 100 frames in `container` (wav, aiff, au, caf).
    static func oneHertz(_ container: String) -> [UInt8] {
        func be16(_ v: Int) -> [UInt8] { [UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
        func be32(_ v: Int) -> [UInt8] { [UInt8(v >> 24 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
        let samples = [UInt8](repeating: 0, count: 200)
        switch container {
        case "wav": return HostileFiles.wav(channels: 1, rate: 1, bits: 16, dataBytes: 200)
        case "caf": return HostileFiles.caf(format: "lpcm", channels: 1, rate: 1)
        case "au": return Array(".snd".utf8) + be32(24) + be32(200) + be32(3) + be32(1) + be32(1) + samples
        default:
            // AIFF: COMM with the rate as an 80-bit extended 1.0 (exponent 16383, mantissa 2^63).
            let rate: [UInt8] = [0x3F, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 0]
            let comm = Array("COMM".utf8) + be32(18) + be16(1) + be32(100) + be16(16) + rate
            let ssnd = Array("SSND".utf8) + be32(8 + 200) + be32(0) + be32(0) + samples
            let body = Array("AIFF".utf8) + comm + ssnd
            return Array("FORM".utf8) + be32(body.count) + body
        }
    }

    @Test(.enabled(if: enabled), arguments: ["wav", "aiff", "au", "caf"])
    func aOneHertzFileFailsAtOnceNamingTheRate(container: String) throws {
        let afplay = try #require(builtProduct("afplay"))
        let dir = try ScratchDirectory("afplay-1hz")
        defer { dir.remove() }
        let path = dir.path + "/one-hertz.\(container)"
        #expect(writeFile(path, Self.oneHertz(container)))
        for extra in [[], ["--eq", "flat"]] {
            let started = Date()
            let p = try ToolProcess(afplay, ["--no-ui", "-t", "3", "--output", "null"] + extra + [path], outputPath: dir.path + "/log.txt")
            let status = p.wait(timeout: 20)
            let seconds = Date().timeIntervalSince(started)
            if status == nil { p.stop() }
            print("afplay -t 3 \(extra.joined(separator: " ")) on 1 Hz \(container): status \(status.map(String.init) ?? "still running"), \(seconds) s: \(p.output)")
            #expect(status != nil && seconds < 5, "\(container) \(extra): afplay still ran after \(seconds) s")
            #expect(status != 0, "\(container) \(extra): a 1 Hz file played")
            #expect(p.output.contains(path) && p.output.contains("1 Hz") && p.output.contains("1000...768000"),
                    "\(container) \(extra): the message does not name the file and the rate: \(p.output)")
        }
    }

    /// A loopback server (python3) answering every request with `mode`'s hostile chunked body.
    static let server = """
    import socket, sys, threading, time
    mode = sys.argv[1]
    srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(('127.0.0.1', 0)); srv.listen(16)
    open(sys.argv[2], 'w').write(str(srv.getsockname()[1]))
    def handle(c):
        try:
            c.recv(65536)
            c.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Type: audio/mpeg\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n")
            if mode == 'huge-size':
                c.sendall(b"ffffffffffffffff\\r\\n")
                while True: c.sendall(b"\\xff\\xfb\\x90\\x00" * 4096)
            elif mode == 'long-extension':
                c.sendall(b"10;" + b"x" * (1 << 20) + b"\\r\\n")
                while True: c.sendall(b"a" * 4096); time.sleep(0.01)
            else:
                c.sendall(b"0" * 10000 + b"10\\r\\n" + b"a" * 16 + b"\\r\\n")
                time.sleep(60)
        except Exception:
            pass
        finally:
            c.close()
    while True:
        c, _ = srv.accept()
        threading.Thread(target=handle, args=(c,), daemon=True).start()
    """

    @Test(.enabled(if: enabled && ChildProcess.which("python3") != nil),
          arguments: ["huge-size", "long-extension", "leading-zeros"])
    func hostileChunkedFramingEndsAfplayWithAClearError(mode: String) throws {
        let afplay = try #require(builtProduct("afplay"))
        let python = try #require(ChildProcess.which("python3"))
        let dir = try ScratchDirectory("afplay-chunked")
        defer { dir.remove() }
        #expect(writeText(dir.path + "/server.py", Self.server))
        let portFile = dir.path + "/port"
        let server = try ChildProcess.spawn(python, [dir.path + "/server.py", mode, portFile])
        defer { server.terminate() }
        var port: String?
        for _ in 0..<200 where port == nil {
            port = Corpus.read(portFile).map { String(decoding: $0, as: UTF8.self) }.flatMap { $0.isEmpty ? nil : $0 }
            if port == nil { usleep(10_000) }
        }
        let p0 = try #require(port, "the server did not start")
        let url = "http://127.0.0.1:\(p0)/stream.mp3"
        let started = Date()
        let p = try ToolProcess(afplay, ["--no-ui", "-t", "3", "--output", "null", url], outputPath: dir.path + "/log.txt")
        let status = p.wait(timeout: 30)
        let seconds = Date().timeIntervalSince(started)
        if status == nil { p.stop() }
        print("afplay -t 3 on chunked \(mode): status \(status.map(String.init) ?? "still running"), \(seconds) s: \(p.output)")
        #expect(status != nil && seconds < 10, "\(mode): afplay still ran after \(seconds) s")
        #expect(status != 0, "\(mode): exit status \(String(describing: status))")
        #expect(p.output.contains("chunk"), "\(mode): the error does not say what was wrong: \(p.output)")
    }

    /// A loopback server (python3) sending an MP3 as a live stream: `slow`, 10 bytes every
    /// 0.1 s (100 B/s) for ever; `closing`, the first 8000 bytes (0.5 s) and then a close, on
    /// every connection.
    static let liveServer = """
    import socket, sys, threading, time
    mode, path, portfile = sys.argv[1], sys.argv[2], sys.argv[3]
    data = open(path, 'rb').read()
    srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(('127.0.0.1', 0)); srv.listen(16)
    open(portfile, 'w').write(str(srv.getsockname()[1]))
    def handle(c):
        try:
            c.recv(65536)
            c.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Type: audio/mpeg\\r\\nConnection: close\\r\\n\\r\\n")
            if mode == 'slow':
                i = 0
                while True:
                    c.sendall(data[i:i + 10]); i = (i + 10) % len(data); time.sleep(0.1)
            else:
                c.sendall(data[:8000])
        except Exception:
            pass
        finally:
            c.close()
    while True:
        c, _ = srv.accept()
        threading.Thread(target=handle, args=(c,), daemon=True).start()
    """

    /// Issue 27 section 2: a live stream at 100 B/s buffered for ever without a word, and one
    /// whose server closes every connection mid-stream was rejoined for ever. Now the first
    /// gives up after `BufferingPolicy.slowBufferingTimeout` (30 s of buffering) naming the rate
    /// received, the second after more than 10 rejoins within 300 s (`maximumLiveRejoinsInWindow`).
    @Test(.enabled(if: enabled && ChildProcess.which("python3") != nil && ChildProcess.which("ffmpeg") != nil),
          arguments: ["slow", "closing"])
    func aHostileLiveServerIsGivenUpOnByADocumentedRule(mode: String) throws {
        let afplay = try #require(builtProduct("afplay"))
        let python = try #require(ChildProcess.which("python3"))
        let ffmpeg = try #require(ChildProcess.which("ffmpeg"))
        let dir = try ScratchDirectory("afplay-live")
        defer { dir.remove() }
        let mp3 = dir.path + "/tone.mp3"
        let encode = try ToolProcess(ffmpeg, ["-hide_banner", "-loglevel", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "sine=frequency=440:duration=20",
                                              "-ac", "2", "-b:a", "128k", mp3], outputPath: dir.path + "/ffmpeg.txt")
        #expect(encode.wait(timeout: 60) == 0, "ffmpeg: \(encode.output)")
        #expect(writeText(dir.path + "/server.py", Self.liveServer))
        let portFile = dir.path + "/port"
        let server = try ChildProcess.spawn(python, [dir.path + "/server.py", mode, mp3, portFile])
        defer { server.terminate() }
        var port: String?
        for _ in 0..<200 where port == nil {
            port = Corpus.read(portFile).map { String(decoding: $0, as: UTF8.self) }.flatMap { $0.isEmpty ? nil : $0 }
            if port == nil { usleep(10_000) }
        }
        let p0 = try #require(port, "the server did not start")
        let started = Date()
        let p = try ToolProcess(afplay, ["--no-ui", "--output", "null", "http://127.0.0.1:\(p0)/live.mp3"], outputPath: dir.path + "/log.txt")
        let status = p.wait(timeout: 75)
        let seconds = Date().timeIntervalSince(started)
        if status == nil { p.stop() }
        print("afplay on a \(mode) live server: status \(status.map(String.init) ?? "still running"), \(seconds) s: \(p.output)")
        #expect(status != nil && status != 0, "\(mode): afplay still ran after \(seconds) s, or ended well")
        if mode == "slow" {
            #expect(p.output.contains("stalled") && p.output.contains("bytes/s"), "the error does not give the rate: \(p.output)")
        } else {
            #expect(seconds < 30, "\(mode): \(seconds) s")
            #expect(p.output.contains("closed the connection") && p.output.contains("giving up"), "\(p.output)")
        }
    }
}
