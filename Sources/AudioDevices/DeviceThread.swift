import AudioCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Starts a joinable POSIX thread running `body` (not on Swift's cooperative pool, as device
/// and blocking I/O work must not be). Shared by the device backends and the queues' feeders.
package final class DeviceThread: Sendable {
    private final class Box: @unchecked Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    private let handle: Locked<pthread_t?>

    package init(name: String, _ body: @escaping @Sendable () -> Void) throws(AudioError) {
        let box = Unmanaged.passRetained(Box(body))
        var thread = pthread_t()
        let status = pthread_create(&thread, nil, { raw in
            let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
            box.body()
            return nil
        }, box.toOpaque())
        guard status == 0 else {
            box.release()
            throw AudioError(.deviceUnavailable, component: "AudioDevices", "cannot start the \(name) thread", underlying: "pthread_create \(status)")
        }
        handle = Locked(thread)
    }

    /// Waits for the thread to end (once). Called from the thread itself (e.g. a callback that
    /// disposes its queue), it returns at once and the thread is detached instead.
    package func join() {
        let t = handle.withLock { h -> pthread_t? in defer { h = nil }; return h }
        guard let t else { return }
        if pthread_equal(t, pthread_self()) != 0 { pthread_detach(t) } else { pthread_join(t, nil) }
    }
}

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
