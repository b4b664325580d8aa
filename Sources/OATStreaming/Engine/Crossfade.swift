#if canImport(Glibc)
import Glibc
#endif

/// Crossfades between items (``BufferingPolicy/crossfadeSeconds``): the newest decoded frames of
/// the item being decoded are held back so that they can overlap the next item; when the item
/// ends they become the tail that the next item's first frames are mixed with (equal power).
///
/// A value the decoder thread owns: interleaved Float32 samples in, interleaved samples out;
/// no queue, no device.
struct CrossfadeMixer {
    /// Interleaved channels.
    let channels: Int
    /// The newest decoded frames of the current item, held back (interleaved).
    private(set) var held: [Float] = []
    /// The previous item's held frames, being mixed into the start of the current one.
    private(set) var tail: [Float] = []
    /// Frames of `tail` mixed so far.
    private(set) var mixed = 0

    init(channels: Int) {
        self.channels = max(1, channels)
    }

    var heldFrames: Int { held.count / channels }
    /// Nothing held and no tail to mix.
    var isEmpty: Bool { held.isEmpty && tail.isEmpty }

    /// Equal-power gains at frame `k` of an `n`-frame fade: sin and cos of (k + 0.5)/n · 90°.
    static func gains(_ k: Int, of n: Int) -> (incoming: Float, outgoing: Float) {
        let x = (Double(k) + 0.5) / Double(n) * Double.pi / 2
        return (Float(sin(x)), Float(cos(x)))
    }

    /// Holds `frames` newly decoded frames, mixing the tail (if any) into them.
    mutating func add(_ samples: UnsafeBufferPointer<Float>, frames: Int) {
        let start = heldFrames
        held.append(contentsOf: samples[0..<(frames * channels)])
        mixTail(into: start, frames: frames)
    }

    /// Mixes the tail into `frames` held frames from `at` (equal power).
    private mutating func mixTail(into at: Int, frames: Int) {
        guard !tail.isEmpty else { return }
        let tailFrames = tail.count / channels
        let m = min(frames, tailFrames - mixed)
        for i in 0..<m {
            let (gIn, gOut) = Self.gains(mixed + i, of: tailFrames)
            for c in 0..<channels {
                let h = (at + i) * channels + c
                held[h] = held[h] * gIn + tail[(mixed + i) * channels + c] * gOut
            }
        }
        mixed += m
        if mixed >= tailFrames {
            tail.removeAll()
            mixed = 0
        }
    }

    /// Calls `body` with the bytes of the oldest `frames` held frames, then drops them unless
    /// `body` throws.
    mutating func takeOldest<R>(frames: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let n = min(frames, heldFrames) * channels
        let result = try held.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[0..<(n * 4)])) }
        held.removeFirst(n)
        return result
    }

    /// An item has ended and another follows: its held frames become the tail the next item
    /// fades in over. A tail still being mixed (the item was shorter than the fade) is mixed
    /// into the held frames first, its rest appended faded out.
    mutating func handOver() {
        if !tail.isEmpty {
            let tailFrames = tail.count / channels
            for k in mixed..<tailFrames {
                let gOut = Self.gains(k, of: tailFrames).outgoing
                for c in 0..<channels { held.append(tail[k * channels + c] * gOut) }
            }
            tail.removeAll()
            mixed = 0
        }
        tail = held
        held.removeAll()
    }

    /// Nothing follows: a tail still being mixed is faded out after the held frames, and
    /// everything becomes held, to be played out.
    mutating func prepareFlush() {
        guard !tail.isEmpty else { return }
        handOver()
        held = tail
        tail.removeAll()
    }

    /// Forgets everything (seek, skip, jump to live).
    mutating func clear() {
        held.removeAll()
        tail.removeAll()
        mixed = 0
    }
}
