// Audio Toolbox–compatible AudioComponent.h: component descriptions, finding, instantiating
// and registering components (every unit is an OATUnits node, see CompatUnit.swift).

import OATCore
import OATDevices
import OATFiles
import OATUnits
import FoundationEssentials
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// MARK: - Types

// `AudioComponentDescription`, `AudioComponent`, `AudioComponentInstance`, and the plug-in types
// (`AudioComponentPlugInInterface`, `AudioComponentMethod`, `AudioComponentFactoryFunction`) are
// Apple's C declarations (COATAudioToolboxTypes).

extension AudioComponentDescription: @retroactive Equatable {
    /// Field-by-field equality.
    public static func == (lhs: AudioComponentDescription, rhs: AudioComponentDescription) -> Bool {
        lhs.componentType == rhs.componentType && lhs.componentSubType == rhs.componentSubType
            && lhs.componentManufacturer == rhs.componentManufacturer && lhs.componentFlags == rhs.componentFlags
            && lhs.componentFlagsMask == rhs.componentFlagsMask
    }
}

/// An audio unit (Apple's `AudioUnit`).

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

// MARK: - Components

enum CompatUnitKind: Sendable {
    case output(generic: Bool), mixer, eq, reverb, delay, varispeed, converter, dynamics, limiter, splitter
    /// Units defined in other files (time-pitch, players, AudioComponentRegister): a node factory.
    case custom(@Sendable (CompatUnit) -> OATUnits.RenderNode?)
    /// A C plug-in registered with Apple's factory function type (AudioComponentPlugIn.swift).
    case plugIn(UncheckedSendable<AudioComponentFactoryFunction>)
}

struct CompatComponent: Sendable {
    let description: AudioComponentDescription
    let kind: CompatUnitKind
    let name: String
    /// `0xMMMMmmDD` (``AudioComponentGetVersion(_:_:)``).
    var version: UInt32 = 0x0001_0000
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
        if componentMatches(want, c) {
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
    if case .plugIn(let factory) = c.kind { return newPlugInInstance(c, factory.value, outInstance) }
    let unit = CompatUnit(component: c)
    unit.handleSlot = CompatHandles.make(unit)
    outInstance.pointee = unit.handle
    return noErr
}

/// Disposes of an instance (stopping it first). An instance already disposed of (a second call,
/// or a stale handle) returns `kAudio_ParamError`.
@discardableResult
public func AudioComponentInstanceDispose(_ inInstance: AudioComponentInstance) -> OSStatus {
    if let status = disposePlugInInstance(inInstance) { return status }
    // The audio unit of an AVAudioUnit belongs to it (HostedAudioUnit.swift).
    if compatUnit(inInstance)?.isHosted == true { return kAudioUnitErr_CannotDoInCurrentContext }
    guard let unit = CompatHandles.remove(inInstance, as: CompatUnit.self) else { return kAudio_ParamError }
    unit.uninitialize()
    unit.extras.slices?.sweep()
    unit.extras.slices?.stop()
    return noErr
}

// MARK: - Components defined here

/// Registered components (`AudioComponentRegister`).
private let registeredComponents = Locked<[CompatComponent]>([])

/// Every component: the built-in ones, the ones in this file, the registered ones.
var compatComponents: [CompatComponent] { builtinCompatComponents + extraCompatComponents + registeredComponents.withLock { $0 } }

private let extraCompatComponents: [CompatComponent] = {
    func d(_ t: UInt32, _ s: UInt32) -> AudioComponentDescription {
        AudioComponentDescription(componentType: t, componentSubType: s, componentManufacturer: kAudioUnitManufacturer_Apple, componentFlags: 0, componentFlagsMask: 0)
    }
    let player: @Sendable (CompatUnit) -> OATUnits.RenderNode? = { unit in
        AUPlayerNode(channels: unit.channels(kAudioUnitScope_Output, 0), bufferFrames: Int(unit.extras.bufferFrames), name: "file player")
    }
    return [
        CompatComponent(description: d(kAudioUnitType_FormatConverter, kAudioUnitSubType_NewTimePitch),
                        kind: .custom({ unit in AUTimePitchNode(channels: unit.channels(kAudioUnitScope_Input, 0), algorithm: .spectral) }),
                        name: "Apple: AUNewTimePitch"),
        CompatComponent(description: d(kAudioUnitType_FormatConverter, kAudioUnitSubType_TimePitch),
                        kind: .custom({ unit in AUTimePitchNode(channels: unit.channels(kAudioUnitScope_Input, 0), algorithm: .timeDomain) }),
                        name: "Apple: AUTimePitch"),
        CompatComponent(description: d(kAudioUnitType_Effect, kAudioUnitSubType_Distortion),
                        kind: .custom({ AUDistortionNode(channels: $0.channels(kAudioUnitScope_Input, 0)) }), name: "Apple: AUDistortion"),
        CompatComponent(description: d(kAudioUnitType_Generator, kAudioUnitSubType_AudioFilePlayer), kind: .custom(player), name: "Apple: AUAudioFilePlayer"),
        CompatComponent(description: d(kAudioUnitType_Mixer, kAudioUnitSubType_SpatialMixer), kind: .custom(makeSpatialMixerNode), name: "Apple: AUSpatialMixer"),
        CompatComponent(description: d(kAudioUnitType_Generator, kAudioUnitSubType_ScheduledSoundPlayer),
                        kind: .custom({ unit in
                            let tracker = unit.extras.slices ?? SliceTracker()
                            unit.extras.slices = tracker
                            return ScheduledSlicePlayerNode(channels: unit.channels(kAudioUnitScope_Output, 0), signal: tracker.signal)
                        }),
                        name: "Apple: AUScheduledSoundPlayer"),
    ] + AUFilterUnitKind.allCases.map { kind in
        CompatComponent(description: d(kAudioUnitType_Effect, kind.componentSubType),
                        kind: .custom({ AUFilterUnitNode(kind, channels: $0.channels(kAudioUnitScope_Input, 0)) }), name: "Apple: " + kind.appleName)
    } + musicDeviceComponents
}()

extension AUFilterUnitKind {
    /// The unit's `kAudioUnitSubType_*` (its component type is `kAudioUnitType_Effect`).
    package var componentSubType: UInt32 {
        switch self {
        case .lowPass: kAudioUnitSubType_LowPassFilter
        case .highPass: kAudioUnitSubType_HighPassFilter
        case .bandPass: kAudioUnitSubType_BandPassFilter
        case .highShelf: kAudioUnitSubType_HighShelfFilter
        case .lowShelf: kAudioUnitSubType_LowShelfFilter
        case .parametricEQ: kAudioUnitSubType_ParametricEQ
        }
    }

    /// Apple's name of the unit (its component's name without the manufacturer).
    package var appleName: String {
        switch self {
        case .lowPass: "AULowpass"
        case .highPass: "AUHipass"
        case .bandPass: "AUBandpass"
        case .highShelf: "AUHighShelfFilter"
        case .lowShelf: "AULowShelfFilter"
        case .parametricEQ: "AUParametricEQ"
        }
    }
}

/// Registers a component plug-in (Apple's `AudioComponentRegister`): afterwards
/// `AudioComponentFindNext` finds `inDesc`, and `AudioComponentInstanceNew` calls `inFactory` for
/// an `AudioComponentPlugInInterface` and its `Open`; the AudioUnit calls on the instance
/// (initialise, properties, parameters, render, reset) call the methods its `Lookup` returns, and
/// `AudioComponentInstanceDispose` calls `Close`. ``AudioComponentCopyName(_:_:)`` and
/// ``AudioComponentGetVersion(_:_:)`` answer `inName` and `inVersion`. Different: such a unit
/// cannot be a node of an AUGraph here (`AUGraphAddNode` answers `kAUGraphErr_InvalidAudioUnit`);
/// render it with `AudioUnitRender`.
public func AudioComponentRegister(_ inDesc: UnsafePointer<AudioComponentDescription>, _ inName: CFString, _ inVersion: UInt32,
                                   _ inFactory: AudioComponentFactoryFunction) -> AudioComponent {
    register(CompatComponent(description: registeredDescription(inDesc), kind: .plugIn(UncheckedSendable(inFactory)), name: inName, version: inVersion))
}

/// Registers a unit implemented as a Swift OATUnits node (an OpenAudioToolbox addition beside
/// Apple's C plug-in form): `AudioComponentInstanceNew` creates units whose node `inFactory` makes
/// (called again when formats change), driven by the C API like the built-in units (stream
/// formats, render callbacks on its inputs, parameters by ID, graphs).
public func AudioComponentRegister(_ inDesc: UnsafePointer<AudioComponentDescription>, _ inName: CFString, _ inVersion: UInt32,
                                   _ inFactory: @escaping (UnsafePointer<AudioComponentDescription>) -> OATUnits.RenderNode?) -> AudioComponent {
    let description = registeredDescription(inDesc)
    let box = UncheckedSendable(inFactory)
    return register(CompatComponent(description: description, kind: .custom({ _ in
        var d = description
        return box.value(&d)
    }), name: inName, version: inVersion))
}

/// A registered description: flags and mask cleared.
private func registeredDescription(_ inDesc: UnsafePointer<AudioComponentDescription>) -> AudioComponentDescription {
    var registered = inDesc.pointee
    registered.componentFlags = 0
    registered.componentFlagsMask = 0
    return registered
}

/// Adds a registered component; returns its handle.
private func register(_ component: CompatComponent) -> AudioComponent {
    let index = registeredComponents.withLock { list -> Int in
        list.append(component)
        return list.count - 1
    }
    return OpaquePointer(bitPattern: builtinCompatComponents.count + extraCompatComponents.count + index + 1)!
}

// MARK: - Flags, counting, names, versions, instances

/// Flags of a component (Apple's `AudioComponentFlags`).
public struct AudioComponentFlags: OptionSet, Sendable, Hashable {
    /// The raw bits.
    public var rawValue: UInt32
    /// Creates flags.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// Found only by a search that names type, subtype and manufacturer.
    public static let unsearchable = AudioComponentFlags(rawValue: 1)
    /// Safe to open in a sandboxed process (every component here).
    public static let sandboxSafe = AudioComponentFlags(rawValue: 2)
    /// A version 3 audio unit (none here).
    public static let isV3AudioUnit = AudioComponentFlags(rawValue: 4)
    /// Must be created with ``AudioComponentInstantiate(_:_:_:)`` (none here).
    public static let requiresAsyncInstantiation = AudioComponentFlags(rawValue: 8)
    /// Can be loaded into the current process (every component here).
    public static let canLoadInProcess = AudioComponentFlags(rawValue: 0x10)
}

/// How ``AudioComponentInstantiate(_:_:_:)`` loads a component (Apple's
/// `AudioComponentInstantiationOptions`). Every component here runs in process.
public struct AudioComponentInstantiationOptions: OptionSet, Sendable, Hashable {
    /// The raw bits.
    public var rawValue: UInt32
    /// Creates options.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// Load out of process (not available here: loaded in process).
    public static let loadOutOfProcess = AudioComponentInstantiationOptions(rawValue: 1)
    /// Load in process.
    public static let loadInProcess = AudioComponentInstantiationOptions(rawValue: 2)
    /// Set by the system on an instance loaded remotely (never here).
    public static let loadedRemotely = AudioComponentInstantiationOptions(rawValue: 1 << 31)
}

/// Whether `c` matches `want` as ``AudioComponentFindNext(_:_:)`` matches (0 is a wildcard).
func componentMatches(_ want: AudioComponentDescription, _ c: AudioComponentDescription) -> Bool {
    (want.componentType == 0 || want.componentType == c.componentType)
        && (want.componentSubType == 0 || want.componentSubType == c.componentSubType)
        && (want.componentManufacturer == 0 || want.componentManufacturer == c.componentManufacturer)
}

/// The number of components matching `inDesc` (Apple's `AudioComponentCount`; 0 in type,
/// subtype or manufacturer matches anything).
public func AudioComponentCount(_ inDesc: UnsafePointer<AudioComponentDescription>) -> UInt32 {
    let want = inDesc.pointee
    return UInt32(compatComponents.filter { componentMatches(want, $0.description) }.count)
}

/// The name of a component, e.g. `"Apple: AUNBandEQ"` (Apple's `AudioComponentCopyName`).
/// Different: the name comes back as a Swift `String` (`CFString` here) in `outName`, not as an
/// `Unmanaged<CFString>` to release.
public func AudioComponentCopyName(_ inComponent: AudioComponent, _ outName: UnsafeMutablePointer<CFString?>) -> OSStatus {
    guard let c = compatComponent(inComponent) else { return kAudio_ParamError }
    outName.pointee = c.name
    return noErr
}

/// The version of a component as `0xMMMMmmDD` (Apple's `AudioComponentGetVersion`): the version
/// given to `AudioComponentRegister`, 0x00010000 for the built-in units.
public func AudioComponentGetVersion(_ inComponent: AudioComponent, _ outVersion: UnsafeMutablePointer<UInt32>) -> OSStatus {
    guard let c = compatComponent(inComponent) else { return kAudio_ParamError }
    outVersion.pointee = c.version
    return noErr
}

/// The component an instance was made from (Apple's `AudioComponentInstanceGetComponent`).
/// A disposed-of instance gives a component that every call rejects with `kAudio_ParamError`.
public func AudioComponentInstanceGetComponent(_ inInstance: AudioComponentInstance) -> AudioComponent {
    if let p = plugInInstance(inInstance),
       let i = compatComponents.firstIndex(where: { $0.description == p.component.description && $0.name == p.component.name }) {
        return OpaquePointer(bitPattern: i + 1)!
    }
    guard let unit = compatUnit(inInstance),
          let i = compatComponents.firstIndex(where: { $0.description == unit.component.description && $0.name == unit.component.name })
    else { return OpaquePointer(bitPattern: -1)! }
    return OpaquePointer(bitPattern: i + 1)!
}

/// Whether an instance implements the call a selector names (Apple's
/// `AudioComponentInstanceCanDo`): the `kAudioUnit*Select` calls every unit here implements
/// (not `kAudioUnitComplexRenderSelect`, `kAudioUnitProcessSelect`, `kAudioUnitProcessMultipleSelect`),
/// and `kAudioOutputUnitStartSelect`/`StopSelect` on output units.
public func AudioComponentInstanceCanDo(_ inInstance: AudioComponentInstance, _ inSelectorID: Int16) -> Bool {
    if let p = plugInInstance(inInstance) { return p.canDo(Int(inSelectorID)) }
    guard let unit = compatUnit(inInstance) else { return false }
    switch Int(inSelectorID) {
    case kAudioUnitInitializeSelect, kAudioUnitUninitializeSelect, kAudioUnitGetPropertyInfoSelect, kAudioUnitGetPropertySelect,
         kAudioUnitSetPropertySelect, kAudioUnitAddPropertyListenerSelect, kAudioUnitRemovePropertyListenerSelect,
         kAudioUnitRemovePropertyListenerWithUserDataSelect, kAudioUnitAddRenderNotifySelect, kAudioUnitRemoveRenderNotifySelect,
         kAudioUnitGetParameterSelect, kAudioUnitSetParameterSelect, kAudioUnitScheduleParametersSelect, kAudioUnitRenderSelect,
         kAudioUnitResetSelect:
        return true
    case kAudioOutputUnitStartSelect, kAudioOutputUnitStopSelect:
        return unit.isOutput
    default:
        return false
    }
}

/// Creates an instance and hands it to `inCompletionHandler` (Apple's
/// `AudioComponentInstantiate`). Every component here loads in process, so the handler runs
/// before this returns, with the result of ``AudioComponentInstanceNew(_:_:)``.
public func AudioComponentInstantiate(_ inComponent: AudioComponent, _ inOptions: AudioComponentInstantiationOptions,
                                      _ inCompletionHandler: @escaping (AudioComponentInstance?, OSStatus) -> Void) {
    var instance: AudioComponentInstance?
    let status = AudioComponentInstanceNew(inComponent, &instance)
    _ = inOptions
    inCompletionHandler(status == noErr ? instance : nil, status)
}
