#if canImport(Glibc)
import Glibc
#endif
import OATConversion
import OATCore
import OATDevices
import Synchronization

/// Opens the input device an ``AudioInputQueue`` records from, for the device format it needs.
public typealias AudioInputDeviceFactory = @Sendable (AudioDeviceFormat) throws(AudioError) -> any AudioInputDevice

/// Something an input queue reports, on its own thread, to ``AudioInputQueue/eventHandler``.
public enum AudioInputQueueEvent: Sendable, Equatable {
    /// The device reported something (overrun, loss).
    case device(AudioDeviceEvent)
    /// Captured frames were dropped because no buffer was enqueued in time (Apple's record
    /// underrun): the total so far.
    case droppedFrames(total: Int64)
    /// The encoder failed; the queue stopped.
    case encoderError(AudioError)
    /// The queue stopped by itself: the frame limit was reached, or the device was lost.
    case finished
}

/// A buffer the queue filled, as the input callback receives it.
public struct AudioInputQueueDelivery: @unchecked Sendable {
    /// The buffer: ``QueueBuffer/audioDataByteSize`` bytes of packets, described by
    /// ``QueueBuffer/packetDescriptions`` for variable-size formats.
    public var buffer: QueueBuffer
    /// When the first frame of the buffer was captured: sample time in frames of the recorded
    /// stream (it advances by exactly the frames each buffer holds), host time when it reached
    /// the device.
    public var startTime: AudioTimeStamp
    /// Packets in the buffer (Apple's `inNumPackets`).
    public var packetCount: Int
    /// Frames the packets decode to (priming included for compressed formats).
    public var frameCount: Int
}

/// Records through an input device into buffers you enqueue, in any format: linear PCM of any
/// width, rate and channel count, or compressed (AAC, ALAC, FLAC, Opus, MP3, mu-law, A-law,
/// encoded with ``AudioEncoder`` on the queue's thread). Apple's input `AudioQueue`
/// (`AudioQueueNewInput`).
///
/// ```swift
/// let queue = try AudioInputQueue(format: aac, input: { f throws(AudioError) in
///     try AudioInput.open(.auto, format: f).device
/// }) { queue, delivery in
///     try? writer.writePackets(...)         // the buffer's packets
///     try? queue.enqueue(delivery.buffer)   // hand it back
/// }
/// for _ in 0..<3 { try queue.enqueue(try queue.allocateBuffer(byteCapacity: 32768, packetDescriptionCapacity: 64)) }
/// try queue.start()
/// ```
///
/// The device thread only copies captured frames into a preallocated ring; the queue's own
/// thread converts, encodes, meters and calls the callback. Buffers are delivered when full
/// (the next packet would not fit or the packet descriptions run out), and the partial last one
/// at ``stop(immediately:)``.
///
/// Thread safety: the control methods are safe from any thread; callbacks and events arrive on
/// the queue's own thread.
public final class AudioInputQueue: @unchecked Sendable {
    /// The format asked for.
    public let format: AudioStreamBasicDescription
    /// The format of the delivered data, completed by the encoder (frames per packet, bytes per
    /// packet, flags): Apple's `kAudioQueueProperty_StreamDescription` on an input queue.
    public let streamDescription: AudioStreamBasicDescription
    /// The format the device captures at (Float32 at the stream's rate and channels).
    public let deviceFormat: AudioDeviceFormat
    /// Called on the queue's thread with each filled buffer.
    public let inputCallback: @Sendable (AudioInputQueue, AudioInputQueueDelivery) -> Void
    /// Encoder settings (bit rate, quality, strategy).
    public let encoderSettings: AudioEncoderSettings

    let deviceFactory: AudioInputDeviceFactory
    let component = "AudioQueue (input)"
    let shared: CaptureShared
    var ring: SPSCRingBuffer<Float> { shared.ring }
    var anchors: SPSCQueue<CaptureAnchor> { shared.anchors }
    let control = Locked(State())
    let transport = RecursiveLock()
    let meteringOn = Atomic<Bool>(false)
    let bufferFramesLimit = Atomic<Int>(0)
    let levels = Locked<[AudioQueueLevelMeterState]>([])

    struct CaptureAnchor {
        var position: Int64
        var hostTime: UInt64
    }

    /// What the device thread touches: the ring, the time anchors and counters.
    final class CaptureShared: Sendable {
        let ring: SPSCRingBuffer<Float>
        /// (ring frame position, host time) of captured chunks, device thread to queue thread.
        let anchors = SPSCQueue<CaptureAnchor>(minimumCapacity: 256)
        let written = Atomic<Int64>(0)
        let dropped = Atomic<Int64>(0)
        let limit = Atomic<Int64>(Int64.max)
        let channels: Int
        init(capacity: Int, channels: Int) {
            ring = SPSCRingBuffer(minimumCapacity: capacity, zero: 0)
            self.channels = channels
        }

        /// The device thread's capture callback body: copy, note the time, count what does not fit.
        /// Thread safety: real-time safe (no allocation, no locks).
        func capture(_ samples: UnsafeBufferPointer<Float>, _ frames: Int, _ time: AudioTimeStamp) {
            let at = written.load(ordering: .relaxed)
            let allowed = Int(min(Int64(frames), max(0, limit.load(ordering: .relaxed) &- at)))
            guard allowed > 0 else { return }
            if ring.availableToWrite < allowed * channels {
                dropped.add(Int64(allowed), ordering: .relaxed)
                return
            }
            ring.write(UnsafeBufferPointer(rebasing: samples[0..<(allowed * channels)]))
            _ = anchors.push(CaptureAnchor(position: at, hostTime: time.hostTime))
            written.store(at &+ Int64(allowed), ordering: .releasing)
        }
    }

    struct State: QueueBufferRegistry {
        var buffers: [Int: QueueBuffer] = [:]
        var nextBufferID = 0
        var queued: [QueueBuffer] = []
        var device: (any AudioInputDevice)?
        var feeder: JoinableThread?
        var isRunning = false
        var isPaused = false
        var disposed = false
        var stopRequest: StopRequest?
        var resetRequested = false
        var listeners: [Int: @Sendable (AudioInputQueue, AudioQueueProperty) -> Void] = [:]
        var nextListener = 0
        var eventHandler: (@Sendable (AudioInputQueueEvent) -> Void)?
        var encoderBox: EncoderBox?
        var encoder: AudioEncoder? {
            get { encoderBox?.encoder }
            set { encoderBox = newValue.map(EncoderBox.init) }
        }
        var magicCookie: [UInt8]?
        var packetTableInfo: AudioFilePacketTableInfo?
        var deliveredFrames: Int64 = 0
        var deliveredPackets: Int64 = 0
        var encoderError: AudioError?
    }

    /// How the queue's thread ends: `drain` (stop after the queued audio: everything captured,
    /// waiting up to 2 s for buffers), `immediate` (Apple's synchronous stop: capture ends now,
    /// what was captured is delivered into the buffers enqueued, partially filled ones included),
    /// `discard` (dispose, or an encoder failure: nothing more is delivered).
    enum StopRequest: Comparable { case drain, immediate, discard }

    /// The encoder, used by the queue's thread only (creation and reset hand it over).
    final class EncoderBox: @unchecked Sendable {
        let encoder: AudioEncoder
        init(_ encoder: AudioEncoder) { self.encoder = encoder }
    }

    /// Creates an input queue delivering `format` (sample rate and channels must be set;
    /// compressed formats are completed by the encoder). `input` opens the device when the
    /// queue starts. Throws when the format cannot be encoded.
    public init(format: AudioStreamBasicDescription, encoderSettings: AudioEncoderSettings = AudioEncoderSettings(),
                input: @escaping AudioInputDeviceFactory,
                callback: @escaping @Sendable (AudioInputQueue, AudioInputQueueDelivery) -> Void) throws(AudioError) {
        guard format.sampleRate >= 1000, format.sampleRate <= 768_000, format.channelsPerFrame > 0, format.channelsPerFrame <= 8 else {
            throw AudioError(.invalidArgument, component: "AudioQueue (input)", "format needs a sample rate of 1...768 kHz and 1...8 channels: \(format)", osStatus: -50)
        }
        self.format = format
        self.encoderSettings = encoderSettings
        deviceFactory = input
        inputCallback = callback
        deviceFormat = AudioDeviceFormat(sampleRate: format.sampleRate, channels: Int(format.channelsPerFrame))
        let encoder = try Self.makeEncoder(format, encoderSettings)
        streamDescription = encoder.outputFormat
        bufferFramesLimit.store(max(1, Int(format.sampleRate / 2)), ordering: .relaxed)
        shared = CaptureShared(capacity: Int(format.sampleRate * 2) * Int(format.channelsPerFrame), channels: Int(format.channelsPerFrame))
        let box = EncoderBox(encoder)
        control.withLock { s in
            s.encoderBox = box
            s.magicCookie = box.encoder.magicCookie
        }
    }

    deinit { dispose(immediately: true) }

    static func makeEncoder(_ format: AudioStreamBasicDescription, _ settings: AudioEncoderSettings) throws(AudioError) -> AudioEncoder {
        var f = format
        if f.isPCM {
            let bytes = (f.bitsPerChannel + 7) / 8
            f.bytesPerFrame = bytes * f.channelsPerFrame
            f.bytesPerPacket = f.bytesPerFrame
            f.framesPerPacket = 1
        }
        return try AudioEncoder(to: f, sourceBitDepth: f.isPCM ? Int(f.bitsPerChannel) : 16, settings: settings)
    }

    // MARK: Properties

    /// The decoder's magic cookie of the delivered data (AAC AudioSpecificConfig, ALAC atom,
    /// FLAC STREAMINFO, OpusHead), nil for formats without one. Available from creation; FLAC's
    /// is final after a draining stop.
    public var magicCookie: [UInt8]? { control.withLock { $0.magicCookie } }

    /// Priming, remainder and valid frames of what was delivered (final after a draining stop;
    /// nil for PCM).
    public var packetTableInfo: AudioFilePacketTableInfo? { control.withLock { $0.packetTableInfo } }

    /// Frames the encoder puts before the audio (AAC, Opus, MP3 priming; nil for formats
    /// without), known from creation: set it as the file's priming before writing packets.
    public var primingFrames: Int32? {
        let p = control.withLock { $0.encoder?.primeInfo.leadingFrames ?? 0 }
        return p > 0 ? Int32(p) : nil
    }

    /// The largest packet the queue can deliver (`kAudioQueueProperty_MaximumOutputPacketSize`),
    /// for sizing buffers as seed 000's `DeriveBufferSize` does.
    public var maximumOutputPacketSize: Int {
        let f = streamDescription
        let ch = Int(f.channelsPerFrame)
        if f.bytesPerPacket > 0 { return Int(f.bytesPerPacket) }
        switch f.formatID {
        case .mpeg4AAC: return 768 * ch + 64
        case .opus: return 1275 * ch + 16
        case .mpegLayer3: return 2881
        case .appleLossless, .flac:
            let frames = Int(f.framesPerPacket > 0 ? f.framesPerPacket : 4608)
            return frames * ch * 4 + 1024
        default: return 8192 * ch
        }
    }

    /// Whether the queue is running (`kAudioQueueProperty_IsRunning`).
    public var isRunning: Bool { control.withLock { $0.isRunning } }
    /// Frames delivered through the callback since the queue was created (or reset).
    public var deliveredFrames: Int64 { control.withLock { $0.deliveredFrames } }
    /// Captured frames dropped because the queue's ring was full (no buffer enqueued in time).
    public var droppedFrames: Int64 { shared.dropped.load(ordering: .relaxed) }
    /// The device's name while running.
    public var currentDevice: String? { control.withLock { $0.device?.name } }
    /// The encoder error that stopped the queue, if any.
    public var encoderError: AudioError? { control.withLock { $0.encoderError } }

    /// Receives events on the queue's thread.
    public var eventHandler: (@Sendable (AudioInputQueueEvent) -> Void)? {
        get { control.withLock { $0.eventHandler } }
        set { control.withLock { $0.eventHandler = newValue } }
    }

    /// Adds a listener for property changes (``AudioQueueProperty/isRunning``); returns a token.
    @discardableResult
    public func addPropertyListener(_ listener: @escaping @Sendable (AudioInputQueue, AudioQueueProperty) -> Void) -> Int {
        control.withLock { s in
            s.nextListener += 1
            s.listeners[s.nextListener] = listener
            return s.nextListener
        }
    }

    /// Removes a listener.
    public func removePropertyListener(_ token: Int) { control.withLock { _ = $0.listeners.removeValue(forKey: token) } }

    /// Turns level metering on or off (`kAudioQueueProperty_EnableLevelMetering`).
    public var isLevelMeteringEnabled: Bool {
        get { meteringOn.load(ordering: .relaxed) }
        set { meteringOn.store(newValue, ordering: .relaxed) }
    }

    /// Per-channel RMS and peak of the most recently captured audio, linear 0...1
    /// (`kAudioQueueProperty_CurrentLevelMeter`); zeros before any audio or with metering off.
    public func currentLevels() -> [AudioQueueLevelMeterState] {
        let l = levels.withLock { $0 }
        return l.isEmpty ? Array(repeating: AudioQueueLevelMeterState(), count: deviceFormat.channels) : l
    }

    /// The same in dB full scale (`kAudioQueueProperty_CurrentLevelMeterDB`); silence is -120 dB.
    public func currentLevelsDB() -> [AudioQueueLevelMeterState] {
        currentLevels().map { AudioQueueLevelMeterState(averagePower: decibels($0.averagePower), peakPower: decibels($0.peakPower)) }
    }

    /// A buffer is delivered once it holds this many seconds of audio even if it has room for
    /// more (default 0.5 s), so buffers sized generously (seed 000's `DeriveBufferSize` gives
    /// 320 KB for AAC, 20 s of audio) still arrive at a steady pace.
    public var maximumBufferDuration: Double {
        get { Double(bufferFramesLimit.load(ordering: .relaxed)) / format.sampleRate }
        set { bufferFramesLimit.store(max(1, Int(newValue * format.sampleRate)), ordering: .relaxed) }
    }

    /// Stops by itself (as a draining stop, posting ``AudioInputQueueEvent/finished``) once
    /// `frames` captured frames have been taken, counting from the last start after a stop or
    /// reset; nil removes the limit. Set before ``start()`` for an exact length.
    public func setFrameLimit(_ frames: Int64?) {
        shared.limit.store(frames.map { max(0, $0) } ?? Int64.max, ordering: .relaxed)
    }

    // MARK: Buffers

    /// Allocates a buffer of `byteCapacity` bytes with room for `packetDescriptionCapacity`
    /// packet descriptions (Apple's `AudioQueueAllocateBufferWithPacketDescriptions`). For
    /// variable-size formats the capacity limits the packets per buffer; 0 means no limit (the
    /// delivery's ``QueueBuffer/packetDescriptions`` still describe every packet).
    public func allocateBuffer(byteCapacity: Int, packetDescriptionCapacity: Int = 0) throws(AudioError) -> QueueBuffer {
        try control.withLock { (s) throws(AudioError) -> QueueBuffer in
            try s.allocateBuffer(byteCapacity: byteCapacity, packetDescriptionCapacity: packetDescriptionCapacity,
                                 maximumDescriptions: 1 << 20, component: component)
        }
    }

    /// Frees a buffer that is not enqueued.
    public func freeBuffer(_ buffer: QueueBuffer) {
        control.withLock { s in
            guard !s.queued.contains(where: { $0 === buffer }) else { return }
            s.buffers.removeValue(forKey: buffer.id)
        }
    }

    /// Hands an empty buffer to the queue to be filled (Apple's `AudioQueueEnqueueBuffer` on an
    /// input queue).
    public func enqueue(_ buffer: QueueBuffer) throws(AudioError) {
        try control.withLock { (s) throws(AudioError) in
            guard !s.disposed else { throw AudioError(.invalidState, component: component, "the queue is disposed", osStatus: -66671) }
            guard s.buffers[buffer.id] === buffer else {
                throw AudioError(.invalidArgument, component: component, "the buffer is not one of this queue's", osStatus: -66687)
            }
            guard !s.queued.contains(where: { $0 === buffer }) else {
                throw AudioError(.invalidState, component: component, "the buffer is already enqueued", osStatus: -66666)
            }
            buffer.audioDataByteSize = 0
            buffer.packetDescriptions.removeAll(keepingCapacity: true)
            s.queued.append(buffer)
        }
    }

    // MARK: Transport

    /// Starts recording (or resumes after ``pause()``): opens the device, starts capturing and
    /// the queue's thread.
    public func start() throws(AudioError) {
        // Listeners are told once the transport lock is released.
        let started = try transport.withLock { () throws(AudioError) -> Bool in
            let (disposed, running, paused, device) = control.withLock { s in (s.disposed, s.isRunning, s.isPaused, s.device) }
            guard !disposed else { throw AudioError(.invalidState, component: component, "the queue is disposed", osStatus: -66671) }
            if running && paused, let device {
                try device.resume()
                control.withLock { $0.isPaused = false }
                return false
            }
            guard !running else { return false }
            let needsEncoder = control.withLock { $0.encoder == nil }
            if needsEncoder {
                let e = EncoderBox(try Self.makeEncoder(format, encoderSettings))
                control.withLock { s in s.encoderBox = e; s.magicCookie = e.encoder.magicCookie; s.packetTableInfo = nil }
            }
            let opened = try deviceFactory(deviceFormat)
            guard opened.format == deviceFormat else {
                opened.close()
                throw AudioError(.unsupportedFormat, component: component, "the input \(opened.name) runs at \(opened.format), not \(deviceFormat)")
            }
            // Drop whatever an earlier run left in the ring.
            _ = ring.skip(ring.availableToRead)
            while anchors.pop() != nil {}
            let shared = self.shared
            shared.written.store(0, ordering: .relaxed)
            let capture: AudioCaptureCallback = { samples, frames, time in shared.capture(samples, frames, time) }
            control.withLock { s in
                s.device = opened
                s.isRunning = true
                s.isPaused = false
                s.stopRequest = nil
            }
            do throws(AudioError) {
                try opened.start(capture)
                let feeder = try JoinableThread(name: "oat-aq-in") { [self] in runFeeder() }
                control.withLock { $0.feeder = feeder }
            } catch {
                opened.close()
                control.withLock { s in s.device = nil; s.isRunning = false }
                throw error
            }
            return true
        }
        if started { notify(.isRunning) }
    }

    /// Pauses capturing; ``start()`` resumes. Audio captured before the pause is still delivered.
    public func pause() throws(AudioError) {
        try transport.withLock { () throws(AudioError) in
            let (running, paused, device) = control.withLock { s in (s.isRunning, s.isPaused, s.device) }
            guard running, !paused, let device else {
                throw AudioError(.invalidState, component: component, "pause while not recording", osStatus: -66678)
            }
            try device.pause()
            control.withLock { $0.isPaused = true }
        }
    }

    /// Stops recording. Capture ends now; everything captured is converted, the encoder is
    /// drained (its last packets, the final packet table and FLAC cookie) and delivered through
    /// the callback, the last buffer partially filled, before this returns. `immediately`
    /// (Apple's synchronous stop, as in the guide's recorder, whose callback writes what it gets
    /// before it checks whether the queue still runs): into the buffers enqueued, without waiting
    /// for more. Otherwise it waits up to two seconds for buffers to be enqueued. Called from the
    /// input callback, the stop completes after the callback returns. The callbacks run with no
    /// lock of the queue held.
    public func stop(immediately: Bool) {
        stop(immediately ? .immediate : .drain)
    }

    func stop(_ request: StopRequest) {
        // The queue's thread delivers while this waits for it: not under the transport lock, so
        // that a callback may call the queue's transport.
        let (device, feeder) = transport.withLock {
            control.withLock { s -> ((any AudioInputDevice)?, JoinableThread?) in
                guard s.isRunning else { return (nil, nil) }
                s.stopRequest = max(s.stopRequest ?? request, request)
                return (s.device, s.feeder)
            }
        }
        device?.stop()
        feeder?.join()
        let stopped = transport.withLock { finishStop() }
        if stopped { notify(.isRunning) }
    }

    /// Discards captured audio not yet delivered and restarts the encoder (Apple's
    /// `AudioQueueReset`); enqueued buffers stay enqueued.
    public func reset() {
        control.withLock { s in
            if s.isRunning { s.resetRequested = true } else { s.encoder = nil; s.deliveredFrames = 0; s.deliveredPackets = 0 }
        }
    }

    /// Stops (see ``stop(immediately:)``) and releases the buffers.
    public func dispose(immediately: Bool) {
        stop(immediately ? .discard : .drain)
        control.withLock { s in
            s.disposed = true
            s.queued.removeAll()
            s.buffers.removeAll()
            s.listeners.removeAll()
            s.eventHandler = nil
        }
    }

    /// Tears down after the feeder ended (transport lock held); true when it stopped a running
    /// queue (the caller tells the listeners, with no lock held).
    func finishStop() -> Bool {
        let (device, wasRunning) = control.withLock { s -> ((any AudioInputDevice)?, Bool) in
            let d = s.device
            let r = s.isRunning
            s.device = nil
            s.feeder = nil
            s.isRunning = false
            s.isPaused = false
            return (d, r)
        }
        device?.stop()
        device?.close()
        return wasRunning
    }

    func notify(_ property: AudioQueueProperty) {
        let listeners = control.withLock { Array($0.listeners.values) }
        for l in listeners { l(self, property) }
    }

    func post(_ event: AudioInputQueueEvent) {
        control.withLock { $0.eventHandler }?(event)
    }
}
