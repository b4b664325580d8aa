import OATCore
import COATPulseAudio
import Synchronization

/// Watches a PulseAudio server for device changes: sinks and sources appearing or going, and the
/// server's defaults changing (PulseAudio's subscription events, `pa_context_subscribe`).
///
/// The watcher runs its own thread with its own main loop. Events come in bursts (loading a
/// module adds a sink and its monitor source, then the server changes); they are gathered for
/// `settle` seconds and reported with one call of `onChange`, on the watcher's thread, with no
/// lock held. What changed is for the caller to find out (list the devices again): the events
/// say only that something did. When the server goes away, `onChange` is called once more and
/// the watcher ends (``isRunning`` becomes false).
///
/// Thread safety: ``stop()`` from any thread except inside `onChange`.
public final class PulseAudioDeviceWatcher: @unchecked Sendable {
    private final class Shared: @unchecked Sendable {
        /// Set by the subscription callback (on the watcher's thread).
        var pending = false
        let stopRequested = Atomic<Bool>(false)
        let running = Atomic<Bool>(true)
        /// The main loop while it exists (to wake it for stop).
        let mainloop = Locked<UInt?>(nil)
        /// How connecting went.
        let outcome = Locked<Outcome>(.connecting)
    }

    private enum Outcome { case connecting, watching, failed(AudioError) }

    private let shared = Shared()
    private let thread = Locked<JoinableThread?>(nil)

    /// Connects to `server` (nil: the environment's `PULSE_SERVER` or the default server),
    /// subscribes to sink, source and server events, and calls `onChange` after each burst.
    /// Throws ``AudioError/Code/deviceUnavailable`` when no server answers within `timeout`.
    public init(server: String? = nil, timeout: Double = 2, settle: Double = 0.05,
                onChange: @escaping @Sendable () -> Void) throws(AudioError) {
        let shared = self.shared
        let body: @Sendable () -> Void = {
            Self.run(server: server, timeout: timeout, settle: settle, shared: shared, onChange: onChange)
        }
        let t = try JoinableThread(name: "oat-pulse-watch", body)
        let deadline = HostTime.now() + HostTime.ticks(seconds: timeout + 1)
        var outcome = Outcome.connecting
        while HostTime.now() < deadline {
            outcome = shared.outcome.withLock { $0 }
            if case .connecting = outcome { usleepCompat(2000) } else { break }
        }
        switch outcome {
        case .connecting:
            stopThread(t)
            throw AudioError(.deviceUnavailable, component: "PulseAudio", "the device watcher did not connect within \(timeout) s")
        case .failed(let error):
            t.join()
            throw error
        case .watching: break
        }
        thread.withLock { $0 = t }
    }

    deinit { stop() }

    /// True while the watcher is connected and watching.
    public var isRunning: Bool { shared.running.load(ordering: .acquiring) }

    /// Stops watching and waits for the watcher's thread to end. No `onChange` call starts after
    /// it returns.
    public func stop() {
        guard let t = thread.withLock({ t -> JoinableThread? in defer { t = nil }; return t }) else { return }
        stopThread(t)
    }

    private func stopThread(_ t: JoinableThread) {
        shared.stopRequested.store(true, ordering: .releasing)
        shared.mainloop.withLock { m in
            if let m, let ml = OpaquePointer(bitPattern: m) { pa_mainloop_wakeup(ml) }
        }
        t.join()
    }

    private static func run(server: String?, timeout: Double, settle: Double, shared: Shared, onChange: @Sendable () -> Void) {
        defer { shared.running.store(false, ordering: .releasing) }
        func fail(_ text: String, _ underlying: String? = nil) {
            shared.outcome.withLock { $0 = .failed(AudioError(.deviceUnavailable, component: "PulseAudio", text, underlying: underlying)) }
        }
        if let why = DeviceLibraries.pulseAudioLoadError { fail("PulseAudio is not available", why); return }
        guard let ml = pa_mainloop_new() else { fail("cannot create a main loop"); return }
        shared.mainloop.withLock { $0 = UInt(bitPattern: Int(bitPattern: ml)) }
        defer {
            shared.mainloop.withLock { $0 = nil }
            pa_mainloop_free(ml)
        }
        guard let ctx = pa_context_new(pa_mainloop_get_api(ml), "OpenAudioToolbox device watcher") else { fail("cannot create a context"); return }
        defer { pa_context_disconnect(ctx); pa_context_unref(ctx) }
        let ud = Unmanaged.passUnretained(shared).toOpaque()
        /// One main-loop iteration waiting at most `milliseconds`; false when the loop failed.
        func step(_ milliseconds: Int32) -> Bool {
            if pa_mainloop_prepare(ml, milliseconds * 1000) < 0 { return false }
            if pa_mainloop_poll(ml) < 0 { return false }
            return pa_mainloop_dispatch(ml) >= 0
        }
        if pa_context_connect(ctx, server, PA_CONTEXT_NOAUTOSPAWN, nil) < 0 {
            fail("no PulseAudio server answers\(server.map { " at \($0)" } ?? "")", String(cString: pa_strerror(pa_context_errno(ctx))))
            return
        }
        let deadline = HostTime.now() + HostTime.ticks(seconds: timeout)
        while pa_context_get_state(ctx) != PA_CONTEXT_READY {
            let state = pa_context_get_state(ctx)
            if state == PA_CONTEXT_FAILED || state == PA_CONTEXT_TERMINATED || HostTime.now() > deadline
                || shared.stopRequested.load(ordering: .acquiring) || !step(50) {
                fail("no PulseAudio server answers\(server.map { " at \($0)" } ?? "")", String(cString: pa_strerror(pa_context_errno(ctx))))
                return
            }
        }
        pa_context_set_subscribe_callback(ctx, { _, type, _, ud in
            let facility = type.rawValue & PA_SUBSCRIPTION_EVENT_FACILITY_MASK.rawValue
            guard facility == PA_SUBSCRIPTION_EVENT_SINK.rawValue || facility == PA_SUBSCRIPTION_EVENT_SOURCE.rawValue
                    || facility == PA_SUBSCRIPTION_EVENT_SERVER.rawValue else { return }
            Unmanaged<Shared>.fromOpaque(ud!).takeUnretainedValue().pending = true
        }, ud)
        let mask = pa_subscription_mask_t(rawValue: PA_SUBSCRIPTION_MASK_SINK.rawValue | PA_SUBSCRIPTION_MASK_SOURCE.rawValue
                                          | PA_SUBSCRIPTION_MASK_SERVER.rawValue)
        if let op = pa_context_subscribe(ctx, mask, nil, nil) { pa_operation_unref(op) }
        shared.outcome.withLock { $0 = .watching }
        let settleTicks = HostTime.ticks(seconds: settle)
        var burstEnd: UInt64?
        while !shared.stopRequested.load(ordering: .acquiring) {
            let state = pa_context_get_state(ctx)
            guard state == PA_CONTEXT_READY, step(burstEnd == nil ? 500 : 10) else {
                // The server went away: one last report (its devices are gone), then end.
                if !shared.stopRequested.load(ordering: .acquiring) { onChange() }
                return
            }
            if shared.pending {
                shared.pending = false
                burstEnd = HostTime.now() + settleTicks
            }
            if let end = burstEnd, HostTime.now() >= end {
                burstEnd = nil
                if !shared.stopRequested.load(ordering: .acquiring) { onChange() }
            }
        }
    }
}

#if canImport(Glibc)
import Glibc
#endif

@inline(__always) private func usleepCompat(_ microseconds: UInt32) { usleep(microseconds) }
