#if canImport(Glibc)
import Glibc
#endif
import OATTestSupport
import OpenAudioToolbox
import Testing

/// `afplay --record FILE URL` (issue 5 point 7): the stream plays and its packets land in FILE.
@Suite struct AfplayRecordTests {
    @Test(.requires(TestResource.corpusMissing)) func afplayRecordsAStreamWhilePlaying() throws {
        let afplay = try #require(builtProduct("afplay"), "afplay is not built (swift build)")
        let source = try TestResource.corpusFile("ffmpeg-generated/mp3/l3_cbr128_44k_st_info.mp3")
        let bytes = try #require(Corpus.read(source))
        let scratch = try ScratchDirectory("afplay-record")
        defer { scratch.remove() }
        let server = try TestHTTPServer()
        defer { server.stop() }
        // An on-demand MP3 over HTTP (with a length, so it ends; ICY metadata stripping on the
        // recording path is covered by StreamRecorderTests, where a live stream's end is controlled).
        server.route("/radio", TestHTTPServer.Route(body: .bytes(bytes), contentType: "audio/mpeg"))
        let out = scratch.path + "/radio.mp3"
        let tool = try ToolProcess(afplay, ["--output", "null:fast", "--no-ui", "--record", out, server.url("/radio")], outputPath: scratch.path + "/afplay.out")
        let status = tool.wait(timeout: 30)
        tool.stop()
        #expect(status == 0, "afplay: \(tool.output)")
        #expect(tool.output.contains("recorded"), "afplay: \(tool.output)")
        let original = try decodeWithToolbox(source)
        let recorded = try decodeWithToolbox(out)
        #expect(recorded.samples.count == original.samples.count)
        let identical = recorded.samples == original.samples  // a Bool: never diff large arrays in #expect
        #expect(identical, "the recording holds the stream's packets unchanged")
    }

    @Test func afplayRecordRefusesAnUnknownFileType() throws {
        let afplay = try #require(builtProduct("afplay"), "afplay is not built (swift build)")
        let scratch = try ScratchDirectory("afplay-record")
        defer { scratch.remove() }
        let tool = try ToolProcess(afplay, ["--output", "null:fast", "--no-ui", "--record", scratch.path + "/x.unknown", "http://127.0.0.1:9/none"],
                                   outputPath: scratch.path + "/afplay.out")
        let status = tool.wait(timeout: 30)
        tool.stop()
        #expect(status == 2)
        #expect(tool.output.contains("x.unknown"), "afplay: \(tool.output)")
    }
}
