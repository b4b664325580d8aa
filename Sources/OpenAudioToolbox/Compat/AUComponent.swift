// Audio Toolbox–compatible AUComponent.h: the AudioUnit types, render callbacks and flags,
// unit types and subtypes, errors, and the unit calls (initialise, render, properties,
// parameters, listeners, render notifications).

import OATCore
import OATDevices
import OATFiles
import OATUnits
import FoundationEssentials
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

public typealias AudioUnit = AudioComponentInstance
/// A property ID (`kAudioUnitProperty_*`).
public typealias AudioUnitPropertyID = UInt32
/// A scope (`kAudioUnitScope_*`).
public typealias AudioUnitScope = UInt32
/// An element (bus) number.
public typealias AudioUnitElement = UInt32
/// A parameter ID.
public typealias AudioUnitParameterID = UInt32
/// A parameter value.
public typealias AudioUnitParameterValue = Float32

// `AudioUnitRenderActionFlags` is Apple's C option set (COATAudioToolboxTypes), so that
// `AURenderCallback` can be a C function type.
/// `kAudioUnitRenderAction_PreRender`.
public let kAudioUnitRenderAction_PreRender = AudioUnitRenderActionFlags.unitRenderAction_PreRender
/// `kAudioUnitRenderAction_PostRender`.
public let kAudioUnitRenderAction_PostRender = AudioUnitRenderActionFlags.unitRenderAction_PostRender
/// `kAudioUnitRenderAction_OutputIsSilence`.
public let kAudioUnitRenderAction_OutputIsSilence = AudioUnitRenderActionFlags.unitRenderAction_OutputIsSilence

// `AURenderCallback` (a C function type) and `AURenderCallbackStruct` (`inputProc` optional, as
// on Apple) are Apple's C declarations (COATAudioToolboxTypes).

// MARK: - Types and subtypes

/// `'auou'`.
public let kAudioUnitType_Output: UInt32 = fourCC("auou")
/// `'aumx'`.
public let kAudioUnitType_Mixer: UInt32 = fourCC("aumx")
/// `'aufx'`.
public let kAudioUnitType_Effect: UInt32 = fourCC("aufx")
/// `'aufc'`.
public let kAudioUnitType_FormatConverter: UInt32 = fourCC("aufc")
/// `'appl'`.
public let kAudioUnitManufacturer_Apple: UInt32 = fourCC("appl")
/// `'def '`: the default output (PulseAudio/ALSA/null as `OAT_OUTPUT` says).
public let kAudioUnitSubType_DefaultOutput: UInt32 = fourCC("def ")
/// `'rioc'`: iOS RemoteIO, the same output here.
public let kAudioUnitSubType_RemoteIO: UInt32 = fourCC("rioc")
/// `'ahal'`: macOS HAL output, the same output here.
public let kAudioUnitSubType_HALOutput: UInt32 = fourCC("ahal")
/// `'sys '`: the system output, the same output here.
public let kAudioUnitSubType_SystemOutput: UInt32 = fourCC("sys ")
/// `'genr'`: no device; render with ``AudioUnitRender(_:_:_:_:_:_:)`` (offline).
public let kAudioUnitSubType_GenericOutput: UInt32 = fourCC("genr")
/// `'vpio'`: voice processing I/O: an I/O unit whose input (element 1) goes through echo
/// cancellation against what it plays and noise suppression (SpeexDSP), see
/// ``kAUVoiceIOProperty_BypassVoiceProcessing``.
public let kAudioUnitSubType_VoiceProcessingIO: UInt32 = fourCC("vpio")
/// `'mcmx'`.
public let kAudioUnitSubType_MultiChannelMixer: UInt32 = fourCC("mcmx")
/// `'nbeq'`.
public let kAudioUnitSubType_NBandEQ: UInt32 = fourCC("nbeq")
/// `'rvb2'`.
public let kAudioUnitSubType_Reverb2: UInt32 = fourCC("rvb2")
/// `'dely'`.
public let kAudioUnitSubType_Delay: UInt32 = fourCC("dely")
/// `'vari'`.
public let kAudioUnitSubType_Varispeed: UInt32 = fourCC("vari")
/// `'conv'`.
public let kAudioUnitSubType_AUConverter: UInt32 = fourCC("conv")
/// `'dcmp'`.
public let kAudioUnitSubType_DynamicsProcessor: UInt32 = fourCC("dcmp")
/// `'lmtr'`.
public let kAudioUnitSubType_PeakLimiter: UInt32 = fourCC("lmtr")
/// `'splt'`.
public let kAudioUnitSubType_Splitter: UInt32 = fourCC("splt")

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
/// Plays scheduled slices of audio (`'sspl'`, a generator), each at its time stamp.
public let kAudioUnitSubType_ScheduledSoundPlayer: UInt32 = fourCC("sspl")
/// DLS synth (`'dls '`): not available here.
public let kAudioUnitSubType_DLSSynth: UInt32 = fourCC("dls ")
/// MIDI synth (`'msyn'`): AUMIDISynth, a General MIDI synthesiser over FluidSynth (MusicDevice.swift).
public let kAudioUnitSubType_MIDISynth: UInt32 = fourCC("msyn")
/// Sampler (`'samp'`): AUSampler, over FluidSynth and the sampler's own voices (MusicDevice.swift).
public let kAudioUnitSubType_Sampler: UInt32 = fourCC("samp")

// MARK: - Errors

/// Unknown property.
public let kAudioUnitErr_InvalidProperty: OSStatus = -10879
/// Unknown parameter.
public let kAudioUnitErr_InvalidParameter: OSStatus = -10878
/// Element out of range.
public let kAudioUnitErr_InvalidElement: OSStatus = -10877
/// Nothing connected / no callback.
public let kAudioUnitErr_NoConnection: OSStatus = -10876
/// Initialisation failed.
public let kAudioUnitErr_FailedInitialization: OSStatus = -10875
/// More frames than MaximumFramesPerSlice.
public let kAudioUnitErr_TooManyFramesToProcess: OSStatus = -10874
/// Format not supported.
public let kAudioUnitErr_FormatNotSupported: OSStatus = -10868
/// Not initialised.
public let kAudioUnitErr_Uninitialized: OSStatus = -10867
/// Scope not valid.
public let kAudioUnitErr_InvalidScope: OSStatus = -10866
/// Property cannot be written.
public let kAudioUnitErr_PropertyNotWritable: OSStatus = -10865
/// Not possible now.
public let kAudioUnitErr_CannotDoInCurrentContext: OSStatus = -10863
/// Bad property value.
public let kAudioUnitErr_InvalidPropertyValue: OSStatus = -10851
/// Already initialised.
public let kAudioUnitErr_Initialized: OSStatus = -10849
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

// MARK: - Listener and parameter-event types

/// Called after a property of a unit changed (Apple's `AudioUnitPropertyListenerProc`; a Swift
/// function type here): user data, unit, property, scope, element.
public typealias AudioUnitPropertyListenerProc = @convention(c) (_ inRefCon: UnsafeMutableRawPointer, _ inUnit: AudioUnit, _ inID: AudioUnitPropertyID,
                                                  _ inScope: AudioUnitScope, _ inElement: AudioUnitElement) -> Void

/// A parameter event type (Apple's `AUParameterEventType`, an enumeration in Swift).
public enum AUParameterEventType: UInt32, Sendable {
    /// Set the value at a frame offset.
    case parameterEvent_Immediate = 1
    /// Ramp from a start to an end value.
    case parameterEvent_Ramped = 2
}
/// ``AUParameterEventType/parameterEvent_Immediate`` under its C name.
public let kParameterEvent_Immediate = AUParameterEventType.parameterEvent_Immediate
/// ``AUParameterEventType/parameterEvent_Ramped`` under its C name.
public let kParameterEvent_Ramped = AUParameterEventType.parameterEvent_Ramped

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

// MARK: - Unit functions

/// Prepares the unit to render (builds its node; an output unit opens nothing until started).
@discardableResult
public func AudioUnitInitialize(_ inUnit: AudioUnit) -> OSStatus {
    if let p = plugInInstance(inUnit) { return p.initialize() }
    guard let unit = compatUnit(inUnit) else { return kAudio_ParamError }
    return unit.isHosted ? noErr : unit.initialize()
}

/// Undoes ``AudioUnitInitialize(_:)`` (stops an output unit). A standalone player unit's
/// schedule is cleared as by ``AudioUnitReset(_:_:_:)``, as Apple's header says of both players
/// ("This also happens when the unit is uninitialized"): its slices complete, their procs and
/// those of the regions not read yet are called.
@discardableResult
public func AudioUnitUninitialize(_ inUnit: AudioUnit) -> OSStatus {
    if let p = plugInInstance(inUnit) { return p.uninitialize() }
    guard let unit = compatUnit(inUnit) else { return kAudio_ParamError }
    if unit.isHosted { return noErr }   // its engine owns it
    unit.uninitialize()
    if unit.owner == nil, isPlayer(unit), let node = unit.node {
        if let slices = node as? ScheduledSlicePlayerNode, slices.isPrepared {
            try? slices.prepare(sampleRate: slices.sampleRate, maxFrames: slices.maxFrames)
            unit.extras.slices?.sweep()
        } else if let player = node as? AUPlayerNode {
            resetFilePlayer(unit, player, rendering: false)
        }
    }
    return noErr
}

/// Renders `inNumberFrames` frames of output bus `inOutputBusNumber` into `ioData`, which must
/// be non-interleaved Float32 buffers (the default stream format), pulling the unit's inputs
/// through their render callbacks. Works on standalone units (effects, mixers, a generic output).
@discardableResult
func builtinAudioUnitRender(_ inUnit: AudioUnit, _ ioActionFlags: UnsafeMutablePointer<AudioUnitRenderActionFlags>?,
                            _ inTimeStamp: UnsafePointer<AudioTimeStamp>, _ inOutputBusNumber: UInt32, _ inNumberFrames: UInt32,
                            _ ioData: UnsafeMutablePointer<AudioBufferList>) -> OSStatus {
    guard let unit = compatUnit(inUnit) else { return kAudio_ParamError }
    if inOutputBusNumber == 1 && unit.isOutput {
        // Element 1 of an I/O unit: the captured input, in the format set on its output scope.
        guard let io = unit.io else { return unit.initialized ? kAudioUnitErr_NoConnection : kAudioUnitErr_Uninitialized }
        return io.render(into: ioData, frames: Int(inNumberFrames))
    }
    let graph: AudioGraph
    let pointers: UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>
    let offline: Bool
    if let owner = unit.owner {
        guard unit.isOutput, let g = owner.graph, let p = owner.renderPointers else { return kAudioUnitErr_CannotDoInCurrentContext }
        graph = g; pointers = p; offline = owner.offlineRender
    } else {
        guard unit.initialized, let g = unit.graph, let p = unit.renderPointers else { return kAudioUnitErr_Uninitialized }
        graph = g; pointers = p; offline = unit.extras.offlineRender
    }
    guard inOutputBusNumber == 0 else { return kAudioUnitErr_InvalidElement }
    guard inNumberFrames <= unit.maxFrames || unit.owner != nil else { return kAudioUnitErr_TooManyFramesToProcess }
    let list = UnsafeMutableAudioBufferListPointer(ioData)
    guard list.count == pointers.count else { return kAudioUnitErr_FormatNotSupported }
    for c in 0..<pointers.count {
        guard let d = list[c].mData, Int(list[c].mDataByteSize) >= Int(inNumberFrames) * 4 else { return kAudio_ParamError }
        pointers[c] = d.assumingMemoryBound(to: Float.self)
    }
    // Rendering offline (kAudioUnitProperty_OfflineRender on this unit or on a unit of its
    // graph): wait for the sources' reading threads, as Apple's file player blocks for its disk
    // reads then, rather than render silence for frames not read yet (at most 5 s a call).
    if offline {
        _ = graph.waitForSources(frames: Int(inNumberFrames), seconds: 5)
    }
    graph.render(into: pointers, frames: Int(inNumberFrames), time: inTimeStamp.pointee)
    for c in 0..<pointers.count { list[c].mDataByteSize = inNumberFrames * 4 }
    return noErr
}

// MARK: - Properties (public entry points; the built-in ones are in AudioUnitProperties.swift)

/// The size and writability of a property: the built-in ones (see ``AudioUnitGetProperty(_:_:_:_:_:_:)``)
/// and the player properties (ScheduledFileIDs, ScheduledFileRegion, ScheduledFilePrime,
/// ScheduledFileBufferSizeFrames, ScheduledFileNumberBuffers, ScheduleStartTimeStamp,
/// CurrentPlayTime, ScheduleAudioSlice) on player units.
@discardableResult
public func AudioUnitGetPropertyInfo(_ inUnit: AudioUnit, _ inID: AudioUnitPropertyID, _ inScope: AudioUnitScope, _ inElement: AudioUnitElement,
                                     _ outDataSize: UnsafeMutablePointer<UInt32>?, _ outWritable: UnsafeMutablePointer<DarwinBoolean>?) -> OSStatus {
    if let p = plugInInstance(inUnit) { return p.getPropertyInfo(inID, inScope, inElement, outDataSize, outWritable) }
    guard let unit = compatUnit(inUnit) else { return kAudio_ParamError }
    if isPlayer(unit), let size = playerPropertySize(unit, inID) {
        outDataSize?.pointee = size
        outWritable?.pointee = DarwinBoolean(inID != kAudioUnitProperty_CurrentPlayTime)
        return noErr
    }
    if isMusicDevice(unit), let info = musicDevicePropertySize(unit, inID) {
        outDataSize?.pointee = info.size
        outWritable?.pointee = DarwinBoolean(info.writable)
        return noErr
    }
    if inID == kAudioOutputUnitProperty_CurrentDevice { return currentDeviceInfo(unit, outDataSize, outWritable) }
    if let status = spatialMixerPropertyInfo(unit, inID, inScope, inElement, outDataSize, outWritable) { return status }
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
    if let p = plugInInstance(inUnit) { return p.getProperty(inID, inScope, inElement, outData, ioDataSize) }
    guard let unit = compatUnit(inUnit) else { return kAudio_ParamError }
    if isPlayer(unit), let status = getPlayerProperty(unit, inID, outData, ioDataSize) { return status }
    if isMusicDevice(unit), let status = getMusicDeviceProperty(unit, inID, outData, ioDataSize) { return status }
    if inID == kAudioOutputUnitProperty_CurrentDevice { return getCurrentDevice(unit, outData, ioDataSize) }
    if let status = getSpatialMixerProperty(unit, inID, inScope, inElement, outData, ioDataSize) { return status }
    return builtinAudioUnitGetProperty(inUnit, inID, inScope, inElement, outData, ioDataSize)
}

/// Writes a property: the built-in ones (stream formats before initialising, render callbacks,
/// MaximumFramesPerSlice, element counts, EnableIO, band count) and the player properties.
/// Listeners added with ``AudioUnitAddPropertyListener(_:_:_:_:)`` for that property are called
/// after a successful change, on the calling thread.
@discardableResult
public func AudioUnitSetProperty(_ inUnit: AudioUnit, _ inID: AudioUnitPropertyID, _ inScope: AudioUnitScope, _ inElement: AudioUnitElement,
                                 _ inData: UnsafeRawPointer?, _ inDataSize: UInt32) -> OSStatus {
    if let p = plugInInstance(inUnit) { return p.setProperty(inID, inScope, inElement, inData, inDataSize) }
    guard let unit = compatUnit(inUnit) else { return kAudio_ParamError }
    if unit.isHosted, let refusal = hostedSetPropertyRefusal(inID) { return refusal }
    let status: OSStatus
    if isPlayer(unit), let s = setPlayerProperty(unit, inID, inData, inDataSize) {
        status = s
    } else if isMusicDevice(unit), let s = setMusicDeviceProperty(unit, inID, inData, inDataSize) {
        status = s
    } else if inID == kAudioOutputUnitProperty_CurrentDevice {
        status = setCurrentDevice(unit, inUnit, inData, inDataSize)
    } else if let s = setSpatialMixerProperty(unit, inID, inScope, inElement, inData, inDataSize) {
        status = s
    } else {
        status = builtinAudioUnitSetProperty(inUnit, inID, inScope, inElement, inData, inDataSize)
    }
    if status == noErr {
        for l in unit.extras.listeners where l.id == inID { l.proc(l.userData ?? compatNilClientData, inUnit, inID, inScope, inElement) }
    }
    return status
}

/// Sets `kAudioUnitProperty_ScheduledFileRegion` from a `ScheduledAudioFileRegion`: the
/// overload `&region` picks, since the struct holds a Swift function here.
@discardableResult
public func AudioUnitSetProperty(_ inUnit: AudioUnit, _ inID: AudioUnitPropertyID, _ inScope: AudioUnitScope, _ inElement: AudioUnitElement,
                                 _ inData: UnsafePointer<ScheduledAudioFileRegion>, _ inDataSize: UInt32) -> OSStatus {
    AudioUnitSetProperty(inUnit, inID, inScope, inElement, Optional(UnsafeRawPointer(inData)), inDataSize)
}

/// Sets `kAudioUnitProperty_ScheduleAudioSlice` from a `ScheduledAudioSlice` (its flags are
/// updated): the overload `&slice` picks.
@discardableResult
public func AudioUnitSetProperty(_ inUnit: AudioUnit, _ inID: AudioUnitPropertyID, _ inScope: AudioUnitScope, _ inElement: AudioUnitElement,
                                 _ inData: UnsafeMutablePointer<ScheduledAudioSlice>, _ inDataSize: UInt32) -> OSStatus {
    AudioUnitSetProperty(inUnit, inID, inScope, inElement, Optional(UnsafeRawPointer(inData)), inDataSize)
}

/// Sets a parameter (any thread; picked up by the render thread at the next slice).
@discardableResult
public func AudioUnitSetParameter(_ inUnit: AudioUnit, _ inID: AudioUnitParameterID, _ inScope: AudioUnitScope, _ inElement: AudioUnitElement,
                                  _ inValue: AudioUnitParameterValue, _ inBufferOffsetInFrames: UInt32) -> OSStatus {
    if let p = plugInInstance(inUnit) { return p.setParameter(inID, inScope, inElement, inValue, inBufferOffsetInFrames) }
    guard let unit = compatUnit(inUnit) else { return kAudio_ParamError }
    guard let node = unit.node, let p = node.parameter(id: inID, scope: AUScope(rawValue: inScope) ?? .global, element: Int(inElement)) else {
        return kAudioUnitErr_InvalidParameter
    }
    do { try p.set(inValue) } catch { return osStatus(error, default: kAudioUnitErr_InvalidParameter) }
    unit.parameterValues[CompatUnit.ParamKey(id: inID, scope: inScope, element: inElement)] = inValue
    unit.hostLink?.host?._audioUnitParameterDidChange(inID, scope: inScope, element: inElement, value: p.value)
    _ = inBufferOffsetInFrames
    return noErr
}

/// Reads a parameter.
@discardableResult
public func AudioUnitGetParameter(_ inUnit: AudioUnit, _ inID: AudioUnitParameterID, _ inScope: AudioUnitScope, _ inElement: AudioUnitElement,
                                  _ outValue: UnsafeMutablePointer<AudioUnitParameterValue>) -> OSStatus {
    if let p = plugInInstance(inUnit) { return p.getParameter(inID, inScope, inElement, outValue) }
    guard let unit = compatUnit(inUnit) else { return kAudio_ParamError }
    guard let node = unit.node, let p = node.parameter(id: inID, scope: AUScope(rawValue: inScope) ?? .global, element: Int(inElement)) else {
        return kAudioUnitErr_InvalidParameter
    }
    outValue.pointee = p.value
    return noErr
}

// MARK: - Property listeners

/// Adds a listener called after `inID` changes through `AudioUnitSetProperty`
/// (Apple's `AudioUnitAddPropertyListener`), on the thread that made the change.
@discardableResult
public func AudioUnitAddPropertyListener(_ inUnit: AudioUnit, _ inID: AudioUnitPropertyID, _ inProc: AudioUnitPropertyListenerProc,
                                         _ inProcUserData: UnsafeMutableRawPointer?) -> OSStatus {
    guard let unit = compatUnit(inUnit) else { return kAudio_ParamError }
    unit.extras.listeners.append(.init(id: inID, proc: inProc, userData: inProcUserData))
    return noErr
}

/// Removes the listener added with the same property, function and user data (Apple's
/// `AudioUnitRemovePropertyListenerWithUserData`).
@discardableResult
public func AudioUnitRemovePropertyListenerWithUserData(_ inUnit: AudioUnit, _ inID: AudioUnitPropertyID,
                                                        _ inProc: AudioUnitPropertyListenerProc,
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
public func AudioUnitAddRenderNotify(_ inUnit: AudioUnit, _ inProc: AURenderCallback, _ inProcUserData: UnsafeMutableRawPointer?) -> OSStatus {
    guard let unit = compatUnit(inUnit) else { return kAudio_ParamError }
    unit.extras.renderNotifies.append(AURenderCallbackStruct(inputProc: inProc, inputProcRefCon: inProcUserData))
    notifyGeneration.add(1, ordering: .relaxed)
    refreshRenderNotifies(unit, inUnit)
    return noErr
}

/// Removes a render notification added with the same function and user data (Apple's
/// `AudioUnitRemoveRenderNotify`).
@discardableResult
public func AudioUnitRemoveRenderNotify(_ inUnit: AudioUnit, _ inProc: AURenderCallback, _ inProcUserData: UnsafeMutableRawPointer?) -> OSStatus {
    guard let unit = compatUnit(inUnit) else { return kAudio_ParamError }
    let x = unit.extras
    x.renderNotifies = removing(x.renderNotifies, inProc, inProcUserData)
    notifyGeneration.add(1, ordering: .relaxed)
    refreshRenderNotifies(unit, inUnit)
    return noErr
}

func removing(_ list: [AURenderCallbackStruct], _ proc: AURenderCallback, _ refCon: UnsafeMutableRawPointer?) -> [AURenderCallbackStruct] {
    var list = list
    let target = functionAddress(proc)
    let candidates = list.indices.filter { list[$0].inputProcRefCon == refCon }
    if let i = candidates.first(where: { list[$0].inputProc.map(functionAddress) == target }) ?? candidates.first { list.remove(at: i) }
    return list
}

/// Render notifications are an observer on the AudioGraph that renders the unit (standalone) or
/// its graph (output unit): see ``AudioGraph/setRenderObserver(_:)``.
let notifyGeneration = Atomic<Int>(0)

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
    graph.setRenderObserver(RenderObserver(before: { call(.unitRenderAction_PreRender, $0, $1, $2) },
                                             after: { call(.unitRenderAction_PostRender, $0, $1, $2) }))
}

/// Refreshes the notifications of a graph's output unit.
func refreshGraphNotifies(_ g: CompatGraph) {
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
    if let p = plugInInstance(inUnit) { return p.render(ioActionFlags, inTimeStamp, inOutputBusNumber, inNumberFrames, ioData) }
    guard let unit = compatUnit(inUnit) else { return kAudio_ParamError }
    if unit.isHosted { return kAudioUnitErr_CannotDoInCurrentContext }   // its engine renders it
    // Element 1 of an I/O unit (the microphone, pulled on the render thread from an input or
    // render callback) renders no output: no notifications to refresh.
    if !(inOutputBusNumber == 1 && unit.isOutput) { refreshRenderNotifies(unit, inUnit) }
    let status = builtinAudioUnitRender(inUnit, ioActionFlags, inTimeStamp, inOutputBusNumber, inNumberFrames, ioData)
    // A scheduled sound player rendered here (offline), alone or in the graph whose output unit
    // this is: the render marked its slices; their completion procs run before the call returns.
    unit.extras.slices?.sweep()
    if inOutputBusNumber == 0, let graph = unit.owner, unit.isOutput, !graph.running {
        for (_, member) in graph.units { member.extras.slices?.sweep() }
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

// MARK: - Reset, old listener removal, in-place processing

/// Clears a unit's processing state (Apple's `AudioUnitReset`): delay lines, reverb tails,
/// filter and smoothing state, time-pitch buffers; parameters and formats are kept. The player
/// units clear their schedule, as Apple's, also while their graph runs (a seek): a scheduled
/// sound player's slices are all complete (`kScheduledAudioSliceFlag_Complete` set, completion
/// procs called) when this returns, a file player's regions not yet read have their completion
/// procs called, and nothing plays until a new start time stamp. Different: another unit that
/// is rendering (a started output unit or graph) answers
/// `kAudioUnitErr_CannotDoInCurrentContext`, since its nodes are reset only between renders;
/// stop, reset, start.
@discardableResult
public func AudioUnitReset(_ inUnit: AudioUnit, _ inScope: AudioUnitScope, _ inElement: AudioUnitElement) -> OSStatus {
    if let p = plugInInstance(inUnit) { return p.reset(inScope, inElement) }
    guard let unit = compatUnit(inUnit) else { return kAudio_ParamError }
    guard inScope <= kAudioUnitScope_Part else { return kAudioUnitErr_InvalidScope }
    _ = inElement
    // A hosted unit's node renders in its engine, reset between renders by the engine's node.
    if unit.isHosted { return kAudioUnitErr_CannotDoInCurrentContext }
    // A file player's schedule is cleared, as Apple's (also while its graph runs: a seek).
    if let player = unit.node as? AUPlayerNode, isPlayer(unit) {
        resetFilePlayer(unit, player, rendering: unit.running || unit.owner?.running == true)
        return noErr
    }
    // A scheduled sound player's schedule: its render thread acts on the reset at its next
    // render; this waits (at most 0.5 s) until it no longer reads the old slices, then calls
    // their completion procs.
    if let slices = unit.node as? ScheduledSlicePlayerNode, unit.running || unit.owner?.running == true {
        let generation = slices.requestReset()
        let deadline = HostTime.now() + HostTime.ticks(seconds: 0.5)
        guard pollWithBackoff(until: deadline, { slices.resetAcknowledged >= generation }) else {
            return kAudioUnitErr_CannotDoInCurrentContext
        }
        unit.extras.slices?.sweep()
        return noErr
    }
    guard let node = unit.node, node.isPrepared else { return noErr }   // nothing rendered yet: nothing to clear
    if unit.running || unit.owner?.running == true { return kAudioUnitErr_CannotDoInCurrentContext }
    defer { unit.extras.slices?.sweep() }
    do { try node.prepare(sampleRate: node.sampleRate, maxFrames: node.maxFrames) } catch { return osStatus(error, default: kAudioUnitErr_FailedInitialization) }
    return noErr
}

/// Removes every listener of `inID` that calls `inProc`, whatever its user data (Apple's
/// deprecated `AudioUnitRemovePropertyListener`; prefer
/// ``AudioUnitRemovePropertyListenerWithUserData(_:_:_:_:)``).
@discardableResult
public func AudioUnitRemovePropertyListener(_ inUnit: AudioUnit, _ inID: AudioUnitPropertyID, _ inProc: AudioUnitPropertyListenerProc) -> OSStatus {
    guard let x = compatUnit(inUnit)?.extras else { return kAudio_ParamError }
    let target = functionAddress(inProc)
    x.listeners.removeAll { $0.id == inID && functionAddress($0.proc) == target }
    return noErr
}
