#if canImport(Glibc)
import Glibc
#endif

/// Scheduling for the package's own threads: device (render/capture) threads ask for real-time
/// scheduling, feeder and decoder threads for a raised priority, each where the system allows it
/// (root, `CAP_SYS_NICE`, or an `RLIMIT_RTPRIO`/`RLIMIT_NICE` that permits it) and silently
/// keeping the normal policy where it does not: the audio still plays, only less well under load.
///
/// A device thread that misses its period under CPU load is a dropout the listener hears; a
/// feeder that is not scheduled for a second lets the device ring run dry. PulseAudio gives its
/// own I/O threads `SCHED_RR` priority 5; the device threads here take the same, so a client
/// thread and the server's sink thread share the CPU round-robin ahead of ordinary work.
///
/// `OAT_REALTIME=0` in the environment keeps every thread at the normal policy.
package enum ThreadPriority {
    /// The `SCHED_RR` priority device threads ask for (PulseAudio's own I/O threads use 5).
    package static let realTimePriority: Int32 = 5
    /// The nice value feeder threads ask for (PulseAudio's daemon runs at -11).
    package static let feederNice: Int32 = -10

    /// Whether `OAT_REALTIME=0` turned raised priorities off.
    static var disabled: Bool {
        guard let v = getenv("OAT_REALTIME") else { return false }
        return String(cString: v) == "0"
    }

    /// Puts the calling thread under `SCHED_RR` at ``realTimePriority``. True when granted.
    /// Call once at the start of a device thread, before its loop (a system call, no allocation).
    @discardableResult
    package static func makeCurrentThreadRealTime() -> Bool {
        guard !disabled else { return false }
        var param = sched_param()
        param.sched_priority = realTimePriority
        return pthread_setschedparam(pthread_self(), SCHED_RR, &param) == 0
    }

    /// Raises the calling thread's nice value to ``feederNice``. True when granted. Call once at
    /// the start of a feeder or decoder thread. (On Linux the nice value belongs to the thread:
    /// `setpriority(PRIO_PROCESS, 0, ...)` changes the calling thread only.)
    @discardableResult
    package static func raiseCurrentThread() -> Bool {
        guard !disabled else { return false }
        return setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, feederNice) == 0
    }

    /// The calling thread's scheduling: true when it runs under a real-time policy.
    package static var currentThreadIsRealTime: Bool {
        var policy: Int32 = 0
        var param = sched_param()
        guard pthread_getschedparam(pthread_self(), &policy, &param) == 0 else { return false }
        return policy == SCHED_RR || policy == SCHED_FIFO
    }
}
