#if canImport(Glibc)
import Glibc
#endif

/// The fundamental of a harmonic tone near `expected` Hz: the strongest partial
/// (``dominantFrequency(_:sampleRate:minimum:)``) divided by its harmonic number.
public func fundamentalFrequency(_ samples: [Float], sampleRate: Double, near expected: Double) -> Double {
    let peak = dominantFrequency(samples, sampleRate: sampleRate, minimum: expected * 0.7)
    let harmonic = max(1, (peak / expected).rounded())
    return peak / harmonic
}

/// The power-weighted mean frequency of `samples` (Hann-windowed spectrum of the largest power
/// of two that fits, at most 2^15 samples from the start), in Hz.
public func spectralCentroid(_ samples: [Float], sampleRate: Double) -> Double {
    var n = 1
    while n * 2 <= min(samples.count, 1 << 15) { n *= 2 }
    guard n >= 64 else { return 0 }
    var re = (0..<n).map { Double(samples[$0]) * (0.5 - 0.5 * cos(2 * Double.pi * Double($0) / Double(n - 1))) }
    var im = [Double](repeating: 0, count: n)
    fft(&re, &im)
    var weighted = 0.0, total = 0.0
    for k in 1..<(n / 2) {
        let p = re[k] * re[k] + im[k] * im[k]
        weighted += p * Double(k) * sampleRate / Double(n)
        total += p
    }
    return total > 0 ? weighted / total : 0
}

/// The first frame whose magnitude exceeds `threshold`, or nil.
public func onsetFrame(_ samples: [Float], threshold: Float) -> Int? {
    samples.firstIndex { abs($0) > threshold }
}

/// How periodic `samples` are: the largest normalised autocorrelation at lags of `minLag`...
/// `maxLag` frames (1 for a periodic tone, near 0 for noise).
public func periodicity(_ samples: [Float], minLag: Int, maxLag: Int) -> Double {
    let x = samples.map(Double.init)
    var best = 0.0
    let n = x.count - maxLag
    guard n > 0 else { return 0 }
    var e0 = 0.0
    for i in 0..<n { e0 += x[i] * x[i] }
    for lag in minLag...maxLag {
        var c = 0.0, e1 = 0.0
        for i in 0..<n { c += x[i] * x[i + lag]; e1 += x[i + lag] * x[i + lag] }
        if e0 > 0, e1 > 0 { best = max(best, c / (e0 * e1).squareRoot()) }
    }
    return best
}

/// Root-mean-square level of `samples[from..<to]` in dB (-240 for silence).
public func levelDB(_ samples: [Float], from: Int = 0, to: Int? = nil) -> Double {
    let end = min(to ?? samples.count, samples.count)
    guard end > from else { return -240 }
    var s = 0.0
    for i in from..<end { s += Double(samples[i]) * Double(samples[i]) }
    let r = (s / Double(end - from)).squareRoot()
    return r > 0 ? 20 * log10(r) : -240
}

/// Pearson correlation of `a` and `b` over their common length.
public func correlation(_ a: [Float], _ b: [Float]) -> Double {
    let n = min(a.count, b.count)
    guard n > 1 else { return 0 }
    var ma = 0.0, mb = 0.0
    for i in 0..<n { ma += Double(a[i]); mb += Double(b[i]) }
    ma /= Double(n); mb /= Double(n)
    var c = 0.0, va = 0.0, vb = 0.0
    for i in 0..<n {
        let x = Double(a[i]) - ma, y = Double(b[i]) - mb
        c += x * y; va += x * x; vb += y * y
    }
    return va > 0 && vb > 0 ? c / (va * vb).squareRoot() : 0
}
