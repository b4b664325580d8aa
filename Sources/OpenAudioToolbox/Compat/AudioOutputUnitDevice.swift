// kAudioOutputUnitProperty_CurrentDevice: the device an output unit (AUHAL, default or system
// output) plays to, as an AudioDeviceID of the HAL subset (AudioHardwareCompat.swift), mapped
// onto the PulseAudio sink or ALSA device of that ID.

import OATCore
import OATDevices

extension CompatUnit {
    /// Whether the unit plays to a device (output units other than the generic output).
    var hasDevice: Bool {
        if case .output(generic: false) = component.kind { return true }
        return false
    }

    /// The output the unit's device stands for; nil: the default (`OAT_OUTPUT`).
    var outputSpec: AudioOutputSpec? {
        guard let id = currentDevice, let device = HAL.devices().first(where: { $0.0 == id && !$0.1.isInput })?.1 else { return nil }
        return PulseAudioOutputDevice.serverAnswers() ? .pulse(sink: device.name) : .alsa(device: device.name)
    }
}

extension CompatUnit {
    /// The I/O buffer of the device the unit plays to, in frames, when the host set its
    /// `kAudioDevicePropertyBufferFrameSize` (nil: not set).
    var ioBufferFrames: UInt32? {
        let set = HAL.state.withLock { $0.bufferFrames }
        guard !set.isEmpty else { return nil }
        return set[currentDeviceID(self)]
    }
}

/// The device an output unit plays to: the one set, else the HAL's default output device.
private func currentDeviceID(_ unit: CompatUnit) -> AudioObjectID {
    if let id = unit.currentDevice { return id }
    return HALNotifier.snapshot().defaultOutput
}

func currentDeviceInfo(_ unit: CompatUnit, _ outDataSize: UnsafeMutablePointer<UInt32>?, _ outWritable: UnsafeMutablePointer<DarwinBoolean>?) -> OSStatus {
    guard unit.hasDevice else { return kAudioUnitErr_InvalidProperty }
    outDataSize?.pointee = UInt32(MemoryLayout<AudioObjectID>.size)
    outWritable?.pointee = true
    return noErr
}

func getCurrentDevice(_ unit: CompatUnit, _ outData: UnsafeMutableRawPointer, _ ioDataSize: UnsafeMutablePointer<UInt32>) -> OSStatus {
    guard unit.hasDevice else { return kAudioUnitErr_InvalidProperty }
    guard ioDataSize.pointee >= UInt32(MemoryLayout<AudioObjectID>.size) else { return kAudioUnitErr_InvalidPropertyValue }
    outData.storeBytes(of: currentDeviceID(unit), as: AudioObjectID.self)
    ioDataSize.pointee = UInt32(MemoryLayout<AudioObjectID>.size)
    return noErr
}

/// Sets the device: an output device of the HAL (else `kAudioUnitErr_InvalidPropertyValue`). A
/// running unit moves to it at once (its output restarts on the new device).
func setCurrentDevice(_ unit: CompatUnit, _ handle: AudioUnit, _ inData: UnsafeRawPointer?, _ inDataSize: UInt32) -> OSStatus {
    guard unit.hasDevice else { return kAudioUnitErr_InvalidProperty }
    guard let inData, inDataSize >= UInt32(MemoryLayout<AudioObjectID>.size) else { return kAudioUnitErr_InvalidPropertyValue }
    let id = inData.loadUnaligned(as: AudioObjectID.self)
    guard HAL.devices().contains(where: { $0.0 == id && !$0.1.isInput }) else { return kAudioUnitErr_InvalidPropertyValue }
    guard unit.currentDevice != id else { return noErr }
    unit.currentDevice = id
    let running = unit.running || unit.owner?.running == true
    guard running else { return noErr }
    _ = builtinAudioOutputUnitStop(handle)
    return builtinAudioOutputUnitStart(handle)
}
