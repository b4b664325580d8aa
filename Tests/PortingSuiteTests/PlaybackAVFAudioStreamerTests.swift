// The AVFAudio streamer porting program (AudioFileStream → AudioConverter → AVAudioPCMBuffers
// scheduled on an AVAudioPlayerNode) played through a private PulseAudio null sink whose monitor
// is recorded and checked against ffmpeg's decode.
import OATTestSupport
import Foundation
import Testing

@Suite(.serialized, .requires(TestResource.first(TestResource.corpusMissing, TestResource.pulseAudioMissing, TestResource.ffmpegMissing)))
struct PlaybackAVFAudioStreamerTests {
    /// A corpus file and the network-sized chunk its bytes are fed in.
    struct Case: CustomTestStringConvertible, Sendable {
        var file: String
        var chunk: Int
        var testDescription: String { "\(file) in \(chunk)-byte chunks" }
    }

    @Test("AudioFileStream + AudioConverter into AVAudioPCMBuffers on an AVAudioPlayerNode play to the end at a PulseAudio sink",
          arguments: [Case(file: "ffmpeg-generated/mp3/l3_vbr_q2_44k_st_xing.mp3", chunk: 1500),
                      Case(file: "ffmpeg-generated/adts/aac_lc_44k_st.aac", chunk: 4096)])
    func streamer(_ c: Case) throws {
        let input = try TestResource.corpusFile(c.file)
        let reference = try ffmpegDecode(input)
        try #require(reference.channels == 2)
        let (result, recorded) = try playAtPulseSink("porting-avaudioengine-streamer", [input, String(c.chunk)])
        #expect(result.status == 0, "\(result.output)")
        let m = try #require(check(recorded, against: reference.samples, channels: 2), "the file is not in the recording: \(result.output)")
        // The sounding span of the recording against ffmpeg's decode's.
        let referenceFrames = reference.samples.count / 2
        let referenceSpan = try #require(soundingSpan(reference.samples, channels: 2))
        let heardSpan = try #require(soundingSpan(recorded, channels: 2), "nothing was heard: \(result.output)")
        // The engine renders at the sink's rate (44.1 kHz here), so nothing is resampled and the
        // delay below is 0. Were the rates to differ (the engine used to render at 48 kHz), the
        // player's and the sound server's conversions leave a constant delay that is not a whole
        // frame, which caps a whole-frame alignment at about 20 dB for this treble; delayed by
        // that fraction, the reference measures the audio itself.
        let delay = subsampleDelay(recording: recorded, reference: reference.samples, channels: 2, offset: m.offset)
        let shifted = delay == 0 ? reference.samples : fractionallyDelayed(reference.samples, channels: 2, by: delay)
        let fine = try #require(check(recorded, against: shifted, channels: 2), "the file is not in the recording: \(result.output)")
        print("porting-avaudioengine-streamer \(c.testDescription): \(fine) with the reference delayed by \(delay) frame (\(m) to the whole frame); heard \(heardSpan.count) frames of sound for \(referenceSpan.count); \(result.output.trimmingCharacters(in: .whitespacesAndNewlines))")
        // What is heard is the file, as closely as the file player's audio (a converter per
        // scheduled buffer used to restart the rate conversion at every join, and the engine
        // resampled to 48 kHz and PulseAudio back: 25 dB, segments at 10 dB).
        #expect(fine.snr >= 60, "\(fine)")
        #expect(fine.worstSegmentSNR >= 40, "\(fine)")
        // The whole file was heard: `.dataPlayedBack` on the last buffer waited for the device.
        #expect(m.producedFrames >= m.offset + referenceFrames, "\(m)")
        #expect(abs(heardSpan.count - referenceSpan.count) <= 1024,
                "heard \(heardSpan.count) frames of sound, ffmpeg's decode has \(referenceSpan.count)")
    }
}
