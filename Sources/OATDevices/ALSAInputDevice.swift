import OATCore
import COATALSA
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

    private let pcm: PCMHandle
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
        let period = max(32, periodFrames)
        let (handle, actual) = try PCMHandle.open(device, stream: SND_PCM_STREAM_CAPTURE, configText: configText, format: format,
                                                  preferred: .float32, period: period, buffer: max(2, periods) * period)
        pcm = handle
        sampleFormat = actual.sampleFormat
        self.format = AudioDeviceFormat(sampleRate: Double(actual.rate), channels: format.channels)
        framesPerCapture = actual.period
        bufferFrames = actual.buffer
        floats = .allocate(capacity: actual.period * format.channels)
        floats.initialize(repeating: 0)
        int16s = .allocate(capacity: actual.period * format.channels)
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
        if let pcm = pcm.pcm { snd_pcm_prepare(pcm); snd_pcm_start(pcm) }
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
        // A capture thread: real-time where the system allows it (ThreadPriority).
        ThreadPriority.makeCurrentThreadRealTime()
        let handle = self.pcm
        guard let pcm = handle.pcm else { return }
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
                if handle.recover(err) {
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
        pcm.close()
    }

    /// Takes pending events.
    public func takeEvents() -> [AudioDeviceEvent] { events.take() }
    /// Events dropped.
    public var droppedEventCount: Int { events.droppedCount }

    /// Lists the PCMs ALSA's configuration and cards offer for capture (`snd_device_name_hint`).
    public static func listDevices() -> [AudioInputDeviceInfo] {
        PCMHandle.nameHints(direction: "Input").map {
            AudioInputDeviceInfo(spec: .alsa(device: $0.name), description: $0.description.split(separator: "\n").joined(separator: ", "))
        }
    }
}
