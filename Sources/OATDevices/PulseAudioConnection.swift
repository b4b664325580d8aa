import OATCore
import COATPulseAudio
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// What a PulseAudio device hears from its ``PulseConnection`` once the connection was first
/// established. Called on the main-loop thread with the main-loop lock held.
protocol PulseConnectionOwner: AnyObject {
    /// The context is ready again (after ``PulseConnection/reconnectLater()``).
    func connectionReady()
    /// The server went away or the context failed; `reason` is PulseAudio's error text.
    func connectionFailed(_ reason: String)
}

/// A connection to a PulseAudio server on a threaded main loop: the one implementation of
/// connect, wait until ready, server loss and reconnect (with a backoff) that the output and
/// input devices share. The device owns it and is its ``owner``; the device's stream callbacks
/// run on the same main-loop thread, under the same lock.
///
/// Thread safety: ``open(timeout:)`` and ``close()`` from the control thread; everything else
/// with the main-loop lock held (``lock()``), or on the main-loop thread, where callbacks
/// already hold it.
final class PulseConnection: @unchecked Sendable {
    /// The server string (nil: the environment's `PULSE_SERVER` or the default server).
    let server: String?
    /// `PulseAudio output` / `PulseAudio input`, for errors.
    let component: String
    private let threadName: String
    /// Set by the owner right after creation; it outlives the connection.
    unowned(unsafe) var owner: (any PulseConnectionOwner)?
    /// Reconnection attempts scheduled (one per backoff step while the server is away).
    let reconnectAttempts = Atomic<Int>(0)

    private(set) var mainloop: OpaquePointer?
    /// The current context (nil while lost and not reconnected yet). Main-loop lock.
    private(set) var context: OpaquePointer?
    /// True once the first connection was ready (main-loop lock).
    private(set) var established = false
    /// True while closing: nothing reconnects and failures are not reported (main-loop lock).
    private(set) var closing = false
    private var backoff = 0.1
    private var deadContexts: [OpaquePointer] = []
    private var reconnectEvent: OpaquePointer?

    init(server: String?, component: String, threadName: String) {
        self.server = server
        self.component = component
        self.threadName = threadName
    }

    private var userdata: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    /// Takes the main-loop lock.
    func lock() { pa_threaded_mainloop_lock(mainloop) }
    /// Releases the main-loop lock.
    func unlock() { pa_threaded_mainloop_unlock(mainloop) }

    /// Polls `condition` under the lock until true or `timeout` seconds; returns its last value.
    func wait(_ timeout: Double, _ condition: () -> Bool) -> Bool {
        pollWithBackoff(until: HostTime.now() + HostTime.ticks(seconds: timeout)) {
            lock()
            defer { unlock() }
            return condition()
        }
    }

    /// PulseAudio's text for the context's last error (lock held).
    var errorText: String {
        context.map { String(cString: pa_strerror(pa_context_errno($0))) } ?? "no connection"
    }

    /// True when the context is connected and ready (lock held).
    var isReady: Bool { context.map { pa_context_get_state($0) == PA_CONTEXT_READY } ?? false }

    /// Waits at most `timeout` seconds for the stream `stream()` gives (read under the lock) to
    /// become ready or fail; `gone` says whether to stop waiting when there is no stream (any
    /// more). Returns the stream's last state (unconnected when there was none).
    func waitForStream(_ timeout: Double, _ stream: () -> OpaquePointer?, gone: () -> Bool) -> pa_stream_state_t {
        var state = PA_STREAM_UNCONNECTED
        _ = wait(timeout) {
            guard let s = stream() else { return gone() }
            state = pa_stream_get_state(s)
            return state == PA_STREAM_READY || state == PA_STREAM_FAILED || state == PA_STREAM_TERMINATED
        }
        return state
    }

    /// The flags both directions connect their stream with: interpolated, automatically
    /// updated timing, latency adjusted to the buffer attributes, and corked when asked.
    static func streamFlags(corked: Bool) -> pa_stream_flags_t {
        var flags = PA_STREAM_INTERPOLATE_TIMING.rawValue | PA_STREAM_AUTO_TIMING_UPDATE.rawValue | PA_STREAM_ADJUST_LATENCY.rawValue
        if corked { flags |= PA_STREAM_START_CORKED.rawValue }
        return pa_stream_flags_t(rawValue: flags)
    }

    /// Corks (pauses) or uncorks a device's stream: the checks and the call both directions
    /// make. `device` gives, under the main-loop lock, whether the device runs and its stream;
    /// `corked` is the device's cork state (main-loop lock).
    func setCorked(_ cork: Bool, _ device: () -> (running: Bool, stream: OpaquePointer?), corked: inout Bool) throws(AudioError) {
        guard mainloop != nil else { throw AudioError(.invalidState, component: component, "device is closed") }
        lock()
        defer { unlock() }
        let (running, stream) = device()
        guard running else {
            throw AudioError(.invalidState, component: component, cork ? "pause while not running" : "resume while not running")
        }
        guard corked != cork else {
            throw AudioError(.invalidState, component: component, cork ? "already paused" : "resume while not paused")
        }
        corked = cork
        if let s = stream, pa_stream_get_state(s) == PA_STREAM_READY, let op = pa_stream_cork(s, cork ? 1 : 0, nil, nil) {
            pa_operation_unref(op)
        }
    }

    /// Starts the main loop and connects, waiting at most `timeout` seconds for the server.
    func open(timeout: Double) throws(AudioError) {
        try DeviceLibraries.requirePulseAudio(component: component)
        guard let ml = pa_threaded_mainloop_new() else {
            throw AudioError(.deviceUnavailable, component: component, "cannot create a main loop")
        }
        mainloop = ml
        pa_threaded_mainloop_set_name(ml, threadName)
        guard pa_threaded_mainloop_start(ml) >= 0 else {
            pa_threaded_mainloop_free(ml)
            mainloop = nil
            throw AudioError(.deviceUnavailable, component: component, "cannot start the main loop")
        }
        // The main-loop thread runs the stream's write/read callbacks, the device's render: it
        // runs real-time where the system allows it (ThreadPriority), like the server's threads.
        // Under the lock: libpulse creates the one-shot defer event and sets its destructor in
        // two steps, and the running main loop must not fire (and free) it in between.
        lock()
        pa_threaded_mainloop_once_unlocked(ml, { _, _ in ThreadPriority.makeCurrentThreadRealTime() }, nil)
        let failure = connectContext()
        unlock()
        if let failure {
            close()
            throw AudioError(.deviceUnavailable, component: component, "no PulseAudio server answers", underlying: failure)
        }
        var state = PA_CONTEXT_UNCONNECTED
        let done = wait(timeout) {
            state = pa_context_get_state(context)
            return state == PA_CONTEXT_READY || state == PA_CONTEXT_FAILED || state == PA_CONTEXT_TERMINATED
        }
        if state != PA_CONTEXT_READY {
            lock()
            let text = done ? String(cString: pa_strerror(pa_context_errno(context))) : "timed out after \(timeout) s"
            unlock()
            close()
            throw AudioError(.deviceUnavailable, component: component,
                             "no PulseAudio server answers\(server.map { " at \($0)" } ?? "")", underlying: text)
        }
        lock()
        established = true
        unlock()
    }

    /// Creates and connects a new context (lock held). Returns the error text on an immediate failure.
    private func connectContext() -> String? {
        let api = pa_threaded_mainloop_get_api(mainloop)
        guard let ctx = pa_context_new(api, "OpenAudioToolbox") else { return "pa_context_new failed" }
        context = ctx
        pa_context_set_state_callback(ctx, { ctx, ud in
            Unmanaged<PulseConnection>.fromOpaque(ud!)._withUnsafeGuaranteedRef { $0.contextStateChanged(ctx!) }
        }, userdata)
        if pa_context_connect(ctx, server, PA_CONTEXT_NOAUTOSPAWN, nil) < 0 {
            return String(cString: pa_strerror(pa_context_errno(ctx)))
        }
        return nil
    }

    /// Main-loop thread: the context changed state.
    private func contextStateChanged(_ ctx: OpaquePointer) {
        guard ctx == context, established else { return }
        switch pa_context_get_state(ctx) {
        case PA_CONTEXT_READY:
            guard !closing else { return }
            owner?.connectionReady()
        case PA_CONTEXT_FAILED, PA_CONTEXT_TERMINATED:
            guard !closing else { return }
            owner?.connectionFailed(String(cString: pa_strerror(pa_context_errno(ctx))))
        default:
            break
        }
    }

    /// The backoff starts again at 0.1 s (a loss, or the server is back). Lock held.
    func resetBackoff() { backoff = 0.1 }

    /// Drops the context (kept until the next attempt: PulseAudio may still call into it) and
    /// schedules a new connection after the backoff (0.1 s doubling to 2 s). Lock held.
    func reconnectLater() {
        if let ctx = context {
            pa_context_set_state_callback(ctx, nil, nil)
            pa_context_disconnect(ctx)
            deadContexts.append(ctx)
            context = nil
        }
        scheduleReconnect()
    }

    private func scheduleReconnect() {
        // One pending attempt at most: a connect that fails at once reports the failure twice
        // (the state callback, then the return value), and scheduling both doubled the timers
        // on every attempt, until the main loop spun (about 30 s after the server died).
        guard !closing, reconnectEvent == nil else { return }
        reconnectAttempts.add(1, ordering: .relaxed)
        let api = pa_threaded_mainloop_get_api(mainloop)!
        var tv = timeval()
        pa_gettimeofday(&tv)
        pa_timeval_add(&tv, pa_usec_t(backoff * 1e6))
        backoff = min(2, backoff * 2)
        reconnectEvent = api.pointee.time_new(api, &tv, { api, event, _, ud in
            api!.pointee.time_free(event)
            Unmanaged<PulseConnection>.fromOpaque(ud!)._withUnsafeGuaranteedRef { $0.reconnectTimerFired() }
        }, userdata)
    }

    private func reconnectTimerFired() {
        reconnectEvent = nil
        for ctx in deadContexts { pa_context_unref(ctx) }
        deadContexts.removeAll()
        guard !closing else { return }
        if connectContext() != nil {
            if let ctx = context {
                pa_context_set_state_callback(ctx, nil, nil)
                deadContexts.append(ctx)
                context = nil
            }
            scheduleReconnect()
        }
    }

    /// Disconnects and ends the main loop (control thread, lock not held). The owner drops its
    /// stream first.
    func close() {
        guard let ml = mainloop else { return }
        lock()
        closing = true
        if let e = reconnectEvent {
            let api = pa_threaded_mainloop_get_api(ml)!
            api.pointee.time_free(e)
            reconnectEvent = nil
        }
        if let ctx = context {
            pa_context_set_state_callback(ctx, nil, nil)
            pa_context_disconnect(ctx)
            pa_context_unref(ctx)
            context = nil
        }
        for ctx in deadContexts { pa_context_unref(ctx) }
        deadContexts.removeAll()
        unlock()
        pa_threaded_mainloop_stop(ml)
        pa_threaded_mainloop_free(ml)
        mainloop = nil
    }
}
