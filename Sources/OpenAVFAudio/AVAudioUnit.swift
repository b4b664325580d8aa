// Apple's class layer over audio units: AVAudioUnit (a node made from an audio component
// description), AVAudioUnitEffect and AVAudioUnitTimeEffect, and instantiate(with:options:)
// creating the built-in effects from their descriptions.
import Foundation
import OpenAudioToolbox
internal import OATUnits

/// A built-in audio unit an ``AVAudioUnit`` can be made from: its description (manufacturer
/// Apple), its name and the render node it runs on.
struct AVAudioUnitComponent: Sendable {
    let type: UInt32
    let subType: UInt32
    /// The name without the manufacturer (`AUReverb2`), as Apple's `AVAudioUnit.name`.
    let name: String
    let make: @Sendable (_ channels: Int) -> OATUnits.RenderNode

    /// The component's full description (flags 0, as the built-in components report).
    var description: AudioComponentDescription {
        AudioComponentDescription(componentType: type, componentSubType: subType, componentManufacturer: kAudioUnitManufacturer_Apple,
                                  componentFlags: 0, componentFlagsMask: 0)
    }

    /// The version every built-in component reports (`0xMMMMmmDD`: 1.0.0, as `AudioComponentGetVersion`).
    static let version = 0x0001_0000

    /// The effects (`kAudioUnitType_Effect`) and time effects (`kAudioUnitType_FormatConverter`)
    /// that exist as nodes here.
    static let builtins: [AVAudioUnitComponent] = [
        AVAudioUnitComponent(type: kAudioUnitType_Effect, subType: kAudioUnitSubType_NBandEQ, name: "AUNBandEQ") { ch in
            // Apple's AUNBandEQ: 16 bands, each bypassed until set up.
            AUNBandEQNode(channels: ch, bands: (0..<16).map { _ in AUEQBand(.parametric, frequency: 1000, bypass: true) })
        },
        AVAudioUnitComponent(type: kAudioUnitType_Effect, subType: kAudioUnitSubType_Reverb2, name: "AUReverb2") { AUReverbNode(channels: $0) },
        AVAudioUnitComponent(type: kAudioUnitType_Effect, subType: kAudioUnitSubType_Delay, name: "AUDelay") { AUDelayNode(channels: $0) },
        AVAudioUnitComponent(type: kAudioUnitType_Effect, subType: kAudioUnitSubType_Distortion, name: "AUDistortion") { AUDistortionNode(channels: $0) },
        AVAudioUnitComponent(type: kAudioUnitType_Effect, subType: kAudioUnitSubType_DynamicsProcessor, name: "AUDynamicsProcessor") { AUDynamicsNode(channels: $0) },
        AVAudioUnitComponent(type: kAudioUnitType_Effect, subType: kAudioUnitSubType_PeakLimiter, name: "AUPeakLimiter") { AUPeakLimiterNode(channels: $0) },
        AVAudioUnitComponent(type: kAudioUnitType_FormatConverter, subType: kAudioUnitSubType_NewTimePitch, name: "AUNewTimePitch") {
            AUTimePitchNode(channels: $0, algorithm: .spectral)
        },
        AVAudioUnitComponent(type: kAudioUnitType_FormatConverter, subType: kAudioUnitSubType_TimePitch, name: "AUTimePitch") {
            AUTimePitchNode(channels: $0, algorithm: .timeDomain)
        },
        AVAudioUnitComponent(type: kAudioUnitType_FormatConverter, subType: kAudioUnitSubType_Varispeed, name: "AUVarispeed") { AUVarispeedNode(channels: $0) },
    ] + AUFilterUnitKind.allCases.map { kind in
        AVAudioUnitComponent(type: kAudioUnitType_Effect, subType: kind.componentSubType, name: kind.appleName) { AUFilterUnitNode(kind, channels: $0) }
    }

    /// The built-in component `d` describes (a manufacturer of 0 matches any, as in
    /// `AudioComponentFindNext`).
    static func find(_ d: AudioComponentDescription) -> AVAudioUnitComponent? {
        builtins.first { c in
            c.type == d.componentType && c.subType == d.componentSubType
                && (d.componentManufacturer == 0 || d.componentManufacturer == kAudioUnitManufacturer_Apple)
        }
    }
}

/// A node implemented by an audio unit (Apple's `AVAudioUnit`): the effects
/// (``AVAudioUnitEffect``) and time effects (``AVAudioUnitTimeEffect``) derive from it, so
/// `let effects: [AVAudioUnit] = [reverb, eq]` holds any of them.
///
/// A unit made from a description runs the built-in node for it, or the node of a component
/// registered with `AudioComponentRegister` (its Swift node form), with the unit's default
/// parameters; ``audioUnit``, ``AVAudioNode/auAudioUnit`` and ``loadPreset(at:)`` set others.
open class AVAudioUnit: AVAudioNode, @unchecked Sendable {
    let component: AVAudioUnitComponent?
    /// A component of OpenAudioToolbox's registry (registered ones, and the built-in units
    /// OpenAVFAudio has no class for) when ``component`` is nil.
    let registered: _AudioComponentNodeSource?
    private let givenDescription: AudioComponentDescription
    /// The bypass state the effect classes expose (applied to the unit when it is built).
    var bypassState = false
    /// A unit the host renders itself (an I/O unit ``instantiate(with:options:completionHandler:)``
    /// made): its ``AVAudioNode/auAudioUnit`` and ``audioUnit`` are that unit's.
    let standalone: AUAudioUnit?

    /// NSObject's plain initialiser, as Apple's class has it (public): a unit of no component,
    /// its description all zero; in an engine it passes audio through. Subclasses and
    /// ``instantiate(with:options:completionHandler:)`` make units of a component.
    public convenience init() { self.init(componentDescription: AudioComponentDescription()) }

    init(componentDescription: AudioComponentDescription, inputs: Int = 1) {
        // An all-zero description is "no component" (the plain inits), never a wildcard search
        // that would pick whichever unit comes first.
        let none = componentDescription.componentType == 0 && componentDescription.componentSubType == 0
            && componentDescription.componentManufacturer == 0
        component = none ? nil : AVAudioUnitComponent.find(componentDescription)
        registered = none || component != nil ? nil : _AudioComponentNodeSource(matching: componentDescription)
        givenDescription = componentDescription
        standalone = nil
        super.init(inputs: inputs, outputs: 1)
    }

    /// A unit over `unit`, a unit of its own (an I/O unit): in an engine it passes audio through.
    init(standalone unit: AUAudioUnit) {
        component = nil
        registered = nil
        givenDescription = unit.componentDescription
        standalone = unit
        super.init(inputs: 1, outputs: 1)
    }

    /// The description of the underlying audio unit (for a built-in or registered unit its full
    /// description).
    open var audioComponentDescription: AudioComponentDescription { component?.description ?? registered?.description ?? givenDescription }
    /// The audio unit's name (`AUReverb2`; a registered unit's name after its `Manufacturer: `
    /// part; empty for an unknown component).
    open var name: String { component?.name ?? registered.map { Self.splitName($0.name).name } ?? standalone?.audioUnitName ?? "" }
    /// The audio unit's manufacturer (`Apple` for the built-in units; a registered unit's name
    /// before its `: `; empty for an unknown component).
    open var manufacturerName: String {
        component != nil ? "Apple" : registered.map { Self.splitName($0.name).manufacturer } ?? standalone?.manufacturerName ?? ""
    }
    /// The audio unit's version (`0xMMMMmmDD`; 0 for an unknown component).
    open var version: Int {
        component != nil ? AVAudioUnitComponent.version : registered.map { Int($0.version) } ?? standalone.map { Int($0.componentVersion) } ?? 0
    }

    /// `"Manufacturer: Name"` split as Apple's components name themselves.
    static func splitName(_ full: String) -> (manufacturer: String, name: String) {
        guard let r = full.range(of: ": ") else { return ("", full) }
        return (String(full[..<r.lowerBound]), String(full[r.upperBound...]))
    }

    /// The node the unit's parameters live in: the engine's unit, or before there is one the
    /// node the ``audioUnit`` handle drives (nil: neither yet).
    var parameterNode: OATUnits.RenderNode? { unit ?? handles.node }

    /// Creates the audio unit `audioComponentDescription` names and hands it to
    /// `completionHandler` on another thread (Apple's `instantiate(with:options:completionHandler:)`):
    /// an ``AVAudioUnitEffect`` for an effect (`kAudioUnitType_Effect`), an
    /// ``AVAudioUnitTimeEffect`` for a format converter (`kAudioUnitType_FormatConverter`:
    /// varispeed, time-pitch), also for a unit registered with `AudioComponentRegister` (its
    /// Swift node form); an ``AVAudioUnit`` for an I/O unit (`kAudioUnitType_Output`:
    /// DefaultOutput, HALOutput, RemoteIO, VoiceProcessingIO, GenericOutput), whose
    /// ``AVAudioNode/auAudioUnit`` the host renders itself (`outputProvider`, `startHardware()`).
    /// Another component gives a nil unit and an `NSOSStatusErrorDomain` error (-3000).
    /// `options` (in or out of process) make no difference here.
    open class func instantiate(with audioComponentDescription: AudioComponentDescription, options: AudioComponentInstantiationOptions = [],
                                completionHandler: @escaping @Sendable (AVAudioUnit?, (any Error)?) -> Void) {
        let result = Result { try make(audioComponentDescription) }
        DispatchQueue.global().async {
            switch result {
            case .success(let unit): completionHandler(unit, nil)
            case .failure(let error): completionHandler(nil, error)
            }
        }
    }

    /// Creates the audio unit `audioComponentDescription` names (the async form of
    /// ``instantiate(with:options:completionHandler:)``); throws an `NSOSStatusErrorDomain`
    /// error for a component that is neither built in nor registered.
    open class func instantiate(with audioComponentDescription: AudioComponentDescription,
                                options: AudioComponentInstantiationOptions = []) async throws -> AVAudioUnit {
        try make(audioComponentDescription)
    }

    /// The Component Manager's `invalidComponentID`: no such component.
    static let componentNotFound: OSStatus = -3000

    private static func make(_ d: AudioComponentDescription) throws -> AVAudioUnit {
        if d.componentType == kAudioUnitType_Output {
            return AVAudioUnit(standalone: try AUAudioUnit(componentDescription: d))
        }
        guard AVAudioUnitComponent.find(d) != nil || _AudioComponentNodeSource(matching: d) != nil else {
            throw avError(componentNotFound, "AVAudioUnit.instantiate: no audio unit '\(fourCCText(d.componentType))'/'\(fourCCText(d.componentSubType))'/'\(fourCCText(d.componentManufacturer))' (the built-in effects, time-pitch and varispeed units, the I/O units and those registered with AudioComponentRegister are available)")
        }
        if d.componentType == kAudioUnitType_FormatConverter { return AVAudioUnitTimeEffect(audioComponentDescription: d) }
        return AVAudioUnitEffect(audioComponentDescription: d)
    }

    /// The built-in node for the description (a pass-through for an unknown one).
    override func makeUnit(rate: Double, inputChannels: Int, outputChannels: Int) -> OATUnits.RenderNode {
        component?.make(max(1, outputChannels)) ?? registered?.makeNode(channels: max(1, outputChannels))
            ?? super.makeUnit(rate: rate, inputChannels: inputChannels, outputChannels: outputChannels)
    }

    override func unitDidLoad() {
        unit?.isBypassed = bypassState
        push()
    }

    /// The names of the unit's factory presets, in number order (none by default).
    var factoryPresetNames: [String] { [] }

    /// Loads factory preset `number` (nothing by default).
    func loadFactoryPreset(number: Int) {}

    /// A parameter was set through ``audioUnit``: the subclasses update the property it stands for.
    func handleDidSetParameter(_ id: AudioUnitParameterID, scope: AudioUnitScope, element: AudioUnitElement, value: AudioUnitParameterValue) {}

    /// An effect's unit stays (with its tail and state) while its width is the same.
    override func canKeep(_ unit: OATUnits.RenderNode, rate: Double, inputChannels: Int, outputChannels: Int) -> Bool {
        unit.inputChannels == [outputChannels] && unit.outputChannels == [outputChannels]
    }

    /// Pushes the subclass's parameters to its unit.
    func push() {}

    func setBypass(_ on: Bool) {
        bypassState = on
        parameterNode?.isBypassed = on
        push()
    }
}

/// Four printable characters of a four-character code (its number when not printable).
func fourCCText(_ v: UInt32) -> String {
    let bytes = [UInt8(v >> 24 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)]
    guard bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return String(v) }
    return String(decoding: bytes, as: UTF8.self)
}

/// An audio unit that processes audio in real time, as many frames out as in (Apple's
/// `AVAudioUnitEffect`): the EQ, reverb, delay and distortion derive from it.
open class AVAudioUnitEffect: AVAudioUnit, @unchecked Sendable {
    /// Passes the input through untouched when true (the graph skips the unit).
    open var bypass: Bool {
        get { bypassState }
        set { setBypass(newValue) }
    }

    /// An effect running the built-in unit `audioComponentDescription` names (`kAudioUnitType_Effect`:
    /// AUNBandEQ, AUReverb2, AUDelay, AUDistortion, AUDynamicsProcessor, AUPeakLimiter), with
    /// its default parameters. A description of no built-in unit gives an effect that passes
    /// audio through (Apple raises an exception).
    public init(audioComponentDescription: AudioComponentDescription) {
        super.init(componentDescription: audioComponentDescription)
    }

    /// An effect of no component (it passes audio through); the subclasses name theirs.
    public init() { super.init(componentDescription: AudioComponentDescription()) }
}

/// An audio unit that processes audio off the real-time frame count, its output rate its own
/// (Apple's `AVAudioUnitTimeEffect`, `kAudioUnitType_FormatConverter`): time-pitch and varispeed
/// derive from it.
open class AVAudioUnitTimeEffect: AVAudioUnit, @unchecked Sendable {
    /// Passes the input through untouched when true.
    open var bypass: Bool {
        get { bypassState }
        set { setBypass(newValue) }
    }

    /// A time effect running the built-in unit `audioComponentDescription` names
    /// (`kAudioUnitType_FormatConverter`: AUNewTimePitch, AUTimePitch, AUVarispeed), with its
    /// default parameters. A description of no built-in unit gives a unit that passes audio
    /// through (Apple raises an exception).
    public init(audioComponentDescription: AudioComponentDescription) {
        super.init(componentDescription: audioComponentDescription)
    }
}

extension AudioComponentDescription {
    /// An Apple unit's description (flags 0).
    static func apple(_ type: UInt32, _ subType: UInt32) -> AudioComponentDescription {
        AudioComponentDescription(componentType: type, componentSubType: subType, componentManufacturer: kAudioUnitManufacturer_Apple,
                                  componentFlags: 0, componentFlagsMask: 0)
    }
}
