// The porting suite's programs that write files or play to an unpaced output (`OAT_OUTPUT=wav:`),
// each checked against ffmpeg's decode of the same input. The real-time ones are in
// PlaybackPortingSuiteTests.
import OATTestSupport
import Foundation
import Testing

@Suite(.serialized) struct PortingSuiteTests {
    /// Inputs the decoder program takes: lossy, lossless 16-bit, and 24-bit at 96 kHz.
    static let decodeCases = ["ffmpeg-generated/mp3/l3_cbr128_44k_st_info.mp3", "ffmpeg-generated/caf/alac_st.caf",
                              "ffmpeg-generated/aiff/pcm_s24be_96k.aiff"]

    @Test("AudioConverterFillComplexBuffer decoder to a 16-bit big-endian AIFF", .requires(TestResource.first(TestResource.corpusMissing, TestResource.ffmpegMissing)),
          arguments: decodeCases)
    func converterDecodeToAIFF(_ relative: String) throws {
        let input = try TestResource.corpusFile(relative)
        let output = scratchPath("decode.aiff")
        defer { unlink(output) }
        let result = try run(try portingProgram("porting-converter-decode"), [input, output])
        #expect(result.status == 0, "\(relative): \(result.output)")
        let reference = try ffmpegDecode(input)
        let produced = try ffmpegDecode(output)
        #expect(produced.channels == reference.channels)
        let c = try #require(check(produced.samples, against: reference.samples, channels: reference.channels), "\(relative): no alignment")
        print("porting-converter-decode \(relative): \(c)")
        // 16-bit output against ffmpeg's Float32: the quantisation noise of 16 bits (the quiet
        // segments of a file are far below full scale, so no per-segment bound).
        #expect(c.snr >= 60, "\(relative): \(c)")
        // Every frame: at most the decoder's priming and padding more than ffmpeg's trimmed decode.
        #expect(c.producedFrames >= c.referenceFrames && c.producedFrames - c.referenceFrames <= 4096, "\(relative): \(c)")
    }

    @Test("ExtAudioFile converter (read any, write AIFF, WAV or AAC)", .requires(TestResource.first(TestResource.corpusMissing, TestResource.ffmpegMissing)),
          arguments: [("ffmpeg-generated/mp3/l3_cbr128_44k_st_info.mp3", "aiff"),
                      ("flac-test-files/subset/01 - blocksize 4096.flac", "wav"),
                      ("ffmpeg-generated/caf/alac_st.caf", "m4a")])
    func extAudioFileConvert(_ relative: String, _ type: String) throws {
        let input = try TestResource.corpusFile(relative)
        let output = scratchPath("convert.\(type)")
        defer { unlink(output) }
        let result = try run(try portingProgram("porting-extaudiofile-convert"), [input, output])
        #expect(result.status == 0, "\(relative) -> \(type): \(result.output)")
        let reference = try ffmpegDecode(input)
        let produced = try ffmpegDecode(output)
        #expect(produced.channels == reference.channels)
        let c = try #require(check(produced.samples, against: reference.samples, channels: reference.channels), "\(relative): no alignment")
        print("porting-extaudiofile-convert \(relative) -> \(type): \(c)")
        // AAC at its default rate is a lossy copy; PCM keeps 16 or 24 bits.
        let floor: Double = type == "m4a" ? 20 : 60
        #expect(c.snr >= floor, "\(relative) -> \(type): \(c)")
        #expect(abs(c.producedFrames - c.referenceFrames) <= 4096, "\(relative) -> \(type): \(c)")
    }

    @Test("AudioQueue file player (run-loop wait, fixed-time stop) to an unpaced WAV output", .requires(TestResource.first(TestResource.corpusMissing, TestResource.ffmpegMissing)),
          arguments: [("ffmpeg-generated/mp3/l3_cbr128_44k_st_info.mp3", false), ("flac-test-files/subset/01 - blocksize 4096.flac", false),
                      ("ffmpeg-generated/caf/alac_st.caf", true)])
    func queuePlayer(_ relative: String, _ legacy: Bool) throws {
        let input = try TestResource.corpusFile(relative)
        let wav = scratchPath("queue.wav")
        defer { unlink(wav) }
        let result = try run(try portingProgram("porting-queue-player"), [input] + (legacy ? ["--legacy"] : []),
                             environment: ["OAT_OUTPUT": "wav:" + wav])
        #expect(result.status == 0, "\(relative): \(result.output)")
        let reference = try ffmpegDecode(input)
        let played = readOutputWAV(wav)
        #expect(played.channels == reference.channels)
        let c = try #require(check(played.samples, against: reference.samples, channels: reference.channels), "\(relative): no alignment")
        print("porting-queue-player \(relative): \(c)")
        #expect(c.snr >= 60, "\(relative): \(c)")
        #expect(c.worstSegmentSNR >= 40, "\(relative): \(c)")
        // Played to the end: the 2 s wait then AudioQueueStop(queue, true) loses nothing.
        #expect(c.producedFrames >= c.referenceFrames, "\(relative): \(c)")
    }

    @Test("AudioFileStream streamer (Unmanaged client data) to an unpaced WAV output", .requires(TestResource.first(TestResource.corpusMissing, TestResource.ffmpegMissing)),
          arguments: [("ffmpeg-generated/mp3/l3_cbr128_44k_st_info.mp3", 1500), ("ffmpeg-generated/adts/aac_lc_44k_st.aac", 4096),
                      ("ffmpeg-generated/wav/pcm_s24le_st.wav", 777)])
    func streamPlayer(_ relative: String, _ chunk: Int) throws {
        let input = try TestResource.corpusFile(relative)
        let wav = scratchPath("stream.wav")
        defer { unlink(wav) }
        let result = try run(try portingProgram("porting-stream-player"), [input, String(chunk)], environment: ["OAT_OUTPUT": "wav:" + wav])
        #expect(result.status == 0, "\(relative): \(result.output)")
        let reference = try ffmpegDecode(input)
        let played = readOutputWAV(wav)
        #expect(played.channels == reference.channels)
        let c = try #require(check(played.samples, against: reference.samples, channels: reference.channels), "\(relative): no alignment")
        print("porting-stream-player \(relative) in \(chunk)-byte reads: \(c)")
        #expect(c.snr >= 60, "\(relative): \(c)")
        // Apple's parser keeps back the last packet of a stream that does not say where it ends.
        let lastPacket = relative.hasSuffix(".wav") ? 0 : 1152
        #expect(c.producedFrames + lastPacket >= c.referenceFrames, "\(relative): \(c)")
    }
}
