// AudioComponent.h, AUComponent.h, AudioOutputUnit.h, AudioUnitProperties.h and CoreAudioTypes.h
// calls added for Apple fidelity, used as macOS code uses them: component enumeration and
// names, instance queries, parameter lists and infos, MakeConnection chains, AudioUnitReset,
// C-convention callbacks and the LPCM helpers.
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Foundation
import Testing

/// A sine source for a render callback (the context travels as `inRefCon`, as on macOS).
private final class Sine: @unchecked Sendable {
    var frame = 0
    let hz: Double
    init(hz: Double) { self.hz = hz }
    func value(_ i: Int) -> Float { Float(0.5 * sin(2 * Double.pi * hz * Double(i) / 44100)) }
}

private func sineRender(_ refCon: UnsafeMutableRawPointer, _ flags: UnsafeMutablePointer<AudioUnitRenderActionFlags>,
                        _ time: UnsafePointer<AudioTimeStamp>, _ bus: UInt32, _ frames: UInt32,
                        _ ioData: UnsafeMutablePointer<AudioBufferList>?) -> OSStatus {
    let sine = Unmanaged<Sine>.fromOpaque(refCon).takeUnretainedValue()
    for buffer in UnsafeMutableAudioBufferListPointer(ioData!) {
        let p = buffer.mData!.assumingMemoryBound(to: Float.self)
        for i in 0..<Int(frames) { p[i] = sine.value(sine.frame + i) }
    }
    sine.frame += Int(frames)
    return noErr
}

/// One impulse, then silence.
private final class Impulse: @unchecked Sendable { var sent = false }

private func impulseRender(_ refCon: UnsafeMutableRawPointer, _ flags: UnsafeMutablePointer<AudioUnitRenderActionFlags>,
                           _ time: UnsafePointer<AudioTimeStamp>, _ bus: UInt32, _ frames: UInt32,
                           _ ioData: UnsafeMutablePointer<AudioBufferList>?) -> OSStatus {
    let impulse = Unmanaged<Impulse>.fromOpaque(refCon).takeUnretainedValue()
    for buffer in UnsafeMutableAudioBufferListPointer(ioData!) {
        let p = buffer.mData!.assumingMemoryBound(to: Float.self)
        for i in 0..<Int(frames) { p[i] = 0 }
        if !impulse.sent { p[0] = 1 }
    }
    impulse.sent = true
    return noErr
}

/// Counts calls per listener function.
private final class Calls: @unchecked Sendable { var a = 0; var b = 0 }

private func listenerA(_ refCon: UnsafeMutableRawPointer, _ unit: AudioUnit, _ id: AudioUnitPropertyID, _ scope: AudioUnitScope, _ element: AudioUnitElement) {
    Unmanaged<Calls>.fromOpaque(refCon).takeUnretainedValue().a += 1
}

private func listenerB(_ refCon: UnsafeMutableRawPointer, _ unit: AudioUnit, _ id: AudioUnitPropertyID, _ scope: AudioUnitScope, _ element: AudioUnitElement) {
    Unmanaged<Calls>.fromOpaque(refCon).takeUnretainedValue().b += 1
}

private func makeUnit(_ type: UInt32, _ subType: UInt32) throws -> AudioUnit {
    var desc = AudioComponentDescription(componentType: type, componentSubType: subType, componentManufacturer: kAudioUnitManufacturer_Apple,
                                         componentFlags: 0, componentFlagsMask: 0)
    let component = try #require(AudioComponentFindNext(nil, &desc))
    var unit: AudioUnit?
    #expect(AudioComponentInstanceNew(component, &unit) == noErr)
    return try #require(unit)
}

/// Renders `frames` frames of bus 0 (stereo Float32 non-interleaved); returns the left channel.
private func renderLeft(_ unit: AudioUnit, frames: Int, sampleTime: Double = 0) -> (OSStatus, [Float]) {
    var l = [Float](repeating: 0, count: frames), r = [Float](repeating: 0, count: frames)
    let list = AudioBufferList.allocate(maximumBuffers: 2)
    defer { free(list.unsafeMutablePointer) }
    var flags = AudioUnitRenderActionFlags()
    var time = AudioTimeStamp()
    time.mSampleTime = sampleTime
    time.mFlags = kAudioTimeStampSampleTimeValid
    let status = l.withUnsafeMutableBytes { lb in
        r.withUnsafeMutableBytes { rb -> OSStatus in
            list[0] = AudioBuffer(mNumberChannels: 1, mDataByteSize: UInt32(lb.count), mData: lb.baseAddress)
            list[1] = AudioBuffer(mNumberChannels: 1, mDataByteSize: UInt32(rb.count), mData: rb.baseAddress)
            return AudioUnitRender(unit, &flags, &time, 0, UInt32(frames), list.unsafeMutablePointer)
        }
    }
    return (status, l)
}

private func setCallback(_ unit: AudioUnit, _ proc: @escaping AURenderCallback, _ refCon: UnsafeMutableRawPointer) -> OSStatus {
    var cb = AURenderCallbackStruct(inputProc: proc, inputProcRefCon: refCon)
    return AudioUnitSetProperty(unit, kAudioUnitProperty_SetRenderCallback, kAudioUnitScope_Input, 0, &cb,
                                UInt32(MemoryLayout<AURenderCallbackStruct>.size))
}

@Suite struct AudioUnitHeadersCompatTests {
    @Test("AudioComponentCount agrees with AudioComponentFindNext; names, versions and instance components")
    func componentQueries() throws {
        var any = AudioComponentDescription(componentType: kAudioUnitType_Effect, componentSubType: 0, componentManufacturer: 0,
                                            componentFlags: 0, componentFlagsMask: 0)
        var found: [AudioComponent] = []
        var c = AudioComponentFindNext(nil, &any)
        while let component = c { found.append(component); c = AudioComponentFindNext(component, &any) }
        #expect(found.count >= 5)
        #expect(AudioComponentCount(&any) == UInt32(found.count))

        var eq = AudioComponentDescription(componentType: kAudioUnitType_Effect, componentSubType: kAudioUnitSubType_NBandEQ,
                                           componentManufacturer: kAudioUnitManufacturer_Apple, componentFlags: 0, componentFlagsMask: 0)
        #expect(AudioComponentCount(&eq) == 1)
        let component = try #require(AudioComponentFindNext(nil, &eq))
        var name: CFString?
        #expect(AudioComponentCopyName(component, &name) == noErr)
        #expect(name == "Apple: AUNBandEQ")
        var version: UInt32 = 0
        #expect(AudioComponentGetVersion(component, &version) == noErr)
        #expect(version == 0x0001_0000)

        var unit: AudioUnit?
        #expect(AudioComponentInstanceNew(component, &unit) == noErr)
        let instance = try #require(unit)
        #expect(AudioComponentInstanceGetComponent(instance) == component)
        #expect(AudioComponentInstanceCanDo(instance, Int16(kAudioUnitRenderSelect)))
        #expect(AudioComponentInstanceCanDo(instance, Int16(kAudioUnitResetSelect)))
        #expect(!AudioComponentInstanceCanDo(instance, Int16(kAudioOutputUnitStartSelect)))
        #expect(!AudioComponentInstanceCanDo(instance, Int16(kAudioUnitProcessSelect)))
        #expect(AudioComponentInstanceDispose(instance) == noErr)
        // A disposed-of instance: no component, nothing it can do.
        var stale = AudioComponentDescription()
        #expect(AudioComponentGetDescription(AudioComponentInstanceGetComponent(instance), &stale) == kAudio_ParamError)
        #expect(!AudioComponentInstanceCanDo(instance, Int16(kAudioUnitRenderSelect)))

        let output = try makeUnit(kAudioUnitType_Output, kAudioUnitSubType_GenericOutput)
        defer { AudioComponentInstanceDispose(output) }
        #expect(AudioComponentInstanceCanDo(output, Int16(kAudioOutputUnitStartSelect)))
        #expect(AudioComponentInstanceCanDo(output, Int16(kAudioOutputUnitStopSelect)))
    }

    @Test("AudioComponentInstantiate hands a working instance to its completion handler")
    func instantiate() throws {
        var desc = AudioComponentDescription(componentType: kAudioUnitType_Effect, componentSubType: kAudioUnitSubType_Delay,
                                             componentManufacturer: kAudioUnitManufacturer_Apple, componentFlags: 0, componentFlagsMask: 0)
        let component = try #require(AudioComponentFindNext(nil, &desc))
        nonisolated(unsafe) var result: (AudioComponentInstance?, OSStatus) = (nil, -1)
        AudioComponentInstantiate(component, [.loadInProcess]) { instance, status in result = (instance, status) }
        #expect(result.1 == noErr)
        let unit = try #require(result.0)
        #expect(AudioUnitInitialize(unit) == noErr)
        #expect(AudioComponentInstanceDispose(unit) == noErr)
    }

    @Test("ParameterList and ParameterInfo describe the unit's parameters as AudioUnitGetParameter sees them")
    func parameterInfo() throws {
        let delay = try makeUnit(kAudioUnitType_Effect, kAudioUnitSubType_Delay)
        defer { AudioComponentInstanceDispose(delay) }
        var size: UInt32 = 0
        var writable: DarwinBoolean = true
        #expect(AudioUnitGetPropertyInfo(delay, kAudioUnitProperty_ParameterList, kAudioUnitScope_Global, 0, &size, &writable) == noErr)
        #expect(!writable.boolValue)
        let count = Int(size) / MemoryLayout<AudioUnitParameterID>.size
        #expect(count >= 4)
        var ids = [AudioUnitParameterID](repeating: 0, count: count)
        #expect(AudioUnitGetProperty(delay, kAudioUnitProperty_ParameterList, kAudioUnitScope_Global, 0, &ids, &size) == noErr)
        #expect(Set(ids).isSuperset(of: [kDelayParam_WetDryMix, kDelayParam_DelayTime, kDelayParam_Feedback, kDelayParam_LopassCutoff]))

        for id in ids {
            var info = AudioUnitParameterInfo()
            var infoSize = UInt32(MemoryLayout<AudioUnitParameterInfo>.size)
            #expect(AudioUnitGetProperty(delay, kAudioUnitProperty_ParameterInfo, kAudioUnitScope_Global, id, &info, &infoSize) == noErr)
            var value: AudioUnitParameterValue = -1
            #expect(AudioUnitGetParameter(delay, id, kAudioUnitScope_Global, 0, &value) == noErr)
            #expect(info.minValue <= info.defaultValue && info.defaultValue <= info.maxValue, "parameter \(id)")
            #expect(info.minValue <= value && value <= info.maxValue, "parameter \(id)")
            #expect(info.flags.contains([.flag_IsReadable, .flag_IsWritable]))
            let cName = withUnsafeBytes(of: info.name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            #expect(!cName.isEmpty, "parameter \(id)")
            #expect(info.cfNameString == nil && !info.flags.contains(.flag_HasCFNameString))
            if id == kDelayParam_DelayTime {
                #expect(info.unit == .seconds)
                #expect(cName == "delay time")
            }
        }
        var info = AudioUnitParameterInfo()
        var infoSize = UInt32(MemoryLayout<AudioUnitParameterInfo>.size)
        #expect(AudioUnitGetProperty(delay, kAudioUnitProperty_ParameterInfo, kAudioUnitScope_Global, 9999, &info, &infoSize)
                == kAudioUnitErr_InvalidParameter)

        var channels = AUChannelInfo()
        var channelSize = UInt32(MemoryLayout<AUChannelInfo>.size)
        #expect(AudioUnitGetProperty(delay, kAudioUnitProperty_SupportedNumChannels, kAudioUnitScope_Global, 0, &channels, &channelSize) == noErr)
        #expect(channels == AUChannelInfo(inChannels: -1, outChannels: -1))
        // Properties not implemented answer Apple's unsupported-property error.
        var load: Float64 = 0
        var loadSize = UInt32(8)
        #expect(AudioUnitGetProperty(delay, kAudioUnitProperty_CPULoad, kAudioUnitScope_Global, 0, &load, &loadSize) == kAudioUnitErr_InvalidProperty)
    }

    @Test("kAudioUnitProperty_MakeConnection feeds a unit's input from another unit's output")
    func makeConnection() throws {
        let source = try makeUnit(kAudioUnitType_FormatConverter, kAudioUnitSubType_AUConverter)
        let output = try makeUnit(kAudioUnitType_Output, kAudioUnitSubType_GenericOutput)
        defer { AudioComponentInstanceDispose(source); AudioComponentInstanceDispose(output) }
        let sine = Sine(hz: 441)
        #expect(setCallback(source, sineRender, Unmanaged.passUnretained(sine).toOpaque()) == noErr)
        var connection = AudioUnitConnection(sourceAudioUnit: source, sourceOutputNumber: 0, destInputNumber: 0)
        #expect(AudioUnitSetProperty(output, kAudioUnitProperty_MakeConnection, kAudioUnitScope_Input, 0, &connection,
                                     UInt32(MemoryLayout<AudioUnitConnection>.size)) == noErr)
        #expect(AudioUnitInitialize(source) == noErr)
        #expect(AudioUnitInitialize(output) == noErr)
        let (status, left) = renderLeft(output, frames: 512)
        #expect(status == noErr)
        var error = 0.0, signal = 0.0
        for i in 0..<left.count { signal += Double(sine.value(i) * sine.value(i)); error += Double((left[i] - sine.value(i)) * (left[i] - sine.value(i))) }
        #expect(signal > 10)
        #expect(10 * log10(signal / max(error, 1e-12)) > 60, "the output is the source's sine")

        // A connection to itself or from a bus the source lacks is refused.
        var selfConnection = AudioUnitConnection(sourceAudioUnit: output, sourceOutputNumber: 0, destInputNumber: 0)
        #expect(AudioUnitSetProperty(output, kAudioUnitProperty_MakeConnection, kAudioUnitScope_Input, 0, &selfConnection,
                                     UInt32(MemoryLayout<AudioUnitConnection>.size)) == kAudioUnitErr_InvalidPropertyValue)
        var global = connection
        #expect(AudioUnitSetProperty(output, kAudioUnitProperty_MakeConnection, kAudioUnitScope_Global, 0, &global,
                                     UInt32(MemoryLayout<AudioUnitConnection>.size)) == kAudioUnitErr_InvalidScope)
    }

    @Test("AudioUnitReset clears a delay line: an impulse does not come back after the reset")
    func reset() throws {
        func echoEnergy(resetting: Bool) throws -> Double {
            let delay = try makeUnit(kAudioUnitType_Effect, kAudioUnitSubType_Delay)
            defer { AudioComponentInstanceDispose(delay) }
            let impulse = Impulse()
            #expect(setCallback(delay, impulseRender, Unmanaged.passUnretained(impulse).toOpaque()) == noErr)
            #expect(AudioUnitSetParameter(delay, kDelayParam_DelayTime, kAudioUnitScope_Global, 0, 0.05, 0) == noErr)
            #expect(AudioUnitSetParameter(delay, kDelayParam_WetDryMix, kAudioUnitScope_Global, 0, 100, 0) == noErr)
            #expect(AudioUnitInitialize(delay) == noErr)
            _ = renderLeft(delay, frames: 512)                       // the impulse enters the line (echo at ~2205 frames)
            if resetting { #expect(AudioUnitReset(delay, kAudioUnitScope_Global, 0) == noErr) }
            var energy = 0.0
            for s in 1...8 {
                let (status, left) = renderLeft(delay, frames: 512, sampleTime: Double(s * 512))
                #expect(status == noErr)
                energy += left.reduce(0) { $0 + Double($1 * $1) }
            }
            return energy
        }
        #expect(try echoEnergy(resetting: false) > 1e-3, "without a reset the echo comes back")
        #expect(try echoEnergy(resetting: true) < 1e-9, "after AudioUnitReset the line is empty")
    }

    @Test("Listener and AudioFile callbacks are C function pointers; removing one listener keeps the other with the same user data")
    func cConventionCallbacks() throws {
        #expect(MemoryLayout<AudioUnitPropertyListenerProc>.size == MemoryLayout<Int>.size)
        #expect(MemoryLayout<AudioQueuePropertyListenerProc>.size == MemoryLayout<Int>.size)
        #expect(MemoryLayout<AudioFile_ReadProc>.size == MemoryLayout<Int>.size)
        let unit = try makeUnit(kAudioUnitType_Effect, kAudioUnitSubType_Delay)
        defer { AudioComponentInstanceDispose(unit) }
        let calls = Calls()
        let refCon = Unmanaged.passUnretained(calls).toOpaque()
        #expect(AudioUnitAddPropertyListener(unit, kAudioUnitProperty_MaximumFramesPerSlice, listenerA, refCon) == noErr)
        #expect(AudioUnitAddPropertyListener(unit, kAudioUnitProperty_MaximumFramesPerSlice, listenerB, refCon) == noErr)
        var frames: UInt32 = 2048
        #expect(AudioUnitSetProperty(unit, kAudioUnitProperty_MaximumFramesPerSlice, kAudioUnitScope_Global, 0, &frames, 4) == noErr)
        #expect(calls.a == 1 && calls.b == 1)
        #expect(AudioUnitRemovePropertyListenerWithUserData(unit, kAudioUnitProperty_MaximumFramesPerSlice, listenerB, refCon) == noErr)
        frames = 1024
        #expect(AudioUnitSetProperty(unit, kAudioUnitProperty_MaximumFramesPerSlice, kAudioUnitScope_Global, 0, &frames, 4) == noErr)
        #expect(calls.a == 2, "listenerA stays")
        #expect(calls.b == 1, "listenerB was the one removed")
        #expect(AudioUnitRemovePropertyListener(unit, kAudioUnitProperty_MaximumFramesPerSlice, listenerA) == noErr)
        frames = 512
        #expect(AudioUnitSetProperty(unit, kAudioUnitProperty_MaximumFramesPerSlice, kAudioUnitScope_Global, 0, &frames, 4) == noErr)
        #expect(calls.a == 2, "AudioUnitRemovePropertyListener removed listenerA whatever its user data")
    }

    @Test("FillOutASBDForLPCM, CalculateLPCMFlags and IsAudioFormatNativeEndian give Apple's LPCM descriptions")
    func lpcmHelpers() {
        var asbd = AudioStreamBasicDescription()
        FillOutASBDForLPCM(&asbd, 44100, 2, 16, 16, false, false)
        #expect(asbd.mFormatID == kAudioFormatLinearPCM)
        #expect(asbd.mFormatFlags == kAudioFormatFlagIsSignedInteger | kAudioFormatFlagIsPacked)
        #expect(asbd.mBytesPerFrame == 4 && asbd.mBytesPerPacket == 4 && asbd.mFramesPerPacket == 1 && asbd.mBitsPerChannel == 16)
        #expect(IsAudioFormatNativeEndian(asbd))
        FillOutASBDForLPCM(&asbd, 48000, 2, 32, 32, true, false, true)
        #expect(asbd.mFormatFlags == kAudioFormatFlagIsFloat | kAudioFormatFlagIsPacked | kAudioFormatFlagIsNonInterleaved)
        #expect(asbd.mBytesPerFrame == 4)
        #expect(CalculateLPCMFlags(24, 32, false, true, false) == kAudioFormatFlagIsSignedInteger | kAudioFormatFlagIsBigEndian | kAudioFormatFlagIsAlignedHigh)
        FillOutASBDForLPCM(&asbd, 44100, 1, 24, 24, false, true)
        #expect(!IsAudioFormatNativeEndian(asbd))
        #expect(AudioChannelLayoutTag_GetNumberOfChannels(kAudioChannelLayoutTag_MPEG_5_1_D) == 6)
        var ts = AudioTimeStamp()
        FillOutAudioTimeStampWithSampleAndHostTime(&ts, 1024, 77)
        #expect(ts.mSampleTime == 1024 && ts.mHostTime == 77 && ts.mFlags == [.sampleTimeValid, .hostTimeValid])
    }
}

/// `kAudioUnitProperty_BypassEffect`: an effect passes its input through untouched while
/// bypassed (it answered noErr and did nothing before); units without an input refuse it.
@Suite struct BypassEffectCompatTests {
    @Test func aBypassedDelayPassesItsInputThrough() throws {
        func firstFrames(bypass: UInt32?) throws -> (first: Float, echo: Double, get: UInt32) {
            let delay = try makeUnit(kAudioUnitType_Effect, kAudioUnitSubType_Delay)
            defer { AudioComponentInstanceDispose(delay) }
            let impulse = Impulse()
            #expect(setCallback(delay, impulseRender, Unmanaged.passUnretained(impulse).toOpaque()) == noErr)
            #expect(AudioUnitSetParameter(delay, kDelayParam_DelayTime, kAudioUnitScope_Global, 0, 0.05, 0) == noErr)
            #expect(AudioUnitSetParameter(delay, kDelayParam_WetDryMix, kAudioUnitScope_Global, 0, 100, 0) == noErr)
            #expect(AudioUnitInitialize(delay) == noErr)
            if var b = bypass {
                #expect(AudioUnitSetProperty(delay, kAudioUnitProperty_BypassEffect, kAudioUnitScope_Global, 0, &b, 4) == noErr)
            }
            var value: UInt32 = 9
            var size: UInt32 = 4
            #expect(AudioUnitGetProperty(delay, kAudioUnitProperty_BypassEffect, kAudioUnitScope_Global, 0, &value, &size) == noErr)
            let (status, left) = renderLeft(delay, frames: 512)
            #expect(status == noErr)
            var echo = 0.0
            for s in 1...8 { echo += renderLeft(delay, frames: 512, sampleTime: Double(s * 512)).1.reduce(0) { $0 + Double($1 * $1) } }
            return (left[0], echo, value)
        }
        let wet = try firstFrames(bypass: nil)
        #expect(wet.get == 0 && wet.first == 0 && wet.echo > 1e-3, "fully wet: no dry impulse, an echo: \(wet)")
        let bypassed = try firstFrames(bypass: 1)
        #expect(bypassed.get == 1, "the property reads back")
        #expect(bypassed.first == 1 && bypassed.echo == 0, "bypassed: the impulse as it came, no echo: \(bypassed)")
        let back = try firstFrames(bypass: 0)
        #expect(back.first == 0 && back.echo > 1e-3)
    }

    @Test func unitsWithoutAnInputHaveNoBypass() throws {
        let player = try makeUnit(kAudioUnitType_Generator, kAudioUnitSubType_AudioFilePlayer)
        defer { AudioComponentInstanceDispose(player) }
        var b: UInt32 = 1
        #expect(AudioUnitSetProperty(player, kAudioUnitProperty_BypassEffect, kAudioUnitScope_Global, 0, &b, 4) == kAudioUnitErr_InvalidProperty)
    }
}
