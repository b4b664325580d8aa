#if canImport(Glibc)
import Glibc
#endif

/// Sub-sample alignment of a recording with a reference.
///
/// Audio played at a rate other than the device's goes through two rate conversions (the
/// player's into the engine's rate, the sound server's into the sink's), which leave a constant
/// delay that is not a whole number of frames. Aligned to the nearest frame, a signal with
/// treble then compares at about 20 dB though nothing is wrong; delaying the reference by the
/// fraction first measures the audio itself.

/// `signal` (interleaved, `channels` channels) delayed by `delay` frames (a fraction; any sign),
/// through a Hann-windowed sinc of `2 * halfTaps + 1` taps. Frames beyond the ends count as 0.
public func fractionallyDelayed(_ signal: [Float], channels: Int, by delay: Double, halfTaps: Int = 24) -> [Float] {
    let frames = signal.count / channels
    // y[n] = x(n - delay) = sum over k of x[n - k] * h(k - delay)
    let kernel: [Double] = (-halfTaps...halfTaps).map { k in
        let t = Double(k) - delay
        let sinc = abs(t) < 1e-12 ? 1 : sin(.pi * t) / (.pi * t)
        let w = abs(t) >= Double(halfTaps) + 1 ? 0 : 0.5 + 0.5 * cos(.pi * t / Double(halfTaps + 1))
        return sinc * w
    }
    var out = [Float](repeating: 0, count: frames * channels)
    signal.withUnsafeBufferPointer { x in
        out.withUnsafeMutableBufferPointer { y in
            kernel.withUnsafeBufferPointer { h in
                for n in 0..<frames {
                    for c in 0..<channels {
                        var sum = 0.0
                        for j in 0..<h.count {
                            let m = n - (j - halfTaps)
                            if m >= 0 && m < frames { sum += Double(x[m * channels + c]) * h[j] }
                        }
                        y[n * channels + c] = Float(sum)
                    }
                }
            }
        }
    }
    return out
}

/// The fraction of a frame (within about -1.1 ... 1.1) by which `reference` must be delayed to match
/// `recording`, where reference frame 0 is near recorded frame `offset` (a whole-frame alignment,
/// e.g. ``lossyAlign(recording:reference:channels:segmentFrames:drift:)``'s): the delay that
/// gives the best SNR over `frames` frames from the middle of the reference.
public func subsampleDelay(recording: [Float], reference: [Float], channels: Int, offset: Int, frames: Int = 8192) -> Double {
    let refFrames = reference.count / channels
    let n = min(frames, refFrames / 2)
    let start = max(0, refFrames / 2 - n / 2)
    // The stretch, with room for the kernel on both sides.
    let pad = 32
    let from = max(0, start - pad), to = min(refFrames, start + n + pad)
    let piece = Array(reference[(from * channels)..<(to * channels)])
    func score(_ d: Double) -> Double {
        let shifted = fractionallyDelayed(piece, channels: channels, by: d)
        let inner = Array(shifted[((start - from) * channels)..<((start - from + n) * channels)])
        return segmentSNR(recording, offset + start, inner, 0, frames: n, channels: channels)
    }
    var best = (delay: 0.0, snr: score(0))
    for d in stride(from: -1.0, through: 1.0, by: 0.1) where d != 0 {
        let s = score(d)
        if s > best.snr { best = (d, s) }
    }
    for d in stride(from: best.delay - 0.09, through: best.delay + 0.09, by: 0.01) {
        let s = score(d)
        if s > best.snr { best = (d, s) }
    }
    return best.delay
}
