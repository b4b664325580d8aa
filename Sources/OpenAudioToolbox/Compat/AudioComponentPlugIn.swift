// Audio Toolbox–compatible component plug-ins (AudioComponent.h): a unit registered with
// `AudioComponentRegister` and Apple's `AudioComponentFactoryFunction` is a C plug-in, an
// `AudioComponentPlugInInterface` whose `Lookup` gives one C function per selector. An instance of
// it is driven as Apple drives one: `AudioComponentInstanceNew` calls the factory and `Open`,
// `AudioComponentInstanceDispose` calls `Close`, and the AudioUnit calls (initialise, properties,
// parameters, render, reset) call the method `Lookup` returns for their selector, with the
// interface as `self`.

import OATCore
import Synchronization

/// A plug-in instance: the interface its factory returned (the `self` of every call).
final class PlugInInstance: @unchecked Sendable {
    /// The interface (owned by the plug-in; valid until `Close`).
    let interface: UnsafeMutablePointer<AudioComponentPlugInInterface>
    /// The component it was made from.
    let component: CompatComponent

    init(interface: UnsafeMutablePointer<AudioComponentPlugInInterface>, component: CompatComponent) {
        self.interface = interface
        self.component = component
    }

    /// The plug-in's method for `selector`, as the C function type `F`; nil when it has none.
    func method<F>(_ selector: Int, as type: F.Type) -> F? {
        guard let m = interface.pointee.Lookup(Int16(truncatingIfNeeded: selector)) else { return nil }
        return unsafeBitCast(m, to: F.self)
    }

    /// The interface as the `self` argument.
    var selfPointer: UnsafeMutableRawPointer { UnsafeMutableRawPointer(interface) }
}

/// The plug-in instance a handle names, if any.
func plugInInstance(_ u: AudioComponentInstance) -> PlugInInstance? { CompatHandles.object(u, as: PlugInInstance.self) }

/// Makes an instance of a plug-in component: calls the factory and the interface's `Open`.
func newPlugInInstance(_ c: CompatComponent, _ factory: AudioComponentFactoryFunction,
                       _ outInstance: UnsafeMutablePointer<AudioComponentInstance?>) -> OSStatus {
    var description = c.description
    guard let interface = factory(&description) else { return kAudioUnitErr_FailedInitialization }
    let instance = PlugInInstance(interface: interface, component: c)
    let handle = CompatHandles.make(instance)
    let status = interface.pointee.Open(UnsafeMutableRawPointer(interface), handle)
    guard status == noErr else {
        _ = CompatHandles.remove(handle, as: PlugInInstance.self)
        return status
    }
    outInstance.pointee = handle
    return noErr
}

/// Disposes of a plug-in instance: calls its `Close`. Nil when `inInstance` is not one.
func disposePlugInInstance(_ inInstance: AudioComponentInstance) -> OSStatus? {
    guard plugInInstance(inInstance) != nil, let p = CompatHandles.remove(inInstance, as: PlugInInstance.self) else { return nil }
    return p.interface.pointee.Close(p.selfPointer)
}

// The methods' C types are Apple's `AudioUnit…Proc` (COATAudioToolboxTypes), except GetPropertyInfo:
// Apple's takes `UnsafeMutablePointer<DarwinBoolean>?`, a Swift type here, so it is called through a
// raw pointer of the same ABI.
typealias PlugInGetPropertyInfoProc = @convention(c) (UnsafeMutableRawPointer, UInt32, UInt32, UInt32, UnsafeMutablePointer<UInt32>?,
                                                      UnsafeMutableRawPointer?) -> OSStatus

/// What a plug-in answers for a selector it does not implement.
let plugInUnimplemented: OSStatus = kAudio_UnimplementedError

extension PlugInInstance {
    func initialize() -> OSStatus { method(kAudioUnitInitializeSelect, as: AudioUnitInitializeProc.self)?(selfPointer) ?? plugInUnimplemented }
    func uninitialize() -> OSStatus { method(kAudioUnitUninitializeSelect, as: AudioUnitUninitializeProc.self)?(selfPointer) ?? plugInUnimplemented }
    func getPropertyInfo(_ id: UInt32, _ scope: UInt32, _ element: UInt32, _ size: UnsafeMutablePointer<UInt32>?,
                         _ writable: UnsafeMutablePointer<DarwinBoolean>?) -> OSStatus {
        method(kAudioUnitGetPropertyInfoSelect, as: PlugInGetPropertyInfoProc.self)?(selfPointer, id, scope, element, size,
                                                                                       writable.map(UnsafeMutableRawPointer.init))
            ?? plugInUnimplemented
    }
    func getProperty(_ id: UInt32, _ scope: UInt32, _ element: UInt32, _ data: UnsafeMutableRawPointer, _ size: UnsafeMutablePointer<UInt32>) -> OSStatus {
        method(kAudioUnitGetPropertySelect, as: AudioUnitGetPropertyProc.self)?(selfPointer, id, scope, element, data, size) ?? plugInUnimplemented
    }
    func setProperty(_ id: UInt32, _ scope: UInt32, _ element: UInt32, _ data: UnsafeRawPointer?, _ size: UInt32) -> OSStatus {
        method(kAudioUnitSetPropertySelect, as: AudioUnitSetPropertyProc.self)?(selfPointer, id, scope, element, data, size) ?? plugInUnimplemented
    }
    func getParameter(_ id: UInt32, _ scope: UInt32, _ element: UInt32, _ value: UnsafeMutablePointer<Float32>) -> OSStatus {
        method(kAudioUnitGetParameterSelect, as: AudioUnitGetParameterProc.self)?(selfPointer, id, scope, element, value) ?? plugInUnimplemented
    }
    func setParameter(_ id: UInt32, _ scope: UInt32, _ element: UInt32, _ value: Float32, _ offset: UInt32) -> OSStatus {
        method(kAudioUnitSetParameterSelect, as: AudioUnitSetParameterProc.self)?(selfPointer, id, scope, element, value, offset) ?? plugInUnimplemented
    }
    func render(_ flags: UnsafeMutablePointer<AudioUnitRenderActionFlags>?, _ time: UnsafePointer<AudioTimeStamp>, _ bus: UInt32, _ frames: UInt32,
                _ data: UnsafeMutablePointer<AudioBufferList>) -> OSStatus {
        method(kAudioUnitRenderSelect, as: AudioUnitRenderProc.self)?(selfPointer, flags, time, bus, frames, data) ?? plugInUnimplemented
    }
    func reset(_ scope: UInt32, _ element: UInt32) -> OSStatus {
        method(kAudioUnitResetSelect, as: AudioUnitResetProc.self)?(selfPointer, scope, element) ?? plugInUnimplemented
    }
    /// Whether the plug-in implements `selector` (its `Lookup` returns a method).
    func canDo(_ selector: Int) -> Bool { interface.pointee.Lookup(Int16(truncatingIfNeeded: selector)) != nil }
}
