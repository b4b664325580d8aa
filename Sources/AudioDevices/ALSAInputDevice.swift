import AudioCore
import CALSA
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Records from an ALSA capture PCM (`default`, `hw:N`, `plughw:N,M`, `pulse`) on its own device
/// thread, which reads one period at a time with `snd_pcm_readi` (blocking, so the PCM paces the
/// thread) and pushes it to the capture callback.
///
/// The PCM is opened as interleaved float32 when it takes it, else int16 (converted to float on
/// the device thread). Overruns (the thread was late and the PCM's buffer filled) are recovered
/// with `snd_pcm_recover` and posted as ``AudioDeviceEvent/underrun(frames:)`` (Apple calls it a
/// record underrun); an unrecoverable error (the device went away) is posted as
/// ``AudioDeviceEvent/lost(reason:)`` and capturing ends.
///
/// Thread safety: the capture callback runs on the device thread; control methods may be called
/// from any one control thread (they set atomics and join); counters are atomics.
public final class ALSAInputDevice: AudioInputDevice {
    /// `alsa:PCM`.
    public let name: String
    /// The PCM name.
    public let device: String
    /// The delivered format (the rate is what the PCM accepted).
    public let format: AudioDeviceFormat
    /// Frames per read (the ALSA period).
    public let framesPerCapture: Int
    /// Frames the PCM buffers.
    public let bufferFrames: Int
    /// The sample format read from the PCM.
    public let sampleFormat: ALSASampleFormat
    /// One period, in seconds (the time from capture to delivery is about that).
    public var latency: Double { Double(framesPerCapture) / format.sampleRate }
    /// Frames delivered.
    public var capturedFrames: Int64 { captured.load(ordering: .acquiring) }

    nonisolated(unsafe) private var pcm: OpaquePointer?
    nonisolated(unsafe) private var config: OpaquePointer?
    private let captured = Atomic<Int64>(0)
    private let state = DeviceRun()
    private let closed = Atomic<Bool>(false)
    private let events = AudioDeviceEventQueue()
    private let thread = Locked<JoinableThread?>(nil)
    // Used only by the device thread.
    nonisolated(unsafe) private let floats: UnsafeMutableBufferPointer<Float>
    nonisolated(unsafe) private let int16s: UnsafeMutableBufferPointer<Int16>

    /// Opens `device` for capture at `format` with a period of about `periodFrames` and
    /// `periods` periods of buffer. Throws ``AudioError/Code/deviceUnavailable`` when the PCM
    /// cannot be opened for capture, ``AudioError/Code/unsupportedFormat`` when it refuses the
    /// format.
    ///
    /// `configText` is ALSA configuration loaded on top of the system one for this PCM only (as
    /// for ``ALSAOutputDevice``), e.g. a `file` PCM whose `infile` supplies the captured data.
    public init(device: String = "default", format: AudioDeviceFormat, periodFrames: Int = 512, periods: Int = 8,
                configText: String? = nil) throws(AudioError) {
        guard format.channels >= 1, format.channels <= 64, format.sampleRate >= 1, format.sampleRate <= 1_000_000 else {
            throw AudioError(.invalidArgument, component: "ALSA input", "unsupported format \(format)")
        }
        self.device = device
        name = "alsa:\(device)"
        let previousHandler = snd_lib_error_set_local { _, _, _, _, _, _ in }
        defer { snd_lib_error_set_local(previousHandler) }
        var handle: OpaquePointer?
        var top: OpaquePointer?
        var err: Int32
        if let configText {
            var update: OpaquePointer?
            err = snd_config_update_r(&top, &update, nil)
            if update != nil { snd_config_update_free(update) }
            if err >= 0, let t = top {
                var input: OpaquePointer?
                err = snd_input_buffer_open(&input, configText, configText.utf8.count)
                if err >= 0, let input {
                    err = snd_config_load(t, input)
                    snd_input_close(input)
                }
                if err >= 0 { err = snd_pcm_open_lconf(&handle, device, SND_PCM_STREAM_CAPTURE, 0, t) }
            }
        } else {
            err = snd_pcm_open(&handle, device, SND_PCM_STREAM_CAPTURE, 0)
        }
        guard err >= 0, let handle else {
            if let top { snd_config_delete(top) }
            throw AudioError(.deviceUnavailable, component: "ALSA input", "cannot open capture PCM \(device)", underlying: String(cString: snd_strerror(err)))
        }
        let config = top
        func check(_ err: Int32, _ what: String) throws(AudioError) {
            if err < 0 {
                snd_pcm_close(handle)
                if let config { snd_config_delete(config) }
                throw AudioError(.unsupportedFormat, component: "ALSA input", "\(device): cannot set \(what)", underlying: String(cString: snd_strerror(err)))
            }
        }
        var hw: OpaquePointer?
        try check(snd_pcm_hw_params_malloc(&hw), "hardware parameters")
        defer { snd_pcm_hw_params_free(hw) }
        try check(snd_pcm_hw_params_any(handle, hw), "hardware parameters")
        try check(snd_pcm_hw_params_set_access(handle, hw, SND_PCM_ACCESS_RW_INTERLEAVED), "interleaved access")
        var sample = ALSASampleFormat.float32
        if snd_pcm_hw_params_set_format(handle, hw, SND_PCM_FORMAT_FLOAT_LE) < 0 {
            try check(snd_pcm_hw_params_set_format(handle, hw, SND_PCM_FORMAT_S16_LE), "a float32 or int16 sample format")
            sample = .int16
        }
        try check(snd_pcm_hw_params_set_channels(handle, hw, UInt32(format.channels)), "\(format.channels) channels")
        var rate = UInt32(format.sampleRate)
        var dir: Int32 = 0
        try check(snd_pcm_hw_params_set_rate_near(handle, hw, &rate, &dir), "rate \(Int(format.sampleRate))")
        var period = snd_pcm_uframes_t(max(32, periodFrames))
        dir = 0
        try check(snd_pcm_hw_params_set_period_size_near(handle, hw, &period, &dir), "period size \(periodFrames)")
        var buffer = snd_pcm_uframes_t(max(2, periods)) * period
        try check(snd_pcm_hw_params_set_buffer_size_near(handle, hw, &buffer), "buffer size")
        try check(snd_pcm_hw_params(handle, hw), "hardware parameters")
        dir = 0
        snd_pcm_hw_params_get_period_size(hw, &period, &dir)
        snd_pcm_hw_params_get_buffer_size(hw, &buffer)
        pcm = handle
        self.config = config
        sampleFormat = sample
        self.format = AudioDeviceFormat(sampleRate: Double(rate), channels: format.channels)
        framesPerCapture = Int(period)
        bufferFrames = Int(buffer)
        floats = .allocate(capacity: Int(period) * format.channels)
        floats.initialize(repeating: 0)
        int16s = .allocate(capacity: Int(period) * format.channels)
        int16s.initialize(repeating: 0)
    }

    deinit {
        close()
        floats.deallocate()
        int16s.deallocate()
    }

    /// Starts the device thread reading into `capture`.
    public func start(_ capture: @escaping AudioCaptureCallback) throws(AudioError) {
        guard !closed.load(ordering: .acquiring) else { throw AudioError(.invalidState, component: "ALSA input", "device is closed") }
        guard state.move(from: .idle, to: .running) else {
            throw AudioError(.invalidState, component: "ALSA input", "already started")
        }
        if let pcm { snd_pcm_prepare(pcm); snd_pcm_start(pcm) }
        do {
            let t = try JoinableThread(name: "oat-alsa-in") { [self] in run(capture) }
            thread.withLock { $0 = t }
        } catch {
            state.finish()
            throw error
        }
    }

    // MARK: Device thread

    private func run(_ capture: AudioCaptureCallback) {
        guard let pcm else { return }
        events.post(.started)
        let channels = format.channels
        let period = framesPerCapture
        var wasPaused = false
        while true {
            let s = state.current
            if s.isEnding { break }
            if s == .paused {
                if !wasPaused { wasPaused = true; snd_pcm_drop(pcm) }
                sleepUntil(hostTime: HostTime.now() + 2_000_000)
                continue
            }
            if wasPaused {
                wasPaused = false
                snd_pcm_prepare(pcm)
                snd_pcm_start(pcm)
            }
            let n: Int
            switch sampleFormat {
            case .float32: n = snd_pcm_readi(pcm, floats.baseAddress, snd_pcm_uframes_t(period))
            case .int16: n = snd_pcm_readi(pcm, int16s.baseAddress, snd_pcm_uframes_t(period))
            }
            if n < 0 {
                let err = Int32(n)
                if err == -EAGAIN || err == -EINTR { continue }
                if (err == -EPIPE || err == -ESTRPIPE), snd_pcm_recover(pcm, err, 1) == 0 {
                    events.post(.underrun(frames: bufferFrames))
                    snd_pcm_start(pcm)
                    continue
                }
                events.post(.lost(reason: String(cString: snd_strerror(err))))
                break
            }
            guard n > 0 else { continue }
            if sampleFormat == .int16 {
                for i in 0..<(n * channels) { floats[i] = Float(int16s[i]) / 32768 }
            }
            let done = captured.load(ordering: .relaxed)
            var delay: snd_pcm_sframes_t = 0
            if snd_pcm_delay(pcm, &delay) < 0 { delay = 0 }
            let behind = UInt64(Double(max(0, delay) + n) / format.sampleRate * 1e9)
            let now = HostTime.now()
            let time = AudioTimeStamp(sampleTime: Double(done), hostTime: now > behind ? now - behind : 0, rateScalar: 1,
                                      flags: .sampleHostTimeValid)
            capture(UnsafeBufferPointer(rebasing: floats[0..<(n * channels)]), n, time)
            captured.store(done + Int64(n), ordering: .releasing)
        }
        snd_pcm_drop(pcm)
        state.finish()
    }

    // MARK: Control

    /// Pauses (the PCM is stopped; what it would capture meanwhile is not kept).
    public func pause() throws(AudioError) {
        guard state.move(from: .running, to: .paused) else {
            throw AudioError(.invalidState, component: "ALSA input", "pause while not running")
        }
    }

    /// Resumes after a pause.
    public func resume() throws(AudioError) {
        guard state.move(from: .paused, to: .running) else {
            throw AudioError(.invalidState, component: "ALSA input", "resume while not paused")
        }
    }

    /// Stops the device thread (at most one period of waiting).
    public func stop() {
        state.requestStop()
        let t = thread.withLock { t -> JoinableThread? in defer { t = nil }; return t }
        t?.join()
    }

    /// Stops and closes the PCM.
    public func close() {
        stop()
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        if let pcm { snd_pcm_close(pcm) }
        if let config { snd_config_delete(config) }
        pcm = nil
        config = nil
    }

    /// Takes pending events.
    public func takeEvents() -> [AudioDeviceEvent] { events.take() }
    /// Events dropped.
    public var droppedEventCount: Int { events.droppedCount }

    /// Lists the PCMs ALSA's configuration and cards offer for capture (`snd_device_name_hint`).
    public static func listDevices() -> [AudioInputDeviceInfo] {
        var hints: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
        guard snd_device_name_hint(-1, "pcm", &hints) == 0, let hints else { return [] }
        defer { snd_device_name_free_hint(hints) }
        func take(_ p: UnsafeMutablePointer<CChar>?) -> String? {
            guard let p else { return nil }
            defer { free(p) }
            return String(cString: p)
        }
        var out: [AudioInputDeviceInfo] = []
        var i = 0
        while let hint = hints[i] {
            i += 1
            let ioid = take(snd_device_name_get_hint(hint, "IOID"))
            guard ioid == nil || ioid == "Input", let name = take(snd_device_name_get_hint(hint, "NAME")) else { continue }
            let text = (take(snd_device_name_get_hint(hint, "DESC")) ?? "").split(separator: "\n").joined(separator: ", ")
            out.append(AudioInputDeviceInfo(spec: .alsa(device: name), description: text))
        }
        return out
    }
}
