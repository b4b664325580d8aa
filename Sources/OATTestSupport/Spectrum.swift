#if canImport(Glibc)
import Glibc
#endif

/// The strongest frequency in `samples` (mono), in Hz: a Hann-windowed power spectrum (radix-2
/// FFT of the largest power of two that fits, at most 2^17 samples from the middle) locates the
/// peak bin, then a golden-section search of the windowed DTFT magnitude within one bin either
/// side refines it (accurate to well under a cent for a steady tone).
public func dominantFrequency(_ samples: [Float], sampleRate: Double, minimum: Double = 20) -> Double {
    var n = 1
    while n * 2 <= min(samples.count, 1 << 17) { n *= 2 }
    guard n >= 64 else { return 0 }
    let start = (samples.count - n) / 2
    var window = [Double](repeating: 0, count: n)
    for i in 0..<n { window[i] = Double(samples[start + i]) * (0.5 - 0.5 * cos(2 * Double.pi * Double(i) / Double(n - 1))) }
    var re = window
    var im = [Double](repeating: 0, count: n)
    fft(&re, &im)
    var best = 0
    var bestPower = -1.0
    let lowBin = max(1, Int(minimum * Double(n) / sampleRate))
    for k in lowBin..<(n / 2) {
        let p = re[k] * re[k] + im[k] * im[k]
        if p > bestPower { bestPower = p; best = k }
    }
    func magnitude(_ f: Double) -> Double {
        let w = 2 * Double.pi * f / sampleRate
        var sr = 0.0, si = 0.0
        // Goertzel-free direct sum with a rotating phasor, re-anchored every 1024 samples.
        var i = 0
        while i < n {
            let end = min(n, i + 1024)
            var cr = cos(w * Double(i)), ci = -sin(w * Double(i))
            let dr = cos(w), di = -sin(w)
            for j in i..<end {
                sr += window[j] * cr
                si += window[j] * ci
                let t = cr * dr - ci * di
                ci = cr * di + ci * dr
                cr = t
            }
            i = end
        }
        return sr * sr + si * si
    }
    let binHz = sampleRate / Double(n)
    var a = (Double(best) - 1) * binHz, b = (Double(best) + 1) * binHz
    let g = (sqrt(5.0) - 1) / 2
    var c = b - g * (b - a), d = a + g * (b - a)
    var fc = magnitude(c), fd = magnitude(d)
    for _ in 0..<40 {
        if fc > fd { b = d; d = c; fd = fc; c = b - g * (b - a); fc = magnitude(c) } else { a = c; c = d; fc = fd; d = a + g * (b - a); fd = magnitude(d) }
    }
    return (a + b) / 2
}

/// In-place iterative radix-2 FFT (`re.count` must be a power of two).
public func fft(_ re: inout [Double], _ im: inout [Double]) {
    let n = re.count
    var j = 0
    for i in 1..<n {
        var bit = n >> 1
        while j & bit != 0 { j ^= bit; bit >>= 1 }
        j ^= bit
        if i < j { re.swapAt(i, j); im.swapAt(i, j) }
    }
    var len = 2
    while len <= n {
        let ang = -2 * Double.pi / Double(len)
        let wr = cos(ang), wi = sin(ang)
        var i = 0
        while i < n {
            var cr = 1.0, ci = 0.0
            for k in 0..<(len / 2) {
                let ur = re[i + k], ui = im[i + k]
                let vr = re[i + k + len / 2] * cr - im[i + k + len / 2] * ci
                let vi = re[i + k + len / 2] * ci + im[i + k + len / 2] * cr
                re[i + k] = ur + vr; im[i + k] = ui + vi
                re[i + k + len / 2] = ur - vr; im[i + k + len / 2] = ui - vi
                let t = cr * wr - ci * wi
                ci = cr * wi + ci * wr
                cr = t
            }
            i += len
        }
        len <<= 1
    }
}

/// Cents between two frequencies (positive when `f` is above `reference`).
public func cents(_ f: Double, relativeTo reference: Double) -> Double { 1200 * log2(f / reference) }

/// The lag (in samples, within ±`maxLag`) at which `b` best matches `a`, by normalised
/// cross-correlation over `a`'s window `range`; positive when `b` is late.
public func bestLag(_ a: [Float], _ b: [Float], range: Range<Int>, maxLag: Int) -> Int {
    var best = 0
    var bestScore = -Double.infinity
    for lag in -maxLag...maxLag {
        var s = 0.0
        for i in range {
            let j = i + lag
            if j < 0 || j >= b.count { continue }
            s += Double(a[i]) * Double(b[j])
        }
        if s > bestScore { bestScore = s; best = lag }
    }
    return best
}

/// The amplitude of the `freq` component of channel `channel` of interleaved `x` (`channels`
/// per frame) over `count` frames from frame `from`: a single-bin DFT over the whole periods
/// that fit.
public func toneAmplitude(_ x: [Float], freq: Double, rate: Double, from: Int, count: Int,
                          channels: Int = 1, channel: Int = 0) -> Double {
    let periods = (Double(count) * freq / rate).rounded(.down)
    let n = max(1, Int((periods * rate / freq).rounded()))
    var re = 0.0, im = 0.0
    for i in 0..<min(n, x.count / channels - from) {
        let v = Double(x[(from + i) * channels + channel])
        let w = 2 * Double.pi * freq * Double(i) / rate
        re += v * cos(w)
        im += v * sin(w)
    }
    return 2 * (re * re + im * im).squareRoot() / Double(n)
}
