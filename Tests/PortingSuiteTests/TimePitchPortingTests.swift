// Issue 17 / issue 19 §3: kAudioQueueProperty_EnableTimePitch. On Apple it always works; here the
// spectral and time-domain algorithms need the Rubber Band library. A macOS program that enables
// time-pitch and sets a play rate either plays at that rate with the pitch kept, or (library
// missing) is told so by the property call: it never plays at the normal rate after noErr.
import OATTestSupport
import Foundation
import Testing

@Suite(.serialized) struct TimePitchPortingTests {
    /// A 4 s 440 Hz stereo 16-bit WAV made by ffmpeg.
    static func toneFile() throws -> String {
        let path = scratchPath("tone440.wav")
        let status = system("ffmpeg -v error -y -f lavfi -i sine=frequency=440:sample_rate=44100:duration=4 -ac 2 -c:a pcm_s16le '\(path)'")
        try #require(status == 0 && FileManager.default.fileExists(atPath: path), "ffmpeg could not make the tone")
        return path
    }

    @Test("EnableTimePitch without the Rubber Band library is an error, not normal-rate playback",
          .requires(TestResource.ffmpegMissing))
    func enableTimePitchWithoutTheLibraryFails() throws {
        let input = try Self.toneFile()
        defer { unlink(input) }
        let wav = scratchPath("tp-missing.wav")
        defer { unlink(wav) }
        let result = try run(try portingProgram("porting-queue-player"), [input, "--rate", "2"],
                             environment: ["OAT_OUTPUT": "wav:" + wav, "OAT_RUBBERBAND_LIBRARY": "/nonexistent/librubberband.so.2"])
        #expect(result.status == 1, "\(result.output)")
        #expect(result.output.contains("couldn't enable time-pitch"), "\(result.output)")
        // kAudioQueueErr_CodecNotFound, printed by CheckError as a number.
        #expect(result.output.contains("-66673"), "\(result.output)")
    }

    @Test("EnableTimePitch with PlayRate 2 plays in half the time at the same pitch",
          .requires(TestResource.ffmpegMissing))
    func playRateTwoHalvesTheDurationKeepingPitch() throws {
        let input = try Self.toneFile()
        defer { unlink(input) }
        let wav = scratchPath("tp-rate2.wav")
        defer { unlink(wav) }
        let result = try run(try portingProgram("porting-queue-player"), [input, "--rate", "2"],
                             environment: ["OAT_OUTPUT": "wav:" + wav])
        #expect(result.status == 0, "\(result.output)")
        let played = readOutputWAV(wav)
        try #require(played.channels == 2)
        let left = stride(from: 0, to: played.samples.count, by: 2).map { played.samples[$0] }
        let loud = left.indices.filter { abs(left[$0]) > 0.02 }
        let first = try #require(loud.first, "nothing played: \(result.output)")
        let seconds = Double(loud.last! - first + 1) / 44100
        let middle = Array(left[(first + 4410)..<(first + 4410 + 32768)])
        let frequency = dominantFrequency(middle, sampleRate: 44100)
        print("porting-queue-player --rate 2: \(String(format: "%.4f", seconds)) s for 4 s, \(String(format: "%.2f", frequency)) Hz")
        #expect(abs(seconds - 2.0) <= 0.02, "played \(seconds) s, expected 2 s within 1%")
        #expect(abs(frequency - 440) <= 2, "\(frequency) Hz")
    }
}
