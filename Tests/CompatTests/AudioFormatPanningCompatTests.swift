// kAudioFormatProperty_BalanceFade and kAudioFormatProperty_PanningMatrix (AudioFormat.h) as macOS
// code asks for them: an AudioBalanceFade / AudioPanningInfo specifier pointing at a layout, and
// one Float32 coefficient per channel back.
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Testing

/// Asks for `id` with a specifier made (by `make`) around a layout of `tag`: the specifier and
/// the layout live for the two calls, as in a caller's stack frame.
private func coefficients<Spec>(_ id: AudioFormatPropertyID, _ tag: AudioChannelLayoutTag,
                                _ make: (UnsafePointer<AudioChannelLayout>) -> Spec) -> [Float32]? {
    var layout = AudioChannelLayout()
    layout.mChannelLayoutTag = tag
    return withUnsafePointer(to: &layout) { pointer -> [Float32]? in
        var spec = make(pointer)
        let specSize = UInt32(MemoryLayout<Spec>.size)
        return withUnsafePointer(to: &spec) { specPointer -> [Float32]? in
            var size: UInt32 = 0
            guard AudioFormatGetPropertyInfo(id, specSize, specPointer, &size) == noErr else { return nil }
            var out = [Float32](repeating: -1, count: Int(size) / 4)
            guard AudioFormatGetProperty(id, specSize, specPointer, &size, &out) == noErr, Int(size) == out.count * 4 else { return nil }
            return out
        }
    }
}

private func balanceFade(_ tag: AudioChannelLayoutTag, _ balance: Float32, _ fade: Float32, _ type: AudioBalanceFadeType) -> [Float32]? {
    coefficients(kAudioFormatProperty_BalanceFade, tag) {
        AudioBalanceFade(mLeftRightBalance: balance, mBackFrontFade: fade, mType: type, mChannelLayout: $0)
    }
}

private func pan(_ tag: AudioChannelLayoutTag, _ mode: AudioPanningMode, azimuth: Float32, flags: UInt32 = 2, coordinates: (Float32, Float32, Float32)? = nil,
                 gain: Float32 = 1) -> [Float32]? {
    coefficients(kAudioFormatProperty_PanningMatrix, tag) {
        AudioPanningInfo(mPanningMode: mode, mCoordinateFlags: flags, mCoordinates: coordinates ?? (azimuth, 0, 1), mGainScale: gain, mOutputChannelMap: $0)
    }
}

private func close(_ a: [Float32]?, _ b: [Float32], _ tolerance: Float32 = 1e-4) -> Bool {
    guard let a, a.count == b.count else { return false }
    return zip(a, b).allSatisfy { abs($0 - $1) <= tolerance }
}

private func power(_ g: [Float32]?) -> Float32 { (g ?? []).reduce(0) { $0 + $1 * $1 } }

@Suite struct AudioFormatPanningCompatTests {
    /// Apple's C layout: 4-byte enums, the specifiers 32 and 24 bytes.
    @Test func enumRawValuesAndLayout() {
        #expect(MemoryLayout<AudioPanningMode>.size == 4 && MemoryLayout<AudioBalanceFadeType>.size == 4)
        #expect(MemoryLayout<AudioPanningInfo>.size == 32 && MemoryLayout<AudioBalanceFade>.size == 24)
        #expect(AudioPanningMode.panningMode_SoundField.rawValue == 3 && AudioPanningMode.panningMode_VectorBasedPanning.rawValue == 4)
        #expect(AudioBalanceFadeType.maxUnityGain.rawValue == 0 && AudioBalanceFadeType.equalPower.rawValue == 1)
    }

    /// Max unity gain: the far side fades, nothing exceeds 1.
    @Test func balanceMaxUnityGain() {
        #expect(close(balanceFade(kAudioChannelLayoutTag_Stereo, 0, 0, .maxUnityGain), [1, 1]))
        #expect(close(balanceFade(kAudioChannelLayoutTag_Stereo, -1, 0, .maxUnityGain), [1, 0]))
        #expect(close(balanceFade(kAudioChannelLayoutTag_Stereo, 0.5, 0, .maxUnityGain), [0.5, 1]))
        // 5.1 (L R C LFE Ls Rs): the centre and the LFE keep unity.
        #expect(close(balanceFade(kAudioChannelLayoutTag_MPEG_5_1_A, 1, 0, .maxUnityGain), [0, 1, 1, 1, 0, 1]))
    }

    /// Equal power: 1 at the centre, +3 dB at full balance, the power of a pair constant.
    @Test func balanceEqualPower() {
        #expect(close(balanceFade(kAudioChannelLayoutTag_Stereo, 0, 0, .equalPower), [1, 1]))
        #expect(close(balanceFade(kAudioChannelLayoutTag_Stereo, 1, 0, .equalPower), [0, 1.41421]))
        for b: Float32 in [-0.8, -0.3, 0.2, 0.7] {
            #expect(abs(power(balanceFade(kAudioChannelLayoutTag_Stereo, b, 0, .equalPower)) - 2) < 1e-4)
        }
    }

    /// Fade moves between the front and the rear channels of a layout that has both; a stereo
    /// layout (no rear channels) is not faded.
    @Test func fade() {
        #expect(close(balanceFade(kAudioChannelLayoutTag_Quadraphonic, 0, -1, .maxUnityGain), [0, 0, 1, 1]))
        #expect(close(balanceFade(kAudioChannelLayoutTag_Quadraphonic, 0, 0.25, .maxUnityGain), [1, 1, 0.75, 0.75]))
        #expect(close(balanceFade(kAudioChannelLayoutTag_Quadraphonic, -1, 1, .maxUnityGain), [1, 0, 0, 0]))
        #expect(close(balanceFade(kAudioChannelLayoutTag_Stereo, 0, -1, .maxUnityGain), [1, 1]))
    }

    /// Vector-base panning: between the adjacent pair, power-normalised, scaled by the gain.
    @Test func vectorBasedPanning() {
        let h = Float32(0.5).squareRoot()
        #expect(close(pan(kAudioChannelLayoutTag_Stereo, .panningMode_VectorBasedPanning, azimuth: 0), [h, h]))
        #expect(close(pan(kAudioChannelLayoutTag_Stereo, .panningMode_VectorBasedPanning, azimuth: -30), [1, 0]))
        let right = pan(kAudioChannelLayoutTag_Stereo, .panningMode_VectorBasedPanning, azimuth: 15) ?? []
        #expect(right.count == 2 && right[1] > right[0] && right[0] > 0 && abs(power(right) - 1) < 1e-4)
        // 5.1: a source at the right surround speaker; the LFE never gets the source.
        #expect(close(pan(kAudioChannelLayoutTag_MPEG_5_1_A, .panningMode_VectorBasedPanning, azimuth: 110), [0, 0, 0, 0, 0, 1]))
        let between = pan(kAudioChannelLayoutTag_MPEG_5_1_A, .panningMode_VectorBasedPanning, azimuth: -70) ?? []
        #expect(between.count == 6 && between[0] > 0 && between[4] > 0 && between[1] == 0 && between[2] == 0 && between[3] == 0 && between[5] == 0)
        #expect(abs(power(pan(kAudioChannelLayoutTag_MPEG_5_1_A, .panningMode_VectorBasedPanning, azimuth: 50, gain: 0.5)) - 0.25) < 1e-4)
        // Rectangular coordinates: straight right (x = 1, y = 0) on stereo is the right speaker.
        #expect(close(pan(kAudioChannelLayoutTag_Stereo, .panningMode_VectorBasedPanning, azimuth: 0, flags: 1, coordinates: (1, 0, 0)), [0, 1]))
    }

    /// Sound field: every speaker by its closeness to the source, power-normalised.
    @Test func soundField() {
        let g = pan(kAudioChannelLayoutTag_MPEG_5_1_A, .panningMode_SoundField, azimuth: 0) ?? []
        #expect(g.count == 6 && abs(power(g) - 1) < 1e-4)
        #expect(g[2] > g[0] && g[0] == g[1] && g[0] > g[4] && g[4] == g[5] && g[3] == 0)
        #expect(close(pan(kAudioChannelLayoutTag_Stereo, .panningMode_SoundField, azimuth: 0, gain: 0), [0, 0]))
    }
}
