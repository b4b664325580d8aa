// Records AAC from the default input with an input AudioQueue, Learning Core Audio chapter 4
// style: the device's sample rate asked of the HAL, the rest of the AAC description filled in by
// AudioFormatGetProperty(FormatInfo), the completed description and the magic cookie read back
// from the queue (the converter's properties), buffers sized from the queue's maximum packet
// size, packets written in the input callback, a fixed recording time, and the cookie written
// again at the end. Written for macOS; only the import differs.
//
// usage: porting-aac-recorder OUTPUT.caf [SECONDS]
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Foundation

let kNumberRecordBuffers = 3

struct MyRecorder {
    var recordFile: AudioFileID?
    var recordPacket: Int64 = 0
    var running = false
}

func CheckError(_ error: OSStatus, _ operation: String) {
    if error == noErr { return }
    let big = CFSwapInt32HostToBig(UInt32(bitPattern: error))
    let bytes = withUnsafeBytes(of: big) { Array($0) }
    if bytes.allSatisfy({ isprint(Int32($0)) != 0 }) {
        fputs("Error: \(operation) ('\(String(decoding: bytes, as: UTF8.self))')\n", stderr)
    } else {
        fputs("Error: \(operation) (\(error))\n", stderr)
    }
    exit(1)
}

func MyGetDefaultInputDeviceSampleRate(_ outSampleRate: UnsafeMutablePointer<Float64>) -> OSStatus {
    var deviceID = AudioDeviceID(0)
    var propertyAddress = AudioObjectPropertyAddress(mSelector: kAudioHardwarePropertyDefaultInputDevice,
                                                     mScope: kAudioObjectPropertyScopeGlobal,
                                                     mElement: kAudioObjectPropertyElementMain)
    var propertySize = UInt32(MemoryLayout<AudioDeviceID>.size)
    var error = AudioObjectGetPropertyData(AudioObjectID(kAudioObjectSystemObject), &propertyAddress, 0, nil, &propertySize, &deviceID)
    if error != noErr { return error }
    propertyAddress.mSelector = kAudioDevicePropertyNominalSampleRate
    propertySize = UInt32(MemoryLayout<Float64>.size)
    error = AudioObjectGetPropertyData(deviceID, &propertyAddress, 0, nil, &propertySize, outSampleRate)
    return error
}

func MyCopyEncoderCookieToFile(_ queue: AudioQueueRef, _ theFile: AudioFileID) {
    var propertySize: UInt32 = 0
    let error = AudioQueueGetPropertySize(queue, kAudioConverterCompressionMagicCookie, &propertySize)
    if error == noErr && propertySize > 0 {
        let magicCookie = UnsafeMutablePointer<UInt8>.allocate(capacity: Int(propertySize))
        CheckError(AudioQueueGetProperty(queue, kAudioQueueProperty_MagicCookie, magicCookie, &propertySize),
                   "Couldn't get audio queue's magic cookie")
        CheckError(AudioFileSetProperty(theFile, kAudioFilePropertyMagicCookieData, propertySize, magicCookie),
                   "Couldn't set audio file's magic cookie")
        magicCookie.deallocate()
    }
}

func MyComputeRecordBufferSize(_ format: UnsafePointer<AudioStreamBasicDescription>, _ queue: AudioQueueRef, _ seconds: Float) -> Int {
    let frames = Int(ceil(Double(seconds) * format.pointee.mSampleRate))
    var bytes = 0
    if format.pointee.mBytesPerFrame > 0 {
        bytes = frames * Int(format.pointee.mBytesPerFrame)
    } else {
        var maxPacketSize: UInt32 = 0
        if format.pointee.mBytesPerPacket > 0 {
            maxPacketSize = format.pointee.mBytesPerPacket
        } else {
            var propertySize = UInt32(MemoryLayout<UInt32>.size)
            CheckError(AudioQueueGetProperty(queue, kAudioConverterPropertyMaximumOutputPacketSize, &maxPacketSize, &propertySize),
                       "Couldn't get queue's maximum output packet size")
        }
        let packets = format.pointee.mFramesPerPacket > 0 ? frames / Int(format.pointee.mFramesPerPacket) : frames
        bytes = (packets == 0 ? 1 : packets) * Int(maxPacketSize)
    }
    return bytes
}

func MyAQInputCallback(_ inUserData: UnsafeMutableRawPointer?, _ inQueue: AudioQueueRef, _ inBuffer: AudioQueueBufferRef,
                       _ inStartTime: UnsafePointer<AudioTimeStamp>, _ inNumPackets: UInt32,
                       _ inPacketDesc: UnsafePointer<AudioStreamPacketDescription>?) {
    let recorder = inUserData!.assumingMemoryBound(to: MyRecorder.self)
    var numPackets = inNumPackets
    if numPackets > 0 {
        CheckError(AudioFileWritePackets(recorder.pointee.recordFile!, false, inBuffer.pointee.mAudioDataByteSize, inPacketDesc,
                                         recorder.pointee.recordPacket, &numPackets, inBuffer.pointee.mAudioData),
                   "AudioFileWritePackets failed")
        recorder.pointee.recordPacket += Int64(numPackets)
    }
    if recorder.pointee.running {
        CheckError(AudioQueueEnqueueBuffer(inQueue, inBuffer, 0, nil), "AudioQueueEnqueueBuffer failed")
    }
}

guard CommandLine.arguments.count >= 2 else {
    fputs("usage: porting-aac-recorder OUTPUT.caf [SECONDS]\n", stderr)
    exit(2)
}
let seconds = CommandLine.arguments.count > 2 ? Double(CommandLine.arguments[2]) ?? 3 : 3
var recorder = MyRecorder()
var recordFormat = AudioStreamBasicDescription()
recordFormat.mFormatID = kAudioFormatMPEG4AAC
recordFormat.mChannelsPerFrame = 2
CheckError(MyGetDefaultInputDeviceSampleRate(&recordFormat.mSampleRate), "Couldn't get default input device's sample rate")
var propSize = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
CheckError(AudioFormatGetProperty(kAudioFormatProperty_FormatInfo, 0, nil, &propSize, &recordFormat),
           "AudioFormatGetProperty failed")

var queue: AudioQueueRef?
CheckError(AudioQueueNewInput(&recordFormat, MyAQInputCallback, &recorder, nil, nil, 0, &queue), "AudioQueueNewInput failed")
var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
CheckError(AudioQueueGetProperty(queue!, kAudioConverterCurrentOutputStreamDescription, &recordFormat, &size),
           "Couldn't get queue's format")

let myFileURL = URL(fileURLWithPath: CommandLine.arguments[1])
CheckError(AudioFileCreateWithURL(myFileURL as CFURL, kAudioFileCAFType, &recordFormat, .eraseFile, &recorder.recordFile),
           "AudioFileCreateWithURL failed")
MyCopyEncoderCookieToFile(queue!, recorder.recordFile!)

let bufferByteSize = MyComputeRecordBufferSize(&recordFormat, queue!, 0.5)
for _ in 0..<kNumberRecordBuffers {
    var buffer: AudioQueueBufferRef?
    CheckError(AudioQueueAllocateBuffer(queue!, UInt32(bufferByteSize), &buffer), "AudioQueueAllocateBuffer failed")
    CheckError(AudioQueueEnqueueBuffer(queue!, buffer!, 0, nil), "AudioQueueEnqueueBuffer failed")
}

recorder.running = true
CheckError(AudioQueueStart(queue!, nil), "AudioQueueStart failed")
fputs("Recording \(seconds) s at \(recordFormat.mSampleRate) Hz\n", stderr)
CFRunLoopRunInMode(CFRunLoopMode.defaultMode, seconds, false)
fputs("* recording done *\n", stderr)
recorder.running = false
CheckError(AudioQueueStop(queue!, true), "AudioQueueStop failed")
MyCopyEncoderCookieToFile(queue!, recorder.recordFile!)
AudioQueueDispose(queue!, true)
AudioFileClose(recorder.recordFile!)
fputs("packets \(recorder.recordPacket)\n", stderr)
exit(0)
