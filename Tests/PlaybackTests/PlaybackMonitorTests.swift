#if canImport(Glibc)
import Glibc
#endif
import OATTestSupport
import Foundation
import OpenAudioToolbox
import Testing

/// `afrecord --monitor` and `--measure-latency` on a private PulseAudio daemon: the null sink's
/// monitor is the input, so sink -> monitor -> afrecord -> sink is a real loopback through the
/// server's buffering.
@Suite("PlaybackMonitorTests", .serialized, .requires(playbackUnavailable))
struct PlaybackMonitorTests {
    /// Runs `afrecord --measure-latency` with `arguments`; returns the latency in ms and the line.
    func measure(_ afrecord: String, _ daemon: PulseTestDaemon, log: String) throws -> (ms: Double, line: String, log: String) {
        let p = try ToolProcess(afrecord, ["--measure-latency", "-v", "--input", "pulse:\(daemon.monitorSource)",
                                           "--output", "pulse:\(daemon.sinkName)"],
                                environment: daemon.environment, outputPath: log)
        let status = p.wait(timeout: 60)
        let out = p.output
        #expect(status == 0, "afrecord --measure-latency: \(out)")
        let line = try #require(out.split(separator: "\n").first { $0.hasPrefix("round-trip latency:") }.map(String.init), "\(out)")
        let number = line.dropFirst("round-trip latency: ".count).prefix { $0 != " " }
        return (try #require(Double(number), "\(line)"), line, out)
    }

    @Test func roundTripLatencyIsFinitePositiveAndStable() throws {
        let afrecord = try #require(builtProduct("afrecord"), "afrecord is not built (swift build)")
        let daemon = try PulseTestDaemon(sampleRate: 48000, channels: 2)
        defer { daemon.stop() }
        let first = try measure(afrecord, daemon, log: "\(daemon.directory)/latency1.log")
        let second = try measure(afrecord, daemon, log: "\(daemon.directory)/latency2.log")
        print("monitor loopback:\n\(first.log)\n\(second.log)")
        for m in [first.ms, second.ms] {
            #expect(m.isFinite && m > 0 && m < 400, "latency \(m) ms")
        }
        #expect(abs(first.ms - second.ms) < 5, "two runs: \(first.ms) ms and \(second.ms) ms")
    }

    @Test func everyEffectRunsInRealTime() throws {
        let afrecord = try #require(builtProduct("afrecord"), "afrecord is not built (swift build)")
        let daemon = try PulseTestDaemon(sampleRate: 48000, channels: 2)
        defer { daemon.stop() }
        // The sink's own monitor as input: a real feedback loop, which the echo canceller breaks.
        let p = try ToolProcess(afrecord, ["--monitor", "-t", "2", "--voice", "--eq", "vocal", "--compress", "--reverb", "small",
                                           "--input", "pulse:\(daemon.monitorSource)", "--output", "pulse:\(daemon.sinkName)"],
                                environment: daemon.environment, outputPath: "\(daemon.directory)/effects.log")
        #expect(p.wait(timeout: 20) == 0, "\(p.output)")
        let out = p.output
        print("monitor with every effect: \(out.split(separator: "\n").last ?? "")")
        #expect(out.contains("voice processing") && out.contains("reverb") && out.contains("compressor"), "\(out)")
        let captured = out.split(separator: "\n").last { $0.contains("monitor stopped") }
            .flatMap { $0.split(separator: " ").drop { $0 != "captured" }.dropFirst().first }
            .flatMap { Int($0.filter(\.isNumber)) }
        #expect((captured ?? 0) > 48000, "captured \(captured ?? 0) frames in 2 s")
    }

    @Test func monitoredOutputCarriesTheToneWithGainAndEQ() throws {
        let afrecord = try #require(builtProduct("afrecord"), "afrecord is not built (swift build)")
        let parec = try #require(ChildProcess.which("parec"), "parec is not installed (pulseaudio-utils)")
        let rate = 48000
        let daemon = try PulseTestDaemon(sampleRate: rate, channels: 2)
        defer { daemon.stop() }
        // A second null sink takes the monitor's output, so it does not feed back into the input.
        let outSink = "oat_monitor_out"
        try daemon.loadNullSink(.init(name: outSink, rate: rate, channels: 2))
        let recordPath = "\(daemon.directory)/monitored.raw"
        let recorder = try ChildProcess.spawn(parec, ["-d", "\(outSink).monitor", "--raw", "--format=float32le", "--rate=\(rate)",
                                                      "--channels=2", "--latency-msec=20", "--file-format=raw", recordPath],
                                              environment: daemon.environment, outputPath: "\(daemon.directory)/parec-out.log")
        defer { recorder.killNow() }
        let gainDB = 3.0
        let monitor = try ToolProcess(afrecord, ["--monitor", "-v", "-c", "2", "--gain", "\(gainDB)", "--eq", "mid-6",
                                                 "--input", "pulse:\(daemon.monitorSource)", "--output", "pulse:\(outSink)"],
                                      environment: daemon.environment, outputPath: "\(daemon.directory)/monitor.log")
        defer { monitor.stop() }
        try #require(waitUntil(10) { monitor.output.contains("monitoring") }, "afrecord did not start: \(monitor.output)")
        sleep(seconds: 0.3)
        // 2 s of 1 kHz (the EQ's mid band centre) on the left and 250 Hz on the right, 0.25 each.
        let seconds = 2.0
        var tone = [Float](repeating: 0, count: Int(seconds * Double(rate)) * 2)
        for i in 0..<(tone.count / 2) {
            let t = Double(i) / Double(rate)
            tone[2 * i] = Float(0.25 * sin(2 * Double.pi * 1000 * t))
            tone[2 * i + 1] = Float(0.25 * sin(2 * Double.pi * 250 * t))
        }
        try playIntoSink(tone, daemon: daemon)
        sleep(seconds: 0.3)
        monitor.stop()
        #expect(monitor.wait(timeout: 5) == 0, "afrecord --monitor: \(monitor.output)")
        recorder.terminate()
        let bytes = try #require(Corpus.read(recordPath), "parec recorded nothing")
        let samples: [Float] = bytes[0..<(bytes.count / 4 * 4)].withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        let left = stride(from: 0, to: samples.count - 1, by: 2).map { samples[$0] }
        let right = stride(from: 1, to: samples.count, by: 2).map { samples[$0] }
        let first = try #require(left.firstIndex { abs($0) > 0.01 }, "the monitored output is silent (\(left.count) frames); \(monitor.output)")
        let last = try #require(left.lastIndex { abs($0) > 0.01 })
        print("monitor: \(last - first) frames of tone on the output; \(monitor.output.split(separator: "\n").last ?? "")")
        #expect(last - first > rate * 3 / 2, "only \(last - first) frames came through")
        // Expected: the gain plus the EQ's designed response at each tone's frequency.
        let eq = AUNBandEQNode(channels: 2, bands: [AUEQBand(.parametric, frequency: 1000, gain: -6, bandwidth: 1.5)])
        try eq.prepare(sampleRate: Double(rate), maxFrames: 512)
        // The median over fifteen 0.1 s windows: a dropout or a skip under load spoils the
        // windows it falls in, not the measurement.
        for (channel, freq) in [(left, 1000.0), (right, 250.0)] {
            let windows = (0..<15).map { w in
                goertzelAmplitude(channel, freq: freq, rate: Double(rate), from: first + rate / 4 + w * rate / 10, count: rate / 10)
            }
            let amplitude = windows.sorted()[7]
            let measured = 20 * log10(amplitude / 0.25)
            let expected = gainDB + eq.designResponse(at: freq)
            print("monitor: \(freq) Hz \(String(format: "%.2f", measured)) dB, expected \(String(format: "%.2f", expected)) dB")
            #expect(abs(measured - expected) < 0.5, "\(freq) Hz: \(measured) dB, expected \(expected) dB")
        }
    }
}

/// The amplitude of the `freq` component of `x[from..<from+count]` (Goertzel over whole periods).
func goertzelAmplitude(_ x: [Float], freq: Double, rate: Double, from: Int, count: Int) -> Double {
    let periods = (Double(count) * freq / rate).rounded(.down)
    let n = min(max(1, Int((periods * rate / freq).rounded())), max(0, x.count - from))
    let w = 2 * Double.pi * freq / rate
    let k = 2 * cos(w)
    var s1 = 0.0, s2 = 0.0
    for i in 0..<n {
        let s = Double(x[from + i]) + k * s1 - s2
        s2 = s1
        s1 = s
    }
    let power = s1 * s1 + s2 * s2 - k * s1 * s2
    return 2 * power.squareRoot() / Double(max(1, n))
}
