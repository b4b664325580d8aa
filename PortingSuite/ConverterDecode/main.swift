// Decodes any audio file with AudioConverterFillComplexBuffer (an input proc reading packets
// from an AudioFileID) and writes 16-bit big-endian PCM into an AIFF, the way macOS code of the
// Learning Core Audio kind does it. Written for macOS; only the import differs.
//
// usage: porting-converter-decode INPUT OUTPUT.aiff
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Foundation

func CheckError(_ error: OSStatus, _ operation: String) {
    guard error != noErr else { return }
    var result = ""
    var char = Int(CFSwapInt32HostToBig(UInt32(bitPattern: error)))
    for _ in 0..<4 {
        if isprint(Int32(char & 255)) != 0 {
            result.append(Character(UnicodeScalar(UInt8(char & 255))))
        }
        char = char / 256
    }
    if result.count == 4 {
        result = String(result.reversed())
        fputs("Error: \(operation) ('\(result)')\n", stderr)
    } else {
        fputs("Error: \(operation) (\(error))\n", stderr)
    }
    exit(1)
}

struct MyAudioConverterSettings {
    var inputFormat = AudioStreamBasicDescription()
    var outputFormat = AudioStreamBasicDescription()
    var inputFile: AudioFileID?
    var outputFile: AudioFileID?
    var inputFilePacketIndex: UInt64 = 0
    var inputFilePacketCount: UInt64 = 0
    var inputFilePacketMaxSize: UInt32 = 0
    var inputFilePacketDescriptions: UnsafeMutablePointer<AudioStreamPacketDescription>?
    var sourceBuffer: UnsafeMutableRawPointer?
}

func MyAudioConverterCallback(_ inAudioConverter: AudioConverterRef,
                              _ ioDataPacketCount: UnsafeMutablePointer<UInt32>,
                              _ ioData: UnsafeMutablePointer<AudioBufferList>,
                              _ outDataPacketDescription: UnsafeMutablePointer<UnsafeMutablePointer<AudioStreamPacketDescription>?>?,
                              _ inUserData: UnsafeMutableRawPointer?) -> OSStatus {
    let settings = inUserData!.assumingMemoryBound(to: MyAudioConverterSettings.self)
    ioData.pointee.mBuffers.mData = nil
    ioData.pointee.mBuffers.mDataByteSize = 0
    // The packets left in the file bound the request.
    if settings.pointee.inputFilePacketIndex + UInt64(ioDataPacketCount.pointee) > settings.pointee.inputFilePacketCount {
        ioDataPacketCount.pointee = UInt32(settings.pointee.inputFilePacketCount - settings.pointee.inputFilePacketIndex)
    }
    if ioDataPacketCount.pointee == 0 { return noErr }
    if settings.pointee.sourceBuffer != nil {
        free(settings.pointee.sourceBuffer)
        settings.pointee.sourceBuffer = nil
    }
    settings.pointee.sourceBuffer = calloc(1, Int(ioDataPacketCount.pointee * settings.pointee.inputFilePacketMaxSize))
    var outByteCount = ioDataPacketCount.pointee * settings.pointee.inputFilePacketMaxSize
    var result = AudioFileReadPacketData(settings.pointee.inputFile!, true, &outByteCount,
                                         settings.pointee.inputFilePacketDescriptions,
                                         Int64(settings.pointee.inputFilePacketIndex), ioDataPacketCount,
                                         settings.pointee.sourceBuffer)
    if result == kAudioFileEndOfFileError && ioDataPacketCount.pointee > 0 { result = noErr }
    else if result != noErr { return result }
    settings.pointee.inputFilePacketIndex += UInt64(ioDataPacketCount.pointee)
    ioData.pointee.mBuffers.mData = settings.pointee.sourceBuffer
    ioData.pointee.mBuffers.mDataByteSize = outByteCount
    if outDataPacketDescription != nil {
        outDataPacketDescription!.pointee = settings.pointee.inputFilePacketDescriptions
    }
    return result
}

func Convert(_ settings: UnsafeMutablePointer<MyAudioConverterSettings>) {
    var audioConverter: AudioConverterRef?
    CheckError(AudioConverterNew(&settings.pointee.inputFormat, &settings.pointee.outputFormat, &audioConverter),
               "AudioConveterNew failed")

    // The decoder's magic cookie, when the file has one.
    var cookieSize: UInt32 = 0
    if AudioFileGetPropertyInfo(settings.pointee.inputFile!, kAudioFilePropertyMagicCookieData, &cookieSize, nil) == noErr && cookieSize > 0 {
        let cookie = malloc(Int(cookieSize))!
        CheckError(AudioFileGetProperty(settings.pointee.inputFile!, kAudioFilePropertyMagicCookieData, &cookieSize, cookie),
                   "Couldn't get magic cookie from file")
        CheckError(AudioConverterSetProperty(audioConverter!, kAudioConverterDecompressionMagicCookie, cookieSize, cookie),
                   "Couldn't set magic cookie on converter")
        free(cookie)
    }

    var packetsPerBuffer: UInt32 = 0
    var outputBufferSize: UInt32 = 32 * 1024
    var sizePerPacket = settings.pointee.inputFormat.mBytesPerPacket
    if sizePerPacket == 0 {
        var size = UInt32(MemoryLayout<UInt32>.size)
        CheckError(AudioConverterGetProperty(audioConverter!, kAudioConverterPropertyMaximumOutputPacketSize, &size, &sizePerPacket),
                   "Couldn't get kAudioConverterPropertyMaximumOutputPacketSize")
        if sizePerPacket > outputBufferSize { outputBufferSize = sizePerPacket }
        packetsPerBuffer = outputBufferSize / sizePerPacket
        settings.pointee.inputFilePacketDescriptions = .allocate(capacity: Int(packetsPerBuffer))
    } else {
        packetsPerBuffer = outputBufferSize / sizePerPacket
    }

    let outputBuffer = UnsafeMutablePointer<UInt8>.allocate(capacity: Int(outputBufferSize))
    var outputFilePacketPosition: UInt32 = 0
    while true {
        var convertedData = AudioBufferList()
        convertedData.mNumberBuffers = 1
        convertedData.mBuffers.mNumberChannels = settings.pointee.inputFormat.mChannelsPerFrame
        convertedData.mBuffers.mDataByteSize = outputBufferSize
        convertedData.mBuffers.mData = UnsafeMutableRawPointer(outputBuffer)

        var ioOutputDataPackets = packetsPerBuffer
        let error = AudioConverterFillComplexBuffer(audioConverter!, MyAudioConverterCallback, settings,
                                                    &ioOutputDataPackets, &convertedData,
                                                    settings.pointee.inputFilePacketDescriptions)
        if error != noErr || ioOutputDataPackets == 0 { break }
        CheckError(AudioFileWritePackets(settings.pointee.outputFile!, false, ioOutputDataPackets * settings.pointee.outputFormat.mBytesPerPacket,
                                         nil, Int64(outputFilePacketPosition / settings.pointee.outputFormat.mBytesPerPacket),
                                         &ioOutputDataPackets, convertedData.mBuffers.mData!),
                   "Couldn't write packets to file")
        outputFilePacketPosition += ioOutputDataPackets * settings.pointee.outputFormat.mBytesPerPacket
    }
    outputBuffer.deallocate()
    AudioConverterDispose(audioConverter!)
}

let arguments = CommandLine.arguments
guard arguments.count == 3 else {
    fputs("usage: \(arguments[0]) INPUT OUTPUT.aiff\n", stderr)
    exit(2)
}
var audioConverterSettings = MyAudioConverterSettings()
let inputFileURL = URL(fileURLWithPath: arguments[1])
var inputFile: AudioFileID?
CheckError(AudioFileOpenURL(inputFileURL as CFURL, .readPermission, 0, &inputFile), "AudioFileOpenURL failed")
audioConverterSettings.inputFile = inputFile
var propSize = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
CheckError(AudioFileGetProperty(inputFile!, kAudioFilePropertyDataFormat, &propSize, &audioConverterSettings.inputFormat),
           "couldn't get file's data format")
propSize = UInt32(MemoryLayout<UInt64>.size)
CheckError(AudioFileGetProperty(inputFile!, kAudioFilePropertyAudioDataPacketCount, &propSize, &audioConverterSettings.inputFilePacketCount),
           "couldn't get file's packet count")
propSize = UInt32(MemoryLayout<UInt32>.size)
CheckError(AudioFileGetProperty(inputFile!, kAudioFilePropertyMaximumPacketSize, &propSize, &audioConverterSettings.inputFilePacketMaxSize),
           "couldn't get file's max packet size")

// 16-bit big-endian interleaved PCM at the file's rate and channel count: what AIFF holds.
audioConverterSettings.outputFormat.mSampleRate = audioConverterSettings.inputFormat.mSampleRate
audioConverterSettings.outputFormat.mFormatID = kAudioFormatLinearPCM
audioConverterSettings.outputFormat.mFormatFlags = kAudioFormatFlagIsBigEndian | kAudioFormatFlagIsSignedInteger | kAudioFormatFlagIsPacked
audioConverterSettings.outputFormat.mBytesPerPacket = 2 * audioConverterSettings.inputFormat.mChannelsPerFrame
audioConverterSettings.outputFormat.mFramesPerPacket = 1
audioConverterSettings.outputFormat.mBytesPerFrame = 2 * audioConverterSettings.inputFormat.mChannelsPerFrame
audioConverterSettings.outputFormat.mChannelsPerFrame = audioConverterSettings.inputFormat.mChannelsPerFrame
audioConverterSettings.outputFormat.mBitsPerChannel = 16

let outputFileURL = URL(fileURLWithPath: arguments[2])
var outputFormat = audioConverterSettings.outputFormat
var outputFile: AudioFileID?
CheckError(AudioFileCreateWithURL(outputFileURL as CFURL, kAudioFileAIFFType, &outputFormat, .eraseFile, &outputFile),
           "AudioFileCreateWithURL failed")
audioConverterSettings.outputFile = outputFile

fputs("Converting...\n", stderr)
Convert(&audioConverterSettings)
AudioFileClose(audioConverterSettings.inputFile!)
AudioFileClose(audioConverterSettings.outputFile!)
fputs("Done\n", stderr)
exit(0)
