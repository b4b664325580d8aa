// porting-avaudioengine-demos (issue 14): AVAudioEngine programs in the idioms of Apple's sample
// code — a time-pitch unit, three players mixed with volume and pan, offline manual rendering
// through effects — checked at a private PulseAudio null sink (and in the rendered file).
import OATTestSupport
import Foundation
import Testing

@Suite(.serialized, .requires(TestResource.first(TestResource.pulseAudioMissing, TestResource.ffmpegMissing)))
struct PlaybackAVFAudioDemosTests {
    /// Writes a `seconds`-long tone of `frequency` Hz at `amplitude` (ffmpeg's aevalsrc, Float32 WAV).
    static func tone(_ path: String, frequency: Double, amplitude: Double = 0.2, seconds: Double = 2, channels: Int = 2) -> Bool {
        let one = "\(amplitude)*sin(2*PI*\(frequency)*t)"
        let expression = Array(repeating: one, count: channels).joined(separator: "|")
        return runFFmpeg(["-f", "lavfi", "-i", "aevalsrc=\(expression):s=48000:d=\(seconds)", "-c:a", "pcm_f32le", path])
    }

    /// Runs the demos program with `arguments` at a fresh 48 kHz stereo null sink; returns the
    /// run and the sink's recording (interleaved stereo).
    static func playAtSink(_ arguments: [String]) throws -> (run: ProgramRun, recorded: [Float]) {
        let daemon = try PulseTestDaemon(sampleRate: 48000, channels: 2)
        defer { daemon.stop() }
        let recording = try daemon.recordMonitor(to: scratchPath("monitor.raw"))
        var env = daemon.environment
        env["OAT_OUTPUT"] = "pulse"
        let result = try run(try portingProgram("porting-avaudioengine-demos"), arguments, environment: env, timeout: 60)
        usleep(300_000)
        return (result, recording.stop())
    }

    struct PitchCase: Sendable, CustomTestStringConvertible {
        var rate: Double
        var cents: Double
        var seconds: Double { 2 / rate }
        var frequency: Double { 440 * pow(2, cents / 1200) }
        var testDescription: String { "rate \(rate), \(cents) cents" }
    }

    @Test("player -> AVAudioUnitTimePitch -> main mixer: duration follows the rate, frequency follows the cents, at a PulseAudio sink",
          arguments: [PitchCase(rate: 0.5, cents: 0), PitchCase(rate: 2, cents: 0),
                      PitchCase(rate: 1, cents: 1200), PitchCase(rate: 1, cents: -1200)])
    func timePitch(_ c: PitchCase) throws {
        let dir = try ScratchDirectory("avf-demos-pitch")
        defer { dir.remove() }
        let input = dir.path + "/tone.wav"
        try #require(Self.tone(input, frequency: 440))
        let (result, recorded) = try Self.playAtSink(["pitch", input, "\(c.rate)", "\(c.cents)"])
        #expect(result.status == 0, "\(result.output)")
        let left = stride(from: 0, to: recorded.count, by: 2).map { recorded[$0] }
        let loud = left.indices.filter { abs(left[$0]) > 0.02 }
        let first = try #require(loud.first, "nothing was heard: \(result.output)")
        let seconds = Double(loud.last! - first + 1) / 48000
        let middleStart = first + Int(seconds * 48000) / 2 - 16384
        try #require(middleStart > first && middleStart + 32768 <= left.count)
        let frequency = dominantFrequency(Array(left[middleStart..<(middleStart + 32768)]), sampleRate: 48000)
        print("porting-avaudioengine-demos pitch \(c.testDescription): \(String(format: "%.4f", seconds)) s (expected \(c.seconds)), \(String(format: "%.2f", frequency)) Hz (expected \(c.frequency))")
        // Before `.dataPlayedBack` waited for the time-pitch unit's latency, the end was cut by
        // 50-130 ms; now within 30 ms (0.5x ends about 28 ms early: the stretcher's output
        // buffering beyond the latency it reports).
        #expect(abs(seconds - c.seconds) <= Self.durationTolerance, "played \(seconds) s, expected \(c.seconds) s")
        #expect(abs(frequency - c.frequency) <= c.frequency * 0.01, "\(frequency) Hz, expected \(c.frequency) Hz ±1%")
    }

    /// How far the heard duration may be from the expected one: ±40 ms (about two device
    /// periods of the sink's 20 ms recording granularity).
    static let durationTolerance = 0.040

    @Test("three players into the main mixer: each tone's left/right level is 0.2 × volume × the mixer's pan law")
    func mixVolumesAndPans() throws {
        let dir = try ScratchDirectory("avf-demos-mix")
        defer { dir.remove() }
        // Mono tones. The engine feeds the main mixer two channels (the player's mono is
        // upmixed), so AUMixerNode's stereo law applies: with θ = (pan + 1)·π/4, left gain
        // min(1, √2·cos θ), right min(1, √2·sin θ) — unity at the centre, constant power away
        // from it. (Measured: the centre is 0 dB, not the mono law's -3 dB.)
        let tones: [(frequency: Double, volume: Double, pan: Double)] = [(440, 1.0, -1.0), (660, 0.5, 0.0), (1000, 0.25, 0.5)]
        var paths: [String] = []
        for t in tones {
            let path = dir.path + "/tone\(Int(t.frequency)).wav"
            try #require(Self.tone(path, frequency: t.frequency, channels: 1))
            paths.append(path)
        }
        let (result, recorded) = try Self.playAtSink(["mix"] + paths)
        #expect(result.status == 0, "\(result.output)")
        let first = try #require(firstNonSilentFrame(recorded, channels: 2), "nothing was heard: \(result.output)")
        try #require(recorded.count / 2 >= first + 72000, "less than 1.5 s was heard")
        for t in tones {
            let theta = (t.pan + 1) * Double.pi / 4
            let root2 = 2.0.squareRoot()
            let expected = (left: 0.2 * t.volume * min(1, root2 * cos(theta)), right: 0.2 * t.volume * min(1, root2 * sin(theta)))
            let left = toneAmplitude(recorded, freq: t.frequency, rate: 48000, from: first + 24000, count: 48000, channels: 2, channel: 0)
            let right = toneAmplitude(recorded, freq: t.frequency, rate: 48000, from: first + 24000, count: 48000, channels: 2, channel: 1)
            print("porting-avaudioengine-demos mix \(t.frequency) Hz (volume \(t.volume), pan \(t.pan)): L \(left) (expected \(expected.left)), R \(right) (expected \(expected.right))")
            // 0.25 dB on the levels (the mono law cos θ / sin θ is 3 dB off here); hard left leaves the right under -60 dB of the tone.
            for (measured, want) in [(left, expected.left), (right, expected.right)] {
                if want < 1e-6 {
                    #expect(measured < 0.0002, "\(t.frequency) Hz: \(measured), expected silence")
                } else {
                    #expect(abs(20 * log10(measured / want)) <= 0.25, "\(t.frequency) Hz: \(measured), expected \(want)")
                }
            }
        }
    }

    @Test("offline manual rendering through a 1 kHz low-pass EQ and a reverb: exactly the file's frames, the effects heard in the file")
    func offlineRender() throws {
        let dir = try ScratchDirectory("avf-demos-offline")
        defer { dir.remove() }
        let input = dir.path + "/tones.wav"
        let output = dir.path + "/out.caf"
        // 440 Hz + 6 kHz at 0.2 each for 1 s, then 1 s of digital silence (96000 frames in all).
        let one = "0.2*sin(2*PI*440*t)+0.2*sin(2*PI*6000*t)"
        try #require(runFFmpeg(["-f", "lavfi", "-i", "aevalsrc=\(one)|\(one):s=48000:d=1", "-af", "apad=whole_len=96000", "-c:a", "pcm_f32le", input]))
        let result = try run(try portingProgram("porting-avaudioengine-demos"), ["offline", input, output], timeout: 60)
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("rendered 96000 frames of 96000"), "\(result.output)")
        let rendered = try ffmpegDecode(output)
        #expect(rendered.channels == 2)
        #expect(rendered.samples.count == 96000 * 2, "\(rendered.samples.count / max(1, rendered.channels)) frames, expected 96000")
        let low = toneAmplitude(rendered.samples, freq: 440, rate: 48000, from: 24000, count: 24000, channels: 2)
        let high = toneAmplitude(rendered.samples, freq: 6000, rate: 48000, from: 24000, count: 24000, channels: 2)
        // After the input stops: the reverb's tail, where the input is exact zeros.
        let tail = stride(from: 48000 + 2400, to: 48000 + 14400, by: 1).map { Double(rendered.samples[$0 * 2]) }
        let tailRMS = (tail.reduce(0) { $0 + $1 * $1 } / Double(tail.count)).squareRoot()
        print("porting-avaudioengine-demos offline: \(rendered.samples.count / 2) frames; 440 Hz at \(low), 6 kHz at \(high) (0.2 each in); reverb tail RMS \(tailRMS) from 50 to 300 ms after the input stops")
        #expect(low > 0.05, "440 Hz passes: \(low)")
        #expect(high < low / 10, "6 kHz more than 20 dB under 440 Hz after the 1 kHz low-pass: \(high) vs \(low)")
        #expect(tailRMS > 0.001, "the reverb rings on after the input stops: RMS \(tailRMS)")
    }
}
