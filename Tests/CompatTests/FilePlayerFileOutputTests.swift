// Issue 27 section 1: an AUGraph playing to `OAT_OUTPUT=wav:PATH` (a device no clock paces).
// After the file player's region has played, the device writes nothing while the program
// sleeps (it wrote 1.9-7.0 GB of silence), and the file holds the region's frames exactly.
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import OATTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite(.serialized) struct FilePlayerFileOutputTests {
    /// The size of the file at `path` (0 when missing).
    static func size(_ path: String) -> Int {
        var st = stat()
        return stat(path, &st) == 0 ? Int(st.st_size) : 0
    }

    @Test func filePlayerToAWAVOutputWritesTheRegionAndNothingWhileIdle() throws {
        let dir = try ScratchDirectory("fileplayer-wav")
        defer { dir.remove() }
        let input = dir.path + "/tone.wav"
        #expect(writeFile(input, HostileFiles.toneWAV(seconds: 1)))
        let out = dir.path + "/out.wav"
        setenv("OAT_OUTPUT", "wav:\(out)", 1)
        defer { unsetenv("OAT_OUTPUT") }

        let units = try PlayerUnitGraph(kAudioUnitSubType_AudioFilePlayer, output: kAudioUnitSubType_DefaultOutput)
        #expect(AUGraphInitialize(units.graph) == noErr)
        var fileID: AudioFileID?
        #expect(AudioFileOpenURL(URL(fileURLWithPath: input) as CFURL, .readPermission, 0, &fileID) == noErr)
        let file = try #require(fileID)
        var ids: [AudioFileID?] = [file]
        #expect(AudioUnitSetProperty(units.player, kAudioUnitProperty_ScheduledFileIDs, kAudioUnitScope_Global, 0, &ids,
                                     UInt32(MemoryLayout<AudioFileID>.size)) == noErr)
        let calls = RegionCalls()
        #expect(setRegion(units.player, testRegion(file, at: 0, startFrame: 0, frames: 22050, calls: calls)) == noErr)
        var prime: UInt32 = 0
        #expect(AudioUnitSetProperty(units.player, kAudioUnitProperty_ScheduledFilePrime, kAudioUnitScope_Global, 0, &prime, 4) == noErr)
        #expect(setStart(units.player) == noErr)
        #expect(AUGraphStart(units.graph) == noErr)
        // The region (0.5 s) renders at once; then the program sleeps.
        usleep(500_000)
        let early = Self.size(out)
        usleep(1_000_000)
        let late = Self.size(out)
        #expect(AUGraphStop(units.graph) == noErr)
        DisposeAUGraph(units.graph)
        AudioFileClose(file)
        print("file player to wav: \(early) bytes after 0.5 s, \(late) after 1.5 s")
        #expect(late == early, "the idle graph went on writing: \(early) bytes after 0.5 s, \(late) after 1.5 s")
        #expect(late < 10_000_000, "\(late) bytes for a 0.5 s region")
        let bytes = try #require(Corpus.read(out), "no WAV at \(out)")
        // Float32 stereo: the data chunk holds the region's 22050 frames, no more, no less.
        let dataBytes = Self.dataChunkSize(bytes)
        #expect(dataBytes == 22050 * 8, "the file holds \(dataBytes.map { $0 / 8 } ?? -1) frames for a 22050-frame region")
    }

    /// The size the `data` chunk's header gives.
    static func dataChunkSize(_ bytes: [UInt8]) -> Int? {
        var i = 12
        while i + 8 <= bytes.count {
            let id = String(decoding: bytes[i..<(i + 4)], as: UTF8.self)
            let size = Int(bytes[i + 4]) | Int(bytes[i + 5]) << 8 | Int(bytes[i + 6]) << 16 | Int(bytes[i + 7]) << 24
            if id == "data" { return size }
            i += 8 + size + (size & 1)
        }
        return nil
    }
}
