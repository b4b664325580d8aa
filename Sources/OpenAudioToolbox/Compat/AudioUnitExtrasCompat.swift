// Audio Toolbox–compatible AudioUnit extras: time-pitch and player units, property listeners,
// render notifications, scheduled parameters, AudioComponentRegister and the music-device calls.
// Built on the AudioUnits layer (AUTimePitchNode, AUPlayerNode) and ExtendedAudioFile.

import AudioCore
import AudioFiles
import AudioUnits
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

// MARK: - Constants

/// `'augn'`: generators (players).
public let kAudioUnitType_Generator: UInt32 = fourCC("augn")
/// `'aumu'`: music devices (none here).
public let kAudioUnitType_MusicDevice: UInt32 = fourCC("aumu")
/// Time-pitch (`'nutp'`, a format converter): `AUTimePitchNode` with the spectral algorithm.
public let kAudioUnitSubType_NewTimePitch: UInt32 = fourCC("nutp")
/// The older time-pitch (`'tmpt'`): the same node with the time-domain algorithm.
public let kAudioUnitSubType_TimePitch: UInt32 = fourCC("tmpt")
/// Plays regions of audio files (`'afpl'`, a generator): `AUPlayerNode` fed from the file.
public let kAudioUnitSubType_AudioFilePlayer: UInt32 = fourCC("afpl")
/// Plays scheduled slices of audio (`'sspl'`, a generator): `AUPlayerNode`.
public let kAudioUnitSubType_ScheduledSoundPlayer: UInt32 = fourCC("sspl")
/// DLS synth (`'dls '`): not available here.
public let kAudioUnitSubType_DLSSynth: UInt32 = fourCC("dls ")
/// MIDI synth (`'msyn'`): not available here.
public let kAudioUnitSubType_MIDISynth: UInt32 = fourCC("msyn")
/// Sampler (`'samp'`): not available here.
public let kAudioUnitSubType_Sampler: UInt32 = fourCC("samp")

/// Time-pitch rate (0.5 ... 2 here; Apple 1/32 ... 32).
public let kNewTimePitchParam_Rate: AudioUnitParameterID = 0
/// Time-pitch pitch in cents (−2400 ... 2400).
public let kNewTimePitchParam_Pitch: AudioUnitParameterID = 1
/// Overlap (Apple's phase vocoder setting): not a parameter here.
public let kNewTimePitchParam_Overlap: AudioUnitParameterID = 4
/// Peak locking (Apple's phase vocoder setting): not a parameter here.
public let kNewTimePitchParam_EnablePeakLocking: AudioUnitParameterID = 6
/// Old time-pitch rate.
public let kTimePitchParam_Rate: AudioUnitParameterID = 0
/// Old time-pitch pitch in cents.
public let kTimePitchParam_Pitch: AudioUnitParameterID = 1
/// Old time-pitch effect blend: not a parameter here.
public let kTimePitchParam_EffectBlend: AudioUnitParameterID = 2

/// `ScheduledAudioSlice` for a scheduled sound player (3300).
public let kAudioUnitProperty_ScheduleAudioSlice: AudioUnitPropertyID = 3300
/// `AudioTimeStamp`: when a player starts (3301); sample time -1 = the next render.
public let kAudioUnitProperty_ScheduleStartTimeStamp: AudioUnitPropertyID = 3301
/// `AudioTimeStamp`: frames a player has played since it started (3302).
public let kAudioUnitProperty_CurrentPlayTime: AudioUnitPropertyID = 3302
/// Array of `AudioFileID`: the files a file player may play (3310).
public let kAudioUnitProperty_ScheduledFileIDs: AudioUnitPropertyID = 3310
/// `ScheduledAudioFileRegion`: what a file player plays (3311).
public let kAudioUnitProperty_ScheduledFileRegion: AudioUnitPropertyID = 3311
/// `UInt32` frames to read ahead before the start returns (3312); 0: the default (65536).
public let kAudioUnitProperty_ScheduledFilePrime: AudioUnitPropertyID = 3312
/// `UInt32` frames of read-ahead buffer (3313), set before initialising.
public let kAudioUnitProperty_ScheduledFileBufferSizeFrames: AudioUnitPropertyID = 3313
/// `UInt32` number of read-ahead buffers (3314): accepted, one ring here.
public let kAudioUnitProperty_ScheduledFileNumberBuffers: AudioUnitPropertyID = 3314

/// A file's data is not usable by a player.
public let kAudioUnitErr_InvalidFile: OSStatus = -10871
/// The file type is not known.
public let kAudioUnitErr_UnknownFileType: OSStatus = -10870
/// No file was given.
public let kAudioUnitErr_FileNotSpecified: OSStatus = -10869
/// The property or call is not available on this unit.
public let kAudioUnitErr_Unauthorized: OSStatus = -10847
/// An offline render was asked of a unit that does not render offline (Apple's
/// `kAudioUnitErr_InvalidOfflineRender`).
public let kAudioUnitErr_InvalidOfflineRender: OSStatus = -10848
/// The property is not in use (Apple's `kAudioUnitErr_PropertyNotInUse`).
public let kAudioUnitErr_PropertyNotInUse: OSStatus = -10850
/// The MIDI output buffer is full (Apple's `kAudioUnitErr_MIDIOutputBufferFull`).
public let kAudioUnitErr_MIDIOutputBufferFull: OSStatus = -66753
/// The render did not finish in time (Apple's `kAudioUnitErr_RenderTimeout`).
public let kAudioUnitErr_RenderTimeout: OSStatus = -66745
/// The component's extension is not available (Apple's `kAudioUnitErr_ExtensionNotFound`): used for
/// the music devices.
public let kAudioUnitErr_ExtensionNotFound: OSStatus = -66744
/// A parameter value is out of range (Apple's `kAudioUnitErr_InvalidParameterValue`).
public let kAudioUnitErr_InvalidParameterValue: OSStatus = -66743
/// A file path is invalid (Apple's `kAudioUnitErr_InvalidFilePath`).
public let kAudioUnitErr_InvalidFilePath: OSStatus = -66742
/// A required key is missing from a class-info dictionary (Apple's `kAudioUnitErr_MissingKey`).
public let kAudioUnitErr_MissingKey: OSStatus = -66741
/// The Component Manager is not supported (Apple's `kAudioUnitErr_ComponentManagerNotSupported`).
public let kAudioUnitErr_ComponentManagerNotSupported: OSStatus = -66740
/// A process may use only one voice-processing unit (Apple's `kAudioUnitErr_MultipleVoiceProcessors`).
public let kAudioUnitErr_MultipleVoiceProcessors: OSStatus = -66635
/// A description is registered twice (Apple's `kAudioComponentErr_DuplicateDescription`).
public let kAudioComponentErr_DuplicateDescription: OSStatus = -66752
/// The component type is not supported (Apple's `kAudioComponentErr_UnsupportedType`).
public let kAudioComponentErr_UnsupportedType: OSStatus = -66751
/// Too many instances of the component (Apple's `kAudioComponentErr_TooManyInstances`).
public let kAudioComponentErr_TooManyInstances: OSStatus = -66750
/// The instance was invalidated (Apple's `kAudioComponentErr_InstanceInvalidated`).
public let kAudioComponentErr_InstanceInvalidated: OSStatus = -66749
/// The component may not be used here (Apple's `kAudioComponentErr_NotPermitted`).
public let kAudioComponentErr_NotPermitted: OSStatus = -66748
/// The component did not initialise in time (Apple's `kAudioComponentErr_InitializationTimedOut`).
public let kAudioComponentErr_InitializationTimedOut: OSStatus = -66747
/// A format is invalid (Apple's `kAudioComponentErr_InvalidFormat`).
public let kAudioComponentErr_InvalidFormat: OSStatus = -66746
/// The instance timed out (Apple's `kAudioComponentErr_InstanceTimedOut`).
public let kAudioComponentErr_InstanceTimedOut: OSStatus = -66754

/// Reverb2 minimum delay time (2): not a parameter of the reverb here (`kAudioUnitErr_InvalidParameter`).
public let kReverb2Param_MinDelayTime: AudioUnitParameterID = 2
/// Reverb2 maximum delay time (3): not a parameter here.
public let kReverb2Param_MaxDelayTime: AudioUnitParameterID = 3
/// Reverb2 reflection randomisation (6): not a parameter here.
public let kReverb2Param_RandomizeReflections: AudioUnitParameterID = 6
/// Dynamics processor head room (1): not a parameter here (the compressor has an explicit
/// ratio, ID 100, and knee, ID 101).
public let kDynamicsProcessorParam_HeadRoom: AudioUnitParameterID = 1
/// Dynamics processor expansion ratio (2): not a parameter here (no expander).
public let kDynamicsProcessorParam_ExpansionRatio: AudioUnitParameterID = 2
/// Dynamics processor expansion threshold (3): not a parameter here (no expander).
public let kDynamicsProcessorParam_ExpansionThreshold: AudioUnitParameterID = 3
/// Dynamics processor gain reduction, read-only (1000): not a parameter here.
public let kDynamicsProcessorParam_CompressionAmount: AudioUnitParameterID = 1000
/// Dynamics processor input level, read-only (2000): not a parameter here.
public let kDynamicsProcessorParam_InputAmplitude: AudioUnitParameterID = 2000
/// Dynamics processor output level, read-only (3000): not a parameter here.
public let kDynamicsProcessorParam_OutputAmplitude: AudioUnitParameterID = 3000

// MARK: - Types

/// Called when a file region has been read (Apple's `ScheduledAudioFileRegionCompletionProc`; a
/// Swift function type here). It runs on the player's feeder thread.
public typealias ScheduledAudioFileRegionCompletionProc = (UnsafeMutableRawPointer?, UnsafeMutablePointer<ScheduledAudioFileRegion>, OSStatus) -> Void

/// A region of a file to play (Apple's `ScheduledAudioFileRegion`).
public struct ScheduledAudioFileRegion {
    /// Where in the player's timeline the region starts (sample time; only the order matters here).
    public var mTimeStamp: AudioTimeStamp
    /// Called once the region has been read.
    public var mCompletionProc: ScheduledAudioFileRegionCompletionProc?
    /// Passed to the completion proc.
    public var mCompletionProcUserData: UnsafeMutableRawPointer?
    /// The file (one of ``kAudioUnitProperty_ScheduledFileIDs``).
    public var mAudioFile: AudioFileID?
    /// Extra repetitions (`UInt32.max`, C's -1: forever).
    public var mLoopCount: UInt32
    /// First frame (file rate).
    public var mStartFrame: Int64
    /// Frames to play (`UInt32.max`: to the end).
    public var mFramesToPlay: UInt32
    /// A zeroed region.
    public init() {
        self.init(mTimeStamp: AudioTimeStamp(), mCompletionProc: nil, mCompletionProcUserData: nil, mAudioFile: nil, mLoopCount: 0,
                  mStartFrame: 0, mFramesToPlay: 0)
    }
    /// Apple's memberwise initialiser.
    public init(mTimeStamp: AudioTimeStamp, mCompletionProc: ScheduledAudioFileRegionCompletionProc?, mCompletionProcUserData: UnsafeMutableRawPointer?,
                mAudioFile: AudioFileID?, mLoopCount: UInt32, mStartFrame: Int64, mFramesToPlay: UInt32) {
        self.mTimeStamp = mTimeStamp
        self.mCompletionProc = mCompletionProc
        self.mCompletionProcUserData = mCompletionProcUserData
        self.mAudioFile = mAudioFile
        self.mLoopCount = mLoopCount
        self.mStartFrame = mStartFrame
        self.mFramesToPlay = mFramesToPlay
    }
}

/// Called when a slice has been taken (Apple's `ScheduledAudioSliceCompletionProc`).
public typealias ScheduledAudioSliceCompletionProc = (UnsafeMutableRawPointer?, UnsafeMutablePointer<ScheduledAudioSlice>) -> Void

/// Flags of a scheduled slice (Apple's `AUScheduledAudioSliceFlags`).
public struct AUScheduledAudioSliceFlags: OptionSet, Hashable, Sendable {
    /// The bits.
    public var rawValue: UInt32
    /// Creates flags.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// The slice has been taken.
    public static let scheduledAudioSliceFlag_Complete = AUScheduledAudioSliceFlags(rawValue: 0x01)
    /// The slice began to render.
    public static let scheduledAudioSliceFlag_BeganToRender = AUScheduledAudioSliceFlags(rawValue: 0x02)
    /// The slice began late.
    public static let scheduledAudioSliceFlag_BeganToRenderLate = AUScheduledAudioSliceFlags(rawValue: 0x04)
    /// Loop the slice.
    public static let scheduledAudioSliceFlag_Loop = AUScheduledAudioSliceFlags(rawValue: 0x08)
    /// Interrupt the current slice.
    public static let scheduledAudioSliceFlag_Interrupt = AUScheduledAudioSliceFlags(rawValue: 0x10)
    /// Interrupt at the next loop point.
    public static let scheduledAudioSliceFlag_InterruptAtLoop = AUScheduledAudioSliceFlags(rawValue: 0x20)
}

/// A slice of audio to play (Apple's `ScheduledAudioSlice`): `mNumberFrames` frames in
/// `mBufferList`, in the player's output stream format (non-interleaved Float32 by default).
public struct ScheduledAudioSlice {
    /// When the slice plays (only the order matters here).
    public var mTimeStamp: AudioTimeStamp
    /// Called when the slice has been taken.
    public var mCompletionProc: ScheduledAudioSliceCompletionProc?
    /// Passed to the completion proc.
    public var mCompletionProcUserData: UnsafeMutableRawPointer?
    /// State flags (set by the player).
    public var mFlags: AUScheduledAudioSliceFlags
    /// Reserved.
    public var mReserved: UInt32
    /// Reserved.
    public var mReserved2: UnsafeMutableRawPointer?
    /// Frames in the slice.
    public var mNumberFrames: UInt32
    /// The audio.
    public var mBufferList: UnsafeMutablePointer<AudioBufferList>?
    /// A zeroed slice.
    public init() {
        self.init(mTimeStamp: AudioTimeStamp(), mCompletionProc: nil, mCompletionProcUserData: nil, mFlags: [], mReserved: 0, mReserved2: nil,
                  mNumberFrames: 0, mBufferList: nil)
    }
    /// Apple's memberwise initialiser.
    public init(mTimeStamp: AudioTimeStamp, mCompletionProc: ScheduledAudioSliceCompletionProc?, mCompletionProcUserData: UnsafeMutableRawPointer?,
                mFlags: AUScheduledAudioSliceFlags, mReserved: UInt32, mReserved2: UnsafeMutableRawPointer?, mNumberFrames: UInt32,
                mBufferList: UnsafeMutablePointer<AudioBufferList>?) {
        self.mTimeStamp = mTimeStamp
        self.mCompletionProc = mCompletionProc
        self.mCompletionProcUserData = mCompletionProcUserData
        self.mFlags = mFlags
        self.mReserved = mReserved
        self.mReserved2 = mReserved2
        self.mNumberFrames = mNumberFrames
        self.mBufferList = mBufferList
    }
}

/// Called after a property of a unit changed (Apple's `AudioUnitPropertyListenerProc`; a Swift
/// function type here): user data, unit, property, scope, element.
public typealias AudioUnitPropertyListenerProc = (_ inRefCon: UnsafeMutableRawPointer, _ inUnit: AudioUnit, _ inID: AudioUnitPropertyID,
                                                  _ inScope: AudioUnitScope, _ inElement: AudioUnitElement) -> Void

/// A parameter event type (Apple's `AUParameterEventType`).
public typealias AUParameterEventType = UInt32
/// Set the value at a frame offset.
public let kParameterEvent_Immediate: AUParameterEventType = 1
/// Ramp from a start to an end value.
public let kParameterEvent_Ramped: AUParameterEventType = 2

/// A scheduled parameter change (Apple's `AudioUnitParameterEvent`).
public struct AudioUnitParameterEvent {
    /// An immediate change (Apple's `eventValues.immediate`).
    public struct Immediate {
        /// Frame offset in the next render.
        public var bufferOffset: UInt32
        /// The value.
        public var value: AudioUnitParameterValue
        /// Creates an immediate change.
        public init(bufferOffset: UInt32, value: AudioUnitParameterValue) { self.bufferOffset = bufferOffset; self.value = value }
    }
    /// A ramp (Apple's `eventValues.ramp`).
    public struct Ramp {
        /// Frame offset where the ramp starts.
        public var startBufferOffset: Int32
        /// Ramp length in frames.
        public var durationInFrames: UInt32
        /// Value at the start.
        public var startValue: AudioUnitParameterValue
        /// Value at the end.
        public var endValue: AudioUnitParameterValue
        /// Creates a ramp.
        public init(startBufferOffset: Int32, durationInFrames: UInt32, startValue: AudioUnitParameterValue, endValue: AudioUnitParameterValue) {
            self.startBufferOffset = startBufferOffset
            self.durationInFrames = durationInFrames
            self.startValue = startValue
            self.endValue = endValue
        }
    }
    /// The event's values (Apple's C union `eventValues`: ``ramp`` or ``immediate`` by type).
    public struct EventValues {
        /// The ramp values (for `kParameterEvent_Ramped`).
        public var ramp: Ramp
        /// The immediate values (for `kParameterEvent_Immediate`).
        public var immediate: Immediate
        /// Values of a ramp.
        public init(ramp: Ramp) { self.ramp = ramp; immediate = Immediate(bufferOffset: UInt32(bitPattern: ramp.startBufferOffset), value: ramp.endValue) }
        /// Values of an immediate change.
        public init(immediate: Immediate) {
            self.immediate = immediate
            ramp = Ramp(startBufferOffset: Int32(bitPattern: immediate.bufferOffset), durationInFrames: 0, startValue: immediate.value, endValue: immediate.value)
        }
    }
    /// The scope.
    public var scope: AudioUnitScope
    /// The element.
    public var element: AudioUnitElement
    /// The parameter.
    public var parameter: AudioUnitParameterID
    /// Immediate or ramped.
    public var eventType: AUParameterEventType
    /// The values.
    public var eventValues: EventValues
    /// Apple's memberwise initialiser.
    public init(scope: AudioUnitScope, element: AudioUnitElement, parameter: AudioUnitParameterID, eventType: AUParameterEventType, eventValues: EventValues) {
        self.scope = scope
        self.element = element
        self.parameter = parameter
        self.eventType = eventType
        self.eventValues = eventValues
    }
}

// MARK: - Per-unit state

/// Listeners, render notifications and player state of a ``CompatUnit``.
final class CompatUnitExtras {
    struct Listener { var id: AudioUnitPropertyID; var proc: AudioUnitPropertyListenerProc; var userData: UnsafeMutableRawPointer? }
    var listeners: [Listener] = []
    var renderNotifies: [AURenderCallbackStruct] = []
    /// The graph and notification generation the installed render observer is for.
    var installedNotifies: (ObjectIdentifier, Int)?
    // File player.
    var fileIDs: [AudioFileID] = []
    var region: ScheduledAudioFileRegion?
    var primeFrames: UInt32 = 0
    var bufferFrames: UInt32 = 65536
    var started = false
    var startTime = AudioTimeStamp()
}

// MARK: - Components defined here

/// Registered components (``AudioComponentRegister(_:_:_:_:)``).
private let registeredComponents = Locked<[CompatComponent]>([])

/// Every component: the built-in ones, the ones in this file, the registered ones.
var compatComponents: [CompatComponent] { builtinCompatComponents + extraCompatComponents + registeredComponents.withLock { $0 } }

private let extraCompatComponents: [CompatComponent] = {
    func d(_ t: UInt32, _ s: UInt32) -> AudioComponentDescription {
        AudioComponentDescription(componentType: t, componentSubType: s, componentManufacturer: kAudioUnitManufacturer_Apple, componentFlags: 0, componentFlagsMask: 0)
    }
    let player: @Sendable (CompatUnit) -> AudioUnits.AUNode? = { unit in
        AUPlayerNode(channels: unit.channels(kAudioUnitScope_Output, 0), bufferFrames: Int(unit.extras.bufferFrames), name: "file player")
    }
    return [
        CompatComponent(description: d(kAudioUnitType_FormatConverter, kAudioUnitSubType_NewTimePitch),
                        kind: .custom({ unit in AUTimePitchNode(channels: unit.channels(kAudioUnitScope_Input, 0), algorithm: .spectral) }),
                        name: "Apple: AUNewTimePitch"),
        CompatComponent(description: d(kAudioUnitType_FormatConverter, kAudioUnitSubType_TimePitch),
                        kind: .custom({ unit in AUTimePitchNode(channels: unit.channels(kAudioUnitScope_Input, 0), algorithm: .timeDomain) }),
                        name: "Apple: AUTimePitch"),
        CompatComponent(description: d(kAudioUnitType_Generator, kAudioUnitSubType_AudioFilePlayer), kind: .custom(player), name: "Apple: AUAudioFilePlayer"),
        CompatComponent(description: d(kAudioUnitType_Generator, kAudioUnitSubType_ScheduledSoundPlayer), kind: .custom(player), name: "Apple: AUScheduledSoundPlayer"),
    ]
}()

/// Makes a unit's node (Apple: an `AudioComponentPlugInInterface`; here a Swift AudioUnits
/// node, which the C API then drives like the built-in units: stream formats, render
/// callbacks on its inputs, parameters by ID, graphs). Different from Apple's
/// `AudioComponentFactoryFunction`, which returns a C plug-in interface.
public typealias AudioComponentFactoryFunction = (UnsafePointer<AudioComponentDescription>) -> AudioUnits.AUNode?

/// Registers a unit implemented in Swift (Apple's `AudioComponentRegister`): afterwards
/// `AudioComponentFindNext` finds `inDesc` and `AudioComponentInstanceNew` creates units whose
/// node `inFactory` makes (called again when formats change). `inName` and `inVersion` are kept
/// for nothing here.
public func AudioComponentRegister(_ inDesc: UnsafePointer<AudioComponentDescription>, _ inName: CFString, _ inVersion: UInt32,
                                   _ inFactory: @escaping AudioComponentFactoryFunction) -> AudioComponent {
    var registered = inDesc.pointee
    registered.componentFlags = 0
    registered.componentFlagsMask = 0
    let description = registered
    let box = UncheckedSendable(inFactory)
    let component = CompatComponent(description: description, kind: .custom({ _ in
        var d = description
        return box.value(&d)
    }), name: inName)
    let index = registeredComponents.withLock { list -> Int in
        list.append(component)
        return list.count - 1
    }
    return OpaquePointer(bitPattern: builtinCompatComponents.count + extraCompatComponents.count + index + 1)!
}

// MARK: - Properties (public entry points; the built-in ones are in AudioUnitCompat.swift)

/// The size and writability of a property: the built-in ones (see ``AudioUnitGetProperty(_:_:_:_:_:_:)``)
/// and the player properties (ScheduledFileIDs, ScheduledFileRegion, ScheduledFilePrime,
/// ScheduledFileBufferSizeFrames, ScheduledFileNumberBuffers, ScheduleStartTimeStamp,
/// CurrentPlayTime, ScheduleAudioSlice) on player units.
@discardableResult
public func AudioUnitGetPropertyInfo(_ inUnit: AudioUnit, _ inID: AudioUnitPropertyID, _ inScope: AudioUnitScope, _ inElement: AudioUnitElement,
                                     _ outDataSize: UnsafeMutablePointer<UInt32>?, _ outWritable: UnsafeMutablePointer<DarwinBoolean>?) -> OSStatus {
    guard let unit = compatUnit(inUnit) else { return kAudio_ParamError }
    if isPlayer(unit), let size = playerPropertySize(unit, inID) {
        outDataSize?.pointee = size
        outWritable?.pointee = DarwinBoolean(inID != kAudioUnitProperty_CurrentPlayTime)
        return noErr
    }
    return builtinAudioUnitGetPropertyInfo(inUnit, inID, inScope, inElement, outDataSize, outWritable)
}

/// Reads a property: the built-in ones (stream format, maximum frames, element count, sample
/// rate, latency, tail time, IsRunning, EnableIO, band count) and, on player units,
/// ScheduledFileIDs, ScheduledFileRegion, ScheduledFilePrime, ScheduledFileBufferSizeFrames,
/// ScheduleStartTimeStamp and CurrentPlayTime (sample time = frames played since the start,
/// -1 before).
@discardableResult
public func AudioUnitGetProperty(_ inUnit: AudioUnit, _ inID: AudioUnitPropertyID, _ inScope: AudioUnitScope, _ inElement: AudioUnitElement,
                                 _ outData: UnsafeMutableRawPointer, _ ioDataSize: UnsafeMutablePointer<UInt32>) -> OSStatus {
    guard let unit = compatUnit(inUnit) else { return kAudio_ParamError }
    if isPlayer(unit), let status = getPlayerProperty(unit, inID, outData, ioDataSize) { return status }
    return builtinAudioUnitGetProperty(inUnit, inID, inScope, inElement, outData, ioDataSize)
}

/// Writes a property: the built-in ones (stream formats before initialising, render callbacks,
/// MaximumFramesPerSlice, element counts, EnableIO, band count) and the player properties.
/// Listeners added with ``AudioUnitAddPropertyListener(_:_:_:_:)`` for that property are called
/// after a successful change, on the calling thread.
@discardableResult
public func AudioUnitSetProperty(_ inUnit: AudioUnit, _ inID: AudioUnitPropertyID, _ inScope: AudioUnitScope, _ inElement: AudioUnitElement,
                                 _ inData: UnsafeRawPointer?, _ inDataSize: UInt32) -> OSStatus {
    guard let unit = compatUnit(inUnit) else { return kAudio_ParamError }
    let status: OSStatus
    if isPlayer(unit), let s = setPlayerProperty(unit, inID, inData, inDataSize) {
        status = s
    } else {
        status = builtinAudioUnitSetProperty(inUnit, inID, inScope, inElement, inData, inDataSize)
    }
    if status == noErr {
        for l in unit.extras.listeners where l.id == inID { l.proc(l.userData ?? compatNilClientData, inUnit, inID, inScope, inElement) }
    }
    return status
}

/// Sets `kAudioUnitProperty_ScheduledFileRegion` from a ``ScheduledAudioFileRegion``: the
/// overload `&region` picks, since the struct holds a Swift function here.
@discardableResult
public func AudioUnitSetProperty(_ inUnit: AudioUnit, _ inID: AudioUnitPropertyID, _ inScope: AudioUnitScope, _ inElement: AudioUnitElement,
                                 _ inData: UnsafePointer<ScheduledAudioFileRegion>, _ inDataSize: UInt32) -> OSStatus {
    AudioUnitSetProperty(inUnit, inID, inScope, inElement, Optional(UnsafeRawPointer(inData)), inDataSize)
}

/// Sets `kAudioUnitProperty_ScheduleAudioSlice` from a ``ScheduledAudioSlice`` (its flags are
/// updated): the overload `&slice` picks.
@discardableResult
public func AudioUnitSetProperty(_ inUnit: AudioUnit, _ inID: AudioUnitPropertyID, _ inScope: AudioUnitScope, _ inElement: AudioUnitElement,
                                 _ inData: UnsafeMutablePointer<ScheduledAudioSlice>, _ inDataSize: UInt32) -> OSStatus {
    AudioUnitSetProperty(inUnit, inID, inScope, inElement, Optional(UnsafeRawPointer(inData)), inDataSize)
}

// MARK: - Players

private func isPlayer(_ unit: CompatUnit) -> Bool {
    let s = unit.component.description.componentSubType
    return unit.component.description.componentType == kAudioUnitType_Generator
        && (s == kAudioUnitSubType_AudioFilePlayer || s == kAudioUnitSubType_ScheduledSoundPlayer)
}

private func playerPropertySize(_ unit: CompatUnit, _ id: AudioUnitPropertyID) -> UInt32? {
    switch id {
    case kAudioUnitProperty_ScheduledFileIDs: return UInt32(unit.extras.fileIDs.count * MemoryLayout<AudioFileID>.stride)
    case kAudioUnitProperty_ScheduledFileRegion: return UInt32(MemoryLayout<ScheduledAudioFileRegion>.size)
    case kAudioUnitProperty_ScheduleStartTimeStamp, kAudioUnitProperty_CurrentPlayTime: return UInt32(MemoryLayout<AudioTimeStamp>.size)
    case kAudioUnitProperty_ScheduledFilePrime, kAudioUnitProperty_ScheduledFileBufferSizeFrames, kAudioUnitProperty_ScheduledFileNumberBuffers: return 4
    case kAudioUnitProperty_ScheduleAudioSlice: return UInt32(MemoryLayout<ScheduledAudioSlice>.size)
    default: return nil
    }
}

private func getPlayerProperty(_ unit: CompatUnit, _ id: AudioUnitPropertyID, _ out: UnsafeMutableRawPointer,
                               _ ioSize: UnsafeMutablePointer<UInt32>) -> OSStatus? {
    let e = kAudio_ParamError
    let x = unit.extras
    switch id {
    case kAudioUnitProperty_ScheduledFileIDs:
        let n = min(x.fileIDs.count, Int(ioSize.pointee) / MemoryLayout<AudioFileID>.stride)
        let p = out.assumingMemoryBound(to: AudioFileID?.self)
        for i in 0..<n { p[i] = x.fileIDs[i] }
        ioSize.pointee = UInt32(n * MemoryLayout<AudioFileID>.stride)
        return noErr
    case kAudioUnitProperty_ScheduledFileRegion:
        guard let r = x.region else { return kAudioUnitErr_FileNotSpecified }
        guard Int(ioSize.pointee) >= MemoryLayout<ScheduledAudioFileRegion>.size else { return e }
        out.assumingMemoryBound(to: ScheduledAudioFileRegion.self).pointee = r
        return noErr
    case kAudioUnitProperty_ScheduleStartTimeStamp: return writeProperty(x.startTime, ioSize, out, sizeError: e)
    case kAudioUnitProperty_CurrentPlayTime:
        let played = x.started ? Double((unit.node as? AUPlayerNode)?.playedFrames ?? 0) : -1
        return writeProperty(AudioTimeStamp(sampleTime: played, hostTime: 0, rateScalar: 1, flags: .sampleTimeValid), ioSize, out, sizeError: e)
    case kAudioUnitProperty_ScheduledFilePrime: return writeProperty(x.primeFrames, ioSize, out, sizeError: e)
    case kAudioUnitProperty_ScheduledFileBufferSizeFrames: return writeProperty(x.bufferFrames, ioSize, out, sizeError: e)
    case kAudioUnitProperty_ScheduledFileNumberBuffers: return writeProperty(UInt32(1), ioSize, out, sizeError: e)
    default: return nil
    }
}

private func setPlayerProperty(_ unit: CompatUnit, _ id: AudioUnitPropertyID, _ data: UnsafeRawPointer?, _ size: UInt32) -> OSStatus? {
    let x = unit.extras
    switch id {
    case kAudioUnitProperty_ScheduledFileIDs:
        guard let data else { x.fileIDs = []; return noErr }
        let n = Int(size) / MemoryLayout<AudioFileID>.stride
        var ids: [AudioFileID] = []
        for i in 0..<n {
            guard let id = data.loadUnaligned(fromByteOffset: i * MemoryLayout<AudioFileID>.stride, as: AudioFileID?.self),
                  CompatAudioFile.from(id) != nil else { return kAudioUnitErr_InvalidFile }
            ids.append(id)
        }
        x.fileIDs = ids
        return noErr
    case kAudioUnitProperty_ScheduledFileRegion:
        guard unit.component.description.componentSubType == kAudioUnitSubType_AudioFilePlayer else { return kAudioUnitErr_InvalidProperty }
        guard let data, Int(size) >= MemoryLayout<ScheduledAudioFileRegion>.size else { return kAudio_ParamError }
        guard unit.initialized else { return kAudioUnitErr_Uninitialized }
        let r = data.assumingMemoryBound(to: ScheduledAudioFileRegion.self).pointee
        guard let f = r.mAudioFile, x.fileIDs.contains(f) else { return kAudioUnitErr_FileNotSpecified }
        x.region = r
        return noErr
    case kAudioUnitProperty_ScheduledFilePrime:
        guard let data, size >= 4 else { return kAudio_ParamError }
        guard unit.initialized else { return kAudioUnitErr_Uninitialized }
        x.primeFrames = data.loadUnaligned(as: UInt32.self)
        return noErr
    case kAudioUnitProperty_ScheduledFileBufferSizeFrames:
        guard let data, size >= 4 else { return kAudio_ParamError }
        guard !unit.initialized else { return kAudioUnitErr_Initialized }
        x.bufferFrames = max(1024, data.loadUnaligned(as: UInt32.self))
        unit.node = unit.makeNode()
        return noErr
    case kAudioUnitProperty_ScheduledFileNumberBuffers:
        return data != nil && size >= 4 ? noErr : kAudio_ParamError
    case kAudioUnitProperty_ScheduleStartTimeStamp:
        guard let data, Int(size) >= MemoryLayout<AudioTimeStamp>.size else { return kAudio_ParamError }
        guard unit.initialized, let player = unit.node as? AUPlayerNode else { return kAudioUnitErr_Uninitialized }
        x.startTime = data.loadUnaligned(as: AudioTimeStamp.self)
        x.started = true
        if unit.component.description.componentSubType == kAudioUnitSubType_AudioFilePlayer {
            return startFileRegion(unit, player)
        }
        return noErr
    case kAudioUnitProperty_ScheduleAudioSlice:
        guard unit.component.description.componentSubType == kAudioUnitSubType_ScheduledSoundPlayer else { return kAudioUnitErr_InvalidProperty }
        guard let data, Int(size) >= MemoryLayout<ScheduledAudioSlice>.size else { return kAudio_ParamError }
        guard unit.initialized, let player = unit.node as? AUPlayerNode else { return kAudioUnitErr_Uninitialized }
        let slice = UnsafeMutablePointer(mutating: data.assumingMemoryBound(to: ScheduledAudioSlice.self))
        return scheduleSlice(unit, player, slice)
    case kAudioUnitProperty_CurrentPlayTime:
        return kAudioUnitErr_PropertyNotWritable
    default:
        return nil
    }
}

/// Starts the feeder that reads the scheduled region (looping as asked) into the player, and
/// waits until the prime frames are buffered (at most 5 s).
private func startFileRegion(_ unit: CompatUnit, _ player: AUPlayerNode) -> OSStatus {
    guard let region = unit.extras.region, let id = region.mAudioFile, let box = CompatAudioFile.from(id) else { return kAudioUnitErr_FileNotSpecified }
    let format = unit.format(kAudioUnitScope_Output, 0)
    let channels = player.channels
    let client = AudioStreamBasicDescription.linearPCM(sampleRate: format.mSampleRate, channels: UInt32(channels), bitsPerChannel: 32, isFloat: true)
    let reader: ExtendedAudioFile
    do throws(AudioError) {
        reader = try ExtendedAudioFile(file: box.file, clientFormat: client)
        try reader.seek(toFrame: max(0, min(region.mStartFrame, reader.frameCount)))
    } catch {
        return kAudioUnitErr_InvalidFile
    }
    let ratio = format.mSampleRate / box.file.dataFormat.sampleRate
    let fileFrames = region.mFramesToPlay == UInt32.max ? reader.frameCount - region.mStartFrame : Int64(region.mFramesToPlay)
    let framesPerPass = Int64((Double(max(0, fileFrames)) * ratio).rounded())
    var passesLeft = region.mLoopCount == UInt32.max ? Int.max : Int(region.mLoopCount) + 1
    var leftInPass = framesPerPass
    var pcm: AudioPCMBuffer?
    let state = UncheckedState(region: region)
    player.play(from: { (out: UnsafeMutableBufferPointer<Float>) throws(AudioError) -> Int in
        let want = out.count / channels
        while passesLeft > 0 {
            if leftInPass <= 0 {
                passesLeft -= 1
                if passesLeft == 0 { break }
                try reader.seek(toFrame: max(0, min(state.region.mStartFrame, reader.frameCount)))
                leftInPass = framesPerPass
                continue
            }
            let n = Int(min(Int64(want), leftInPass))
            if pcm == nil || pcm!.frameCapacity != n { pcm = try AudioPCMBuffer(format: client, frameCapacity: n) }
            let got = try reader.read(into: pcm!)
            if got == 0 { leftInPass = 0; continue }
            out.baseAddress!.update(from: pcm!.floatChannel(0)!.baseAddress!, count: got * channels)
            leftInPass -= Int64(got)
            return got
        }
        if let done = state.region.mCompletionProc {
            done(state.region.mCompletionProcUserData, &state.region, noErr)
        }
        return 0
    })
    // Prime: wait until the asked frames (at most half the read-ahead buffer, at most the
    // region) are buffered.
    let prime = Int(unit.extras.primeFrames == 0 ? 65536 : unit.extras.primeFrames)
    let target = min(prime, Int(unit.extras.bufferFrames) / 2, Int(clamping: framesPerPass))
    let deadline = Date().addingTimeInterval(5)
    while player.bufferedFrames < target && !player.isInputEnded && Date() < deadline { usleep(1000) }
    return noErr
}

private final class UncheckedState: @unchecked Sendable {
    var region: ScheduledAudioFileRegion
    init(region: ScheduledAudioFileRegion) { self.region = region }
}

/// Copies a slice (in the unit's output format: Float32, planar or interleaved) into the player
/// and marks it complete.
private func scheduleSlice(_ unit: CompatUnit, _ player: AUPlayerNode, _ slice: UnsafeMutablePointer<ScheduledAudioSlice>) -> OSStatus {
    guard let listPointer = slice.pointee.mBufferList else { return kAudio_ParamError }
    let list = UnsafeMutableAudioBufferListPointer(listPointer)
    let format = unit.format(kAudioUnitScope_Output, 0)
    guard format.isFloat, format.mBitsPerChannel == 32 else { return kAudioUnitErr_FormatNotSupported }
    let channels = player.channels
    let frames = Int(slice.pointee.mNumberFrames)
    var interleaved = [Float](repeating: 0, count: frames * channels)
    if format.isInterleaved {
        guard list.count >= 1, let p = list[0].mData, Int(list[0].mDataByteSize) >= frames * channels * 4 else { return kAudio_ParamError }
        interleaved.withUnsafeMutableBytes { $0.baseAddress!.copyMemory(from: p, byteCount: frames * channels * 4) }
    } else {
        guard list.count >= channels else { return kAudio_ParamError }
        for c in 0..<channels {
            guard let p = list[c].mData?.assumingMemoryBound(to: Float.self), Int(list[c].mDataByteSize) >= frames * 4 else { return kAudio_ParamError }
            for f in 0..<frames { interleaved[f * channels + c] = p[f] }
        }
    }
    // Wait (at most 1 s) for room when the player's buffer is full.
    var offset = 0
    let deadline = Date().addingTimeInterval(1)
    while offset < frames && Date() < deadline {
        let wrote = interleaved.withUnsafeBufferPointer { player.schedule(UnsafeBufferPointer(rebasing: $0[(offset * channels)...])) }
        offset += wrote
        if offset < frames { usleep(1000) }
    }
    slice.pointee.mFlags.insert([.scheduledAudioSliceFlag_BeganToRender, .scheduledAudioSliceFlag_Complete])
    slice.pointee.mCompletionProc?(slice.pointee.mCompletionProcUserData, slice)
    return offset == frames ? noErr : kAudioUnitErr_CannotDoInCurrentContext
}

// MARK: - Property listeners

/// Adds a listener called after `inID` changes through `AudioUnitSetProperty`
/// (Apple's `AudioUnitAddPropertyListener`), on the thread that made the change.
@discardableResult
public func AudioUnitAddPropertyListener(_ inUnit: AudioUnit, _ inID: AudioUnitPropertyID, _ inProc: @escaping AudioUnitPropertyListenerProc,
                                         _ inProcUserData: UnsafeMutableRawPointer?) -> OSStatus {
    guard let unit = compatUnit(inUnit) else { return kAudio_ParamError }
    unit.extras.listeners.append(.init(id: inID, proc: inProc, userData: inProcUserData))
    return noErr
}

/// Removes the listener added with the same property, function and user data (Apple's
/// `AudioUnitRemovePropertyListenerWithUserData`).
@discardableResult
public func AudioUnitRemovePropertyListenerWithUserData(_ inUnit: AudioUnit, _ inID: AudioUnitPropertyID,
                                                        _ inProc: @escaping AudioUnitPropertyListenerProc,
                                                        _ inProcUserData: UnsafeMutableRawPointer?) -> OSStatus {
    guard let x = compatUnit(inUnit)?.extras else { return kAudio_ParamError }
    let target = functionAddress(inProc)
    let candidates = x.listeners.indices.filter { x.listeners[$0].id == inID && x.listeners[$0].userData == inProcUserData }
    if let i = candidates.first(where: { functionAddress(x.listeners[$0].proc) == target }) ?? candidates.first {
        x.listeners.remove(at: i)
    }
    return noErr
}

// MARK: - Render notifications

/// Adds a render notification (Apple's `AudioUnitAddRenderNotify`): `inProc` is called before
/// (`kAudioUnitRenderAction_PreRender`) and after (`_PostRender`, with the rendered `ioData`,
/// non-interleaved Float32) each render of the unit, on the render thread: device renders of
/// a started output unit and ``AudioUnitRender(_:_:_:_:_:_:)``. Standalone units and a graph's
/// output unit; other units inside a graph are not observed.
@discardableResult
public func AudioUnitAddRenderNotify(_ inUnit: AudioUnit, _ inProc: @escaping AURenderCallback, _ inProcUserData: UnsafeMutableRawPointer?) -> OSStatus {
    guard let unit = compatUnit(inUnit) else { return kAudio_ParamError }
    unit.extras.renderNotifies.append(AURenderCallbackStruct(inputProc: inProc, inputProcRefCon: inProcUserData))
    notifyGeneration.add(1, ordering: .relaxed)
    refreshRenderNotifies(unit, inUnit)
    return noErr
}

/// Removes a render notification added with the same function and user data (Apple's
/// `AudioUnitRemoveRenderNotify`).
@discardableResult
public func AudioUnitRemoveRenderNotify(_ inUnit: AudioUnit, _ inProc: @escaping AURenderCallback, _ inProcUserData: UnsafeMutableRawPointer?) -> OSStatus {
    guard let unit = compatUnit(inUnit) else { return kAudio_ParamError }
    let x = unit.extras
    x.renderNotifies = removing(x.renderNotifies, inProc, inProcUserData)
    notifyGeneration.add(1, ordering: .relaxed)
    refreshRenderNotifies(unit, inUnit)
    return noErr
}

/// Adds a render notification on the graph's output unit (Apple's `AUGraphAddRenderNotify`):
/// called around each render of the graph (device-driven after ``AUGraphStart(_:)``, or
/// ``AudioUnitRender(_:_:_:_:_:_:)`` of its output unit).
@discardableResult
public func AUGraphAddRenderNotify(_ inGraph: AUGraph, _ inCallback: @escaping AURenderCallback, _ inRefCon: UnsafeMutableRawPointer?) -> OSStatus {
    guard let g = compatGraph(inGraph) else { return kAudio_ParamError }
    g.renderNotifies.append(AURenderCallbackStruct(inputProc: inCallback, inputProcRefCon: inRefCon))
    notifyGeneration.add(1, ordering: .relaxed)
    refreshGraphNotifies(g)
    return noErr
}

/// Removes a graph render notification (Apple's `AUGraphRemoveRenderNotify`).
@discardableResult
public func AUGraphRemoveRenderNotify(_ inGraph: AUGraph, _ inCallback: @escaping AURenderCallback, _ inRefCon: UnsafeMutableRawPointer?) -> OSStatus {
    guard let g = compatGraph(inGraph) else { return kAudio_ParamError }
    g.renderNotifies = removing(g.renderNotifies, inCallback, inRefCon)
    notifyGeneration.add(1, ordering: .relaxed)
    refreshGraphNotifies(g)
    return noErr
}

private func removing(_ list: [AURenderCallbackStruct], _ proc: @escaping AURenderCallback, _ refCon: UnsafeMutableRawPointer?) -> [AURenderCallbackStruct] {
    var list = list
    let target = functionAddress(proc)
    let candidates = list.indices.filter { list[$0].inputProcRefCon == refCon }
    if let i = candidates.first(where: { list[$0].inputProc.map(functionAddress) == target }) ?? candidates.first { list.remove(at: i) }
    return list
}

/// Render notifications are an observer on the AudioGraph that renders the unit (standalone) or
/// its graph (output unit): see ``AudioGraph/setRenderObserver(_:)``.
private let notifyGeneration = Atomic<Int>(0)

/// The buffer list the observer hands to notifications (allocated once, freed with the observer).
private final class NotifyList: @unchecked Sendable {
    let list: UnsafeMutableAudioBufferListPointer
    init(channels: Int) { list = AudioBufferList.allocate(maximumBuffers: channels) }
    deinit { free(list.unsafeMutablePointer) }
}

/// Installs (or removes) the observer that calls the render notifications of `unit` (and, for
/// a graph's output unit, of the graph) on the AudioGraph that renders it, when it changed.
func refreshRenderNotifies(_ unit: CompatUnit, _ ref: AudioUnit) {
    let graph: AudioGraph?
    var notifies = unit.extras.renderNotifies
    if let owner = unit.owner {
        guard unit.isOutput else { return }   // only the root's render is observable in a graph
        graph = owner.graph
        notifies += owner.renderNotifies
    } else {
        graph = unit.graph
    }
    guard let graph else { return }
    let key = (ObjectIdentifier(graph), notifyGeneration.load(ordering: .relaxed))
    if let installed = unit.extras.installedNotifies, installed.0 == key.0, installed.1 == key.1 { return }
    unit.extras.installedNotifies = key
    guard !notifies.isEmpty else { graph.setRenderObserver(nil); return }
    let holder = NotifyList(channels: graph.output.inputChannels[0])
    let snapshot = notifies
    let unitPointer = UnsafeMutableRawPointer(ref)
    func call(_ phase: AudioUnitRenderActionFlags, _ buffers: UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>, _ frames: Int, _ time: AudioTimeStamp) {
        let list = holder.list
        for c in 0..<min(buffers.count, list.count) {
            list[c] = AudioBuffer(mNumberChannels: 1, mDataByteSize: UInt32(frames * 4), mData: UnsafeMutableRawPointer(buffers[c]))
        }
        var t = time
        for n in snapshot {
            guard let proc = n.inputProc else { continue }
            var flags = phase
            _ = proc(n.inputProcRefCon ?? unitPointer, &flags, &t, 0, UInt32(frames), list.unsafeMutablePointer)
        }
    }
    graph.setRenderObserver(AURenderObserver(before: { call(.unitRenderAction_PreRender, $0, $1, $2) },
                                             after: { call(.unitRenderAction_PostRender, $0, $1, $2) }))
}

/// Refreshes the notifications of a graph's output unit.
private func refreshGraphNotifies(_ g: CompatGraph) {
    for entry in g.units where entry.unit.isOutput {
        refreshRenderNotifies(entry.unit, entry.unit.handle)
    }
}

/// Renders `inNumberFrames` frames of output bus `inOutputBusNumber` into `ioData`, which must
/// be non-interleaved Float32 buffers (the default stream format), pulling the unit's inputs
/// through their render callbacks (Apple's `AudioUnitRender`). Works on standalone units
/// (effects, mixers, players, a generic output) and a graph's output unit. Render
/// notifications of the unit (and of its graph) run before and after.
@discardableResult
public func AudioUnitRender(_ inUnit: AudioUnit, _ ioActionFlags: UnsafeMutablePointer<AudioUnitRenderActionFlags>?,
                            _ inTimeStamp: UnsafePointer<AudioTimeStamp>, _ inOutputBusNumber: UInt32, _ inNumberFrames: UInt32,
                            _ ioData: UnsafeMutablePointer<AudioBufferList>) -> OSStatus {
    guard let unit = compatUnit(inUnit) else { return kAudio_ParamError }
    // Element 1 of an I/O unit (the microphone, pulled on the render thread from an input or
    // render callback) renders no output: no notifications to refresh.
    if !(inOutputBusNumber == 1 && unit.isOutput) { refreshRenderNotifies(unit, inUnit) }
    return builtinAudioUnitRender(inUnit, ioActionFlags, inTimeStamp, inOutputBusNumber, inNumberFrames, ioData)
}

/// Starts an output unit (Apple's `AudioOutputUnitStart`): its graph plays to the output
/// `OAT_OUTPUT` names (default: PulseAudio, else ALSA, else the null output); a generic output
/// does not start (render it with ``AudioUnitRender(_:_:_:_:_:_:)``). Render notifications run
/// around each device render.
/// IsRunning listeners are told after a start or stop changed it.
@discardableResult
public func AudioOutputUnitStart(_ ci: AudioUnit) -> OSStatus {
    guard let unit = compatUnit(ci) else { return kAudio_ParamError }
    if let owner = unit.owner { refreshGraphNotifies(owner) } else { refreshRenderNotifies(unit, ci) }
    return reportingIsRunning(unit.owner.map(outputUnits) ?? [unit]) { builtinAudioOutputUnitStart(ci) }
}

/// Stops an output unit (Apple's `AudioOutputUnitStop`); IsRunning listeners are told.
@discardableResult
public func AudioOutputUnitStop(_ ci: AudioUnit) -> OSStatus {
    guard let unit = compatUnit(ci) else { return kAudio_ParamError }
    return reportingIsRunning(unit.owner.map(outputUnits) ?? [unit]) { builtinAudioOutputUnitStop(ci) }
}

/// Starts the graph's output unit on the output `OAT_OUTPUT` names (Apple's `AUGraphStart`);
/// render notifications run around each device render; the output unit's IsRunning listeners
/// are told.
@discardableResult
public func AUGraphStart(_ inGraph: AUGraph) -> OSStatus {
    guard let g = compatGraph(inGraph) else { return kAudio_ParamError }
    refreshGraphNotifies(g)
    return reportingIsRunning(outputUnits(g)) { builtinAUGraphStart(inGraph) }
}

/// Stops the graph's output unit (Apple's `AUGraphStop`); its IsRunning listeners are told.
@discardableResult
public func AUGraphStop(_ inGraph: AUGraph) -> OSStatus {
    guard let g = compatGraph(inGraph) else { return kAudio_ParamError }
    return reportingIsRunning(outputUnits(g)) { builtinAUGraphStop(inGraph) }
}

private func outputUnits(_ g: CompatGraph) -> [CompatUnit] { g.units.map(\.unit).filter(\.isOutput) }

/// Runs a start or stop and calls the IsRunning listeners of `units` whose running state changed.
private func reportingIsRunning(_ units: [CompatUnit], _ body: () -> OSStatus) -> OSStatus {
    func running(_ u: CompatUnit) -> Bool { u.running || u.owner?.running == true }
    let before = units.map(running)
    let status = body()
    for (u, was) in zip(units, before) where running(u) != was {
        let ref = u.handle
        for l in u.extras.listeners where l.id == kAudioOutputUnitProperty_IsRunning {
            l.proc(l.userData ?? compatNilClientData, ref, kAudioOutputUnitProperty_IsRunning, kAudioUnitScope_Global, 0)
        }
    }
    return status
}

// MARK: - Scheduled parameters

/// Applies parameter events (Apple's `AudioUnitScheduleParameters`). Different: an immediate
/// event takes effect at the next render slice (its frame offset is not used); a ramp sets its
/// end value, which the node glides to with its own smoothing.
@discardableResult
public func AudioUnitScheduleParameters(_ inUnit: AudioUnit, _ inParameterEvent: UnsafePointer<AudioUnitParameterEvent>, _ inNumParamEvents: UInt32) -> OSStatus {
    for i in 0..<Int(inNumParamEvents) {
        let e = inParameterEvent[i]
        let value = e.eventType == kParameterEvent_Ramped ? e.eventValues.ramp.endValue : e.eventValues.immediate.value
        guard e.eventType == kParameterEvent_Immediate || e.eventType == kParameterEvent_Ramped else { return kAudio_ParamError }
        let status = AudioUnitSetParameter(inUnit, e.parameter, e.scope, e.element, value, 0)
        if status != noErr { return status }
    }
    return noErr
}

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
