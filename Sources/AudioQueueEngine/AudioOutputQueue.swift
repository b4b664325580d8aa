#if canImport(Glibc)
import Glibc
#endif
import AudioConversion
import AudioCore
import AudioDevices
import AudioProcessing
import Dispatch
import Synchronization

/// Opens the output device a queue plays to, for the device format it asks for.
public typealias AudioOutputDeviceFactory = @Sendable (AudioDeviceFormat) throws(AudioError) -> any AudioOutputDevice

/// Something an output queue reports, on its own thread, to ``AudioOutputQueue/eventHandler``.
public enum AudioOutputQueueEvent: Sendable, Equatable {
    /// A property changed (as the property listener also reports).
    case propertyChanged(AudioQueueProperty)
    /// The queue played everything and stopped by itself (after ``AudioOutputQueue/stop(immediately:)``
    /// with `false`, or when the producer called ``AudioOutputQueue/endOfStream()``).
    case ended
    /// The device ran out of audio mid-stream `count` times so far (buffers came too late).
    case underrun(count: Int)
    /// The decoder rejected data, or could not be created for the queue's format and cookie
    /// (then the queue's buffers come back unplayed until a cookie that opens it is set);
    /// ``AudioOutputQueue/converterError`` holds it.
    case converterError(AudioError)
    /// The time-pitch stage could not be set up (e.g. the Rubber Band library is missing): the
    /// audio plays at rate 1 and pitch 0. ``AudioOutputQueue/timePitchError`` holds it.
    case timePitchError(AudioError)
    /// The device went away / came back.
    case device(AudioDeviceEvent)
}

/// When an output queue hands a buffer back through its callback.
public enum AudioOutputQueueBufferReturn: Sendable, Hashable {
    /// When the device has played the buffer's last frame (Apple's timing): render has taken
    /// it from the play ring and the device's clock says it has left the output (the render
    /// time stamp's host time of that frame, which includes the device's latency; at once on
    /// a device that is not paced, such as a WAV file or offline rendering). A program that
    /// waits for its buffers to come back and then stops loses nothing.
    case whenPlayed
    /// As soon as its contents are in the play ring, up to the ring's length and the device's
    /// latency before they are heard: for producers that keep their own pacing and use the
    /// ring as their buffer (``AudioFilePlayer``, the streaming player).
    case whenCopied
}

/// An output audio queue: Apple's `AudioQueue` for playback.
///
/// You allocate buffers, fill them with PCM frames or compressed packets in the queue's
/// format, and enqueue them; the queue decodes them on its own thread, feeds the device's
/// real-time render thread through a lock-free ring, and returns each buffer through the output
/// callback (on the queue's thread, never the render thread) once the device has played it
/// (``AudioOutputQueueBufferReturn``). Callbacks, listeners and events never run with a lock
/// of the queue held: they may call any queue, or wait for a thread that does.
///
/// ```swift
/// let queue = try AudioOutputQueue(format: file.dataFormat, magicCookie: file.magicCookie,
///                                  output: { try AudioOutput.open(.auto, format: $0).device }) { queue, buffer in
///     // refill `buffer` and enqueue it again, or call queue.stop(immediately: false) at the end
/// }
/// ```
///
/// Thread safety: the control methods are safe from any thread; callbacks arrive on the
/// queue's own thread.
public final class AudioOutputQueue: @unchecked Sendable {
    /// The format of the data you enqueue.
    public let format: AudioStreamBasicDescription
    /// The magic cookie of the data (compressed formats); see ``setMagicCookie(_:)``.
    public var magicCookie: [UInt8]? { control.withLock { $0.magicCookie } }
    /// The format the device runs at (Float32, the stream's rate and channels unless overridden).
    public let deviceFormat: AudioDeviceFormat
    /// Called on the queue's thread with each buffer the queue has finished with.
    public let outputCallback: @Sendable (AudioOutputQueue, AudioQueueBuffer) -> Void
    /// When buffers come back (default: when played, as Apple's queues do).
    public let bufferReturn: AudioOutputQueueBufferReturn

    private let renderer: QueueRenderer
    private let deviceFactory: AudioOutputDeviceFactory
    private let control = Locked(ControlState())
    /// Serialises start, pause, stop, reset, dispose and the end of a drained stream, so that
    /// disposing while another thread starts cannot leave a device running (the AudioStreamer
    /// hang of seed 002). Never held by the render thread.
    private let transport = RecursiveLock()
    private let wake = DispatchSemaphore(value: 0)
    private let component = "AudioQueue"

    struct Pending {
        var buffer: AudioQueueBuffer
        var options: AudioQueueEnqueueOptions
    }

    /// A decoded buffer waiting to come back: its audio ends at ring frame `end`, heard at
    /// host time `heardAt` (nil: render has not reached it yet; 0: at once).
    struct Held {
        var buffer: AudioQueueBuffer
        var end: Int64
        var heardAt: UInt64?
    }

    /// Starts the queue's thread (tests replace it to see a failure).
    typealias ThreadStarter = @Sendable (String, @escaping @Sendable () -> Void) throws(AudioError) -> JoinableThread

    /// User code (callbacks, listeners, events) that a transport operation runs once it has
    /// released the transport lock.
    struct Deferred {
        var calls: [() -> Void] = []
        mutating func add(_ call: @escaping () -> Void) { calls.append(call) }
        func run() { for c in calls { c() } }
    }

    struct ControlState {
        var pending: [Pending] = []
        /// Buffers decoded into the ring, in order, until they are played (or, with
        /// ``AudioOutputQueueBufferReturn/whenCopied``, at once). Apple's queue hands nothing back
        /// before it runs, so buffers decoded before the start (a prime) wait for it.
        var held: [Held] = []
        var startThread: ThreadStarter = { name, body throws(AudioError) in try JoinableThread(name: name, body) }
        var buffers: [Int: AudioQueueBuffer] = [:]
        var nextBufferID = 0
        var device: (any AudioOutputDevice)?
        var isRunning = false
        var isPaused = false
        var stopAfterQueued = false
        var disposed = false
        var feederStarted = false
        var feeder: JoinableThread?
        var listeners: [Int: @Sendable (AudioOutputQueue, AudioQueueProperty) -> Void] = [:]
        var nextListener = 0
        var eventHandler: (@Sendable (AudioOutputQueueEvent) -> Void)?
        var playedAtStart: Int64 = 0
        var discontinuity = false
        var converterError: AudioError?
        var timePitchError: AudioError?
        var generation = 0
        var flushRequested = false
        var lastUnderruns = 0
        var volume: Float = 1
        var rampTime: Float = 0
        var pan: Float = 0
        var startTime: AudioTimeStamp?
        var magicCookie: [UInt8]?
        var cookieChanged = false
        var timePitch = QueueTimePitchSettings()
        var taps: [AudioQueueProcessingTap] = []
        var processingVersion = 0
        var offline = false
        /// A reset is waiting for new audio before it flushes the device: since when (host time).
        var flushPendingSince: UInt64?
    }

    /// Feeder-side processing: taps and time-pitch (QueueProcessing.swift).
    private let chain: QueueProcessingChain
    /// Offline rendering: the feeder waits on `offlineSpace` when the ring is full and signals
    /// `offlineData` when it wrote; ``renderOffline(into:frames:timeStamp:)`` does the reverse.
    private let offlineSpace = DispatchSemaphore(value: 0)
    private let offlineData = DispatchSemaphore(value: 0)

    /// Creates an output queue for data in `format`. `output` opens the device when the queue
    /// starts (or primes); `deviceFormat` overrides the device rate/channels (default: the
    /// stream's). `ringSeconds` is the size of the play ring between the feeder and the device
    /// (default 2 s; ``AudioFilePlayer`` uses 0.7 s: it feeds from a local file). The ring holds at
    /// least that much; its size rounds up to a power of two samples. `bufferReturn` says when
    /// buffers come back (default: when played).
    public init(format: AudioStreamBasicDescription, magicCookie: [UInt8]? = nil,
                deviceFormat: AudioDeviceFormat? = nil, ringSeconds: Double = 2,
                bufferReturn: AudioOutputQueueBufferReturn = .whenPlayed,
                output: @escaping AudioOutputDeviceFactory,
                callback: @escaping @Sendable (AudioOutputQueue, AudioQueueBuffer) -> Void) throws(AudioError) {
        guard format.sampleRate >= 1, format.sampleRate <= 1_536_000, format.channelsPerFrame > 0, format.channelsPerFrame <= 64 else {
            throw AudioError(.invalidArgument, component: "AudioQueue", "format needs a sample rate and 1...64 channels: \(format)", osStatus: -50)
        }
        self.format = format
        control.withLock { $0.magicCookie = magicCookie }
        let device = deviceFormat ?? AudioDeviceFormat(sampleRate: format.sampleRate, channels: Int(format.channelsPerFrame))
        guard device.sampleRate >= 1, device.sampleRate <= 1_536_000, device.channels > 0, device.channels <= 64 else {
            throw AudioError(.invalidArgument, component: "AudioQueue", "device format \(device) is out of range", osStatus: -50)
        }
        self.deviceFormat = device
        self.deviceFactory = output
        self.outputCallback = callback
        self.bufferReturn = bufferReturn
        renderer = QueueRenderer(channels: device.channels, sampleRate: device.sampleRate, ringSeconds: max(0.1, ringSeconds))
        chain = QueueProcessingChain(channels: device.channels, sampleRate: device.sampleRate)
        // Fail now, not at start, when the data cannot be decoded. A decoder that cannot open
        // without its magic cookie is accepted when none was given: ``setMagicCookie(_:)``
        // supplies it before the first enqueue (Apple's queues take the cookie as a property).
        do {
            _ = try makeConverter()
        } catch {
            if !(magicCookie == nil && !format.isPCM && error.osStatus == 0x2164_6174) { throw error } // '!dat'
        }
    }

    /// Sets the magic cookie of the data (Apple's `kAudioQueueProperty_MagicCookie`). Set it
    /// before enqueuing the first buffer; a later change restarts the decoder.
    public func setMagicCookie(_ cookie: [UInt8]?) throws(AudioError) {
        let out = AudioStreamBasicDescription.linearPCM(sampleRate: deviceFormat.sampleRate, channels: UInt32(deviceFormat.channels), bitsPerChannel: 32, isFloat: true)
        _ = try AudioConverter(from: format, to: out, magicCookie: cookie)
        control.withLock { s in
            s.magicCookie = cookie
            s.cookieChanged = true
        }
        wake.signal()
    }

    deinit {
        dispose(immediately: true)
    }

    private func makeConverter() throws(AudioError) -> AudioConverter {
        let out = AudioStreamBasicDescription.linearPCM(sampleRate: deviceFormat.sampleRate, channels: UInt32(deviceFormat.channels), bitsPerChannel: 32, isFloat: true)
        return try AudioConverter(from: format, to: out, magicCookie: control.withLock { s in
            s.cookieChanged = false
            return s.magicCookie
        })
    }

    // MARK: Buffers

    /// Allocates a buffer of `byteCapacity` bytes with room for `packetDescriptionCapacity`
    /// packet descriptions (Apple's `AudioQueueAllocateBufferWithPacketDescriptions`).
    public func allocateBuffer(byteCapacity: Int, packetDescriptionCapacity: Int = 0) throws(AudioError) -> AudioQueueBuffer {
        guard byteCapacity > 0, byteCapacity <= 1 << 28, packetDescriptionCapacity >= 0 else {
            throw AudioError(.invalidArgument, component: component, "buffer size \(byteCapacity) is out of range", osStatus: -50)
        }
        return try control.withLock { (s) throws(AudioError) -> AudioQueueBuffer in
            guard !s.disposed else { throw AudioError(.invalidState, component: component, "the queue is disposed", osStatus: -66671) }
            s.nextBufferID += 1
            let b = AudioQueueBuffer(capacity: byteCapacity, packetDescriptionCapacity: packetDescriptionCapacity, id: s.nextBufferID)
            s.buffers[b.id] = b
            return b
        }
    }

    /// Frees a buffer (it must not be enqueued).
    public func freeBuffer(_ buffer: AudioQueueBuffer) {
        control.withLock { s in
            if !s.pending.contains(where: { $0.buffer === buffer }) && !s.held.contains(where: { $0.buffer === buffer }) {
                s.buffers[buffer.id] = nil
            }
        }
    }

    /// Enqueues a filled buffer (Apple's `AudioQueueEnqueueBuffer` /
    /// `AudioQueueEnqueueBufferWithParameters`). Like Apple's queue, a queue that is not running
    /// keeps the buffers it has used (decoded ahead, or primed) and returns them through the
    /// callback only once it runs (``start(at:)``); ``reset()`` and ``stop(immediately:)`` return them.
    /// An empty buffer (``AudioQueueBuffer/audioDataByteSize`` 0) is an error, as on Apple
    /// (`kAudioQueueErr_BufferEmpty`). Packet descriptions of a constant-bit-rate format (linear
    /// PCM included) are ignored, as on Apple: the packets are the buffer's bytes.
    public func enqueue(_ buffer: AudioQueueBuffer, options: AudioQueueEnqueueOptions = AudioQueueEnqueueOptions()) throws(AudioError) {
        guard buffer.audioDataByteSize >= 0, buffer.audioDataByteSize <= buffer.audioDataBytesCapacity else {
            throw AudioError(.invalidArgument, component: component, "audioDataByteSize \(buffer.audioDataByteSize) exceeds the capacity", osStatus: -50)
        }
        guard buffer.audioDataByteSize > 0 else {
            throw AudioError(.invalidArgument, component: component, "the buffer is empty (audioDataByteSize 0)", osStatus: -66686)
        }
        if !format.isPCM && format.bytesPerPacket == 0 && buffer.packetDescriptions.isEmpty {
            throw AudioError(.invalidArgument, component: component, "variable-size packets need packet descriptions", osStatus: -66687)
        }
        // The queue's thread first: a queue that cannot start it says so here, not by never playing.
        try ensureFeeder()
        try control.withLock { (s) throws(AudioError) in
            guard !s.disposed else { throw AudioError(.invalidState, component: component, "the queue is disposed", osStatus: -66671) }
            guard s.buffers[buffer.id] === buffer else {
                throw AudioError(.invalidArgument, component: component, "the buffer does not belong to this queue", osStatus: -66687)
            }
            guard !s.pending.contains(where: { $0.buffer === buffer }) && !s.held.contains(where: { $0.buffer === buffer }) else {
                throw AudioError(.invalidState, component: component, "the buffer is already enqueued", osStatus: -66687)
            }
            s.pending.append(Pending(buffer: buffer, options: options))
        }
        wake.signal()
    }

    // MARK: Transport

    /// Starts playback now, or at host time `startTime.hostTime` when given (several queues
    /// started at one host time play in step).
    public func start(at startTime: AudioTimeStamp? = nil) throws(AudioError) {
        try withTransport { (d: inout Deferred) throws(AudioError) in try startLocked(at: startTime, &d) }
    }

    /// Runs `body` under the transport lock, then the user code it deferred, with no lock held.
    private func withTransport<R, E: Error>(_ body: (inout Deferred) throws(E) -> R) throws(E) -> R {
        var deferred = Deferred()
        defer { deferred.run() }
        return try transport.withLock { () throws(E) -> R in try body(&deferred) }
    }

    private func startLocked(at startTime: AudioTimeStamp?, _ d: inout Deferred) throws(AudioError) {
        try ensureFeeder()
        try openDevice()
        let device = try control.withLock { (s) throws(AudioError) -> any AudioOutputDevice in
            guard !s.disposed else { throw AudioError(.invalidState, component: component, "the queue is disposed", osStatus: -66671) }
            s.stopAfterQueued = false
            return s.device!
        }
        if let t = startTime, t.flags.contains(.hostTimeValid) { renderer.startHostTime.store(t.hostTime, ordering: .releasing) }
        let wasPaused = control.withLock { s -> Bool in
            let p = s.isPaused
            s.isPaused = false
            return p
        }
        if wasPaused {
            try device.resume()
        } else if !(control.withLock { $0.isRunning }) {
            let renderer = self.renderer
            renderer.padsShortRenders.store(device.isRealTime, ordering: .releasing)
            try device.start { buffers, frames, time in renderer.render(buffers, frames, time) }
            control.withLock { $0.playedAtStart = device.playedFrames }
            setRunning(true, &d)
        }
        wake.signal()
    }

    /// Decodes enqueued buffers ahead until `frames` frames (default: 0.5 s) are ready to play
    /// or nothing more is enqueued; returns the frames prepared (Apple's `AudioQueuePrime`).
    @discardableResult
    public func prime(frames: Int? = nil) throws(AudioError) -> Int {
        try ensureFeeder()
        try openDevice()
        let want = Int64(frames ?? Int(deviceFormat.sampleRate / 2))
        let deadline = HostTime.now() + HostTime.ticks(seconds: 10)
        while HostTime.now() < deadline {
            wake.signal()
            let ready = renderer.queuedFrames
            let idle = control.withLock { $0.pending.isEmpty }
            if ready >= want || (idle && feederIdle.load(ordering: .acquiring)) || Int(ready) >= renderer.freeFrames + Int(ready) { return Int(ready) }
            usleep_ms(2)
        }
        return Int(renderer.queuedFrames)
    }

    /// Pauses playback; ``start(at:)`` resumes.
    public func pause() throws(AudioError) {
        try transport.withLock { () throws(AudioError) in try pauseLocked() }
    }

    private func pauseLocked() throws(AudioError) {
        let device = control.withLock { s -> (any AudioOutputDevice)? in
            guard s.isRunning, !s.isPaused else { return nil }
            s.isPaused = true
            return s.device
        }
        try device?.pause()
    }

    /// Stops. Immediately: playback stops now and every enqueued buffer is returned through the
    /// callback. Otherwise: what is enqueued plays out first, then the queue stops by itself,
    /// reporting `isRunning` false and ``AudioOutputQueueEvent/ended``.
    public func stop(immediately: Bool) {
        withTransport { d in stopLocked(immediately: immediately, &d) }
    }

    private func stopLocked(immediately: Bool, _ d: inout Deferred) {
        if immediately {
            let device = control.withLock { s -> (any AudioOutputDevice)? in
                s.generation += 1
                s.stopAfterQueued = false
                return s.device
            }
            device?.stop(drain: false)
            cancelFlushAfterReset()
            renderer.discardAll()
            returnPendingBuffers(&d)
            control.withLock { s in
                s.device?.close()
                s.device = nil
                s.isPaused = false
            }
            renderer.startHostTime.store(0, ordering: .releasing)
            setRunning(false, &d)
        } else {
            control.withLock { $0.stopAfterQueued = true }
            try? ensureFeeder()
            wake.signal()
        }
    }

    /// Marks the end of the data: like ``stop(immediately:)`` with `false`.
    public func endOfStream() { stop(immediately: false) }

    /// Makes sure everything enqueued is decoded into the play ring, including audio the
    /// decoder holds back (Apple's `AudioQueueFlush`). Returns when done.
    public func flush() {
        control.withLock { $0.flushRequested = true }
        // Without its thread nothing is decoded: nothing to wait for.
        guard (try? ensureFeeder()) != nil else {
            control.withLock { $0.flushRequested = false }
            return
        }
        let deadline = HostTime.now() + HostTime.ticks(seconds: 10)
        while HostTime.now() < deadline {
            wake.signal()
            if !(control.withLock { $0.flushRequested }) { return }
            usleep_ms(1)
        }
    }

    /// Drops everything enqueued and buffered and resets the decoder, keeping the queue running;
    /// the timeline restarts with a discontinuity (Apple's `AudioQueueReset`). Enqueued buffers
    /// come back through the callback. What the device (or its sound server) still holds is
    /// dropped too (``AudioOutputDevice/flush()``): the old audio stops within about a device
    /// period, and audio enqueued next is heard from the point where the timeline restarts.
    public func reset() {
        withTransport { d in resetLocked(&d) }
    }

    private func resetLocked(_ d: inout Deferred) {
        let holds = control.withLock { s -> Bool in
            s.generation += 1
            s.discontinuity = true
            s.playedAtStart = s.device?.playedFrames ?? 0
            // A device with a playback buffer of its own (a sound server, a PCM) is flushed
            // once the new audio is in the ring (or nothing more comes): flushed now, it would
            // at once ask for its whole buffer again, and get silence.
            let holds = s.isRunning && (s.device?.isRealTime ?? false)
            s.flushPendingSince = holds ? HostTime.now() : nil
            return holds
        }
        if holds { renderer.holding.store(true, ordering: .releasing) }
        renderer.discardAll()
        returnPendingBuffers(&d)
        wake.signal()
    }

    /// Feeder: flushes the device for a pending reset once the ring holds the device's
    /// latency of new audio and a period (it refills what it held at once), the end of the
    /// data is in it (`final`), or the device's latency has passed (the new audio is slow to
    /// come, or never comes: the old audio stops then, no later than it did without a flush;
    /// flushing earlier would only trade it for silence).
    private func flushAfterReset(final: Bool) {
        guard let since = control.withLock({ $0.flushPendingSince }) else { return }
        transport.withLock {
            let device = control.withLock { s -> (any AudioOutputDevice)? in
                guard s.flushPendingSince == since else { return nil }
                return s.device
            }
            guard let device else { return }
            let period = Double(device.framesPerRender) / deviceFormat.sampleRate
            // The device refills what it held (at most its latency) at once: have that much and
            // a period more, or the refill ends in silence.
            let latency = max(device.latency, period)
            let ready = Double(renderer.freshFrames) / deviceFormat.sampleRate >= latency + period
            let late = HostTime.seconds(ticks: HostTime.now() - since) >= latency
            guard ready || final || late else { return }
            device.flush { renderer.holding.store(false, ordering: .releasing) }
            control.withLock { s in
                s.flushPendingSince = nil
                // The new audio is heard from here: the timeline restarts at the flush.
                s.playedAtStart = device.playedFrames
            }
        }
    }

    /// Control: no reset waits for a flush any more (the queue stops or the device goes).
    private func cancelFlushAfterReset() {
        control.withLock { $0.flushPendingSince = nil }
        renderer.holding.store(false, ordering: .releasing)
    }

    /// Disposes of the queue: immediately stops and releases everything; otherwise plays out what
    /// is enqueued first (waits for it).
    public func dispose(immediately: Bool) {
        if !immediately {
            let running = control.withLock { $0.isRunning }
            if running {
                stop(immediately: false)
                let deadline = HostTime.now() + HostTime.ticks(seconds: 600)
                while (control.withLock { $0.isRunning }) && HostTime.now() < deadline { usleep_ms(5) }
            }
        }
        let feeder = withTransport { d -> JoinableThread? in
            control.withLock { $0.disposed = true }
            stopLocked(immediately: true, &d)
            return control.withLock { s -> JoinableThread? in defer { s.feeder = nil }; return s.feeder }
        }
        wake.signal()
        feeder?.join()
        control.withLock { s in
            s.buffers.removeAll()
            s.listeners.removeAll()
            s.eventHandler = nil
        }
    }

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

    private func updateProcessing(_ change: (inout ControlState) -> Void) {
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

    // MARK: Offline rendering

    /// Switches the queue to offline rendering (Apple's `AudioQueueSetOfflineRenderFormat`):
    /// no device; ``renderOffline(into:frames:timeStamp:)`` pulls the audio as fast as the
    /// queue can decode it. Set it while the queue is stopped; `false` returns to the device.
    public func setOfflineRendering(_ enabled: Bool) throws(AudioError) {
        try control.withLock { (s) throws(AudioError) in
            guard !s.isRunning, s.device == nil else {
                throw AudioError(.invalidState, component: component, "offline rendering can only be switched while the queue is stopped", osStatus: -66626)
            }
            s.offline = enabled
        }
    }

    /// True in offline mode.
    public var isOfflineRendering: Bool { control.withLock { $0.offline } }

    /// Renders the next `frames` frames into planar `buffers` (Apple's `AudioQueueOfflineRender`),
    /// waiting for the queue's thread to decode them; returns the frames of audio rendered
    /// (fewer only at the end of the stream; the rest of the buffers is silence). The queue must
    /// be started, in offline mode. `timeStamp` (host time valid) places this render on the host
    /// clock so that a ``start(at:)`` host time takes effect; by default the render's host time
    /// follows its sample time from the first render.
    public func renderOffline(into buffers: UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>, frames: Int,
                              timeStamp: AudioTimeStamp? = nil) throws(AudioError) -> Int {
        let device = try control.withLock { (s) throws(AudioError) -> OfflineOutputDevice in
            guard s.offline, let d = s.device as? OfflineOutputDevice, s.isRunning else {
                throw AudioError(.invalidState, component: component, "offline render needs a started queue in offline mode", osStatus: -66626)
            }
            return d
        }
        guard buffers.count == deviceFormat.channels, frames >= 0, frames <= 65536 else {
            throw AudioError(.invalidArgument, component: component, "offline render takes \(deviceFormat.channels) buffers and 0...65536 frames", osStatus: -50)
        }
        var done = 0
        var idleSpins = 0
        var waits = 0
        while done < frames {
            // Wait until the ring holds the rest, the stream ended, or nothing more comes for
            // 50 ms. Decoded buffers come back only once rendered (and a program refills them
            // then, as Apple's callbacks run during the offline render): with nothing being
            // decoded and buffers held, render what the ring has at once.
            while renderer.queuedFrames < Int64(frames - done) && renderer.endFrame.load(ordering: .acquiring) == Int64.max {
                wake.signal()
                offlineSpace.signal()
                if offlineData.wait(timeout: .now() + .milliseconds(2)) == .timedOut {
                    let (noneEnqueued, holding) = control.withLock { ($0.pending.isEmpty, !$0.held.isEmpty) }
                    let feederDone = noneEnqueued && feederIdle.load(ordering: .acquiring)
                    if feederDone && holding { break }
                    idleSpins = feederDone ? idleSpins + 1 : 0
                    if idleSpins > 25 { break }
                }
            }
            let part = UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>.allocate(capacity: buffers.count)
            defer { part.deallocate() }
            for c in 0..<buffers.count { part[c] = buffers[c] + done }
            let got = device.render(part, frames: frames - done, timeStamp: timeStamp, offset: done)
            offlineSpace.signal()
            done += got
            if got > 0 {
                idleSpins = 0
                waits = 0
                continue
            }
            // Nothing rendered: the end was played, nothing came for 50 ms, or the buffers
            // render passed are on their way back to the program (wait for them, 5 s at most).
            if renderer.consumed.load(ordering: .acquiring) >= renderer.endFrame.load(ordering: .acquiring) || idleSpins > 25 { break }
            waits += 1
            if waits > 2500 { break }
            wake.signal()
            _ = offlineData.wait(timeout: .now() + .milliseconds(2))
        }
        for c in 0..<buffers.count { (buffers[c] + done).update(repeating: 0, count: frames - done) }
        return done
    }

    /// Turns level metering on or off (`kAudioQueueProperty_EnableLevelMetering`).
    public var isLevelMeteringEnabled: Bool {
        get { renderer.meteringEnabled.load(ordering: .relaxed) }
        set { renderer.meteringEnabled.store(newValue, ordering: .relaxed) }
    }

    private let lastLevels = Locked<[AudioQueueLevelMeterState]>([])

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

    // MARK: Internals

    private func openDevice() throws(AudioError) {
        let needs = try control.withLock { (s) throws(AudioError) -> Bool in
            guard !s.disposed else { throw AudioError(.invalidState, component: component, "the queue is disposed", osStatus: -66671) }
            return s.device == nil
        }
        guard needs else { return }
        let device: any AudioOutputDevice = control.withLock { $0.offline } ? OfflineOutputDevice(format: deviceFormat) : try deviceFactory(deviceFormat)
        guard device.format.channels == deviceFormat.channels else {
            device.close()
            throw AudioError(.deviceUnavailable, component: component, "device \(device.name) opened with \(device.format), queue needs \(deviceFormat)")
        }
        control.withLock { s in
            if s.device == nil { s.device = device } else { device.close() }
        }
    }

    private func setRunning(_ running: Bool, _ d: inout Deferred) {
        let changed = control.withLock { s -> Bool in
            guard s.isRunning != running else { return false }
            s.isRunning = running
            return true
        }
        if changed { d.add { [self] in notify(.isRunning) } }
    }

    /// The decoder for the current format and cookie; a failure becomes the queue's converter
    /// error (property, listener, event) once per distinct error, and nil.
    private func makeConverterReporting() -> AudioConverter? {
        do throws(AudioError) {
            return try makeConverter()
        } catch {
            let fresh = control.withLock { s -> Bool in
                guard s.converterError != error else { return false }
                s.converterError = error
                return true
            }
            if fresh {
                notify(.converterError)
                post(.converterError(error))
            }
            return nil
        }
    }

    private func notify(_ property: AudioQueueProperty) {
        let (listeners, handler) = control.withLock { s in (Array(s.listeners.values), s.eventHandler) }
        for l in listeners { l(self, property) }
        handler?(.propertyChanged(property))
    }

    private func post(_ event: AudioOutputQueueEvent) {
        control.withLock { $0.eventHandler }?(event)
    }

    /// Takes every buffer the queue holds (decoded or not), to be handed back in order once
    /// the transport lock is released.
    private func returnPendingBuffers(_ d: inout Deferred) {
        let buffers = control.withLock { s -> [AudioQueueBuffer] in
            defer { s.pending.removeAll(); s.held.removeAll() }
            return s.held.map(\.buffer) + s.pending.map(\.buffer)
        }
        guard !buffers.isEmpty else { return }
        d.add { [self] in for b in buffers { outputCallback(self, b) } }
    }

    /// Feeder: takes what render reported (buffer ends it passed and when they are heard), hands
    /// back, in order, the buffers whose audio has been played (a queue that is not running keeps
    /// them), and returns when the next one is due (nil: nothing to wait for).
    @discardableResult
    private func returnPlayedBuffers() -> UInt64? {
        var heard: [QueueRenderer.HeardEnd] = []
        while let h = renderer.heardEnds.pop() { heard.append(h) }
        let now = HostTime.now()
        let (due, next) = control.withLock { s -> ([AudioQueueBuffer], Held?) in
            if !heard.isEmpty {
                var k = 0
                for i in s.held.indices where s.held[i].heardAt == nil {
                    while k < heard.count && heard[k].end < s.held[i].end { k += 1 }
                    guard k < heard.count else { break }
                    s.held[i].heardAt = heard[k].hostTime
                }
            }
            // Paused, the device holds its audio: nothing is played (`.whenCopied` hands back as before).
            guard s.isRunning, !s.isPaused || bufferReturn == .whenCopied else { return ([], nil) }
            var n = 0
            while n < s.held.count, let at = s.held[n].heardAt, at <= now { n += 1 }
            defer { s.held.removeFirst(n) }
            return (s.held[0..<n].map(\.buffer), n < s.held.count ? s.held[n] : nil)
        }
        for b in due { outputCallback(self, b) }
        guard let next else { return nil }
        if let at = next.heardAt { return at }
        // Not reached by render yet: about when it will be, at the device's rate (render answers
        // at its next call, so no sooner than 5 ms: no spinning while it comes).
        let ahead = max(0, next.end - renderer.consumed.load(ordering: .acquiring))
        return now + max(5_000_000, UInt64(Double(ahead) / deviceFormat.sampleRate * 1e9))
    }

    private let feederIdle = Atomic<Bool>(true)

    /// Tests: replaces how the queue's thread is started (before it is).
    func setThreadStarter(_ starter: @escaping ThreadStarter) { control.withLock { $0.startThread = starter } }

    /// Starts the queue's thread once; throws when it cannot be started (the queue would
    /// never play).
    private func ensureFeeder() throws(AudioError) {
        try control.withLock { (s) throws(AudioError) in
            guard !s.feederStarted, !s.disposed else { return }
            // The new thread's first step takes this lock, so it waits until we are done here.
            do throws(AudioError) {
                s.feeder = try s.startThread("oat-queue") { [self] in feederLoop() }
            } catch {
                throw AudioError(.deviceUnavailable, component: component,
                                 "cannot start the queue's thread: \(error.message)", osStatus: -66681)
            }
            s.feederStarted = true
        }
    }

    /// The queue's own thread: decodes enqueued buffers into the ring, returns them through the
    /// callback, watches the device, and ends the stream.
    private func feederLoop() {
        var converter: AudioConverter? = makeConverterReporting()
        let scratch = try! AudioPCMBuffer(format: .linearPCM(sampleRate: deviceFormat.sampleRate, channels: UInt32(deviceFormat.channels), bitsPerChannel: 32, isFloat: true), frameCapacity: 4096)
        var generation = control.withLock { $0.generation }
        var processingVersion = -1
        var ended = false
        /// When the next held buffer is due back (host time), if any.
        var nextDue: UInt64?
        /// Buffer ends render's queue had no room for yet (more than 1024 buffers in the ring).
        var unsentEnds: [Int64] = []
        while true {
            // Enqueue, start, stop and reset signal `wake`; otherwise look at the device now and
            // then (events, the end of a drained stream) without spinning, and wake when the next
            // buffer has been played.
            var timeout = UInt64(feederIdle.load(ordering: .relaxed) ? 50 : 5) * 1_000_000
            if let due = nextDue {
                let now = HostTime.now()
                timeout = min(timeout, due > now ? due - now : 0)
            }
            if timeout > 0 { _ = wake.wait(timeout: .now() + .nanoseconds(Int(timeout))) }
            if control.withLock({ $0.disposed }) { break }
            if control.withLock({ $0.cookieChanged }) { converter = makeConverterReporting() }
            // Generation change (reset/stop): start the decoder afresh.
            let g = control.withLock { $0.generation }
            if g != generation {
                generation = g
                converter?.reset()
                chain.reset()
                ended = false
            }
            let (version, settings, taps) = control.withLock { ($0.processingVersion, $0.timePitch, $0.taps) }
            if version != processingVersion {
                processingVersion = version
                let failure = chain.configure(settings, taps: taps)
                let changed = control.withLock { s -> Bool in
                    defer { s.timePitchError = failure }
                    return s.timePitchError != failure
                }
                if changed, let failure { post(.timePitchError(failure)) }
            }
            while let e = unsentEnds.first, renderer.bufferEnds.push(e) { unsentEnds.removeFirst() }
            nextDue = returnPlayedBuffers()
            handleDeviceEvents(&ended)
            // The buffer's contents are copied while it is certainly still pending: once a
            // concurrent stop or reset has handed it back, the app may refill it at once.
            let claimed = control.withLock { s -> (Pending, [UInt8], [AudioStreamPacketDescription])? in
                guard let p = s.pending.first else { return nil }
                let b = p.buffer
                return (p, Array(UnsafeRawBufferPointer(rebasing: b.audioData[0..<b.audioDataByteSize])), b.packetDescriptions)
            }
            guard case let (next, contents, descriptions)? = claimed else {
                let (flush, stopAfter) = control.withLock { ($0.flushRequested, $0.stopAfterQueued) }
                if flush || stopAfter, let c = converter {
                    try? c.endOfInput()
                    drain(c, scratch, generation: generation, trimEnd: 0)
                    _ = chain.finish { emit($0, generation: generation) }
                    c.reset()
                    control.withLock { $0.flushRequested = false }
                }
                // Everything enqueued before the end is in the ring: nothing more will come.
                flushAfterReset(final: stopAfter)
                if stopAfter && !ended {
                    renderer.markEnd()
                    ended = true
                    // A queue that never started still ends.
                    if !(control.withLock { $0.isRunning }) { finishStop() }
                }
                // Idle only once the end-of-stream work is done (an offline render that sees
                // an idle feeder stops waiting for more audio).
                feederIdle.store(true, ordering: .releasing)
                continue
            }
            feederIdle.store(false, ordering: .releasing)
            ended = false
            if let c = converter {
                decode(next, contents: contents, descriptions: descriptions, with: c, scratch: scratch, generation: generation)
            } else {
                converter = makeConverterReporting()
            }
            // Hold the buffer until its audio has been played (or hand it back now, for
            // `.whenCopied`), unless a reset/stop already handed it back; a queue not running yet
            // keeps it until it starts. Buffers come back in the order they were enqueued.
            let end = renderer.written.load(ordering: .acquiring)
            let track = control.withLock { s -> Bool in
                guard s.generation == generation, let i = s.pending.firstIndex(where: { $0.buffer === next.buffer }) else { return false }
                s.pending.remove(at: i)
                s.held.append(Held(buffer: next.buffer, end: end, heardAt: bufferReturn == .whenCopied ? 0 : nil))
                return bufferReturn == .whenPlayed
            }
            if track && (!unsentEnds.isEmpty || !renderer.bufferEnds.push(end)) { unsentEnds.append(end) }
            nextDue = returnPlayedBuffers()
            flushAfterReset(final: false)
        }
    }

    private func decode(_ item: Pending, contents: [UInt8], descriptions: [AudioStreamPacketDescription],
                        with converter: AudioConverter, scratch: AudioPCMBuffer, generation: Int) {
        var batch = AudioPacketBatch()
        batch.data = contents
        // Constant-size packets (linear PCM included) are the buffer's bytes: descriptions
        // passed with them are ignored, as Apple's queues do (stale ones must not drop audio).
        if descriptions.isEmpty || format.bytesPerPacket > 0 {
            let bpp = max(1, Int(format.bytesPerPacket))
            batch.packetCount = contents.count / bpp
        } else {
            batch.packetDescriptions = descriptions
            batch.packetCount = descriptions.count
        }
        let before = converter.decodedFrameCount
        do {
            try converter.decode(batch)
        } catch {
            control.withLock { $0.converterError = error }
            notify(.converterError)
            post(.converterError(error))
        }
        if let e = converter.lastDecodeError, control.withLock({ $0.converterError }) != e {
            control.withLock { $0.converterError = e }
            notify(.converterError)
            post(.converterError(e))
        }
        _ = before
        // Start-time alignment: insert silence so the buffer starts at its sample time.
        if let start = item.options.startSampleTime {
            let at = renderer.written.load(ordering: .relaxed) - control.withLock({ $0.playedAtStart })
            let gap = Int64(start) - at
            if gap > 0 { writeSilence(Int(gap), generation: generation) }
        }
        // Per-buffer trimming applies to the frames this buffer produced.
        var skip = item.options.trimFramesAtStart
        while skip > 0 {
            let n = converter.read(into: scratch, maxFrames: skip)
            if n == 0 { break }
            skip -= n
        }
        drain(converter, scratch, generation: generation, trimEnd: item.options.trimFramesAtEnd)
    }

    /// Moves decoded frames from the converter into the ring, keeping back `trimEnd` frames
    /// (dropped), waiting while the ring is full; stops early on a reset/stop.
    private func drain(_ converter: AudioConverter, _ scratch: AudioPCMBuffer, generation: Int, trimEnd: Int) {
        while converter.bufferedFrameCount > trimEnd {
            let n = converter.read(into: scratch, maxFrames: converter.bufferedFrameCount - trimEnd)
            if n == 0 { break }
            let samples = scratch.floatChannel(0)!
            let ok = chain.push(UnsafeBufferPointer(rebasing: samples[0..<(n * deviceFormat.channels)])) { emit($0, generation: generation) }
            if !ok { return }
        }
        if trimEnd > 0 {
            var left = converter.bufferedFrameCount
            while left > 0 {
                let n = converter.read(into: scratch, maxFrames: left)
                if n == 0 { break }
                left -= n
            }
        }
    }

    /// Writes processed interleaved frames into the play ring, waiting while it is full; false
    /// when a reset/stop made them stale.
    private func emit(_ frames: UnsafeBufferPointer<Float>, generation: Int) -> Bool {
        let n = frames.count / deviceFormat.channels
        var offset = 0
        let offline = control.withLock { $0.offline }
        while offset < n {
            if control.withLock({ $0.generation != generation || $0.disposed }) { return false }
            let wrote = renderer.write(UnsafeBufferPointer(rebasing: frames[(offset * deviceFormat.channels)..<(n * deviceFormat.channels)]))
            offset += wrote
            if offline && wrote > 0 { offlineData.signal() }
            if wrote == 0 {
                var ignored = false
                handleDeviceEvents(&ignored)
                if offline {
                    _ = offlineSpace.wait(timeout: .now() + .milliseconds(20))
                    continue
                }
                // The ring is full: sleep until a quarter of it has played (at most 100 ms),
                // not just this chunk's worth: a full ring holds seconds of audio, and waking for
                // every few milliseconds of room was most of a steady stream's CPU (the ring
                // refills in one go, and a reset or stop is still seen within 100 ms).
                let want = max(min(n - offset, 4096), renderer.capacityFrames / 4)
                let missing = max(0, want - renderer.freeFrames)
                var sleep = max(2, min(100, Int(Double(missing) / deviceFormat.sampleRate * 1000)))
                // Buffers played meanwhile still come back on time.
                if let due = returnPlayedBuffers() {
                    let now = HostTime.now()
                    sleep = max(1, min(sleep, due > now ? Int((due - now) / 1_000_000) + 1 : 1))
                }
                usleep_ms(sleep)
            }
        }
        return true
    }

    private func writeSilence(_ frames: Int, generation: Int) {
        let zeros = [Float](repeating: 0, count: 1024 * deviceFormat.channels)
        var left = frames
        while left > 0 {
            if control.withLock({ $0.generation != generation || $0.disposed }) { return }
            let n = min(left, 1024)
            let ok = zeros.withUnsafeBufferPointer { z in
                chain.push(UnsafeBufferPointer(rebasing: z[0..<(n * deviceFormat.channels)])) { emit($0, generation: generation) }
            }
            if !ok { return }
            left -= n
        }
    }

    private func handleDeviceEvents(_ ended: inout Bool) {
        guard let device = control.withLock({ $0.device }) else { return }
        for event in device.takeEvents() {
            switch event {
            case .drained:
                finishStop()
            case .started:
                break
            default:
                post(.device(event))
            }
        }
        let u = renderer.underruns.load(ordering: .relaxed)
        let report = control.withLock { s -> Bool in
            defer { s.lastUnderruns = u }
            return u > s.lastUnderruns
        }
        if report { post(.underrun(count: u)) }
    }

    private func finishStop() {
        withTransport { d in finishStopLocked(&d) }
    }

    private func finishStopLocked(_ d: inout Deferred) {
        guard control.withLock({ !$0.disposed && ($0.device != nil || $0.isRunning || $0.stopAfterQueued) }) else { return }
        let device = control.withLock { s -> (any AudioOutputDevice)? in
            defer { s.device = nil; s.stopAfterQueued = false; s.isPaused = false }
            return s.device
        }
        device?.stop(drain: false)
        device?.close()
        cancelFlushAfterReset()
        renderer.discardAll()
        renderer.startHostTime.store(0, ordering: .releasing)
        // Everything has been played (or the queue ended without running, stopped before any
        // start): the buffers come back, then the queue reports that it stopped.
        returnPendingBuffers(&d)
        setRunning(false, &d)
        d.add { [self] in post(.ended) }
    }
}

/// 20·log10(x), with silence as -120 dB.
func decibels(_ x: Float) -> Float {
    x > 1e-6 ? 20 * log10f(x) : -120
}

func usleep_ms(_ ms: Int) {
    sleepUntil(hostTime: HostTime.now() + UInt64(ms) * 1_000_000)
}
