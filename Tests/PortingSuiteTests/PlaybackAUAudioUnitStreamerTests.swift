// The AUAudioUnit output-provider streamer (porting-auaudiounit-streamer: AudioFileStream with a
// file type hint, the converter made on FormatList, an AVAudioEngine in real-time manual
// rendering, an I/O unit from AVAudioUnit.instantiate whose outputProvider pulls the engine, and
// stopHardware() right after the last buffer was rendered) played through a private PulseAudio
// null sink whose monitor is recorded and checked against ffmpeg's decode.
import OATTestSupport
import Foundation
import Testing

@Suite(.serialized, .requires(TestResource.first(TestResource.corpusMissing, TestResource.pulseAudioMissing, TestResource.ffmpegMissing)))
struct PlaybackAUAudioUnitStreamerTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var file: String
        var chunk: Int
        var hint: String
        /// The notice the streamer's converter must be made on.
        var converterOn: String
        /// The device's I/O buffer the program sets (kAudioDevicePropertyBufferFrameSize; nil: the default).
        var bufferFrames: Int? = nil
        var testDescription: String { "\(file) in \(chunk)-byte chunks, hint \(hint)" + (bufferFrames.map { ", \($0)-frame I/O buffer" } ?? "") }
    }

    @Test("An I/O unit's outputProvider pulling a real-time manual-rendering engine plays a stream to the end at a PulseAudio sink",
          arguments: [Case(file: "ffmpeg-generated/mp3/l3_vbr_q2_44k_st_xing.mp3", chunk: 1500, hint: "mp3", converterOn: "ReadyToProducePackets"),
                      // An M4A: the converter is made on the FormatList notice (the library idiom that failed on every M4A).
                      Case(file: "ffmpeg-generated/m4a/aac_faststart.m4a", chunk: 4096, hint: "m4a", converterOn: "FormatList"),
                      // ADTS opened with the MP3 hint, as libraries pass it for every stream (it played silent).
                      Case(file: "ffmpeg-generated/adts/aac_lc_44k_st.aac", chunk: 4096, hint: "mp3", converterOn: "ReadyToProducePackets"),
                      // A 100 ms device buffer (the PulseAudio default before): the stop still loses nothing.
                      Case(file: "ffmpeg-generated/adts/aac_lc_44k_st.aac", chunk: 4096, hint: "adts", converterOn: "ReadyToProducePackets", bufferFrames: 2940)])
    func outputProviderStreamer(_ c: Case) throws {
        let input = try TestResource.corpusFile(c.file)
        let reference = try ffmpegDecode(input)
        try #require(reference.channels == 2)
        let (result, recorded) = try playAtPulseSink("porting-auaudiounit-streamer",
                                                     [input, String(c.chunk), "--hint", c.hint] + (c.bufferFrames.map { ["--buffer-frames", String($0)] } ?? []))
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("converter made on \(c.converterOn)"), "\(result.output)")
        let m = try #require(check(recorded, against: reference.samples, channels: 2), "the file is not in the recording: \(result.output)")
        let referenceSpan = try #require(soundingSpan(reference.samples, channels: 2))
        let heardSpan = try #require(soundingSpan(recorded, channels: 2), "nothing was heard: \(result.output)")
        // What the stop right after the last rendered frame cut: the reference's last sounding
        // frame, placed in the recording, against the recording's last sounding frame.
        let lostFrames = max(0, m.offset + referenceSpan.upperBound - heardSpan.upperBound)
        let lostMilliseconds = Double(lostFrames) / 44.1
        print("porting-auaudiounit-streamer \(c.testDescription): \(m); heard \(heardSpan.count) frames of sound for \(referenceSpan.count); the stop lost \(lostFrames) frames (\(String(format: "%.1f", lostMilliseconds)) ms); \(result.output.trimmingCharacters(in: .whitespacesAndNewlines))")
        #expect(m.snr >= 60, "\(m)")
        #expect(m.worstSegmentSNR >= 40, "\(m)")
        #expect(heardSpan.lowerBound >= m.offset + referenceSpan.lowerBound - 1, "sound before the file's first sounding frame")
        // Apple's I/O buffer is about 10 ms: a stop right after the last rendered frame loses at
        // most one buffer (docs/PERFORMANCE.md, "Output unit latency").
        #expect(lostMilliseconds <= 15, "the stop right after the last rendered frame lost \(lostMilliseconds) ms")
    }
}

extension PlaybackAUAudioUnitStreamerTests {
    /// A player's pause: stopHardware() 1.5 s after the start, startHardware() half a second
    /// later. What the device held when it stopped is played out first, so nothing of the file is
    /// skipped; Apple's I/O buffer bounds the skip at about 10 ms (the issue's bound: 15 ms).
    @Test("A pause and resume of the I/O unit (stopHardware, startHardware) skips at most 15 ms of the stream")
    func pauseAndResumeSkipsNothing() throws {
        // ADTS AAC: our decode of it is ffmpeg's sample for sample, so sounding spans compare exactly.
        let input = try TestResource.corpusFile("ffmpeg-generated/adts/aac_lc_44k_st.aac")
        let reference = try ffmpegDecode(input)
        let (result, recorded) = try playAtPulseSink("porting-auaudiounit-streamer", [input, "4096", "--hint", "adts", "--pause-at", "1.5"])
        #expect(result.status == 0, "\(result.output)")
        let referenceSpan = try #require(soundingSpan(reference.samples, channels: 2))
        let heardSpan = try #require(soundingSpan(recorded, channels: 2), "nothing was heard: \(result.output)")
        let pause = longestSilence(recorded, channels: 2, in: heardSpan)
        // The pause is there (half a second, give or take the device's start) ...
        #expect(pause >= 19_000 && pause <= 30_000, "the pause lasted \(pause) frames")
        // ... and what was heard around it is the whole file.
        let skipped = referenceSpan.count - (heardSpan.count - pause)
        print("porting-auaudiounit-streamer pause: heard \(heardSpan.count - pause) frames of the file's \(referenceSpan.count) around a pause of \(pause) frames: skipped \(skipped) frames (\(String(format: "%.1f", Double(skipped) / 44.1)) ms)")
        #expect(skipped <= 661 && skipped >= -1, "the pause skipped \(skipped) frames (\(Double(skipped) / 44.1) ms)")
    }
}

/// The longest run of exact digital silence in `span` (the pause's gap), in frames.
private func longestSilence(_ samples: [Float], channels: Int, in span: Range<Int>) -> Int {
    var longest = 0
    var run = 0
    for f in span {
        if (0..<channels).allSatisfy({ samples[f * channels + $0] == 0 }) { run += 1; longest = max(longest, run) } else { run = 0 }
    }
    return longest
}
