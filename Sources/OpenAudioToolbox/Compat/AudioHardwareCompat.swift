// Audio Toolbox–compatible C-style API: the subset of Core Audio's HAL (AudioHardware.h,
// AudioHardwareBase.h) that recorders and players query, mapped onto PulseAudio sinks and sources
// (when a PulseAudio server answers) or ALSA devices. Device IDs are stable for a device name within
// a process. Property listeners are called when devices come and go and when a default changes
// (see AudioHardwareListeners.swift: PulseAudio's subscription events; not over ALSA).

import OATCore
import OATDevices
import Synchronization

/// An audio object (Apple's `AudioObjectID`).
public typealias AudioObjectID = UInt32
/// An audio device (Apple's `AudioDeviceID`).
public typealias AudioDeviceID = AudioObjectID
/// An audio stream of a device (Apple's `AudioStreamID`).
public typealias AudioStreamID = AudioObjectID
/// A property selector (Apple's `AudioObjectPropertySelector`).
public typealias AudioObjectPropertySelector = UInt32
/// A property scope (Apple's `AudioObjectPropertyScope`).
public typealias AudioObjectPropertyScope = UInt32
/// A property element (Apple's `AudioObjectPropertyElement`).
public typealias AudioObjectPropertyElement = UInt32

// `AudioObjectPropertyAddress` (selector, scope, element) is declared in C with Apple's layout
// (COATAudioToolboxTypes), so that `AudioObjectPropertyListenerProc` can be a C function type.

extension AudioObjectPropertyAddress: @retroactive Equatable, @retroactive Hashable {
    /// Equal when selector, scope and element are.
    public static func == (lhs: AudioObjectPropertyAddress, rhs: AudioObjectPropertyAddress) -> Bool {
        lhs.mSelector == rhs.mSelector && lhs.mScope == rhs.mScope && lhs.mElement == rhs.mElement
    }
    /// Hashes selector, scope and element.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(mSelector)
        hasher.combine(mScope)
        hasher.combine(mElement)
    }
}

/// Called when properties of an object change (Apple's `AudioObjectPropertyListenerProc`, a C
/// function type as on Apple: pass a global function or a closure that captures nothing): the
/// object, the number of changed addresses and the addresses, the client data. Called on the HAL's
/// notification thread (never a render thread), with no lock held.
public typealias AudioObjectPropertyListenerProc = @convention(c) (AudioObjectID, UInt32, UnsafePointer<AudioObjectPropertyAddress>,
                                                                   UnsafeMutableRawPointer?) -> OSStatus

// MARK: - Objects, scopes, elements

/// No object (Apple's `kAudioObjectUnknown`).
public let kAudioObjectUnknown: AudioObjectID = 0
/// The system object (Apple's `kAudioObjectSystemObject`).
public let kAudioObjectSystemObject: AudioObjectID = 1
/// Global scope (`'glob'`).
public let kAudioObjectPropertyScopeGlobal: AudioObjectPropertyScope = fourCC("glob")
/// Input scope (`'inpt'`).
public let kAudioObjectPropertyScopeInput: AudioObjectPropertyScope = fourCC("inpt")
/// Output scope (`'outp'`).
public let kAudioObjectPropertyScopeOutput: AudioObjectPropertyScope = fourCC("outp")
/// The main element (0).
public let kAudioObjectPropertyElementMain: AudioObjectPropertyElement = 0
/// The main element, older name (0).
public let kAudioObjectPropertyElementMaster: AudioObjectPropertyElement = 0
/// Any selector, scope or element (`'****'`).
public let kAudioObjectPropertySelectorWildcard: AudioObjectPropertySelector = fourCC("****")

// MARK: - Selectors

/// `CFString` name of an object (`'lnam'`).
public let kAudioObjectPropertyName: AudioObjectPropertySelector = fourCC("lnam")
/// `CFString` manufacturer (`'lmak'`).
public let kAudioObjectPropertyManufacturer: AudioObjectPropertySelector = fourCC("lmak")
/// `[AudioDeviceID]` all devices (`'dev#'`).
public let kAudioHardwarePropertyDevices: AudioObjectPropertySelector = fourCC("dev#")
/// `AudioDeviceID` default input (`'dIn '`).
public let kAudioHardwarePropertyDefaultInputDevice: AudioObjectPropertySelector = fourCC("dIn ")
/// `AudioDeviceID` default output (`'dOut'`).
public let kAudioHardwarePropertyDefaultOutputDevice: AudioObjectPropertySelector = fourCC("dOut")
/// `AudioDeviceID` default system (alert) output (`'sOut'`).
public let kAudioHardwarePropertyDefaultSystemOutputDevice: AudioObjectPropertySelector = fourCC("sOut")
/// `Float64` nominal sample rate (`'nsrt'`).
public let kAudioDevicePropertyNominalSampleRate: AudioObjectPropertySelector = fourCC("nsrt")
/// `CFString` device name (`'lnam'`, the same selector as `kAudioObjectPropertyName`).
public let kAudioDevicePropertyDeviceNameCFString: AudioObjectPropertySelector = fourCC("lnam")
/// `CFString` unique ID (`'uid '`).
public let kAudioDevicePropertyDeviceUID: AudioObjectPropertySelector = fourCC("uid ")
/// `UInt32` 1 while the device exists (`'livn'`).
public let kAudioDevicePropertyDeviceIsAlive: AudioObjectPropertySelector = fourCC("livn")
/// `AudioStreamBasicDescription` of the device's stream in a scope (`'sfmt'`).
public let kAudioDevicePropertyStreamFormat: AudioObjectPropertySelector = fourCC("sfmt")
/// `UInt32` I/O buffer size in frames (`'fsiz'`).
public let kAudioDevicePropertyBufferFrameSize: AudioObjectPropertySelector = fourCC("fsiz")
/// `[AudioStreamID]` the device's streams in a scope (`'stm#'`).
public let kAudioDevicePropertyStreams: AudioObjectPropertySelector = fourCC("stm#")
/// `AudioBufferList` channels per stream in a scope (`'slay'`).
public let kAudioDevicePropertyStreamConfiguration: AudioObjectPropertySelector = fourCC("slay")

// MARK: - Errors

/// Success (`kAudioHardwareNoError`).
public let kAudioHardwareNoError: OSStatus = 0
/// The property is not known to the object (`'who?'`).
public let kAudioHardwareUnknownPropertyError: OSStatus = OSStatus(bitPattern: fourCC("who?"))
/// The data size is wrong (`'!siz'`).
public let kAudioHardwareBadPropertySizeError: OSStatus = OSStatus(bitPattern: fourCC("!siz"))
/// The operation is not allowed (`'nope'`).
public let kAudioHardwareIllegalOperationError: OSStatus = OSStatus(bitPattern: fourCC("nope"))
/// The object ID is not valid (`'!obj'`).
public let kAudioHardwareBadObjectError: OSStatus = OSStatus(bitPattern: fourCC("!obj"))
/// The device ID is not valid (`'!dev'`).
public let kAudioHardwareBadDeviceError: OSStatus = OSStatus(bitPattern: fourCC("!dev"))
/// Unspecified error (`'what'`).
public let kAudioHardwareUnspecifiedError: OSStatus = OSStatus(bitPattern: fourCC("what"))
/// The operation is not supported (`'unop'`).
public let kAudioHardwareUnsupportedOperationError: OSStatus = OSStatus(bitPattern: fourCC("unop"))

// MARK: - Functions

/// Whether the object has the property (Apple's `AudioObjectHasProperty`).
public func AudioObjectHasProperty(_ inObjectID: AudioObjectID, _ inAddress: UnsafePointer<AudioObjectPropertyAddress>) -> Bool {
    if case .success = HAL.value(inObjectID, inAddress.pointee) { return true }
    return false
}

/// Whether the property can be set (Apple's `AudioObjectIsPropertySettable`): the buffer frame
/// size of a device.
@discardableResult
public func AudioObjectIsPropertySettable(_ inObjectID: AudioObjectID, _ inAddress: UnsafePointer<AudioObjectPropertyAddress>,
                                          _ outIsSettable: UnsafeMutablePointer<DarwinBoolean>) -> OSStatus {
    switch HAL.value(inObjectID, inAddress.pointee) {
    case .failure(let failure): return failure.status
    case .success:
        outIsSettable.pointee = DarwinBoolean(inObjectID != kAudioObjectSystemObject && inAddress.pointee.mSelector == kAudioDevicePropertyBufferFrameSize)
        return noErr
    }
}

/// The size of a property's value (Apple's `AudioObjectGetPropertyDataSize`).
@discardableResult
public func AudioObjectGetPropertyDataSize(_ inObjectID: AudioObjectID, _ inAddress: UnsafePointer<AudioObjectPropertyAddress>,
                                           _ inQualifierDataSize: UInt32, _ inQualifierData: UnsafeRawPointer?,
                                           _ outDataSize: UnsafeMutablePointer<UInt32>) -> OSStatus {
    switch HAL.value(inObjectID, inAddress.pointee) {
    case .failure(let failure): return failure.status
    case .success(let v): outDataSize.pointee = UInt32(v.size); return noErr
    }
}

/// A property's value (Apple's `AudioObjectGetPropertyData`). `CFString` values are written into
/// a `CFString?` (a Swift `String` here).
@discardableResult
public func AudioObjectGetPropertyData(_ inObjectID: AudioObjectID, _ inAddress: UnsafePointer<AudioObjectPropertyAddress>,
                                       _ inQualifierDataSize: UInt32, _ inQualifierData: UnsafeRawPointer?,
                                       _ ioDataSize: UnsafeMutablePointer<UInt32>, _ outData: UnsafeMutableRawPointer) -> OSStatus {
    switch HAL.value(inObjectID, inAddress.pointee) {
    case .failure(let failure): return failure.status
    case .success(let v): return v.write(ioDataSize, outData)
    }
}

/// Sets a property (Apple's `AudioObjectSetPropertyData`): a device's `BufferFrameSize` is kept
/// (and read back); other properties are `kAudioHardwareIllegalOperationError`.
@discardableResult
public func AudioObjectSetPropertyData(_ inObjectID: AudioObjectID, _ inAddress: UnsafePointer<AudioObjectPropertyAddress>,
                                       _ inQualifierDataSize: UInt32, _ inQualifierData: UnsafeRawPointer?,
                                       _ inDataSize: UInt32, _ inData: UnsafeRawPointer) -> OSStatus {
    guard case .success = HAL.value(inObjectID, inAddress.pointee) else { return HAL.value(inObjectID, inAddress.pointee).failureStatus }
    guard inObjectID != kAudioObjectSystemObject, inAddress.pointee.mSelector == kAudioDevicePropertyBufferFrameSize else {
        return kAudioHardwareIllegalOperationError
    }
    guard inDataSize >= 4 else { return kAudioHardwareBadPropertySizeError }
    let frames = inData.loadUnaligned(as: UInt32.self)
    guard frames >= 16, frames <= 8192 else { return kAudioHardwareIllegalOperationError }
    HAL.state.withLock { $0.bufferFrames[inObjectID] = frames }
    return noErr
}

/// Registers a listener (Apple's `AudioObjectAddPropertyListener`). The system object's
/// `Devices`, `DefaultOutputDevice`, `DefaultSystemOutputDevice` and `DefaultInputDevice` and a
/// device's `DeviceIsAlive` are reported when they change (PulseAudio's events; over ALSA nothing
/// is reported), on the HAL's notification thread with no lock held.
@discardableResult
public func AudioObjectAddPropertyListener(_ inObjectID: AudioObjectID, _ inAddress: UnsafePointer<AudioObjectPropertyAddress>,
                                           _ inListener: AudioObjectPropertyListenerProc,
                                           _ inClientData: UnsafeMutableRawPointer?) -> OSStatus {
    guard HAL.exists(inObjectID) else { return kAudioHardwareBadObjectError }
    let key = HAL.ListenerKey(object: inObjectID, address: inAddress.pointee, clientData: inClientData.map { UInt(bitPattern: $0) } ?? 0)
    HAL.state.withLock { $0.listeners[key, default: 0] += 1 }
    HALNotifier.add(HALNotifier.Entry(object: inObjectID, address: inAddress.pointee, clientData: key.clientData) { object, addresses in
        addresses.withUnsafeBufferPointer { _ = inListener(object, UInt32($0.count), $0.baseAddress!, inClientData) }
    })
    return noErr
}

/// Removes a listener registered with the same object, address and client data (Apple's
/// `AudioObjectRemovePropertyListener`).
@discardableResult
public func AudioObjectRemovePropertyListener(_ inObjectID: AudioObjectID, _ inAddress: UnsafePointer<AudioObjectPropertyAddress>,
                                              _ inListener: AudioObjectPropertyListenerProc,
                                              _ inClientData: UnsafeMutableRawPointer?) -> OSStatus {
    let key = HAL.ListenerKey(object: inObjectID, address: inAddress.pointee, clientData: inClientData.map { UInt(bitPattern: $0) } ?? 0)
    let status = HAL.state.withLock { state -> OSStatus in
        guard let n = state.listeners[key] else { return kAudioHardwareIllegalOperationError }
        state.listeners[key] = n > 1 ? n - 1 : nil
        return noErr
    }
    if status == noErr { HALNotifier.remove(object: inObjectID, address: inAddress.pointee, clientData: key.clientData) }
    return status
}

// MARK: - The device model

enum HAL {
    struct Device: Sendable {
        var name: String
        var description: String
        var isInput: Bool
        var sampleRate: Double
        var channels: Int
        var isDefault: Bool
    }

    struct ListenerKey: Hashable {
        var object: AudioObjectID
        var address: AudioObjectPropertyAddress
        var clientData: UInt
    }

    struct State {
        /// Device IDs by direction and name, stable for the process.
        var ids: [String: AudioObjectID] = [:]
        var next: AudioObjectID = 64
        var bufferFrames: [AudioObjectID: UInt32] = [:]
        var listeners: [ListenerKey: Int] = [:]
    }

    static let state = Locked(State())

    /// The devices now: PulseAudio sinks and sources when a server answers, else ALSA devices.
    static func devices() -> [(AudioObjectID, Device)] {
        var found: [Device] = []
        if PulseAudioOutputDevice.serverAnswers() {
            let sinks = (try? PulseAudioOutputDevice.listSinks()) ?? []
            found += sinks.map { Device(name: $0.name, description: $0.description, isInput: false, sampleRate: Double($0.sampleRate),
                                        channels: $0.channels, isDefault: $0.isDefault) }
            let sources = (try? PulseAudioInputDevice.listSources()) ?? []
            found += sources.map { info in
                var name = info.description
                if case .pulse(let source?) = info.spec { name = source }
                return Device(name: name, description: info.description, isInput: true, sampleRate: info.nativeFormat?.sampleRate ?? 48000,
                              channels: info.nativeFormat?.channels ?? 2, isDefault: info.isDefault)
            }
        } else {
            let outputs = ALSAOutputDevice.listDevices()
            found += outputs.enumerated().map { i, d in
                Device(name: d.name, description: d.description, isInput: false, sampleRate: 48000, channels: 2,
                       isDefault: d.name == "default" || (i == 0 && !outputs.contains { $0.name == "default" }))
            }
            let inputs = ALSAInputDevice.listDevices()
            found += inputs.enumerated().map { i, info in
                var name = info.description
                if case .alsa(let device) = info.spec { name = device }
                return Device(name: name, description: info.description, isInput: true, sampleRate: info.nativeFormat?.sampleRate ?? 48000,
                              channels: info.nativeFormat?.channels ?? 2, isDefault: info.isDefault || (i == 0 && !inputs.contains { $0.isDefault }))
            }
        }
        return state.withLock { s in
            found.map { d in
                let key = (d.isInput ? "in:" : "out:") + d.name
                if let id = s.ids[key] { return (id, d) }
                let id = s.next
                s.next += 1
                s.ids[key] = id
                return (id, d)
            }
        }
    }

    static func exists(_ id: AudioObjectID) -> Bool {
        id == kAudioObjectSystemObject || devices().contains { $0.0 == id }
    }

    enum Value {
        case uint32(UInt32)
        case float64(Float64)
        case ids([AudioObjectID])
        case string(String)
        case asbd(AudioStreamBasicDescription)
        case channels(UInt32)

        var size: Int {
            switch self {
            case .uint32: return 4
            case .float64: return 8
            case .ids(let a): return a.count * 4
            case .string: return MemoryLayout<CFString?>.size
            case .asbd: return MemoryLayout<AudioStreamBasicDescription>.size
            case .channels: return MemoryLayout<AudioBufferList>.size
            }
        }

        func write(_ ioSize: UnsafeMutablePointer<UInt32>, _ out: UnsafeMutableRawPointer) -> OSStatus {
            if case .ids(let a) = self { return writeArray(a, ioSize, out) }
            guard ioSize.pointee >= UInt32(size) else { return kAudioHardwareBadPropertySizeError }
            switch self {
            case .uint32(let v): out.storeBytes(of: v, as: UInt32.self)
            case .float64(let v): out.storeBytes(of: v, as: Float64.self)
            case .string(let s): out.assumingMemoryBound(to: Optional<CFString>.self).pointee = s
            case .asbd(let d): out.assumingMemoryBound(to: AudioStreamBasicDescription.self).pointee = d
            case .channels(let n):
                let list = out.assumingMemoryBound(to: AudioBufferList.self)
                list.pointee.mNumberBuffers = n > 0 ? 1 : 0
                list.pointee.mBuffers = AudioBuffer(mNumberChannels: n, mDataByteSize: 0, mData: nil)
            case .ids: break
            }
            ioSize.pointee = UInt32(size)
            return noErr
        }
    }

    static func value(_ object: AudioObjectID, _ address: AudioObjectPropertyAddress) -> Result<Value, HALFailure> {
        let all = devices()
        if object == kAudioObjectSystemObject {
            switch address.mSelector {
            case kAudioHardwarePropertyDevices: return .success(.ids(all.map(\.0)))
            case kAudioHardwarePropertyDefaultOutputDevice, kAudioHardwarePropertyDefaultSystemOutputDevice:
                return .success(.uint32(all.first { !$0.1.isInput && $0.1.isDefault }?.0 ?? all.first { !$0.1.isInput }?.0 ?? kAudioObjectUnknown))
            case kAudioHardwarePropertyDefaultInputDevice:
                return .success(.uint32(all.first { $0.1.isInput && $0.1.isDefault }?.0 ?? all.first { $0.1.isInput }?.0 ?? kAudioObjectUnknown))
            case kAudioObjectPropertyName: return .success(.string("The Audio System"))
            case kAudioObjectPropertyManufacturer: return .success(.string("OpenAudioToolbox"))
            default: return .failure(HALFailure(status: kAudioHardwareUnknownPropertyError))
            }
        }
        guard let (_, device) = all.first(where: { $0.0 == object }) else { return .failure(HALFailure(status: kAudioHardwareBadObjectError)) }
        let scope = address.mScope
        // A device has a stream only in the scope of its direction.
        let inScope = scope == kAudioObjectPropertyScopeGlobal || scope == kAudioObjectPropertySelectorWildcard
            || (scope == kAudioObjectPropertyScopeInput) == device.isInput
        switch address.mSelector {
        case kAudioObjectPropertyName: return .success(.string(device.description))
        case kAudioObjectPropertyManufacturer: return .success(.string(device.isInput ? "PulseAudio/ALSA source" : "PulseAudio/ALSA sink"))
        case kAudioDevicePropertyDeviceUID: return .success(.string(device.name))
        case kAudioDevicePropertyDeviceIsAlive: return .success(.uint32(1))
        case kAudioDevicePropertyNominalSampleRate: return .success(.float64(device.sampleRate))
        case kAudioDevicePropertyBufferFrameSize:
            return .success(.uint32(state.withLock { $0.bufferFrames[object] } ?? 512))
        case kAudioDevicePropertyStreams:
            return .success(.ids(inScope ? [object << 4 | (device.isInput ? 1 : 2)] : []))
        case kAudioDevicePropertyStreamConfiguration:
            return .success(.channels(inScope ? UInt32(device.channels) : 0))
        case kAudioDevicePropertyStreamFormat:
            guard inScope else { return .failure(HALFailure(status: kAudioHardwareUnknownPropertyError)) }
            let channels = UInt32(device.channels)
            return .success(.asbd(AudioStreamBasicDescription(mSampleRate: device.sampleRate, mFormatID: kAudioFormatLinearPCM,
                                                              mFormatFlags: kAudioFormatFlagsNativeFloatPacked, mBytesPerPacket: 4 * channels,
                                                              mFramesPerPacket: 1, mBytesPerFrame: 4 * channels, mChannelsPerFrame: channels,
                                                              mBitsPerChannel: 32, mReserved: 0)))
        default:
            return .failure(HALFailure(status: kAudioHardwareUnknownPropertyError))
        }
    }
}

/// A HAL error status.
struct HALFailure: Error { let status: OSStatus }

extension Result where Failure == HALFailure {
    var failureStatus: OSStatus {
        if case .failure(let f) = self { return f.status }
        return noErr
    }
}
