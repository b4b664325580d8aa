import Foundation
import OATCore
import OATTestSupport
import Testing
@testable import OATUnits

/// The General MIDI bank the tests play (Debian's timgm6mb-soundfont, Scripts/setup.sh).
let timGM6mb = "/usr/share/sounds/sf2/TimGM6mb.sf2"

/// Renders `frames` frames of `node` alone in a graph at `rate`, slices of `slice` frames,
/// after `before` (which sends events) ran; `more` sends events between the two halves.
func renderSampler(_ node: AUSamplerNode, rate: Double = 48000, slice: Int = 512, frames: Int,
                   before: (AUSamplerNode) -> Void = { _ in }) throws -> [[Float]] {
    let g = try AudioGraph(sampleRate: rate, channels: 2, maxFramesPerSlice: slice)
    try g.add(node)
    try g.connect(node, to: g.output)
    try g.commit()
    before(node)
    return g.renderOffline(frames: frames)
}

func note(_ key: UInt8, velocity: UInt8 = 100, channel: UInt8 = 0, at offset: UInt32 = 0) -> MIDIChannelEvent {
    MIDIChannelEvent(offset: offset, status: 0x90 | channel, data1: key, data2: velocity)
}

func expectedHz(_ key: Int) -> Double { 440 * pow(2, Double(key - 69) / 12) }

@Suite("AUSamplerNode")
struct SamplerNodeTests {
    @Test func defaultSineInstrumentPlaysEachKeyAtItsPitch() throws {
        for key in [57, 69, 81] {
            let s = try AUSamplerNode()
            let out = try renderSampler(s, frames: 9600) { $0.send(note(UInt8(key))) }
            let f = fundamentalFrequency(Array(out[0][2400...]), sampleRate: 48000, near: expectedHz(key))
            let error = cents(f, relativeTo: expectedHz(key))
            print("sine key \(key): \(f) Hz, \(error) cents")
            #expect(abs(error) < 2)
        }
    }

    @Test func soundFontProgramPlaysAtThePitchOfTheKey() throws {
        let t0 = Date()
        let s = try AUSamplerNode(instrument: .bankPreset(path: timGM6mb, program: 19, bankMSB: 0x79, bankLSB: 0))
        print("TimGM6mb loaded in \(Date().timeIntervalSince(t0)) s")
        for key in [60, 69] {
            let out = try renderSampler(s, frames: 14400) { $0.send(note(UInt8(key))) }
            let f = fundamentalFrequency(Array(out[0][4800...]), sampleRate: 48000, near: expectedHz(key))
            let error = cents(f, relativeTo: expectedHz(key))
            print("church organ key \(key): \(f) Hz, \(error) cents")
            #expect(abs(error) < 5)
            s.send(MIDIChannelEvent(offset: 0, status: 0xB0, data1: 120, data2: 0))
        }
    }

    @Test func aNoteSentAtAnOffsetStartsOnThatFrame() throws {
        // The sampler's own voices: on the frame. FluidSynth starts voices on its 64-frame blocks.
        let sine = try AUSamplerNode()
        let a = try renderSampler(sine, frames: 1024) { $0.send(note(69, at: 300)) }
        let onset = try #require(onsetFrame(a[0], threshold: 1e-5))
        print("sine onset \(onset) (sent at 300)")
        #expect(onset >= 300 && onset <= 302)
        #expect(a[0][..<300].allSatisfy { $0 == 0 })
        let bank = try AUSamplerNode(instrument: .bankPreset(path: timGM6mb, program: 19, bankMSB: 0x79, bankLSB: 0))
        let b = try renderSampler(bank, frames: 1024) { $0.send(note(69, velocity: 127, at: 300)) }
        let bankOnset = try #require(onsetFrame(b[0], threshold: 1e-5))
        print("FluidSynth onset \(bankOnset) (sent at 300)")
        #expect(bankOnset >= 300 && bankOnset < 300 + 64)
    }

    @Test func noteOffDecaysToSilence() throws {
        let s = try AUSamplerNode(instrument: .bankPreset(path: timGM6mb, program: 0, bankMSB: 0x79, bankLSB: 0))
        let g = try AudioGraph(sampleRate: 48000, channels: 2, maxFramesPerSlice: 512)
        try g.add(s)
        try g.connect(s, to: g.output)
        try g.commit()
        s.send(note(60, velocity: 110))
        let held = g.renderOffline(frames: 9600)
        s.send(MIDIChannelEvent(offset: 0, status: 0x80, data1: 60, data2: 0))
        let released = g.renderOffline(frames: 48000)
        let sounding = levelDB(held[0], from: 2400)
        let tail = levelDB(released[0], from: 48000 - 4800)
        print("piano held \(sounding) dB, 0.9-1.0 s after note off \(tail) dB, voices \(s.activeVoiceCount)")
        #expect(sounding > -40)
        #expect(tail < sounding - 60)   // FluidSynth keeps the voice a while longer, below -130 dB
        let sine = try AUSamplerNode()
        let g2 = try AudioGraph(sampleRate: 48000, channels: 2, maxFramesPerSlice: 512)
        try g2.add(sine)
        try g2.connect(sine, to: g2.output)
        try g2.commit()
        sine.send(note(69))
        _ = g2.renderOffline(frames: 4800)
        sine.send(MIDIChannelEvent(offset: 0, status: 0x80, data1: 69, data2: 0))
        let after = g2.renderOffline(frames: 9600)
        #expect(after[0][4800...].allSatisfy { $0 == 0 })
        #expect(sine.activeVoiceCount == 0)
    }

    @Test func pitchBendShiftsByTheBendRange() throws {
        // Apple's default bend range is 2 semitones: full up is +2 * 8191/8192 semitones.
        let want = 200.0 * 8191 / 8192
        for instrument in [AUSamplerInstrument.sine, .bankPreset(path: timGM6mb, program: 19, bankMSB: 0x79, bankLSB: 0)] {
            let s = try AUSamplerNode(instrument: instrument)
            let out = try renderSampler(s, frames: 14400) {
                $0.send(MIDIChannelEvent(offset: 0, status: 0xE0, data1: 0x7F, data2: 0x7F))
                $0.send(note(69))
            }
            let f = fundamentalFrequency(Array(out[0][4800...]), sampleRate: 48000, near: expectedHz(71))
            let shift = cents(f, relativeTo: 440)
            print("bend full up: \(shift) cents (want \(want))")
            #expect(abs(shift - want) < 5)
        }
    }

    @Test func gainAndTuningParameters() throws {
        let s = try AUSamplerNode()
        let ref = try renderSampler(s, frames: 9600) { $0.send(note(69)) }
        let quiet = try AUSamplerNode()
        quiet.gain.value = -12
        quiet.globalTuning.value = 100
        let out = try renderSampler(quiet, frames: 9600) { $0.send(note(69)) }
        let delta = levelDB(out[0], from: 2400) - levelDB(ref[0], from: 2400)
        let f = fundamentalFrequency(Array(out[0][2400...]), sampleRate: 48000, near: expectedHz(70))
        print("gain -12 dB: \(delta) dB; tuning +100 cents: \(cents(f, relativeTo: 440)) cents")
        #expect(abs(delta + 12) < 0.1)
        #expect(abs(cents(f, relativeTo: 440) - 100) < 2)
        let right = try AUSamplerNode()
        right.pan.value = 1
        let panned = try renderSampler(right, frames: 4800) { $0.send(note(69)) }
        #expect(levelDB(panned[0], from: 1000) < -200)
        #expect(levelDB(panned[1], from: 1000) > -20)
    }

    @Test func programChangeChangesTheTimbre() throws {
        let s = try AUSamplerNode(instrument: .soundBank(path: timGM6mb))
        func centroid(program: UInt8) throws -> Double {
            let out = try renderSampler(s, frames: 14400) {
                $0.send(MIDIChannelEvent(offset: 0, status: 0xB0, data1: 120, data2: 0))
                $0.send(MIDIChannelEvent(offset: 0, status: 0xC0, data1: program, data2: 0))
                $0.send(note(60, velocity: 110))
            }
            return spectralCentroid(Array(out[0][2400...]), sampleRate: 48000)
        }
        let flute = try centroid(program: 73)
        let brass = try centroid(program: 61)
        print("centroid flute \(flute) Hz, brass section \(brass) Hz")
        #expect(brass > flute * 1.5)
    }

    @Test func channelTenPlaysPercussion() throws {
        // Key 42 on channel 10 is GM's closed hi-hat: noise, bright, not periodic; the same key on
        // channel 1 is a piano F#2.
        let s = try AUSamplerNode(instrument: .soundBank(path: timGM6mb))
        let drum = try renderSampler(s, frames: 9600) { $0.send(note(42, velocity: 120, channel: 9)) }
        let tonal = try renderSampler(s, frames: 9600) {
            $0.send(MIDIChannelEvent(offset: 0, status: 0xB9, data1: 120, data2: 0))
            $0.send(note(42, velocity: 120, channel: 0))
        }
        let onset = onsetFrame(drum[0], threshold: 1e-4) ?? 0
        let d = periodicity(Array(drum[0][onset..<(onset + 2400)]), minLag: 48, maxLag: 960)
        let t = periodicity(Array(tonal[0][2400..<7200]), minLag: 48, maxLag: 960)
        let dc = spectralCentroid(Array(drum[0][onset..<(onset + 2048)]), sampleRate: 48000)
        let tc = spectralCentroid(Array(tonal[0][2400..<4448]), sampleRate: 48000)
        print("hi-hat on channel 10: level \(levelDB(drum[0])) dB, periodicity \(d), centroid \(dc) Hz; piano F#2: periodicity \(t), centroid \(tc) Hz")
        #expect(levelDB(drum[0]) > -50)
        #expect(d < 0.5)
        #expect(t > 0.8)
        #expect(dc > 4 * tc)
    }

    @Test func audioFileZonesPlayTheSamplePitchedByKey() throws {
        // A 1 kHz-ish sawtooth as a "file": key 60 (its root) plays it as is, key 72 at twice the speed.
        let rate = 48000.0
        var samples = [Float](repeating: 0, count: 24000)
        for i in samples.indices { samples[i] = Float(sin(2 * Double.pi * 300 * Double(i) / rate)) * 0.5 }
        let zone = AUSamplerZone(channels: [samples], sampleRate: rate, rootKey: 60, keyRange: 0...127)
        let s = try AUSamplerNode(instrument: .zones(AUSamplerZone.placed([zone])))
        let root = try renderSampler(s, frames: 9600) { $0.send(note(60, velocity: 127)) }
        let up = try renderSampler(s, frames: 9600) {
            $0.send(MIDIChannelEvent(offset: 0, status: 0xB0, data1: 120, data2: 0))
            $0.send(note(72, velocity: 127))
        }
        let f0 = fundamentalFrequency(Array(root[0][1000...]), sampleRate: rate, near: 300)
        let f1 = fundamentalFrequency(Array(up[0][1000...]), sampleRate: rate, near: 600)
        print("zone key 60: \(f0) Hz, key 72: \(f1) Hz")
        #expect(abs(cents(f0, relativeTo: 300)) < 2)
        #expect(abs(cents(f1, relativeTo: 600)) < 2)
    }

    @Test func aMissingBankNamesItsPath() throws {
        let path = "/tmp/no-such-bank-\(getpid()).sf2"
        var missing: AudioError?
        do { _ = try AUSamplerNode(instrument: .bankPreset(path: path, program: 0, bankMSB: 0x79, bankLSB: 0)) } catch { missing = error }
        let e = try #require(missing)
        print("missing bank: \(e)")
        #expect(e.description.contains(path))
        #expect(e.osStatus == -43)
        var noPreset: AudioError?
        do { _ = try AUSamplerNode(instrument: .bankPreset(path: timGM6mb, program: 0, bankMSB: 0x05, bankLSB: 3)) } catch { noPreset = error }
        let p = try #require(noPreset)
        print("missing preset: \(p)")
        #expect(p.description.contains(timGM6mb))
    }
}
