// Audio Toolbox–compatible spatial mixer (`kAudioUnitSubType_SpatialMixer`, AUSpatialMixer): the
// parameter IDs of AudioUnitParameters.h, the property IDs and types of AudioUnitProperties.h, and
// the properties' implementation over OATUnits' AUSpatialMixerNode.

import OATCore
import OATUnits
#if canImport(Glibc)
import Glibc
#endif

// MARK: - Parameters (AudioUnitParameters.h)

/// Input: azimuth in degrees, −180 ... 180 (0 ahead, + to the right).
public let k3DMixerParam_Azimuth: AudioUnitParameterID = 0
/// Input: elevation in degrees, −90 ... 90.
public let k3DMixerParam_Elevation: AudioUnitParameterID = 1
/// Input: distance in metres, 0 ... 10 000 (below the head's radius, 8.75 cm, a source is in the head).
public let k3DMixerParam_Distance: AudioUnitParameterID = 2
/// Input and output: gain in dB, −120 ... 20.
public let k3DMixerParam_Gain: AudioUnitParameterID = 3
/// Input: playback rate 0.5 ... 4 (kept, not applied here).
public let k3DMixerParam_PlaybackRate: AudioUnitParameterID = 4
/// Input: enable (0 mutes the input, which is then not pulled).
public let k3DMixerParam_Enable: AudioUnitParameterID = 5
/// Input: the least gain distance attenuation may bring, dB −100 ... 12.
public let k3DMixerParam_MinGain: AudioUnitParameterID = 6
/// Input: the most gain distance attenuation may bring, dB −100 ... 12.
public let k3DMixerParam_MaxGain: AudioUnitParameterID = 7
/// Input: reverb blend, percent 0 ... 100 (kept: the mixer has no reverb here).
public let k3DMixerParam_ReverbBlend: AudioUnitParameterID = 8
/// Global: reverb gain, dB −40 ... 40 (kept: no reverb here).
public let k3DMixerParam_GlobalReverbGain: AudioUnitParameterID = 9
/// Input: occlusion, the attenuation at 5 kHz of a low-pass on the source, dB −100 ... 0.
public let k3DMixerParam_OcclusionAttenuation: AudioUnitParameterID = 10
/// Input: obstruction, the attenuation at 5 kHz of a low-pass on the direct path, dB −100 ... 0.
public let k3DMixerParam_ObstructionAttenuation: AudioUnitParameterID = 11

/// Input: azimuth in degrees (as ``k3DMixerParam_Azimuth``).
public let kSpatialMixerParam_Azimuth: AudioUnitParameterID = 0
/// Input: elevation in degrees (as ``k3DMixerParam_Elevation``).
public let kSpatialMixerParam_Elevation: AudioUnitParameterID = 1
/// Input: distance in metres (as ``k3DMixerParam_Distance``).
public let kSpatialMixerParam_Distance: AudioUnitParameterID = 2
/// Input and output: gain in dB (as ``k3DMixerParam_Gain``).
public let kSpatialMixerParam_Gain: AudioUnitParameterID = 3
/// Input: playback rate (kept, not applied here).
public let kSpatialMixerParam_PlaybackRate: AudioUnitParameterID = 4
/// Input: enable.
public let kSpatialMixerParam_Enable: AudioUnitParameterID = 5
/// Input: minimum distance gain, dB.
public let kSpatialMixerParam_MinGain: AudioUnitParameterID = 6
/// Input: maximum distance gain, dB.
public let kSpatialMixerParam_MaxGain: AudioUnitParameterID = 7
/// Input: reverb blend, percent (kept: no reverb here).
public let kSpatialMixerParam_ReverbBlend: AudioUnitParameterID = 8
/// Global: reverb gain, dB (kept: no reverb here).
public let kSpatialMixerParam_GlobalReverbGain: AudioUnitParameterID = 9
/// Input: occlusion, dB at 5 kHz.
public let kSpatialMixerParam_OcclusionAttenuation: AudioUnitParameterID = 10
/// Input: obstruction, dB at 5 kHz.
public let kSpatialMixerParam_ObstructionAttenuation: AudioUnitParameterID = 11
/// Global: the listener's head yaw in degrees (+ turned to the right).
public let kSpatialMixerParam_HeadYaw: AudioUnitParameterID = 19
/// Global: the listener's head pitch in degrees (+ looking up).
public let kSpatialMixerParam_HeadPitch: AudioUnitParameterID = 20
/// Global: the listener's head roll in degrees (+ tilted to the right).
public let kSpatialMixerParam_HeadRoll: AudioUnitParameterID = 21

// MARK: - Properties (AudioUnitProperties.h)

/// `MixerDistanceParams` per input (3010).
public let kAudioUnitProperty_3DMixerDistanceParams: AudioUnitPropertyID = 3010
/// `UInt32` `AU3DMixerAttenuationCurve` per input (3013).
public let kAudioUnitProperty_3DMixerAttenuationCurve: AudioUnitPropertyID = 3013
/// `UInt32` `AU3DMixerRenderingFlags` per input (3003): interaural delay and distance attenuation
/// act (both on by default); the other flags are kept and read back.
public let kAudioUnitProperty_3DMixerRenderingFlags: AudioUnitPropertyID = 3003
/// `Float64` distance attenuation per input (3004; the 3D mixer's older property: not provided,
/// units answer `kAudioUnitErr_InvalidProperty`).
public let kAudioUnitProperty_3DMixerDistanceAtten: AudioUnitPropertyID = 3004
/// `MixerDistanceParams` per input (3010).
public let kAudioUnitProperty_SpatialMixerDistanceParams: AudioUnitPropertyID = 3010
/// `UInt32` `AUSpatialMixerAttenuationCurve` per input (3013).
public let kAudioUnitProperty_SpatialMixerAttenuationCurve: AudioUnitPropertyID = 3013
/// `UInt32` `AUSpatialMixerRenderingFlags` per input (3003): interaural delay and distance
/// attenuation (both on by default).
public let kAudioUnitProperty_SpatialMixerRenderingFlags: AudioUnitPropertyID = 3003
/// `UInt32` `AUSpatialMixerSourceMode` per input (3005).
public let kAudioUnitProperty_SpatialMixerSourceMode: AudioUnitPropertyID = 3005
/// `UInt32` `AUSpatialMixerOutputType`, global (3100).
public let kAudioUnitProperty_SpatialMixerOutputType: AudioUnitPropertyID = 3100
/// `UInt32` `AUSpatialMixerPointSourceInHeadMode` per input (3103).
public let kAudioUnitProperty_SpatialMixerPointSourceInHeadMode: AudioUnitPropertyID = 3103

/// A spatial mixer input's rendering algorithm (Apple's `AUSpatializationAlgorithm`).
public enum AUSpatializationAlgorithm: UInt32, Sendable {
    /// Equal-power panning.
    case spatializationAlgorithm_EqualPowerPanning = 0
    /// A spherical head model (interaural delay and head shadow).
    case spatializationAlgorithm_SphericalHead = 1
    /// Head-related transfer functions (libmysofa, a SOFA set; 256 taps).
    case spatializationAlgorithm_HRTF = 2
    /// Sound field: equal-power panning here.
    case spatializationAlgorithm_SoundField = 3
    /// Vector-based panning: equal-power panning here.
    case spatializationAlgorithm_VectorBasedPanning = 4
    /// No spatialisation.
    case spatializationAlgorithm_StereoPassThrough = 5
    /// Head-related transfer functions, the whole responses.
    case spatializationAlgorithm_HRTFHQ = 6
    /// What the output type calls for (HRTF HQ on headphones, equal power on speakers).
    case spatializationAlgorithm_UseOutputType = 7
}
/// ``AUSpatializationAlgorithm/spatializationAlgorithm_EqualPowerPanning`` under its C name.
public let kSpatializationAlgorithm_EqualPowerPanning = AUSpatializationAlgorithm.spatializationAlgorithm_EqualPowerPanning
/// ``AUSpatializationAlgorithm/spatializationAlgorithm_SphericalHead`` under its C name.
public let kSpatializationAlgorithm_SphericalHead = AUSpatializationAlgorithm.spatializationAlgorithm_SphericalHead
/// ``AUSpatializationAlgorithm/spatializationAlgorithm_HRTF`` under its C name.
public let kSpatializationAlgorithm_HRTF = AUSpatializationAlgorithm.spatializationAlgorithm_HRTF
/// ``AUSpatializationAlgorithm/spatializationAlgorithm_SoundField`` under its C name.
public let kSpatializationAlgorithm_SoundField = AUSpatializationAlgorithm.spatializationAlgorithm_SoundField
/// ``AUSpatializationAlgorithm/spatializationAlgorithm_VectorBasedPanning`` under its C name.
public let kSpatializationAlgorithm_VectorBasedPanning = AUSpatializationAlgorithm.spatializationAlgorithm_VectorBasedPanning
/// ``AUSpatializationAlgorithm/spatializationAlgorithm_StereoPassThrough`` under its C name.
public let kSpatializationAlgorithm_StereoPassThrough = AUSpatializationAlgorithm.spatializationAlgorithm_StereoPassThrough
/// ``AUSpatializationAlgorithm/spatializationAlgorithm_HRTFHQ`` under its C name.
public let kSpatializationAlgorithm_HRTFHQ = AUSpatializationAlgorithm.spatializationAlgorithm_HRTFHQ
/// ``AUSpatializationAlgorithm/spatializationAlgorithm_UseOutputType`` under its C name.
public let kSpatializationAlgorithm_UseOutputType = AUSpatializationAlgorithm.spatializationAlgorithm_UseOutputType

/// Distance attenuation settings of an input (Apple's `MixerDistanceParams`).
public struct MixerDistanceParams: Sendable, Equatable {
    /// Distance (m) up to which there is no attenuation.
    public var mReferenceDistance: Float32
    /// Distance (m) beyond which attenuation stops growing.
    public var mMaxDistance: Float32
    /// The most attenuation distance brings, dB (0: no limit here).
    public var mMaxAttenuation: Float32
    /// All zero.
    public init() { mReferenceDistance = 0; mMaxDistance = 0; mMaxAttenuation = 0 }
    /// The three fields.
    public init(mReferenceDistance: Float32, mMaxDistance: Float32, mMaxAttenuation: Float32) {
        self.mReferenceDistance = mReferenceDistance
        self.mMaxDistance = mMaxDistance
        self.mMaxAttenuation = mMaxAttenuation
    }
}

/// The 3D mixer's distance curves (Apple's `AU3DMixerAttenuationCurve`).
public enum AU3DMixerAttenuationCurve: UInt32, Sendable {
    /// (reference / distance)².
    case k3DMixerAttenuationCurve_Power = 0
    /// (distance / reference) ^ −1.
    case k3DMixerAttenuationCurve_Exponential = 1
    /// reference / distance (the default).
    case k3DMixerAttenuationCurve_Inverse = 2
    /// Linear from the reference to the maximum distance.
    case k3DMixerAttenuationCurve_Linear = 3
}

/// The spatial mixer's distance curves (Apple's `AUSpatialMixerAttenuationCurve`).
public enum AUSpatialMixerAttenuationCurve: UInt32, Sendable {
    /// (reference / distance)².
    case spatialMixerAttenuationCurve_Power = 0
    /// (distance / reference) ^ −1.
    case spatialMixerAttenuationCurve_Exponential = 1
    /// reference / distance (the default).
    case spatialMixerAttenuationCurve_Inverse = 2
    /// Linear from the reference to the maximum distance.
    case spatialMixerAttenuationCurve_Linear = 3
}

/// The 3D mixer's rendering flags (Apple's `AU3DMixerRenderingFlags`): interaural delay and
/// distance attenuation act, the others are kept and read back.
public struct AU3DMixerRenderingFlags: OptionSet, Sendable, Hashable {
    /// The flag bits.
    public let rawValue: UInt32
    /// Wraps flag bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// Interaural delay.
    public static let k3DMixerRenderingFlags_InterAuralDelay = AU3DMixerRenderingFlags(rawValue: 1 << 0)
    /// Doppler shift.
    public static let k3DMixerRenderingFlags_DopplerShift = AU3DMixerRenderingFlags(rawValue: 1 << 1)
    /// Distance attenuation.
    public static let k3DMixerRenderingFlags_DistanceAttenuation = AU3DMixerRenderingFlags(rawValue: 1 << 2)
    /// Distance filter.
    public static let k3DMixerRenderingFlags_DistanceFilter = AU3DMixerRenderingFlags(rawValue: 1 << 3)
    /// Distance diffusion.
    public static let k3DMixerRenderingFlags_DistanceDiffusion = AU3DMixerRenderingFlags(rawValue: 1 << 4)
    /// Linear distance attenuation.
    public static let k3DMixerRenderingFlags_LinearDistanceAttenuation = AU3DMixerRenderingFlags(rawValue: 1 << 5)
    /// Constant reverb blend.
    public static let k3DMixerRenderingFlags_ConstantReverbBlend = AU3DMixerRenderingFlags(rawValue: 1 << 6)
}

/// The spatial mixer's rendering flags (Apple's `AUSpatialMixerRenderingFlags`): both act.
public struct AUSpatialMixerRenderingFlags: OptionSet, Sendable, Hashable {
    /// The flag bits.
    public let rawValue: UInt32
    /// Wraps flag bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// Interaural delay.
    public static let spatialMixerRenderingFlags_InterAuralDelay = AUSpatialMixerRenderingFlags(rawValue: 1 << 0)
    /// Distance attenuation.
    public static let spatialMixerRenderingFlags_DistanceAttenuation = AUSpatialMixerRenderingFlags(rawValue: 1 << 2)
}

/// What the spatial mixer's output is heard on (Apple's `AUSpatialMixerOutputType`).
public enum AUSpatialMixerOutputType: UInt32, Sendable {
    /// Headphones.
    case spatialMixerOutputType_Headphones = 1
    /// Built-in speakers.
    case spatialMixerOutputType_BuiltInSpeakers = 2
    /// External speakers.
    case spatialMixerOutputType_ExternalSpeakers = 3
}

/// How an input's channels are treated (Apple's `AUSpatialMixerSourceMode`).
public enum AUSpatialMixerSourceMode: UInt32, Sendable {
    /// Mono inputs are spatialised, others pass through.
    case spatialMixerSourceMode_SpatializeIfMono = 0
    /// No spatialisation.
    case spatialMixerSourceMode_Bypass = 1
    /// Downmixed to mono and spatialised.
    case spatialMixerSourceMode_PointSource = 2
    /// An ambience bed (passes through here).
    case spatialMixerSourceMode_AmbienceBed = 3
}

/// How a point source inside the head is rendered (Apple's `AUSpatialMixerPointSourceInHeadMode`).
public enum AUSpatialMixerPointSourceInHeadMode: UInt32, Sendable {
    /// As mono, centred.
    case spatialMixerPointSourceInHeadMode_Mono = 0
    /// As if at the head's surface (no in-head fold-down).
    case spatialMixerPointSourceInHeadMode_Bypass = 1
}

// MARK: - The unit

/// A spatial mixer unit's per-input properties, kept across node rebuilds (stream formats and
/// element counts make a new node).
final class SpatialMixerCompatState {
    struct Input {
        var algorithm = AUSpatialAlgorithm.equalPowerPanning
        var curve = AUSpatialAttenuationCurve.inverse
        var distance = MixerDistanceParams(mReferenceDistance: 1, mMaxDistance: 100_000, mMaxAttenuation: 0)
        var flags: UInt32 = 0b101
        var sourceMode = AUSpatialSourceMode.spatializeIfMono
        var inHeadBypass = false
    }
    var inputs: [UInt32: Input] = [:]
    var outputType = AUSpatialOutputType.headphones

    func apply(to node: AUSpatialMixerNode) {
        node.outputType = outputType
        for (bus, v) in inputs where Int(bus) < node.inputChannels.count {
            let s = node.settings(input: Int(bus))
            s.algorithm = v.algorithm
            s.curve = v.curve
            s.referenceDistance = v.distance.mReferenceDistance
            s.maximumDistance = v.distance.mMaxDistance
            s.maximumAttenuation = v.distance.mMaxAttenuation
            s.sourceMode = v.sourceMode
            s.inHeadBypass = v.inHeadBypass
            s.renderingFlags = v.flags
        }
    }
}

/// The spatial mixer's node for a unit: its input count and each input's channels (1 or 2).
let makeSpatialMixerNode: @Sendable (CompatUnit) -> OATUnits.RenderNode? = { unit in
    let state = unit.extras.spatial ?? SpatialMixerCompatState()
    unit.extras.spatial = state
    let node = AUSpatialMixerNode(inputs: unit.inputCount, inputChannels: min(2, unit.channels(kAudioUnitScope_Input, 0)))
    for b in 0..<unit.inputCount { try? node.setInputChannels(min(2, unit.channels(kAudioUnitScope_Input, UInt32(b))), bus: b) }
    state.apply(to: node)
    return node
}

private func isSpatialMixer(_ unit: CompatUnit) -> Bool {
    unit.component.description.componentSubType == kAudioUnitSubType_SpatialMixer
        && unit.component.description.componentManufacturer == kAudioUnitManufacturer_Apple
}

private let spatialInputProperties: Set<AudioUnitPropertyID> = [
    kAudioUnitProperty_SpatializationAlgorithm, kAudioUnitProperty_SpatialMixerDistanceParams, kAudioUnitProperty_SpatialMixerAttenuationCurve,
    kAudioUnitProperty_SpatialMixerRenderingFlags, kAudioUnitProperty_SpatialMixerSourceMode, kAudioUnitProperty_SpatialMixerPointSourceInHeadMode,
]

/// Size and writability of a spatial mixer property; nil for other units and properties.
func spatialMixerPropertyInfo(_ unit: CompatUnit, _ inID: AudioUnitPropertyID, _ inScope: AudioUnitScope, _ inElement: AudioUnitElement,
                              _ outDataSize: UnsafeMutablePointer<UInt32>?, _ outWritable: UnsafeMutablePointer<DarwinBoolean>?) -> OSStatus? {
    guard isSpatialMixer(unit) else { return nil }
    if spatialInputProperties.contains(inID) {
        guard inScope == kAudioUnitScope_Input else { return kAudioUnitErr_InvalidScope }
        guard Int(inElement) < unit.inputCount else { return kAudioUnitErr_InvalidElement }
        outDataSize?.pointee = UInt32(inID == kAudioUnitProperty_SpatialMixerDistanceParams ? MemoryLayout<MixerDistanceParams>.size : 4)
        outWritable?.pointee = DarwinBoolean(true)
        return noErr
    }
    if inID == kAudioUnitProperty_SpatialMixerOutputType {
        guard inScope == kAudioUnitScope_Global else { return kAudioUnitErr_InvalidScope }
        outDataSize?.pointee = 4
        outWritable?.pointee = DarwinBoolean(true)
        return noErr
    }
    return nil
}

/// Reads a spatial mixer property; nil for other units and properties.
func getSpatialMixerProperty(_ unit: CompatUnit, _ inID: AudioUnitPropertyID, _ inScope: AudioUnitScope, _ inElement: AudioUnitElement,
                             _ outData: UnsafeMutableRawPointer, _ ioDataSize: UnsafeMutablePointer<UInt32>) -> OSStatus? {
    guard isSpatialMixer(unit) else { return nil }
    func put<T>(_ value: T) -> OSStatus {
        guard Int(ioDataSize.pointee) >= MemoryLayout<T>.size else { return kAudio_ParamError }
        outData.storeBytes(of: value, toByteOffset: 0, as: T.self)
        ioDataSize.pointee = UInt32(MemoryLayout<T>.size)
        return noErr
    }
    let state = unit.extras.spatial ?? SpatialMixerCompatState()
    unit.extras.spatial = state
    if inID == kAudioUnitProperty_SpatialMixerOutputType {
        guard inScope == kAudioUnitScope_Global else { return kAudioUnitErr_InvalidScope }
        return put(state.outputType.rawValue)
    }
    guard spatialInputProperties.contains(inID) else { return nil }
    guard inScope == kAudioUnitScope_Input else { return kAudioUnitErr_InvalidScope }
    guard Int(inElement) < unit.inputCount else { return kAudioUnitErr_InvalidElement }
    let v = state.inputs[inElement] ?? SpatialMixerCompatState.Input()
    switch inID {
    case kAudioUnitProperty_SpatializationAlgorithm: return put(v.algorithm.rawValue)
    case kAudioUnitProperty_SpatialMixerDistanceParams: return put(v.distance)
    case kAudioUnitProperty_SpatialMixerAttenuationCurve: return put(v.curve.rawValue)
    case kAudioUnitProperty_SpatialMixerRenderingFlags: return put(v.flags)
    case kAudioUnitProperty_SpatialMixerSourceMode: return put(v.sourceMode.rawValue)
    default: return put(UInt32(v.inHeadBypass ? 1 : 0))
    }
}

/// Writes a spatial mixer property (and the input element count); nil for other units and properties.
func setSpatialMixerProperty(_ unit: CompatUnit, _ inID: AudioUnitPropertyID, _ inScope: AudioUnitScope, _ inElement: AudioUnitElement,
                             _ inData: UnsafeRawPointer?, _ inDataSize: UInt32) -> OSStatus? {
    guard isSpatialMixer(unit) else { return nil }
    func get<T>(_ type: T.Type) -> T? {
        guard let inData, Int(inDataSize) >= MemoryLayout<T>.size else { return nil }
        return inData.loadUnaligned(as: T.self)
    }
    let state = unit.extras.spatial ?? SpatialMixerCompatState()
    unit.extras.spatial = state
    if inID == kAudioUnitProperty_ElementCount && inScope == kAudioUnitScope_Input {
        guard let n = get(UInt32.self), n >= 1, n <= 256 else { return kAudioUnitErr_InvalidPropertyValue }
        guard !unit.initialized else { return kAudioUnitErr_Initialized }
        unit.inputCount = Int(n)
        unit.node = unit.makeNode()
        return noErr
    }
    if inID == kAudioUnitProperty_SpatialMixerOutputType {
        guard inScope == kAudioUnitScope_Global else { return kAudioUnitErr_InvalidScope }
        guard let raw = get(UInt32.self) else { return kAudio_ParamError }
        guard let t = AUSpatialOutputType(rawValue: raw) else { return kAudioUnitErr_InvalidPropertyValue }
        state.outputType = t
        (unit.node as? AUSpatialMixerNode)?.outputType = t
        return noErr
    }
    guard spatialInputProperties.contains(inID) else { return nil }
    guard inScope == kAudioUnitScope_Input else { return kAudioUnitErr_InvalidScope }
    guard Int(inElement) < unit.inputCount else { return kAudioUnitErr_InvalidElement }
    var v = state.inputs[inElement] ?? SpatialMixerCompatState.Input()
    switch inID {
    case kAudioUnitProperty_SpatialMixerDistanceParams:
        guard let p = get(MixerDistanceParams.self) else { return kAudio_ParamError }
        guard p.mReferenceDistance > 0, p.mMaxDistance >= p.mReferenceDistance, p.mMaxAttenuation >= 0 else { return kAudioUnitErr_InvalidPropertyValue }
        v.distance = p
    default:
        guard let raw = get(UInt32.self) else { return kAudio_ParamError }
        switch inID {
        case kAudioUnitProperty_SpatializationAlgorithm:
            guard let a = AUSpatialAlgorithm(rawValue: raw) else { return kAudioUnitErr_InvalidPropertyValue }
            if a == .hrtf || a == .hrtfHQ {
                // HRTF needs libmysofa: refused, as an invalid value, when it cannot be loaded.
                do { try SpatialHRTFTable.checkLibrary() } catch { return kAudioUnitErr_InvalidPropertyValue }
            }
            v.algorithm = a
        case kAudioUnitProperty_SpatialMixerAttenuationCurve:
            guard let c = AUSpatialAttenuationCurve(rawValue: raw) else { return kAudioUnitErr_InvalidPropertyValue }
            v.curve = c
        case kAudioUnitProperty_SpatialMixerRenderingFlags: v.flags = raw
        case kAudioUnitProperty_SpatialMixerSourceMode:
            guard let m = AUSpatialSourceMode(rawValue: raw) else { return kAudioUnitErr_InvalidPropertyValue }
            v.sourceMode = m
        default:
            guard raw <= 1 else { return kAudioUnitErr_InvalidPropertyValue }
            v.inHeadBypass = raw == 1
        }
    }
    state.inputs[inElement] = v
    if let node = unit.node as? AUSpatialMixerNode { state.apply(to: node) }
    return noErr
}
