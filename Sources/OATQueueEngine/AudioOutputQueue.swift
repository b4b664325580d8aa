#if canImport(Glibc)
import Glibc
#endif
import OATConversion
import OATCore
import OATDevices
import OATProcessing
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
    public let outputCallback: @Sendable (AudioOutputQueue, QueueBuffer) -> Void
    /// When buffers come back (default: when played, as Apple's queues do).
    public let bufferReturn: AudioOutputQueueBufferReturn

    let renderer: QueueRenderer
    let deviceFactory: AudioOutputDeviceFactory
    let control = Locked(ControlState())
    /// Serialises start, pause, stop, reset, dispose and the end of a drained stream, so that
    /// disposing while another thread starts cannot leave a device running (the AudioStreamer
    /// hang of seed 002). Never held by the render thread.
    let transport = RecursiveLock()
    let wake = DispatchSemaphore(value: 0)
    let component = "AudioQueue"

    struct Pending {
        var buffer: QueueBuffer
        var options: AudioQueueEnqueueOptions
    }

    /// A decoded buffer waiting to come back: its audio ends at ring frame `end`, heard at
    /// host time `heardAt` (nil: render has not reached it yet; 0: at once).
    struct Held {
        var buffer: QueueBuffer
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

    struct ControlState: QueueBufferRegistry {
        var pending: [Pending] = []
        /// Buffers decoded into the ring, in order, until they are played (or, with
        /// ``AudioOutputQueueBufferReturn/whenCopied``, at once). Apple's queue hands nothing back
        /// before it runs, so buffers decoded before the start (a prime) wait for it.
        var held: [Held] = []
        var startThread: ThreadStarter = { name, body throws(AudioError) in try JoinableThread(name: name, body) }
        var buffers: [Int: QueueBuffer] = [:]
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
    let chain: QueueProcessingChain
    /// Offline rendering: the feeder waits on `offlineSpace` when the ring is full and signals
    /// `offlineData` when it wrote; ``renderOffline(into:frames:timeStamp:)`` does the reverse.
    let offlineSpace = DispatchSemaphore(value: 0)
    let offlineData = DispatchSemaphore(value: 0)
    /// True while the feeder has nothing to decode (offline rendering and prime look at it).
    let feederIdle = Atomic<Bool>(true)
    let lastLevels = Locked<[AudioQueueLevelMeterState]>([])

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
                callback: @escaping @Sendable (AudioOutputQueue, QueueBuffer) -> Void) throws(AudioError) {
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

    func makeConverter() throws(AudioError) -> AudioConverter {
        let out = AudioStreamBasicDescription.linearPCM(sampleRate: deviceFormat.sampleRate, channels: UInt32(deviceFormat.channels), bitsPerChannel: 32, isFloat: true)
        return try AudioConverter(from: format, to: out, magicCookie: control.withLock { s in
            s.cookieChanged = false
            return s.magicCookie
        })
    }

    // MARK: Buffers

    /// Allocates a buffer of `byteCapacity` bytes with room for `packetDescriptionCapacity`
    /// packet descriptions (Apple's `AudioQueueAllocateBufferWithPacketDescriptions`).
    public func allocateBuffer(byteCapacity: Int, packetDescriptionCapacity: Int = 0) throws(AudioError) -> QueueBuffer {
        try control.withLock { (s) throws(AudioError) -> QueueBuffer in
            try s.allocateBuffer(byteCapacity: byteCapacity, packetDescriptionCapacity: packetDescriptionCapacity,
                                 maximumDescriptions: Int.max, component: component)
        }
    }

    /// Frees a buffer (it must not be enqueued).
    public func freeBuffer(_ buffer: QueueBuffer) {
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
    /// An empty buffer (``QueueBuffer/audioDataByteSize`` 0) is an error, as on Apple
    /// (`kAudioQueueErr_BufferEmpty`). Packet descriptions of a constant-bit-rate format (linear
    /// PCM included) are ignored, as on Apple: the packets are the buffer's bytes.
    public func enqueue(_ buffer: QueueBuffer, options: AudioQueueEnqueueOptions = AudioQueueEnqueueOptions()) throws(AudioError) {
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
    func withTransport<R, E: Error>(_ body: (inout Deferred) throws(E) -> R) throws(E) -> R {
        var deferred = Deferred()
        defer { deferred.run() }
        return try transport.withLock { () throws(E) -> R in try body(&deferred) }
    }

    func startLocked(at startTime: AudioTimeStamp?, _ d: inout Deferred) throws(AudioError) {
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

    func pauseLocked() throws(AudioError) {
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

    func stopLocked(immediately: Bool, _ d: inout Deferred) {
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
            renderer.space.post()
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

    func resetLocked(_ d: inout Deferred) {
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
        renderer.space.post()
        wake.signal()
    }

    /// Feeder: flushes the device for a pending reset once the ring holds the device's
    /// latency of new audio and a period (it refills what it held at once), the end of the
    /// data is in it (`final`), or the device's latency has passed (the new audio is slow to
    /// come, or never comes: the old audio stops then, no later than it did without a flush;
    /// flushing earlier would only trade it for silence).
    func flushAfterReset(final: Bool) {
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
    func cancelFlushAfterReset() {
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
        renderer.space.post()
        feeder?.join()
        control.withLock { s in
            s.buffers.removeAll()
            s.listeners.removeAll()
            s.eventHandler = nil
        }
    }
}

/// 20·log10(x), with silence as -120 dB.
func decibels(_ x: Float) -> Float {
    x > 1e-6 ? 20 * log10f(x) : -120
}

func usleep_ms(_ ms: Int) {
    sleepUntil(hostTime: HostTime.now() + UInt64(ms) * 1_000_000)
}
