// Apple's AUAudioUnit host interface (AudioToolbox's AUAudioUnit, AUParameterTree, AUParameter,
// AUAudioUnitPreset) for the nodes of an engine, bridged to their AudioUnit handle as Apple
// bridges version 2 units: the parameter tree reads the handle's parameter list and info, a
// parameter's value is AudioUnitGetParameter/SetParameter on the node the engine renders, and
// `fullState` is `kAudioUnitProperty_ClassInfo`.
import Foundation
import OpenAudioToolbox

/// A parameter's address in its tree (Apple's `AUParameterAddress`).
public typealias AUParameterAddress = UInt64
/// A parameter value (Apple's `AUValue`).
public typealias AUValue = Float
/// A count of frames (Apple's `AUAudioFrameCount`).
public typealias AUAudioFrameCount = UInt32

/// A node of a parameter tree: a parameter or a group (Apple's `AUParameterNode`).
open class AUParameterNode: NSObject, @unchecked Sendable {
    /// The node's identifier, unique among its siblings (here the parameter ID in decimal, or
    /// the scope's name for a group).
    public let identifier: String
    /// The node's name for display (a parameter's name as `kAudioUnitProperty_ParameterInfo`
    /// gives it).
    public let displayName: String
    weak var parent: AUParameterGroup?

    init(identifier: String, displayName: String) {
        self.identifier = identifier
        self.displayName = displayName
    }

    /// The identifiers from the tree's root to this node, joined with dots.
    open var keyPath: String {
        guard let parent, !(parent is AUParameterTree) else { return identifier }
        return parent.keyPath + "." + identifier
    }
}

/// One parameter of an audio unit (Apple's `AUParameter`): reading and setting ``value`` reads
/// and sets the parameter on the node the engine renders (any thread; the render thread picks a
/// new value up at its next slice).
open class AUParameter: AUParameterNode, @unchecked Sendable {
    private let handle: AudioUnit
    let parameterID: AudioUnitParameterID
    let scope: AudioUnitScope
    let element: AudioUnitElement
    /// The parameter's address: its parameter ID for the global scope (as Apple's bridged
    /// version 2 units); for other scopes the scope in bits 56... and the element in bits 32...
    public let address: AUParameterAddress
    /// The smallest value.
    public let minValue: AUValue
    /// The largest value.
    public let maxValue: AUValue
    /// The unit of measure.
    public let unit: AudioUnitParameterUnit
    /// The parameter's flags (readable, writable).
    public let flags: AudioUnitParameterOptions

    init(handle: AudioUnit, id: AudioUnitParameterID, scope: AudioUnitScope, element: AudioUnitElement, info: AudioUnitParameterInfo) {
        self.handle = handle
        parameterID = id
        self.scope = scope
        self.element = element
        address = scope == kAudioUnitScope_Global && element == 0 ? AUParameterAddress(id)
            : AUParameterAddress(scope) << 56 | AUParameterAddress(element) << 32 | AUParameterAddress(id)
        minValue = info.minValue
        maxValue = info.maxValue
        unit = info.unit
        flags = info.flags
        let name = withUnsafeBytes(of: info.name) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        super.init(identifier: String(id), displayName: name)
    }

    /// The parameter's value: set, it is clamped to ``minValue`` ... ``maxValue``.
    open var value: AUValue {
        get {
            var v: AudioUnitParameterValue = 0
            AudioUnitGetParameter(handle, parameterID, scope, element, &v)
            return v
        }
        set {
            guard !newValue.isNaN else { return }
            AudioUnitSetParameter(handle, parameterID, scope, element, min(maxValue, max(minValue, newValue)), 0)
        }
    }
}

/// A group of parameters (Apple's `AUParameterGroup`).
open class AUParameterGroup: AUParameterNode, @unchecked Sendable {
    /// The group's parameters and groups.
    public let children: [AUParameterNode]

    init(identifier: String, displayName: String, children: [AUParameterNode]) {
        self.children = children
        super.init(identifier: identifier, displayName: displayName)
        for c in children { c.parent = self }
    }

    /// Every parameter of the group and of the groups in it, depth first.
    open var allParameters: [AUParameter] {
        children.flatMap { c -> [AUParameter] in
            if let p = c as? AUParameter { return [p] }
            return (c as? AUParameterGroup)?.allParameters ?? []
        }
    }
}

/// All of an audio unit's parameters (Apple's `AUParameterTree`): the global-scope parameters
/// at the top, those of other scopes in a group per scope.
open class AUParameterTree: AUParameterGroup, @unchecked Sendable {
    /// The parameter at `address` (nil: none).
    open func parameter(withAddress address: AUParameterAddress) -> AUParameter? {
        allParameters.first { $0.address == address }
    }

    /// The parameter with a version 2 ID, scope and element (nil: none).
    open func parameter(withID paramID: AudioUnitParameterID, scope: AudioUnitScope, element: AudioUnitElement) -> AUParameter? {
        allParameters.first { $0.parameterID == paramID && $0.scope == scope && $0.element == element }
    }

    /// The tree of the parameters `handle` lists.
    static func make(handle: AudioUnit?) -> AUParameterTree {
        guard let handle else { return AUParameterTree(identifier: "", displayName: "", children: []) }
        var top: [AUParameterNode] = []
        for (scope, name) in [(kAudioUnitScope_Global, "global"), (kAudioUnitScope_Input, "input"), (kAudioUnitScope_Output, "output")] {
            var size: UInt32 = 0
            guard AudioUnitGetPropertyInfo(handle, kAudioUnitProperty_ParameterList, scope, 0, &size, nil) == noErr, size > 0 else { continue }
            var ids = [AudioUnitParameterID](repeating: 0, count: Int(size) / MemoryLayout<AudioUnitParameterID>.size)
            guard ids.withUnsafeMutableBytes({ AudioUnitGetProperty(handle, kAudioUnitProperty_ParameterList, scope, 0, $0.baseAddress!, &size) }) == noErr
            else { continue }
            let parameters = ids.compactMap { id -> AUParameter? in
                var info = AudioUnitParameterInfo()
                var infoSize = UInt32(MemoryLayout<AudioUnitParameterInfo>.size)
                guard AudioUnitGetProperty(handle, kAudioUnitProperty_ParameterInfo, scope, id, &info, &infoSize) == noErr else { return nil }
                return AUParameter(handle: handle, id: id, scope: scope, element: 0, info: info)
            }
            if scope == kAudioUnitScope_Global { top += parameters as [AUParameterNode] } else {
                top.append(AUParameterGroup(identifier: name, displayName: name, children: parameters))
            }
        }
        return AUParameterTree(identifier: "", displayName: "", children: top)
    }
}

/// A preset of an audio unit (Apple's `AUAudioUnitPreset`): factory presets have numbers from
/// 0, user presets negative numbers.
open class AUAudioUnitPreset: NSObject, @unchecked Sendable {
    /// The preset's number.
    open var number: Int = 0
    /// The preset's name.
    open var name: String = ""

    /// An empty preset (number 0, no name).
    public override init() {}

    init(number: Int, name: String) {
        self.number = number
        self.name = name
    }
}
