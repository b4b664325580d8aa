import AudioCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A joinable POSIX thread for a queue's feeder (blocking work stays off the cooperative pool).
final class Thread: @unchecked Sendable {
    private final class Box: @unchecked Sendable {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }
    private var handle: pthread_t?

    init(_ body: @escaping () -> Void) {
        let box = Unmanaged.passRetained(Box(body))
        var t = pthread_t()
        let status = pthread_create(&t, nil, { raw in
            let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
            box.body()
            return nil
        }, box.toOpaque())
        if status == 0 { handle = t } else { box.release() }
    }

    /// Waits for the thread to end.
    func join() {
        if let h = handle, pthread_equal(h, pthread_self()) == 0 { pthread_join(h, nil) }
        handle = nil
    }
}

func sleepUntilNanos(_ deadline: UInt64) {
    var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
    while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
}
