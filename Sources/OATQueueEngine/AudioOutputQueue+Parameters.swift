#if canImport(Glibc)
import Glibc
#endif
import OATConversion
import OATCore
import OATDevices
import OATProcessing
import Dispatch
import Synchronization

// AudioOutputQueue: parameters, time-pitch, taps, metering, time and read-only properties.
extension AudioOutputQueue {
    // MARK: State and parameters

    /// True between start and the actual stop (Apple's `kAudioQueueProperty_IsRunning`).
    public var isRunning: Bool { control.withLock { $0.isRunning } }

    /// Adds a listener for property changes, called on the queue's thread; returns its token.
    @discardableResult
    public func addPropertyListener(_ listener: @escaping @Sendable (AudioOutputQueue, AudioQueueProperty) -> Void) -> Int {
        control.withLock { s in
            s.nextListener += 1
            s.listeners[s.nextListener] = listener
            return s.nextListener
        }
    }

    /// Removes a listener.
    public func removePropertyListener(_ token: Int) { control.withLock { _ = $0.listeners.removeValue(forKey: token) } }

    /// Receives every ``AudioOutputQueueEvent`` on the queue's thread.
    public var eventHandler: (@Sendable (AudioOutputQueueEvent) -> Void)? {
        get { control.withLock { $0.eventHandler } }
        set { control.withLock { $0.eventHandler = newValue } }
    }

    /// Sets a parameter (takes effect on the render thread without locks).
    public func setParameter(_ parameter: AudioQueueParameter, _ value: Float) throws(AudioError) {
        switch parameter {
        case .volume:
            guard value >= 0, value <= 1 else { throw AudioError(.invalidArgument, component: component, "volume \(value) is outside 0...1", osStatus: -50) }
            control.withLock { $0.volume = value }
            renderer.targetGainBits.store(value.bitPattern, ordering: .releasing)
        case .volumeRampTime:
            guard value >= 0, value <= 60 else { throw AudioError(.invalidArgument, component: component, "ramp time \(value) s is outside 0...60", osStatus: -50) }
            control.withLock { $0.rampTime = value }
            renderer.rampFrames.store(Int(Double(value) * deviceFormat.sampleRate), ordering: .releasing)
        case .pan:
            guard value >= -1, value <= 1 else { throw AudioError(.invalidArgument, component: component, "pan \(value) is outside -1...1", osStatus: -50) }
            control.withLock { $0.pan = value }
            renderer.panBits.store(value.bitPattern, ordering: .releasing)
        case .playRate:
            guard value >= 0.5, value <= 2 else { throw AudioError(.invalidArgument, component: component, "play rate \(value) is outside 0.5...2.0", osStatus: -50) }
            updateProcessing { $0.timePitch.rate = value }
        case .pitch:
            guard value >= -2400, value <= 2400 else { throw AudioError(.invalidArgument, component: component, "pitch \(value) cents is outside -2400...2400", osStatus: -50) }
            updateProcessing { $0.timePitch.pitch = value }
        }
    }

    /// Reads a parameter.
    public func parameter(_ parameter: AudioQueueParameter) -> Float {
        control.withLock { s in
            switch parameter {
            case .volume: s.volume
            case .volumeRampTime: s.rampTime
            case .pan: s.pan
            case .playRate: s.timePitch.rate
            case .pitch: s.timePitch.pitch
            }
        }
    }

    func updateProcessing(_ change: (inout ControlState) -> Void) {
        control.withLock { s in
            change(&s)
            s.processingVersion += 1
        }
        wake.signal()
    }

    /// Turns the time-pitch stage on (`kAudioQueueProperty_EnableTimePitch`). PlayRate and
    /// Pitch act only while it is on. It runs on the queue's thread, before the play ring, so a
    /// change reaches the ear after the audio already buffered (up to the ring's 2 s; set it
    /// before start or prime to have it from the first frame).
    public var isTimePitchEnabled: Bool {
        get { control.withLock { $0.timePitch.enabled } }
        set { updateProcessing { $0.timePitch.enabled = newValue } }
    }

    /// The time-pitch algorithm (`kAudioQueueProperty_TimePitchAlgorithm`); see docs/timepitch.md.
    public var timePitchAlgorithm: TimePitchAlgorithm {
        get { control.withLock { $0.timePitch.algorithm } }
        set { updateProcessing { $0.timePitch.algorithm = newValue } }
    }

    /// Bypasses the time-pitch stage while true (`kAudioQueueProperty_TimePitchBypass`).
    public var isTimePitchBypassed: Bool {
        get { control.withLock { $0.timePitch.bypass } }
        set { updateProcessing { $0.timePitch.bypass = newValue } }
    }

    /// Adds a processing tap (Apple's `AudioQueueProcessingTapNew`). `flags` holds
    /// ``AudioQueueProcessingTapFlags/preEffects`` or ``AudioQueueProcessingTapFlags/postEffects``
    /// and optionally ``AudioQueueProcessingTapFlags/siphon``. The callback runs on the queue's
    /// feeder thread, in chunks of at most `maximumFrames` (clamped to 1024) frames.
    public func addProcessingTap(flags: AudioQueueProcessingTapFlags, maximumFrames: Int = 1024,
                                 callback: @escaping AudioQueueProcessingTap.Callback) throws(AudioError) -> AudioQueueProcessingTap {
        let position = flags.intersection([.preEffects, .postEffects])
        guard position == .preEffects || position == .postEffects else {
            throw AudioError(.invalidArgument, component: component, "a tap needs exactly one of preEffects and postEffects", osStatus: -66667)
        }
        let tap = AudioQueueProcessingTap(flags: flags, maximumFrames: max(16, min(chain.chunk, maximumFrames)),
                                          channels: deviceFormat.channels, sampleRate: deviceFormat.sampleRate, callback: callback)
        updateProcessing { $0.taps.append(tap) }
        return tap
    }

    /// Removes a tap (Apple's `AudioQueueProcessingTapDispose`); it is not called again once
    /// the queue's thread has taken the change (before its next buffer).
    public func removeProcessingTap(_ tap: AudioQueueProcessingTap) {
        updateProcessing { $0.taps.removeAll { $0 === tap } }
    }


    /// Turns level metering on or off (`kAudioQueueProperty_EnableLevelMetering`).
    public var isLevelMeteringEnabled: Bool {
        get { renderer.meteringEnabled.load(ordering: .relaxed) }
        set { renderer.meteringEnabled.store(newValue, ordering: .relaxed) }
    }

    /// Per-channel levels over the last render period, linear 0...1
    /// (`kAudioQueueProperty_CurrentLevelMeter`).
    public func currentLevels() -> [AudioQueueLevelMeterState] {
        if let l = renderer.latestLevels() {
            let states = l.map { AudioQueueLevelMeterState(averagePower: $0.meanSquare.squareRoot(), peakPower: $0.peak) }
            lastLevels.withLock { $0 = states }
            return states
        }
        return lastLevels.withLock { $0 }
    }

    /// Per-channel levels in dB full scale (`kAudioQueueProperty_CurrentLevelMeterDB`);
    /// silence is -120 dB.
    public func currentLevelsDB() -> [AudioQueueLevelMeterState] {
        currentLevels().map { AudioQueueLevelMeterState(averagePower: decibels($0.averagePower), peakPower: decibels($0.peakPower)) }
    }

    /// The queue's current time: frames played since start (device clock), and whether the
    /// timeline was reset since the last call (Apple's `AudioQueueGetCurrentTime`).
    public func currentTime() -> (time: AudioTimeStamp, discontinuity: Bool)? {
        control.withLock { s in
            guard let device = s.device, s.isRunning else { return nil }
            let frames = max(0, device.playedFrames - s.playedAtStart)
            let d = s.discontinuity
            s.discontinuity = false
            return (AudioTimeStamp(sampleTime: Double(frames), hostTime: HostTime.now(), rateScalar: 1, flags: .sampleHostTimeValid), d)
        }
    }

    /// The device's clock now, for Apple's `AudioQueueDevice*` time calls: frames the device has
    /// played since it started, the host time of that reading, the device rate and its output
    /// latency in seconds; nil while the queue is not running.
    public func deviceTime() -> (sampleTime: Double, hostTime: UInt64, sampleRate: Double, latency: Double)? {
        control.withLock { s in
            guard let device = s.device, s.isRunning else { return nil }
            return (Double(device.playedFrames), HostTime.now(), device.format.sampleRate, device.latency)
        }
    }

    /// The last decoder error (`kAudioQueueProperty_ConverterError`), if any.
    public var converterError: AudioError? { control.withLock { $0.converterError } }

    /// Why the time-pitch stage is not running although it is enabled (e.g. the Rubber Band
    /// library is missing), if it could not be set up; nil once it runs.
    public var timePitchError: AudioError? { control.withLock { $0.timePitchError } }

    /// Name of the device in use (`kAudioQueueProperty_CurrentDevice`), once started.
    public var currentDevice: String? { control.withLock { $0.device?.name } }

    /// Frames waiting in the play ring.
    public var bufferedFrames: Int64 { renderer.queuedFrames }

    /// Buffers enqueued and not decoded yet.
    public var pendingBufferCount: Int { control.withLock { $0.pending.count } }
    /// Asks the running device to keep about `seconds` buffered from now on
    /// (``AudioOutputDevice/setTargetLatency(_:)``); nothing before the queue has a device.
    public func setDeviceLatency(_ seconds: Double) {
        control.withLock { $0.device }?.setTargetLatency(seconds)
    }

    /// Times the device found the ring empty mid-stream.
    public var underrunCount: Int { renderer.underruns.load(ordering: .relaxed) }

    /// Frames of enqueued audio the device has taken from the play ring since the queue was
    /// created or last reset or stopped immediately: the stream position in frames (pauses,
    /// start delays and underrun silence excluded). Frames enqueued after a reset count from 0.
    public var playedStreamFrames: Int64 {
        max(0, renderer.consumed.load(ordering: .acquiring) - renderer.discardUntil.load(ordering: .acquiring))
    }
}
