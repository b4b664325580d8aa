// Audio Toolbox–compatible time-pitch properties, processing taps and offline rendering for
// output queues, built on ``AudioOutputQueue``'s Swift API (see docs/timepitch.md).

import OATCore
import OATProcessing
import OATQueueEngine
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// MARK: - Time-pitch constants

/// Spectral time-pitch, for music (Apple's `kAudioQueueTimePitchAlgorithm_Spectral`, `'spec'`):
/// Rubber Band's R3 engine here.
public let kAudioQueueTimePitchAlgorithm_Spectral: UInt32 = fourCC("spec")
/// Time-domain time-pitch, for speech (Apple's `kAudioQueueTimePitchAlgorithm_TimeDomain`,
/// `'tido'`): Rubber Band's R2 engine here.
public let kAudioQueueTimePitchAlgorithm_TimeDomain: UInt32 = fourCC("tido")
/// Varispeed: rate and pitch linked, plain resampling (Apple's
/// `kAudioQueueTimePitchAlgorithm_Varispeed`, `'vspd'`).
public let kAudioQueueTimePitchAlgorithm_Varispeed: UInt32 = fourCC("vspd")
/// Low quality, zero latency (Apple's deprecated `kAudioQueueTimePitchAlgorithm_LowQualityZeroLatency`,
/// `'lqzl'`): mapped to the time-domain algorithm.
public let kAudioQueueTimePitchAlgorithm_LowQualityZeroLatency: UInt32 = fourCC("lqzl")

func timePitchAlgorithm(_ value: UInt32) -> TimePitchAlgorithm? {
    switch value {
    case kAudioQueueTimePitchAlgorithm_Spectral: .spectral
    case kAudioQueueTimePitchAlgorithm_TimeDomain, kAudioQueueTimePitchAlgorithm_LowQualityZeroLatency: .timeDomain
    case kAudioQueueTimePitchAlgorithm_Varispeed: .varispeed
    default: nil
    }
}

func timePitchAlgorithmCode(_ a: TimePitchAlgorithm) -> UInt32 {
    switch a {
    case .spectral: kAudioQueueTimePitchAlgorithm_Spectral
    case .timeDomain: kAudioQueueTimePitchAlgorithm_TimeDomain
    case .varispeed: kAudioQueueTimePitchAlgorithm_Varispeed
    }
}

/// The time-pitch properties' values (`UInt32`), or nil for other IDs.
func timePitchPropertyValue(_ q: AudioOutputQueue, _ id: AudioQueuePropertyID) -> UInt32? {
    switch id {
    case kAudioQueueProperty_EnableTimePitch: q.isTimePitchEnabled ? 1 : 0
    case kAudioQueueProperty_TimePitchAlgorithm: timePitchAlgorithmCode(q.timePitchAlgorithm)
    case kAudioQueueProperty_TimePitchBypass: q.isTimePitchBypassed ? 1 : 0
    default: nil
    }
}

/// Sets a time-pitch property; nil for other IDs.
func setTimePitchProperty(_ q: AudioOutputQueue, _ id: AudioQueuePropertyID, _ data: UnsafeRawPointer, _ size: UInt32) -> OSStatus? {
    guard id == kAudioQueueProperty_EnableTimePitch || id == kAudioQueueProperty_TimePitchAlgorithm || id == kAudioQueueProperty_TimePitchBypass else { return nil }
    guard size >= 4 else { return kAudioQueueErr_InvalidPropertySize }
    let v = data.loadUnaligned(as: UInt32.self)
    switch id {
    case kAudioQueueProperty_EnableTimePitch:
        if v != 0, let failure = timePitchUnavailable(q.timePitchAlgorithm) { return failure }
        q.isTimePitchEnabled = v != 0
    case kAudioQueueProperty_TimePitchBypass: q.isTimePitchBypassed = v != 0
    default:
        guard let a = timePitchAlgorithm(v) else { return kAudioQueueErr_InvalidPropertyValue }
        if q.isTimePitchEnabled, let failure = timePitchUnavailable(a) { return failure }
        q.timePitchAlgorithm = a
    }
    return noErr
}

/// `kAudioQueueErr_CodecNotFound` when `algorithm` cannot run here (the spectral and time-domain
/// algorithms need the Rubber Band library), else nil. On Apple time-pitch always works; here
/// enabling it without the library fails at once instead of playing at the normal rate.
func timePitchUnavailable(_ algorithm: TimePitchAlgorithm) -> OSStatus? {
    do throws(AudioError) {
        try TimePitchProcessor.checkAvailable(algorithm)
        return nil
    } catch {
        return kAudioQueueErr_CodecNotFound
    }
}

// MARK: - Processing taps

/// A processing tap (Apple's `AudioQueueProcessingTapRef`, an opaque pointer).
public typealias AudioQueueProcessingTapRef = OpaquePointer

/// The tap callback (Apple's `AudioQueueProcessingTapCallback`): client data, the tap, frames
/// wanted, the time stamp and flags (in/out), frames produced (out) and the buffers
/// (non-interleaved Float32, one `AudioBuffer` per channel, `AudioQueueProcessingTapNew` tells
/// the maximum frames). Called on the queue's feeder thread. A C function type as on Apple: pass a
/// global function or a closure that captures nothing.
public typealias AudioQueueProcessingTapCallback = @convention(c) (UnsafeMutableRawPointer, AudioQueueProcessingTapRef, UInt32,
                                                    UnsafeMutablePointer<AudioTimeStamp>,
                                                    UnsafeMutablePointer<AudioQueueProcessingTapFlags>,
                                                    UnsafeMutablePointer<UInt32>,
                                                    UnsafeMutablePointer<AudioBufferList>) -> Void

/// The C-side tap: the Swift tap, the queue it belongs to, and a buffer list for the callback.
final class CompatTap: @unchecked Sendable {
    let callback: AudioQueueProcessingTapCallback
    let clientData: UnsafeMutableRawPointer?
    weak var box: CompatQueue?
    var tap: AudioQueueProcessingTap?
    let list: UnsafeMutableAudioBufferListPointer
    let channels: Int
    var ref: AudioQueueProcessingTapRef { AudioQueueProcessingTapRef(Unmanaged.passUnretained(self).toOpaque()) }

    init(callback: AudioQueueProcessingTapCallback, clientData: UnsafeMutableRawPointer?, box: CompatQueue, channels: Int) {
        self.callback = callback
        self.clientData = clientData
        self.box = box
        self.channels = channels
        list = AudioBufferList.allocate(maximumBuffers: channels)
    }

    deinit { free(list.unsafeMutablePointer) }

    static func from(_ ref: AudioQueueProcessingTapRef?) -> CompatTap? {
        guard let ref else { return nil }
        return Unmanaged<CompatTap>.fromOpaque(UnsafeRawPointer(ref)).takeUnretainedValue()
    }

    /// Runs the C callback for one chunk: its buffer list points at the Swift tap's buffers.
    func run(_ tap: AudioQueueProcessingTap, frames: Int, time: AudioTimeStamp,
             buffers: UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>, flags: inout AudioQueueProcessingTapFlags) -> Int {
        current = (tap, buffers)
        currentQueueTime = (time.sampleTime, UInt32(frames))
        defer { current = nil }
        setList(buffers, frames: frames)
        var t = time
        var produced: UInt32 = 0
        callback(clientData ?? compatNilClientData, ref, UInt32(frames), &t, &flags, &produced, list.unsafeMutablePointer)
        // The client may have pointed the list at its own memory: copy from there.
        for c in 0..<min(channels, list.count) {
            if let data = list[c].mData, data != UnsafeMutableRawPointer(buffers[c]) {
                let n = min(Int(produced), Int(list[c].mDataByteSize) / 4)
                buffers[c].update(from: data.assumingMemoryBound(to: Float.self), count: n)
            }
        }
        return Int(min(produced, UInt32(frames)))
    }

    func setList(_ buffers: UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>, frames: Int) {
        list.count = channels
        for c in 0..<channels {
            list[c] = AudioBuffer(mNumberChannels: 1, mDataByteSize: UInt32(frames * 4), mData: UnsafeMutableRawPointer(buffers[c]))
        }
    }

    var current: (AudioQueueProcessingTap, UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>)?
    /// The queue time of the chunk being processed (``AudioQueueProcessingTapGetQueueTime``).
    var currentQueueTime: (sampleTime: Double, frames: UInt32) = (0, 0)
}

/// Creates a processing tap on a queue (Apple's `AudioQueueProcessingTapNew`). `inFlags` holds
/// `.preEffects` or `.postEffects`, optionally `.siphon`. Returns the most frames per callback
/// and the processing format (Float32, non-interleaved, the queue's device rate and channels).
/// The callback runs on the queue's feeder thread, never the device thread.
@discardableResult
public func AudioQueueProcessingTapNew(_ inAQ: AudioQueueRef, _ inCallback: AudioQueueProcessingTapCallback,
                                       _ inClientData: UnsafeMutableRawPointer?, _ inFlags: AudioQueueProcessingTapFlags,
                                       _ outMaxFrames: UnsafeMutablePointer<UInt32>,
                                       _ outProcessingFormat: UnsafeMutablePointer<AudioStreamBasicDescription>,
                                       _ outAQTap: UnsafeMutablePointer<AudioQueueProcessingTapRef?>) -> OSStatus {
    guard let box = CompatQueue.from(inAQ) else { return kAudio_ParamError }
    let c = CompatTap(callback: inCallback, clientData: inClientData, box: box, channels: box.queue.deviceFormat.channels)
    do {
        let unmanaged = Unmanaged.passRetained(c)
        let tap = try box.queue.addProcessingTap(flags: inFlags) { [weak c] tap, frames, time, buffers, flags in
            c?.run(tap, frames: frames, time: time, buffers: buffers, flags: &flags) ?? 0
        }
        c.tap = tap
        outMaxFrames.pointee = UInt32(tap.maximumFrames)
        outProcessingFormat.pointee = tap.processingFormat
        outAQTap.pointee = AudioQueueProcessingTapRef(unmanaged.toOpaque())
        return noErr
    } catch {
        return error.osStatus ?? kAudioQueueErr_InvalidTapType
    }
}

/// Removes and frees a tap (Apple's `AudioQueueProcessingTapDispose`).
@discardableResult
public func AudioQueueProcessingTapDispose(_ inAQTap: AudioQueueProcessingTapRef) -> OSStatus {
    guard let c = CompatTap.from(inAQTap) else { return kAudioQueueErr_InvalidTapContext }
    if let tap = c.tap { c.box?.queue.removeProcessingTap(tap) }
    c.tap = nil
    Unmanaged<CompatTap>.fromOpaque(UnsafeRawPointer(inAQTap)).release()
    return noErr
}

/// Inside the tap callback: fills `ioData` with up to `inNumberFrames` frames of the queue's
/// audio at the tap's position (Apple's `AudioQueueProcessingTapGetSourceAudio`). When `ioData`'s
/// buffers have no memory (`mData` nil) they are pointed at the tap's own buffers.
@discardableResult
public func AudioQueueProcessingTapGetSourceAudio(_ inAQTap: AudioQueueProcessingTapRef, _ inNumberFrames: UInt32,
                                                  _ ioTimeStamp: UnsafeMutablePointer<AudioTimeStamp>,
                                                  _ outFlags: UnsafeMutablePointer<AudioQueueProcessingTapFlags>,
                                                  _ outNumberFrames: UnsafeMutablePointer<UInt32>,
                                                  _ ioData: UnsafeMutablePointer<AudioBufferList>) -> OSStatus {
    guard let c = CompatTap.from(inAQTap), let (tap, own) = c.current else { return kAudioQueueErr_InvalidTapContext }
    let list = UnsafeMutableAudioBufferListPointer(ioData)
    let channels = min(c.channels, list.count)
    let targets = UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>.allocate(capacity: c.channels)
    defer { targets.deallocate() }
    for ch in 0..<c.channels {
        if ch < channels, let data = list[ch].mData, Int(list[ch].mDataByteSize) >= Int(inNumberFrames) * 4 {
            targets[ch] = data.assumingMemoryBound(to: Float.self)
        } else {
            targets[ch] = own[ch]
        }
    }
    let got = tap.getSourceAudio(frames: Int(inNumberFrames), into: targets)
    for ch in 0..<channels {
        list[ch] = AudioBuffer(mNumberChannels: 1, mDataByteSize: UInt32(got.frames * 4), mData: UnsafeMutableRawPointer(targets[ch]))
    }
    ioTimeStamp.pointee = got.time
    outFlags.pointee = got.flags
    outNumberFrames.pointee = UInt32(got.frames)
    return noErr
}

// MARK: - Offline rendering

/// Puts the queue into offline rendering (Apple's `AudioQueueSetOfflineRenderFormat`): with a
/// format, no device is used and ``AudioQueueOfflineRender(_:_:_:_:)`` pulls the audio as fast
/// as it decodes; nil returns to the device. The format must be linear PCM at the queue's
/// device rate and channel count, interleaved, Float32 or signed 16-bit. `inLayout` is ignored.
@discardableResult
public func AudioQueueSetOfflineRenderFormat(_ inAQ: AudioQueueRef, _ inFormat: UnsafePointer<AudioStreamBasicDescription>?,
                                             _ inLayout: UnsafePointer<AudioChannelLayout>?) -> OSStatus {
    guard let box = CompatQueue.from(inAQ) else { return kAudio_ParamError }
    if let f = inFormat?.pointee {
        let device = box.queue.deviceFormat
        let isFloat32 = f.formatFlags.contains(.isFloat) && f.bitsPerChannel == 32
        let isInt16 = !f.formatFlags.contains(.isFloat) && f.bitsPerChannel == 16
        guard f.formatID == .linearPCM, f.sampleRate == device.sampleRate, Int(f.channelsPerFrame) == device.channels,
              f.isInterleaved, isFloat32 || isInt16 else {
            return kAudioQueueErr_InvalidOfflineMode
        }
        box.withState { $0.offlineFormat = f }
    } else {
        box.withState { $0.offlineFormat = nil }
    }
    return status({ () throws(AudioError) in try box.queue.setOfflineRendering(inFormat != nil) }, default: kAudioQueueErr_InvalidOfflineMode)
}

/// Renders `inNumberFrames` frames into `ioBuffer` in the offline format (Apple's
/// `AudioQueueOfflineRender`), setting its `mAudioDataByteSize`; frames after the end of the
/// stream are silence and not counted. A call with 0 frames just starts the timeline. The queue
/// must be started. `inTimestamp`'s host time (when valid) places the render on the host clock,
/// for queues started at a host time.
@discardableResult
public func AudioQueueOfflineRender(_ inAQ: AudioQueueRef, _ inTimestamp: UnsafePointer<AudioTimeStamp>,
                                    _ ioBuffer: AudioQueueBufferRef, _ inNumberFrames: UInt32) -> OSStatus {
    guard let box = CompatQueue.from(inAQ) else { return kAudio_ParamError }
    guard let format = box.withState({ $0.offlineFormat }) else { return kAudioQueueErr_InvalidOfflineMode }
    let channels = box.queue.deviceFormat.channels
    let bytesPerFrame = Int(format.bitsPerChannel / 8) * channels
    let frames = Int(inNumberFrames)
    guard frames * bytesPerFrame <= Int(ioBuffer.pointee.mAudioDataBytesCapacity) else { return kAudioQueueErr_InvalidPropertySize }
    if frames == 0 { ioBuffer.pointee.mAudioDataByteSize = 0; return noErr }
    let planar = UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>.allocate(capacity: channels)
    for c in 0..<channels { planar[c] = .allocate(capacity: frames) }
    defer { for c in 0..<channels { planar[c].deallocate() }; planar.deallocate() }
    var rendered = 0
    let time = inTimestamp.pointee
    let result = status({ () throws(AudioError) in
        rendered = try box.queue.renderOffline(into: planar, frames: frames,
                                               timeStamp: time.flags.contains(.hostTimeValid) ? time : nil)
    }, default: kAudioQueueErr_InvalidRunState)
    guard result == noErr else { return result }
    let data = ioBuffer.pointee.mAudioData
    if format.bitsPerChannel == 32 {
        let out = data.assumingMemoryBound(to: Float.self)
        for i in 0..<frames { for c in 0..<channels { out[i * channels + c] = planar[c][i] } }
    } else {
        let out = data.assumingMemoryBound(to: Int16.self)
        for i in 0..<frames {
            for c in 0..<channels {
                let v = (planar[c][i] * 32768).rounded()
                out[i * channels + c] = Int16(max(-32768, min(32767, v.isNaN ? 0 : v)))
            }
        }
    }
    ioBuffer.pointee.mAudioDataByteSize = UInt32(rendered * bytesPerFrame)
    return noErr
}
