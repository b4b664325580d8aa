// The input (recording) side of the Audio Toolbox–named AudioQueue API, on AudioInputQueue.
import OATCore
import OATDevices
import OATQueueEngine
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Called on the queue's thread with a filled buffer (Apple's `AudioQueueInputCallback`): the
/// buffer, when its first frame was captured, how many packets it holds, and their
/// descriptions (nil for constant-size formats). Enqueue the buffer again to keep recording.
/// A C function type as on Apple: pass a global function or a closure that captures nothing.
public typealias AudioQueueInputCallback = @convention(c) (UnsafeMutableRawPointer?, AudioQueueRef, AudioQueueBufferRef,
                                            UnsafePointer<AudioTimeStamp>, UInt32,
                                            UnsafePointer<AudioStreamPacketDescription>?) -> Void
/// Block form of the input callback (Apple's `AudioQueueInputCallbackBlock`), called on the
/// dispatch queue given at creation.
public typealias AudioQueueInputCallbackBlock = (AudioQueueRef, AudioQueueBufferRef, UnsafePointer<AudioTimeStamp>, UInt32,
                                                 UnsafePointer<AudioStreamPacketDescription>?) -> Void

/// Where input queues created with ``AudioQueueNewInput(_:_:_:_:_:_:_:)`` record from: the
/// `OAT_INPUT` environment variable (`auto`, `pulse`, `pulse:SOURCE`, `alsa`, `alsa:DEVICE`),
/// default `auto`, unless a program (or a test) sets it here first.
public enum AudioQueueInputSelection {
    private static let chosen = Locked<(AudioInputSpec, AudioInput.Options)?>(nil)

    /// Records from `spec` with `options` (nil: back to `OAT_INPUT`).
    public static func set(_ spec: AudioInputSpec?, options: AudioInput.Options = AudioInput.Options()) {
        chosen.withLock { $0 = spec.map { ($0, options) } }
    }

    /// The input new queues open.
    public static var current: (spec: AudioInputSpec, options: AudioInput.Options) {
        if let c = chosen.withLock({ $0 }) { return c }
        let env = getenv("OAT_INPUT").map { String(cString: $0) }
        return (env.flatMap(AudioInputSpec.init(parsing:)) ?? .auto, AudioInput.Options())
    }
}

/// The input side of a ``CompatQueue``.
final class CompatInputSide: @unchecked Sendable {
    enum Delivery {
        case proc(AudioQueueInputCallback, UnsafeMutableRawPointer?)
        case block(DispatchQueue, AudioQueueInputCallbackBlock)
        case runLoop(CFRunLoop, AudioQueueInputCallback, UnsafeMutableRawPointer?)
    }

    var queue: AudioInputQueue!
    let delivery: Delivery
    init(delivery: Delivery) { self.delivery = delivery }

    /// The Swift queue filled `d.buffer`: copy its size and descriptions into the C buffer and
    /// hand it to the client.
    func delivered(_ box: CompatQueue, _ d: AudioInputQueueDelivery) {
        guard let c = AudioQueueBufferRef(bitPattern: d.buffer.userData) else { return }
        c.pointee.mAudioDataByteSize = UInt32(d.buffer.audioDataByteSize)
        let descriptions = d.buffer.packetDescriptions
        var descPointer: UnsafePointer<AudioStreamPacketDescription>?
        // Descriptions for a buffer allocated without room for them live until the callback returns.
        var temporary: UnsafeMutablePointer<AudioStreamPacketDescription>?
        if let own = c.pointee.mPacketDescriptions, !descriptions.isEmpty, descriptions.count <= Int(c.pointee.mPacketDescriptionCapacity) {
            for i in descriptions.indices { own[i] = descriptions[i] }
            c.pointee.mPacketDescriptionCount = UInt32(descriptions.count)
            descPointer = UnsafePointer(own)
        } else {
            c.pointee.mPacketDescriptionCount = 0
            if !descriptions.isEmpty {
                let t = UnsafeMutablePointer<AudioStreamPacketDescription>.allocate(capacity: descriptions.count)
                t.initialize(from: descriptions, count: descriptions.count)
                temporary = t
                descPointer = UnsafePointer(t)
            }
        }
        let ref: AudioQueueRef = box.ref
        let packets = UInt32(d.packetCount)
        let time = d.startTime
        switch delivery {
        case .proc(let proc, let user):
            withUnsafePointer(to: time) { proc(user, ref, c, $0, packets, descPointer) }
            temporary?.deallocate()
        case .block(let dq, let block):
            let args = UncheckedSendable((block, ref, c, time, packets, descPointer, temporary))
            dq.async {
                withUnsafePointer(to: args.value.3) { args.value.0(args.value.1, args.value.2, $0, args.value.4, args.value.5) }
                args.value.6?.deallocate()
            }
        case .runLoop(let loop, let proc, let user):
            let args = UncheckedSendable((proc, user, ref, c, time, packets, descPointer, temporary))
            loop.perform {
                withUnsafePointer(to: args.value.4) { args.value.0(args.value.1, args.value.2, args.value.3, $0, args.value.5, args.value.6) }
                args.value.7?.deallocate()
            }
        }
    }

    func property(_ id: AudioQueuePropertyID, _ ioSize: UnsafeMutablePointer<UInt32>, _ out: UnsafeMutableRawPointer?) -> OSStatus {
        let q = queue!
        let e = kAudioQueueErr_InvalidPropertySize
        switch id {
        case kAudioQueueProperty_IsRunning: return writeProperty(UInt32(q.isRunning ? 1 : 0), ioSize, out, sizeError: e)
        case kAudioQueueDeviceProperty_SampleRate: return writeProperty(Float64(q.deviceFormat.sampleRate), ioSize, out, sizeError: e)
        case kAudioQueueDeviceProperty_NumberChannels: return writeProperty(UInt32(q.deviceFormat.channels), ioSize, out, sizeError: e)
        case kAudioQueueProperty_CurrentDevice: return writeBytes(Array((q.currentDevice ?? "").utf8) + [0], ioSize, out, sizeError: e)
        case kAudioQueueProperty_MagicCookie: return writeBytes(q.magicCookie ?? [], ioSize, out, sizeError: e)
        case kAudioQueueProperty_MaximumOutputPacketSize: return writeProperty(UInt32(q.maximumOutputPacketSize), ioSize, out, sizeError: e)
        case kAudioQueueProperty_StreamDescription: return writeProperty(q.streamDescription, ioSize, out, sizeError: e)
        case kAudioQueueProperty_EnableLevelMetering: return writeProperty(UInt32(q.isLevelMeteringEnabled ? 1 : 0), ioSize, out, sizeError: e)
        case kAudioQueueProperty_CurrentLevelMeter, kAudioQueueProperty_CurrentLevelMeterDB:
            let levels = id == kAudioQueueProperty_CurrentLevelMeter ? q.currentLevels() : q.currentLevelsDB()
            return writeArray(levels, ioSize, out)
        default: return kAudioQueueErr_InvalidProperty
        }
    }

    func setProperty(_ id: AudioQueuePropertyID, _ data: UnsafeRawPointer, _ size: UInt32) -> OSStatus {
        switch id {
        case kAudioQueueProperty_EnableLevelMetering:
            guard size >= 4 else { return kAudioQueueErr_InvalidPropertySize }
            queue.isLevelMeteringEnabled = data.loadUnaligned(as: UInt32.self) != 0
            return noErr
        case kAudioQueueProperty_HardwareCodecPolicy:
            return size >= 4 ? noErr : kAudioQueueErr_InvalidPropertySize
        default:
            return kAudioQueueErr_InvalidProperty
        }
    }
}

private func makeInputQueue(_ format: UnsafePointer<AudioStreamBasicDescription>?, _ delivery: CompatInputSide.Delivery,
                            _ out: UnsafeMutablePointer<AudioQueueRef?>?) -> OSStatus {
    guard let format, let out else { return kAudio_ParamError }
    let box = CompatQueue(delivery: .proc({ _, _, _ in }, nil))
    let side = CompatInputSide(delivery: delivery)
    box.inputSide = side
    let selection = AudioQueueInputSelection.current
    return registerQueue(box, out) { () throws(AudioError) in
        side.queue = try AudioInputQueue(format: format.pointee, input: { f throws(AudioError) in
            try AudioInput.open(selection.spec, format: f, options: selection.options).device
        }) { [weak box, weak side] _, delivery in
            guard let box, let side else { return }
            side.delivered(box, delivery)
        }
        _ = side.queue.addPropertyListener { [weak box] _, property in box?.propertyChanged(property) }
    }
}

/// Creates an input (recording) queue producing data in `inFormat`: linear PCM, or AAC, ALAC,
/// FLAC, Opus, MP3, mu-law, A-law encoded on the queue's thread (Apple's `AudioQueueNewInput`).
///
/// Callbacks arrive on the queue's thread with a nil run loop, or on `inCallbackRunLoop` while
/// it runs. The queue records from the input named by ``AudioQueueInputSelection`` (`OAT_INPUT`,
/// default: PulseAudio's default source, else ALSA's default capture device). The stream
/// description (`kAudioQueueProperty_StreamDescription`) and magic cookie are available at once.
@discardableResult
public func AudioQueueNewInput(_ inFormat: UnsafePointer<AudioStreamBasicDescription>,
                               _ inCallbackProc: AudioQueueInputCallback,
                               _ inUserData: UnsafeMutableRawPointer?,
                               _ inCallbackRunLoop: CFRunLoop?,
                               _ inCallbackRunLoopMode: CFString?,
                               _ inFlags: UInt32,
                               _ outAQ: UnsafeMutablePointer<AudioQueueRef?>) -> OSStatus {
    if let loop = inCallbackRunLoop { return makeInputQueue(inFormat, .runLoop(loop, inCallbackProc, inUserData), outAQ) }
    return makeInputQueue(inFormat, .proc(inCallbackProc, inUserData), outAQ)
}

/// Creates an input queue whose callback block runs on `inCallbackDispatchQueue` (Apple's
/// `AudioQueueNewInputWithDispatchQueue`).
@discardableResult
public func AudioQueueNewInputWithDispatchQueue(_ outAQ: UnsafeMutablePointer<AudioQueueRef?>,
                                                _ inFormat: UnsafePointer<AudioStreamBasicDescription>,
                                                _ inFlags: UInt32,
                                                _ inCallbackDispatchQueue: DispatchQueue,
                                                _ inCallbackBlock: @escaping AudioQueueInputCallbackBlock) -> OSStatus {
    makeInputQueue(inFormat, .block(inCallbackDispatchQueue, inCallbackBlock), outAQ)
}

/// Let the system choose hardware or software codecs (Apple's `kAudioQueueHardwareCodecPolicy_Default`).
public let kAudioQueueHardwareCodecPolicy_Default: UInt32 = 0
/// Software codecs only (Apple's `kAudioQueueHardwareCodecPolicy_UseSoftwareOnly`); the only kind here.
public let kAudioQueueHardwareCodecPolicy_UseSoftwareOnly: UInt32 = 1
/// Hardware codecs only (Apple's `kAudioQueueHardwareCodecPolicy_UseHardwareOnly`): accepted, software is used.
public let kAudioQueueHardwareCodecPolicy_UseHardwareOnly: UInt32 = 2
/// Prefer software codecs (Apple's `kAudioQueueHardwareCodecPolicy_PreferSoftware`).
public let kAudioQueueHardwareCodecPolicy_PreferSoftware: UInt32 = 3
/// Prefer hardware codecs (Apple's `kAudioQueueHardwareCodecPolicy_PreferHardware`): accepted, software is used.
public let kAudioQueueHardwareCodecPolicy_PreferHardware: UInt32 = 4
