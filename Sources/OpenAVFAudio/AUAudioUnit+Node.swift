// AUAudioUnit (Apple's host interface to an audio unit) for an engine's nodes, and
// AVAudioUnit.loadPreset(at:) reading .aupreset files.
import Foundation
import OpenAudioToolbox
internal import OATUnits

/// The host's interface to an audio unit (Apple's `AUAudioUnit`), bridged to an AudioUnit
/// handle as Apple bridges version 2 units: its ``parameterTree`` drives the unit,
/// ``fullState`` is `kAudioUnitProperty_ClassInfo`.
///
/// Two kinds: the unit behind a node of an engine (``AVAudioNode/auAudioUnit``; the engine
/// renders it, ``shouldBypassEffect`` is the node's bypass), and a unit of its own made from
/// any component `AudioComponentFindNext` finds (``init(componentDescription:options:)``, output
/// units included), which the host renders: its busses, ``renderBlock``, and for an I/O unit
/// ``outputProvider``, ``inputHandler`` and ``startHardware()`` (AUAudioUnit+Host.swift).
/// There is no AUv3 plug-in hosting (no subclass registration, no out-of-process units).
open class AUAudioUnit: NSObject, @unchecked Sendable {
    private weak var node: AVAudioNode?
    let handle: AudioUnit?
    /// A unit of its own (made from a description) disposes of its handle when it goes.
    let ownsHandle: Bool
    /// The host side's state: busses, the provider and handler slots (AUAudioUnit+Host.swift).
    let host = AUHostState()
    private let lock = NSLock()
    private var tree: AUParameterTree?
    private var treeMade = false
    private var preset: AUAudioUnitPreset?
    private var requestedMaximumFrames: AUAudioFrameCount?
    /// The component's description.
    public let componentDescription: AudioComponentDescription
    /// The component's name, `"Manufacturer: Name"` (`"Apple: AUReverb2"`; nil when the node
    /// has no audio unit).
    public let componentName: String?
    /// The audio unit's name, from the component's name (`"AUReverb2"`).
    public let audioUnitName: String?
    /// The manufacturer's name, from the component's name (`"Apple"`).
    public let manufacturerName: String?
    /// The component's version (`0xMMMMmmDD`).
    public let componentVersion: UInt32

    init(node: AVAudioNode, handle: AudioUnit?) {
        self.node = node
        self.handle = handle
        ownsHandle = false
        if let unit = node as? AVAudioUnit, unit.component != nil || unit.registered != nil {
            componentDescription = unit.audioComponentDescription
            componentName = unit.fullName
            audioUnitName = unit.name
            manufacturerName = unit.manufacturerName
            componentVersion = UInt32(unit.version)
        } else if handle != nil {
            // An I/O node's unit.
            componentDescription = AudioComponentDescription.apple(kAudioUnitType_Output, kAudioUnitSubType_HALOutput)
            componentName = "Apple: AUHAL"
            audioUnitName = "AUHAL"
            manufacturerName = "Apple"
            componentVersion = 0x0001_0000
        } else {
            componentDescription = AudioComponentDescription()
            componentName = nil
            audioUnitName = nil
            manufacturerName = nil
            componentVersion = 0
        }
    }

    /// Makes a unit of its own from the component `componentDescription` names (Apple's
    /// `init(componentDescription:options:)`): any component `AudioComponentFindNext` finds, the
    /// output units (DefaultOutput, HALOutput, RemoteIO, VoiceProcessingIO, GenericOutput)
    /// included. Throws an `NSOSStatusErrorDomain` error (-3000, `invalidComponentID`) when no
    /// component matches, or the status `AudioComponentInstanceNew` gave. `options` (in or out
    /// of process) make no difference here.
    public init(componentDescription: AudioComponentDescription, options: AudioComponentInstantiationOptions = []) throws {
        var wanted = componentDescription
        guard let component = AudioComponentFindNext(nil, &wanted) else {
            throw avError(AVAudioUnit.componentNotFound, "AUAudioUnit(componentDescription:): no audio component '\(fourCCText(componentDescription.componentType))'/'\(fourCCText(componentDescription.componentSubType))'/'\(fourCCText(componentDescription.componentManufacturer))'")
        }
        var instance: AudioComponentInstance?
        let status = AudioComponentInstanceNew(component, &instance)
        guard status == noErr, let instance else {
            throw avError(status == noErr ? kAudioUnitErr_FailedInitialization : status, "AUAudioUnit(componentDescription:): the component would not instantiate")
        }
        var full = AudioComponentDescription()
        _ = AudioComponentGetDescription(component, &full)
        var name: CFString?
        _ = AudioComponentCopyName(component, &name)
        var version: UInt32 = 0
        _ = AudioComponentGetVersion(component, &version)
        handle = instance
        ownsHandle = true
        self.componentDescription = full
        componentName = name
        let split = AVAudioUnit.splitName(name ?? "")
        audioUnitName = split.name
        manufacturerName = split.manufacturer
        componentVersion = version
        super.init()
        host.attach(self)
    }

    /// Makes a unit of its own from `componentDescription` (Apple's convenience form of
    /// ``init(componentDescription:options:)``, no options).
    public convenience init(componentDescription: AudioComponentDescription) throws {
        try self.init(componentDescription: componentDescription, options: [])
    }

    /// Makes a unit of its own from `componentDescription` and hands it to `completionHandler`
    /// on another thread (Apple's `instantiate(with:options:completionHandler:)`): the unit, or
    /// nil and the error ``init(componentDescription:options:)`` throws.
    open class func instantiate(with componentDescription: AudioComponentDescription, options: AudioComponentInstantiationOptions = [],
                                completionHandler: @escaping @Sendable (AUAudioUnit?, (any Error)?) -> Void) {
        let result = Result { try AUAudioUnit(componentDescription: componentDescription, options: options) }
        DispatchQueue.global().async {
            switch result {
            case .success(let unit): completionHandler(unit, nil)
            case .failure(let error): completionHandler(nil, error)
            }
        }
    }

    deinit {
        guard ownsHandle, let handle else { return }
        if isOutputComponent { _ = AudioOutputUnitStop(handle) }
        _ = AudioUnitUninitialize(handle)
        _ = AudioComponentInstanceDispose(handle)
    }

    /// The unit's parameters (an empty tree for a node without an audio unit). Setting it is
    /// accepted and replaces the tree this object hands out.
    open var parameterTree: AUParameterTree? {
        get {
            lock.lock(); defer { lock.unlock() }
            if !treeMade { tree = AUParameterTree.make(handle: handle); treeMade = true }
            return tree
        }
        set {
            lock.lock(); defer { lock.unlock() }
            tree = newValue
            treeMade = true
        }
    }

    /// The unit's factory presets (the reverb's rooms, the distortion's presets; empty for
    /// units without).
    open var factoryPresets: [AUAudioUnitPreset]? {
        ((node as? AVAudioUnit)?.factoryPresetNames ?? []).enumerated().map { AUAudioUnitPreset(number: $0.offset, name: $0.element) }
    }

    /// The preset chosen last: setting a factory preset (number 0 or more) loads it.
    open var currentPreset: AUAudioUnitPreset? {
        get { lock.lock(); defer { lock.unlock() }; return preset }
        set {
            if let p = newValue, p.number >= 0 { (node as? AVAudioUnit)?.loadFactoryPreset(number: p.number) }
            lock.lock(); preset = newValue; lock.unlock()
        }
    }

    /// The unit's state as a property list (Apple's `kAudioUnitProperty_ClassInfo` dictionary:
    /// type, subtype, manufacturer, version 0, name, and the parameter values in `data`, in the
    /// layout of an .aupreset file); setting one made by the same kind of unit restores its
    /// parameters (another kind's is ignored). nil for a node without an audio unit.
    open var fullState: [String: Any]? {
        get {
            guard let handle else { return nil }
            var info: Unmanaged<NSDictionary>?
            var size = UInt32(MemoryLayout<Unmanaged<NSDictionary>?>.size)
            guard AudioUnitGetProperty(handle, kAudioUnitProperty_ClassInfo, kAudioUnitScope_Global, 0, &info, &size) == noErr,
                  let dict = info?.takeRetainedValue() else { return nil }
            return dict as? [String: Any]
        }
        set {
            guard let handle, let newValue else { return }
            _ = setFullState(newValue, handle: handle)
        }
    }

    func setFullState(_ state: [String: Any], handle: AudioUnit) -> OSStatus {
        var dict = NSDictionary(dictionary: state)
        return withUnsafePointer(to: &dict) {
            AudioUnitSetProperty(handle, kAudioUnitProperty_ClassInfo, kAudioUnitScope_Global, 0, UnsafeRawPointer($0),
                                 UInt32(MemoryLayout<NSDictionary>.size))
        }
    }

    /// The most frames the unit renders in one slice. A unit of its own: its
    /// `kAudioUnitProperty_MaximumFramesPerSlice` (set it before allocating render resources).
    /// An engine node's unit: the engine's slice size (1024 frames, or the manual rendering
    /// maximum up to 4096); setting it is kept and read back, but the engine keeps its own.
    open var maximumFramesToRender: AUAudioFrameCount {
        get {
            if ownsHandle, let handle {
                var frames: UInt32 = 0
                var size = UInt32(MemoryLayout<UInt32>.size)
                if AudioUnitGetProperty(handle, kAudioUnitProperty_MaximumFramesPerSlice, kAudioUnitScope_Global, 0, &frames, &size) == noErr { return frames }
            }
            lock.lock(); defer { lock.unlock() }
            if let requestedMaximumFrames { return requestedMaximumFrames }
            if let frames = node?.unit?.maxFrames, frames > 0 { return AUAudioFrameCount(frames) }
            return 4096
        }
        set {
            if ownsHandle, let handle {
                // A unit of its own renders in slices of this size (set while its render resources
                // are not allocated, as Apple requires).
                var frames = newValue
                _ = AudioUnitSetProperty(handle, kAudioUnitProperty_MaximumFramesPerSlice, kAudioUnitScope_Global, 0, &frames, UInt32(MemoryLayout<UInt32>.size))
            }
            lock.lock(); requestedMaximumFrames = newValue; lock.unlock()
        }
    }

    /// Whether the effect is bypassed (its input passes through): the node's bypass.
    open var shouldBypassEffect: Bool {
        get { (node as? AVAudioUnit)?.bypassState ?? false }
        set { (node as? AVAudioUnit)?.setBypass(newValue) }
    }

    /// Seconds the unit's output lags its input (the time-pitch unit's latency, the limiter's
    /// lookahead).
    open var latency: TimeInterval {
        max(node?.latency ?? 0, float64Property(kAudioUnitProperty_Latency))
    }

    /// Seconds of output after the input stops (the reverb's decay, ten repeats of the delay).
    open var tailTime: TimeInterval { float64Property(kAudioUnitProperty_TailTime) }

    // MARK: The host interface (busses, rendering, I/O hardware; AUAudioUnit+Host.swift has its types)

    /// Whether the unit is an output (I/O) unit.
    var isOutputComponent: Bool { componentDescription.componentType == kAudioUnitType_Output }

    private var subType: UInt32 { componentDescription.componentSubType }

    /// The busses of a kind the unit has: two each for an I/O unit (0: output, 1: input), else
    /// the unit's element count.
    func busCount(_ type: AUAudioUnitBusType) -> Int {
        guard let handle else { return 0 }
        if isOutputComponent { return subType == kAudioUnitSubType_GenericOutput ? 1 : 2 }
        var n: UInt32 = 0
        var size = UInt32(MemoryLayout<UInt32>.size)
        let scope = type == .input ? kAudioUnitScope_Input : kAudioUnitScope_Output
        guard AudioUnitGetProperty(handle, kAudioUnitProperty_ElementCount, scope, 0, &n, &size) == noErr else { return 1 }
        return Int(n)
    }

    /// The unit's input busses (Apple's `inputBusses`).
    open var inputBusses: AUAudioUnitBusArray { host.busses(.input, of: self) }

    /// The unit's output busses (Apple's `outputBusses`).
    open var outputBusses: AUAudioUnitBusArray { host.busses(.output, of: self) }

    /// What an I/O unit plays (Apple's `outputProvider`): called on the render thread for each
    /// slice with the frames to fill in input bus 0's format. nil: the unit plays silence.
    /// Setting it takes effect at the next slice, also while the hardware runs.
    open var outputProvider: AURenderPullInputBlock? {
        get { host.provider.block }
        set { host.provider.set(newValue) }
    }

    /// Told, on the input thread, when an I/O unit with input enabled has frames (Apple's
    /// `inputHandler`); fetch them with ``renderBlock`` on bus 1.
    open var inputHandler: AUInputHandler? {
        get { host.inputHandler.block }
        set { host.inputHandler.set(newValue) }
    }

    private func enableIO(_ scope: AudioUnitScope, _ element: AudioUnitElement) -> Bool {
        guard let handle, isOutputComponent else { return false }
        var v: UInt32 = 0
        var size = UInt32(MemoryLayout<UInt32>.size)
        return AudioUnitGetProperty(handle, kAudioOutputUnitProperty_EnableIO, scope, element, &v, &size) == noErr && v != 0
    }

    private func setEnableIO(_ on: Bool, _ scope: AudioUnitScope, _ element: AudioUnitElement) {
        guard let handle, isOutputComponent else { return }
        var v: UInt32 = on ? 1 : 0
        _ = AudioUnitSetProperty(handle, kAudioOutputUnitProperty_EnableIO, scope, element, &v, UInt32(MemoryLayout<UInt32>.size))
    }

    /// Whether an I/O unit records (Apple's `isInputEnabled`; `kAudioOutputUnitProperty_EnableIO`
    /// on input element 1; off by default). Set it before allocating render resources.
    open var isInputEnabled: Bool {
        get { enableIO(kAudioUnitScope_Input, 1) }
        set { setEnableIO(newValue, kAudioUnitScope_Input, 1) }
    }

    /// Whether an I/O unit plays (Apple's `isOutputEnabled`; `kAudioOutputUnitProperty_EnableIO`
    /// on output element 0; on by default). Set it before allocating render resources.
    open var isOutputEnabled: Bool {
        get { enableIO(kAudioUnitScope_Output, 0) }
        set { setEnableIO(newValue, kAudioUnitScope_Output, 0) }
    }

    /// Whether the unit can record (Apple's `canPerformInput`): the HAL, RemoteIO and
    /// voice-processing I/O units.
    open var canPerformInput: Bool {
        isOutputComponent && [kAudioUnitSubType_HALOutput, kAudioUnitSubType_RemoteIO, kAudioUnitSubType_VoiceProcessingIO].contains(subType)
    }

    /// Whether the unit can play to a device (Apple's `canPerformOutput`): every I/O unit but
    /// the generic one.
    open var canPerformOutput: Bool { isOutputComponent && subType != kAudioUnitSubType_GenericOutput }

    /// Readies the unit to render (Apple's `allocateRenderResources()`): `AudioUnitInitialize`
    /// with the busses' formats. Throws the unit's error (`kAudioUnitErr_FormatNotSupported`...).
    /// A unit of an engine's node is allocated by the engine: nothing to do.
    open func allocateRenderResources() throws {
        guard ownsHandle, let handle else { return }
        if host.allocated { return }
        // A unit of its own that is not an I/O unit takes its input from the render block's pull
        // block: the input callback goes in before the unit is initialised (it is read then).
        if !isOutputComponent { host.installPull(handle, inputs: busCount(.input)) }
        try check(AudioUnitInitialize(handle), "AUAudioUnit.allocateRenderResources: \(componentName ?? "the unit") would not initialise with its busses' formats")
        host.setAllocated(true)
    }

    /// Frees what rendering needs (Apple's `deallocateRenderResources()`): `AudioUnitUninitialize`
    /// (an I/O unit's hardware stops first).
    open func deallocateRenderResources() {
        guard ownsHandle, let handle, host.allocated else { return }
        if isOutputComponent { _ = AudioOutputUnitStop(handle) }
        _ = AudioUnitUninitialize(handle)
        host.setAllocated(false)
    }

    /// Whether render resources are allocated (an engine node's unit: while the engine has
    /// built it).
    open var renderResourcesAllocated: Bool { ownsHandle ? host.allocated : handle != nil }

    /// Clears the unit's state (delay lines, tails; Apple's `reset()`).
    open func reset() {
        guard let handle else { return }
        _ = AudioUnitReset(handle, kAudioUnitScope_Global, 0)
    }

    /// Starts an I/O unit's hardware (Apple's `startHardware()`): `AudioOutputUnitStart`, after
    /// ``allocateRenderResources()``. From then on ``outputProvider`` is called for each slice
    /// the device plays, and ``inputHandler`` when input is enabled. Throws
    /// `kAudioUnitErr_InvalidProperty` for a unit that is not an I/O unit,
    /// `kAudioUnitErr_Uninitialized` before render resources are allocated, or the device's
    /// error (no sound server: the error says which).
    open func startHardware() throws {
        guard let handle, isOutputComponent else {
            throw avError(kAudioUnitErr_InvalidProperty, "AUAudioUnit.startHardware: \(componentName ?? "the unit") is not an I/O unit")
        }
        if ownsHandle && !host.allocated {
            throw avError(kAudioUnitErr_Uninitialized, "AUAudioUnit.startHardware: allocate render resources first (allocateRenderResources())")
        }
        try check(AudioOutputUnitStart(handle), "AUAudioUnit.startHardware: \(componentName ?? "the I/O unit") could not start its device")
    }

    /// Stops an I/O unit's hardware (Apple's `stopHardware()`): `AudioOutputUnitStop`.
    open func stopHardware() {
        guard let handle, isOutputComponent else { return }
        _ = AudioOutputUnitStop(handle)
    }

    /// Whether an I/O unit's hardware runs (Apple's `isRunning`;
    /// `kAudioOutputUnitProperty_IsRunning`).
    open var isRunning: Bool {
        guard let handle, isOutputComponent else { return false }
        var v: UInt32 = 0
        var size = UInt32(MemoryLayout<UInt32>.size)
        return AudioUnitGetProperty(handle, kAudioOutputUnitProperty_IsRunning, kAudioUnitScope_Global, 0, &v, &size) == noErr && v != 0
    }

    /// Renders the unit (Apple's `renderBlock`): `AudioUnitRender` on the bus given. A pull
    /// block supplies the unit's input for that call (a unit of its own, not an I/O unit);
    /// without one the unit pulls what its own render callbacks or connections give. On an I/O
    /// unit, bus 1 gives the recorded frames (from ``inputHandler``). Call it from one thread
    /// at a time, after ``allocateRenderResources()``; it allocates nothing.
    open var renderBlock: AURenderBlock {
        guard let handle else { return { _, _, _, _, _, _ in kAudioUnitErr_Uninitialized } }
        let host = self.host
        let pulls = ownsHandle && !isOutputComponent
        if pulls { host.installPull(handle, inputs: busCount(.input)) }
        return { flags, timeStamp, frames, bus, data, pull in
            if pulls { host.pull = pull }
            let status = AudioUnitRender(handle, flags, timeStamp, UInt32(truncatingIfNeeded: bus), frames, data)
            if pulls { host.pull = nil }
            return status
        }
    }

    private func float64Property(_ id: AudioUnitPropertyID) -> Double {
        guard let handle else { return 0 }
        var v: Float64 = 0
        var size = UInt32(MemoryLayout<Float64>.size)
        return AudioUnitGetProperty(handle, id, kAudioUnitScope_Global, 0, &v, &size) == noErr ? v : 0
    }
}

extension AVAudioNode {
    /// The audio unit of the node as an ``AUAudioUnit`` (Apple's `auAudioUnit`): for an
    /// ``AVAudioUnit`` its parameters, presets, state and bypass; for the I/O nodes (once the
    /// engine runs on a device) their stream formats. Other nodes (mixers, players) give a unit
    /// without parameters here. One object per node.
    public var auAudioUnit: AUAudioUnit {
        if let unit = (self as? AVAudioUnit)?.standalone { return unit }
        if let au = handles.auAudioUnit { return au }
        let handle: AudioUnit? = (self as? AVAudioUnit)?.audioUnit ?? (self as? AVAudioIONode)?.audioUnit
        let au = AUAudioUnit(node: self, handle: handle)
        // A node without its handle yet (an I/O node before the engine runs) makes a new one next time.
        return handle == nil ? au : handles.keep(au)
    }
}

extension AVAudioUnit {
    /// Loads an audio unit preset file (.aupreset, as Logic and AU Lab save them; Apple's
    /// `loadPreset(at:)`): a property list (XML or binary) with the unit's type, subtype and
    /// manufacturer, version 0 and its parameter values in `data` (the layout of Apple's
    /// AudioUnitSDK); the values it holds are set on the node, and its properties follow.
    /// Throws the file's read error, an `NSCocoaErrorDomain` error for a file that is not a
    /// property list dictionary, and an `NSOSStatusErrorDomain` error with
    /// `kAudioUnitErr_InvalidPropertyValue` for a preset of another kind of unit or with a
    /// damaged `data`.
    public func loadPreset(at url: URL) throws {
        let data = try Data(contentsOf: url)
        let plist = try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
        guard let dict = plist as? [String: Any] else {
            throw NSError(domain: NSCocoaErrorDomain, code: NSPropertyListReadCorruptError,
                          userInfo: [NSLocalizedDescriptionKey: "AVAudioUnit.loadPreset(at:): \(url.path) is not a preset dictionary"])
        }
        let status = auAudioUnit.setFullState(dict, handle: audioUnit)
        if status != noErr {
            throw avError(status, "AVAudioUnit.loadPreset(at:): \(url.path) is not a preset of \(fullName) (type, subtype, manufacturer or version differ, or its data is damaged)")
        }
    }
}
