import AudioConversion
import AudioCore
import AudioDevices
import AudioFiles
import AudioQueueEngine
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Crossfades between items.
extension DecoderThread {
    /// Equal-power gains at frame `k` of an `n`-frame fade: sin and cos of (k + 0.5)/n · 90°.
    func fadeGains(_ k: Int, of n: Int) -> (incoming: Float, outgoing: Float) {
        let x = (Double(k) + 0.5) / Double(n) * Double.pi / 2
        return (Float(sin(x)), Float(cos(x)))
    }

    /// Mixes the held tail of the previous item into `frames` held frames from `at` (equal power).
    func mixFadeTail(into at: Int, frames: Int) {
        guard !fadeTail.isEmpty else { return }
        let tailFrames = fadeTail.count / channels
        let m = min(frames, tailFrames - fadeMixed)
        for i in 0..<m {
            let (gIn, gOut) = fadeGains(fadeMixed + i, of: tailFrames)
            for c in 0..<channels {
                let h = (at + i) * channels + c
                fadeHold[h] = fadeHold[h] * gIn + fadeTail[(fadeMixed + i) * channels + c] * gOut
            }
        }
        fadeMixed += m
        if fadeMixed >= tailFrames {
            fadeTail.removeAll()
            fadeMixed = 0
        }
    }

    /// An item has ended and another follows: its held frames become the tail the next item
    /// fades in over. A tail still being mixed (the item was shorter than the fade) is mixed
    /// into the held frames first, its rest appended faded out.
    func handOverFadeTail() {
        guard crossfadeFrames > 0 else { return }
        if !fadeTail.isEmpty {
            let tailFrames = fadeTail.count / channels
            for k in fadeMixed..<tailFrames {
                let gOut = fadeGains(k, of: tailFrames).outgoing
                for c in 0..<channels { fadeHold.append(fadeTail[k * channels + c] * gOut) }
            }
            fadeTail.removeAll()
            fadeMixed = 0
        }
        fadeTail = fadeHold
        fadeHold.removeAll()
    }

    /// Plays out whatever crossfade state is held (the end of the queue, or a next item that
    /// could not be opened).
    func flushFade() throws {
        if !fadeTail.isEmpty {
            handOverFadeTail()
            fadeHold = fadeTail
            fadeTail.removeAll()
        }
        guard !fadeHold.isEmpty else { return }
        try enqueueHeld(current, frames: fadeHold.count / channels)
    }

    /// Forgets the crossfade state (seek, skip, jump to live).
    func clearFade() {
        fadeHold.removeAll()
        fadeTail.removeAll()
        fadeMixed = 0
    }
}
