// Audio Toolbox–compatible MusicDevice.h: the music-device calls (no music devices here).

import OATCore
import OATDevices
import OATFiles
import OATUnits
import FoundationEssentials
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// MARK: - Music devices

/// An instrument ID (Apple's `MusicDeviceInstrumentID`).
public typealias MusicDeviceInstrumentID = UInt32
/// A group (channel) ID (Apple's `MusicDeviceGroupID`).
public typealias MusicDeviceGroupID = UInt32
/// A note instance (Apple's `NoteInstanceID`).
public typealias NoteInstanceID = UInt32

/// Note parameters (Apple's `MusicDeviceNoteParams`, with two of its variable-length controls).
public struct MusicDeviceNoteParams {
    /// Number of controls (2: pitch and velocity).
    public var argCount: UInt32
    /// MIDI note number.
    public var mPitch: Float32
    /// MIDI velocity.
    public var mVelocity: Float32
    /// Creates note parameters.
    public init(argCount: UInt32 = 2, mPitch: Float32 = 60, mVelocity: Float32 = 64) {
        self.argCount = argCount
        self.mPitch = mPitch
        self.mVelocity = mVelocity
    }
}

/// Sends a MIDI channel message (Apple's `MusicDeviceMIDIEvent`). Different: there are no
/// music device units here (no synthesiser or sampler), so every unit answers
/// `kAudioUnitErr_InvalidProperty` (not a music device).
@discardableResult
public func MusicDeviceMIDIEvent(_ inUnit: MusicDeviceComponent, _ inStatus: UInt32, _ inData1: UInt32, _ inData2: UInt32,
                                 _ inOffsetSampleFrame: UInt32) -> OSStatus { kAudioUnitErr_InvalidProperty }

/// Sends a System Exclusive message (Apple's `MusicDeviceSysEx`): `kAudioUnitErr_InvalidProperty`,
/// as ``MusicDeviceMIDIEvent(_:_:_:_:_:)``.
@discardableResult
public func MusicDeviceSysEx(_ inUnit: MusicDeviceComponent, _ inData: UnsafePointer<UInt8>, _ inLength: UInt32) -> OSStatus {
    kAudioUnitErr_InvalidProperty
}

/// Starts a note (Apple's `MusicDeviceStartNote`): `kAudioUnitErr_InvalidProperty`, as
/// ``MusicDeviceMIDIEvent(_:_:_:_:_:)``.
@discardableResult
public func MusicDeviceStartNote(_ inUnit: MusicDeviceComponent, _ inInstrument: MusicDeviceInstrumentID, _ inGroupID: MusicDeviceGroupID,
                                 _ outNoteInstanceID: UnsafeMutablePointer<NoteInstanceID>, _ inOffsetSampleFrame: UInt32,
                                 _ inParams: UnsafePointer<MusicDeviceNoteParams>) -> OSStatus { kAudioUnitErr_InvalidProperty }

/// Stops a note (Apple's `MusicDeviceStopNote`): `kAudioUnitErr_InvalidProperty`, as
/// ``MusicDeviceMIDIEvent(_:_:_:_:_:)``.
@discardableResult
public func MusicDeviceStopNote(_ inUnit: MusicDeviceComponent, _ inGroupID: MusicDeviceGroupID, _ inNoteInstanceID: NoteInstanceID,
                                _ inOffsetSampleFrame: UInt32) -> OSStatus { kAudioUnitErr_InvalidProperty }

/// A music device unit (Apple's `MusicDeviceComponent`, an `AudioComponentInstance`).
public typealias MusicDeviceComponent = AudioComponentInstance
