#if canImport(Glibc)
import Glibc
#endif
import OATStreaming
import OATTestSupport
import OpenAudioToolbox
import Testing

/// `afplay --record`'s recorder: the audio bytes a stream delivers (ICY metadata removed) are
/// written as a file, packet for packet when the container allows, re-encoded otherwise.
@Suite struct StreamRecorderTests {
    static var mp3: String? { Corpus.root.map { $0 + "/ffmpeg-generated/mp3/l3_cbr128_44k_st_info.mp3" } }

    /// Streams `source` over loopback HTTP with ICY metadata every 8000 bytes through a
    /// RecordingByteSource; returns the recorder after finishing.
    static func record(_ source: String, to path: String) throws -> StreamRecorder {
        let bytes = try #require(Corpus.read(source))
        let server = try TestHTTPServer()
        defer { server.stop() }
        var route = TestHTTPServer.Route(body: .bytes(bytes), contentType: "audio/mpeg")
        route.icyMetaInterval = 8000
        route.sendsContentLength = false
        route.acceptsRanges = false
        server.route("/live.mp3", route)
        server.setTitle("Artist - Title; with 'quotes'", for: "/live.mp3")
        let recorder = try StreamRecorder(path: path)
        var options = HTTPOptions()
        options.reconnect.rejoinsEndedLiveStreams = false
        let source = RecordingByteSource(HTTPByteSource(url: server.url("/live.mp3"), options: options), recorder: recorder)
        _ = try source.open(at: 0)
        var buffer = [UInt8](repeating: 0, count: 3000)
        var metadata = 0
        loop: while true {
            let r = try buffer.withUnsafeMutableBytes { try source.read(into: $0) }
            switch r {
            case .end: break loop
            case .metadata: metadata += 1
            default: break
            }
        }
        source.close()
        #expect(metadata > 0, "the server sent ICY metadata")
        try recorder.finish()
        return recorder
    }

    @Test(.requires(TestResource.corpusMissing)) func mp3StreamIsRecordedPacketForPacket() throws {
        let source = try TestResource.corpusFile("ffmpeg-generated/mp3/l3_cbr128_44k_st_info.mp3")
        let dir = try ScratchDirectory("record-stream")
        let out = dir.path + "/radio.mp3"
        let recorder = try Self.record(source, to: out)
        #expect(!recorder.isReencoding)
        let original = try decodeWithToolbox(source)
        let recorded = try decodeWithToolbox(out)
        #expect(recorded.samples.count == original.samples.count, "recorded \(recorded.samples.count / 2) frames, source \(original.samples.count / 2)")
        let identical = recorded.samples == original.samples  // a Bool: never diff large arrays in #expect
        #expect(identical, "a copied MP3 decodes to the same samples")
        #expect(decodeWithFFmpeg(out)?.count == original.samples.count, "ffmpeg reads the recording")
    }

    @Test(.requires(TestResource.corpusMissing)) func mp3StreamIsReencodedForM4A() throws {
        let source = try TestResource.corpusFile("ffmpeg-generated/mp3/l3_cbr128_44k_st_info.mp3")
        let dir = try ScratchDirectory("record-stream")
        let out = dir.path + "/radio.m4a"
        let recorder = try Self.record(source, to: out)
        #expect(recorder.isReencoding)
        let original = try decodeWithToolbox(source)
        let recorded = try decodeWithToolbox(out)
        // AAC frames: the gapless edit makes the length exact; allow one AAC frame of slack.
        let frames = recorded.samples.count / 2, expected = original.samples.count / 2
        #expect(abs(frames - expected) <= 1024, "recorded \(frames) frames, source \(expected)")
        let n = min(recorded.samples.count, original.samples.count)
        let quality = snr(Array(original.samples[0..<n]), Array(recorded.samples[0..<n]))
        print("MP3 stream re-encoded to AAC: \(frames) frames for \(expected), SNR \(quality) dB")
        #expect(quality > 15)
    }

    @Test func unknownExtensionIsAClearError() {
        #expect { _ = try StreamRecorder(path: "/tmp/radio.xyz") } throws: { ($0 as? AudioError)?.message.contains("radio.xyz") == true }
    }
}
