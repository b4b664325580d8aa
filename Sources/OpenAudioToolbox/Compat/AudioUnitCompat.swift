// Audio Toolbox–compatible AudioUnit / AUGraph API (AudioComponent, AudioUnit properties,
// parameters, render callbacks, output units, AUGraph), built on the Swift AudioUnits layer:
// every unit is an AudioUnits node; an output unit or an AUGraph drives an AudioGraph.

import AudioCore
import AudioDevices
import AudioUnits
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// MARK: - Types

/// Describes a component (Apple's `AudioComponentDescription`); 0 in type, subtype or
/// manufacturer matches anything in ``AudioComponentFindNext(_:_:)``.
public struct AudioComponentDescription: Equatable, Sendable {
    /// `kAudioUnitType_*`.
    public var componentType: UInt32
    /// `kAudioUnitSubType_*`.
    public var componentSubType: UInt32
    /// `kAudioUnitManufacturer_Apple`.
    public var componentManufacturer: UInt32
    /// Must be 0.
    public var componentFlags: UInt32
    /// Must be 0.
    public var componentFlagsMask: UInt32
    /// A zeroed description.
    public init() { self.init(componentType: 0, componentSubType: 0, componentManufacturer: 0, componentFlags: 0, componentFlagsMask: 0) }
    /// Apple's memberwise initialiser.
    public init(componentType: UInt32, componentSubType: UInt32, componentManufacturer: UInt32, componentFlags: UInt32, componentFlagsMask: UInt32) {
        self.componentType = componentType
        self.componentSubType = componentSubType
        self.componentManufacturer = componentManufacturer
        self.componentFlags = componentFlags
        self.componentFlagsMask = componentFlagsMask
    }
}

/// A component (Apple's `AudioComponent`, an opaque pointer).
public typealias AudioComponent = OpaquePointer
/// An instance of a component (Apple's `AudioComponentInstance`).
public typealias AudioComponentInstance = OpaquePointer
/// An audio unit (Apple's `AudioUnit`).
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
/// A graph (Apple's `AUGraph`, an opaque pointer).
public typealias AUGraph = OpaquePointer
/// A node of an ``AUGraph`` (Apple's `AUNode`, `SInt32`). In code that imports
/// OpenAudioToolbox this name is the C API's; the Swift node class is `AudioUnits.AUNode`.
public typealias AUNode = Int32

/// Render action flags (Apple's `AudioUnitRenderActionFlags`).
public struct AudioUnitRenderActionFlags: OptionSet, Sendable, Hashable {
    /// The raw bits.
    public var rawValue: UInt32
    /// Creates flags.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// Before rendering (render notifications).
    public static let unitRenderAction_PreRender = AudioUnitRenderActionFlags(rawValue: 1 << 2)
    /// After rendering (render notifications).
    public static let unitRenderAction_PostRender = AudioUnitRenderActionFlags(rawValue: 1 << 3)
    /// The buffers hold silence.
    public static let unitRenderAction_OutputIsSilence = AudioUnitRenderActionFlags(rawValue: 1 << 4)
}
/// `kAudioUnitRenderAction_PreRender`.
public let kAudioUnitRenderAction_PreRender = AudioUnitRenderActionFlags.unitRenderAction_PreRender
/// `kAudioUnitRenderAction_PostRender`.
public let kAudioUnitRenderAction_PostRender = AudioUnitRenderActionFlags.unitRenderAction_PostRender
/// `kAudioUnitRenderAction_OutputIsSilence`.
public let kAudioUnitRenderAction_OutputIsSilence = AudioUnitRenderActionFlags.unitRenderAction_OutputIsSilence

/// A render callback (Apple's `AURenderCallback`; a Swift function type here, as the Core Audio
/// structs it takes are Swift types, see ``AudioQueueOutputCallback``). It runs on the render thread: fill `ioData` (in the stream
/// format set on the input scope of that bus) with `inNumberFrames` frames, or point its
/// buffers at your own memory, or set `mNumberBuffers` to 0 for silence.
public typealias AURenderCallback = (_ inRefCon: UnsafeMutableRawPointer, _ ioActionFlags: UnsafeMutablePointer<AudioUnitRenderActionFlags>,
                                     _ inTimeStamp: UnsafePointer<AudioTimeStamp>, _ inBusNumber: UInt32, _ inNumberFrames: UInt32,
                                     _ ioData: UnsafeMutablePointer<AudioBufferList>?) -> OSStatus

/// A render callback and its context (Apple's `AURenderCallbackStruct`).
public struct AURenderCallbackStruct {
    /// The callback.
    public var inputProc: AURenderCallback?
    /// Passed to the callback as `inRefCon`.
    public var inputProcRefCon: UnsafeMutableRawPointer?
    /// An empty struct.
    public init() { self.init(inputProc: nil, inputProcRefCon: nil) }
    /// Apple's memberwise initialiser.
    public init(inputProc: AURenderCallback?, inputProcRefCon: UnsafeMutableRawPointer?) {
        self.inputProc = inputProc
        self.inputProcRefCon = inputProcRefCon
    }
}

// MARK: - Constants

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

/// Mixer input volume (input scope) / master volume (output scope), linear 0 ... 4.
public let kMultiChannelMixerParam_Volume: AudioUnitParameterID = 0
/// Mixer input enable (input scope), 0 or 1.
public let kMultiChannelMixerParam_Enable: AudioUnitParameterID = 1
/// Mixer input pan (input scope), −1 ... 1.
public let kMultiChannelMixerParam_Pan: AudioUnitParameterID = 2
/// N-band EQ global gain (dB).
public let kAUNBandEQParam_GlobalGain: AudioUnitParameterID = 0
/// N-band EQ band bypass (+ band).
public let kAUNBandEQParam_BypassBand: AudioUnitParameterID = 1000
/// N-band EQ filter type (+ band).
public let kAUNBandEQParam_FilterType: AudioUnitParameterID = 2000
/// N-band EQ frequency in Hz (+ band).
public let kAUNBandEQParam_Frequency: AudioUnitParameterID = 3000
/// N-band EQ gain in dB (+ band).
public let kAUNBandEQParam_Gain: AudioUnitParameterID = 4000
/// N-band EQ bandwidth in octaves (+ band).
public let kAUNBandEQParam_Bandwidth: AudioUnitParameterID = 5000
/// Parametric (peaking) band.
public let kAUNBandEQFilterType_Parametric: Int = 0
/// Butterworth low pass.
public let kAUNBandEQFilterType_2ndOrderButterworthLowPass: Int = 1
/// Butterworth high pass.
public let kAUNBandEQFilterType_2ndOrderButterworthHighPass: Int = 2
/// Resonant low pass.
public let kAUNBandEQFilterType_ResonantLowPass: Int = 3
/// Resonant high pass.
public let kAUNBandEQFilterType_ResonantHighPass: Int = 4
/// Band pass.
public let kAUNBandEQFilterType_BandPass: Int = 5
/// Band stop.
public let kAUNBandEQFilterType_BandStop: Int = 6
/// Low shelf.
public let kAUNBandEQFilterType_LowShelf: Int = 7
/// High shelf.
public let kAUNBandEQFilterType_HighShelf: Int = 8
/// Resonant low shelf.
public let kAUNBandEQFilterType_ResonantLowShelf: Int = 9
/// Resonant high shelf.
public let kAUNBandEQFilterType_ResonantHighShelf: Int = 10
/// Reverb wet percentage.
public let kReverb2Param_DryWetMix: AudioUnitParameterID = 0
/// Reverb gain (dB).
public let kReverb2Param_Gain: AudioUnitParameterID = 1
/// Reverb decay at 0 Hz (s).
public let kReverb2Param_DecayTimeAt0Hz: AudioUnitParameterID = 4
/// Reverb decay at Nyquist (s).
public let kReverb2Param_DecayTimeAtNyquist: AudioUnitParameterID = 5
/// Delay wet percentage.
public let kDelayParam_WetDryMix: AudioUnitParameterID = 0
/// Delay time (s).
public let kDelayParam_DelayTime: AudioUnitParameterID = 1
/// Delay feedback (percent).
public let kDelayParam_Feedback: AudioUnitParameterID = 2
/// Delay low-pass cutoff (Hz).
public let kDelayParam_LopassCutoff: AudioUnitParameterID = 3
/// Varispeed rate.
public let kVarispeedParam_PlaybackRate: AudioUnitParameterID = 0
/// Varispeed cents.
public let kVarispeedParam_PlaybackCents: AudioUnitParameterID = 1
/// Compressor threshold (dB).
public let kDynamicsProcessorParam_Threshold: AudioUnitParameterID = 0
/// Compressor attack (s).
public let kDynamicsProcessorParam_AttackTime: AudioUnitParameterID = 4
/// Compressor release (s).
public let kDynamicsProcessorParam_ReleaseTime: AudioUnitParameterID = 5
/// Compressor makeup gain (dB).
public let kDynamicsProcessorParam_OverallGain: AudioUnitParameterID = 6
/// Limiter attack (the look-ahead here, s).
public let kLimiterParam_AttackTime: AudioUnitParameterID = 0
/// Limiter release (s).
public let kLimiterParam_DecayTime: AudioUnitParameterID = 1
/// Limiter pre-gain (dB).
public let kLimiterParam_PreGain: AudioUnitParameterID = 2

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
/// Node not found.
public let kAUGraphErr_NodeNotFound: OSStatus = -10860
/// Invalid connection (cycle, bus in use).
public let kAUGraphErr_InvalidConnection: OSStatus = -10861
/// Output node problem (none or several).
public let kAUGraphErr_OutputNodeErr: OSStatus = -10862
/// Not possible now.
public let kAUGraphErr_CannotDoInCurrentContext: OSStatus = -10863
/// Invalid unit.
public let kAUGraphErr_InvalidAudioUnit: OSStatus = -10864

// MARK: - Components

enum CompatUnitKind: Sendable {
    case output(generic: Bool), mixer, eq, reverb, delay, varispeed, converter, dynamics, limiter, splitter
    /// Units defined in other files (time-pitch, players, AudioComponentRegister): a node factory.
    case custom(@Sendable (CompatUnit) -> AudioUnits.AUNode?)
}

struct CompatComponent: Sendable {
    let description: AudioComponentDescription
    let kind: CompatUnitKind
    let name: String
}

let builtinCompatComponents: [CompatComponent] = {
    func d(_ t: UInt32, _ s: UInt32) -> AudioComponentDescription {
        AudioComponentDescription(componentType: t, componentSubType: s, componentManufacturer: kAudioUnitManufacturer_Apple, componentFlags: 0, componentFlagsMask: 0)
    }
    return [
        CompatComponent(description: d(kAudioUnitType_Output, kAudioUnitSubType_DefaultOutput), kind: .output(generic: false), name: "Apple: DefaultOutputUnit"),
        CompatComponent(description: d(kAudioUnitType_Output, kAudioUnitSubType_RemoteIO), kind: .output(generic: false), name: "Apple: AURemoteIO"),
        CompatComponent(description: d(kAudioUnitType_Output, kAudioUnitSubType_HALOutput), kind: .output(generic: false), name: "Apple: AUHAL"),
        CompatComponent(description: d(kAudioUnitType_Output, kAudioUnitSubType_SystemOutput), kind: .output(generic: false), name: "Apple: SystemOutputUnit"),
        CompatComponent(description: d(kAudioUnitType_Output, kAudioUnitSubType_GenericOutput), kind: .output(generic: true), name: "Apple: GenericOutput"),
        CompatComponent(description: d(kAudioUnitType_Output, kAudioUnitSubType_VoiceProcessingIO), kind: .output(generic: false), name: "Apple: AUVoiceProcessor"),
        CompatComponent(description: d(kAudioUnitType_Mixer, kAudioUnitSubType_MultiChannelMixer), kind: .mixer, name: "Apple: AUMultiChannelMixer"),
        CompatComponent(description: d(kAudioUnitType_Effect, kAudioUnitSubType_NBandEQ), kind: .eq, name: "Apple: AUNBandEQ"),
        CompatComponent(description: d(kAudioUnitType_Effect, kAudioUnitSubType_Reverb2), kind: .reverb, name: "Apple: AUReverb2"),
        CompatComponent(description: d(kAudioUnitType_Effect, kAudioUnitSubType_Delay), kind: .delay, name: "Apple: AUDelay"),
        CompatComponent(description: d(kAudioUnitType_Effect, kAudioUnitSubType_DynamicsProcessor), kind: .dynamics, name: "Apple: AUDynamicsProcessor"),
        CompatComponent(description: d(kAudioUnitType_Effect, kAudioUnitSubType_PeakLimiter), kind: .limiter, name: "Apple: AUPeakLimiter"),
        CompatComponent(description: d(kAudioUnitType_FormatConverter, kAudioUnitSubType_Varispeed), kind: .varispeed, name: "Apple: AUVarispeed"),
        CompatComponent(description: d(kAudioUnitType_FormatConverter, kAudioUnitSubType_AUConverter), kind: .converter, name: "Apple: AUConverter"),
        CompatComponent(description: d(kAudioUnitType_FormatConverter, kAudioUnitSubType_Splitter), kind: .splitter, name: "Apple: AUSplitter"),
    ]
}()

/// Finds the next component matching `inDesc` after `inComponent` (nil: from the first).
public func AudioComponentFindNext(_ inComponent: AudioComponent?, _ inDesc: UnsafePointer<AudioComponentDescription>) -> AudioComponent? {
    let want = inDesc.pointee
    let start = inComponent.map { Int(bitPattern: UnsafeRawPointer($0)) } ?? 0
    for i in start..<compatComponents.count {
        let c = compatComponents[i].description
        if (want.componentType == 0 || want.componentType == c.componentType)
            && (want.componentSubType == 0 || want.componentSubType == c.componentSubType)
            && (want.componentManufacturer == 0 || want.componentManufacturer == c.componentManufacturer) {
            return OpaquePointer(bitPattern: i + 1)
        }
    }
    return nil
}

func compatComponent(_ c: AudioComponent) -> CompatComponent? {
    let i = Int(bitPattern: UnsafeRawPointer(c)) - 1
    return i >= 0 && i < compatComponents.count ? compatComponents[i] : nil
}

/// The description of `inComponent`.
@discardableResult
public func AudioComponentGetDescription(_ inComponent: AudioComponent, _ outDesc: UnsafeMutablePointer<AudioComponentDescription>) -> OSStatus {
    guard let c = compatComponent(inComponent) else { return kAudio_ParamError }
    outDesc.pointee = c.description
    return noErr
}

/// Creates an instance of `inComponent`.
@discardableResult
public func AudioComponentInstanceNew(_ inComponent: AudioComponent, _ outInstance: UnsafeMutablePointer<AudioComponentInstance?>) -> OSStatus {
    guard let c = compatComponent(inComponent) else { return kAudio_ParamError }
    let unit = CompatUnit(component: c)
    unit.handleSlot = CompatHandles.make(unit)
    outInstance.pointee = unit.handle
    return noErr
}

/// Disposes of an instance (stopping it first). An instance already disposed of (a second call,
/// or a stale handle) returns `kAudio_ParamError`.
@discardableResult
public func AudioComponentInstanceDispose(_ inInstance: AudioComponentInstance) -> OSStatus {
    guard let unit = CompatHandles.remove(inInstance, as: CompatUnit.self) else { return kAudio_ParamError }
    unit.uninitialize()
    return noErr
}

/// The unit `u` names; nil once it has been disposed of.
func compatUnit(_ u: AudioUnit) -> CompatUnit? { CompatHandles.object(u, as: CompatUnit.self) }

func osStatus(_ e: AudioError, default status: OSStatus) -> OSStatus { e.osStatus ?? status }

// MARK: - The unit object

/// One AudioUnit instance: its properties (formats, callbacks, parameters) and, once
/// initialised, its AudioUnits node; a standalone unit also owns a small AudioGraph.
final class CompatUnit: @unchecked Sendable {
    struct Key: Hashable { let scope: UInt32; let element: UInt32 }
    struct ParamKey: Hashable { let id: UInt32; let scope: UInt32; let element: UInt32 }

    let component: CompatComponent
    /// The handle naming this unit (set when it is created).
    var handle: AudioUnit { handleSlot! }
    var handleSlot: AudioUnit?
    var formats: [Key: AudioStreamBasicDescription] = [:]
    var callbacks: [UInt32: AURenderCallbackStruct] = [:]
    var parameterValues: [ParamKey: Float] = [:]
    var maxFrames: UInt32 = 4096
    var inputCount: Int
    var outputCount: Int
    var bandCount = 16
    var enableIO: [UInt32: UInt32] = [0: 1, 1: 0]
    var node: AudioUnits.AUNode?
    var initialized = false
    var graph: AudioGraph?           // standalone
    weak var owner: CompatGraph?
    var renderPointers: UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>?
    var running = false
    /// State of the calls in AudioUnitExtrasCompat.swift (listeners, notifies, players).
    var extras = CompatUnitExtras()
    /// The input side (I/O units with input enabled, once initialised; AudioUnitInputCompat.swift).
    var inputCallback: AURenderCallbackStruct?
    var io: CompatInputIO?
    var ioNode: CompatIONode?
    var voiceBypass = false
    var voiceAGC = false
    var voiceMuteOutput = false

    init(component: CompatComponent) {
        self.component = component
        switch component.kind {
        case .mixer: inputCount = 8; outputCount = 1
        case .splitter: inputCount = 1; outputCount = 2
        default: inputCount = 1; outputCount = 1
        }
        node = makeNode()
    }

    deinit { renderPointers?.deallocate() }

    var isOutput: Bool { if case .output = component.kind { return true } else { return false } }

    func format(_ scope: UInt32, _ element: UInt32) -> AudioStreamBasicDescription {
        formats[Key(scope: scope, element: element)] ?? .canonicalFloat(sampleRate: 44100, channels: 2)
    }

    func channels(_ scope: UInt32, _ element: UInt32) -> Int { max(1, Int(format(scope, element).mChannelsPerFrame)) }

    func makeNode() -> AudioUnits.AUNode? {
        let inCh = channels(kAudioUnitScope_Input, 0), outCh = channels(kAudioUnitScope_Output, 0)
        let n: AudioUnits.AUNode?
        switch component.kind {
        case .output: n = nil
        case .mixer:
            let m = AUMixerNode(inputs: inputCount, inputChannels: inCh, outputChannels: outCh)
            for b in 0..<inputCount { try? m.setInputChannels(channels(kAudioUnitScope_Input, UInt32(b)), bus: b) }
            n = m
        case .eq:
            n = AUNBandEQNode(channels: inCh, bands: (0..<bandCount).map { b in
                AUEQBand(.parametric, frequency: Float(AUNBandEQNode.graphicFrequencies[b % 10]), gain: 0, bandwidth: 1)
            })
        case .reverb: n = AUReverbNode(channels: inCh)
        case .delay: n = AUDelayNode(channels: inCh)
        case .varispeed: n = AUVarispeedNode(channels: inCh)
        case .converter: n = AUFormatConverterNode(inputChannels: inCh, outputChannels: outCh)
        case .dynamics: n = AUDynamicsNode(channels: inCh)
        case .limiter: n = AUPeakLimiterNode(channels: inCh)
        case .splitter: n = AUSplitterNode(channels: inCh, outputs: outputCount)
        case .custom(let make): n = make(self)
        }
        if let n {
            for (k, v) in parameterValues { n.parameter(id: k.id, scope: AUScope(rawValue: k.scope) ?? .global, element: Int(k.element))?.value = v }
        }
        return n
    }

    /// A node for the unit's render callback on input `bus`, in the format set on that bus.
    func bridge(bus: UInt32) -> CompatCallbackNode? {
        guard let cb = callbacks[bus], cb.inputProc != nil else { return nil }
        return CompatCallbackNode(callback: cb, format: format(kAudioUnitScope_Input, bus), bus: bus)
    }

    func initialize() -> OSStatus {
        if initialized { return noErr }
        if owner != nil {
            // Inside an AUGraph the graph builds the nodes (AUGraphInitialize).
            node = makeNode()
            initialized = true
            return noErr
        }
        let outFormat = isOutput ? format(kAudioUnitScope_Input, 0) : format(kAudioUnitScope_Output, 0)
        for (k, f) in formats where k.scope != kAudioUnitScope_Global {
            if f.mFormatID != kAudioFormatLinearPCM { return kAudioUnitErr_FormatNotSupported }
            if !isOutput && f.mSampleRate != outFormat.mSampleRate { return kAudioUnitErr_FormatNotSupported }
        }
        do throws(AudioError) {
            let g = try AudioGraph(sampleRate: outFormat.mSampleRate, channels: Int(max(1, outFormat.mChannelsPerFrame)), maxFramesPerSlice: Int(maxFrames))
            if isOutput {
                let target = try setUpInput(graph: g) ?? g.output
                if let b = bridge(bus: 0) {
                    try g.add(b)
                    try g.connect(b, to: target)
                }
            } else {
                guard let n = makeNode() else { return kAudioUnitErr_FailedInitialization }
                node = n
                try g.add(n)
                for bus in 0..<n.inputChannels.count {
                    if let b = bridge(bus: UInt32(bus)) {
                        try g.add(b)
                        try g.connect(b, to: n, input: bus)
                    }
                }
                if !n.outputChannels.isEmpty { try g.connect(n, to: g.output) }
            }
            try g.commit()
            graph = g
            let ch = Int(max(1, outFormat.mChannelsPerFrame))
            renderPointers = .allocate(capacity: ch)
            initialized = true
            return noErr
        } catch {
            return osStatus(error, default: kAudioUnitErr_FailedInitialization)
        }
    }

    func uninitialize() {
        graph?.stop()
        tearDownInput()
        graph = nil
        running = false
        initialized = false
        renderPointers?.deallocate()
        renderPointers = nil
    }
}

/// Calls a unit's render callback on the render thread and turns what it delivers (any linear
/// PCM layout the bus's stream format names: Int16/Int32/Float32, interleaved or not) into
/// the graph's Float32 channels.
final class CompatCallbackNode: AudioUnits.AUNode, @unchecked Sendable {
    let callback: AURenderCallbackStruct
    let clientFormat: AudioStreamBasicDescription
    let bus: UInt32
    private var list: UnsafeMutableAudioBufferListPointer?
    private var storage: [UnsafeMutableRawPointer] = []
    private let dummyRefCon = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)

    init(callback: AURenderCallbackStruct, format: AudioStreamBasicDescription, bus: UInt32) {
        self.callback = callback
        clientFormat = format
        self.bus = bus
        super.init(name: "render callback \(bus)", inputChannels: [], outputChannels: [Int(max(1, format.mChannelsPerFrame))])
    }

    deinit {
        if let list { free(list.unsafeMutablePointer) }
        for s in storage { s.deallocate() }
        dummyRefCon.deallocate()
    }

    override func prepare(sampleRate: Double, maxFrames: Int) throws(AudioError) {
        try super.prepare(sampleRate: sampleRate, maxFrames: maxFrames)
        let count = clientFormat.bufferCount
        if let list { free(list.unsafeMutablePointer) }
        for s in storage { s.deallocate() }
        list = AudioBufferList.allocate(maximumBuffers: count)
        storage = (0..<count).map { _ in
            let p = UnsafeMutableRawPointer.allocate(byteCount: max(1, maxFrames * Int(clientFormat.mBytesPerFrame)), alignment: 16)
            p.initializeMemory(as: UInt8.self, repeating: 0, count: max(1, maxFrames * Int(clientFormat.mBytesPerFrame)))
            return p
        }
    }

    override func render(_ context: AURenderContext) {
        let out = context.output(0)
        let frames = context.frames
        guard let list, let proc = callback.inputProc else { out.silence(); return }
        let bpf = Int(clientFormat.mBytesPerFrame)
        let interleaved = clientFormat.isInterleaved
        let ch = out.channelCount
        list.count = storage.count
        for i in 0..<storage.count {
            list[i] = AudioBuffer(mNumberChannels: interleaved ? UInt32(ch) : 1, mDataByteSize: UInt32(frames * bpf), mData: storage[i])
        }
        var flags = AudioUnitRenderActionFlags()
        var time = AudioTimeStamp(sampleTime: Double(context.sampleTime), hostTime: context.hostTime, rateScalar: 1,
                                  flags: context.hostTime != 0 ? .sampleHostTimeValid : .sampleTimeValid)
        let status = withUnsafeMutablePointer(to: &flags) { f in
            withUnsafePointer(to: &time) { t in proc(callback.inputProcRefCon ?? dummyRefCon, f, t, bus, UInt32(frames), list.unsafeMutablePointer) }
        }
        guard status == noErr, list.count > 0 else { out.silence(); return }
        let bits = Int(clientFormat.mBitsPerChannel)
        let isFloat = clientFormat.isFloat
        for c in 0..<ch {
            let o = out[c]
            let bufferIndex = interleaved ? 0 : c
            guard bufferIndex < list.count, let data = list[bufferIndex].mData, bpf > 0 else {
                o.update(repeating: 0, count: frames)
                continue
            }
            let available = min(frames, Int(list[bufferIndex].mDataByteSize) / bpf)
            let stride = interleaved ? ch : 1
            let offset = interleaved ? c : 0
            if isFloat && bits == 32 {
                let p = data.assumingMemoryBound(to: Float.self)
                for f in 0..<available { o[f] = p[f * stride + offset] }
            } else if !isFloat && bits == 16 {
                let p = data.assumingMemoryBound(to: Int16.self)
                for f in 0..<available { o[f] = Float(p[f * stride + offset]) / 32768 }
            } else if !isFloat && bits == 32 {
                let p = data.assumingMemoryBound(to: Int32.self)
                for f in 0..<available { o[f] = Float(Double(p[f * stride + offset]) / 2_147_483_648) }
            } else {
                o.update(repeating: 0, count: available)
            }
            if available < frames { (o + available).update(repeating: 0, count: frames - available) }
        }
    }
}

// MARK: - Unit functions

/// Prepares the unit to render (builds its node; an output unit opens nothing until started).
@discardableResult
public func AudioUnitInitialize(_ inUnit: AudioUnit) -> OSStatus { compatUnit(inUnit)?.initialize() ?? kAudio_ParamError }

/// Undoes ``AudioUnitInitialize(_:)`` (stops an output unit).
@discardableResult
public func AudioUnitUninitialize(_ inUnit: AudioUnit) -> OSStatus {
    guard let unit = compatUnit(inUnit) else { return kAudio_ParamError }
    unit.uninitialize()
    return noErr
}

/// Starts an output unit: its graph plays to the output `OAT_OUTPUT` names (default: PulseAudio,
/// else ALSA, else the null output). A generic output does not start (render it with
/// ``AudioUnitRender(_:_:_:_:_:_:)``).
@discardableResult
func builtinAudioOutputUnitStart(_ ci: AudioUnit) -> OSStatus {
    guard let unit = compatUnit(ci) else { return kAudio_ParamError }
    guard unit.isOutput else { return kAudioUnitErr_InvalidProperty }
    if case .output(generic: true) = unit.component.kind { return noErr }
    if let owner = unit.owner { return owner.start() }
    guard unit.initialized, let graph = unit.graph else { return kAudioUnitErr_Uninitialized }
    if unit.running { return noErr }
    do {
        // Input first (its ring fills while the output starts); an I/O unit with its output
        // disabled is clocked by the real-time null output.
        try unit.startInput()
        try graph.start(unit.enableIO[0] == 0 ? .null(realTime: true) : CompatOutput.spec(), options: unit.outputOptions)
        unit.running = true
        return noErr
    } catch {
        unit.io?.node.stop()
        return osStatus(error, default: kAudioUnitErr_FailedInitialization)
    }
}

/// Stops an output unit.
@discardableResult
func builtinAudioOutputUnitStop(_ ci: AudioUnit) -> OSStatus {
    guard let unit = compatUnit(ci) else { return kAudio_ParamError }
    if let owner = unit.owner { return owner.stop() }
    unit.graph?.stop()
    unit.io?.node.stop()
    unit.running = false
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
    if let owner = unit.owner {
        guard unit.isOutput, let g = owner.graph, let p = owner.renderPointers else { return kAudioUnitErr_CannotDoInCurrentContext }
        graph = g; pointers = p
    } else {
        guard unit.initialized, let g = unit.graph, let p = unit.renderPointers else { return kAudioUnitErr_Uninitialized }
        graph = g; pointers = p
    }
    guard inOutputBusNumber == 0 else { return kAudioUnitErr_InvalidElement }
    guard inNumberFrames <= unit.maxFrames || unit.owner != nil else { return kAudioUnitErr_TooManyFramesToProcess }
    let list = UnsafeMutableAudioBufferListPointer(ioData)
    guard list.count == pointers.count else { return kAudioUnitErr_FormatNotSupported }
    for c in 0..<pointers.count {
        guard let d = list[c].mData, Int(list[c].mDataByteSize) >= Int(inNumberFrames) * 4 else { return kAudio_ParamError }
        pointers[c] = d.assumingMemoryBound(to: Float.self)
    }
    graph.render(into: pointers, frames: Int(inNumberFrames), time: inTimeStamp.pointee)
    for c in 0..<pointers.count { list[c].mDataByteSize = inNumberFrames * 4 }
    return noErr
}

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
         kAudioUnitProperty_BypassEffect, kAUNBandEQProperty_NumberOfBands: size = 4
    case kAudioOutputUnitProperty_IsRunning: size = 4; writable = false
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
        return put(unit.format(inScope == kAudioUnitScope_Global ? kAudioUnitScope_Output : inScope, inElement))
    case kAudioUnitProperty_SampleRate: return put(Float64(unit.format(inScope == kAudioUnitScope_Input ? 1 : 2, inElement).mSampleRate))
    case kAudioUnitProperty_MaximumFramesPerSlice: return put(unit.maxFrames)
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
    case kAudioUnitProperty_BypassEffect: return put(UInt32(0))
    default: return kAudioUnitErr_InvalidProperty
    }
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
    case kAudioUnitProperty_BypassEffect: return noErr
    default: return kAudioUnitErr_InvalidProperty
    }
}

/// Sets the render callback (`kAudioUnitProperty_SetRenderCallback`) from an
/// ``AURenderCallbackStruct``: the overload `&callbackStruct` picks, since the struct holds a
/// Swift function here and may not be passed as a raw pointer.
@discardableResult
public func AudioUnitSetProperty(_ inUnit: AudioUnit, _ inID: AudioUnitPropertyID, _ inScope: AudioUnitScope, _ inElement: AudioUnitElement,
                                 _ inData: UnsafePointer<AURenderCallbackStruct>, _ inDataSize: UInt32) -> OSStatus {
    AudioUnitSetProperty(inUnit, inID, inScope, inElement, Optional(UnsafeRawPointer(inData)), inDataSize)
}

/// Sets a parameter (any thread; picked up by the render thread at the next slice).
@discardableResult
public func AudioUnitSetParameter(_ inUnit: AudioUnit, _ inID: AudioUnitParameterID, _ inScope: AudioUnitScope, _ inElement: AudioUnitElement,
                                  _ inValue: AudioUnitParameterValue, _ inBufferOffsetInFrames: UInt32) -> OSStatus {
    guard let unit = compatUnit(inUnit) else { return kAudio_ParamError }
    guard let node = unit.node, let p = node.parameter(id: inID, scope: AUScope(rawValue: inScope) ?? .global, element: Int(inElement)) else {
        return kAudioUnitErr_InvalidParameter
    }
    do { try p.set(inValue) } catch { return osStatus(error, default: kAudioUnitErr_InvalidParameter) }
    unit.parameterValues[CompatUnit.ParamKey(id: inID, scope: inScope, element: inElement)] = inValue
    _ = inBufferOffsetInFrames
    return noErr
}

/// Reads a parameter.
@discardableResult
public func AudioUnitGetParameter(_ inUnit: AudioUnit, _ inID: AudioUnitParameterID, _ inScope: AudioUnitScope, _ inElement: AudioUnitElement,
                                  _ outValue: UnsafeMutablePointer<AudioUnitParameterValue>) -> OSStatus {
    guard let unit = compatUnit(inUnit) else { return kAudio_ParamError }
    guard let node = unit.node, let p = node.parameter(id: inID, scope: AUScope(rawValue: inScope) ?? .global, element: Int(inElement)) else {
        return kAudioUnitErr_InvalidParameter
    }
    outValue.pointee = p.value
    return noErr
}

// MARK: - AUGraph

/// An AUGraph: units as nodes, connections, input callbacks; initialised into one AudioGraph.
final class CompatGraph: @unchecked Sendable {
    var units: [(id: AUNode, unit: CompatUnit)] = []
    var nextID: AUNode = 1
    var connections: [(source: AUNode, output: UInt32, destination: AUNode, input: UInt32)] = []
    /// `AUGraphAddRenderNotify` callbacks (AudioUnitExtrasCompat.swift).
    var renderNotifies: [AURenderCallbackStruct] = []
    var opened = false
    var initialized = false
    var running = false
    var graph: AudioGraph?
    var renderPointers: UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>?

    deinit {
        graph?.stop()
        renderPointers?.deallocate()
        for u in units { _ = CompatHandles.remove(u.unit.handle, as: CompatUnit.self) }
    }

    func unit(_ id: AUNode) -> CompatUnit? { units.first { $0.id == id }?.unit }

    var liveNodes: [AUNode: AudioUnits.AUNode] = [:]
    var bridges: [AudioUnits.AUNode] = []

    func initialize() -> OSStatus {
        if initialized { return noErr }
        let outputs = units.filter { $0.unit.isOutput }
        guard outputs.count == 1, let out = outputs.first?.unit else { return kAUGraphErr_OutputNodeErr }
        let outFormat = out.format(kAudioUnitScope_Input, 0)
        do throws(AudioError) {
            let g = try AudioGraph(sampleRate: outFormat.mSampleRate, channels: Int(max(1, outFormat.mChannelsPerFrame)), maxFramesPerSlice: Int(out.maxFrames))
            graph = g
            liveNodes = [:]
            bridges = []
            let status = wire()
            guard status == noErr else {
                // The input side, if wire() built it, belongs to the graph just dropped.
                for u in units where u.unit.isOutput { u.unit.tearDownInput() }
                graph = nil
                return status
            }
            renderPointers = .allocate(capacity: Int(max(1, outFormat.mChannelsPerFrame)))
            initialized = true
            return noErr
        } catch {
            return osStatus(error, default: kAUGraphErr_InvalidConnection)
        }
    }

    /// Brings the AudioGraph in line with the units and connections and commits: nodes that
    /// stay keep their state (used by AUGraphInitialize and, on a running graph, AUGraphUpdate).
    func wire() -> OSStatus {
        guard let g = graph else { return kAudioUnitErr_Uninitialized }
        do throws(AudioError) {
            g.clearConnections()
            for b in bridges { try g.remove(b) }
            bridges = []
            let ids = Set(units.map(\.id))
            for (id, n) in liveNodes where !ids.contains(id) {
                try g.remove(n)
                liveNodes[id] = nil
            }
            for (id, u) in units where !u.isOutput && liveNodes[id] == nil {
                u.initialized = false
                _ = u.initialize()
                guard let n = u.node else { return kAUGraphErr_InvalidAudioUnit }
                try g.add(n)
                liveNodes[id] = n
            }
            // The output unit's input side (EnableIO on element 1): the microphone is the
            // source of element 1, and what goes into the unit passes its I/O node.
            let out = units.first { $0.unit.isOutput }?.unit
            var outTarget: AudioUnits.AUNode = g.output
            if let out, out.enableIO[1] == 1 {
                if let n = out.ioNode {
                    try g.connect(n, to: g.output)
                    outTarget = n
                } else if let n = try out.setUpInput(graph: g) {
                    outTarget = n
                }
            }
            for c in connections {
                let s: AudioUnits.AUNode
                var sourceBus = Int(c.output)
                if let u = unit(c.source), u.isOutput {
                    // Element 1 of the I/O unit: the captured input.
                    guard c.output == 1, let input = u.io?.node else { return kAUGraphErr_InvalidConnection }
                    s = input
                    sourceBus = 0
                } else {
                    guard let n = liveNodes[c.source] else { return kAUGraphErr_InvalidConnection }
                    s = n
                }
                let d: AudioUnits.AUNode = liveNodes[c.destination] ?? outTarget
                try g.connect(s, output: sourceBus, to: d, input: Int(c.input))
            }
            // Render callbacks on inputs that nothing feeds.
            for (id, u) in units {
                let target: AudioUnits.AUNode = u.isOutput ? outTarget : (liveNodes[id] ?? g.output)
                for bus in 0..<target.inputChannels.count where !connections.contains(where: { $0.destination == id && Int($0.input) == bus }) {
                    if let b = u.bridge(bus: UInt32(bus)) {
                        try g.add(b)
                        try g.connect(b, to: target, input: bus)
                        bridges.append(b)
                    }
                }
                u.initialized = true
            }
            try g.commit()
            return noErr
        } catch {
            return osStatus(error, default: kAUGraphErr_InvalidConnection)
        }
    }

    func start() -> OSStatus {
        guard initialized, let graph else { return kAudioUnitErr_Uninitialized }
        if running { return noErr }
        let out = units.first(where: { $0.unit.isOutput })?.unit
        if let out, case .output(generic: true) = out.component.kind { running = true; return noErr }
        do {
            // Input first (its ring fills while the output starts), as for a standalone I/O unit.
            try out?.startInput()
            try graph.start(out?.enableIO[0] == 0 ? .null(realTime: true) : CompatOutput.spec(), options: out?.outputOptions ?? AudioOutput.Options())
            running = true
            return noErr
        } catch {
            out?.io?.node.stop()
            return osStatus(error, default: kAUGraphErr_CannotDoInCurrentContext)
        }
    }

    func stop() -> OSStatus {
        graph?.stop()
        for u in units where u.unit.isOutput { u.unit.io?.node.stop() }
        running = false
        return noErr
    }
}

/// The graph `g` names; nil once it has been disposed of.
func compatGraph(_ g: AUGraph) -> CompatGraph? { CompatHandles.object(g, as: CompatGraph.self) }

/// Creates an empty graph.
@discardableResult
public func NewAUGraph(_ outGraph: UnsafeMutablePointer<AUGraph?>) -> OSStatus {
    outGraph.pointee = CompatHandles.make(CompatGraph())
    return noErr
}

/// Stops and frees a graph and its units. A graph already disposed of (a second call, or a stale
/// handle) returns `kAudio_ParamError`.
@discardableResult
public func DisposeAUGraph(_ inGraph: AUGraph) -> OSStatus {
    guard let g = CompatHandles.remove(inGraph, as: CompatGraph.self) else { return kAudio_ParamError }
    _ = g.stop()
    return noErr
}

/// Adds a node for the component `inDescription` describes.
@discardableResult
public func AUGraphAddNode(_ inGraph: AUGraph, _ inDescription: UnsafePointer<AudioComponentDescription>, _ outNode: UnsafeMutablePointer<AUNode>) -> OSStatus {
    guard let g = compatGraph(inGraph) else { return kAudio_ParamError }
    guard let c = AudioComponentFindNext(nil, inDescription), let component = compatComponent(c) else { return kAUGraphErr_InvalidAudioUnit }
    let unit = CompatUnit(component: component)
    unit.owner = g
    unit.handleSlot = CompatHandles.make(unit)
    g.units.append((g.nextID, unit))
    outNode.pointee = g.nextID
    g.nextID += 1
    return noErr
}

/// Removes a node and its connections.
@discardableResult
public func AUGraphRemoveNode(_ inGraph: AUGraph, _ inNode: AUNode) -> OSStatus {
    guard let g = compatGraph(inGraph) else { return kAudio_ParamError }
    guard let i = g.units.firstIndex(where: { $0.id == inNode }) else { return kAUGraphErr_NodeNotFound }
    guard !g.units[i].unit.isOutput || !g.initialized else { return kAUGraphErr_OutputNodeErr }
    _ = CompatHandles.remove(g.units[i].unit.handle, as: CompatUnit.self)
    g.units.remove(at: i)
    g.connections.removeAll { $0.source == inNode || $0.destination == inNode }
    return noErr
}

/// Opens the graph (the units exist from AUGraphAddNode on; this marks the graph open).
@discardableResult
public func AUGraphOpen(_ inGraph: AUGraph) -> OSStatus {
    guard let g = compatGraph(inGraph) else { return kAudio_ParamError }
    g.opened = true
    return noErr
}

/// Closes the graph.
@discardableResult
public func AUGraphClose(_ inGraph: AUGraph) -> OSStatus {
    guard let g = compatGraph(inGraph) else { return kAudio_ParamError }
    g.opened = false
    return noErr
}

/// The description and unit of a node (either out pointer may be nil).
@discardableResult
public func AUGraphNodeInfo(_ inGraph: AUGraph, _ inNode: AUNode, _ outDescription: UnsafeMutablePointer<AudioComponentDescription>?,
                            _ outAudioUnit: UnsafeMutablePointer<AudioUnit?>?) -> OSStatus {
    guard let u = compatGraph(inGraph)?.unit(inNode) else { return kAUGraphErr_NodeNotFound }
    outDescription?.pointee = u.component.description
    outAudioUnit?.pointee = u.handle
    return noErr
}

/// The number of nodes.
@discardableResult
public func AUGraphGetNodeCount(_ inGraph: AUGraph, _ outNumberOfNodes: UnsafeMutablePointer<UInt32>) -> OSStatus {
    guard let g = compatGraph(inGraph) else { return kAudio_ParamError }
    outNumberOfNodes.pointee = UInt32(g.units.count)
    return noErr
}

/// Connects output `inSourceOutputNumber` of `inSourceNode` to input `inDestInputNumber` of `inDestNode`.
@discardableResult
public func AUGraphConnectNodeInput(_ inGraph: AUGraph, _ inSourceNode: AUNode, _ inSourceOutputNumber: UInt32,
                                    _ inDestNode: AUNode, _ inDestInputNumber: UInt32) -> OSStatus {
    guard let g = compatGraph(inGraph) else { return kAudio_ParamError }
    guard let s = g.unit(inSourceNode), let d = g.unit(inDestNode) else { return kAUGraphErr_NodeNotFound }
    // An I/O unit is a source on element 1 only (its input, with EnableIO on element 1).
    guard !s.isOutput || inSourceOutputNumber == 1 else { return kAUGraphErr_InvalidConnection }
    if g.connections.contains(where: { $0.destination == inDestNode && $0.input == inDestInputNumber }) { return kAUGraphErr_InvalidConnection }
    if Int(inDestInputNumber) >= max(1, d.inputCount) { return kAudioUnitErr_InvalidElement }
    g.connections.append((inSourceNode, inSourceOutputNumber, inDestNode, inDestInputNumber))
    return noErr
}

/// Removes the connection into input `inDestInputNumber` of `inDestNode`.
@discardableResult
public func AUGraphDisconnectNodeInput(_ inGraph: AUGraph, _ inDestNode: AUNode, _ inDestInputNumber: UInt32) -> OSStatus {
    guard let g = compatGraph(inGraph) else { return kAudio_ParamError }
    g.connections.removeAll { $0.destination == inDestNode && $0.input == inDestInputNumber }
    return noErr
}

/// Sets the render callback of input `inDestInputNumber` of `inDestNode`.
@discardableResult
public func AUGraphSetNodeInputCallback(_ inGraph: AUGraph, _ inDestNode: AUNode, _ inDestInputNumber: UInt32,
                                        _ inInputCallback: UnsafePointer<AURenderCallbackStruct>) -> OSStatus {
    guard let u = compatGraph(inGraph)?.unit(inDestNode) else { return kAUGraphErr_NodeNotFound }
    u.callbacks[inDestInputNumber] = inInputCallback.pointee
    return noErr
}

/// Builds the render graph from the nodes and connections (format mismatches, cycles and a
/// missing or second output unit are errors).
@discardableResult
public func AUGraphInitialize(_ inGraph: AUGraph) -> OSStatus { compatGraph(inGraph)?.initialize() ?? kAudio_ParamError }

/// Undoes ``AUGraphInitialize(_:)``.
@discardableResult
public func AUGraphUninitialize(_ inGraph: AUGraph) -> OSStatus {
    guard let g = compatGraph(inGraph) else { return kAudio_ParamError }
    _ = g.stop()
    for u in g.units where u.unit.isOutput { u.unit.tearDownInput() }
    g.graph = nil
    g.liveNodes = [:]
    g.bridges = []
    g.initialized = false
    for u in g.units { u.unit.initialized = false }
    g.renderPointers?.deallocate()
    g.renderPointers = nil
    return noErr
}

/// Applies the edits made since the graph was initialised (nodes added or removed,
/// connections, input callbacks) to the running graph at once: the new plan is swapped in
/// atomically and nodes that stay keep their state. `outIsUpdated` is set true (the update is
/// synchronous).
@discardableResult
public func AUGraphUpdate(_ inGraph: AUGraph, _ outIsUpdated: UnsafeMutablePointer<DarwinBoolean>?) -> OSStatus {
    guard let g = compatGraph(inGraph) else { return kAudio_ParamError }
    outIsUpdated?.pointee = true
    return g.initialized ? g.wire() : noErr
}

/// Starts the graph's output unit on the output `OAT_OUTPUT` names.
@discardableResult
func builtinAUGraphStart(_ inGraph: AUGraph) -> OSStatus { compatGraph(inGraph)?.start() ?? kAudio_ParamError }

/// Stops the graph.
@discardableResult
func builtinAUGraphStop(_ inGraph: AUGraph) -> OSStatus { compatGraph(inGraph)?.stop() ?? kAudio_ParamError }

/// Whether the graph is open / initialised / running.
@discardableResult
public func AUGraphIsOpen(_ inGraph: AUGraph, _ outIsOpen: UnsafeMutablePointer<DarwinBoolean>) -> OSStatus {
    guard let g = compatGraph(inGraph) else { return kAudio_ParamError }
    outIsOpen.pointee = DarwinBoolean(g.opened)
    return noErr
}

/// Whether the graph is initialised.
@discardableResult
public func AUGraphIsInitialized(_ inGraph: AUGraph, _ outIsInitialized: UnsafeMutablePointer<DarwinBoolean>) -> OSStatus {
    guard let g = compatGraph(inGraph) else { return kAudio_ParamError }
    outIsInitialized.pointee = DarwinBoolean(g.initialized)
    return noErr
}

/// Whether the graph is running.
@discardableResult
public func AUGraphIsRunning(_ inGraph: AUGraph, _ outIsRunning: UnsafeMutablePointer<DarwinBoolean>) -> OSStatus {
    guard let g = compatGraph(inGraph) else { return kAudio_ParamError }
    outIsRunning.pointee = DarwinBoolean(g.running)
    return noErr
}
