#if canImport(Glibc)
import Glibc
#endif
import OATCore
import Synchronization

/// A wake-up that a real-time thread may give to a thread waiting for a count (free space in a
/// ring, frames rendered) to reach a level, without blocking: how an output queue's render side
/// tells its feeder that the play ring has room again (as SFBAudioEngine's render block signals
/// its decoder), instead of the feeder sleeping and guessing.
///
/// The waiter ``arm(at:)``s a level, checks its condition once more (the wake-up may already
/// have been due), then ``wait(untilHostTime:)``s. The real-time side calls
/// ``postIfReached(_:)`` with the current count after each step; it posts at most once per
/// arming, so a feeder waiting for a quarter of the ring wakes once per quarter, not once per
/// render call. Any other thread may ``post()`` (stop, reset, dispose) to end a wait early.
///
/// Why ``postIfReached(_:)`` is real-time safe: it makes a memory fence and one relaxed atomic
/// load, and only when the waiter's level is reached a compare-and-exchange and `sem_post`.
/// glibc's `sem_post` is an atomic increment of the semaphore word plus, only when a thread
/// sleeps on it, a `FUTEX_WAKE` system call, which never blocks or sleeps; it takes no lock and
/// allocates nothing (POSIX lists it as async-signal-safe). The semaphore lives in memory
/// allocated at creation; the signal is reached through an unowned pointer the render closure
/// already holds, so no reference count changes either.
///
/// Thread safety: one waiting thread; ``postIfReached(_:)`` from one (real-time) thread;
/// ``post()`` from any thread.
final class RealTimeSignal: @unchecked Sendable {
    private let semaphore: UnsafeMutablePointer<sem_t>
    /// The level the waiter wants (0: nobody is waiting for a level).
    private let wanted = Atomic<Int>(0)
    /// Posts made by the real-time side (tests and measurements).
    let realTimePosts = Atomic<Int>(0)

    /// Creates a signal with nobody waiting.
    init() {
        semaphore = .allocate(capacity: 1)
        sem_init(semaphore, 0, 0)
    }

    deinit {
        sem_destroy(semaphore)
        semaphore.deallocate()
    }

    /// Waiter: asks to be woken once the count given to ``postIfReached(_:)`` reaches `level`
    /// (at least 1). Call it before the last check of the condition, then ``wait(untilHostTime:)``.
    func arm(at level: Int) {
        // Posts left from earlier wake-ups (a control post while nobody waited) would end the
        // next wait at once: drop them first. A post racing with this is seen by the check the
        // caller makes after arming.
        while sem_trywait(semaphore) == 0 {}
        wanted.store(max(1, level), ordering: .sequentiallyConsistent)
        // Pairs with the fence in postIfReached: either the real-time side sees the level, or
        // the caller's next check sees the count it published.
        atomicMemoryFence(ordering: .sequentiallyConsistent)
    }

    /// Waiter: nobody waits any more (the condition held after arming).
    func disarm() { wanted.store(0, ordering: .relaxed) }

    /// Waiter: sleeps until posted or host time `deadline` (ns, CLOCK_MONOTONIC); true when
    /// posted. Disarms.
    @discardableResult
    func wait(untilHostTime deadline: UInt64) -> Bool {
        var posted = false
        while true {
            let now = HostTime.now()
            guard now < deadline else { posted = sem_trywait(semaphore) == 0; break }
            // sem_timedwait takes a CLOCK_REALTIME deadline (sem_clockwait is not in Swift's
            // Glibc module): the same distance from the wall clock's now. A wall-clock step
            // during the wait only lengthens or shortens this one wait; the loop checks the
            // monotonic deadline again.
            var wall = timespec()
            clock_gettime(CLOCK_REALTIME, &wall)
            let at = UInt64(wall.tv_sec) &* 1_000_000_000 &+ UInt64(wall.tv_nsec) &+ (deadline - now)
            var ts = timespec(tv_sec: Int(at / 1_000_000_000), tv_nsec: Int(at % 1_000_000_000))
            if sem_timedwait(semaphore, &ts) == 0 { posted = true; break }
            if errno != EINTR && errno != ETIMEDOUT { break }
        }
        wanted.store(0, ordering: .relaxed)
        return posted
    }

    /// Real-time side: wakes the waiter when `count` reached the level it armed. Wait-free,
    /// no allocation, no lock (see the type's notes).
    @inline(__always)
    func postIfReached(_ count: Int) {
        // The count was published by the caller (a ring index store) before this fence.
        atomicMemoryFence(ordering: .sequentiallyConsistent)
        let level = wanted.load(ordering: .relaxed)
        guard level > 0, count >= level else { return }
        guard wanted.compareExchange(expected: level, desired: 0, ordering: .relaxed).exchanged else { return }
        realTimePosts.add(1, ordering: .relaxed)
        sem_post(semaphore)
    }

    /// Any thread: ends the current (or next) wait now.
    func post() {
        sem_post(semaphore)
    }
}
