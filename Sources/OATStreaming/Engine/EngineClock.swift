import OATCore
import OATNetwork
import Synchronization

/// The time the engine's timers read: first-audio and statistics timing, the health report's
/// cadence, the backoff after failed entries and the give-up on a lost device. A player reads
/// ``MonotonicClock``; tests drive the same logic on a ``VirtualClock`` without sleeping.
protocol EngineClock: Sendable {
    /// Now, in nanoseconds on a monotonic timeline (``HostTime`` units).
    func now() -> UInt64
}

extension EngineClock {
    /// Seconds from `ticks` to now (0 when `ticks` lies in the future).
    func seconds(since ticks: UInt64) -> Double {
        let n = now()
        return n > ticks ? HostTime.seconds(ticks: n - ticks) : 0
    }
}

/// The host's monotonic clock (``HostTime/now()``).
struct MonotonicClock: EngineClock {
    func now() -> UInt64 { HostTime.now() }
}

/// A clock that moves only when told to (tests): timers are checked at chosen instants.
final class VirtualClock: EngineClock {
    private let ticks: Locked<UInt64>

    /// Starts at `seconds` (not 0, so that "since 0" is never mistaken for "never").
    init(seconds: Double = 1000) {
        ticks = Locked(HostTime.ticks(seconds: seconds))
    }

    func now() -> UInt64 { ticks.withLock { $0 } }

    /// Moves the clock forward.
    func advance(seconds: Double) {
        ticks.withLock { $0 += HostTime.ticks(seconds: seconds) }
    }
}
