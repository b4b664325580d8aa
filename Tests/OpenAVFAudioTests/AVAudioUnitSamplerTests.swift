import Foundation
import OATTestSupport
import OpenAVFAudio
import Testing

@Suite("AVAudioUnitSampler")
struct AVAudioUnitSamplerTests {
    static let stereo = AVAudioFormat(standardFormatWithSampleRate: 44100, channels: 2)!
    static let bank = URL(fileURLWithPath: "/usr/share/sounds/sf2/TimGM6mb.sf2")

    /// Renders `slices` slices of 1024 frames of `sampler` through the main mixer offline, calling
    /// `each(slice)` before each; returns the left channel.
    func render(_ sampler: AVAudioUnitMIDIInstrument, slices: Int, each: (Int) -> Void) throws -> [Float] {
        let engine = AVAudioEngine()
        try engine.enableManualRenderingMode(.offline, format: Self.stereo, maximumFrameCount: 1024)
        engine.attach(sampler)
        engine.connect(sampler, to: engine.mainMixerNode, format: Self.stereo)
        try engine.start()
        let out = try #require(AVAudioPCMBuffer(pcmFormat: Self.stereo, frameCapacity: 1024))
        var left: [Float] = []
        for s in 0..<slices {
            each(s)
            #expect(try engine.renderOffline(1024, to: out) == .success)
            left += UnsafeBufferPointer(start: out.floatChannelData![0], count: Int(out.frameLength))
        }
        engine.stop()
        engine.detach(sampler)
        return left
    }

    @Test func soundBankInstrumentPlaysAtPitchAndMasterGainScalesIt() throws {
        let sampler = AVAudioUnitSampler()
        try sampler.loadSoundBankInstrument(at: Self.bank, program: 19, bankMSB: UInt8(kAUSampler_DefaultMelodicBankMSB), bankLSB: 0)
        let loud = try render(sampler, slices: 12) { if $0 == 0 { sampler.startNote(69, withVelocity: 100, onChannel: 0) } }
        let f = fundamentalFrequency(Array(loud[4410...]), sampleRate: 44100, near: 440)
        print("AVAudioUnitSampler organ A4: \(f) Hz, \(cents(f, relativeTo: 440)) cents")
        #expect(abs(cents(f, relativeTo: 440)) < 5)
        sampler.masterGain = -10
        let quiet = try render(sampler, slices: 12) { if $0 == 0 { sampler.startNote(69, withVelocity: 100, onChannel: 0) } }
        let delta = levelDB(quiet, from: 4410) - levelDB(loud, from: 4410)
        print("masterGain -10 dB: \(delta) dB")
        #expect(abs(delta + 10) < 0.3)
        #expect(sampler.overallGain == -10)
    }

    @Test func pitchBendAndGlobalTuning() throws {
        let sampler = AVAudioUnitSampler()   // Apple's default sine instrument
        let bent = try render(sampler, slices: 8) {
            if $0 == 0 { sampler.sendPitchBend(0, onChannel: 0); sampler.startNote(69, withVelocity: 100, onChannel: 0) }
        }
        let f = fundamentalFrequency(Array(bent[2048...]), sampleRate: 44100, near: 392)
        print("sine bent fully down: \(cents(f, relativeTo: 440)) cents")
        #expect(abs(cents(f, relativeTo: 440) + 200) < 2)
        sampler.globalTuning = -1200
        let tuned = try render(sampler, slices: 8) {
            if $0 == 0 { sampler.sendPitchBend(8192, onChannel: 0); sampler.startNote(69, withVelocity: 100, onChannel: 0) }
        }
        let g = fundamentalFrequency(Array(tuned[2048...]), sampleRate: 44100, near: 220)
        #expect(abs(cents(g, relativeTo: 220)) < 2)
    }

    @Test(.requires(TestResource.corpusMissing)) func audioFilesPlayPitchedByKey() throws {
        let path = try TestResource.corpusRoot() + "/ffmpeg-generated/wav/pcm_s16le_listinfo.wav"
        let sampler = AVAudioUnitSampler()
        try sampler.loadAudioFiles(at: [URL(fileURLWithPath: path)])
        let reference = try decodeWithToolbox(path)
        let mono = stride(from: 0, to: reference.samples.count, by: reference.channels).map { reference.samples[$0] }
        let root = try render(sampler, slices: 8) { if $0 == 0 { sampler.startNote(60, withVelocity: 127, onChannel: 0) } }
        let octave = try render(sampler, slices: 8) {
            if $0 == 0 { sampler.sendController(120, withValue: 0, onChannel: 0); sampler.startNote(72, withVelocity: 127, onChannel: 0) }
        }
        // Key 60 (the file's root here) plays the file as it is; key 72 at twice the speed.
        let asIs = correlation(Array(root[1024..<7000]), Array(mono[1024..<7000]))
        let doubled = correlation(Array(octave[1024..<7000]), (1024..<7000).map { mono[2 * $0] })
        print("loadAudioFiles: key 60 vs file \(asIs), key 72 vs file at 2x \(doubled)")
        #expect(asIs > 0.95)
        #expect(doubled > 0.9)
    }

    /// A 16-bit mono WAV of a `hz` sine at 44.1 kHz whose `smpl` chunk states MIDI unity note `root`.
    static func wavWithRootKey(_ root: UInt32, hz: Double, frames: Int) -> [UInt8] {
        func le32(_ v: UInt32) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24)] }
        func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
        var data: [UInt8] = []
        for i in 0..<frames { data += le16(UInt16(bitPattern: Int16(sin(2 * Double.pi * hz * Double(i) / 44100) * 16000))) }
        let fmt = Array("fmt ".utf8) + le32(16) + le16(1) + le16(1) + le32(44100) + le32(88200) + le16(2) + le16(16)
        let smpl = Array("smpl".utf8) + le32(36) + le32(0) + le32(0) + le32(22676) + le32(root) + le32(0) + le32(0) + le32(0) + le32(0) + le32(0)
        let body = Array("WAVE".utf8) + fmt + smpl + Array("data".utf8) + le32(UInt32(data.count)) + data
        return Array("RIFF".utf8) + le32(UInt32(body.count)) + body
    }

    @Test func anAudioFilesStatedRootKeyPlacesIt() throws {
        let path = "/tmp/oat-sampler-root-\(getpid()).wav"
        #expect(writeFile(path, Self.wavWithRootKey(67, hz: 300, frames: 22050)))
        defer { removeFile(path) }
        let sampler = AVAudioUnitSampler()
        try sampler.loadAudioFiles(at: [URL(fileURLWithPath: path)])
        let root = try render(sampler, slices: 6) { if $0 == 0 { sampler.startNote(67, withVelocity: 127, onChannel: 0) } }
        let up = try render(sampler, slices: 6) {
            if $0 == 0 { sampler.sendController(120, withValue: 0, onChannel: 0); sampler.startNote(79, withVelocity: 127, onChannel: 0) }
        }
        let f0 = fundamentalFrequency(Array(root[1024...]), sampleRate: 44100, near: 300)
        let f1 = fundamentalFrequency(Array(up[1024...]), sampleRate: 44100, near: 600)
        print("smpl root key 67: key 67 \(f0) Hz, key 79 \(f1) Hz")
        #expect(abs(cents(f0, relativeTo: 300)) < 2)
        #expect(abs(cents(f1, relativeTo: 600)) < 2)
    }

    @Test func missingBankErrorNamesThePath() throws {
        let sampler = AVAudioUnitSampler()
        let url = URL(fileURLWithPath: "/tmp/not-a-bank-\(getpid()).sf2")
        #expect {
            try sampler.loadSoundBankInstrument(at: url, program: 0, bankMSB: 0x79, bankLSB: 0)
        } throws: { error in
            "\(error)".contains(url.path) || (error as NSError).localizedDescription.contains(url.path)
        }
    }
}
