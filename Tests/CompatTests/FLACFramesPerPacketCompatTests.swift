// Issue 17 (Apple fidelity): a fixed-blocksize FLAC reports its block size as mFramesPerPacket, as
// Apple's AudioFile and AudioFileStream do, so the packets x frames-per-packet arithmetic of macOS
// code works (durations, the AUGraph file player's region length). Variable-blocksize FLAC (and
// Vorbis, Opus in Ogg) keep 0: Apple's CoreAudioTypes documentation gives 0 for formats whose
// packets hold a varying number of frames.
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Foundation
import Testing
import OATTestSupport

private let fixedFLAC = "flac-test-files/subset/02 - blocksize 4608.flac"
private let variableFLAC = "flac-test-files/subset/25 - variable blocksize file created with flake revision 264, modified to create smaller blocks.flac"

/// The data format, packet count and packet table of a file, through AudioFile.
private func fileFacts(_ path: String) throws -> (AudioStreamBasicDescription, UInt64, AudioFilePacketTableInfo) {
    var file: AudioFileID?
    try #require(AudioFileOpenURL(URL(fileURLWithPath: path) as CFURL, .readPermission, 0, &file) == noErr)
    defer { AudioFileClose(file!) }
    var format = AudioStreamBasicDescription()
    var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
    try #require(AudioFileGetProperty(file!, kAudioFilePropertyDataFormat, &size, &format) == noErr)
    var packets: UInt64 = 0
    size = 8
    try #require(AudioFileGetProperty(file!, kAudioFilePropertyAudioDataPacketCount, &size, &packets) == noErr)
    var table = AudioFilePacketTableInfo(mNumberValidFrames: 0, mPrimingFrames: 0, mRemainderFrames: 0)
    size = UInt32(MemoryLayout<AudioFilePacketTableInfo>.size)
    try #require(AudioFileGetProperty(file!, kAudioFilePropertyPacketTableInfo, &size, &table) == noErr)
    return (format, packets, table)
}

/// The data format an AudioFileStream reports after parsing the whole file.
private func streamFormat(_ path: String) throws -> AudioStreamBasicDescription {
    let bytes = try #require(Corpus.read(path))
    var stream: AudioFileStreamID?
    try #require(AudioFileStreamOpen(nil, { _, _, _, _ in }, { _, _, _, _, _ in }, kAudioFileFLACType, &stream) == noErr)
    defer { AudioFileStreamClose(stream!) }
    let status = bytes.withUnsafeBytes { AudioFileStreamParseBytes(stream!, UInt32($0.count), $0.baseAddress!, []) }
    try #require(status == noErr)
    var format = AudioStreamBasicDescription()
    var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
    try #require(AudioFileStreamGetProperty(stream!, kAudioFileStreamProperty_DataFormat, &size, &format) == noErr)
    return format
}

@Suite struct FLACFramesPerPacketCompatTests {
    @Test(.requires(TestResource.corpusMissing))
    func fixedBlockSizeFLACReportsItsBlockSize() throws {
        let path = try corpusFile(fixedFLAC)
        let (format, packets, table) = try fileFacts(path)
        #expect(format.mFormatID == kAudioFormatFLAC)
        #expect(format.mFramesPerPacket == 4608)
        #expect(try streamFormat(path).mFramesPerPacket == 4608)
        // 308,700 frames in 67 blocks of 4608: the last block is 36 frames short, and the packet
        // table says so (valid + priming + remainder = packets x frames per packet).
        #expect(packets == 67)
        #expect(table.mNumberValidFrames == 308_700)
        #expect(table.mPrimingFrames == 0)
        #expect(table.mRemainderFrames == 36)
        #expect(Int64(packets) * Int64(format.mFramesPerPacket) == table.mNumberValidFrames + Int64(table.mRemainderFrames))
    }

    @Test(.requires(TestResource.corpusMissing))
    func variableBlockSizeFLACReportsZero() throws {
        let path = try corpusFile(variableFLAC)
        let (format, _, table) = try fileFacts(path)
        #expect(format.mFramesPerPacket == 0)
        #expect(try streamFormat(path).mFramesPerPacket == 0)
        #expect(table.mRemainderFrames == 0)
    }

    /// The AUGraph file player as Apple's sample code drives it (region length = packets x frames
    /// per packet), to an unpaced WAV output: it plays the whole FLAC, sample for sample what
    /// ffmpeg decodes. With a frames-per-packet of 0 the region was 0 frames and nothing played.
    @Test(.requires(TestResource.corpusMissing))
    func augraphFilePlayerPlaysAFixedBlockSizeFLAC() throws {
        let path = try corpusFile(fixedFLAC)
        let reference = try #require(ffmpegFloat(path), "ffmpeg decode of \(path)")
        let wav = temporaryWAV("flac-player")
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
        #expect(AUGraphInitialize(graph!) == noErr)
        #expect(AudioUnitSetProperty(fileAU!, kAudioUnitProperty_ScheduledFileIDs, kAudioUnitScope_Global, 0, &inputFile,
                                     UInt32(MemoryLayout<AudioFileID?>.size)) == noErr)
        var region = ScheduledAudioFileRegion(mTimeStamp: AudioTimeStamp(), mCompletionProc: nil, mCompletionProcUserData: nil,
                                              mAudioFile: inputFile!, mLoopCount: 0, mStartFrame: 0,
                                              mFramesToPlay: UInt32(packets) * format.mFramesPerPacket)
        region.mTimeStamp.mFlags = .sampleTimeValid
        #expect(region.mFramesToPlay > 0, "packets \(packets) x frames per packet \(format.mFramesPerPacket)")
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
        let fileFrames = reference.count / 2
        let deadline = Date().addingTimeInterval(30)
        var now = AudioTimeStamp()
        var last = -2.0, steady = 0
        repeat {
            usleep(2000)
            size = UInt32(MemoryLayout<AudioTimeStamp>.size)
            AudioUnitGetProperty(fileAU!, kAudioUnitProperty_CurrentPlayTime, kAudioUnitScope_Global, 0, &now, &size)
            steady = now.mSampleTime == last ? steady + 1 : 0
            last = now.mSampleTime
        } while now.mSampleTime < Double(fileFrames) && steady < 500 && Date() < deadline
        usleep(20_000)
        #expect(AUGraphStop(graph!) == noErr)
        // CurrentPlayTime is the timeline (Apple's offset from the start time), which goes on
        // after the region; the recording below checks what was played.
        #expect(now.mSampleTime >= Double(fileFrames), "played \(now.mSampleTime) of \(fileFrames) frames")

        let recorded = readFloatWAV(wav)
        try #require(recorded.channels == 2)
        let frames = recorded.samples.count / 2
        let first = (0..<frames).first { recorded.samples[2 * $0] != 0 || recorded.samples[2 * $0 + 1] != 0 } ?? frames
        let refFirst = (0..<fileFrames).first { reference[2 * $0] != 0 || reference[2 * $0 + 1] != 0 } ?? 0
        let lag = first - refFirst
        #expect(lag >= 0 && lag < 64, "lead-in of \(lag) frames")
        let n = min(fileFrames, frames - max(0, lag))
        #expect(n == fileFrames, "recorded \(n) of \(fileFrames) frames after the lead-in")
        let a = Array(reference[0..<(2 * n)])
        let b = Array(recorded.samples[(2 * max(0, lag))..<(2 * (max(0, lag) + n))])
        let s = snrDB(a, b)
        print("AUGraph FLAC file player: \(n) frames of \(fileFrames), lag \(lag), SNR \(s) dB")
        #expect(s > 90, "SNR \(s) dB")
    }
}
