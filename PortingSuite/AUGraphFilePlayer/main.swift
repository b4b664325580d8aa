// Plays a file through an AUGraph (an AudioFilePlayer generator unit feeding the default
// output), Learning Core Audio chapter 7 style: the file scheduled as one region, primed, started
// at the next render, and the main thread sleeping for the file's duration before stopping.
// Written for macOS; only the import differs.
//
// usage: porting-augraph-player FILE
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Foundation

struct MyAUGraphPlayer {
    var inputFormat = AudioStreamBasicDescription()
    var inputFile: AudioFileID?
    var graph: AUGraph?
    var fileAU: AudioUnit?
}

func CheckError(_ error: OSStatus, _ operation: String) {
    if error == noErr { return }
    var str = [UInt8](repeating: 0, count: 4)
    var big = CFSwapInt32HostToBig(UInt32(bitPattern: error))
    memcpy(&str, &big, 4)
    if str.allSatisfy({ isprint(Int32($0)) != 0 }) {
        fputs("Error: \(operation) ('\(String(decoding: str, as: UTF8.self))')\n", stderr)
    } else {
        fputs("Error: \(operation) (\(error))\n", stderr)
    }
    exit(1)
}

func CreateMyAUGraph(_ player: inout MyAUGraphPlayer) {
    CheckError(NewAUGraph(&player.graph), "NewAUGraph failed")

    var outputcd = AudioComponentDescription()
    outputcd.componentType = kAudioUnitType_Output
    outputcd.componentSubType = kAudioUnitSubType_DefaultOutput
    outputcd.componentManufacturer = kAudioUnitManufacturer_Apple
    var outputNode = AUNode()
    CheckError(AUGraphAddNode(player.graph!, &outputcd, &outputNode), "AUGraphAddNode[kAudioUnitSubType_DefaultOutput] failed")

    var fileplayercd = AudioComponentDescription()
    fileplayercd.componentType = kAudioUnitType_Generator
    fileplayercd.componentSubType = kAudioUnitSubType_AudioFilePlayer
    fileplayercd.componentManufacturer = kAudioUnitManufacturer_Apple
    var fileNode = AUNode()
    CheckError(AUGraphAddNode(player.graph!, &fileplayercd, &fileNode), "AUGraphAddNode[kAudioUnitSubType_AudioFilePlayer] failed")

    CheckError(AUGraphOpen(player.graph!), "AUGraphOpen failed")
    CheckError(AUGraphNodeInfo(player.graph!, fileNode, nil, &player.fileAU), "AUGraphNodeInfo failed")
    CheckError(AUGraphConnectNodeInput(player.graph!, fileNode, 0, outputNode, 0), "AUGraphConnectNodeInput")
    CheckError(AUGraphInitialize(player.graph!), "AUGraphInitialize failed")
}

func PrepareFileAU(_ player: inout MyAUGraphPlayer) -> Double {
    CheckError(AudioUnitSetProperty(player.fileAU!, kAudioUnitProperty_ScheduledFileIDs, kAudioUnitScope_Global, 0,
                                    &player.inputFile, UInt32(MemoryLayout<AudioFileID?>.size)),
               "AudioUnitSetProperty[kAudioUnitProperty_ScheduledFileIDs] failed")
    var nPackets: UInt64 = 0
    var propsize = UInt32(MemoryLayout<UInt64>.size)
    CheckError(AudioFileGetProperty(player.inputFile!, kAudioFilePropertyAudioDataPacketCount, &propsize, &nPackets),
               "AudioFileGetProperty[kAudioFilePropertyAudioDataPacketCount] failed")

    // The struct's file pointer is non-optional in Swift: no zeroed init(), the memberwise one.
    var rgn = ScheduledAudioFileRegion(mTimeStamp: AudioTimeStamp(), mCompletionProc: nil, mCompletionProcUserData: nil,
                                       mAudioFile: player.inputFile!, mLoopCount: 0, mStartFrame: 0,
                                       mFramesToPlay: UInt32(nPackets) * player.inputFormat.mFramesPerPacket)
    rgn.mTimeStamp.mFlags = .sampleTimeValid
    rgn.mTimeStamp.mSampleTime = 0
    CheckError(AudioUnitSetProperty(player.fileAU!, kAudioUnitProperty_ScheduledFileRegion, kAudioUnitScope_Global, 0,
                                    &rgn, UInt32(MemoryLayout<ScheduledAudioFileRegion>.size)),
               "AudioUnitSetProperty[kAudioUnitProperty_ScheduledFileRegion] failed")

    var defaultVal: UInt32 = 0
    CheckError(AudioUnitSetProperty(player.fileAU!, kAudioUnitProperty_ScheduledFilePrime, kAudioUnitScope_Global, 0,
                                    &defaultVal, UInt32(MemoryLayout<UInt32>.size)),
               "AudioUnitSetProperty[kAudioUnitProperty_ScheduledFilePrime] failed")

    var startTime = AudioTimeStamp()
    memset(&startTime, 0, MemoryLayout<AudioTimeStamp>.size)
    startTime.mFlags = .sampleTimeValid
    startTime.mSampleTime = -1
    CheckError(AudioUnitSetProperty(player.fileAU!, kAudioUnitProperty_ScheduleStartTimeStamp, kAudioUnitScope_Global, 0,
                                    &startTime, UInt32(MemoryLayout<AudioTimeStamp>.size)),
               "AudioUnitSetProperty[kAudioUnitProperty_ScheduleStartTimeStamp]")

    return Double(nPackets) * Double(player.inputFormat.mFramesPerPacket) / player.inputFormat.mSampleRate
}

guard CommandLine.arguments.count == 2 else {
    fputs("usage: porting-augraph-player FILE\n", stderr)
    exit(2)
}
let inputFileURL = URL(fileURLWithPath: CommandLine.arguments[1])
var player = MyAUGraphPlayer()
var inputFile: AudioFileID?
CheckError(AudioFileOpenURL(inputFileURL as CFURL, .readPermission, 0, &inputFile), "AudioFileOpenURL failed")
player.inputFile = inputFile
var propSize = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
CheckError(AudioFileGetProperty(inputFile!, kAudioFilePropertyDataFormat, &propSize, &player.inputFormat),
           "couldn't get file's data format")

CreateMyAUGraph(&player)
let fileDuration = PrepareFileAU(&player)
CheckError(AUGraphStart(player.graph!), "AUGraphStart failed")
fputs("playing \(fileDuration) s\n", stderr)
usleep(UInt32(fileDuration * 1000.0 * 1000.0))

AUGraphStop(player.graph!)
AUGraphUninitialize(player.graph!)
AUGraphClose(player.graph!)
AudioFileClose(player.inputFile!)
exit(0)
