import Synchronization

/// Where a device that runs its own thread (null output, ALSA output and input) is in its life.
enum DeviceRunState: UInt8, AtomicRepresentable {
    /// Not started yet.
    case idle
    /// The thread renders (or captures).
    case running
    /// Started, and told to pause.
    case paused
    /// Told to stop; the thread leaves its loop.
    case stopping
    /// The thread has ended (end of stream played, stopped, or could not start).
    case finished

    /// Stopping or finished: the thread leaves, or has left, its loop.
    var isEnding: Bool { self == .stopping || self == .finished }
    /// Running or paused: started and not yet told to stop.
    var isStarted: Bool { self == .running || self == .paused }
}

/// A device's ``DeviceRunState``, shared by the control side and the device thread.
///
/// Thread safety: every method may be called from any thread; lock-free.
struct DeviceRun: ~Copyable, Sendable {
    private let state = Atomic<DeviceRunState>(.idle)

    /// The state now.
    var current: DeviceRunState { state.load(ordering: .acquiring) }

    /// Moves from `from` to `to`; false (and no change) when the state was not `from`.
    func move(from: DeviceRunState, to: DeviceRunState) -> Bool {
        state.compareExchange(expected: from, desired: to, ordering: .acquiringAndReleasing).exchanged
    }

    /// Asks a running or paused thread to stop; returns the state found (any other is kept).
    @discardableResult
    func requestStop() -> DeviceRunState {
        var found = current
        while found.isStarted {
            let (exchanged, original) = state.compareExchange(expected: found, desired: .stopping, ordering: .acquiringAndReleasing)
            if exchanged { break }
            found = original
        }
        return found
    }

    /// The thread has ended.
    func finish() { state.store(.finished, ordering: .releasing) }
}
