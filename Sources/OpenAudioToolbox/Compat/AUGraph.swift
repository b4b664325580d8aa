// Audio Toolbox–compatible AUGraph.h: graphs of units, initialised into one AudioGraph.

import OATCore
import OATDevices
import OATFiles
import OATUnits
import FoundationEssentials
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A graph (Apple's `AUGraph`, an opaque pointer).
public typealias AUGraph = OpaquePointer
/// A node of an ``AUGraph`` (Apple's `AUNode`, `SInt32`). In code that imports
/// OpenAudioToolbox this name is the C API's; the Swift node class is `OATUnits.RenderNode`.
public typealias AUNode = Int32

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

// MARK: - AUGraph

/// An AUGraph: units as nodes, connections, input callbacks; initialised into one AudioGraph.
final class CompatGraph: @unchecked Sendable {
    var units: [(id: AUNode, unit: CompatUnit)] = []
    var nextID: AUNode = 1
    var connections: [(source: AUNode, output: UInt32, destination: AUNode, input: UInt32)] = []
    /// `AUGraphAddRenderNotify` callbacks (AUComponent.swift).
    var renderNotifies: [AURenderCallbackStruct] = []
    var opened = false
    var initialized = false
    var running = false
    var graph: AudioGraph?
    var renderPointers: UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>?
    /// Whether any of its units has `kAudioUnitProperty_OfflineRender` set (kept by the property
    /// setter, so a render reads one flag instead of scanning the units).
    var offlineRender = false

    deinit {
        graph?.stop()
        renderPointers?.deallocate()
        for u in units { _ = CompatHandles.remove(u.unit.handle, as: CompatUnit.self) }
    }

    func unit(_ id: AUNode) -> CompatUnit? { units.first { $0.id == id }?.unit }

    var liveNodes: [AUNode: OATUnits.RenderNode] = [:]
    var bridges: [OATUnits.RenderNode] = []

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
            var outTarget: OATUnits.RenderNode = g.output
            if let out, out.enableIO[1] == 1 {
                if let n = out.ioNode {
                    try g.connect(n, to: g.output)
                    outTarget = n
                } else if let n = try out.setUpInput(graph: g) {
                    outTarget = n
                }
            }
            for c in connections {
                let s: OATUnits.RenderNode
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
                let d: OATUnits.RenderNode = liveNodes[c.destination] ?? outTarget
                try g.connect(s, output: sourceBus, to: d, input: Int(c.input))
            }
            // Render callbacks on inputs that nothing feeds.
            for (id, u) in units {
                let target: OATUnits.RenderNode = u.isOutput ? outTarget : (liveNodes[id] ?? g.output)
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
            try graph.start(out?.enableIO[0] == 0 ? .null(realTime: true) : (out?.outputSpec ?? CompatOutput.spec()), options: out?.outputOptions ?? AudioOutput.Options())
            running = true
            return noErr
        } catch {
            out?.io?.node.stop()
            return osStatus(error, default: kAUGraphErr_CannotDoInCurrentContext)
        }
    }

    func stop() -> OSStatus {
        graph?.stop(drain: true)
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
    // Scheduled sound players: the procs of the slices their renders completed run now, and
    // their tracker threads end.
    for (_, unit) in g.units {
        unit.extras.slices?.sweep()
        unit.extras.slices?.stop()
    }
    return noErr
}

/// Adds a node for the component `inDescription` describes.
@discardableResult
public func AUGraphAddNode(_ inGraph: AUGraph, _ inDescription: UnsafePointer<AudioComponentDescription>, _ outNode: UnsafeMutablePointer<AUNode>) -> OSStatus {
    guard let g = compatGraph(inGraph) else { return kAudio_ParamError }
    guard let c = AudioComponentFindNext(nil, inDescription), let component = compatComponent(c) else { return kAUGraphErr_InvalidAudioUnit }
    // A C plug-in (AudioComponentRegister with a factory function) is driven only through the
    // AudioUnit calls here, not as a graph node.
    if case .plugIn = component.kind { return kAUGraphErr_InvalidAudioUnit }
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

/// Adds a render notification on the graph's output unit (Apple's `AUGraphAddRenderNotify`):
/// called around each render of the graph (device-driven after ``AUGraphStart(_:)``, or
/// ``AudioUnitRender(_:_:_:_:_:_:)`` of its output unit).
@discardableResult
public func AUGraphAddRenderNotify(_ inGraph: AUGraph, _ inCallback: AURenderCallback, _ inRefCon: UnsafeMutableRawPointer?) -> OSStatus {
    guard let g = compatGraph(inGraph) else { return kAudio_ParamError }
    g.renderNotifies.append(AURenderCallbackStruct(inputProc: inCallback, inputProcRefCon: inRefCon))
    notifyGeneration.add(1, ordering: .relaxed)
    refreshGraphNotifies(g)
    return noErr
}

/// Removes a graph render notification (Apple's `AUGraphRemoveRenderNotify`).
@discardableResult
public func AUGraphRemoveRenderNotify(_ inGraph: AUGraph, _ inCallback: AURenderCallback, _ inRefCon: UnsafeMutableRawPointer?) -> OSStatus {
    guard let g = compatGraph(inGraph) else { return kAudio_ParamError }
    g.renderNotifies = removing(g.renderNotifies, inCallback, inRefCon)
    notifyGeneration.add(1, ordering: .relaxed)
    refreshGraphNotifies(g)
    return noErr
}

/// Starts the graph's output unit on the output `OAT_OUTPUT` names (Apple's `AUGraphStart`);
/// render notifications run around each device render; the output unit's IsRunning listeners
/// are told.
@discardableResult
public func AUGraphStart(_ inGraph: AUGraph) -> OSStatus {
    guard let g = compatGraph(inGraph) else { return kAudio_ParamError }
    refreshGraphNotifies(g)
    return reportingIsRunning(outputUnits(g)) { builtinAUGraphStart(inGraph) }
}

/// Stops the graph's output unit (Apple's `AUGraphStop`); its IsRunning listeners are told.
@discardableResult
public func AUGraphStop(_ inGraph: AUGraph) -> OSStatus {
    guard let g = compatGraph(inGraph) else { return kAudio_ParamError }
    return reportingIsRunning(outputUnits(g)) { builtinAUGraphStop(inGraph) }
}
