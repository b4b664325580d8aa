// AVAudioConnectionPoint and the engine's fan-out connections (one output bus feeding several
// inputs; the engine splits the bus when it builds the graph).
import Foundation
import OpenAudioToolbox

/// One end of a connection: a node and one of its buses (Apple's `AVAudioConnectionPoint`).
/// Immutable.
open class AVAudioConnectionPoint: NSObject, @unchecked Sendable {
    /// The node (weak, as Apple's: nil once the node is gone).
    public private(set) weak var node: AVAudioNode?
    /// The bus on ``node``: an input bus for a destination, an output bus for a source.
    public let bus: AVAudioNodeBus

    /// A connection point on `node`'s bus `bus`.
    public init(node: AVAudioNode, bus: AVAudioNodeBus) {
        self.node = node
        self.bus = bus
        super.init()
    }

    open override var description: String {
        "<AVAudioConnectionPoint: \(node.map { String(describing: type(of: $0)) } ?? "nil") bus \(bus)>"
    }
}

extension AVAudioEngine {
    /// Connects output bus `sourceBus` of `sourceNode` to every point of `destNodes` (fan-out:
    /// each destination gets the same audio), in `format` (nil: the source's output format).
    /// Replaces the connections that bus had, and whatever fed each destination bus; an empty
    /// list disconnects the bus.
    public func connect(_ sourceNode: AVAudioNode, to destNodes: [AVAudioConnectionPoint], fromBus sourceBus: AVAudioNodeBus, format: AVAudioFormat?) {
        lock.lock()
        attach(sourceNode)
        connections.removeAll { $0.source === sourceNode && $0.sourceBus == sourceBus }
        for point in destNodes {
            guard let node = point.node else { continue }
            attach(node)
            connections.removeAll { $0.destination === node && $0.destinationBus == point.bus }
            connections.append(Connection(source: sourceNode, sourceBus: sourceBus, destination: node, destinationBus: point.bus, format: format))
        }
        dirty = true
        lock.unlock()
        rebuildIfRunning()
    }

    /// What feeds input bus `bus` of `node` (nil: nothing).
    public func inputConnectionPoint(for node: AVAudioNode, inputBus bus: AVAudioNodeBus) -> AVAudioConnectionPoint? {
        lock.lock(); defer { lock.unlock() }
        guard let c = connections.first(where: { $0.destination === node && $0.destinationBus == bus }) else { return nil }
        return AVAudioConnectionPoint(node: c.source, bus: c.sourceBus)
    }

    /// Every input that output bus `bus` of `node` feeds, in the order connected.
    public func outputConnectionPoints(for node: AVAudioNode, outputBus bus: AVAudioNodeBus) -> [AVAudioConnectionPoint] {
        lock.lock(); defer { lock.unlock() }
        return connections.filter { $0.source === node && $0.sourceBus == bus }.map { AVAudioConnectionPoint(node: $0.destination, bus: $0.destinationBus) }
    }
}
