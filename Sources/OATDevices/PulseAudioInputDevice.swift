import OATCore
import COATPulseAudio
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Records from a PulseAudio source (the default one, a named one, or a sink's `.monitor`)
/// through the asynchronous API: a threaded main loop whose stream read callback peeks the
/// captured fragments and pushes them to the capture callback.
///
/// The stream runs at the device format as interleaved float32le (the server converts from the
/// source's format), with `fragsize` set to ``fragment`` seconds so audio arrives in small
/// pieces (low latency, a smooth level meter). Holes in the stream are delivered as silence. If
/// the server or the source goes away the device posts ``AudioDeviceEvent/lost(reason:)`` and
/// stops delivering; recording does not resume by itself (a recorder should finish its file).
///
/// Thread safety: the capture callback runs on PulseAudio's main-loop thread (the device
/// thread); control methods take the main-loop lock briefly and may be called from any one
/// control thread; counters are atomics.
public final class PulseAudioInputDevice: AudioInputDevice {
    /// `pulse:SOURCE`, or `pulse` for the default source.
    public let name: String
    /// The delivered format.
    public let format: AudioDeviceFormat
    /// Frames per fragment (the stream's `fragsize`).
    public let framesPerCapture: Int
    /// The source asked for (nil: the server's default).
    public let source: String?
    /// The fragment length asked for, in seconds.
    public let fragment: Double
    private let core: PulseInputCore

    /// Connects to `server` (nil: the default server; at most `connectTimeout` seconds) to record
    /// `source` (nil: the default source) at `format`, delivered every `fragment` seconds or so.
    ///
    /// Throws ``AudioError/Code/deviceUnavailable`` with PulseAudio's error text when no server
    /// answers.
    public init(format: AudioDeviceFormat, source: String? = nil, server: String? = nil,
                fragment: Double = 0.02, connectTimeout: Double = 2) throws(AudioError) {
        guard format.channels >= 1, format.channels <= Int(PA_CHANNELS_MAX), format.sampleRate >= 1,
              format.sampleRate <= Double(PA_RATE_MAX), format.sampleRate == format.sampleRate.rounded() else {
            throw AudioError(.invalidArgument, component: "PulseAudio input", "unsupported format \(format)")
        }
        self.format = format
        self.source = source
        self.fragment = max(0.002, fragment)
        name = source.map { "pulse:\($0)" } ?? "pulse"
        framesPerCapture = max(32, Int(self.fragment * format.sampleRate))
        core = PulseInputCore(format: format, source: source, server: server, fragmentFrames: framesPerCapture)
        try core.open(timeout: connectTimeout)
    }

    deinit { core.close() }

    /// The stream's measured latency once recording, the fragment length before.
    public var latency: Double { core.latencySeconds }
    /// Frames delivered.
    public var capturedFrames: Int64 { core.captured.load(ordering: .acquiring) }
    /// True after the server or source went away.
    public var isLost: Bool { core.lostFlag.load(ordering: .acquiring) }

    /// Creates the record stream and starts delivering to `capture`; throws when the source
    /// does not exist or refuses the format.
    public func start(_ capture: @escaping AudioCaptureCallback) throws(AudioError) { try core.start(capture) }
    /// Corks the stream (the server stops sending; what it captures meanwhile is not kept).
    public func pause() throws(AudioError) { try core.setCorked(true) }
    /// Uncorks the stream.
    public func resume() throws(AudioError) { try core.setCorked(false) }
    /// Disconnects the stream; the callback is not called after this returns.
    public func stop() { core.stop() }
    /// Disconnects and ends the main loop.
    public func close() { core.close() }
    /// Takes pending events.
    public func takeEvents() -> [AudioDeviceEvent] { core.events.take() }
    /// Events dropped.
    public var droppedEventCount: Int { core.events.droppedCount }

    /// Lists the server's sources, monitors included (connecting for the call).
    public static func listSources(server: String? = nil, timeout: Double = 2) throws(AudioError) -> [AudioInputDeviceInfo] {
        try PulseQuery.listSources(server: server, timeout: timeout)
    }

    /// The volume of source `name` (nil: the default source) as a fraction of PulseAudio's
    /// normal volume (1 = 100 %), its channels averaged; nil when the server has no such source.
    public static func sourceVolume(_ name: String? = nil, server: String? = nil, timeout: Double = 2) throws(AudioError) -> Double? {
        try PulseQuery.sourceVolume(name, server: server, timeout: timeout)?.volume
    }

    /// Sets every channel of source `name` (nil: the default source) to `fraction` of
    /// PulseAudio's normal volume (what `pactl set-source-volume NAME 50%` does for 0.5). Throws
    /// when the server has no such source or refuses.
    public static func setSourceVolume(_ name: String? = nil, to fraction: Double, server: String? = nil, timeout: Double = 2) throws(AudioError) {
        guard fraction.isFinite, fraction >= 0 else {
            throw AudioError(.invalidArgument, component: "PulseAudio", "source volume \(fraction) is not a fraction >= 0")
        }
        guard let source = try PulseQuery.sourceVolume(name, server: server, timeout: timeout) else {
            throw AudioError(.deviceUnavailable, component: "PulseAudio", "no source \(name ?? "(default)")")
        }
        try PulseQuery.setSourceVolume(source.name, fraction: fraction, channels: source.channels, server: server, timeout: timeout)
    }
}

/// State shared between the control side (under the main-loop lock) and PulseAudio's main-loop
/// thread (callbacks run with that lock held).
private final class PulseInputCore: PulseConnectionOwner, @unchecked Sendable {
    let format: AudioDeviceFormat
    let source: String?
    let server: String?
    let fragmentFrames: Int
    let frameBytes: Int
    let events = AudioDeviceEventQueue()
    let captured = Atomic<Int64>(0)
    let latencyMicros = Atomic<UInt64>(0)
    let lostFlag = Atomic<Bool>(false)
    /// Zeros delivered for holes in the stream (allocated once).
    private let zeros: UnsafeMutableBufferPointer<Float>

    /// The server connection (shared with the output device); recording does not reconnect.
    let connection: PulseConnection
    private var mainloop: OpaquePointer? { connection.mainloop }
    private var context: OpaquePointer? { connection.context }
    private var stream: OpaquePointer?
    private var capture: AudioCaptureCallback?
    private var closing: Bool { connection.closing }
    private var stopping = false
    private var corked = false
    private var startFailure: String?

    init(format: AudioDeviceFormat, source: String?, server: String?, fragmentFrames: Int) {
        self.format = format
        self.source = source
        self.server = server
        self.fragmentFrames = fragmentFrames
        connection = PulseConnection(server: server, component: "PulseAudio input", threadName: "oat-pulse-in")
        frameBytes = 4 * format.channels
        zeros = .allocate(capacity: fragmentFrames * format.channels)
        zeros.initialize(repeating: 0)
        latencyMicros.store(UInt64(Double(fragmentFrames) / format.sampleRate * 1e6), ordering: .relaxed)
    }

    deinit { zeros.deallocate() }

    var latencySeconds: Double { Double(latencyMicros.load(ordering: .relaxed)) / 1e6 }
    private var userdata: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }
    private func lock() { connection.lock() }
    private func unlock() { connection.unlock() }
    private func wait(_ timeout: Double, _ condition: () -> Bool) -> Bool { connection.wait(timeout, condition) }

    func open(timeout: Double) throws(AudioError) {
        connection.owner = self
        try connection.open(timeout: timeout)
    }

    // MARK: Callbacks (main-loop thread, lock held)

    /// Recording does not reconnect, so the context never comes back.
    func connectionReady() {}

    func connectionFailed(_ reason: String) { lost(reason) }

    private func lost(_ reason: String) {
        guard !lostFlag.load(ordering: .relaxed) else { return }
        lostFlag.store(true, ordering: .releasing)
        events.post(.lost(reason: reason))
    }

    private func streamStateChanged(_ s: OpaquePointer) {
        guard s == stream, !closing, !stopping else { return }
        switch pa_stream_get_state(s) {
        case PA_STREAM_READY:
            events.post(.started)
        case PA_STREAM_FAILED, PA_STREAM_TERMINATED:
            let text = context.map { String(cString: pa_strerror(pa_context_errno($0))) } ?? "stream failed"
            if capture != nil && captured.load(ordering: .relaxed) == 0 && startFailure == nil {
                startFailure = text
            }
            lost("the record stream ended: \(text)")
        default:
            break
        }
    }

    /// Data is ready: peek each fragment, hand it to the callback, drop it (no allocation).
    private func readable(_ s: OpaquePointer) {
        guard s == stream, !stopping, let capture else { return }
        let channels = format.channels
        while pa_stream_readable_size(s) > 0 {
            var data: UnsafeRawPointer?
            var nbytes = 0
            guard pa_stream_peek(s, &data, &nbytes) >= 0 else { break }
            if nbytes == 0 { break } // nothing (data nil, size 0)
            var frames = nbytes / frameBytes
            var offset = 0
            var usec: pa_usec_t = 0
            var negative: Int32 = 0
            if pa_stream_get_latency(s, &usec, &negative) >= 0 {
                latencyMicros.store(negative != 0 ? 0 : usec, ordering: .relaxed)
            }
            let now = HostTime.now()
            while frames > 0 {
                let done = captured.load(ordering: .relaxed)
                let chunk = data == nil ? min(frames, fragmentFrames) : frames
                let behind = latencyMicros.load(ordering: .relaxed) &* 1000
                    &+ UInt64(Double(frames) / format.sampleRate * 1e9)
                let time = AudioTimeStamp(sampleTime: Double(done), hostTime: now > behind ? now - behind : 0,
                                          rateScalar: 1, flags: .sampleHostTimeValid)
                if let data {
                    let p = (data + offset).assumingMemoryBound(to: Float.self)
                    capture(UnsafeBufferPointer(start: p, count: chunk * channels), chunk, time)
                } else {
                    capture(UnsafeBufferPointer(rebasing: zeros[0..<(chunk * channels)]), chunk, time)
                }
                captured.store(done + Int64(chunk), ordering: .releasing)
                offset += chunk * frameBytes
                frames -= chunk
            }
            pa_stream_drop(s)
        }
    }

    private func overflow(_ s: OpaquePointer) {
        guard s == stream else { return }
        events.post(.underrun(frames: fragmentFrames))
    }

    // MARK: Control side

    func start(_ capture: @escaping AudioCaptureCallback) throws(AudioError) {
        guard let ml = mainloop else { throw AudioError(.invalidState, component: "PulseAudio input", "device is closed") }
        _ = ml
        lock()
        guard self.capture == nil, let ctx = context, pa_context_get_state(ctx) == PA_CONTEXT_READY else {
            let started = self.capture != nil
            unlock()
            throw started ? AudioError(.invalidState, component: "PulseAudio input", "already started")
                : AudioError(.deviceUnavailable, component: "PulseAudio input", "the server connection is gone")
        }
        self.capture = capture
        stopping = false
        startFailure = nil
        var spec = pa_sample_spec(format: PA_SAMPLE_FLOAT32LE, rate: UInt32(format.sampleRate), channels: UInt8(format.channels))
        guard let s = pa_stream_new(ctx, "OpenAudioToolbox recording", &spec, nil) else {
            let text = String(cString: pa_strerror(pa_context_errno(ctx)))
            self.capture = nil
            unlock()
            throw AudioError(.deviceUnavailable, component: "PulseAudio input", "cannot create the record stream", underlying: text)
        }
        stream = s
        let ud = userdata
        pa_stream_set_state_callback(s, { s, ud in
            Unmanaged<PulseInputCore>.fromOpaque(ud!)._withUnsafeGuaranteedRef { $0.streamStateChanged(s!) }
        }, ud)
        pa_stream_set_read_callback(s, { s, _, ud in
            Unmanaged<PulseInputCore>.fromOpaque(ud!)._withUnsafeGuaranteedRef { $0.readable(s!) }
        }, ud)
        pa_stream_set_overflow_callback(s, { s, ud in
            Unmanaged<PulseInputCore>.fromOpaque(ud!)._withUnsafeGuaranteedRef { $0.overflow(s!) }
        }, ud)
        var attr = pa_buffer_attr(maxlength: UInt32.max, tlength: UInt32.max, prebuf: UInt32.max, minreq: UInt32.max,
                                  fragsize: UInt32(fragmentFrames * frameBytes))
        let connect = pa_stream_connect_record(s, source, &attr, PulseConnection.streamFlags(corked: corked))
        unlock()
        var state = PA_STREAM_UNCONNECTED
        if connect >= 0 {
            state = connection.waitForStream(5, { stream }, gone: { true })
        }
        if state != PA_STREAM_READY {
            lock()
            let text = startFailure ?? context.map { String(cString: pa_strerror(pa_context_errno($0))) } ?? "stream failed"
            stopping = true
            dropStream()
            self.capture = nil
            lostFlag.store(false, ordering: .releasing)
            _ = events.take()
            unlock()
            throw AudioError(.deviceUnavailable, component: "PulseAudio input",
                             "cannot record from \(source.map { "source \($0)" } ?? "the default source")", underlying: text)
        }
    }

    /// Disconnects and releases the stream (lock held).
    private func dropStream() {
        guard let s = stream else { return }
        pa_stream_set_state_callback(s, nil, nil)
        pa_stream_set_read_callback(s, nil, nil)
        pa_stream_set_overflow_callback(s, nil, nil)
        pa_stream_disconnect(s)
        pa_stream_unref(s)
        stream = nil
    }

    func setCorked(_ cork: Bool) throws(AudioError) {
        try connection.setCorked(cork, { (capture != nil && !stopping, stream) }, corked: &corked)
    }

    func stop() {
        guard mainloop != nil else { return }
        lock()
        stopping = true
        dropStream()
        capture = nil
        corked = false
        unlock()
    }

    func close() {
        guard mainloop != nil else { return }
        stop()
        connection.close()
    }
}
