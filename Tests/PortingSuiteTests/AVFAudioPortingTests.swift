import AudioTestSupport
import Foundation
import Testing

/// The AVFAudio porting programs (PortingSuite/AVAudio*), written as Apple-platform code is and
/// built with only the import changed, checked against ffmpeg.
@Suite(.requires(TestResource.first(TestResource.corpusMissing, TestResource.ffmpegMissing)))
struct AVFAudioPortingTests {
    @Test("AVAudioFile + AVAudioConverter convert to 48 kHz",
          arguments: [("ffmpeg-generated/mp3/l3_cbr128_44k_st_info.mp3", "wav"), ("flac-test-files/subset/01 - blocksize 4096.flac", "caf"),
                      ("ffmpeg-generated/caf/alac_st.caf", "m4a")])
    func avAudioFileConvert(_ relative: String, _ type: String) throws {
        let input = try TestResource.corpusFile(relative)
        let output = scratchPath("avf.\(type)")
        defer { unlink(output) }
        let result = try run(try portingProgram("porting-avaudiofile-convert"), [input, output])
        #expect(result.status == 0, "\(relative) -> \(type): \(result.output)")
        print("porting-avaudiofile-convert \(relative) -> \(type): \(result.output)")
        let source = try ffmpegDecode(input)
        // The reference: ffmpeg's decode resampled to 48 kHz by ffmpeg (soxr is not assumed:
        // its default resampler at a high filter size).
        let resampledPath = scratchPath("ref.f32")
        defer { unlink(resampledPath) }
        #expect(runFFmpeg(["-i", input, "-map", "0:a:0", "-af", "aresample=48000:filter_size=64:cutoff=0.97", "-f", "f32le", "-c:a", "pcm_f32le", resampledPath]))
        let reference = try #require(Corpus.read(resampledPath)).withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        let produced = try ffmpegDecode(output)
        #expect(produced.channels == source.channels)
        let c = try #require(check(produced.samples, against: reference, channels: source.channels), "\(relative): no alignment")
        print("porting-avaudiofile-convert \(relative) -> \(type): \(c)")
        let floor: Double = type == "m4a" ? 20 : 40
        #expect(c.snr >= floor, "\(relative) -> \(type): \(c)")
        let expectedFrames = Double(source.samples.count / source.channels) * 48000 / (try probeRate(input))
        // ffmpeg keeps an AAC file's end padding (up to one packet) where it reads PCM exactly.
        let slack: ClosedRange<Double> = type == "m4a" ? -64...1088 : -64...64
        #expect(slack.contains(Double(c.producedFrames) - expectedFrames), "\(relative) -> \(type): \(c.producedFrames) frames for \(expectedFrames)")
    }

    func probeRate(_ path: String) throws -> Double {
        let out = scratchPath("rate.txt")
        defer { unlink(out) }
        #expect(system("ffprobe -v error -select_streams a:0 -show_entries stream=sample_rate -of csv=p=0 '\(path)' > '\(out)'") == 0)
        let text = String(decoding: try #require(Corpus.read(out)), as: UTF8.self)
        return try #require(Double(text.trimmingCharacters(in: .whitespacesAndNewlines)))
    }
}
