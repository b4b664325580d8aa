// AVAudioMixingDestination: the mixing settings (volume, pan) of one connection from a source
// node to a mixer, for a source fanned out to several mixers.
import Foundation
import OpenAudioToolbox

/// The volume and pan a source node has at one mixer input it feeds (Apple's
/// `AVAudioMixingDestination`). Ask the source for it with
/// ``AVAudioMixing/destination(forMixer:bus:)``: a source connected to several mixers (fan-out
/// through ``AVAudioEngine/connect(_:to:fromBus:format:)`` with connection points) mixes at
/// each with the settings of that mixer's destination. Setting ``AVAudioMixing/volume`` or
/// ``AVAudioStereoMixing/pan`` on the source node sets them on all its destinations; setting
/// them on a destination changes that mixer input only, not the node's own values.
///
/// Fetch it again after rewiring rather than keep it: once its connection is gone it no longer
/// mixes anything (here it keeps its values for a later connection to the same mixer bus,
/// where Apple's starts again from the node's).
///
/// Thread safety: the control plane (not the render thread), like the node.
public final class AVAudioMixingDestination: NSObject, AVAudioMixing, @unchecked Sendable {
    /// The mixer and its input bus this destination mixes into.
    public let connectionPoint: AVAudioConnectionPoint
    /// The node whose output this destination mixes.
    weak var source: AVAudioNode?
    /// The values, set without notifying the engine (the node's setters push them all at once).
    var storedVolume: Float
    var storedPan: Float

    init(source: AVAudioNode, point: AVAudioConnectionPoint, volume: Float, pan: Float) {
        self.source = source
        connectionPoint = point
        storedVolume = volume
        storedPan = pan
        super.init()
    }

    /// Linear gain of the source at this mixer input, 0 ... 1.
    public var volume: Float {
        get { storedVolume }
        set {
            storedVolume = newValue
            if let source { source.engine?.sourceMixingChanged(source) }
        }
    }

    /// Stereo position of the source at this mixer input, -1 (left) ... 1 (right).
    public var pan: Float {
        get { storedPan }
        set {
            storedPan = newValue
            if let source { source.engine?.sourceMixingChanged(source) }
        }
    }

    /// Itself when `mixer` and `bus` are its connection point, else nil (as Apple's).
    public func destination(forMixer mixer: AVAudioNode, bus: AVAudioNodeBus) -> AVAudioMixingDestination? {
        connectionPoint.node === mixer && connectionPoint.bus == bus ? self : nil
    }

    public override var description: String {
        "<AVAudioMixingDestination: \(connectionPoint) volume \(storedVolume) pan \(storedPan)>"
    }
}

extension AVAudioMixing where Self: AVAudioNode {
    /// The mixing settings this node has at input `bus` of `mixer` (Apple's
    /// `destination(forMixer:bus:)`): nil when the node does not feed that mixer input. A new
    /// destination starts from the node's own volume and pan.
    public func destination(forMixer mixer: AVAudioNode, bus: AVAudioNodeBus) -> AVAudioMixingDestination? {
        guard let engine, mixer is AVAudioMixerNode, engine.inputConnectionPoint(for: mixer, inputBus: bus)?.node === self else { return nil }
        // Forget destinations whose connection is gone.
        mixingDestinations.removeAll { d in
            guard let node = d.connectionPoint.node else { return true }
            return engine.inputConnectionPoint(for: node, inputBus: d.connectionPoint.bus)?.node !== self
        }
        if let known = mixingDestinations.first(where: { $0.connectionPoint.node === mixer && $0.connectionPoint.bus == bus }) { return known }
        let made = AVAudioMixingDestination(source: self, point: AVAudioConnectionPoint(node: mixer, bus: bus), volume: volume, pan: pan)
        mixingDestinations.append(made)
        return made
    }
}

extension AVAudioNode {
    /// The node's own volume or pan was set: every destination takes it, and the engine pushes
    /// the values to the mixer inputs.
    func mixingSetOnNode(volume: Float? = nil, pan: Float? = nil) {
        for d in mixingDestinations {
            if let volume { d.storedVolume = volume }
            if let pan { d.storedPan = pan }
        }
        engine?.sourceMixingChanged(self)
    }

    /// The destination of this node at input `bus` of `mixer`, if one was asked for.
    func mixingDestination(at mixer: AVAudioNode, bus: Int) -> AVAudioMixingDestination? {
        mixingDestinations.first { $0.connectionPoint.node === mixer && $0.connectionPoint.bus == bus }
    }
}
