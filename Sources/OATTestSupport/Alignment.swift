#if canImport(Glibc)
import Glibc
#endif

/// Finding a reference signal in a recording of played audio.
///
/// A recording (e.g. of a PulseAudio monitor) holds the played audio with silence around it and,
/// after a seek, pause or server restart, in several pieces. ``alignSegments(recording:reference:channels:tolerance:)``
/// cuts it into runs where consecutive recorded frames equal consecutive reference frames, so a
/// test can say exactly which reference frames were played, in which order, and where.

/// A run of recorded frames that equals a run of reference frames.
public struct AlignedSegment: Hashable, Sendable, CustomStringConvertible {
    /// First frame in the recording.
    public var recordingFrame: Int
    /// First frame in the reference.
    public var referenceFrame: Int
    /// Length in frames.
    public var frames: Int

    /// One past the last reference frame.
    public var referenceEnd: Int { referenceFrame + frames }
    /// One past the last recorded frame.
    public var recordingEnd: Int { recordingFrame + frames }

    public var description: String {
        "rec \(recordingFrame)..<\(recordingEnd) = ref \(referenceFrame)..<\(referenceEnd) (\(frames) frames)"
    }
}

/// The result of aligning a recording with a reference.
public struct Alignment: Sendable, CustomStringConvertible {
    /// The matching runs, in recording order.
    public var segments: [AlignedSegment]
    /// Recorded frames that are not silent and match no reference frames.
    public var unmatchedFrames: Int
    /// Reference frames covered by the segments (counted once each).
    public var coveredReferenceFrames: Int

    public var description: String {
        "\(segments.count) segment(s) \(segments.map(\.description)); \(unmatchedFrames) unmatched non-silent frames"
    }
}

/// Cuts `recording` into runs equal (within `tolerance` per sample) to runs of `reference`.
/// Both are interleaved with `channels` channels. Silent (all-zero) recorded frames between runs
/// are skipped; a non-silent frame whose surroundings match nothing counts as unmatched.
public func alignSegments(recording: [Float], reference: [Float], channels: Int, tolerance: Float = 1e-6,
                          window: Int = 32, maxSearches: Int = 400) -> Alignment {
    let recFrames = recording.count / channels
    let refFrames = reference.count / channels
    var segments: [AlignedSegment] = []
    var unmatched = 0
    recording.withUnsafeBufferPointer { r in
        reference.withUnsafeBufferPointer { x in
            func silent(_ p: Int) -> Bool {
                for c in 0..<channels where r[p * channels + c] != 0 { return false }
                return true
            }
            func same(_ p: Int, _ m: Int) -> Bool {
                for c in 0..<channels where abs(r[p * channels + c] - x[m * channels + c]) > tolerance { return false }
                return true
            }
            var p = 0
            var hint = 0
            var searches = 0
            while p < recFrames {
                if silent(p) { p += 1; continue }
                let w = min(window, recFrames - p)
                // Candidate reference frames: try the one that continues the last segment first,
                // then scan.
                func matches(_ m: Int) -> Bool {
                    guard m >= 0, m + w <= refFrames, same(p, m) else { return false }
                    for k in 1..<max(1, w) where !same(p + k, m + k) { return false }
                    return true
                }
                var found: Int? = matches(hint) ? hint : nil
                // Bound the work when the recording matches nothing (a broken path): full scans
                // stop after `maxSearches`, and the rest is counted as unmatched.
                if found == nil && searches < maxSearches {
                    searches += 1
                    var m = 0
                    while m < refFrames { if matches(m) { found = m; break }; m += 1 }
                }
                guard let m = found else {
                    unmatched += 1
                    p += 1
                    continue
                }
                var len = w
                while p + len < recFrames, m + len < refFrames, same(p + len, m + len) { len += 1 }
                segments.append(AlignedSegment(recordingFrame: p, referenceFrame: m, frames: len))
                hint = m + len
                p += len
            }
        }
    }
    var covered = Set<Int>()
    var coveredCount = 0
    for s in segments {
        for f in s.referenceFrame..<s.referenceEnd where covered.insert(f).inserted { coveredCount += 1 }
    }
    return Alignment(segments: segments, unmatchedFrames: unmatched, coveredReferenceFrames: coveredCount)
}

/// SNR in dB of `frames` recorded frames starting at `recordingFrame` against the reference from
/// `referenceFrame` (interleaved, `channels` channels); +inf when identical.
public func segmentSNR(_ recording: [Float], _ recordingFrame: Int, _ reference: [Float], _ referenceFrame: Int,
                       frames: Int, channels: Int) -> Double {
    var signal = 0.0, noise = 0.0
    let n = min(frames, recording.count / channels - recordingFrame, reference.count / channels - referenceFrame)
    guard n > 0, recordingFrame >= 0, referenceFrame >= 0 else { return -.infinity }
    recording.withUnsafeBufferPointer { r in
        reference.withUnsafeBufferPointer { x in
            for i in 0..<(n * channels) {
                let s = Double(x[referenceFrame * channels + i])
                let d = Double(r[recordingFrame * channels + i]) - s
                signal += s * s
                noise += d * d
            }
        }
    }
    return noise == 0 ? .infinity : 10 * log10(signal / noise)
}

/// The longest run of all-zero frames in `samples[from..<to]` (frames).
public func longestSilentRun(_ samples: [Float], channels: Int, from: Int, to: Int) -> Int {
    var longest = 0, run = 0
    samples.withUnsafeBufferPointer { s in
        for f in max(0, from)..<min(to, s.count / channels) {
            var zero = true
            for c in 0..<channels where s[f * channels + c] != 0 { zero = false; break }
            if zero { run += 1; longest = max(longest, run) } else { run = 0 }
        }
    }
    return longest
}

/// Index of the first frame with a non-zero sample, or nil.
public func firstNonSilentFrame(_ samples: [Float], channels: Int) -> Int? {
    var i = 0
    while i < samples.count {
        if samples[i] != 0 { return i / channels }
        i += 1
    }
    return nil
}

/// Formats a dB figure for reports (`inf` when bit-exact).
public func dB(_ value: Double) -> String {
    value.isInfinite ? (value > 0 ? "inf" : "-inf") : String((value * 10).rounded() / 10)
}
