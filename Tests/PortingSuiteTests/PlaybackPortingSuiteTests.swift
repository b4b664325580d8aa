// The porting suite's real-time programs: each plays through a private PulseAudio null sink
// whose monitor is recorded, and the recording is checked (alignment and SNR against ffmpeg's
// decode, durations, levels, frequency).
import AudioTestSupport
import Foundation
import Testing

@Suite(.serialized) struct PlaybackPortingSuiteTests {
    static let pulseOrCI = PulseTestDaemon.unavailableReason == nil || runningInCI

    @Test("AUGraph with an AudioFilePlayer unit, played for the file's duration", .enabled(if: corpusOrCI && pulseOrCI))
    func augraphFilePlayer() throws {
        let input = try corpusPath("ffmpeg-generated/wav/pcm_f32le_st.wav")
        let daemon = try PulseTestDaemon(sampleRate: 44100, channels: 2)
        defer { daemon.stop() }
        let recording = try daemon.recordMonitor(to: scratchPath("monitor.raw"))
        var env = daemon.environment
        env["OAT_OUTPUT"] = "pulse"
        let result = try run(try portingProgram("porting-augraph-player"), [input], environment: env, timeout: 60)
        usleep(300_000)
        let recorded = recording.stop()
        #expect(result.status == 0, "\(result.output)")
        let reference = try ffmpegDecode(input)
        let c = try #require(check(recorded, against: reference.samples, channels: 2), "no alignment: \(result.output)")
        print("porting-augraph-player: \(c)")
        #expect(c.snr >= 40, "\(c)")
        #expect(c.worstSegmentSNR >= 25, "\(c)")
    }

    @Test("render-callback sine generator on the default output, stopped after a fixed time", .enabled(if: pulseOrCI))
    func toneGenerator() throws {
        let daemon = try PulseTestDaemon(sampleRate: 48000, channels: 2)
        defer { daemon.stop() }
        let recording = try daemon.recordMonitor(to: scratchPath("monitor.raw"))
        var env = daemon.environment
        env["OAT_OUTPUT"] = "pulse"
        let result = try run(try portingProgram("porting-tone-generator"), ["2", "440"], environment: env, timeout: 30)
        usleep(300_000)
        let recorded = recording.stop()
        #expect(result.status == 0, "\(result.output)")
        let left = stride(from: 0, to: recorded.count, by: 2).map { recorded[$0] }
        let loud = left.indices.filter { abs(left[$0]) > 0.01 }
        let first = try #require(loud.first, "nothing was heard: \(result.output)")
        let last = loud.last!
        let seconds = Double(last - first) / 48000
        let tone = Array(left[first...last])
        let frequency = dominantFrequency(tone, sampleRate: 48000)
        let rms = sqrt(tone.reduce(0) { $0 + Double($1 * $1) } / Double(tone.count))
        // Silent stretches of more than 2 ms inside the tone are dropouts.
        var dropouts = 0, run = 0
        for v in tone {
            if abs(v) < 0.001 { run += 1 } else { if run > 96 { dropouts += 1 }; run = 0 }
        }
        print("porting-tone-generator: \(String(format: "%.3f", seconds)) s, \(String(format: "%.1f", frequency)) Hz, RMS \(String(format: "%.3f", rms)), \(dropouts) dropouts")
        #expect(abs(frequency - 440) < 2, "\(frequency) Hz")
        #expect(abs(rms - 0.5 / 2.0.squareRoot()) < 0.02, "RMS \(rms)")
        #expect(seconds > 1.7 && seconds < 2.3, "played \(seconds) s for a 2 s run loop wait")
        #expect(dropouts == 0)
    }
}
