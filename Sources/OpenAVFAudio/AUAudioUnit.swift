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

/// Names an observer of a parameter node (Apple's `AUParameterObserverToken`): what
/// `token(byAddingParameterObserver:)` returns, and what a setter passes as the originator so
/// that its own observer is not told of its own change.
public typealias AUParameterObserverToken = UnsafeMutableRawPointer
/// Told of a parameter's new value (Apple's `AUParameterObserver`): its address and value.
public typealias AUParameterObserver = (AUParameterAddress, AUValue) -> Void
/// Told of parameter changes as recorded events (Apple's `AUParameterRecordingObserver`): a
/// count and that many events.
public typealias AUParameterRecordingObserver = (Int, UnsafePointer<AURecordedParameterEvent>) -> Void
/// Told of parameter changes as automation events (Apple's `AUParameterAutomationObserver`),
/// gesture events (touch, release) included.
public typealias AUParameterAutomationObserver = (Int, UnsafePointer<AUParameterAutomationEvent>) -> Void

/// A parameter change as a recording observer sees it (Apple's `AURecordedParameterEvent`).
public struct AURecordedParameterEvent: Sendable {
    /// When the change happened (host time; 0: now).
    public var hostTime: UInt64
    /// The parameter's address.
    public var address: AUParameterAddress
    /// The new value.
    public var value: AUValue
    /// An all-zero event.
    public init() { hostTime = 0; address = 0; value = 0 }
    /// An event of the given fields.
    public init(hostTime: UInt64, address: AUParameterAddress, value: AUValue) {
        self.hostTime = hostTime
        self.address = address
        self.value = value
    }
}

/// What an automation event records (Apple's `AUParameterAutomationEventType`).
public enum AUParameterAutomationEventType: UInt32, @unchecked Sendable {
    /// A new value.
    case value = 0
    /// A gesture on the parameter began (a finger on a slider).
    case touch = 1
    /// The gesture ended.
    case release = 2
}

/// A parameter change as an automation observer sees it (Apple's `AUParameterAutomationEvent`).
public struct AUParameterAutomationEvent: Sendable {
    /// When the change happened (host time; 0: now).
    public var hostTime: UInt64
    /// The parameter's address.
    public var address: AUParameterAddress
    /// The new value.
    public var value: AUValue
    /// A value, or the start or end of a gesture.
    public var eventType: AUParameterAutomationEventType
    /// Reserved (0).
    public var reserved: UInt64
    /// An all-zero value event.
    public init() { hostTime = 0; address = 0; value = 0; eventType = .value; reserved = 0 }
    /// An event of the given fields.
    public init(hostTime: UInt64, address: AUParameterAddress, value: AUValue, eventType: AUParameterAutomationEventType, reserved: UInt64) {
        self.hostTime = hostTime
        self.address = address
        self.value = value
        self.eventType = eventType
        self.reserved = reserved
    }
}

/// The observers of one parameter node.
final class AUParameterObservers: @unchecked Sendable {
    enum Observer {
        case value(AUParameterObserver)
        case recording(AUParameterRecordingObserver)
        case automation(AUParameterAutomationObserver)
    }
    private let lock = NSLock()
    private var observers: [(id: Int, observer: Observer)] = []
    private nonisolated(unsafe) static var nextID = 1
    private static let idLock = NSLock()

    func add(_ observer: Observer) -> AUParameterObserverToken {
        Self.idLock.lock()
        let id = Self.nextID
        Self.nextID += 1
        Self.idLock.unlock()
        lock.lock(); observers.append((id, observer)); lock.unlock()
        return UnsafeMutableRawPointer(bitPattern: id)!
    }

    func remove(_ token: AUParameterObserverToken) {
        let id = Int(bitPattern: token)
        lock.lock(); observers.removeAll { $0.id == id }; lock.unlock()
    }

    var snapshot: [(id: Int, observer: Observer)] { lock.lock(); defer { lock.unlock() }; return observers }
}

/// A node of a parameter tree: a parameter or a group (Apple's `AUParameterNode`).
open class AUParameterNode: NSObject, @unchecked Sendable {
    /// The node's identifier, unique among its siblings (here the parameter ID in decimal, or
    /// the scope's name for a group).
    public let identifier: String
    /// The node's name for display (a parameter's name as `kAudioUnitProperty_ParameterInfo`
    /// gives it).
    public let displayName: String
    weak var parent: AUParameterGroup?
    let observers = AUParameterObservers()

    /// Adds an observer of this node's parameter, or of every parameter in this group or tree
    /// (Apple's `token(byAddingParameterObserver:)`). It is called, on the thread that set the
    /// value, for each change made through an ``AUParameter`` of the tree, except the changes
    /// whose originator is its own token.
    open func token(byAddingParameterObserver observer: @escaping AUParameterObserver) -> AUParameterObserverToken {
        observers.add(.value(observer))
    }

    /// Adds an observer that receives each change as a recorded event (Apple's
    /// `token(byAddingParameterRecordingObserver:)`), one event per call here.
    open func token(byAddingParameterRecordingObserver observer: @escaping AUParameterRecordingObserver) -> AUParameterObserverToken {
        observers.add(.recording(observer))
    }

    /// Adds an observer that receives each change and gesture as an automation event (Apple's
    /// `token(byAddingParameterAutomationObserver:)`).
    open func token(byAddingParameterAutomationObserver observer: @escaping AUParameterAutomationObserver) -> AUParameterObserverToken {
        observers.add(.automation(observer))
    }

    /// Removes an observer added to this node (Apple's `removeParameterObserver(_:)`); a token
    /// of another node, or one removed already, is ignored.
    open func removeParameterObserver(_ token: AUParameterObserverToken) {
        observers.remove(token)
    }

    /// Tells the observers of this node and of the groups above it.
    func notify(_ address: AUParameterAddress, _ value: AUValue, originator: AUParameterObserverToken?, hostTime: UInt64,
                eventType: AUParameterAutomationEventType) {
        let skip = originator.map { Int(bitPattern: $0) }
        var node: AUParameterNode? = self
        while let n = node {
            for (id, observer) in n.observers.snapshot where id != skip {
                switch observer {
                case .value(let o): if eventType == .value { o(address, value) }
                case .recording(let o):
                    if eventType == .value {
                        var e = AURecordedParameterEvent(hostTime: hostTime, address: address, value: value)
                        o(1, &e)
                    }
                case .automation(let o):
                    var e = AUParameterAutomationEvent(hostTime: hostTime, address: address, value: value, eventType: eventType, reserved: 0)
                    o(1, &e)
                }
            }
            node = n.parent
        }
    }

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
        set { setValue(newValue, originator: nil, atHostTime: 0, eventType: .value) }
    }

    /// Sets the value and tells every observer but `originator`'s (Apple's
    /// `setValue(_:originator:)`).
    open func setValue(_ value: AUValue, originator: AUParameterObserverToken?) {
        setValue(value, originator: originator, atHostTime: 0, eventType: .value)
    }

    /// Sets the value at a host time (here: now) and tells every observer but `originator`'s
    /// (Apple's `setValue(_:originator:atHostTime:)`).
    open func setValue(_ value: AUValue, originator: AUParameterObserverToken?, atHostTime hostTime: UInt64) {
        setValue(value, originator: originator, atHostTime: hostTime, eventType: .value)
    }

    /// Sets the value, or reports a gesture (`.touch`, `.release`: the value is passed to the
    /// automation observers and not set), and tells every observer but `originator`'s (Apple's
    /// `setValue(_:originator:atHostTime:eventType:)`).
    open func setValue(_ value: AUValue, originator: AUParameterObserverToken?, atHostTime hostTime: UInt64,
                       eventType: AUParameterAutomationEventType) {
        guard !value.isNaN else { return }
        let clamped = min(maxValue, max(minValue, value))
        if eventType == .value { AudioUnitSetParameter(handle, parameterID, scope, element, clamped, 0) }
        notify(address, clamped, originator: originator, hostTime: hostTime, eventType: eventType)
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
