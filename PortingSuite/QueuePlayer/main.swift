// Plays an audio file through an output AudioQueue, Learning Core Audio chapter 5 style: a
// CheckError helper, a player struct passed as the callback's user data, buffer sizes derived
// from the packet size, the magic cookie copied to the queue, a run-loop wait until the file is
// read, then a fixed 2 s wait and an immediate stop. Written for macOS; only the import differs.
//
// With --legacy it uses the older spellings that still compile on current macOS: the deprecated
// AudioFileReadPackets, callbacks on the current run loop in kCFRunLoopCommonModes, and the
// kCFRunLoopDefaultMode constant.
//
// With --rate R it plays at rate R without changing pitch: kAudioQueueProperty_EnableTimePitch,
// the spectral algorithm, kAudioQueueParam_PlayRate.
//
// usage: porting-queue-player FILE [--legacy] [--rate R]
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Foundation

let kNumberPlaybackBuffers = 3

struct MyPlayer {
    var legacy = false
    var playbackFile: AudioFileID?
    var packetPosition: Int64 = 0
    var numPacketsToRead: UInt32 = 0
    var packetDescs: UnsafeMutablePointer<AudioStreamPacketDescription>?
    var isDone = false
}

func CheckError(_ error: OSStatus, _ operation: String) {
    if error == noErr { return }
    var errorString = ""
    let bigEndian = CFSwapInt32HostToBig(UInt32(bitPattern: error))
    let bytes = withUnsafeBytes(of: bigEndian) { Array($0) }
    if bytes.allSatisfy({ isprint(Int32($0)) != 0 }) {
        errorString = "'" + String(decoding: bytes, as: UTF8.self) + "'"
    } else {
        errorString = String(error)
    }
    fputs("Error: \(operation) (\(errorString))\n", stderr)
    exit(1)
}

func CalculateBytesForTime(_ inAudioFile: AudioFileID, _ inDesc: AudioStreamBasicDescription, _ inSeconds: Double,
                           _ outBufferSize: UnsafeMutablePointer<UInt32>, _ outNumPackets: UnsafeMutablePointer<UInt32>) {
    var maxPacketSize: UInt32 = 0
    var propSize = UInt32(MemoryLayout<UInt32>.size)
    CheckError(AudioFileGetProperty(inAudioFile, kAudioFilePropertyPacketSizeUpperBound, &propSize, &maxPacketSize),
               "couldn't get file's max packet size")
    let maxBufferSize: UInt32 = 0x10000
    let minBufferSize: UInt32 = 0x4000
    if inDesc.mFramesPerPacket != 0 {
        let numPacketsForTime = inDesc.mSampleRate / Double(inDesc.mFramesPerPacket) * inSeconds
        outBufferSize.pointee = UInt32(numPacketsForTime) * maxPacketSize
    } else {
        outBufferSize.pointee = maxBufferSize > maxPacketSize ? maxBufferSize : maxPacketSize
    }
    if outBufferSize.pointee > maxBufferSize && outBufferSize.pointee > maxPacketSize {
        outBufferSize.pointee = maxBufferSize
    } else if outBufferSize.pointee < minBufferSize {
        outBufferSize.pointee = minBufferSize
    }
    outNumPackets.pointee = outBufferSize.pointee / maxPacketSize
}

func MyCopyEncoderCookieToQueue(_ theFile: AudioFileID, _ queue: AudioQueueRef) {
    var propertySize: UInt32 = 0
    let result = AudioFileGetPropertyInfo(theFile, kAudioFilePropertyMagicCookieData, &propertySize, nil)
    if result == noErr && propertySize > 0 {
        let magicCookie = UnsafeMutablePointer<UInt8>.allocate(capacity: Int(propertySize))
        CheckError(AudioFileGetProperty(theFile, kAudioFilePropertyMagicCookieData, &propertySize, magicCookie),
                   "get cookie from file failed")
        CheckError(AudioQueueSetProperty(queue, kAudioQueueProperty_MagicCookie, magicCookie, propertySize),
                   "set cookie on queue failed")
        magicCookie.deallocate()
    }
}

func MyAQOutputCallback(_ inUserData: UnsafeMutableRawPointer?, _ inAQ: AudioQueueRef, _ inCompleteAQBuffer: AudioQueueBufferRef) {
    let aqp = inUserData!.assumingMemoryBound(to: MyPlayer.self)
    if aqp.pointee.isDone { return }
    var numBytes: UInt32 = inCompleteAQBuffer.pointee.mAudioDataBytesCapacity
    var nPackets = aqp.pointee.numPacketsToRead
    if aqp.pointee.legacy {
        CheckError(AudioFileReadPackets(aqp.pointee.playbackFile!, false, &numBytes, aqp.pointee.packetDescs,
                                        aqp.pointee.packetPosition, &nPackets, inCompleteAQBuffer.pointee.mAudioData),
                   "AudioFileReadPackets failed")
    } else {
        CheckError(AudioFileReadPacketData(aqp.pointee.playbackFile!, false, &numBytes, aqp.pointee.packetDescs,
                                           aqp.pointee.packetPosition, &nPackets, inCompleteAQBuffer.pointee.mAudioData),
                   "AudioFileReadPacketData failed")
    }
    if nPackets > 0 {
        inCompleteAQBuffer.pointee.mAudioDataByteSize = numBytes
        AudioQueueEnqueueBuffer(inAQ, inCompleteAQBuffer, aqp.pointee.packetDescs != nil ? nPackets : 0, aqp.pointee.packetDescs)
        aqp.pointee.packetPosition += Int64(nPackets)
    } else {
        CheckError(AudioQueueStop(inAQ, false), "AudioQueueStop failed")
        aqp.pointee.isDone = true
    }
}

guard CommandLine.arguments.count >= 2 else {
    fputs("usage: porting-queue-player FILE [--legacy] [--rate R]\n", stderr)
    exit(2)
}
var player = MyPlayer()
player.legacy = CommandLine.arguments.dropFirst(2).contains("--legacy")
var playRate: Float32 = 1
if let i = CommandLine.arguments.firstIndex(of: "--rate"), i + 1 < CommandLine.arguments.count {
    playRate = Float32(CommandLine.arguments[i + 1]) ?? 1
}
let myFileURL = URL(fileURLWithPath: CommandLine.arguments[1])
CheckError(AudioFileOpenURL(myFileURL as CFURL, .readPermission, 0, &player.playbackFile), "AudioFileOpenURL failed")

var dataFormat = AudioStreamBasicDescription()
var propSize = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
CheckError(AudioFileGetProperty(player.playbackFile!, kAudioFilePropertyDataFormat, &propSize, &dataFormat),
           "couldn't get file's data format")

var queue: AudioQueueRef?
if player.legacy {
    CheckError(AudioQueueNewOutput(&dataFormat, MyAQOutputCallback, &player, CFRunLoopGetCurrent(), kCFRunLoopCommonModes.rawValue, 0, &queue),
               "AudioQueueNewOutput failed")
} else {
    CheckError(AudioQueueNewOutput(&dataFormat, MyAQOutputCallback, &player, nil, nil, 0, &queue), "AudioQueueNewOutput failed")
}

var bufferByteSize: UInt32 = 0
CalculateBytesForTime(player.playbackFile!, dataFormat, 0.5, &bufferByteSize, &player.numPacketsToRead)
let isFormatVBR = dataFormat.mBytesPerPacket == 0 || dataFormat.mFramesPerPacket == 0
if isFormatVBR {
    player.packetDescs = .allocate(capacity: Int(player.numPacketsToRead))
} else {
    player.packetDescs = nil
}
MyCopyEncoderCookieToQueue(player.playbackFile!, queue!)
if playRate != 1 {
    var enable: UInt32 = 1
    CheckError(AudioQueueSetProperty(queue!, kAudioQueueProperty_EnableTimePitch, &enable, UInt32(MemoryLayout<UInt32>.size)),
               "couldn't enable time-pitch")
    var algorithm = kAudioQueueTimePitchAlgorithm_Spectral
    CheckError(AudioQueueSetProperty(queue!, kAudioQueueProperty_TimePitchAlgorithm, &algorithm, UInt32(MemoryLayout<UInt32>.size)),
               "couldn't set the time-pitch algorithm")
    CheckError(AudioQueueSetParameter(queue!, kAudioQueueParam_PlayRate, playRate), "couldn't set the play rate")
}

var buffers = [AudioQueueBufferRef?](repeating: nil, count: kNumberPlaybackBuffers)
player.isDone = false
player.packetPosition = 0
for i in 0..<kNumberPlaybackBuffers {
    CheckError(AudioQueueAllocateBuffer(queue!, bufferByteSize, &buffers[i]), "AudioQueueAllocateBuffer failed")
    MyAQOutputCallback(&player, queue!, buffers[i]!)
    if player.isDone { break }
}

CheckError(AudioQueueStart(queue!, nil), "AudioQueueStart failed")
fputs("Playing...\n", stderr)
repeat {
    CFRunLoopRunInMode(player.legacy ? kCFRunLoopDefaultMode : CFRunLoopMode.defaultMode, 0.25, false)
} while !player.isDone
// Let the last buffers play out, then stop at once (the book's ending).
CFRunLoopRunInMode(CFRunLoopMode.defaultMode, 2, false)

player.isDone = true
CheckError(AudioQueueStop(queue!, true), "AudioQueueStop failed")
AudioQueueDispose(queue!, true)
AudioFileClose(player.playbackFile!)
exit(0)
