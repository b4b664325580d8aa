// The porting suite's real-time programs: each plays through a private PulseAudio null sink
// whose monitor is recorded, and the recording is checked (alignment and SNR against ffmpeg's
// decode, durations, levels, frequency).
import OATTestSupport
import Foundation
import Testing

@Suite(.serialized) struct PlaybackPortingSuiteTests {
    @Test("AUGraph with an AudioFilePlayer unit, played for the file's duration", .requires(TestResource.first(TestResource.corpusMissing, TestResource.pulseAudioMissing, TestResource.ffmpegMissing)))
    func augraphFilePlayer() throws {
        let input = try TestResource.corpusFile("ffmpeg-generated/wav/pcm_f32le_st.wav")
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
        // The program sleeps exactly the file's duration after AUGraphStart and then stops the
        // graph (Apple's sample does the same): the last frames still in the device's buffer
        // are cut, here as on a Mac. What was heard must be the file, bit-exact and without a
        // gap, from its first frame to within the output latency (0.1 s) of its end.
        let alignment = alignSegments(recording: recorded, reference: reference.samples, channels: 2)
        print("porting-augraph-player: \(alignment)")
        let frames = reference.samples.count / 2
        let first = try #require(alignment.segments.first, "nothing of the file was heard: \(result.output)")
        #expect(alignment.segments.count == 1, "one continuous run, no gap: \(alignment)")
        #expect(alignment.unmatchedFrames == 0, "nothing but the file: \(alignment)")
        let leadingSilence = firstNonSilentFrame(reference.samples, channels: 2) ?? 0
        #expect(first.referenceFrame <= leadingSilence, "heard from the file's first sound: \(first)")
        #expect(first.referenceEnd >= frames - 4410, "heard to within 0.1 s of the end: \(first), \(frames) frames")
    }

    @Test("render-callback sine generator on the default output, stopped after a fixed time", .requires(TestResource.pulseAudioMissing))
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

    @Test("AAC recorder (HAL rate, AudioFormatGetProperty, cookie from the queue) records a tone for a fixed time", .requires(TestResource.first(TestResource.pulseAudioMissing, TestResource.ffmpegMissing)))
    func aacRecorder() throws {
        let daemon = try PulseTestDaemon(sampleRate: 48000, channels: 2)
        defer { daemon.stop() }
        var env = daemon.environment
        env["OAT_OUTPUT"] = "pulse"
        env["OAT_INPUT"] = "pulse:" + daemon.monitorSource
        let log = scratchPath("tone.log")
        defer { unlink(log) }
        // The tone plays into the sink while the recorder records its monitor.
        let tone = try ToolProcess(try portingProgram("porting-tone-generator"), ["4", "1000"], environment: env, outputPath: log)
        defer { tone.stop() }
        usleep(500_000)
        let caf = scratchPath("recorded.caf")
        defer { unlink(caf) }
        let result = try run(try portingProgram("porting-aac-recorder"), [caf, "2"], environment: env, timeout: 30)
        #expect(result.status == 0, "\(result.output)")
        let decoded = try ffmpegDecode(caf)
        let frames = decoded.samples.count / decoded.channels
        let seconds = Double(frames) / 48000
        let left = stride(from: 0, to: decoded.samples.count, by: decoded.channels).map { decoded.samples[$0] }
        let middle = Array(left[(frames / 4)..<(frames * 3 / 4)])
        let frequency = dominantFrequency(middle, sampleRate: 48000)
        let rms = sqrt(middle.reduce(0) { $0 + Double($1 * $1) } / Double(max(1, middle.count)))
        print("porting-aac-recorder: \(String(format: "%.3f", seconds)) s recorded for 2 s, \(String(format: "%.1f", frequency)) Hz, RMS \(String(format: "%.3f", rms))")
        #expect(decoded.channels == 2)
        #expect(seconds > 1.8 && seconds < 2.3, "\(seconds) s for a 2 s recording")
        #expect(abs(frequency - 1000) < 5, "\(frequency) Hz")
        #expect(abs(rms - 0.5 / 2.0.squareRoot()) < 0.05, "RMS \(rms)")
    }

    @Test("HAL device query: the default devices are the daemon's sink and its monitor", .requires(TestResource.pulseAudioMissing))
    func deviceQuery() throws {
        let daemon = try PulseTestDaemon(sampleRate: 48000, channels: 2)
        defer { daemon.stop() }
        let result = try run(try portingProgram("porting-device-query"), [], environment: daemon.environment, timeout: 30)
        #expect(result.status == 0, "\(result.output)")
        print("porting-device-query:\n\(result.output)")
        let lines = result.output.split(separator: "\n").map(String.init)
        let output = try #require(lines.first { $0.hasPrefix("default-output ") }, "\(result.output)")
        #expect(output.hasSuffix(" 48000.0"), "\(output)")
        #expect(lines.contains { $0.hasPrefix("default-input ") })
        #expect(lines.contains { $0.hasPrefix("device ") })
        let frames = lines.first { $0.hasPrefix("buffer-frames ") }.flatMap { Int($0.split(separator: " ")[1]) } ?? 0
        #expect(frames > 0)
    }
}
