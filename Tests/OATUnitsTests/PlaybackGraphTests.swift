import OATCore
import OATDevices
import OATTestSupport
import OATUnits
import Foundation
import Testing

let graphPlaybackUnavailable: String? = {
    if let reason = PulseTestDaemon.unavailableReason { return reason }
    if ChildProcess.which("parec") == nil { return "parec is not installed (pulseaudio-utils)" }
    return nil
}()

/// The graph on a real PulseAudio server (a private daemon's null sink, recorded from its monitor):
/// the output node driven by the PulseAudio device's render thread, in real time.
@Suite("PlaybackGraphTests", .serialized, .requires(graphPlaybackUnavailable))
struct PlaybackGraphTests {
    @Test func sineThroughEQAndMixerPlaysOnPulseAudio() throws {
        let rate = 48000.0
        let daemon = try PulseTestDaemon(sampleRate: Int(rate), channels: 2)
        defer { daemon.stop() }
        let g = try AudioGraph(sampleRate: rate, channels: 2, maxFramesPerSlice: 1024)
        let src = sineSource(channels: 1, freq: 440, amp: 0.5, rate: rate)
        let eq = AUNBandEQNode(channels: 1, bands: [AUEQBand(.parametric, frequency: 440, gain: -6, bandwidth: 1)])
        let mixer = AUMixerNode(inputs: 1, inputChannels: 1, outputChannels: 2)
        for n in [src, eq, mixer] as [RenderNode] { try g.add(n) }
        try g.connect(src, to: eq)
        try g.connect(eq, to: mixer)
        try g.connect(mixer, to: g.output)
        try g.commit()
        let recording = try daemon.recordMonitor(to: "\(daemon.directory)/monitor.raw")
        var options = AudioOutput.Options(pulseServer: daemon.server)
        options.pulseLatency = 0.05
        let opened = try g.start(.pulse(sink: daemon.sinkName), options: options)
        #expect(opened.device.name.contains("pulse"))
        usleep(1_500_000)
        g.stop()
        usleep(200_000)
        let samples = recording.stop()
        let left = stride(from: 0, to: samples.count - 1, by: 2).map { samples[$0] }
        // Find the played part: the first and last frames above -40 dBFS.
        guard let first = left.firstIndex(where: { abs($0) > 0.01 }), let last = left.lastIndex(where: { abs($0) > 0.01 }) else {
            Issue.record("nothing was recorded (\(samples.count) samples)")
            return
        }
        let played = last - first
        print("graph on PulseAudio: \(played) frames recorded above -40 dBFS")
        #expect(played > Int(rate))                 // at least 1 s of the 1.5 s
        let from = first + 2400, count = min(played - 4800, 48000)
        let f = zeroCrossingFrequency(left, rate: rate, from: from, to: from + count)
        #expect(abs(f - 440) < 1, "frequency \(f)")
        // 0.5 at 440 Hz, −6 dB by the EQ, −3.01 dB by the centre pan of a mono input.
        let expected = 0.5 * pow(10, -6.0 / 20) * pow(10, -3.0103 / 20)
        let amplitude = toneAmplitude(left, freq: 440, rate: rate, from: from, count: count)
        #expect(abs(toDB(amplitude / expected)) < 0.5, "amplitude \(amplitude), expected \(expected)")
        // Continuity: no silent run inside the played part.
        var run = 0, longest = 0
        for i in first...last { if abs(left[i]) < 1e-4 { run += 1; longest = max(longest, run) } else { run = 0 } }
        #expect(longest < 8, "silent run of \(longest) frames")
    }
}
