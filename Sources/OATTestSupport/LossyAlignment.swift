#if canImport(Glibc)
import Glibc
#endif

/// Where a lossy recording (or a lossy file) holds a reference signal, and how well.
///
/// ``lossyAlign(recording:reference:channels:segmentFrames:drift:)`` finds the reference in the
/// recording by cross-correlation (coarse on a decimated mono mix through an FFT, then refined
/// frame by frame), then cuts the reference into segments and lets each segment find its own
/// best offset within ±`drift` frames of the previous one: a codec's delay, a small drift or a
/// gap inserted by a playback underrun cost that segment alone, not everything after it.
public struct LossyMatch: Sendable, CustomStringConvertible {
    /// One aligned reference segment.
    public struct Segment: Sendable {
        /// First reference frame.
        public var referenceFrame: Int
        /// The recorded frame it was found at.
        public var recordingFrame: Int
        /// Length in frames.
        public var frames: Int
        /// SNR in dB of the recording against the reference over this segment.
        public var snr: Double
    }

    /// The recorded frame of reference frame 0 (the first segment's offset).
    public var offset: Int
    /// SNR in dB over all segments (total reference energy over total difference energy).
    public var snr: Double
    /// The segments, in reference order.
    public var segments: [Segment]

    /// The segment with the lowest SNR.
    public var worst: Segment? { segments.min { $0.snr < $1.snr } }
    /// Largest minus smallest offset (recording frame - reference frame) over the segments.
    public var offsetSpread: Int {
        let lags = segments.map { $0.recordingFrame - $0.referenceFrame }
        return (lags.max() ?? 0) - (lags.min() ?? 0)
    }

    public var description: String {
        let w = worst.map { "worst \(dB($0.snr)) dB at reference frame \($0.referenceFrame)" } ?? "no segments"
        return "SNR \(dB(snr)) dB at frame \(offset), \(segments.count) segments, \(w), offsets spread \(offsetSpread) frames"
    }
}

/// Finds `reference` in `recording` (both interleaved, `channels` channels) allowing for a
/// lossy codec's noise, its delay and small offset changes; nil when the recording is too short
/// or holds nothing like the reference.
///
/// Coarse: the normalised cross-correlation peak of 4-times-decimated mono mixes (FFT), so the
/// whole recording is searched, not just its onset. Fine: each `segmentFrames` segment of the
/// reference takes the offset within ±`drift` frames of the previous segment's (the coarse one
/// for the first) that gives it the best SNR; a segment that matches poorly there (below 3 dB)
/// is searched again over the whole recording.
public func lossyAlign(recording: [Float], reference: [Float], channels: Int,
                       segmentFrames: Int = 4800, drift: Int = 48) -> LossyMatch? {
    let recFrames = recording.count / channels
    let refFrames = reference.count / channels
    guard refFrames > 0, recFrames >= refFrames / 2 else { return nil }
    guard let coarse = coarseOffset(recording, 0..<recFrames, reference, 0..<refFrames, channels: channels) else { return nil }

    var segments: [LossyMatch.Segment] = []
    var lag = coarse
    var start = 0
    while start < refFrames {
        let n = min(segmentFrames, refFrames - start)
        func best(around center: Int, within radius: Int) -> (lag: Int, snr: Double) {
            var result = (lag: center, snr: -Double.infinity)
            for l in (center - radius)...(center + radius) where start + l >= 0 && start + l + n <= recFrames {
                let s = segmentSNR(recording, start + l, reference, start, frames: n, channels: channels)
                if s > result.snr { result = (l, s) }
            }
            return result
        }
        var found = best(around: lag, within: start == 0 ? max(drift, 16) : drift)
        if found.snr < 3, n >= 256,
           let wide = coarseOffset(recording, 0..<recFrames, reference, start..<(start + n), channels: channels) {
            let again = best(around: wide - start, within: 8)
            if again.snr > found.snr { found = again }
        }
        if found.snr > -.infinity {
            segments.append(.init(referenceFrame: start, recordingFrame: start + found.lag, frames: n, snr: found.snr))
            lag = found.lag
        }
        start += n
    }
    segments = splitAtDiscontinuities(segments, recording, reference, channels: channels)
    guard let first = segments.first else { return nil }
    var signal = 0.0, noise = 0.0
    recording.withUnsafeBufferPointer { r in
        reference.withUnsafeBufferPointer { x in
            for s in segments {
                for i in 0..<(s.frames * channels) {
                    let v = Double(x[s.referenceFrame * channels + i])
                    let d = Double(r[s.recordingFrame * channels + i]) - v
                    signal += v * v
                    noise += d * d
                }
            }
        }
    }
    let total = noise == 0 ? Double.infinity : 10 * log10(signal / noise)
    return LossyMatch(offset: first.recordingFrame - first.referenceFrame, snr: total, segments: segments)
}

/// A segment far worse than the others (10 dB below the median) holds discontinuities (gaps or
/// drops, possibly several). Its frames are given offsets by dynamic programming over the
/// candidate offsets (its own, its neighbours', and where each 600-frame block of it is found
/// within ±1 s, matching as well as a normal segment): each frame costs its squared error under the offset, and changing offset
/// costs 20 frames' worth of signal energy, so the segment is cut exactly where the offset
/// changes and only frames really missing from the recording count as error.
private func splitAtDiscontinuities(_ segments: [LossyMatch.Segment], _ recording: [Float], _ reference: [Float],
                                    channels: Int) -> [LossyMatch.Segment] {
    guard segments.count >= 3 else { return segments }
    let sorted = segments.map(\.snr).sorted()
    let median = sorted[sorted.count / 2]
    let recFrames = recording.count / channels
    var energy = 0.0
    for x in reference { energy += Double(x) * Double(x) }
    let penalty = 20 * energy / Double(max(1, reference.count / channels))
    func lag(_ s: LossyMatch.Segment) -> Int { s.recordingFrame - s.referenceFrame }
    var out: [LossyMatch.Segment] = []
    for (i, s) in segments.enumerated() {
        guard s.snr < median - 10 else { out.append(s); continue }
        var lags: Set<Int> = [lag(s)]
        if i > 0 { lags.insert(lag(segments[i - 1])) }
        if i + 1 < segments.count { lags.insert(lag(segments[i + 1])) }
        let end = s.referenceFrame + s.frames
        let window = max(0, s.referenceFrame + lags.min()! - 48000)..<min(recFrames, end + lags.max()! + 48000)
        var b = s.referenceFrame
        while b < end {
            let m = min(600, end - b)
            // A block's own offset counts only where it matches as well as a normal segment,
            // so frames missing from the recording are not "explained" by a look-alike elsewhere.
            if m >= 256, let at = coarseOffset(recording, window, reference, b..<(b + m), channels: channels),
               segmentSNR(recording, at, reference, b, frames: m, channels: channels) >= median - 10 {
                lags.insert(at - b)
            }
            b += m
        }
        let candidates = lags.filter { s.referenceFrame + $0 >= 0 && end + $0 <= recFrames }.sorted()
        guard candidates.count >= 2 else { out.append(s); continue }
        let k = candidates.count
        var cost = [Double](repeating: 0, count: k)
        var from = [Int](repeating: 0, count: s.frames * k)
        recording.withUnsafeBufferPointer { r in
            reference.withUnsafeBufferPointer { x in
                var next = [Double](repeating: 0, count: k)
                for f in 0..<s.frames {
                    let rf = s.referenceFrame + f
                    let cheapest = cost.indices.min { cost[$0] < cost[$1] }!
                    for j in 0..<k {
                        var e = 0.0
                        for c in 0..<channels {
                            let d = Double(r[(rf + candidates[j]) * channels + c]) - Double(x[rf * channels + c])
                            e += d * d
                        }
                        let stay = cost[j], jump = cost[cheapest] + penalty
                        if f == 0 || stay <= jump { next[j] = stay + e; from[f * k + j] = j } else { next[j] = jump + e; from[f * k + j] = cheapest }
                    }
                    swap(&cost, &next)
                }
            }
        }
        // Back-track the offset of every frame, then cut the segment into runs.
        var state = cost.indices.min { cost[$0] < cost[$1] }!
        var chosen = [Int](repeating: 0, count: s.frames)
        for f in stride(from: s.frames - 1, through: 0, by: -1) {
            chosen[f] = state
            state = from[f * k + state]
        }
        var runStart = 0
        for f in 1...s.frames where f == s.frames || chosen[f] != chosen[runStart] {
            let ref = s.referenceFrame + runStart, n = f - runStart, l = candidates[chosen[runStart]]
            out.append(.init(referenceFrame: ref, recordingFrame: ref + l, frames: n,
                             snr: segmentSNR(recording, ref + l, reference, ref, frames: n, channels: channels)))
            runStart = f
        }
    }
    return out
}

/// The recorded frame where reference frame `referenceRange.lowerBound` best matches (normalised
/// cross-correlation of 4x decimated mono mixes, refined at full rate), as an offset into
/// `recording`; nil when nothing correlates.
private func coarseOffset(_ recording: [Float], _ recordingRange: Range<Int>, _ reference: [Float], _ referenceRange: Range<Int>,
                          channels: Int) -> Int? {
    let factor = 4
    func mono(_ x: [Float], _ range: Range<Int>) -> [Double] {
        let count = range.count / factor
        var out = [Double](repeating: 0, count: count)
        x.withUnsafeBufferPointer { p in
            for i in 0..<count {
                var s = 0.0
                let base = (range.lowerBound + i * factor) * channels
                for k in 0..<(factor * channels) { s += Double(p[base + k]) }
                out[i] = s
            }
        }
        return out
    }
    let a = mono(recording, recordingRange)
    let b = mono(reference, referenceRange)
    guard !a.isEmpty, !b.isEmpty else { return nil }
    var n = 1
    while n < a.count + b.count { n <<= 1 }
    var ar = a + [Double](repeating: 0, count: n - a.count), ai = [Double](repeating: 0, count: n)
    var br = b + [Double](repeating: 0, count: n - b.count), bi = [Double](repeating: 0, count: n)
    fft(&ar, &ai)
    fft(&br, &bi)
    // Correlation c[lag] = sum a[k + lag] b[k]: inverse FFT of A * conj(B) (as a forward FFT of
    // the conjugate).
    var cr = [Double](repeating: 0, count: n), ci = [Double](repeating: 0, count: n)
    for i in 0..<n {
        cr[i] = ar[i] * br[i] + ai[i] * bi[i]
        ci[i] = -(ai[i] * br[i] - ar[i] * bi[i])
    }
    fft(&cr, &ci)
    // Normalise by the recording's energy under the reference at each lag (so loud unrelated
    // audio does not win); only lags where the reference lies inside the recording, or starts
    // before it by at most half its length.
    var prefix = [Double](repeating: 0, count: a.count + 1)
    for i in 0..<a.count { prefix[i + 1] = prefix[i] + a[i] * a[i] }
    var bestLag: Int?
    var bestScore = 0.0
    for lag in -(b.count / 2)...max(-(b.count / 2), a.count - b.count / 2) {
        let lo = max(0, lag), hi = min(a.count, lag + b.count)
        guard hi - lo >= b.count / 2 else { continue }
        let energy = prefix[hi] - prefix[lo]
        guard energy > 0 else { continue }
        let c = cr[(lag + n) % n] / Double(n)
        let score = c / energy.squareRoot()
        if score > bestScore { bestScore = score; bestLag = lag }
    }
    guard let coarse = bestLag else { return nil }
    // Refine at full rate: ±factor frames by correlation over the overlapping reference.
    let center = recordingRange.lowerBound + coarse * factor
    var best = (lag: center, score: -Double.infinity)
    recording.withUnsafeBufferPointer { r in
        reference.withUnsafeBufferPointer { x in
            for at in (center - factor)...(center + factor) {
                var s = 0.0, e = 0.0
                for f in 0..<referenceRange.count {
                    let rf = at + f
                    guard rf >= 0 && rf < recording.count / channels else { continue }
                    for ch in 0..<channels {
                        let v = Double(r[rf * channels + ch])
                        s += v * Double(x[(referenceRange.lowerBound + f) * channels + ch])
                        e += v * v
                    }
                }
                let score = e > 0 ? s / e.squareRoot() : -Double.infinity
                if score > best.score { best = (at, score) }
            }
        }
    }
    return best.lag
}
