import AudioCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Sleeps until host time `deadline` (nanoseconds, CLOCK_MONOTONIC).
package func sleepUntil(hostTime deadline: UInt64) {
    var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
    while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
}

/// Polls `condition` until it is true (returns true) or host time `deadline` passes (returns
/// false), sleeping 0.1 ms at first and backing off to 2 ms: start-up waits whose answer
/// usually comes within a millisecond (a sound server's reply, the first decoded audio) end
/// close to it, where a fixed 2 ms step added about 1 ms on average to each.
package func pollWithBackoff(until deadline: UInt64, _ condition: () -> Bool) -> Bool {
    var step: UInt64 = 100_000
    while true {
        if condition() { return true }
        if HostTime.now() >= deadline { return false }
        sleepUntil(hostTime: HostTime.now() + step)
        step = min(2_000_000, step * 3 / 2)
    }
}

/// Non-interleaved Float32 scratch buffers allocated once, for a device thread.
final class RenderBuffers: @unchecked Sendable {
    let channels: Int
    let frames: Int
    let pointers: UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>
    let interleaved: UnsafeMutableBufferPointer<Float>

    init(channels: Int, frames: Int) {
        self.channels = channels
        self.frames = frames
        pointers = .allocate(capacity: channels)
        for c in 0..<channels {
            let p = UnsafeMutablePointer<Float>.allocate(capacity: frames)
            p.initialize(repeating: 0, count: frames)
            pointers[c] = p
        }
        interleaved = .allocate(capacity: frames * channels)
        interleaved.initialize(repeating: 0)
    }

    deinit {
        for p in pointers { p.deallocate() }
        pointers.deallocate()
        interleaved.deallocate()
    }

    /// Zeroes frames `from..<frames` of every channel.
    @inline(__always)
    func silence(from: Int) {
        guard from < frames else { return }
        for p in pointers { (p + from).update(repeating: 0, count: frames - from) }
    }

    /// Interleaves the first `count` frames into ``interleaved``.
    @inline(__always)
    func interleave(_ count: Int) {
        let ch = channels
        for c in 0..<ch {
            let src = pointers[c]
            var j = c
            for i in 0..<count {
                interleaved[j] = src[i]
                j += ch
            }
        }
    }
}
