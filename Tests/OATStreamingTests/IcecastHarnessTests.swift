#if canImport(Glibc)
import Glibc
#endif
import OATCore
import OATTestSupport
import Testing

/// The Icecast harness itself: a private icecast2 fed by ffmpeg, titles through the admin
/// interface, seen in the ICY metadata a listener receives.
@Suite(.requires(IcecastTestServer.unavailableReason))
struct IcecastHarnessTests {
    @Test func mountServesAudioWithICYTitlesSetThroughTheAdminInterface() throws {
        let dir = try ScratchDirectory("icecast-harness")
        defer { dir.remove() }
        let file = dir.path + "/tone.mp3"
        try #require(makeFixture(file, rate: 44100, channels: 2, seconds: 20, codec: ["-c:a", "libmp3lame", "-b:a", "128k"]))
        let server = try IcecastTestServer()
        defer { server.stop() }
        try server.startSource(mount: "/h.mp3", file: file, format: "mp3", contentType: "audio/mpeg")
        #expect(server.setTitle(mount: "/h.mp3", "Harness Title ä"))
        let r = try LoopbackHTTP.get(port: server.port, path: "/h.mp3", headers: ["Icy-MetaData: 1"], maxBody: 40_000, seconds: 5)
        #expect(r.status == 200)
        #expect(r.headers["content-type"] == "audio/mpeg")
        let metaint = try #require(r.headers["icy-metaint"].flatMap { Int($0) })
        #expect(metaint > 0)
        try #require(r.body.count > metaint + 1)
        let length = Int(r.body[metaint]) * 16
        let block = String(decoding: r.body[(metaint + 1)..<min(r.body.count, metaint + 1 + length)], as: UTF8.self)
        #expect(block.contains("StreamTitle='Harness Title ä'"), "metadata block: \(block)")
        // The audio bytes hold MPEG frame syncs (the burst starts mid-frame).
        #expect(r.body[0..<metaint].indices.contains { r.body[$0] == 0xFF && $0 + 1 < metaint && r.body[$0 + 1] & 0xE0 == 0xE0 })
    }
}
