// AudioUnit handles over nodes another layer renders: OpenAVFAudio's `AVAudioUnit.audioUnit`
// hands out one, so the C-style calls (parameters, stream formats, parameter list and info,
// bypass, latency, tail time) drive the very node its engine renders. Also the bridge that
// lets that layer make nodes from the components registered here.
//
// Not API: the underscored names are for OpenAVFAudio, which cannot see `CompatUnit`.

import OATCore
import OATUnits

/// What an ``_AudioUnitNewHosted(description:name:version:node:host:)`` handle asks its host
/// and tells it. For OpenAVFAudio (not API).
public protocol _AudioUnitHost: AnyObject {
    /// The stream format of `element` in `scope` (input or output), nil when there is none.
    func _audioUnitStreamFormat(scope: AudioUnitScope, element: AudioUnitElement) -> AudioStreamBasicDescription?
    /// A parameter was set through the handle (after the node has it), on the caller's thread.
    func _audioUnitParameterDidChange(_ id: AudioUnitParameterID, scope: AudioUnitScope, element: AudioUnitElement, value: AudioUnitParameterValue)
    /// `kAudioUnitProperty_BypassEffect` was set through the handle.
    func _audioUnitBypassDidChange(_ bypass: Bool)
}

/// The link of a hosted unit to its host.
final class CompatHostLink {
    weak var host: (any _AudioUnitHost)?
    init(host: any _AudioUnitHost) { self.host = host }
}

/// A component of this module's registry (built-in, time-pitch, player, or registered with
/// `AudioComponentRegister` in its Swift node form) that can make render nodes. For OpenAVFAudio
/// (not API).
public struct _AudioComponentNodeSource: Sendable {
    let component: CompatComponent
    /// The component's full description.
    public var description: AudioComponentDescription { component.description }
    /// Its name as `AudioComponentCopyName` gives it (`"Apple: AUReverb2"`).
    public var name: String { component.name }
    /// Its version (`0xMMMMmmDD`).
    public var version: UInt32 { component.version }

    /// The first component matching `description` (0 in type, subtype or manufacturer matches
    /// anything, as `AudioComponentFindNext`) that makes nodes: not the I/O units nor C plug-ins.
    public init?(matching description: AudioComponentDescription) {
        let found = compatComponents.first { c in
            guard componentMatches(description, c.description) else { return false }
            switch c.kind {
            case .output, .plugIn: return false
            default: return true
            }
        }
        guard let found else { return nil }
        component = found
    }

    /// A node of the component with `channels` channels in and out (nil if it makes none).
    public func makeNode(channels: Int) -> OATUnits.RenderNode? {
        let unit = CompatUnit(component: component)
        let format = AudioStreamBasicDescription.canonicalFloat(sampleRate: 44100, channels: UInt32(max(1, min(64, channels))))
        unit.formats[CompatUnit.Key(scope: kAudioUnitScope_Input, element: 0)] = format
        unit.formats[CompatUnit.Key(scope: kAudioUnitScope_Output, element: 0)] = format
        return unit.makeNode()
    }
}

/// A handle over `node`, which `host` renders: the AudioUnit calls on it read and set that
/// node's parameters (the render thread picks them up through the parameters' atomics), its
/// stream formats are the host's, and `kAudioUnitProperty_BypassEffect` bypasses the node.
/// It is initialised (the host's engine owns it): formats, render callbacks and connections
/// cannot be set, `AudioUnitRender` answers `kAudioUnitErr_CannotDoInCurrentContext` and
/// `AudioComponentInstanceDispose` refuses it; the host ends it with ``_AudioUnitDisposeHosted(_:)``.
/// For OpenAVFAudio (not API).
public func _AudioUnitNewHosted(description: AudioComponentDescription, name: String, version: UInt32, node: OATUnits.RenderNode,
                                host: any _AudioUnitHost) -> AudioUnit {
    let component = CompatComponent(description: description, kind: .custom({ _ in nil }), name: name, version: version)
    let unit = CompatUnit(component: component)
    unit.hostLink = CompatHostLink(host: host)
    unit.node = node
    unit.initialized = true
    unit.bypassEffect = node.isBypassed
    unit.handleSlot = CompatHandles.make(unit)
    return unit.handle
}

/// Points a hosted handle at the node its host renders now (a rebuilt graph made a new one).
public func _AudioUnitSetHostedNode(_ handle: AudioUnit, _ node: OATUnits.RenderNode) {
    guard let unit = compatUnit(handle), unit.hostLink != nil else { return }
    unit.node = node
}

/// Ends a hosted handle (its host is going away): later calls with it answer `kAudio_ParamError`.
public func _AudioUnitDisposeHosted(_ handle: AudioUnit) {
    guard let unit = compatUnit(handle), unit.hostLink != nil else { return }
    _ = CompatHandles.remove(handle, as: CompatUnit.self)
}

// MARK: - What the AudioUnit calls do with a hosted unit

extension CompatUnit {
    var isHosted: Bool { hostLink != nil }

    /// The host's format for a property read, else the unit's own.
    func hostedFormat(_ scope: UInt32, _ element: UInt32) -> AudioStreamBasicDescription? {
        hostLink?.host?._audioUnitStreamFormat(scope: scope, element: element)
    }
}

/// What `AudioUnitSetProperty` answers for a property a hosted unit does not take (nil: it does).
func hostedSetPropertyRefusal(_ id: AudioUnitPropertyID) -> OSStatus? {
    switch id {
    case kAudioUnitProperty_BypassEffect, kAudioUnitProperty_ClassInfo: return nil
    case kAudioUnitProperty_StreamFormat, kAudioUnitProperty_SampleRate, kAudioUnitProperty_MaximumFramesPerSlice,
         kAudioUnitProperty_ElementCount, kAUNBandEQProperty_NumberOfBands:
        return kAudioUnitErr_Initialized
    default: return kAudioUnitErr_PropertyNotWritable
    }
}
