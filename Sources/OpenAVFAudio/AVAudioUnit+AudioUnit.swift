// The AudioUnit handle behind a node (Apple's `AVAudioUnit.audioUnit`, `AVAudioIONode.audioUnit`):
// a handle of the C-style API (OpenAudioToolbox) over the very render node the engine runs, so
// AudioUnitSetParameter/GetProperty on it change and read what is heard.
import Foundation
import OpenAudioToolbox
internal import OATUnits

/// A node's AudioUnit handle and the render node it drives.
///
/// Before the engine has built the node's unit the handle drives a node of the same kind made
/// for it (it holds the parameters set through the handle and by the node's properties); each
/// time the engine makes a new unit for the node, the values of the node the handle drove are
/// copied to it and the handle follows it (``follow(_:)``). Parameters reach the render thread
/// through the parameters' atomics.
final class NodeAudioUnitHandle: @unchecked Sendable {
    private let lock = NSLock()
    private var handle: AudioUnit?
    private var driven: OATUnits.RenderNode?
    private var host: Host?
    private var au: AUAudioUnit?

    /// The node's AUAudioUnit, once made.
    var auAudioUnit: AUAudioUnit? {
        lock.lock(); defer { lock.unlock() }
        return au
    }

    /// Keeps `unit` as the node's AUAudioUnit unless one was kept first; returns the one kept.
    func keep(_ unit: AUAudioUnit) -> AUAudioUnit {
        lock.lock(); defer { lock.unlock() }
        if let au { return au }
        au = unit
        return unit
    }

    /// The node the handle drives (nil: no handle made yet).
    var node: OATUnits.RenderNode? {
        lock.lock(); defer { lock.unlock() }
        return driven
    }

    /// The handle, made on first use over `current` (or over `make()`'s node when there is none yet);
    /// nil when `describe` gives nothing.
    func handle(owner: AVAudioNode, current: OATUnits.RenderNode?,
                describe: () -> (description: AudioComponentDescription, name: String, version: UInt32, make: () -> OATUnits.RenderNode)?) -> AudioUnit? {
        lock.lock()
        if let handle { lock.unlock(); return handle }
        guard let d = describe() else { lock.unlock(); return nil }
        let node = current ?? d.make()
        let host = Host(owner: owner)
        let h = _AudioUnitNewHosted(description: d.description, name: d.name, version: d.version, node: node, host: host)
        self.host = host
        driven = node
        handle = h
        lock.unlock()
        return h
    }

    /// The engine made `current` for the node: the values of the node driven so far move to it
    /// and the handle drives it from now on.
    func follow(_ current: OATUnits.RenderNode?) {
        lock.lock(); defer { lock.unlock() }
        guard let handle, let current, let old = driven, old !== current else { return }
        for p in old.parameters { current.parameter(id: p.id, scope: p.scope, element: p.element)?.value = p.value }
        driven = current
        _AudioUnitSetHostedNode(handle, current)
    }

    deinit { if let handle { _AudioUnitDisposeHosted(handle) } }

    /// What the handle asks the node and tells it (a separate object, so the node's class does not
    /// show the host's methods).
    final class Host: _AudioUnitHost {
        weak var owner: AVAudioNode?
        init(owner: AVAudioNode) { self.owner = owner }

        func _audioUnitStreamFormat(scope: AudioUnitScope, element: AudioUnitElement) -> AudioStreamBasicDescription? {
            guard let owner else { return nil }
            switch scope {
            case kAudioUnitScope_Input:
                guard Int(element) < max(1, owner.numberOfInputs) else { return nil }
                return owner.inputFormat(forBus: Int(element)).streamDescription.pointee
            case kAudioUnitScope_Output:
                guard Int(element) < max(1, owner.numberOfOutputs) else { return nil }
                return owner.outputFormat(forBus: Int(element)).streamDescription.pointee
            default: return nil
            }
        }

        func _audioUnitParameterDidChange(_ id: AudioUnitParameterID, scope: AudioUnitScope, element: AudioUnitElement, value: AudioUnitParameterValue) {
            (owner as? AVAudioUnit)?.handleDidSetParameter(id, scope: scope, element: element, value: value)
        }

        func _audioUnitBypassDidChange(_ bypass: Bool) {
            (owner as? AVAudioUnit)?.setBypass(bypass)
        }
    }
}

extension AVAudioUnit {
    /// The audio unit underneath (Apple's `audioUnit`): a handle of the C-style API driving the
    /// very node the engine renders. `AudioUnitSetParameter`/`AudioUnitGetParameter` set and read
    /// its parameters (Apple's IDs: `kReverb2Param_DryWetMix`, `kDelayParam_*`, `kAUNBandEQParam_*`,
    /// ...) from any thread, and what they set is heard from the next render slice, also before
    /// the node is attached or while the engine runs; the node's properties follow (setting
    /// `kReverb2Param_DryWetMix` changes ``AVAudioUnitReverb/wetDryMix``). `AudioUnitGetProperty`
    /// gives its stream formats (the node's input and output formats), parameter list and info,
    /// element counts, latency and tail time, and `kAudioUnitProperty_BypassEffect` bypasses it.
    /// The engine owns it: its formats, render callbacks and connections cannot be set
    /// (`kAudioUnitErr_Initialized` / `kAudioUnitErr_PropertyNotWritable`), `AudioUnitRender`
    /// answers `kAudioUnitErr_CannotDoInCurrentContext`, and it must not be disposed of
    /// (`AudioComponentInstanceDispose` refuses it). It lives as long as this node.
    public var audioUnit: AudioUnit {
        if let standalone, let handle = standalone.handle { return handle }
        let d = audioComponentDescription
        return handles.handle(owner: self, current: unit) {
            (d, self.fullName, UInt32(self.version), {
                let node = self.makeUnit(rate: AVAudioEngine.defaultFormat.sampleRate, inputChannels: 2, outputChannels: 2)
                node.isBypassed = self.bypassState
                return node
            })
        }.map { handle in
            // The node made for the handle holds the properties set so far.
            if unit == nil { push() }
            return handle
        }!
    }

    /// The component's name as `AudioComponentCopyName` gives it (`"Apple: AUReverb2"`).
    var fullName: String { manufacturerName.isEmpty ? name : "\(manufacturerName): \(name)" }
}

extension AVAudioIONode {
    /// The audio unit underneath (Apple's `audioUnit`): a handle of the C-style API over the
    /// engine's I/O node once the engine has built its graph to run on a device (nil before,
    /// and in manual rendering mode, as on Apple). Its stream formats are the node's; it has no
    /// parameters, and, as every handle of a node, the engine owns it.
    public var audioUnit: AudioUnit? {
        guard let engine, !engine.isInManualRenderingMode, let unit else { return nil }
        let input = self is AVAudioInputNode
        return handles.handle(owner: self, current: unit) {
            (AudioComponentDescription.apple(kAudioUnitType_Output, kAudioUnitSubType_HALOutput),
             input ? "Apple: AUHAL (input)" : "Apple: AUHAL", 0x0001_0000, { unit })
        }
    }
}
