import OATCore
import OATUnits
import Foundation
import Testing

/// AULiveMonitor's graph rendered offline, the input node fed by hand (as the capture thread
/// would), the output fed back into the input to simulate a speaker the microphone hears.
@Suite struct LiveMonitorTests {
    /// Renders `seconds` in 480-frame slices; each slice the input gets `near(n)` plus the output
    /// of `echoDelay` frames ago times `echoGain`. Returns the output's first channel.
    func run(_ monitor: AULiveMonitor, seconds: Double, echoGain: Float, echoDelay: Int, near: (Int) -> Float) -> [Float] {
        let slice = 480
        let rate = monitor.graph.sampleRate
        let ch = monitor.input.channels
        let outCh = monitor.options.outputChannels
        var output: [Float] = []
        var capture = [Float](repeating: 0, count: slice * ch)
        let buffers = (0..<outCh).map { _ in UnsafeMutablePointer<Float>.allocate(capacity: slice) }
        defer { buffers.forEach { $0.deallocate() } }
        var pointers = buffers
        var n = 0
        // Prime the ring with one slice more than the reserve needs.
        while n < Int(seconds * rate) {
            for f in 0..<slice {
                let t = n + f
                let echo = t - echoDelay >= 0 && t - echoDelay < output.count ? output[t - echoDelay] * echoGain : 0
                for c in 0..<ch { capture[f * ch + c] = near(t) + echo }
            }
            capture.withUnsafeBufferPointer { monitor.input.write($0, frames: slice) }
            pointers.withUnsafeMutableBufferPointer { monitor.graph.render(into: $0, frames: slice) }
            output.append(contentsOf: UnsafeBufferPointer(start: buffers[0], count: slice))
            n += slice
        }
        return output
    }

    @Test func gainAndEQReachTheOutput() throws {
        var o = AULiveMonitor.Options()
        o.inputChannels = 1
        o.gainDB = -6
        o.eq = [AUEQBand(.parametric, frequency: 1000, gain: 6, bandwidth: 1)]
        let monitor = try AULiveMonitor(options: o)
        let out = run(monitor, seconds: 1, echoGain: 0, echoDelay: 0) { Float(0.3 * sin(2 * Double.pi * 1000 * Double($0) / 48000)) }
        // −6 dB gain, +6 dB EQ at its centre: the tone comes out at 0.3.
        let tail = Array(out.suffix(24000))
        let peak = tail.map(abs).max() ?? 0
        #expect(abs(20 * log10(Double(peak) / 0.3)) < 0.2, "peak \(peak)")
        #expect(monitor.input.statistics.underruns == 0)
    }

    @Test func voiceProcessingCancelsTheMonitorsOwnSoundComingBack() throws {
        // Without voice processing a loop gain of 0.97 keeps the sound circulating for seconds; with it the
        // canceller removes the monitor's own output from the input and the loop dies out.
        var o = AULiveMonitor.Options()
        o.inputChannels = 1
        o.outputChannels = 1
        let burst: (Int) -> Float = { n in
            // 0.5 s of noise-like signal, then silence.
            guard n < 24000 else { return 0 }
            var x = UInt32(truncatingIfNeeded: n &* 747_796_405 &+ 2_891_336_453)
            x = ((x >> ((x >> 28) &+ 4)) ^ x) &* 277_803_737
            return (Float((x >> 22) ^ x) / Float(UInt32.max) - 0.5) * 0.5
        }
        let plain = try AULiveMonitor(options: o)
        let loud = run(plain, seconds: 2, echoGain: 0.97, echoDelay: 960, near: burst)
        o.voiceProcessing = true
        let cancelled = try AULiveMonitor(options: o)
        let quiet = run(cancelled, seconds: 2, echoGain: 0.97, echoDelay: 960, near: burst)
        func rmsDB(_ x: ArraySlice<Float>) -> Double {
            20 * log10(max(1e-9, (x.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(1, x.count))).squareRoot()))
        }
        let lastSecondPlain = rmsDB(loud[48000..<96000]), lastSecondVoice = rmsDB(quiet[48000..<96000])
        print("monitor feedback loop, 1...2 s: \(String(format: "%.1f", lastSecondPlain)) dBFS without voice processing, \(String(format: "%.1f", lastSecondVoice)) dBFS with")
        #expect(lastSecondPlain > -30)
        #expect(lastSecondVoice < lastSecondPlain - 30)
        // The talker itself still came through while it spoke.
        #expect(rmsDB(quiet[4800..<19200]) > -20)
    }
}
