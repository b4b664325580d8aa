// Audio Toolbox–compatible AudioUnitProperties.h: scopes, property IDs, the scheduled-player
// structs, and the built-in property implementation behind AudioUnitGetProperty/SetProperty.

import OATCore
import OATDevices
import OATFiles
import OATUnits
import FoundationEssentials
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// MARK: - Scopes and properties

/// Global scope.
public let kAudioUnitScope_Global: AudioUnitScope = 0
/// Input scope.
public let kAudioUnitScope_Input: AudioUnitScope = 1
/// Output scope.
public let kAudioUnitScope_Output: AudioUnitScope = 2
/// Group scope (not used here).
public let kAudioUnitScope_Group: AudioUnitScope = 3
/// Part scope (not used here).
public let kAudioUnitScope_Part: AudioUnitScope = 4

/// `AudioStreamBasicDescription` per scope and element.
public let kAudioUnitProperty_StreamFormat: AudioUnitPropertyID = 8
/// `Float64` sample rate per scope and element.
public let kAudioUnitProperty_SampleRate: AudioUnitPropertyID = 2
/// `UInt32` element (bus) count per scope.
public let kAudioUnitProperty_ElementCount: AudioUnitPropertyID = 11
/// `Float64` latency in seconds.
public let kAudioUnitProperty_Latency: AudioUnitPropertyID = 12
/// `UInt32` most frames per render call.
public let kAudioUnitProperty_MaximumFramesPerSlice: AudioUnitPropertyID = 14
/// `Float64` tail time in seconds.
public let kAudioUnitProperty_TailTime: AudioUnitPropertyID = 20
/// `UInt32` bypass (accepted; effects stay in).
public let kAudioUnitProperty_BypassEffect: AudioUnitPropertyID = 21
/// `AURenderCallbackStruct` on an input element.
public let kAudioUnitProperty_SetRenderCallback: AudioUnitPropertyID = 23
/// `UInt32` is running (output units).
public let kAudioOutputUnitProperty_IsRunning: AudioUnitPropertyID = 2001
/// `UInt32` enable I/O per element of an I/O unit: output 0 (on by default), input 1 (off by
/// default; on, the unit captures from the input `OAT_INPUT` names, see
/// ``kAudioOutputUnitProperty_SetInputCallback``). Set before initialising.
public let kAudioOutputUnitProperty_EnableIO: AudioUnitPropertyID = 2003
/// `UInt32` band count of the N-band EQ (before initialising).
public let kAUNBandEQProperty_NumberOfBands: AudioUnitPropertyID = 2200

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

// MARK: - Types

// `ScheduledAudioFileRegion`, `ScheduledAudioSlice`, `AUScheduledAudioSliceFlags` and their
// completion procs are Apple's C declarations (COATAudioToolboxTypes, re-exported by this module), with
// Apple's fields, optionality and layout; the procs are C function pointers (`@convention(c)`), as on
// Apple: a global function or a closure that captures nothing converts to them. The unit calls a
// region's proc on the player's feeder thread and a slice's on its tracker thread, never on a
// device's render thread.

// Apple's Swift types these pointer fields non-optional, but C callers (and Swift code that
// starts from the zeroed `init()`) may leave them null: the unit reads them as C does.
extension ScheduledAudioFileRegion {
    /// `mAudioFile`, or nil when it is null.
    var audioFileIfSet: AudioFileID? {
        withUnsafeBytes(of: self) { $0.load(fromByteOffset: MemoryLayout<Self>.offset(of: \.mAudioFile)!, as: AudioFileID?.self) }
    }
}

extension ScheduledAudioSlice {
    /// `mBufferList`, or nil when it is null.
    var bufferListIfSet: UnsafeMutablePointer<AudioBufferList>? {
        withUnsafeBytes(of: self) {
            $0.load(fromByteOffset: MemoryLayout<Self>.offset(of: \.mBufferList)!, as: UnsafeMutablePointer<AudioBufferList>?.self)
        }
    }
    /// `mCompletionProcUserData`, or nil when it is null.
    var completionProcUserDataIfSet: UnsafeMutableRawPointer? {
        withUnsafeBytes(of: self) {
            $0.load(fromByteOffset: MemoryLayout<Self>.offset(of: \.mCompletionProcUserData)!, as: UnsafeMutableRawPointer?.self)
        }
    }
}

// MARK: - Built-in properties

/// The size and writability of a property.
@discardableResult
func builtinAudioUnitGetPropertyInfo(_ inUnit: AudioUnit, _ inID: AudioUnitPropertyID, _ inScope: AudioUnitScope, _ inElement: AudioUnitElement,
                                     _ outDataSize: UnsafeMutablePointer<UInt32>?, _ outWritable: UnsafeMutablePointer<DarwinBoolean>?) -> OSStatus {
    let size: Int
    var writable = true
    switch inID {
    case kAudioUnitProperty_StreamFormat: size = MemoryLayout<AudioStreamBasicDescription>.size
    case kAudioUnitProperty_SetRenderCallback, kAudioOutputUnitProperty_SetInputCallback: size = MemoryLayout<AURenderCallbackStruct>.size
    case kAUVoiceIOProperty_BypassVoiceProcessing, kAUVoiceIOProperty_VoiceProcessingEnableAGC, kAUVoiceIOProperty_MuteOutput: size = 4
    case kAudioOutputUnitProperty_HasIO: size = 4; writable = false
    case kAudioUnitProperty_SampleRate, kAudioUnitProperty_Latency, kAudioUnitProperty_TailTime:
        size = 8; writable = inID == kAudioUnitProperty_SampleRate
    case kAudioUnitProperty_MaximumFramesPerSlice, kAudioUnitProperty_ElementCount, kAudioOutputUnitProperty_EnableIO,
         kAudioUnitProperty_BypassEffect, kAUNBandEQProperty_NumberOfBands, kAudioUnitProperty_OfflineRender: size = 4
    case kAudioOutputUnitProperty_IsRunning: size = 4; writable = false
    case kAudioUnitProperty_ParameterList:
        guard let unit = compatUnit(inUnit) else { return kAudio_ParamError }
        size = parameterIDs(unit, inScope).count * MemoryLayout<AudioUnitParameterID>.size; writable = false
    case kAudioUnitProperty_ParameterInfo:
        guard let unit = compatUnit(inUnit) else { return kAudio_ParamError }
        guard unit.node?.parameter(id: inElement, scope: AUScope(rawValue: inScope) ?? .global, element: 0) != nil else { return kAudioUnitErr_InvalidParameter }
        size = MemoryLayout<AudioUnitParameterInfo>.size; writable = false
    case kAudioUnitProperty_SupportedNumChannels:
        guard let unit = compatUnit(inUnit), !unit.isOutput else { return kAudioUnitErr_InvalidProperty }
        size = MemoryLayout<AUChannelInfo>.size; writable = false
    case kAudioUnitProperty_MakeConnection:
        guard inScope == kAudioUnitScope_Input else { return kAudioUnitErr_InvalidScope }
        size = MemoryLayout<AudioUnitConnection>.size
    case kAudioUnitProperty_ClassInfo:
        guard inScope == kAudioUnitScope_Global else { return kAudioUnitErr_InvalidScope }
        size = MemoryLayout<UnsafeRawPointer>.size
    default: return kAudioUnitErr_InvalidProperty
    }
    outDataSize?.pointee = UInt32(size)
    outWritable?.pointee = DarwinBoolean(writable)
    _ = inUnit; _ = inScope; _ = inElement
    return noErr
}

/// Reads a property (see the `kAudioUnitProperty_*` constants for the ones provided).
@discardableResult
func builtinAudioUnitGetProperty(_ inUnit: AudioUnit, _ inID: AudioUnitPropertyID, _ inScope: AudioUnitScope, _ inElement: AudioUnitElement,
                                 _ outData: UnsafeMutableRawPointer, _ ioDataSize: UnsafeMutablePointer<UInt32>) -> OSStatus {
    guard let unit = compatUnit(inUnit) else { return kAudio_ParamError }
    func put<T>(_ value: T) -> OSStatus {
        guard Int(ioDataSize.pointee) >= MemoryLayout<T>.size else { return kAudio_ParamError }
        outData.storeBytes(of: value, toByteOffset: 0, as: T.self)
        ioDataSize.pointee = UInt32(MemoryLayout<T>.size)
        return noErr
    }
    switch inID {
    case kAudioUnitProperty_StreamFormat:
        guard inScope == kAudioUnitScope_Input || inScope == kAudioUnitScope_Output || inScope == kAudioUnitScope_Global else { return kAudioUnitErr_InvalidScope }
        let scope = inScope == kAudioUnitScope_Global ? kAudioUnitScope_Output : inScope
        if unit.isHosted {
            guard let f = unit.hostedFormat(scope, inElement) else { return kAudioUnitErr_InvalidElement }
            return put(f)
        }
        return put(unit.format(scope, inElement))
    case kAudioUnitProperty_SampleRate:
        let scope: UInt32 = inScope == kAudioUnitScope_Input ? 1 : 2
        if unit.isHosted {
            guard let f = unit.hostedFormat(scope, inElement) else { return kAudioUnitErr_InvalidElement }
            return put(Float64(f.mSampleRate))
        }
        return put(Float64(unit.format(scope, inElement).mSampleRate))
    case kAudioUnitProperty_MaximumFramesPerSlice: return put(unit.maxFrames)
    case kAudioUnitProperty_OfflineRender: return put(UInt32(unit.extras.offlineRender ? 1 : 0))
    case kAudioUnitProperty_ElementCount:
        return put(UInt32(inScope == kAudioUnitScope_Input ? unit.inputCount : inScope == kAudioUnitScope_Output ? unit.outputCount : 1))
    case kAudioUnitProperty_Latency:
        // An I/O unit with input, on element 1 or the input scope: the input's latency.
        if unit.isOutput, inElement == 1 || inScope == kAudioUnitScope_Input {
            return put(Float64(unit.io?.node.inputLatency ?? 0))
        }
        if case .limiter = unit.component.kind, let n = unit.node as? AUPeakLimiterNode { return put(Float64(n.lookahead.value)) }
        return put(Float64(0))
    case kAudioUnitProperty_TailTime:
        if let n = unit.node as? AUReverbNode { return put(Float64(n.decayTime.value)) }
        if let n = unit.node as? AUDelayNode { return put(Float64(n.delayTime.value) * 10) }
        return put(Float64(0))
    case kAudioOutputUnitProperty_IsRunning: return put(UInt32(unit.running || unit.owner?.running == true ? 1 : 0))
    case kAudioOutputUnitProperty_EnableIO: return put(unit.enableIO[inElement] ?? 0)
    case kAudioOutputUnitProperty_HasIO:
        guard unit.isOutput else { return kAudioUnitErr_InvalidProperty }
        if case .output(generic: true) = unit.component.kind { return put(UInt32(0)) }
        return put(UInt32(inElement <= 1 ? 1 : 0))
    case kAUVoiceIOProperty_BypassVoiceProcessing:
        guard unit.isVoiceIO else { return kAudioUnitErr_InvalidProperty }
        return put(UInt32(unit.voiceBypass ? 1 : 0))
    case kAUVoiceIOProperty_VoiceProcessingEnableAGC:
        guard unit.isVoiceIO else { return kAudioUnitErr_InvalidProperty }
        return put(UInt32(unit.voiceAGC ? 1 : 0))
    case kAUVoiceIOProperty_MuteOutput:
        guard unit.isVoiceIO else { return kAudioUnitErr_InvalidProperty }
        return put(UInt32(unit.voiceMuteOutput ? 1 : 0))
    case kAUNBandEQProperty_NumberOfBands: return put(UInt32(unit.bandCount))
    case kAudioUnitProperty_BypassEffect:
        // Effects only: a unit with an input that processes it (Apple's generators and I/O
        // units do not have the property).
        guard !unit.isOutput, let node = unit.node, !node.inputChannels.isEmpty else { return kAudioUnitErr_InvalidProperty }
        return put(UInt32(unit.bypassEffect ? 1 : 0))
    case kAudioUnitProperty_ParameterList:
        let ids = parameterIDs(unit, inScope)
        guard Int(ioDataSize.pointee) >= ids.count * MemoryLayout<AudioUnitParameterID>.size else { return kAudio_ParamError }
        for (i, id) in ids.enumerated() { outData.storeBytes(of: id, toByteOffset: i * MemoryLayout<AudioUnitParameterID>.size, as: AudioUnitParameterID.self) }
        ioDataSize.pointee = UInt32(ids.count * MemoryLayout<AudioUnitParameterID>.size)
        return noErr
    case kAudioUnitProperty_ParameterInfo:
        // The element is the parameter ID (Apple's convention for this property).
        guard let p = unit.node?.parameter(id: inElement, scope: AUScope(rawValue: inScope) ?? .global, element: 0) else {
            return kAudioUnitErr_InvalidParameter
        }
        guard Int(ioDataSize.pointee) >= MemoryLayout<AudioUnitParameterInfo>.size else { return kAudio_ParamError }
        outData.storeBytes(of: parameterInfo(p), as: AudioUnitParameterInfo.self)
        ioDataSize.pointee = UInt32(MemoryLayout<AudioUnitParameterInfo>.size)
        return noErr
    case kAudioUnitProperty_SupportedNumChannels:
        guard !unit.isOutput else { return kAudioUnitErr_InvalidProperty }
        // Effects, converters, mixers and players here take any channel count (the same in
        // and out for effects): Apple's (-1, -1).
        return put(AUChannelInfo(inChannels: -1, outChannels: -1))
    case kAudioUnitProperty_ClassInfo:
        guard inScope == kAudioUnitScope_Global else { return kAudioUnitErr_InvalidScope }
        return getClassInfo(unit, outData, ioDataSize)
    default: return kAudioUnitErr_InvalidProperty
    }
}

/// The IDs of a unit's parameters in `scope`, each once (the mixer's per-input parameters
/// exist once per element).
func parameterIDs(_ unit: CompatUnit, _ scope: AudioUnitScope) -> [AudioUnitParameterID] {
    var seen = Set<AudioUnitParameterID>()
    return (unit.node?.parameters ?? []).filter { $0.scope.rawValue == scope && seen.insert($0.id).inserted }.map(\.id)
}

/// Renders a unit connected with ``kAudioUnitProperty_MakeConnection``: the render callback of
/// the input it feeds, `inRefCon` being the source unit.
func connectionRenderProc(_ inRefCon: UnsafeMutableRawPointer, _ ioActionFlags: UnsafeMutablePointer<AudioUnitRenderActionFlags>,
                          _ inTimeStamp: UnsafePointer<AudioTimeStamp>, _ inBusNumber: UInt32, _ inNumberFrames: UInt32,
                          _ ioData: UnsafeMutablePointer<AudioBufferList>?) -> OSStatus {
    guard let ioData else { return kAudio_ParamError }
    return AudioUnitRender(OpaquePointer(inRefCon), ioActionFlags, inTimeStamp, 0, inNumberFrames, ioData)
}

/// Writes a property: stream formats (linear PCM, before initialising), the render callback
/// of an input element, MaximumFramesPerSlice, the mixer's input element count, EnableIO
/// (input on element 1 of RemoteIO/HAL/default/voice-processing units, standalone or in an
/// AUGraph; not of a generic output), the input callback, the
/// voice-processing properties, the EQ's band count.
@discardableResult
func builtinAudioUnitSetProperty(_ inUnit: AudioUnit, _ inID: AudioUnitPropertyID, _ inScope: AudioUnitScope, _ inElement: AudioUnitElement,
                                 _ inData: UnsafeRawPointer?, _ inDataSize: UInt32) -> OSStatus {
    guard let unit = compatUnit(inUnit) else { return kAudio_ParamError }
    func get<T>(_ type: T.Type) -> T? {
        guard let inData, Int(inDataSize) >= MemoryLayout<T>.size else { return nil }
        if Int(bitPattern: inData) % MemoryLayout<T>.alignment == 0 { return inData.assumingMemoryBound(to: T.self).pointee }
        return T.self == AURenderCallbackStruct.self ? nil : inData.loadUnaligned(as: T.self)
    }
    switch inID {
    case kAudioUnitProperty_StreamFormat:
        guard let f = get(AudioStreamBasicDescription.self) else { return kAudio_ParamError }
        guard !unit.initialized else { return kAudioUnitErr_Initialized }
        guard inScope == kAudioUnitScope_Input || inScope == kAudioUnitScope_Output || inScope == kAudioUnitScope_Global else { return kAudioUnitErr_InvalidScope }
        guard f.mFormatID == kAudioFormatLinearPCM, f.mChannelsPerFrame >= 1, f.mChannelsPerFrame <= 64, f.mSampleRate >= 1000,
              f.validationFailure == nil else { return kAudioUnitErr_FormatNotSupported }
        if inScope == kAudioUnitScope_Input && Int(inElement) >= unit.inputCount { return kAudioUnitErr_InvalidElement }
        if inScope == kAudioUnitScope_Output && Int(inElement) >= unit.outputCount && !unit.isOutput { return kAudioUnitErr_InvalidElement }
        // Effects process Float32 non-interleaved on their own buses (Apple's rule too); the
        // formats of render-callback inputs and of output units' input may be any linear PCM.
        unit.formats[CompatUnit.Key(scope: inScope == kAudioUnitScope_Global ? kAudioUnitScope_Output : inScope, element: inElement)] = f
        unit.node = unit.makeNode()
        return noErr
    case kAudioUnitProperty_SetRenderCallback:
        guard let cb = get(AURenderCallbackStruct.self) else { return kAudio_ParamError }
        guard Int(inElement) < max(1, unit.inputCount) else { return kAudioUnitErr_InvalidElement }
        unit.callbacks[inElement] = cb
        return noErr
    case kAudioUnitProperty_MaximumFramesPerSlice:
        guard let n = get(UInt32.self), n >= 16, n <= 16384 else { return kAudioUnitErr_InvalidPropertyValue }
        guard !unit.initialized else { return kAudioUnitErr_Initialized }
        unit.maxFrames = n
        return noErr
    case kAudioUnitProperty_ElementCount:
        guard let n = get(UInt32.self), n >= 1, n <= 256 else { return kAudioUnitErr_InvalidPropertyValue }
        guard !unit.initialized else { return kAudioUnitErr_Initialized }
        if case .mixer = unit.component.kind, inScope == kAudioUnitScope_Input { unit.inputCount = Int(n) }
        else if case .splitter = unit.component.kind, inScope == kAudioUnitScope_Output { unit.outputCount = Int(n) }
        else { return kAudioUnitErr_PropertyNotWritable }
        unit.node = unit.makeNode()
        return noErr
    case kAudioUnitProperty_SampleRate:
        guard let r = get(Float64.self), r >= 1000 else { return kAudioUnitErr_InvalidPropertyValue }
        var f = unit.format(inScope == kAudioUnitScope_Input ? 1 : 2, inElement)
        f.mSampleRate = r
        unit.formats[CompatUnit.Key(scope: inScope == kAudioUnitScope_Input ? 1 : 2, element: inElement)] = f
        return noErr
    case kAudioOutputUnitProperty_EnableIO:
        guard let v = get(UInt32.self) else { return kAudio_ParamError }
        guard unit.isOutput else { return kAudioUnitErr_InvalidProperty }
        guard inElement <= 1 else { return kAudioUnitErr_InvalidElement }
        guard !unit.initialized else { return kAudioUnitErr_Initialized }
        if inElement == 1 && v != 0 {
            if case .output(generic: true) = unit.component.kind { return kAudioUnitErr_InvalidProperty }
        }
        unit.enableIO[inElement] = v != 0 ? 1 : 0
        return noErr
    case kAudioOutputUnitProperty_SetInputCallback:
        guard unit.isOutput else { return kAudioUnitErr_InvalidProperty }
        guard let cb = get(AURenderCallbackStruct.self) else { return kAudio_ParamError }
        guard !unit.initialized else { return kAudioUnitErr_Initialized }
        unit.inputCallback = cb
        return noErr
    case kAUVoiceIOProperty_BypassVoiceProcessing, kAUVoiceIOProperty_MuteOutput:
        guard unit.isVoiceIO else { return kAudioUnitErr_InvalidProperty }
        guard let v = get(UInt32.self) else { return kAudio_ParamError }
        if inID == kAUVoiceIOProperty_BypassVoiceProcessing {
            unit.voiceBypass = v != 0
            unit.io?.voice?.bypass = v != 0
        } else {
            unit.voiceMuteOutput = v != 0
            unit.io?.muteOutput.store(v != 0, ordering: .relaxed)
        }
        return noErr
    case kAUVoiceIOProperty_VoiceProcessingEnableAGC:
        guard unit.isVoiceIO else { return kAudioUnitErr_InvalidProperty }
        guard let v = get(UInt32.self) else { return kAudio_ParamError }
        guard !unit.initialized else { return kAudioUnitErr_Initialized }
        unit.voiceAGC = v != 0
        return noErr
    case kAUNBandEQProperty_NumberOfBands:
        guard let v = get(UInt32.self), v >= 1, v <= 16 else { return kAudioUnitErr_InvalidPropertyValue }
        guard !unit.initialized else { return kAudioUnitErr_Initialized }
        unit.bandCount = Int(v)
        unit.node = unit.makeNode()
        return noErr
    case kAudioUnitProperty_OfflineRender:
        guard let v = get(UInt32.self) else { return kAudio_ParamError }
        unit.extras.offlineRender = v != 0
        if let owner = unit.owner { owner.offlineRender = owner.units.contains { $0.unit.extras.offlineRender } }
        return noErr
    case kAudioUnitProperty_BypassEffect:
        guard !unit.isOutput, let node = unit.node, !node.inputChannels.isEmpty else { return kAudioUnitErr_InvalidProperty }
        guard let v = get(UInt32.self) else { return kAudio_ParamError }
        unit.bypassEffect = v != 0
        node.isBypassed = v != 0
        unit.hostLink?.host?._audioUnitBypassDidChange(v != 0)
        return noErr
    case kAudioUnitProperty_MakeConnection:
        guard let c = get(AudioUnitConnection.self) else { return kAudio_ParamError }
        guard inScope == kAudioUnitScope_Input else { return kAudioUnitErr_InvalidScope }
        guard Int(c.destInputNumber) < max(1, unit.inputCount), !unit.isOutput || c.destInputNumber == 0 else { return kAudioUnitErr_InvalidElement }
        guard let source = c.sourceAudioUnit else {
            unit.callbacks[c.destInputNumber] = nil
            return noErr
        }
        guard compatUnit(source) != nil, source != inUnit else { return kAudioUnitErr_InvalidPropertyValue }
        guard c.sourceOutputNumber == 0 else { return kAudioUnitErr_InvalidElement }
        unit.callbacks[c.destInputNumber] = AURenderCallbackStruct(inputProc: connectionRenderProc, inputProcRefCon: UnsafeMutableRawPointer(source))
        return noErr
    case kAudioUnitProperty_ClassInfo:
        guard inScope == kAudioUnitScope_Global else { return kAudioUnitErr_InvalidScope }
        return setClassInfo(unit, inData, inDataSize)
    default: return kAudioUnitErr_InvalidProperty
    }
}

// MARK: - More scopes and property IDs (Apple's values)

/// Note scope (music devices; none here).
public let kAudioUnitScope_Note: AudioUnitScope = 5
/// Layer scope (none here).
public let kAudioUnitScope_Layer: AudioUnitScope = 6
/// Layer item scope (none here).
public let kAudioUnitScope_LayerItem: AudioUnitScope = 7

/// Apple's other name of ``kAudioUnitProperty_ElementCount`` (11).
public let kAudioUnitProperty_BusCount: AudioUnitPropertyID = kAudioUnitProperty_ElementCount
/// The unit's state as a class-info dictionary (0, global scope): a `CFDictionary`
/// (`NSDictionary` here) handed over +1 with the `kAUPreset*Key` keys and the parameter values
/// in `data` (the .aupreset layout); setting one restores the parameters it holds.
public let kAudioUnitProperty_ClassInfo: AudioUnitPropertyID = 0
/// ``AudioUnitConnection`` (1, input scope): feeds an input bus from another unit's output
/// (the source is rendered with ``AudioUnitRender(_:_:_:_:_:_:)``); a nil source disconnects.
public let kAudioUnitProperty_MakeConnection: AudioUnitPropertyID = 1
/// Array of `AudioUnitParameterID` (3): the unit's parameters in a scope.
public let kAudioUnitProperty_ParameterList: AudioUnitPropertyID = 3
/// ``AudioUnitParameterInfo`` (4): one parameter, its ID passed as the element.
public let kAudioUnitProperty_ParameterInfo: AudioUnitPropertyID = 4
/// `Float64` CPU load limit (6): not available here.
public let kAudioUnitProperty_CPULoad: AudioUnitPropertyID = 6
/// Array of ``AUChannelInfo`` (13): the channel configurations a unit supports.
public let kAudioUnitProperty_SupportedNumChannels: AudioUnitPropertyID = 13
/// Value strings of an indexed parameter (16): not available here.
public let kAudioUnitProperty_ParameterValueStrings: AudioUnitPropertyID = 16
/// `AudioChannelLayout` of a scope (19): not available here.
public let kAudioUnitProperty_AudioChannelLayout: AudioUnitPropertyID = 19
/// `OSStatus` of the last render (22): not available here.
public let kAudioUnitProperty_LastRenderError: AudioUnitPropertyID = 22
/// Factory presets (24): not available here (the units here have none).
public let kAudioUnitProperty_FactoryPresets: AudioUnitPropertyID = 24
/// `UInt32` render quality (26): not available here.
public let kAudioUnitProperty_RenderQuality: AudioUnitPropertyID = 26
/// Host callbacks (27): not available here.
public let kAudioUnitProperty_HostCallbacks: AudioUnitPropertyID = 27
/// `UInt32` in-place processing (29): not available here.
public let kAudioUnitProperty_InPlaceProcessing: AudioUnitPropertyID = 29
/// Element name (30): not available here.
public let kAudioUnitProperty_ElementName: AudioUnitPropertyID = 30
/// Supported channel layout tags (32): not available here.
public let kAudioUnitProperty_SupportedChannelLayoutTags: AudioUnitPropertyID = 32
/// The present preset (36): not available here.
public let kAudioUnitProperty_PresentPreset: AudioUnitPropertyID = 36
/// Dependent parameters (45): not available here.
public let kAudioUnitProperty_DependentParameters: AudioUnitPropertyID = 45
/// `UInt32` whether to allocate output buffers (51): not available here.
public let kAudioUnitProperty_ShouldAllocateBuffer: AudioUnitPropertyID = 51
/// Frequency response bins (52): not available here.
public let kAudioUnitProperty_FrequencyResponse: AudioUnitPropertyID = 52
/// Parameter history (53): not available here.
public let kAudioUnitProperty_ParameterHistoryInfo: AudioUnitPropertyID = 53
/// Nick name (54): not available here.
public let kAudioUnitProperty_NickName: AudioUnitPropertyID = 54
/// `UInt32` offline render (37): not available here.
public let kAudioUnitProperty_OfflineRender: AudioUnitPropertyID = 37
/// Parameter string from value (33): not available here.
public let kAudioUnitProperty_ParameterStringFromValue: AudioUnitPropertyID = 33
/// Parameter value from string (38): not available here.
public let kAudioUnitProperty_ParameterValueFromString: AudioUnitPropertyID = 38
/// `Float64` presentation latency (40): not available here.
public let kAudioUnitProperty_PresentationLatency: AudioUnitPropertyID = 40
/// Metering mode (3007): not available here.
public let kAudioUnitProperty_MeteringMode: AudioUnitPropertyID = 3007
/// Matrix levels (3006): not available here.
public let kAudioUnitProperty_MatrixLevels: AudioUnitPropertyID = 3006
/// `AudioDeviceID` an output unit plays to (2000): a device of the HAL subset (a PulseAudio sink
/// or an ALSA device); by default the default output device (`OAT_OUTPUT`'s choice).
public let kAudioOutputUnitProperty_CurrentDevice: AudioUnitPropertyID = 2000
/// Channel map of an I/O unit (2002): not available here.
public let kAudioOutputUnitProperty_ChannelMap: AudioUnitPropertyID = 2002
/// ``AudioOutputUnitStartAtTimeParams`` (2004): not available here.
public let kAudioOutputUnitProperty_StartTime: AudioUnitPropertyID = 2004
/// `UInt32` start time stamps at zero (2007): not available here.
public let kAudioOutputUnitProperty_StartTimestampsAtZero: AudioUnitPropertyID = 2007

/// Apple's `kAudioUnitParameterFlag_HasName` (the ``AudioUnitParameterOptions/flag_ValuesHaveStrings`` bit).
public let kAudioUnitParameterFlag_HasName: Int = 1 << 21
