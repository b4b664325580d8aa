// Audio Toolbox–compatible AudioQueue (output) API, built on ``AudioOutputQueue``.

import OATCore
import OATDevices
import OATQueueEngine
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// MARK: - Types

/// An audio queue (Apple's `AudioQueueRef`, an opaque pointer).
public typealias AudioQueueRef = OpaquePointer
/// A queue property identifier (Apple's `AudioQueuePropertyID`).
public typealias AudioQueuePropertyID = UInt32
/// A queue parameter identifier (Apple's `AudioQueueParameterID`).
public typealias AudioQueueParameterID = UInt32
/// A queue parameter value (Apple's `AudioQueueParameterValue`).
public typealias AudioQueueParameterValue = Float32
/// A queue timeline (Apple's `AudioQueueTimelineRef`); timelines are not separate objects here.
public typealias AudioQueueTimelineRef = OpaquePointer

/// An audio queue buffer in Apple's C shape (`AudioQueueBuffer`, declared in C with Apple's layout
/// so the callbacks can be C function types). `mAudioData` points at the memory of the Swift API's
/// buffer (`OATQueueEngine.QueueBuffer`) that backs it; the pointer you get from
/// ``AudioQueueAllocateBuffer(_:_:_:)`` is the one the output callback receives, and stays valid
/// until the buffer is freed or the queue disposed.
public typealias AudioQueueBuffer = COATAudioToolboxTypes.AudioQueueBuffer

/// A pointer to an `AudioQueueBuffer` (Apple's `AudioQueueBufferRef`).
public typealias AudioQueueBufferRef = UnsafeMutablePointer<AudioQueueBuffer>

/// Called on the queue's thread with a buffer the queue has finished with (Apple's
/// `AudioQueueOutputCallback`, a C function type as on Apple: pass a global function or a closure
/// that captures nothing; the user data reaches your state).
public typealias AudioQueueOutputCallback = @convention(c) (UnsafeMutableRawPointer?, AudioQueueRef, AudioQueueBufferRef) -> Void
/// Called when a queue property changes (Apple's `AudioQueuePropertyListenerProc`).
public typealias AudioQueuePropertyListenerProc = @convention(c) (UnsafeMutableRawPointer?, AudioQueueRef, AudioQueuePropertyID) -> Void
/// Block form of the output callback (Apple's `AudioQueueOutputCallbackBlock`), called on the
/// dispatch queue given at creation.
public typealias AudioQueueOutputCallbackBlock = (AudioQueueRef, AudioQueueBufferRef) -> Void

/// A queue's time line position and whether it is a discontinuity.
/// A per-buffer parameter event (Apple's `AudioQueueParameterEvent`).
public struct AudioQueueParameterEvent {
    /// The parameter.
    public var mID: AudioQueueParameterID
    /// Its value.
    public var mValue: AudioQueueParameterValue
    /// Apple's memberwise initialiser.
    public init(mID: AudioQueueParameterID, mValue: AudioQueueParameterValue) {
        self.mID = mID
        self.mValue = mValue
    }
}

// MARK: - Constants

/// Whether the queue runs: `UInt32` 0/1, read-only, listenable (`'aqrn'`).
public let kAudioQueueProperty_IsRunning: AudioQueuePropertyID = fourCC("aqrn")
/// Device sample rate: `Float64`, read-only (`'aqsr'`).
public let kAudioQueueDeviceProperty_SampleRate: AudioQueuePropertyID = fourCC("aqsr")
/// Device channel count: `UInt32`, read-only (`'aqdc'`).
public let kAudioQueueDeviceProperty_NumberChannels: AudioQueuePropertyID = fourCC("aqdc")
/// Current device: a string here (Apple: `CFString`), read-only (`'aqcd'`).
public let kAudioQueueProperty_CurrentDevice: AudioQueuePropertyID = fourCC("aqcd")
/// The magic cookie: bytes (`'aqmc'`).
public let kAudioQueueProperty_MagicCookie: AudioQueuePropertyID = fourCC("aqmc")
/// Largest packet of the queue's format: `UInt32`, read-only (`'xops'`).
public let kAudioQueueProperty_MaximumOutputPacketSize: AudioQueuePropertyID = fourCC("xops")
/// The queue's data format: `AudioStreamBasicDescription`, read-only (`'aqft'`).
public let kAudioQueueProperty_StreamDescription: AudioQueuePropertyID = fourCC("aqft")
/// Channel layout (`'aqcl'`): not supported.
public let kAudioQueueProperty_ChannelLayout: AudioQueuePropertyID = fourCC("aqcl")
/// Level metering on/off: `UInt32` (`'aqme'`).
public let kAudioQueueProperty_EnableLevelMetering: AudioQueuePropertyID = fourCC("aqme")
/// Linear levels: array of `AudioQueueLevelMeterState`, one per channel (`'aqmv'`).
public let kAudioQueueProperty_CurrentLevelMeter: AudioQueuePropertyID = fourCC("aqmv")
/// Levels in dB: array of `AudioQueueLevelMeterState` (`'aqmd'`).
public let kAudioQueueProperty_CurrentLevelMeterDB: AudioQueuePropertyID = fourCC("aqmd")
/// Decode buffer size in frames: `UInt32` (`'dcbf'`): accepted, fixed here.
public let kAudioQueueProperty_DecodeBufferSizeFrames: AudioQueuePropertyID = fourCC("dcbf")
/// Last decoder error: `UInt32` OSStatus, read-only, listenable (`'qcve'`).
public let kAudioQueueProperty_ConverterError: AudioQueuePropertyID = fourCC("qcve")
/// Time-pitch processing on/off: `UInt32` 0/1 (`'q_tp'`); PlayRate and Pitch act only while on.
public let kAudioQueueProperty_EnableTimePitch: AudioQueuePropertyID = fourCC("q_tp")
/// Time-pitch algorithm: `UInt32`, one of `kAudioQueueTimePitchAlgorithm_*` (`'qtpa'`).
public let kAudioQueueProperty_TimePitchAlgorithm: AudioQueuePropertyID = fourCC("qtpa")
/// Time-pitch bypass: `UInt32` 0/1 (`'qtpb'`).
public let kAudioQueueProperty_TimePitchBypass: AudioQueuePropertyID = fourCC("qtpb")
/// Hardware codec policy (`'aqcp'`): accepted and ignored (decoding is always in software).
public let kAudioQueueProperty_HardwareCodecPolicy: AudioQueuePropertyID = fourCC("aqcp")

/// Volume 0...1.
public let kAudioQueueParam_Volume: AudioQueueParameterID = 1
/// Playback rate 0.5...2.0 without pitch change (needs `kAudioQueueProperty_EnableTimePitch`).
public let kAudioQueueParam_PlayRate: AudioQueueParameterID = 2
/// Pitch shift in cents, -2400...2400 (needs `kAudioQueueProperty_EnableTimePitch`).
public let kAudioQueueParam_Pitch: AudioQueueParameterID = 3
/// Volume ramp time in seconds.
public let kAudioQueueParam_VolumeRampTime: AudioQueueParameterID = 4
/// Pan -1...1.
public let kAudioQueueParam_Pan: AudioQueueParameterID = 13

/// The buffer is not one of the queue's (Apple's value).
public let kAudioQueueErr_InvalidBuffer: OSStatus = -66687
/// The buffer is empty.
public let kAudioQueueErr_BufferEmpty: OSStatus = -66686
/// The queue is being disposed.
public let kAudioQueueErr_DisposalPending: OSStatus = -66685
/// Unknown property.
public let kAudioQueueErr_InvalidProperty: OSStatus = -66684
/// Wrong property size.
public let kAudioQueueErr_InvalidPropertySize: OSStatus = -66683
/// Unknown parameter.
public let kAudioQueueErr_InvalidParameter: OSStatus = -66682
/// The queue cannot start.
public let kAudioQueueErr_CannotStart: OSStatus = -66681
/// The device is invalid.
public let kAudioQueueErr_InvalidDevice: OSStatus = -66680
/// The buffer is enqueued.
public let kAudioQueueErr_BufferInQueue: OSStatus = -66679
/// Not allowed in the current run state.
public let kAudioQueueErr_InvalidRunState: OSStatus = -66678
/// Input-only call on an output queue or the reverse.
public let kAudioQueueErr_InvalidQueueType: OSStatus = -66677
/// Permission denied.
public let kAudioQueueErr_Permissions: OSStatus = -66676
/// Bad property value.
public let kAudioQueueErr_InvalidPropertyValue: OSStatus = -66675
/// Prime timed out.
public let kAudioQueueErr_PrimeTimedOut: OSStatus = -66674
/// No codec for the format.
public let kAudioQueueErr_CodecNotFound: OSStatus = -66673
/// Codec access failed.
public let kAudioQueueErr_InvalidCodecAccess: OSStatus = -66672
/// The queue was invalidated (disposed).
public let kAudioQueueErr_QueueInvalidated: OSStatus = -66671
/// Too many processing taps.
public let kAudioQueueErr_TooManyTaps: OSStatus = -66670
/// Invalid tap context.
public let kAudioQueueErr_InvalidTapContext: OSStatus = -66669
/// Recording underrun.
public let kAudioQueueErr_RecordUnderrun: OSStatus = -66668
/// Invalid tap type.
public let kAudioQueueErr_InvalidTapType: OSStatus = -66667
/// The buffer was enqueued twice.
public let kAudioQueueErr_BufferEnqueuedTwice: OSStatus = -66666
/// The queue cannot start yet.
public let kAudioQueueErr_CannotStartYet: OSStatus = -66665
/// Enqueue during a reset.
public let kAudioQueueErr_EnqueueDuringReset: OSStatus = -66632
/// Invalid offline mode.
public let kAudioQueueErr_InvalidOfflineMode: OSStatus = -66626
/// The data format is not supported (Apple's `kAudioFormatUnsupportedDataFormatError`, `'fmt?'`).
public let kAudioFormatUnsupportedDataFormatError: OSStatus = OSStatus(bitPattern: fourCC("fmt?"))

// MARK: - Output selection

/// Where queues opened through the C API play: `OAT_OUTPUT` (`auto`, `pulse`, `pulse:SINK`,
/// `alsa`, `alsa:DEVICE`, `wav:PATH`, `null`, `null:fast`), default `auto`; any of them may end
/// in `,rate=HZ` (`null:rate=HZ`): the device runs at that rate, the queue resamples to it.
enum CompatOutput {
    static func spec() -> AudioOutputSpec {
        guard let raw = getenv("OAT_OUTPUT") else { return .auto }
        return AudioOutputSpec(parsing: String(cString: raw)) ?? .auto
    }

    /// The device format of a queue for `format`: `OAT_OUTPUT`'s `rate=HZ` when it has one (the
    /// stream's channels); nil (the stream's own rate) otherwise.
    static func deviceFormat(for format: AudioStreamBasicDescription) -> AudioDeviceFormat? {
        guard let raw = getenv("OAT_OUTPUT"), let rate = AudioOutputSpec.sampleRate(parsing: String(cString: raw)),
              format.channelsPerFrame > 0, format.channelsPerFrame <= 64 else { return nil }
        return AudioDeviceFormat(sampleRate: rate, channels: Int(format.channelsPerFrame))
    }

    static func open(_ format: AudioDeviceFormat) throws(AudioError) -> any AudioOutputDevice {
        try AudioOutput.open(spec(), format: format).device
    }
}

// MARK: - The queue object behind an AudioQueueRef

final class CompatQueue: @unchecked Sendable {
    enum Delivery {
        case proc(AudioQueueOutputCallback, UnsafeMutableRawPointer?)
        case block(DispatchQueue, AudioQueueOutputCallbackBlock)
        case runLoop(CFRunLoop, AudioQueueOutputCallback, UnsafeMutableRawPointer?)
    }

    struct Listener {
        var id: AudioQueuePropertyID
        var proc: AudioQueuePropertyListenerProc
        var userData: UnsafeMutableRawPointer?
    }

    struct State {
        /// Swift buffers by the address of their C buffer.
        var buffers: [Int: OATQueueEngine.QueueBuffer] = [:]
        var listeners: [Listener] = []
        var disposed = false
        /// The format of ``AudioQueueOfflineRender(_:_:_:_:)`` output, in offline mode.
        var offlineFormat: AudioStreamBasicDescription?
        /// `kAudioQueueProperty_ChannelLayout` as set (C shape).
        var channelLayout: [UInt8]?
    }

    var queue: AudioOutputQueue!
    /// Set for input queues (``AudioQueueNewInput(_:_:_:_:_:_:_:)``); `queue` is then nil.
    var inputSide: CompatInputSide?
    let delivery: Delivery
    let state = Locked(UncheckedSendable(State()))
    /// The handle naming this queue (set by ``register()``).
    var ref: AudioQueueRef { handle! }
    private var handle: AudioQueueRef?

    init(delivery: Delivery) { self.delivery = delivery }

    static func from(_ ref: AudioQueueRef?) -> CompatQueue? {
        CompatHandles.object(ref, as: CompatQueue.self)
    }

    /// Gives this queue its handle.
    func register() -> AudioQueueRef {
        handle = CompatHandles.make(self)
        return ref
    }

    func withState<R>(_ body: (inout State) -> R) -> R { state.withLock { body(&$0.value) } }

    /// The Swift queue returned `buffer`: hand its C buffer to the client.
    func bufferReturned(_ buffer: OATQueueEngine.QueueBuffer) {
        guard let c = AudioQueueBufferRef(bitPattern: buffer.userData) else { return }
        switch delivery {
        case .proc(let proc, let user):
            proc(user, ref, c)
        case .block(let dq, let block):
            let args = UncheckedSendable((block, ref, c))
            dq.async { args.value.0(args.value.1, args.value.2) }
        case .runLoop(let loop, let proc, let user):
            let args = UncheckedSendable((proc, user, ref, c))
            loop.perform { args.value.0(args.value.1, args.value.2, args.value.3) }
        }
    }

    func propertyChanged(_ property: AudioQueueProperty) {
        let id = property.rawValue
        let matching = withState { s in s.listeners.filter { $0.id == id } }
        for l in matching { l.proc(l.userData, ref, id) }
    }

    func swiftBuffer(_ c: AudioQueueBufferRef?) -> OATQueueEngine.QueueBuffer? {
        guard let c else { return nil }
        return withState { $0.buffers[Int(bitPattern: c)] }
    }
}

func status(_ body: () throws(AudioError) -> Void, default code: OSStatus = kAudio_ParamError) -> OSStatus {
    do {
        try body()
        return noErr
    } catch {
        return error.osStatus ?? code
    }
}

private func makeQueue(_ format: UnsafePointer<AudioStreamBasicDescription>?, _ delivery: CompatQueue.Delivery,
                       _ out: UnsafeMutablePointer<AudioQueueRef?>?) -> OSStatus {
    guard let format, let out else { return kAudio_ParamError }
    let box = CompatQueue(delivery: delivery)
    return registerQueue(box, out) { () throws(AudioError) in
        box.queue = try AudioOutputQueue(format: format.pointee, deviceFormat: CompatOutput.deviceFormat(for: format.pointee),
                                         output: { f throws(AudioError) in try CompatOutput.open(f) }) { [weak box] _, buffer in
            box?.bufferReturned(buffer)
        }
        _ = box.queue.addPropertyListener { [weak box] _, property in box?.propertyChanged(property) }
    }
}

/// The end of creating an output or input queue: `open` makes the engine's queue and adds the
/// box's property listener to it; then the box gets its `AudioQueueRef` in `out`. An error from
/// `open` is returned as its `OSStatus` (an unsupported data format when it has none).
func registerQueue(_ box: CompatQueue, _ out: UnsafeMutablePointer<AudioQueueRef?>, open: () throws(AudioError) -> Void) -> OSStatus {
    do {
        try open()
    } catch {
        return error.osStatus ?? kAudioFormatUnsupportedDataFormatError
    }
    out.pointee = box.register()
    return noErr
}

// MARK: - Creation and disposal

/// Creates an output queue for data in `inFormat` (Apple's `AudioQueueNewOutput`).
///
/// With a nil `inCallbackRunLoop` the callback is called on the queue's own thread (Apple's
/// behaviour for nil). With a run loop (``CFRunLoopGetCurrent()``, the stand-in of this module)
/// it is posted to that loop and runs while its thread is in ``CFRunLoopRunInMode(_:_:_:)``;
/// the mode is ignored. Property listeners are called on the queue's thread. The queue plays to the output named
/// by `OAT_OUTPUT` (see docs/PORTING.md), by default PulseAudio, else ALSA, else the null output.
@discardableResult
public func AudioQueueNewOutput(_ inFormat: UnsafePointer<AudioStreamBasicDescription>,
                                _ inCallbackProc: AudioQueueOutputCallback,
                                _ inUserData: UnsafeMutableRawPointer?,
                                _ inCallbackRunLoop: CFRunLoop?,
                                _ inCallbackRunLoopMode: CFString?,
                                _ inFlags: UInt32,
                                _ outAQ: UnsafeMutablePointer<AudioQueueRef?>) -> OSStatus {
    if let loop = inCallbackRunLoop { return makeQueue(inFormat, .runLoop(loop, inCallbackProc, inUserData), outAQ) }
    return makeQueue(inFormat, .proc(inCallbackProc, inUserData), outAQ)
}

/// Creates an output queue whose callback block runs on `inCallbackDispatchQueue` (Apple's
/// `AudioQueueNewOutputWithDispatchQueue`).
@discardableResult
public func AudioQueueNewOutputWithDispatchQueue(_ outAQ: UnsafeMutablePointer<AudioQueueRef?>,
                                                 _ inFormat: UnsafePointer<AudioStreamBasicDescription>,
                                                 _ inFlags: UInt32,
                                                 _ inCallbackDispatchQueue: DispatchQueue,
                                                 _ inCallbackBlock: @escaping AudioQueueOutputCallbackBlock) -> OSStatus {
    makeQueue(inFormat, .block(inCallbackDispatchQueue, inCallbackBlock), outAQ)
}

/// Disposes of a queue and its buffers (Apple's `AudioQueueDispose`). Immediately: stops now;
/// otherwise plays out what is enqueued first. May be called from the queue's callbacks. A queue
/// already disposed of (a second call, or a stale handle) returns `kAudio_ParamError`.
@discardableResult
public func AudioQueueDispose(_ inAQ: AudioQueueRef, _ inImmediate: Bool) -> OSStatus {
    guard let box = CompatQueue.from(inAQ) else { return kAudio_ParamError }
    let already = box.withState { s -> Bool in
        defer { s.disposed = true }
        return s.disposed
    }
    if already { return kAudioQueueErr_DisposalPending }
    if let input = box.inputSide { input.queue.dispose(immediately: inImmediate) } else { box.queue.dispose(immediately: inImmediate) }
    let refs = box.withState { s -> [Int] in
        defer { s.buffers.removeAll() }
        return Array(s.buffers.keys)
    }
    for r in refs { freeCBuffer(r) }
    _ = CompatHandles.remove(inAQ, as: CompatQueue.self)
    return noErr
}

// MARK: - Buffers

private func freeCBuffer(_ address: Int) {
    guard let c = AudioQueueBufferRef(bitPattern: address) else { return }
    c.pointee.mPacketDescriptions?.deallocate()
    c.deinitialize(count: 1)
    c.deallocate()
}

/// Allocates a buffer of `inBufferByteSize` bytes (Apple's `AudioQueueAllocateBuffer`).
@discardableResult
public func AudioQueueAllocateBuffer(_ inAQ: AudioQueueRef, _ inBufferByteSize: UInt32,
                                     _ outBuffer: UnsafeMutablePointer<AudioQueueBufferRef?>) -> OSStatus {
    AudioQueueAllocateBufferWithPacketDescriptions(inAQ, inBufferByteSize, 0, outBuffer)
}

/// Allocates a buffer with room for `inNumberPacketDescriptions` packet descriptions (Apple's
/// `AudioQueueAllocateBufferWithPacketDescriptions`).
@discardableResult
public func AudioQueueAllocateBufferWithPacketDescriptions(_ inAQ: AudioQueueRef, _ inBufferByteSize: UInt32,
                                                           _ inNumberPacketDescriptions: UInt32,
                                                           _ outBuffer: UnsafeMutablePointer<AudioQueueBufferRef?>) -> OSStatus {
    guard let box = CompatQueue.from(inAQ) else { return kAudio_ParamError }
    if box.withState({ $0.disposed }) { return kAudioQueueErr_DisposalPending }
    return status { () throws(AudioError) in
        let b: OATQueueEngine.QueueBuffer
        if let input = box.inputSide {
            b = try input.queue.allocateBuffer(byteCapacity: Int(inBufferByteSize), packetDescriptionCapacity: Int(inNumberPacketDescriptions))
        } else {
            b = try box.queue.allocateBuffer(byteCapacity: Int(inBufferByteSize), packetDescriptionCapacity: Int(inNumberPacketDescriptions))
        }
        var descriptions: UnsafeMutablePointer<AudioStreamPacketDescription>?
        if inNumberPacketDescriptions > 0 {
            descriptions = .allocate(capacity: Int(inNumberPacketDescriptions))
            descriptions!.initialize(repeating: AudioStreamPacketDescription(), count: Int(inNumberPacketDescriptions))
        }
        let c = AudioQueueBufferRef.allocate(capacity: 1)
        c.initialize(to: AudioQueueBuffer(mAudioDataBytesCapacity: inBufferByteSize, mAudioData: b.audioData.baseAddress!,
                                          mAudioDataByteSize: 0, mUserData: nil, mPacketDescriptionCapacity: inNumberPacketDescriptions,
                                          mPacketDescriptions: descriptions, mPacketDescriptionCount: 0))
        b.userData = Int(bitPattern: c)
        box.withState { $0.buffers[Int(bitPattern: c)] = b }
        outBuffer.pointee = c
    }
}

/// Frees a buffer that is not enqueued (Apple's `AudioQueueFreeBuffer`).
@discardableResult
public func AudioQueueFreeBuffer(_ inAQ: AudioQueueRef, _ inBuffer: AudioQueueBufferRef) -> OSStatus {
    guard let box = CompatQueue.from(inAQ) else { return kAudio_ParamError }
    guard let b = box.swiftBuffer(inBuffer) else { return kAudioQueueErr_InvalidBuffer }
    if let input = box.inputSide { input.queue.freeBuffer(b) } else { box.queue.freeBuffer(b) }
    box.withState { _ = $0.buffers.removeValue(forKey: Int(bitPattern: inBuffer)) }
    freeCBuffer(Int(bitPattern: inBuffer))
    return noErr
}

/// Copies the C buffer's size and packet descriptions into its Swift buffer.
private func sync(_ c: AudioQueueBufferRef, _ b: OATQueueEngine.QueueBuffer, _ count: UInt32,
                  _ descriptions: UnsafePointer<AudioStreamPacketDescription>?) -> OSStatus {
    let size = c.pointee.mAudioDataByteSize
    guard size <= c.pointee.mAudioDataBytesCapacity else { return kAudio_ParamError }
    b.audioDataByteSize = Int(size)
    if count > 0, let descriptions {
        b.packetDescriptions = Array(UnsafeBufferPointer(start: descriptions, count: Int(count)))
    } else if c.pointee.mPacketDescriptionCount > 0, let own = c.pointee.mPacketDescriptions {
        let n = min(c.pointee.mPacketDescriptionCount, c.pointee.mPacketDescriptionCapacity)
        b.packetDescriptions = Array(UnsafeBufferPointer(start: own, count: Int(n)))
    } else {
        b.packetDescriptions = []
    }
    return noErr
}

/// Enqueues a filled buffer (Apple's `AudioQueueEnqueueBuffer`). Packet descriptions come from
/// the arguments, else from the buffer's own `mPacketDescriptions`/`mPacketDescriptionCount`.
@discardableResult
public func AudioQueueEnqueueBuffer(_ inAQ: AudioQueueRef, _ inBuffer: AudioQueueBufferRef,
                                    _ inNumPacketDescs: UInt32,
                                    _ inPacketDescs: UnsafePointer<AudioStreamPacketDescription>?) -> OSStatus {
    AudioQueueEnqueueBufferWithParameters(inAQ, inBuffer, inNumPacketDescs, inPacketDescs, 0, 0, 0, nil, nil, nil)
}

/// Enqueues a buffer with trimming and a start time (Apple's
/// `AudioQueueEnqueueBufferWithParameters`). Parameter events are applied when the buffer is
/// enqueued rather than when it starts playing; `outActualStartTime` gets the requested sample
/// time when one was given, else is left as invalid (no flags).
@discardableResult
public func AudioQueueEnqueueBufferWithParameters(_ inAQ: AudioQueueRef, _ inBuffer: AudioQueueBufferRef,
                                                  _ inNumPacketDescs: UInt32,
                                                  _ inPacketDescs: UnsafePointer<AudioStreamPacketDescription>?,
                                                  _ inTrimFramesAtStart: UInt32, _ inTrimFramesAtEnd: UInt32,
                                                  _ inNumParamValues: UInt32,
                                                  _ inParamValues: UnsafePointer<AudioQueueParameterEvent>?,
                                                  _ inStartTime: UnsafePointer<AudioTimeStamp>?,
                                                  _ outActualStartTime: UnsafeMutablePointer<AudioTimeStamp>?) -> OSStatus {
    guard let box = CompatQueue.from(inAQ) else { return kAudio_ParamError }
    if box.withState({ $0.disposed }) { return kAudioQueueErr_DisposalPending }
    guard let b = box.swiftBuffer(inBuffer) else { return kAudioQueueErr_InvalidBuffer }
    if let input = box.inputSide {
        return status({ () throws(AudioError) in try input.queue.enqueue(b) }, default: kAudioQueueErr_InvalidBuffer)
    }
    let synced = sync(inBuffer, b, inNumPacketDescs, inPacketDescs)
    if synced != noErr { return synced }
    if inNumParamValues > 0, let events = inParamValues {
        for e in UnsafeBufferPointer(start: events, count: Int(inNumParamValues)) {
            let r = AudioQueueSetParameter(inAQ, e.mID, e.mValue)
            if r != noErr { return r }
        }
    }
    var options = AudioQueueEnqueueOptions(trimFramesAtStart: Int(inTrimFramesAtStart), trimFramesAtEnd: Int(inTrimFramesAtEnd))
    if let t = inStartTime?.pointee, t.flags.contains(.sampleTimeValid) { options.startSampleTime = t.sampleTime }
    let result = status({ () throws(AudioError) in try box.queue.enqueue(b, options: options) }, default: kAudioQueueErr_InvalidBuffer)
    if result == noErr, let outActualStartTime {
        outActualStartTime.pointee = options.startSampleTime.map { AudioTimeStamp.sample($0) } ?? AudioTimeStamp(rateScalar: 0)
    }
    return result
}

// MARK: - Transport

/// Starts (or resumes) playback, now or at `inStartTime`'s host time (Apple's `AudioQueueStart`).
@discardableResult
public func AudioQueueStart(_ inAQ: AudioQueueRef, _ inStartTime: UnsafePointer<AudioTimeStamp>?) -> OSStatus {
    guard let box = CompatQueue.from(inAQ) else { return kAudio_ParamError }
    if let input = box.inputSide { return status({ () throws(AudioError) in try input.queue.start() }, default: kAudioQueueErr_CannotStart) }
    return status({ () throws(AudioError) in try box.queue.start(at: inStartTime?.pointee) }, default: kAudioQueueErr_CannotStart)
}

/// Decodes ahead so playback can start at once (Apple's `AudioQueuePrime`); 0 frames means
/// "everything enqueued, up to half a second".
@discardableResult
public func AudioQueuePrime(_ inAQ: AudioQueueRef, _ inNumberOfFramesToPrepare: UInt32,
                            _ outNumberOfFramesPrepared: UnsafeMutablePointer<UInt32>?) -> OSStatus {
    guard let box = CompatQueue.from(inAQ) else { return kAudio_ParamError }
    if box.inputSide != nil { return kAudioQueueErr_InvalidQueueType }
    return status({ () throws(AudioError) in
        let n = try box.queue.prime(frames: inNumberOfFramesToPrepare == 0 ? nil : Int(inNumberOfFramesToPrepare))
        outNumberOfFramesPrepared?.pointee = UInt32(clamping: n)
    }, default: kAudioQueueErr_CannotStart)
}

/// Pauses; ``AudioQueueStart(_:_:)`` resumes (Apple's `AudioQueuePause`).
@discardableResult
public func AudioQueuePause(_ inAQ: AudioQueueRef) -> OSStatus {
    guard let box = CompatQueue.from(inAQ) else { return kAudio_ParamError }
    if let input = box.inputSide { return status { () throws(AudioError) in try input.queue.pause() } }
    return status { () throws(AudioError) in try box.queue.pause() }
}

/// Stops: immediately, or after what is enqueued has played (Apple's `AudioQueueStop`).
@discardableResult
public func AudioQueueStop(_ inAQ: AudioQueueRef, _ inImmediate: Bool) -> OSStatus {
    guard let box = CompatQueue.from(inAQ) else { return kAudio_ParamError }
    if let input = box.inputSide { input.queue.stop(immediately: inImmediate) } else { box.queue.stop(immediately: inImmediate) }
    return noErr
}

/// Decodes everything enqueued, including what the decoder holds back (Apple's `AudioQueueFlush`).
@discardableResult
public func AudioQueueFlush(_ inAQ: AudioQueueRef) -> OSStatus {
    guard let box = CompatQueue.from(inAQ) else { return kAudio_ParamError }
    if box.inputSide == nil { box.queue.flush() }
    return noErr
}

/// Drops everything enqueued and resets the decoder (Apple's `AudioQueueReset`).
@discardableResult
public func AudioQueueReset(_ inAQ: AudioQueueRef) -> OSStatus {
    guard let box = CompatQueue.from(inAQ) else { return kAudio_ParamError }
    if let input = box.inputSide { input.queue.reset() } else { box.queue.reset() }
    return noErr
}

// MARK: - Parameters

/// Reads a parameter (Apple's `AudioQueueGetParameter`).
@discardableResult
public func AudioQueueGetParameter(_ inAQ: AudioQueueRef, _ inParamID: AudioQueueParameterID,
                                   _ outValue: UnsafeMutablePointer<AudioQueueParameterValue>) -> OSStatus {
    guard let box = CompatQueue.from(inAQ) else { return kAudio_ParamError }
    if box.inputSide != nil { return kAudioQueueErr_InvalidParameter }
    guard let p = AudioQueueParameter(rawValue: inParamID) else { return kAudioQueueErr_InvalidParameter }
    outValue.pointee = box.queue.parameter(p)
    return noErr
}

/// Sets a parameter (Apple's `AudioQueueSetParameter`). Play rate (0.5...2) and pitch (cents,
/// -2400...2400) act while `kAudioQueueProperty_EnableTimePitch` is on.
@discardableResult
public func AudioQueueSetParameter(_ inAQ: AudioQueueRef, _ inParamID: AudioQueueParameterID,
                                   _ inValue: AudioQueueParameterValue) -> OSStatus {
    guard let box = CompatQueue.from(inAQ) else { return kAudio_ParamError }
    if box.inputSide != nil { return kAudioQueueErr_InvalidParameter }
    guard let p = AudioQueueParameter(rawValue: inParamID) else { return kAudioQueueErr_InvalidParameter }
    return status({ () throws(AudioError) in try box.queue.setParameter(p, inValue) }, default: kAudioQueueErr_InvalidPropertyValue)
}

// MARK: - Time

/// The queue's current time: sample time in frames played since start, and host time
/// (Apple's `AudioQueueGetCurrentTime`). Timelines are not separate objects: pass nil, or any
/// value, for `inTimeline`; the discontinuity flag reports a reset since the last call.
/// Returns `kAudioQueueErr_InvalidRunState` before the queue has started.
@discardableResult
public func AudioQueueGetCurrentTime(_ inAQ: AudioQueueRef, _ inTimeline: AudioQueueTimelineRef?,
                                     _ outTimeStamp: UnsafeMutablePointer<AudioTimeStamp>?,
                                     _ outTimelineDiscontinuity: UnsafeMutablePointer<DarwinBoolean>?) -> OSStatus {
    guard let box = CompatQueue.from(inAQ) else { return kAudio_ParamError }
    if let input = box.inputSide {
        guard input.queue.isRunning else { return kAudioQueueErr_InvalidRunState }
        outTimeStamp?.pointee = AudioTimeStamp(sampleTime: Double(input.queue.deliveredFrames), hostTime: HostTime.now(), rateScalar: 1,
                                               flags: .sampleHostTimeValid)
        outTimelineDiscontinuity?.pointee = DarwinBoolean(false)
        return noErr
    }
    guard let (now, discontinuity) = box.queue.currentTime() else { return kAudioQueueErr_InvalidRunState }
    var time = now
    // The queue's time is in its stream's rate (the device may run at OAT_OUTPUT's rate=HZ).
    let (streamRate, deviceRate) = (box.queue.format.sampleRate, box.queue.deviceFormat.sampleRate)
    if streamRate != deviceRate, deviceRate > 0 { time.mSampleTime = (time.mSampleTime * streamRate / deviceRate).rounded(.down) }
    outTimeStamp?.pointee = time
    outTimelineDiscontinuity?.pointee = DarwinBoolean(discontinuity)
    return noErr
}

/// Creates a timeline for discontinuity reporting (Apple's `AudioQueueCreateTimeline`): the
/// queue itself serves as its timeline.
@discardableResult
public func AudioQueueCreateTimeline(_ inAQ: AudioQueueRef, _ outTimeline: UnsafeMutablePointer<AudioQueueTimelineRef?>) -> OSStatus {
    outTimeline.pointee = inAQ
    return noErr
}

/// Disposes of a timeline (Apple's `AudioQueueDisposeTimeline`): nothing to do.
@discardableResult
public func AudioQueueDisposeTimeline(_ inAQ: AudioQueueRef, _ inTimeline: AudioQueueTimelineRef) -> OSStatus { noErr }

/// The current host time in nanoseconds (Apple's `mach_absolute_time`-based `AudioGetCurrentHostTime`).
public func AudioGetCurrentHostTime() -> UInt64 { HostTime.now() }
