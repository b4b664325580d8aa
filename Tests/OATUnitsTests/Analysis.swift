import OATUnits
import Foundation

/// A sine generator node source: amplitude `amp`, frequency `freq`, on every channel.
func sineSource(channels: Int, freq: Double, amp: Float, rate: Double) -> AURenderCallbackNode {
    AURenderCallbackNode(channels: channels, name: "sine \(freq)") { buffers, frames, time in
        for f in 0..<frames {
            let v = amp * Float(sin(2 * Double.pi * freq * Double(time + Int64(f)) / rate))
            for c in 0..<buffers.channelCount { buffers[c][f] = v }
        }
    }
}

/// A source playing `samples` (mono, every channel) once, then silence.
func bufferSource(channels: Int, samples: [Float]) -> AURenderCallbackNode {
    AURenderCallbackNode(channels: channels, name: "buffer") { buffers, frames, time in
        for f in 0..<frames {
            let i = Int(time) + f
            let v = i < samples.count ? samples[i] : 0
            for c in 0..<buffers.channelCount { buffers[c][f] = v }
        }
    }
}

/// RMS of `x[from..<to]`.
func rms(_ x: [Float], from: Int = 0, to: Int? = nil) -> Double {
    let end = min(to ?? x.count, x.count)
    guard end > from else { return 0 }
    var s = 0.0
    for i in from..<end { s += Double(x[i]) * Double(x[i]) }
    return (s / Double(end - from)).squareRoot()
}

func toDB(_ v: Double) -> Double { 20 * log10(max(v, 1e-12)) }

/// The dominant frequency of `x` by zero-crossing counting with linear interpolation.
func zeroCrossingFrequency(_ x: [Float], rate: Double, from: Int, to: Int) -> Double {
    var first: Double?, last = 0.0, count = 0
    for i in (from + 1)..<min(to, x.count) where x[i - 1] < 0 && x[i] >= 0 {
        let t = Double(i - 1) + Double(-x[i - 1] / (x[i] - x[i - 1]))
        if first == nil { first = t } else { count += 1 }
        last = t
    }
    guard let first, count > 0 else { return 0 }
    return Double(count) * rate / (last - first)
}
