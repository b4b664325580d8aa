#if canImport(Glibc)
import Glibc
#endif

/// Sleeps until host time `deadline` (nanoseconds, CLOCK_MONOTONIC; see ``HostTime``), through
/// signals. A deadline in the past returns at once.
package func sleepUntil(hostTime deadline: UInt64) {
    var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
    while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
}

/// Sleeps for `seconds` on the monotonic clock, through signals. Zero, negative and NaN return
/// at once; the sleep is capped at a day.
package func sleep(seconds: Double) {
    guard seconds > 0 else { return }
    sleepUntil(hostTime: HostTime.now() + HostTime.ticks(seconds: min(seconds, 86_400)))
}

/// Polls `condition` until it is true (returns true) or host time `deadline` passes (returns
/// false), sleeping 0.1 ms at first and backing off to 2 ms: start-up waits whose answer
/// usually comes within a millisecond (a sound server's reply, the first decoded audio) end
/// close to it, where a fixed 2 ms step added about 1 ms on average to each.
package func pollWithBackoff(until deadline: UInt64 = .max, _ condition: () -> Bool) -> Bool {
    var step: UInt64 = 100_000
    while true {
        if condition() { return true }
        if HostTime.now() >= deadline { return false }
        sleepUntil(hostTime: HostTime.now() + step)
        step = min(2_000_000, step * 3 / 2)
    }
}
