// The AVFAudio porting programs that play in real time: through a private PulseAudio null sink
// whose monitor is recorded and checked against ffmpeg's decode.
import OATTestSupport
import Foundation
import Testing

@Suite(.serialized, .requires(TestResource.first(TestResource.pulseAudioMissing, TestResource.ffmpegMissing)))
struct PlaybackAVFAudioPortingTests {
    @Test("AVAudioEngine + AVAudioPlayerNode play a file to the end (dataPlayedBack), at a PulseAudio sink")
    func enginePlayer() throws {
        let dir = try ScratchDirectory("avf-engine-player")
        defer { dir.remove() }
        let input = dir.path + "/a.wav"
        try #require(makeFixture(input, rate: 48000, channels: 2, seconds: 3, codec: ["-c:a", "pcm_s16le"]))
        let daemon = try PulseTestDaemon(sampleRate: 48000, channels: 2)
        defer { daemon.stop() }
        let recording = try daemon.recordMonitor(to: scratchPath("monitor.raw"))
        var env = daemon.environment
        env["OAT_OUTPUT"] = "pulse"
        let result = try run(try portingProgram("porting-avaudioengine-player"), [input], environment: env, timeout: 60)
        usleep(300_000)
        let recorded = recording.stop()
        #expect(result.status == 0, "\(result.output)")
        let reference = try ffmpegDecode(input)
        let c = try #require(check(recorded, against: reference.samples, channels: 2), "no alignment: \(result.output)")
        print("porting-avaudioengine-player plain: \(c)")
        #expect(c.snr >= 60, "\(c)")
        #expect(c.worstSegmentSNR >= 40, "\(c)")
        // dataPlayedBack waited for the device: the whole file was heard before the stop.
        #expect(c.producedFrames >= c.referenceFrames, "\(c)")
    }

    @Test("AVAudioEngine player through an EQ (2 kHz low-pass, +6 dB at 440 Hz) and a reverb, at a PulseAudio sink")
    func enginePlayerWithEffects() throws {
        let dir = try ScratchDirectory("avf-engine-fx")
        defer { dir.remove() }
        let input = dir.path + "/tones.wav"
        // 440 Hz and 6 kHz at 0.2 each.
        #expect(runFFmpeg(["-f", "lavfi", "-i", "aevalsrc=0.2*sin(2*PI*440*t)+0.2*sin(2*PI*6000*t)|0.2*sin(2*PI*440*t)+0.2*sin(2*PI*6000*t):s=48000:d=3",
                           "-c:a", "pcm_f32le", input]))
        let daemon = try PulseTestDaemon(sampleRate: 48000, channels: 2)
        defer { daemon.stop() }
        let recording = try daemon.recordMonitor(to: scratchPath("monitor.raw"))
        var env = daemon.environment
        env["OAT_OUTPUT"] = "pulse"
        let result = try run(try portingProgram("porting-avaudioengine-player"), [input, "fx"], environment: env, timeout: 60)
        usleep(300_000)
        let recorded = recording.stop()
        #expect(result.status == 0, "\(result.output)")
        let left = stride(from: 0, to: recorded.count, by: 2).map { recorded[$0] }
        let first = try #require(left.firstIndex { abs($0) > 0.01 }, "nothing was heard: \(result.output)")
        try #require(left.count > first + 96000)
        let low = toneAmplitude(left, freq: 440, rate: 48000, from: first + 24000, count: 48000)
        let high = toneAmplitude(left, freq: 6000, rate: 48000, from: first + 24000, count: 48000)
        print("porting-avaudioengine-player fx: 440 Hz at \(low), 6 kHz at \(high) (both 0.2 in)")
        // The 6 kHz tone is more than an octave above the 2 kHz low-pass and 440 Hz is boosted
        // 6 dB: 6 kHz ends more than 20 dB under 440 Hz, where they went in equal. (Absolute
        // levels depend on the reverb: a steady tone and its reverberation add with a phase.)
        #expect(low > 0.1, "440 Hz is heard: \(low)")
        #expect(high < low / 10, "6 kHz more than 20 dB under 440 Hz: \(high) vs \(low)")
    }

    @Test("A main-mixer tap records to a file what the engine plays: the file matches the sink's recording and the input")
    func engineTapRecorder() throws {
        let dir = try ScratchDirectory("avf-tap-recorder")
        defer { dir.remove() }
        let input = dir.path + "/a.wav"
        let output = dir.path + "/tap.wav"
        try #require(makeFixture(input, rate: 48000, channels: 2, seconds: 3, codec: ["-c:a", "pcm_s16le"]))
        let daemon = try PulseTestDaemon(sampleRate: 48000, channels: 2)
        defer { daemon.stop() }
        let recording = try daemon.recordMonitor(to: scratchPath("monitor.raw"))
        var env = daemon.environment
        env["OAT_OUTPUT"] = "pulse"
        let result = try run(try portingProgram("porting-avaudioengine-tap-recorder"), [input, output], environment: env, timeout: 60)
        usleep(300_000)
        let recorded = recording.stop()
        #expect(result.status == 0, "\(result.output)")
        let tapped = try ffmpegDecode(output)
        let reference = try ffmpegDecode(input)
        // The tapped file holds the whole input (the mixer at unity passes it through).
        let againstInput = try #require(check(tapped.samples, against: reference.samples, channels: 2), "the input is not in the tap's file: \(result.output)")
        // The sink received what the tap saw.
        let start = try #require(firstNonSilentFrame(tapped.samples, channels: 2))
        let heard = Array(tapped.samples[(start * 2)...])
        let againstSink = try #require(check(recorded, against: heard, channels: 2), "the tap's file is not in the sink's recording")
        print("porting-avaudioengine-tap-recorder: file vs input \(againstInput); file vs sink \(againstSink)")
        #expect(againstInput.snr >= 60, "\(againstInput)")
        #expect(againstSink.snr >= 60, "\(againstSink)")
    }
}
