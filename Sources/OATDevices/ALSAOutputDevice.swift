import OATCore
import COATALSA
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// An ALSA PCM as `snd_device_name_hint` lists it.
public struct ALSADeviceInfo: Hashable, Sendable {
    /// The PCM name to open (`default`, `hw:CARD=...,DEV=0`, `pulse`, `null`...).
    public var name: String
    /// The description (may span lines).
    public var description: String
}

/// The sample format an ``ALSAOutputDevice`` writes.
public enum ALSASampleFormat: String, Hashable, Sendable {
    /// 32-bit float, little endian.
    case float32
    /// 16-bit signed integer, little endian (clamped, rounded to nearest).
    case int16
}

/// Plays to an ALSA PCM (`default`, `hw:N`, `plughw:N,M`, `pulse`, `null`, `file:...`) from its
/// own device thread, which calls the render callback one period at a time and writes it with
/// `snd_pcm_writei` (blocking, so the PCM paces the thread).
///
/// Underruns are recovered with `snd_pcm_recover` and posted as ``AudioDeviceEvent/underrun(frames:)``;
/// a PCM that goes away (`-ENODEV`) is posted as ``AudioDeviceEvent/lost(reason:)`` and reopened every
/// half second until it comes back (``AudioDeviceEvent/restored``) or the device is stopped.
/// A PCM whose chain ends in ALSA's `null` PCM (`null`, a `file` PCM over it, a `plug` over
/// those) is not real time (``isClockless``): the device then runs as fast as writes go, unless
/// ``pacesClocklessPCM`` makes the wall clock pace it.
///
/// Thread safety: the render callback runs on the device thread; control methods may be called
/// from any one control thread (they only set atomics and join); counters are atomics.
public final class ALSAOutputDevice: AudioOutputDevice {
    /// `alsa:PCM`.
    public let name: String
    /// The PCM name.
    public let device: String
    /// The device format (the rate is what the PCM accepted, normally the one asked for).
    public let format: AudioDeviceFormat
    /// Frames per render call (the ALSA period).
    public let framesPerRender: Int
    /// Frames the PCM buffers (the ALSA buffer size).
    public let bufferFrames: Int
    /// The sample format written to the PCM.
    public let sampleFormat: ALSASampleFormat
    /// True when the PCM took the format's ``AudioDeviceFormat/channelLabels`` as its channel
    /// map (hardware PCMs with `set_chmap`); false when none was given or the PCM has no
    /// settable map (its channels then play in its own order for the count).
    public let hasChannelMap: Bool
    /// False for a PCM that takes data as fast as it comes (``isClockless``) and is not paced
    /// by the wall clock (``pacesClocklessPCM``): a short render is then written as it is (the
    /// device calls again) instead of being padded with silence, which would put gaps into a
    /// `file` PCM's output.
    public var isRealTime: Bool { !isClockless || pacing.load(ordering: .relaxed) }
    /// True when the PCM's chain ends in ALSA's `null` PCM (`null`; a `file` PCM over `null`; a
    /// `plug`, `rate` or `file` PCM over those): nothing downstream paces the writes. Read from
    /// the chain `snd_pcm_dump` describes, so a `plug` over `file` over `null` counts too.
    public let isClockless: Bool
    /// Set before ``start(_:)``: a clockless PCM (``isClockless``) is paced by the wall clock,
    /// as a sound card paces its writes (the device thread keeps at most ``bufferFrames`` ahead
    /// of the time since it started, again after a pause or a flush): the frames rendered track
    /// real time and the device is real time (``isRealTime``). No effect on other PCMs.
    public var pacesClocklessPCM: Bool {
        get { pacing.load(ordering: .relaxed) && isClockless }
        set { pacing.store(newValue && isClockless, ordering: .relaxed) }
    }
    private let pacing = Atomic<Bool>(false)
    /// Buffered time: the PCM delay once running, the buffer size before.
    public var latency: Double {
        let d = delayFrames.load(ordering: .relaxed)
        return Double(d >= 0 ? d : Int64(bufferFrames)) / format.sampleRate
    }
    /// Frames played: rendered frames minus the PCM's delay.
    public var playedFrames: Int64 { played.load(ordering: .acquiring) }
    /// Frames rendered.
    public var renderedFrames: Int64 { rendered.load(ordering: .acquiring) }

    private let pcm: PCMHandle
    private let configText: String?
    private let requested: (period: Int, buffer: Int)
    private let rendered = Atomic<Int64>(0)
    private let played = Atomic<Int64>(0)
    private let delayFrames = Atomic<Int64>(-1)
    private let state = DeviceRun()
    private let drainOnStop = Atomic<Bool>(false)
    /// Flushes asked for (control) and done (device thread).
    private let flushesAsked = Atomic<Int>(0)
    private let flushesDone = Atomic<Int>(0)
    private let flushesResumed = Atomic<Int>(0)
    /// Frames rendered that a flush dropped before they played (device thread).
    private let droppedFrames = Atomic<Int64>(0)
    private let events = AudioDeviceEventQueue()
    private let thread = Locked<JoinableThread?>(nil)
    private let buffers: RenderBuffers
    // Written only by the device thread.
    nonisolated(unsafe) private let int16Buffer: UnsafeMutableBufferPointer<Int16>

    /// Opens `device` and configures it for `format` as interleaved `preferredSampleFormat`
    /// (falling back to the other format), with a period of about `period` seconds (the default
    /// is 1024 frames at 44.1 kHz, 23 ms, the same time at every rate) and `periods` periods of
    /// buffer.
    ///
    /// `configText` is ALSA configuration (e.g. `pcm.mine { type file ... }`) loaded on top of the
    /// system configuration for this PCM only, so tests and tools can define PCMs without
    /// touching `~/.asoundrc`.
    public convenience init(device: String = "default", format: AudioDeviceFormat, preferredSampleFormat: ALSASampleFormat = .float32,
                            period: Double = 1024.0 / 44100, periods: Int = 4, configText: String? = nil) throws(AudioError) {
        let frames = period.isFinite && period > 0 && format.sampleRate.isFinite ? min(1_048_576.0, period * format.sampleRate) : 0
        try self.init(device: device, format: format, preferredSampleFormat: preferredSampleFormat,
                      periodFrames: Int(frames.rounded()), periods: periods, configText: configText)
    }

    /// Opens `device` like ``init(device:format:preferredSampleFormat:period:periods:configText:)``
    /// with a period of about `periodFrames` frames: a different time at each rate (1024 frames
    /// are 5 ms at 192 kHz and 128 ms at 8 kHz); prefer the period in seconds.
    public init(device: String = "default", format: AudioDeviceFormat, preferredSampleFormat: ALSASampleFormat = .float32,
                periodFrames: Int, periods: Int = 4, configText: String? = nil) throws(AudioError) {
        guard format.channels >= 1, format.sampleRate >= 1 else {
            throw AudioError(.invalidArgument, component: "ALSA output", "unsupported format \(format)")
        }
        self.device = device
        self.configText = configText
        name = "alsa:\(device)"
        requested = (max(32, periodFrames), max(2, periods) * max(32, periodFrames))
        let (handle, actual) = try PCMHandle.open(device, stream: SND_PCM_STREAM_PLAYBACK, configText: configText, format: format,
                                                  preferred: preferredSampleFormat, period: requested.period, buffer: requested.buffer)
        pcm = handle
        hasChannelMap = format.channelLabels.map { Self.setChannelMap(handle.pcm, $0) } ?? false
        let type = snd_pcm_type(handle.pcm)
        isClockless = type == SND_PCM_TYPE_NULL || handle.pcm.map(Self.chainEndsInNull) == true
        self.format = AudioDeviceFormat(sampleRate: Double(actual.rate), channels: format.channels)
        framesPerRender = actual.period
        bufferFrames = actual.buffer
        sampleFormat = actual.sampleFormat
        buffers = RenderBuffers(channels: format.channels, frames: actual.period)
        int16Buffer = .allocate(capacity: actual.period * format.channels)
        int16Buffer.initialize(repeating: 0)
    }

    deinit {
        close()
        int16Buffer.deallocate()
    }

    /// The sample rate `device` plays at natively, nearest `preferred`: the rate
    /// `snd_pcm_hw_params_set_rate_near` picks among the PCM's own rates with ALSA's automatic
    /// resampling off. A hardware PCM (`hw:`, or `plughw:` and `default` through their slave)
    /// gives its supported rate nearest `preferred` (e.g. 48,000 on a 48 kHz-only card asked for
    /// 44,100); PCMs that take any rate (`null`, `file:`, `pulse`) give `preferred`. Nil when the
    /// PCM cannot be opened now (missing, busy) or libasound is not available.
    ///
    /// `configText` is ALSA configuration loaded on top of the system one for this query only,
    /// as in ``init(device:format:preferredSampleFormat:period:periods:configText:)``.
    public static func nativeSampleRate(device: String = "default", near preferred: Double = 48000,
                                        configText: String? = nil) -> Double? {
        guard preferred.isFinite, preferred >= 1, preferred <= 1_536_000 else { return nil }
        guard let rate = try? PCMHandle.nativeRate(device, configText: configText, near: Int(preferred.rounded())) else { return nil }
        return Double(rate)
    }

    /// Starts the device thread pulling from `render`.
    public func start(_ render: @escaping AudioRenderCallback) throws(AudioError) {
        guard state.move(from: .idle, to: .running) else {
            throw AudioError(.invalidState, component: "ALSA output", "already started")
        }
        do {
            let t = try JoinableThread(name: "oat-alsa-out") { [self] in run(render) }
            thread.withLock { $0 = t }
        } catch {
            state.finish()
            throw error
        }
    }

    /// The float-to-int16 conversion used for ``ALSASampleFormat/int16`` (scale 32767, round, clamp).
    /// Thread safety: pure; safe on the render thread.
    @inline(__always)
    public static func int16Sample(_ x: Float) -> Int16 {
        let v = (x * 32767).rounded()
        return v >= 32767 ? 32767 : (v <= -32768 ? -32768 : Int16(v))
    }

    /// True when the PCM chain `snd_pcm_dump` describes ends in a `null` PCM: its last
    /// `Slave:` line (the first line when there is none) names the PCM the writes end in.
    static func chainEndsInNull(_ pcm: OpaquePointer) -> Bool {
        var output: OpaquePointer?
        guard snd_output_buffer_open(&output) == 0, let output else { return false }
        defer { snd_output_close(output) }
        guard snd_pcm_dump(pcm, output) == 0 else { return false }
        var text: UnsafeMutablePointer<CChar>?
        let count = snd_output_buffer_string(output, &text)
        guard count > 0, let text else { return false }
        let dump = String(decoding: UnsafeRawBufferPointer(start: text, count: count), as: UTF8.self)
        let lines = dump.split(separator: "\n")
        let last = lines.last { $0.hasPrefix("Slave: ") }.map { $0.dropFirst("Slave: ".count) } ?? lines.first ?? ""
        return last.hasPrefix("Null PCM")
    }

    // MARK: Device thread

    private func run(_ render: AudioRenderCallback) {
        // A render thread: real-time where the system allows it (ThreadPriority). Not for a
        // `file` or `null` PCM, which is not paced: its thread renders as fast as it can and,
        // real-time, would take a core from everything else.
        if isRealTime { ThreadPriority.makeCurrentThreadRealTime() }
        events.post(.started)
        let period = framesPerRender
        let channels = format.channels
        var pcmPaused = false
        var usedHardwarePause = false
        var ended = false
        // Wall-clock pacing of a clockless PCM: frame `paceBase` was due at host time
        // `paceOrigin` (0: anchor at the next render).
        let paced = pacing.load(ordering: .relaxed) && isClockless
        var paceOrigin: UInt64 = 0
        var paceBase: Int64 = 0
        let room = Int64(max(period, bufferFrames - period))
        while true {
            let s = state.current
            if s.isEnding { break }
            let asked = flushesAsked.load(ordering: .acquiring)
            if asked != flushesDone.load(ordering: .relaxed) {
                // Drop what the PCM holds; the clock stays at the frames heard so far.
                updateDelay()
                snd_pcm_drop(pcm.pcm)
                snd_pcm_prepare(pcm.pcm)
                droppedFrames.store(rendered.load(ordering: .relaxed) - played.load(ordering: .relaxed), ordering: .relaxed)
                delayFrames.store(0, ordering: .relaxed)
                if pcmPaused { usedHardwarePause = false }
                flushesDone.store(asked, ordering: .releasing)
                paceOrigin = 0
                // Render nothing before the control side has run its `resume` (the source would
                // still give the silence it gives while waiting for the flush): at most 20 ms,
                // the PCM is stopped meanwhile.
                let until = HostTime.now() + 20_000_000
                while flushesResumed.load(ordering: .acquiring) < asked, HostTime.now() < until {
                    sleepUntil(hostTime: HostTime.now() + 200_000)
                }
            }
            if s == .paused {
                if !pcmPaused {
                    pcmPaused = true
                    usedHardwarePause = pcm.canPause && snd_pcm_pause(pcm.pcm, 1) == 0
                    if !usedHardwarePause { snd_pcm_drop(pcm.pcm) }
                }
                sleepUntil(hostTime: HostTime.now() + 2_000_000)
                continue
            }
            if pcmPaused {
                pcmPaused = false
                paceOrigin = 0
                if !usedHardwarePause || snd_pcm_pause(pcm.pcm, 0) < 0 { snd_pcm_prepare(pcm.pcm) }
            }
            let done = rendered.load(ordering: .relaxed)
            if paced {
                // As a sound card would: at most a buffer ahead of what the clock has played.
                let now = HostTime.now()
                if paceOrigin == 0 {
                    paceOrigin = now
                    paceBase = done
                }
                let due = paceBase + Int64(Double(now - paceOrigin) * format.sampleRate / 1e9)
                let ahead = done - due - room
                if ahead > 0 {
                    sleepUntil(hostTime: now + UInt64(Double(min(ahead, Int64(period))) / format.sampleRate * 1e9))
                    continue
                }
                // Far behind (the thread was held up): go on from now rather than catch up in a burst.
                if -ahead > 2 * room { paceOrigin = now; paceBase = done - room }
            }
            let delay = max(0, delayFrames.load(ordering: .relaxed))
            let heardAt = HostTime.now() &+ UInt64(Double(delay) / format.sampleRate * 1e9)
            let time = AudioTimeStamp(sampleTime: Double(done), hostTime: heardAt, rateScalar: 1, flags: .sampleHostTimeValid)
            var result = render(buffers.pointers, period, time)
            result.frames = max(0, min(result.frames, period))
            let frames = result.isEndOfStream || !isRealTime ? result.frames : period
            if frames == 0 && !result.isEndOfStream {
                // Nothing yet from a source feeding an unpaced PCM: call again shortly.
                sleepUntil(hostTime: HostTime.now() + 1_000_000)
                continue
            }
            if result.frames < period { buffers.silence(from: result.frames) }
            let bytes: UnsafeRawPointer
            switch sampleFormat {
            case .float32:
                buffers.interleave(frames)
                bytes = UnsafeRawPointer(buffers.interleaved.baseAddress!)
            case .int16:
                for c in 0..<channels {
                    let src = buffers.pointers[c]
                    var j = c
                    for i in 0..<frames {
                        int16Buffer[j] = Self.int16Sample(src[i])
                        j &+= channels
                    }
                }
                bytes = UnsafeRawPointer(int16Buffer.baseAddress!)
            }
            if !write(bytes, frames: frames) { break }
            rendered.store(done + Int64(frames), ordering: .releasing)
            updateDelay()
            if result.isEndOfStream {
                ended = true
                break
            }
        }
        if ended || drainOnStop.load(ordering: .acquiring) {
            if pcmPaused { if !usedHardwarePause || snd_pcm_pause(pcm.pcm, 0) < 0 { snd_pcm_prepare(pcm.pcm) } }
            snd_pcm_drain(pcm.pcm)
            played.store(rendered.load(ordering: .relaxed) - droppedFrames.load(ordering: .relaxed), ordering: .releasing)
            delayFrames.store(0, ordering: .relaxed)
            if ended { events.post(.drained) }
        } else {
            snd_pcm_drop(pcm.pcm)
        }
        state.finish()
    }

    /// Writes `frames` interleaved frames, recovering from underruns and device loss. Returns
    /// false when the device was stopped while lost.
    private func write(_ bytes: UnsafeRawPointer, frames: Int) -> Bool {
        let frameBytes = format.channels * (sampleFormat == .float32 ? 4 : 2)
        var offset = 0
        while offset < frames {
            let n = snd_pcm_writei(pcm.pcm, bytes + offset * frameBytes, snd_pcm_uframes_t(frames - offset))
            if n >= 0 {
                offset += n
                continue
            }
            let err = Int32(n)
            if err == -EAGAIN { continue }
            if pcm.recover(err) {
                if err == -EPIPE { events.post(.underrun(frames: framesPerRender)) }
                continue
            }
            // Not recoverable in place: the device is gone.
            if !reopenAfterLoss(err) { return false }
        }
        return true
    }

    private func reopenAfterLoss(_ err: Int32) -> Bool {
        events.post(.lost(reason: String(cString: snd_strerror(err))))
        while !state.current.isEnding {
            sleepUntil(hostTime: HostTime.now() + 500_000_000)
            if (try? pcm.reopen(device, configText: configText, format: format, preferred: sampleFormat,
                                period: requested.period, buffer: requested.buffer)) != nil {
                events.post(.restored)
                return true
            }
        }
        return false
    }

    private func updateDelay() {
        var delay: snd_pcm_sframes_t = 0
        let total = rendered.load(ordering: .relaxed) - droppedFrames.load(ordering: .relaxed)
        if snd_pcm_delay(pcm.pcm, &delay) == 0 {
            let d = Int64(max(0, min(delay, bufferFrames)))
            delayFrames.store(d, ordering: .relaxed)
            played.store(max(played.load(ordering: .relaxed), total - d), ordering: .releasing)
        }
    }

    // MARK: Control

    /// Pauses (`snd_pcm_pause` where the PCM supports it, else drop and prepare on resume).
    public func pause() throws(AudioError) {
        guard state.move(from: .running, to: .paused) else {
            throw AudioError(.invalidState, component: "ALSA output", "pause while not running")
        }
    }

    /// Resumes after a pause.
    public func resume() throws(AudioError) {
        guard state.move(from: .paused, to: .running) else {
            throw AudioError(.invalidState, component: "ALSA output", "resume while not paused")
        }
    }

    /// Drops what the PCM holds (`snd_pcm_drop` and `snd_pcm_prepare`, done by the device
    /// thread between two periods; waits for it, at most about a buffer and a half), then
    /// runs `resume`; the device thread renders again once `resume` ran.
    public func flush(_ resume: () -> Void) {
        guard state.current.isStarted else { return resume() }
        let asked = flushesAsked.add(1, ordering: .acquiringAndReleasing).newValue
        let deadline = HostTime.now() + HostTime.ticks(seconds: max(0.05, 1.5 * Double(bufferFrames) / format.sampleRate))
        while flushesDone.load(ordering: .acquiring) < asked, !state.current.isEnding, HostTime.now() < deadline {
            sleepUntil(hostTime: HostTime.now() + 500_000)
        }
        resume()
        flushesResumed.store(asked, ordering: .releasing)
    }

    /// Stops the device thread; with `drain`, the PCM first plays what it holds.
    public func stop(drain: Bool) {
        drainOnStop.store(drain, ordering: .releasing)
        state.requestStop()
        let t = thread.withLock { t -> JoinableThread? in defer { t = nil }; return t }
        t?.join()
    }

    /// Stops and closes the PCM.
    public func close() {
        stop(drain: false)
        pcm.close()
    }

    /// Takes pending events.
    public func takeEvents() -> [AudioDeviceEvent] { events.take() }
    /// Events dropped.
    public var droppedEventCount: Int { events.droppedCount }
    /// True once the device thread has ended (end of stream played, or stopped).
    public var hasFinished: Bool { state.current == .finished }

    /// Lists the PCMs ALSA's configuration and cards offer (`snd_device_name_hint`), output-capable ones only.
    public static func listDevices() -> [ALSADeviceInfo] {
        PCMHandle.nameHints(direction: "Output").map { ALSADeviceInfo(name: $0.name, description: $0.description) }
    }
}

extension ALSAOutputDevice {
    /// ALSA's position for a channel label; nil for labels it has none for.
    static func chmapPosition(of label: ChannelLabel) -> snd_pcm_chmap_position? {
        switch label {
        case .mono: SND_CHMAP_MONO
        case .left: SND_CHMAP_FL
        case .right: SND_CHMAP_FR
        case .center: SND_CHMAP_FC
        case .lfeScreen: SND_CHMAP_LFE
        case .leftSurround, .rearSurroundLeft: SND_CHMAP_RL
        case .rightSurround, .rearSurroundRight: SND_CHMAP_RR
        case .leftCenter: SND_CHMAP_FLC
        case .rightCenter: SND_CHMAP_FRC
        case .centerSurround: SND_CHMAP_RC
        case .leftSurroundDirect: SND_CHMAP_SL
        case .rightSurroundDirect: SND_CHMAP_SR
        case .topCenterSurround: SND_CHMAP_TC
        case .verticalHeightLeft: SND_CHMAP_TFL
        case .verticalHeightCenter: SND_CHMAP_TFC
        case .verticalHeightRight: SND_CHMAP_TFR
        case .topBackLeft: SND_CHMAP_TRL
        case .topBackCenter: SND_CHMAP_TRC
        case .topBackRight: SND_CHMAP_TRR
        default: nil
        }
    }

    /// Sets the PCM's channel map to `labels` (after hw_params); false when a label has no ALSA
    /// position or the PCM refuses (most plugins have no settable map).
    static func setChannelMap(_ pcm: OpaquePointer?, _ labels: [ChannelLabel]) -> Bool {
        let positions = labels.compactMap(chmapPosition(of:))
        guard let pcm, positions.count == labels.count, !labels.isEmpty else { return false }
        var words: [UInt32] = [UInt32(labels.count)] + positions.map { UInt32($0.rawValue) }
        return words.withUnsafeMutableBytes { raw in
            snd_pcm_set_chmap(pcm, raw.baseAddress!.assumingMemoryBound(to: snd_pcm_chmap_t.self)) == 0
        }
    }
}
