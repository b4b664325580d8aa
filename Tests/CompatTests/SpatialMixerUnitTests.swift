// Issue 26 §3: the spatial mixer (kAudioUnitSubType_SpatialMixer) found with AudioComponentFindNext,
// set up with Apple's property and parameter IDs, rendered with AudioUnitRender from a render
// callback, and measured: a source at +90° is louder on the right, distance follows the curve.
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Foundation
import Testing

private let rate = 48_000.0

/// The sine a render callback plays: its frame counter.
final class SpatialMixerToneState: @unchecked Sendable { var frame = 0 }

private func toneCallback(_ inRefCon: UnsafeMutableRawPointer, _ ioActionFlags: UnsafeMutablePointer<AudioUnitRenderActionFlags>,
                          _ inTimeStamp: UnsafePointer<AudioTimeStamp>, _ inBusNumber: UInt32, _ inNumberFrames: UInt32,
                          _ ioData: UnsafeMutablePointer<AudioBufferList>?) -> OSStatus {
    let state = Unmanaged<SpatialMixerToneState>.fromOpaque(inRefCon).takeUnretainedValue()
    guard let ioData else { return noErr }
    for buffer in UnsafeMutableAudioBufferListPointer(ioData) {
        let p = buffer.mData!.assumingMemoryBound(to: Float.self)
        for i in 0..<Int(inNumberFrames) { p[i] = Float(0.5 * sin(2 * .pi * 1000 * Double(state.frame + i) / rate)) }
    }
    state.frame += Int(inNumberFrames)
    return noErr
}

private func floatFormat(channels: UInt32) -> AudioStreamBasicDescription {
    AudioStreamBasicDescription(mSampleRate: rate, mFormatID: kAudioFormatLinearPCM,
                                mFormatFlags: kAudioFormatFlagIsFloat | kAudioFormatFlagIsPacked | kAudioFormatFlagIsNonInterleaved,
                                mBytesPerPacket: 4, mFramesPerPacket: 1, mBytesPerFrame: 4, mChannelsPerFrame: channels, mBitsPerChannel: 32, mReserved: 0)
}

@Suite("AUSpatialMixer through the C API")
struct SpatialMixerUnitTests {
    let state = SpatialMixerToneState()

    func makeMixer() throws -> AudioUnit {
        var desc = AudioComponentDescription(componentType: kAudioUnitType_Mixer, componentSubType: kAudioUnitSubType_SpatialMixer,
                                             componentManufacturer: kAudioUnitManufacturer_Apple, componentFlags: 0, componentFlagsMask: 0)
        let component = try #require(AudioComponentFindNext(nil, &desc), "no spatial mixer component")
        var unit: AudioUnit?
        #expect(AudioComponentInstanceNew(component, &unit) == noErr)
        let u = try #require(unit)
        var mono = floatFormat(channels: 1), stereo = floatFormat(channels: 2)
        let size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
        #expect(AudioUnitSetProperty(u, kAudioUnitProperty_StreamFormat, kAudioUnitScope_Input, 0, &mono, size) == noErr)
        #expect(AudioUnitSetProperty(u, kAudioUnitProperty_StreamFormat, kAudioUnitScope_Output, 0, &stereo, size) == noErr)
        var callback = AURenderCallbackStruct(inputProc: toneCallback, inputProcRefCon: Unmanaged.passUnretained(state).toOpaque())
        #expect(AudioUnitSetProperty(u, kAudioUnitProperty_SetRenderCallback, kAudioUnitScope_Input, 0, &callback,
                                     UInt32(MemoryLayout<AURenderCallbackStruct>.size)) == noErr)
        return u
    }

    /// Renders `slices` × 480 frames; the RMS of each channel over the last half.
    func render(_ u: AudioUnit, slices: Int = 20) -> (left: Double, right: Double) {
        let frames = 480
        var l = [Float](repeating: 0, count: frames), r = [Float](repeating: 0, count: frames)
        let list = AudioBufferList.allocate(maximumBuffers: 2)
        defer { free(list.unsafeMutablePointer) }
        var flags = AudioUnitRenderActionFlags()
        var time = AudioTimeStamp()
        time.mFlags = kAudioTimeStampSampleTimeValid
        var sl = 0.0, sr = 0.0, n = 0
        for s in 0..<slices {
            let status = l.withUnsafeMutableBytes { lb in
                r.withUnsafeMutableBytes { rb -> OSStatus in
                    list[0] = AudioBuffer(mNumberChannels: 1, mDataByteSize: UInt32(lb.count), mData: lb.baseAddress)
                    list[1] = AudioBuffer(mNumberChannels: 1, mDataByteSize: UInt32(rb.count), mData: rb.baseAddress)
                    return AudioUnitRender(u, &flags, &time, 0, UInt32(frames), list.unsafeMutablePointer)
                }
            }
            #expect(status == noErr)
            time.mSampleTime += Double(frames)
            if s >= slices / 2 {
                for i in 0..<frames { sl += Double(l[i] * l[i]); sr += Double(r[i] * r[i]); n += 1 }
            }
        }
        return ((sl / Double(max(1, n))).squareRoot(), (sr / Double(max(1, n))).squareRoot())
    }

    @Test func propertiesAndParametersWithApplesIDs() throws {
        let u = try makeMixer()
        defer { AudioComponentInstanceDispose(u) }
        var algorithm = kSpatializationAlgorithm_SphericalHead.rawValue
        #expect(AudioUnitSetProperty(u, kAudioUnitProperty_SpatializationAlgorithm, kAudioUnitScope_Input, 0, &algorithm, 4) == noErr)
        var back: UInt32 = 99, size: UInt32 = 4
        #expect(AudioUnitGetProperty(u, kAudioUnitProperty_SpatializationAlgorithm, kAudioUnitScope_Input, 0, &back, &size) == noErr)
        #expect(back == 1)
        var bad: UInt32 = 42
        #expect(AudioUnitSetProperty(u, kAudioUnitProperty_SpatializationAlgorithm, kAudioUnitScope_Input, 0, &bad, 4) == kAudioUnitErr_InvalidPropertyValue)
        #expect(AudioUnitSetProperty(u, kAudioUnitProperty_SpatializationAlgorithm, kAudioUnitScope_Output, 0, &algorithm, 4) == kAudioUnitErr_InvalidScope)
        var params = MixerDistanceParams()
        size = UInt32(MemoryLayout<MixerDistanceParams>.size)
        #expect(AudioUnitGetProperty(u, kAudioUnitProperty_SpatialMixerDistanceParams, kAudioUnitScope_Input, 0, &params, &size) == noErr)
        #expect(params.mReferenceDistance == 1)
        var curve = AUSpatialMixerAttenuationCurve.spatialMixerAttenuationCurve_Inverse.rawValue
        #expect(AudioUnitSetProperty(u, kAudioUnitProperty_SpatialMixerAttenuationCurve, kAudioUnitScope_Input, 0, &curve, 4) == noErr)
        var output = AUSpatialMixerOutputType.spatialMixerOutputType_Headphones.rawValue
        #expect(AudioUnitSetProperty(u, kAudioUnitProperty_SpatialMixerOutputType, kAudioUnitScope_Global, 0, &output, 4) == noErr)
        #expect(AudioUnitSetParameter(u, kSpatialMixerParam_Azimuth, kAudioUnitScope_Input, 0, 90, 0) == noErr)
        #expect(AudioUnitSetParameter(u, k3DMixerParam_Distance, kAudioUnitScope_Input, 0, 1, 0) == noErr)
        #expect(AudioUnitSetParameter(u, kSpatialMixerParam_Azimuth, kAudioUnitScope_Input, 0, 400, 0) != noErr)
        var value: AudioUnitParameterValue = 0
        #expect(AudioUnitGetParameter(u, k3DMixerParam_Azimuth, kAudioUnitScope_Input, 0, &value) == noErr)
        #expect(value == 90)
        #expect(AudioUnitInitialize(u) == noErr)
        let level = render(u)
        let ild = 20 * log10(level.right / level.left)
        print("AUSpatialMixer spherical head +90°, 1 kHz: right \(level.right) left \(level.left), ILD \(ild) dB")
        #expect(ild > 3, "ILD \(ild) dB")
    }

    @Test func distanceFollowsTheCurve() throws {
        let u = try makeMixer()
        defer { AudioComponentInstanceDispose(u) }
        var params = MixerDistanceParams(mReferenceDistance: 1, mMaxDistance: 100, mMaxAttenuation: 0)
        #expect(AudioUnitSetProperty(u, kAudioUnitProperty_3DMixerDistanceParams, kAudioUnitScope_Input, 0, &params,
                                     UInt32(MemoryLayout<MixerDistanceParams>.size)) == noErr)
        var curve = AU3DMixerAttenuationCurve.k3DMixerAttenuationCurve_Inverse.rawValue
        #expect(AudioUnitSetProperty(u, kAudioUnitProperty_3DMixerAttenuationCurve, kAudioUnitScope_Input, 0, &curve, 4) == noErr)
        #expect(AudioUnitInitialize(u) == noErr)
        #expect(AudioUnitSetParameter(u, kSpatialMixerParam_Distance, kAudioUnitScope_Input, 0, 1, 0) == noErr)
        let near = render(u)
        #expect(AudioUnitSetParameter(u, kSpatialMixerParam_Distance, kAudioUnitScope_Input, 0, 4, 0) == noErr)
        let far = render(u)
        let drop = 20 * log10(far.left / near.left)
        print("AUSpatialMixer inverse curve 1 m -> 4 m: \(drop) dB (model \(20 * log10(0.25)) dB)")
        #expect(abs(drop - 20 * log10(0.25)) < 0.3, "\(drop) dB")
        #expect(abs(near.left - near.right) < 1e-4, "equal power at 0°")
    }
}
