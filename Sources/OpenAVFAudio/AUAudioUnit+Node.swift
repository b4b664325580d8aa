// AUAudioUnit (Apple's host interface to an audio unit) for an engine's nodes, and
// AVAudioUnit.loadPreset(at:) reading .aupreset files.
import Foundation
import OpenAudioToolbox
internal import OATUnits

/// The host's interface to an audio unit (Apple's `AUAudioUnit`), here the unit behind a node
/// of an engine (``AVAudioNode/auAudioUnit``), bridged to its ``AVAudioUnit/audioUnit`` handle
/// as Apple bridges version 2 units: its ``parameterTree`` drives the node the engine renders,
/// ``fullState`` is `kAudioUnitProperty_ClassInfo`, ``shouldBypassEffect`` the node's bypass.
/// There is no AUv3 plug-in hosting here: units cannot be made from this class, render blocks
/// and busses are not provided.
open class AUAudioUnit: NSObject, @unchecked Sendable {
    private weak var node: AVAudioNode?
    private let handle: AudioUnit?
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

    /// The most frames the unit renders in one slice: the engine's slice size (1024 frames, or
    /// the manual rendering maximum up to 4096). Setting it is kept and read back, but the engine
    /// keeps its own slice size.
    open var maximumFramesToRender: AUAudioFrameCount {
        get {
            lock.lock(); defer { lock.unlock() }
            if let requestedMaximumFrames { return requestedMaximumFrames }
            if let frames = node?.unit?.maxFrames, frames > 0 { return AUAudioFrameCount(frames) }
            return 4096
        }
        set { lock.lock(); requestedMaximumFrames = newValue; lock.unlock() }
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
