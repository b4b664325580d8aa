// Issue 26 §4 through AVFAudio: Apple's single-filter units as AVAudioUnitEffect(audioComponentDescription:)
// in an engine, their parameters set on the effect's audioUnit with AudioUnitParameters.h's IDs,
// measured on tones rendered offline.
import OATTestSupport
import Foundation
import OpenAVFAudio
import Testing

@Suite struct AVAudioUnitFilterEffectTests {
    /// The level in dB of a 0.5-amplitude tone at `frequency` after `effect` (its steady part).
    static func gainDB(_ effect: AVAudioUnitEffect, frequency: Double) throws -> Double {
        let engine = try AVAudioUnitFidelityTests.offlineEngine()
        let player = AVAudioPlayerNode()
        engine.attach(player)
        engine.attach(effect)
        let mono = try #require(AVAudioFormat(standardFormatWithSampleRate: 48000, channels: 1))
        engine.connect(player, to: effect, format: mono)
        engine.connect(effect, to: engine.mainMixerNode, format: mono)
        try engine.start()
        player.scheduleBuffer(AVAudioEngineOfflineTests.toneBuffer(frequency: frequency, amplitude: 0.5, frames: 24000))
        player.play()
        let out = try AVAudioEngineOfflineTests.render(engine, total: 24000)
        engine.stop()
        engine.detach(effect)
        // The mixer spreads a mono input equally over two channels (-3 dB each), so the level is
        // measured against a 0.5 tone through the same path with no effect in it.
        let amplitude = toneAmplitude(out[0], freq: frequency, rate: 48000, from: 12000, count: 9600)
        return 20 * log10(amplitude / Self.referenceAmplitude)
    }

    /// A 0.5 tone through player -> main mixer, on one output channel.
    static let referenceAmplitude: Double = {
        let engine = try! AVAudioUnitFidelityTests.offlineEngine()
        let player = AVAudioPlayerNode()
        engine.attach(player)
        let mono = AVAudioFormat(standardFormatWithSampleRate: 48000, channels: 1)!
        engine.connect(player, to: engine.mainMixerNode, format: mono)
        try! engine.start()
        player.scheduleBuffer(AVAudioEngineOfflineTests.toneBuffer(frequency: 500, amplitude: 0.5, frames: 24000))
        player.play()
        let out = try! AVAudioEngineOfflineTests.render(engine, total: 24000)
        return toneAmplitude(out[0], freq: 500, rate: 48000, from: 12000, count: 9600)
    }()

    static func effect(_ subType: UInt32) -> AVAudioUnitEffect {
        AVAudioUnitEffect(audioComponentDescription: AVAudioUnitFidelityTests.apple(kAudioUnitType_Effect, subType))
    }

    @Test("low-pass and high-pass units in an engine: -3 dB at the cutoff, the other side passes")
    func lowAndHighPass() throws {
        let low = Self.effect(kAudioUnitSubType_LowPassFilter)
        #expect(low.name == "AULowpass", "\(low.name)")
        #expect(AudioUnitSetParameter(low.audioUnit, kLowPassParam_CutoffFrequency, kAudioUnitScope_Global, 0, 1000, 0) == noErr)
        #expect(AudioUnitSetParameter(low.audioUnit, kLowPassParam_Resonance, kAudioUnitScope_Global, 0, -3, 0) == noErr)
        let lowPass = try Self.gainDB(low, frequency: 200)
        let low8k = try Self.gainDB(low, frequency: 8000)
        print("AULowpass at 1 kHz: 200 Hz \(String(format: "%.2f", lowPass)) dB, 8 kHz \(String(format: "%.1f", low8k)) dB")
        #expect(abs(lowPass) < 0.5, "the pass band: \(lowPass) dB")
        #expect(low8k < -30, "three octaves above a 2-pole cutoff: \(low8k) dB")

        let high = Self.effect(kAudioUnitSubType_HighPassFilter)
        #expect(AudioUnitSetParameter(high.audioUnit, kHipassParam_CutoffFrequency, kAudioUnitScope_Global, 0, 2000, 0) == noErr)
        #expect(AudioUnitSetParameter(high.audioUnit, kHipassParam_Resonance, kAudioUnitScope_Global, 0, -3, 0) == noErr)
        let highPass = try Self.gainDB(high, frequency: 12000), highStop = try Self.gainDB(high, frequency: 250)
        print("AUHipass at 2 kHz: 12 kHz \(String(format: "%.2f", highPass)) dB, 250 Hz \(String(format: "%.1f", highStop)) dB")
        #expect(abs(highPass) < 0.5, "\(highPass) dB")
        #expect(highStop < -30, "\(highStop) dB")
    }
}
