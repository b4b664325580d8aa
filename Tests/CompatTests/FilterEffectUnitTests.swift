// Issue 26 §4: the single-filter effect units of AudioUnitParameters.h (low-pass, high-pass,
// band-pass, high shelf, low shelf, parametric EQ) and the distortion, found with
// AudioComponentFindNext, set with AudioUnitSetParameter by Apple's parameter IDs, and measured on
// tones: the level of a steady sine after the unit against the level before it.
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Foundation
import Testing

private let rate = 44_100.0

private func makeEffect(_ subType: UInt32) throws -> AudioUnit {
    var desc = AudioComponentDescription(componentType: kAudioUnitType_Effect, componentSubType: subType,
                                         componentManufacturer: kAudioUnitManufacturer_Apple, componentFlags: 0, componentFlagsMask: 0)
    let component = try #require(AudioComponentFindNext(nil, &desc), "no component \(subType)")
    var unit: AudioUnit?
    #expect(AudioComponentInstanceNew(component, &unit) == noErr)
    let u = try #require(unit)
    #expect(AudioUnitInitialize(u) == noErr)
    return u
}

/// The gain in dB of `unit` for a sine at `frequency`: 1 s of tone processed in place (stereo),
/// the RMS of its last half (the filter settled) against the input's.
private func gainDB(_ unit: AudioUnit, at frequency: Double) -> Double {
    AudioUnitReset(unit, kAudioUnitScope_Global, 0)
    let frames = 512, slices = Int(rate) / frames
    var l = [Float](repeating: 0, count: frames), r = [Float](repeating: 0, count: frames)
    let list = AudioBufferList.allocate(maximumBuffers: 2)
    defer { free(list.unsafeMutablePointer) }
    var flags = AudioUnitRenderActionFlags()
    var time = AudioTimeStamp()
    time.mFlags = kAudioTimeStampSampleTimeValid
    var inSum = 0.0, outSum = 0.0
    for s in 0..<slices {
        for i in 0..<frames { l[i] = Float(0.5 * sin(2 * .pi * frequency * Double(s * frames + i) / rate)); r[i] = l[i] }
        let input = l
        let status = l.withUnsafeMutableBytes { lb in
            r.withUnsafeMutableBytes { rb -> OSStatus in
                list[0] = AudioBuffer(mNumberChannels: 1, mDataByteSize: UInt32(lb.count), mData: lb.baseAddress)
                list[1] = AudioBuffer(mNumberChannels: 1, mDataByteSize: UInt32(rb.count), mData: rb.baseAddress)
                return AudioUnitProcess(unit, &flags, &time, UInt32(frames), list.unsafeMutablePointer)
            }
        }
        if status != noErr { return .nan }
        time.mSampleTime += Double(frames)
        if s >= slices / 2 {
            for i in 0..<frames { inSum += Double(input[i] * input[i]); outSum += Double(l[i] * l[i]) }
        }
    }
    return 10 * log10(outSum / inSum)
}

private func set(_ unit: AudioUnit, _ id: AudioUnitParameterID, _ value: Float) {
    #expect(AudioUnitSetParameter(unit, id, kAudioUnitScope_Global, 0, value, 0) == noErr)
}

@Suite struct FilterEffectUnitTests {
    /// Each unit exists, with Apple's parameter IDs, defaults and ranges.
    @Test func parametersAsApplesHeader() throws {
        let expected: [(UInt32, [(AudioUnitParameterID, Float, Float, Float)])] = [
            (kAudioUnitSubType_LowPassFilter, [(kLowPassParam_CutoffFrequency, 6900, 10, 0), (kLowPassParam_Resonance, 0, -20, 40)]),
            (kAudioUnitSubType_HighPassFilter, [(kHipassParam_CutoffFrequency, 6900, 10, 0), (kHipassParam_Resonance, 0, -20, 40)]),
            (kAudioUnitSubType_BandPassFilter, [(kBandpassParam_CenterFrequency, 5000, 20, 0), (kBandpassParam_Bandwidth, 600, 100, 12000)]),
            (kAudioUnitSubType_HighShelfFilter, [(kHighShelfParam_CutOffFrequency, 10000, 10000, 0), (kHighShelfParam_Gain, 0, -40, 40)]),
            (kAudioUnitSubType_LowShelfFilter, [(kAULowShelfParam_CutoffFrequency, 80, 10, 200), (kAULowShelfParam_Gain, 0, -40, 40)]),
            (kAudioUnitSubType_ParametricEQ, [(kParametricEQParam_CenterFreq, 2000, 20, 0), (kParametricEQParam_Q, 1, 0.1, 20),
                                              (kParametricEQParam_Gain, 0, -20, 20)]),
            (kAudioUnitSubType_Distortion, [(kDistortionParam_Delay, 0.1, 0.1, 500), (kDistortionParam_SoftClipGain, -6, -80, 20),
                                            (kDistortionParam_FinalMix, 50, 0, 100)]),
        ]
        for (subType, params) in expected {
            let unit = try makeEffect(subType)
            defer { AudioComponentInstanceDispose(unit) }
            for (id, def, lo, hi) in params {
                var value: Float = -1
                #expect(AudioUnitGetParameter(unit, id, kAudioUnitScope_Global, 0, &value) == noErr)
                #expect(value == def, "subtype \(subType) parameter \(id): default \(value), Apple's \(def)")
                var info = AudioUnitParameterInfo()
                var size = UInt32(MemoryLayout<AudioUnitParameterInfo>.size)
                #expect(AudioUnitGetProperty(unit, kAudioUnitProperty_ParameterInfo, kAudioUnitScope_Global, id, &info, &size) == noErr)
                #expect(info.minValue == lo, "subtype \(subType) parameter \(id): minimum \(info.minValue)")
                if hi > 0 { #expect(info.maxValue == hi, "subtype \(subType) parameter \(id): maximum \(info.maxValue)") }
            }
        }
    }

    /// Low-pass and high-pass at 0 dB resonance: −3 dB at the cutoff, found by a sweep of tones to
    /// within 2 %; well inside the pass band 0 dB, an octave past the cutoff at least −11 dB; a
    /// resonance of 12 dB lifts the response at the cutoff by 12 dB.
    @Test(arguments: [kAudioUnitSubType_LowPassFilter, kAudioUnitSubType_HighPassFilter])
    func cutoffAtMinus3dB(subType: UInt32) throws {
        let unit = try makeEffect(subType)
        defer { AudioComponentInstanceDispose(unit) }
        let cutoff = 2000.0
        set(unit, 0, Float(cutoff))
        let low = subType == kAudioUnitSubType_LowPassFilter
        // Find the −3 dB point by bisection over tones between an octave below and above.
        var a = cutoff / 2, b = cutoff * 2
        for _ in 0..<12 {
            let m = (a * b).squareRoot()
            let g = gainDB(unit, at: m)
            if (g > -3.0103) == low { a = m } else { b = m }
        }
        let found = (a * b).squareRoot()
        #expect(abs(found / cutoff - 1) < 0.02, "−3 dB at \(found) Hz for a cutoff of \(cutoff) Hz")
        let pass = gainDB(unit, at: low ? 100 : 15000), stop = gainDB(unit, at: low ? cutoff * 2 : cutoff / 2)
        #expect(abs(pass) < 0.2, "pass band \(pass) dB")
        #expect(stop < -11, "an octave into the stop band \(stop) dB")
        set(unit, 1, 12)
        let peak = gainDB(unit, at: cutoff)
        #expect(abs(peak - (12 - 3.0103)) < 0.3, "resonance 12 dB: \(peak) dB at the cutoff")
    }

    /// Band-pass: 0 dB at the centre, −3 dB at the edges of its bandwidth in cents.
    @Test func bandPassCentreAndEdges() throws {
        let unit = try makeEffect(kAudioUnitSubType_BandPassFilter)
        defer { AudioComponentInstanceDispose(unit) }
        set(unit, kBandpassParam_CenterFrequency, 1000)
        set(unit, kBandpassParam_Bandwidth, 1200)  // one octave
        let centre = gainDB(unit, at: 1000)
        #expect(abs(centre) < 0.2, "centre \(centre) dB")
        let lowEdge = gainDB(unit, at: 1000 / 2.0.squareRoot()), highEdge = gainDB(unit, at: 1000 * 2.0.squareRoot())
        #expect(abs(lowEdge + 3.01) < 0.4, "lower edge \(lowEdge) dB")
        #expect(abs(highEdge + 3.01) < 0.4, "upper edge \(highEdge) dB")
        #expect(gainDB(unit, at: 100) < -15)
    }

    /// Shelves: the full gain far past the corner, half of it at the corner, 0 dB on the other side.
    @Test func shelvesAndParametric() throws {
        let lowShelf = try makeEffect(kAudioUnitSubType_LowShelfFilter)
        defer { AudioComponentInstanceDispose(lowShelf) }
        set(lowShelf, kAULowShelfParam_CutoffFrequency, 150)
        set(lowShelf, kAULowShelfParam_Gain, 12)
        #expect(abs(gainDB(lowShelf, at: 20) - 12) < 0.5)
        #expect(abs(gainDB(lowShelf, at: 150) - 6) < 0.3)
        #expect(abs(gainDB(lowShelf, at: 8000)) < 0.2)

        let highShelf = try makeEffect(kAudioUnitSubType_HighShelfFilter)
        defer { AudioComponentInstanceDispose(highShelf) }
        set(highShelf, kHighShelfParam_CutOffFrequency, 10000)
        set(highShelf, kHighShelfParam_Gain, -12)
        #expect(abs(gainDB(highShelf, at: 10000) + 6) < 0.3)
        #expect(abs(gainDB(highShelf, at: 100)) < 0.2)
        #expect(gainDB(highShelf, at: 20000) < -10)

        let eq = try makeEffect(kAudioUnitSubType_ParametricEQ)
        defer { AudioComponentInstanceDispose(eq) }
        set(eq, kParametricEQParam_CenterFreq, 1000)
        set(eq, kParametricEQParam_Q, 2)
        set(eq, kParametricEQParam_Gain, 10)
        #expect(abs(gainDB(eq, at: 1000) - 10) < 0.2)
        // Q 2: the half-gain (5 dB) points lie at f·(√(1 + 1/(4Q²)) ± 1/(2Q)).
        let half = (1 + 1 / 16.0).squareRoot()
        #expect(abs(gainDB(eq, at: 1000 * (half + 0.25)) - 5) < 0.4)
        #expect(abs(gainDB(eq, at: 1000 * (half - 0.25)) - 5) < 0.4)
        #expect(abs(gainDB(eq, at: 100)) < 0.2)
        // At 0 dB gain the unit passes the tone unchanged.
        set(eq, kParametricEQParam_Gain, 0)
        #expect(abs(gainDB(eq, at: 1000)) < 0.01)
    }
}
