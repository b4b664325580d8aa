// Audio Toolbox–compatible AudioQueue.h properties and property listeners, and the property
// writing helpers the other compat files share.

import OATCore
import OATDevices
import OATQueueEngine
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// MARK: - Properties

/// Writes `value`'s bytes to `out`, checking the size the caller gave.
func writeProperty<T>(_ value: T, _ ioSize: UnsafeMutablePointer<UInt32>, _ out: UnsafeMutableRawPointer?, sizeError: OSStatus) -> OSStatus {
    let size = MemoryLayout<T>.size
    guard let out else { ioSize.pointee = UInt32(size); return noErr }
    guard ioSize.pointee >= UInt32(size) else { return sizeError }
    out.assumingMemoryBound(to: T.self).pointee = value
    ioSize.pointee = UInt32(size)
    return noErr
}

/// Writes up to `*ioSize` bytes of `bytes` to `out`.
func writeBytes(_ bytes: [UInt8], _ ioSize: UnsafeMutablePointer<UInt32>, _ out: UnsafeMutableRawPointer?, exact: Bool = false, sizeError: OSStatus) -> OSStatus {
    guard let out else { ioSize.pointee = UInt32(bytes.count); return noErr }
    if exact && ioSize.pointee < UInt32(bytes.count) { return sizeError }
    let n = min(Int(ioSize.pointee), bytes.count)
    bytes.withUnsafeBytes { if n > 0 { out.copyMemory(from: $0.baseAddress!, byteCount: n) } }
    ioSize.pointee = UInt32(n)
    return noErr
}

/// Writes an array of trivially-copyable values.
func writeArray<T>(_ values: [T], _ ioSize: UnsafeMutablePointer<UInt32>, _ out: UnsafeMutableRawPointer?) -> OSStatus {
    let stride = MemoryLayout<T>.stride
    guard let out else { ioSize.pointee = UInt32(values.count * stride); return noErr }
    let n = min(values.count, Int(ioSize.pointee) / stride)
    let dst = out.assumingMemoryBound(to: T.self)
    for i in 0..<n { dst[i] = values[i] }
    ioSize.pointee = UInt32(n * stride)
    return noErr
}

private enum QueuePropertyValue {
    case uint32(UInt32)
    case float64(Float64)
    case asbd(AudioStreamBasicDescription)
    case bytes([UInt8])
    case levels([AudioQueueLevelMeterState])
}

private func queueProperty(_ box: CompatQueue, _ id: AudioQueuePropertyID) -> QueuePropertyValue? {
    let q = box.queue!
    switch id {
    case kAudioQueueProperty_IsRunning: return .uint32(q.isRunning ? 1 : 0)
    case kAudioQueueDeviceProperty_SampleRate: return .float64(q.deviceFormat.sampleRate)
    case kAudioQueueDeviceProperty_NumberChannels: return .uint32(UInt32(q.deviceFormat.channels))
    case kAudioQueueProperty_CurrentDevice: return .bytes(Array((q.currentDevice ?? "").utf8) + [0])
    case kAudioQueueProperty_MagicCookie: return .bytes(q.magicCookie ?? [])
    case kAudioQueueProperty_MaximumOutputPacketSize:
        return .uint32(q.format.bytesPerPacket > 0 ? q.format.bytesPerPacket : maximumPacketSize(q.format))
    case kAudioQueueProperty_StreamDescription: return .asbd(q.format)
    case kAudioQueueProperty_EnableLevelMetering: return .uint32(q.isLevelMeteringEnabled ? 1 : 0)
    case kAudioQueueProperty_CurrentLevelMeter: return .levels(q.currentLevels())
    case kAudioQueueProperty_CurrentLevelMeterDB: return .levels(q.currentLevelsDB())
    case kAudioQueueProperty_DecodeBufferSizeFrames: return .uint32(4096)
    case kAudioQueueProperty_ConverterError: return .uint32(UInt32(bitPattern: q.converterError.map { $0.osStatus ?? -1 } ?? 0))
    case kAudioQueueProperty_HardwareCodecPolicy: return .uint32(0)
    default: return timePitchPropertyValue(q, id).map { .uint32($0) }
    }
}

/// An upper bound for one packet of a compressed format, from its frames per packet.
func maximumPacketSize(_ f: AudioStreamBasicDescription) -> UInt32 {
    let frames = max(f.framesPerPacket, 1152)
    // Generous: 32-bit samples of every channel plus headroom, as a decoder's input bound.
    return min(1 << 20, frames * max(f.channelsPerFrame, 1) * 4 + 1024)
}

/// Size of a property's value and whether it can be set (Apple's `AudioQueueGetPropertySize`).
@discardableResult
public func AudioQueueGetPropertySize(_ inAQ: AudioQueueRef, _ inID: AudioQueuePropertyID,
                                      _ outDataSize: UnsafeMutablePointer<UInt32>) -> OSStatus {
    guard let box = CompatQueue.from(inAQ) else { return kAudio_ParamError }
    let inID = queuePropertyID(forConverterProperty: inID, isInput: box.inputSide != nil)
    if let layout = queueChannelLayout(box, inID) { outDataSize.pointee = UInt32(layout.count); return noErr }
    if let input = box.inputSide { return input.property(inID, outDataSize, nil) }
    guard let v = queueProperty(box, inID) else { return kAudioQueueErr_InvalidProperty }
    switch v {
    case .uint32: outDataSize.pointee = 4
    case .float64: outDataSize.pointee = 8
    case .asbd: outDataSize.pointee = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
    case .bytes(let b): outDataSize.pointee = UInt32(b.count)
    case .levels: outDataSize.pointee = UInt32(box.queue.deviceFormat.channels * MemoryLayout<AudioQueueLevelMeterState>.stride)
    }
    return noErr
}

/// Reads a property (Apple's `AudioQueueGetProperty`). `kAudioQueueProperty_CurrentDevice`
/// gives the device name as NUL-terminated UTF-8 (Apple: a `CFString`).
@discardableResult
public func AudioQueueGetProperty(_ inAQ: AudioQueueRef, _ inID: AudioQueuePropertyID,
                                  _ outData: UnsafeMutableRawPointer, _ ioDataSize: UnsafeMutablePointer<UInt32>) -> OSStatus {
    guard let box = CompatQueue.from(inAQ) else { return kAudio_ParamError }
    let inID = queuePropertyID(forConverterProperty: inID, isInput: box.inputSide != nil)
    if let layout = queueChannelLayout(box, inID) { return writeBytes(layout, ioDataSize, outData, sizeError: kAudioQueueErr_InvalidPropertySize) }
    if let input = box.inputSide { return input.property(inID, ioDataSize, outData) }
    guard let v = queueProperty(box, inID) else { return kAudioQueueErr_InvalidProperty }
    let e = kAudioQueueErr_InvalidPropertySize
    switch v {
    case .uint32(let x): return writeProperty(x, ioDataSize, outData, sizeError: e)
    case .float64(let x): return writeProperty(x, ioDataSize, outData, sizeError: e)
    case .asbd(let x): return writeProperty(x, ioDataSize, outData, sizeError: e)
    case .bytes(let b): return writeBytes(b, ioDataSize, outData, sizeError: e)
    case .levels(let l): return writeArray(l, ioDataSize, outData)
    }
}

/// Sets a property (Apple's `AudioQueueSetProperty`): `MagicCookie` (before the first enqueue),
/// `EnableLevelMetering`; `DecodeBufferSizeFrames` and `HardwareCodecPolicy` are accepted and
/// ignored; read-only properties return `kAudioQueueErr_InvalidProperty`.
@discardableResult
public func AudioQueueSetProperty(_ inAQ: AudioQueueRef, _ inID: AudioQueuePropertyID,
                                  _ inData: UnsafeRawPointer, _ inDataSize: UInt32) -> OSStatus {
    guard let box = CompatQueue.from(inAQ) else { return kAudio_ParamError }
    let inID = queuePropertyID(forConverterProperty: inID, isInput: box.inputSide != nil)
    if let status = setQueueChannelLayout(box, inID, inData, inDataSize) { return status }
    if let input = box.inputSide { return input.setProperty(inID, inData, inDataSize) }
    switch inID {
    case kAudioQueueProperty_MagicCookie:
        let cookie = Array(UnsafeRawBufferPointer(start: inData, count: Int(inDataSize)))
        return status({ () throws(AudioError) in try box.queue.setMagicCookie(cookie.isEmpty ? nil : cookie) },
                      default: kAudioQueueErr_InvalidPropertyValue)
    case kAudioQueueProperty_EnableLevelMetering:
        guard inDataSize >= 4 else { return kAudioQueueErr_InvalidPropertySize }
        box.queue.isLevelMeteringEnabled = inData.loadUnaligned(as: UInt32.self) != 0
        return noErr
    case kAudioQueueProperty_DecodeBufferSizeFrames, kAudioQueueProperty_HardwareCodecPolicy:
        return inDataSize >= 4 ? noErr : kAudioQueueErr_InvalidPropertySize
    default:
        return setTimePitchProperty(box.queue, inID, inData, inDataSize) ?? kAudioQueueErr_InvalidProperty
    }
}

/// Adds a listener for `IsRunning`, `ConverterError` or `CurrentDevice` changes, called on the
/// queue's thread (Apple's `AudioQueueAddPropertyListener`).
@discardableResult
public func AudioQueueAddPropertyListener(_ inAQ: AudioQueueRef, _ inID: AudioQueuePropertyID,
                                          _ inProc: AudioQueuePropertyListenerProc,
                                          _ inUserData: UnsafeMutableRawPointer?) -> OSStatus {
    guard let box = CompatQueue.from(inAQ) else { return kAudio_ParamError }
    guard AudioQueueProperty(rawValue: inID) != nil else { return kAudioQueueErr_InvalidProperty }
    box.withState { $0.listeners.append(.init(id: inID, proc: inProc, userData: inUserData)) }
    return noErr
}

/// Removes a listener added with the same ID, proc and user data (Apple's
/// `AudioQueueRemovePropertyListener`).
@discardableResult
public func AudioQueueRemovePropertyListener(_ inAQ: AudioQueueRef, _ inID: AudioQueuePropertyID,
                                             _ inProc: AudioQueuePropertyListenerProc,
                                             _ inUserData: UnsafeMutableRawPointer?) -> OSStatus {
    guard let box = CompatQueue.from(inAQ) else { return kAudio_ParamError }
    // Swift closures have no identity: match the ID and user data, preferring the entry whose
    // function pointer is the same.
    let target = functionAddress(inProc)
    box.withState { s in
        let candidates = s.listeners.indices.filter { s.listeners[$0].id == inID && s.listeners[$0].userData == inUserData }
        if let i = candidates.first(where: { functionAddress(s.listeners[$0].proc) == target }) ?? candidates.first {
            s.listeners.remove(at: i)
        }
    }
    return noErr
}

/// The code address of a function value: a C function pointer's value, or the function word of
/// a Swift closure (equal for references to one global function).
func functionAddress<F>(_ f: F) -> Int {
    withUnsafeBytes(of: f) { $0.count >= MemoryLayout<Int>.size ? $0.load(as: Int.self) : 0 }
}
