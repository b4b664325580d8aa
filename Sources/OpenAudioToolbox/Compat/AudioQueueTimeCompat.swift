// Audio Toolbox–compatible AudioQueue device time calls, the processing tap's queue time and
// the channel layout property, built on ``AudioOutputQueue`` and ``AudioInputQueue``.

import OATCore
import OATQueueEngine

// MARK: - Device time

/// The device clock of a queue: (sample time, host time, rate, latency), or nil when the queue is
/// not running. Input queues count the frames delivered so far at the queue's rate.
private func deviceClock(_ box: CompatQueue) -> (sampleTime: Double, hostTime: UInt64, sampleRate: Double, latency: Double)? {
    if let input = box.inputSide {
        guard input.queue.isRunning else { return nil }
        return (Double(input.queue.deliveredFrames), HostTime.now(), input.queue.format.sampleRate, 0)
    }
    return box.queue.deviceTime()
}

/// The queue's device time now (Apple's `AudioQueueDeviceGetCurrentTime`): the sample time
/// counts frames the device has played since it started, the host time is
/// ``AudioGetCurrentHostTime()``'s clock (nanoseconds). Both are valid in `mFlags`. Returns
/// `kAudioQueueErr_InvalidRunState` while the queue is not running.
@discardableResult
public func AudioQueueDeviceGetCurrentTime(_ inAQ: AudioQueueRef, _ outTimeStamp: UnsafeMutablePointer<AudioTimeStamp>) -> OSStatus {
    guard let box = CompatQueue.from(inAQ) else { return kAudio_ParamError }
    guard let clock = deviceClock(box) else { return kAudioQueueErr_InvalidRunState }
    outTimeStamp.pointee = AudioTimeStamp(sampleTime: clock.sampleTime, hostTime: clock.hostTime, rateScalar: 1, flags: .sampleHostTimeValid)
    return noErr
}

/// Converts a device time between sample time and host time (Apple's
/// `AudioQueueDeviceTranslateTime`): a valid sample time gives the host time at which the
/// device plays that frame, a valid host time the device frame playing then (the device clock
/// is taken as running at its nominal rate). The output has both, and the rate scalar 1.
@discardableResult
public func AudioQueueDeviceTranslateTime(_ inAQ: AudioQueueRef, _ inTime: UnsafePointer<AudioTimeStamp>,
                                          _ outTime: UnsafeMutablePointer<AudioTimeStamp>) -> OSStatus {
    guard let box = CompatQueue.from(inAQ) else { return kAudio_ParamError }
    guard let clock = deviceClock(box) else { return kAudioQueueErr_InvalidRunState }
    let t = inTime.pointee
    var sample: Double
    var host: UInt64
    if t.flags.contains(.sampleTimeValid) {
        sample = t.sampleTime
        let seconds = (sample - clock.sampleTime) / clock.sampleRate
        host = seconds >= 0 ? clock.hostTime &+ HostTime.ticks(seconds: seconds) : clock.hostTime &- min(clock.hostTime, HostTime.ticks(seconds: -seconds))
    } else if t.flags.contains(.hostTimeValid) {
        host = t.hostTime
        let seconds = host >= clock.hostTime ? HostTime.seconds(ticks: host - clock.hostTime) : -HostTime.seconds(ticks: clock.hostTime - host)
        sample = clock.sampleTime + seconds * clock.sampleRate
    } else {
        return kAudio_ParamError
    }
    outTime.pointee = AudioTimeStamp(sampleTime: sample, hostTime: host, rateScalar: 1, flags: [.sampleHostTimeValid, .rateScalarValid])
    return noErr
}

/// Moves a requested start time to the nearest time the queue can start at (Apple's
/// `AudioQueueDeviceGetNearestStartTime`): no earlier than now plus the device's output
/// latency. The request may give a sample time or a host time; both are filled in. `inFlags`
/// must be 0. Returns `kAudioQueueErr_InvalidRunState` while the queue is not running.
@discardableResult
public func AudioQueueDeviceGetNearestStartTime(_ inAQ: AudioQueueRef, _ ioRequestedStartTime: UnsafeMutablePointer<AudioTimeStamp>,
                                                _ inFlags: UInt32) -> OSStatus {
    guard let box = CompatQueue.from(inAQ) else { return kAudio_ParamError }
    guard let clock = deviceClock(box) else { return kAudioQueueErr_InvalidRunState }
    var translated = AudioTimeStamp()
    let requested = ioRequestedStartTime.pointee
    if requested.flags.contains(.sampleTimeValid) || requested.flags.contains(.hostTimeValid) {
        let s = AudioQueueDeviceTranslateTime(inAQ, ioRequestedStartTime, &translated)
        guard s == noErr else { return s }
    } else {
        translated = AudioTimeStamp(sampleTime: clock.sampleTime, hostTime: clock.hostTime, rateScalar: 1, flags: .sampleHostTimeValid)
    }
    let earliest = clock.sampleTime + clock.latency * clock.sampleRate
    if translated.sampleTime < earliest {
        translated.sampleTime = earliest.rounded(.up)
        translated.hostTime = clock.hostTime &+ HostTime.ticks(seconds: (translated.sampleTime - clock.sampleTime) / clock.sampleRate)
    }
    translated.flags = [.sampleHostTimeValid, .rateScalarValid]
    translated.rateScalar = 1
    ioRequestedStartTime.pointee = translated
    return noErr
}

// MARK: - Processing tap queue time

/// Inside a tap callback: the queue sample time of the audio the tap is processing and the queue
/// frames it corresponds to (Apple's `AudioQueueProcessingTapGetQueueTime`). Different: the
/// sample time is the stream position of the chunk (frames enqueued before it), and the frame
/// count is the chunk's length (with time-pitch at a rate other than 1, pre-effects taps see
/// source frames, not played frames). Outside a callback: `kAudioQueueErr_InvalidTapContext`.
@discardableResult
public func AudioQueueProcessingTapGetQueueTime(_ inAQTap: AudioQueueProcessingTapRef, _ outQueueSampleTime: UnsafeMutablePointer<Float64>,
                                                _ outQueueFrameCount: UnsafeMutablePointer<UInt32>) -> OSStatus {
    guard let c = CompatTap.from(inAQTap), c.current != nil else { return kAudioQueueErr_InvalidTapContext }
    outQueueSampleTime.pointee = c.currentQueueTime.sampleTime
    outQueueFrameCount.pointee = c.currentQueueTime.frames
    return noErr
}

// MARK: - Channel layout

/// The channel count a layout in Apple's C shape describes, or nil when it cannot tell.
func channelCount(ofCLayout data: UnsafeRawPointer, size: UInt32) -> UInt32? {
    guard size >= 12 else { return nil }
    let tag = data.loadUnaligned(as: UInt32.self)
    switch tag {
    case kAudioChannelLayoutTag_UseChannelDescriptions: return data.loadUnaligned(fromByteOffset: 8, as: UInt32.self)
    case kAudioChannelLayoutTag_UseChannelBitmap: return UInt32(data.loadUnaligned(fromByteOffset: 4, as: UInt32.self).nonzeroBitCount)
    default: return tag & 0xFFFF
    }
}

/// `kAudioQueueProperty_ChannelLayout` on output and input queues: the layout set, or the
/// default one for the queue's channel count. Returns nil for other properties.
func queueChannelLayout(_ box: CompatQueue, _ id: AudioQueuePropertyID) -> [UInt8]? {
    guard id == kAudioQueueProperty_ChannelLayout else { return nil }
    if let set = box.withState({ $0.channelLayout }) { return set }
    let channels = box.inputSide?.queue.format.channelsPerFrame ?? box.queue.format.channelsPerFrame
    return CLayout.bytes(OATCore.ChannelLayout(tag: .default(channels: channels)))
}

/// Sets `kAudioQueueProperty_ChannelLayout` (Apple's layout in C shape): accepted when it names
/// as many channels as the queue's format; kept and returned by `AudioQueueGetProperty`
/// (channels are not remapped). Returns nil for other properties.
func setQueueChannelLayout(_ box: CompatQueue, _ id: AudioQueuePropertyID, _ data: UnsafeRawPointer, _ size: UInt32) -> OSStatus? {
    guard id == kAudioQueueProperty_ChannelLayout else { return nil }
    guard size >= UInt32(CLayout.size(descriptions: 0)) else { return kAudioQueueErr_InvalidPropertySize }
    let channels = box.inputSide?.queue.format.channelsPerFrame ?? box.queue.format.channelsPerFrame
    guard let n = channelCount(ofCLayout: data, size: size), n == channels else { return kAudioQueueErr_InvalidPropertyValue }
    let bytes = Array(UnsafeRawBufferPointer(start: data, count: Int(size)))
    box.withState { $0.channelLayout = bytes }
    return noErr
}
