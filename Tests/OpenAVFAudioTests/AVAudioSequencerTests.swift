// Issue 26 §2: AVAudioSequencer and AVMusicTrack over the MusicPlayer C API: files in and out,
// track properties, the tempo map; playing through an engine is in AVAudioSequencerEngineTests.
#if canImport(AVFoundation)
import AVFoundation
#else
import OpenAVFAudio
#endif
import Foundation
import Testing

@Suite("AVAudioSequencer and AVMusicTrack")
struct AVAudioSequencerTests {
    /// A type 1 file: conductor (tempo 100 bpm, 3/4), one track with four quarter notes.
    static func smallFile() -> Data {
        var conductor: [UInt8] = [0x00, 0xFF, 0x51, 0x03, 0x09, 0x27, 0xC0, 0x00, 0xFF, 0x58, 0x04, 0x03, 0x02, 0x18, 0x08]
        conductor += [0x00, 0xFF, 0x2F, 0x00]
        var notes: [UInt8] = [0x00, 0xFF, 0x03, 0x04] + Array("lead".utf8)
        for (i, key) in [60, 62, 64, 65].enumerated() {
            notes += [i == 0 ? 0x00 : 0x00, 0x90, UInt8(key), 0x64, 0x83, 0x60, 0x80, UInt8(key), 0x40]
        }
        notes += [0x00, 0xFF, 0x2F, 0x00]
        func chunk(_ body: [UInt8]) -> [UInt8] {
            Array("MTrk".utf8) + [UInt8(body.count >> 24), UInt8((body.count >> 16) & 0xFF), UInt8((body.count >> 8) & 0xFF), UInt8(body.count & 0xFF)] + body
        }
        let header: [UInt8] = Array("MThd".utf8) + [0, 0, 0, 6, 0, 1, 0, 2, 0x01, 0xE0]
        return Data(header + chunk(conductor) + chunk(notes))
    }

    @Test("a file loads into tracks with lengths, tempo and properties; written back it loads the same")
    func loadAndWrite() throws {
        let sequencer = AVAudioSequencer()
        try sequencer.load(from: Self.smallFile(), options: [])
        #expect(sequencer.tracks.count == 1)
        let track = try #require(sequencer.tracks.first)
        #expect(track.lengthInBeats == 4, "\(track.lengthInBeats)")
        #expect(abs(track.lengthInSeconds - 4 * 0.6) < 1e-6, "100 bpm: \(track.lengthInSeconds)")
        #expect(abs(sequencer.seconds(forBeats: 2) - 1.2) < 1e-9)
        #expect(abs(sequencer.beats(forSeconds: 1.2) - 2) < 1e-9)
        #expect(track.timeResolution == 480)
        track.isMuted = true
        #expect(track.isMuted)
        track.offsetTime = 1.5
        #expect(track.offsetTime == 1.5)
        track.isLoopingEnabled = true
        track.numberOfLoops = AVMusicTrackLoopCount.forever.rawValue
        #expect(track.isLoopingEnabled && track.numberOfLoops == -1)
        #expect(track.loopRange.length == 4)

        var error: NSError?
        let data = sequencer.data(withSMPTEResolution: 240, error: &error)
        #expect(error == nil && data.count > 40)
        let again = AVAudioSequencer()
        try again.load(from: data, options: [])
        #expect(again.tracks.count == 1)
        #expect(abs((again.tracks.first?.lengthInBeats ?? 0) - 5.5) < 1e-9, "offset 1.5 + 4 beats: \(again.tracks.first?.lengthInBeats ?? 0)")
        #expect(abs(again.seconds(forBeats: 2) - 1.2) < 1e-6)

        let url = URL(fileURLWithPath: NSTemporaryDirectory() + "oat-avseq-\(getpid()).mid")
        defer { try? FileManager.default.removeItem(at: url) }
        try sequencer.write(to: url, smpteResolution: 480, replaceExisting: true)
        #expect(throws: (any Error).self) { try sequencer.write(to: url, smpteResolution: 480, replaceExisting: false) }
        let third = AVAudioSequencer()
        try third.load(from: url, options: .smf_ChannelsToTracks)
        #expect(third.tracks.count >= 1)
        #expect(throws: (any Error).self) { try third.load(from: Data([1, 2, 3]), options: []) }
        #expect(throws: (any Error).self) { try third.start() }

        let added = sequencer.createAndAppendTrack()
        #expect(sequencer.tracks.count == 2)
        #expect(sequencer.removeTrack(added))
        #expect(!sequencer.removeTrack(added))
        #expect(sequencer.tracks.count == 1)
    }
}
