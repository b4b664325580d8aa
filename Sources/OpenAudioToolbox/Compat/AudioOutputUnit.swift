// Audio Toolbox–compatible AudioOutputUnit.h: starting and stopping output units.

import OATCore
import OATDevices
import OATFiles
import OATUnits
import FoundationEssentials
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Starts an output unit (Apple's `AudioOutputUnitStart`): its graph plays to the output
/// `OAT_OUTPUT` names (default: PulseAudio, else ALSA, else the null output); a generic output
/// does not start (render it with ``AudioUnitRender(_:_:_:_:_:_:)``). Render notifications run
/// around each device render.
/// IsRunning listeners are told after a start or stop changed it.
@discardableResult
public func AudioOutputUnitStart(_ ci: AudioUnit) -> OSStatus {
    guard let unit = compatUnit(ci) else { return kAudio_ParamError }
    if let owner = unit.owner { refreshGraphNotifies(owner) } else { refreshRenderNotifies(unit, ci) }
    return reportingIsRunning(unit.owner.map(outputUnits) ?? [unit]) { builtinAudioOutputUnitStart(ci) }
}

/// Stops an output unit (Apple's `AudioOutputUnitStop`); IsRunning listeners are told.
@discardableResult
public func AudioOutputUnitStop(_ ci: AudioUnit) -> OSStatus {
    guard let unit = compatUnit(ci) else { return kAudio_ParamError }
    return reportingIsRunning(unit.owner.map(outputUnits) ?? [unit]) { builtinAudioOutputUnitStop(ci) }
}

/// Starts an output unit: its graph plays to the output `OAT_OUTPUT` names (default: PulseAudio,
/// else ALSA, else the null output). A generic output does not start (render it with
/// ``AudioUnitRender(_:_:_:_:_:_:)``).
@discardableResult
func builtinAudioOutputUnitStart(_ ci: AudioUnit) -> OSStatus {
    guard let unit = compatUnit(ci) else { return kAudio_ParamError }
    guard unit.isOutput else { return kAudioUnitErr_InvalidProperty }
    if case .output(generic: true) = unit.component.kind { return noErr }
    if let owner = unit.owner { return owner.start() }
    guard unit.initialized, let graph = unit.graph else { return kAudioUnitErr_Uninitialized }
    if unit.running { return noErr }
    do {
        // Input first (its ring fills while the output starts); an I/O unit with its output
        // disabled is clocked by the real-time null output.
        try unit.startInput()
        try graph.start(unit.enableIO[0] == 0 ? .null(realTime: true) : (unit.outputSpec ?? CompatOutput.spec()), options: unit.outputOptions)
        unit.running = true
        return noErr
    } catch {
        unit.io?.node.stop()
        return osStatus(error, default: kAudioUnitErr_FailedInitialization)
    }
}

/// Stops an output unit: no render callback runs once this returns, and what the device already
/// holds (one I/O buffer, ``CompatUnit/outputOptions``) plays out first, so a stop right after the
/// last rendered frame, or a stop and start (a pause), loses nothing that was rendered.
@discardableResult
func builtinAudioOutputUnitStop(_ ci: AudioUnit) -> OSStatus {
    guard let unit = compatUnit(ci) else { return kAudio_ParamError }
    if let owner = unit.owner { return owner.stop() }
    unit.graph?.stop(drain: true)
    unit.io?.node.stop()
    unit.running = false
    return noErr
}

func outputUnits(_ g: CompatGraph) -> [CompatUnit] { g.units.map(\.unit).filter(\.isOutput) }

/// Runs a start or stop and calls the IsRunning listeners of `units` whose running state changed.
func reportingIsRunning(_ units: [CompatUnit], _ body: () -> OSStatus) -> OSStatus {
    func running(_ u: CompatUnit) -> Bool { u.running || u.owner?.running == true }
    let before = units.map(running)
    let status = body()
    for (u, was) in zip(units, before) where running(u) != was {
        let ref = u.handle
        for l in u.extras.listeners where l.id == kAudioOutputUnitProperty_IsRunning {
            l.proc(l.userData ?? compatNilClientData, ref, kAudioOutputUnitProperty_IsRunning, kAudioUnitScope_Global, 0)
        }
    }
    return status
}

// MARK: - Selectors, dispatch procs and start-time parameters

/// The first selector of the output-unit calls (Apple's `kAudioOutputUnitRange`).
public let kAudioOutputUnitRange: Int = 0x0200
/// The selector of ``AudioOutputUnitStart(_:)`` (for ``AudioComponentInstanceCanDo(_:_:)``).
public let kAudioOutputUnitStartSelect: Int = 0x0201
/// The selector of ``AudioOutputUnitStop(_:)`` (for ``AudioComponentInstanceCanDo(_:_:)``).
public let kAudioOutputUnitStopSelect: Int = 0x0202

/// A fast-dispatch start function (Apple's `AudioOutputUnitStartProc`): the type only (units here
/// are not looked up through a plug-in interface).
public typealias AudioOutputUnitStartProc = @convention(c) (UnsafeMutableRawPointer) -> OSStatus
/// A fast-dispatch stop function (Apple's `AudioOutputUnitStopProc`): the type only.
public typealias AudioOutputUnitStopProc = @convention(c) (UnsafeMutableRawPointer) -> OSStatus

/// When an output unit starts (Apple's `AudioOutputUnitStartAtTimeParams`, the value of
/// `kAudioOutputUnitProperty_StartTime`).
public struct AudioOutputUnitStartAtTimeParams: Sendable {
    /// The device time to start at.
    public var mTimestamp: AudioTimeStamp
    /// Flags (0).
    public var mFlags: UInt32
    /// A zeroed value.
    public init() { self.init(mTimestamp: AudioTimeStamp(), mFlags: 0) }
    /// Apple's memberwise initialiser.
    public init(mTimestamp: AudioTimeStamp, mFlags: UInt32) {
        self.mTimestamp = mTimestamp
        self.mFlags = mFlags
    }
}
