// Issue 17 §3 h: an AUGraph with an AudioFilePlayer unit feeding the default output, which
// `OAT_OUTPUT=wav:` makes an unpaced file output, renders the file without gaps: faster than
// real time waits for the file reader instead of rendering silence. Written as macOS code is;
// only the import differs (and the OAT_OUTPUT line, a test harness setting).
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Foundation
import Testing
import OATTestSupport

extension CompatSeedTests {
    @Test(.requires(TestResource.corpusMissing))
    func fileplayerGraphToAnUnpacedOutputHasNoGaps() throws {
        let path = try requiredCorpusFile("ffmpeg-generated/mp3/l3_cbr128_44k_st_info.mp3")
        let wav = temporaryWAV("graph-gaps")
        defer { remove(wav) }
        setenv("OAT_OUTPUT", "wav:" + wav, 1)
        defer { unsetenv("OAT_OUTPUT") }

        var inputFile: AudioFileID?
        try #require(AudioFileOpenURL(URL(fileURLWithPath: path) as CFURL, .readPermission, 0, &inputFile) == noErr)
        defer { AudioFileClose(inputFile!) }
        var format = AudioStreamBasicDescription()
        var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
        try #require(AudioFileGetProperty(inputFile!, kAudioFilePropertyDataFormat, &size, &format) == noErr)
        var packets: UInt64 = 0
        size = 8
        try #require(AudioFileGetProperty(inputFile!, kAudioFilePropertyAudioDataPacketCount, &size, &packets) == noErr)

        var graph: AUGraph?
        try #require(NewAUGraph(&graph) == noErr)
        defer { DisposeAUGraph(graph!) }
        var outputcd = AudioComponentDescription(componentType: kAudioUnitType_Output, componentSubType: kAudioUnitSubType_DefaultOutput,
                                                 componentManufacturer: kAudioUnitManufacturer_Apple, componentFlags: 0, componentFlagsMask: 0)
        var playercd = AudioComponentDescription(componentType: kAudioUnitType_Generator, componentSubType: kAudioUnitSubType_AudioFilePlayer,
                                                 componentManufacturer: kAudioUnitManufacturer_Apple, componentFlags: 0, componentFlagsMask: 0)
        var outputNode = AUNode(), fileNode = AUNode()
        #expect(AUGraphAddNode(graph!, &outputcd, &outputNode) == noErr)
        #expect(AUGraphAddNode(graph!, &playercd, &fileNode) == noErr)
        #expect(AUGraphOpen(graph!) == noErr)
        var fileAU: AudioUnit?
        #expect(AUGraphNodeInfo(graph!, fileNode, nil, &fileAU) == noErr)
        #expect(AUGraphConnectNodeInput(graph!, fileNode, 0, outputNode, 0) == noErr)
        // A small read-ahead buffer: the file reader must keep up all along, not just once.
        var bufferFrames: UInt32 = 4096
        #expect(AudioUnitSetProperty(fileAU!, kAudioUnitProperty_ScheduledFileBufferSizeFrames, kAudioUnitScope_Global, 0,
                                     &bufferFrames, 4) == noErr)
        #expect(AUGraphInitialize(graph!) == noErr)

        #expect(AudioUnitSetProperty(fileAU!, kAudioUnitProperty_ScheduledFileIDs, kAudioUnitScope_Global, 0, &inputFile,
                                     UInt32(MemoryLayout<AudioFileID?>.size)) == noErr)
        var region = ScheduledAudioFileRegion(mTimeStamp: AudioTimeStamp(), mCompletionProc: nil, mCompletionProcUserData: nil,
                                              mAudioFile: inputFile!, mLoopCount: 0, mStartFrame: 0,
                                              mFramesToPlay: UInt32(packets) * format.mFramesPerPacket)
        region.mTimeStamp.mFlags = .sampleTimeValid
        #expect(AudioUnitSetProperty(fileAU!, kAudioUnitProperty_ScheduledFileRegion, kAudioUnitScope_Global, 0, &region,
                                     UInt32(MemoryLayout<ScheduledAudioFileRegion>.size)) == noErr)
        var prime: UInt32 = 0
        #expect(AudioUnitSetProperty(fileAU!, kAudioUnitProperty_ScheduledFilePrime, kAudioUnitScope_Global, 0, &prime, 4) == noErr)
        var start = AudioTimeStamp()
        start.mFlags = .sampleTimeValid
        start.mSampleTime = -1
        #expect(AudioUnitSetProperty(fileAU!, kAudioUnitProperty_ScheduleStartTimeStamp, kAudioUnitScope_Global, 0, &start,
                                     UInt32(MemoryLayout<AudioTimeStamp>.size)) == noErr)
        #expect(AUGraphStart(graph!) == noErr)
        // Until the player has played the whole region (its play time), then stop.
        let total = Double(region.mFramesToPlay)
        let deadline = Date().addingTimeInterval(30)
        var now = AudioTimeStamp()
        repeat {
            usleep(1000)
            size = UInt32(MemoryLayout<AudioTimeStamp>.size)
            AudioUnitGetProperty(fileAU!, kAudioUnitProperty_CurrentPlayTime, kAudioUnitScope_Global, 0, &now, &size)
            // ExtAudioFile drops the MP3's priming and padding: the played length is a little short
            // of the packets' frames.
        } while now.mSampleTime < total - 4096 && Date() < deadline
        usleep(20_000)
        #expect(AUGraphStop(graph!) == noErr)
        #expect(now.mSampleTime >= total - 4096, "played \(now.mSampleTime) of \(total) frames")

        let recorded = readFloatWAV(wav)
        let c = max(1, recorded.channels)
        let left = stride(from: 0, to: recorded.samples.count, by: c).map { recorded.samples[$0] }
        // Gaps: runs of 64 or more zero frames before the end of the file's audio.
        let playedEnd = min(left.count, Int(total) - 4096)
        var gaps = 0, zeros = 0
        for v in left[0..<playedEnd] {
            if v == 0 { zeros += 1 } else { if zeros >= 64 { gaps += 1 }; zeros = 0 }
        }
        let firstSound = left.firstIndex { $0 != 0 } ?? -1
        let result = try compare(recording: recorded.samples, channels: c, with: path)
        print("AUGraph file player to wav: \(gaps) gaps, first sound at \(firstSound), \(c) channels; \(result)")
        #expect(firstSound >= 0 && firstSound < 64, "lead-in of \(firstSound) frames")
        #expect(gaps == 0)
        // The player reads through ExtAudioFile, which drops the decoder's priming (the reference
        // here keeps it): a constant lag, then the same samples.
        #expect(result.snr > 60, "\(result)")
    }
}
