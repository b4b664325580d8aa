// AudioUnitProcess and AudioUnitProcessMultiple (AUComponent.h): an effect processes buffers the
// caller hands it, outside a graph and without render callbacks, over the unit's own render path
// (AudioUnitRender): the given input buffers stand in for the unit's inputs for one call.

import OATCore
import OATUnits

/// The input buffers of one AudioUnitProcess call, read by the unit's input node on the calling
/// thread (the call renders synchronously).
final class CompatProcessSource: @unchecked Sendable {
    /// The buffers of the call under way; nil between calls (the bus's render callback, if any, is used).
    var list: UnsafeMutablePointer<AudioBufferList>?
}

/// Processes `inNumberFrames` frames of `ioData` in place (Apple's `AudioUnitProcess`): the
/// buffers are the unit's input on bus 0 and receive its output, in the unit's stream formats
/// (non-interleaved Float32 by default, as for ``AudioUnitRender(_:_:_:_:_:_:)``). For effects,
/// mixers and converters that have been initialised, standalone (not in an AUGraph: there it
/// answers `kAudioUnitErr_CannotDoInCurrentContext`); units without inputs (generators, players,
/// output units) answer `kAudio_UnimplementedError`. Different: the first call re-initialises the
/// unit once (its state starts fresh) to give it an input that reads the handed buffers.
@discardableResult
public func AudioUnitProcess(_ inUnit: AudioUnit, _ ioActionFlags: UnsafeMutablePointer<AudioUnitRenderActionFlags>?,
                             _ inTimeStamp: UnsafePointer<AudioTimeStamp>, _ inNumberFrames: UInt32,
                             _ ioData: UnsafeMutablePointer<AudioBufferList>) -> OSStatus {
    guard let unit = compatUnit(inUnit) else { return kAudio_ParamError }
    return compatProcess(unit, inUnit, ioActionFlags, inTimeStamp, inNumberFrames, inputs: [UnsafePointer(ioData)], output: ioData)
}

/// Processes several input buffer lists into an output buffer list (Apple's
/// `AudioUnitProcessMultiple`): input list `i` is the unit's input bus `i` (a mixer mixes them),
/// the output list receives output bus 0. The same units and formats as ``AudioUnitProcess(_:_:_:_:_:)``.
/// Different: one output buffer list (bus 0); more answer `kAudio_UnimplementedError`; buses
/// without a given input use their render callback, or silence.
@discardableResult
public func AudioUnitProcessMultiple(_ inUnit: AudioUnit, _ ioActionFlags: UnsafeMutablePointer<AudioUnitRenderActionFlags>?,
                                     _ inTimeStamp: UnsafePointer<AudioTimeStamp>, _ inNumberFrames: UInt32,
                                     _ inNumberInputBufferLists: UInt32, _ inInputBufferLists: UnsafeMutablePointer<UnsafePointer<AudioBufferList>>,
                                     _ inNumberOutputBufferLists: UInt32,
                                     _ ioOutputBufferLists: UnsafeMutablePointer<UnsafeMutablePointer<AudioBufferList>>) -> OSStatus {
    guard let unit = compatUnit(inUnit) else { return kAudio_ParamError }
    guard inNumberOutputBufferLists >= 1 else { return kAudio_ParamError }
    guard inNumberOutputBufferLists == 1 else { return kAudio_UnimplementedError }
    let inputs = (0..<Int(inNumberInputBufferLists)).map { inInputBufferLists[$0] }
    return compatProcess(unit, inUnit, ioActionFlags, inTimeStamp, inNumberFrames, inputs: inputs, output: ioOutputBufferLists[0])
}

private func compatProcess(_ unit: CompatUnit, _ handle: AudioUnit, _ flags: UnsafeMutablePointer<AudioUnitRenderActionFlags>?,
                           _ time: UnsafePointer<AudioTimeStamp>, _ frames: UInt32, inputs: [UnsafePointer<AudioBufferList>],
                           output: UnsafeMutablePointer<AudioBufferList>) -> OSStatus {
    guard unit.owner == nil else { return kAudioUnitErr_CannotDoInCurrentContext }
    guard !unit.isOutput, !isPlayer(unit) else { return kAudio_UnimplementedError }
    guard unit.initialized else { return kAudioUnitErr_Uninitialized }
    let buses = unit.node?.inputChannels.count ?? 0
    guard buses > 0 else { return kAudio_UnimplementedError }
    guard inputs.count <= buses else { return kAudioUnitErr_InvalidElement }
    if unit.processSources.isEmpty {
        // Give the unit an input node per bus that reads the handed buffers: rebuild it once.
        for bus in 0..<buses { unit.processSources[UInt32(bus)] = CompatProcessSource() }
        unit.uninitialize()
        let status = unit.initialize()
        guard status == noErr else { return status }
    }
    for (bus, list) in inputs.enumerated() { unit.processSources[UInt32(bus)]?.list = UnsafeMutablePointer(mutating: list) }
    defer { for source in unit.processSources.values { source.list = nil } }
    return builtinAudioUnitRender(handle, flags, time, 0, frames, output)
}
