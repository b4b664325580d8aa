#if canImport(Glibc)
import Glibc
#endif
import AudioCore
import AudioTestSupport
import Testing

/// `afplay URL`: a live ICY stream from the loopback server, played to the null device (not
/// paced), reports first_audio and a metadata event per title with its playback time, and stops
/// after `-t`.
@Suite struct AfplayURLTests {
    static func afplayPath() -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        var dirs: [String] = []
        if n > 0 {
            let exe = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if let slash = exe.lastIndex(of: "/") { dirs.append(String(exe[..<slash])) }
        }
        dirs.append("\(Corpus.packageRoot)/.build/debug")
        for d in dirs where access("\(d)/afplay", X_OK) == 0 { return "\(d)/afplay" }
        return nil
    }

    @Test func liveICYStreamReportsFirstAudioAndTitles() throws {
        let afplay = try #require(Self.afplayPath(), "afplay is not built (swift build)")
        let dir = try ScratchDirectory("afplay-url")
        defer { dir.remove() }
        let file = dir.path + "/a.mp3"
        try #require(makeFixture(file, rate: 44100, channels: 2, seconds: 2, codec: ["-c:a", "libmp3lame", "-b:a", "128k"]))
        let bytes = try #require(Corpus.read(file))
        let server = try TestHTTPServer()
        defer { server.stop() }
        var route = TestHTTPServer.Route(body: .looping(bytes), contentType: "audio/mpeg")
        route.acceptsRanges = false
        route.sendsContentLength = false
        route.icyMetaInterval = 16000
        route.throttleBytesPerSecond = 32_000
        server.route("/live.mp3", route)
        server.setTitle("Über Title", for: "/live.mp3")
        let p = try ToolProcess(afplay, ["--json-events", "--output", "null:fast", "-t", "1.5", server.url("/live.mp3")],
                                outputPath: dir.path + "/out.txt")
        let code = p.wait(timeout: 20)
        if code == nil { p.stop() }
        #expect(code == 0, "afplay output: \(p.output)")
        let lines = p.output.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.contains("\"event\": \"first_audio\"") })
        let meta = lines.first { $0.contains("\"event\": \"metadata\"") }
        #expect(meta?.contains("\"title\": \"Über Title\"") == true, "\(lines)")
        #expect(meta?.contains("\"playback_time\"") == true)
        #expect(lines.contains { $0.contains("\"state\": \"playing\"") })
    }

    @Test func notFoundURLExitsWithAnError() throws {
        let afplay = try #require(Self.afplayPath(), "afplay is not built (swift build)")
        let dir = try ScratchDirectory("afplay-url-404")
        defer { dir.remove() }
        let server = try TestHTTPServer()
        defer { server.stop() }
        var route = TestHTTPServer.Route(body: .bytes([]), contentType: "text/plain")
        route.status = 404
        server.route("/gone.mp3", route)
        let p = try ToolProcess(afplay, ["--output", "null:fast", server.url("/gone.mp3")], outputPath: dir.path + "/out.txt")
        let code = p.wait(timeout: 10)
        if code == nil { p.stop() }
        #expect(code == 1)
        #expect(p.output.contains("404"), "\(p.output)")
    }
}
