// Converts a file with Extended Audio File Services, Learning Core Audio chapter 6 style: open
// with ExtAudioFileOpenURL, create the output with AudioFileCreateWithURL and wrap it (or create
// it with ExtAudioFileCreateWithURL), set the client data format on both sides, then
// ExtAudioFileRead into a buffer list and ExtAudioFileWrite it out. Written for macOS; only
// the import differs.
//
// usage: porting-extaudiofile-convert INPUT OUTPUT (.aif/.aiff: 16-bit big-endian PCM through a
// wrapped AudioFileID; .wav: 24-bit PCM; .caf/.m4a: AAC at the encoder's default bit rate)
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Foundation

func CheckError(_ error: OSStatus, _ operation: String) {
    guard error != noErr else { return }
    let code = CFSwapInt32HostToBig(UInt32(bitPattern: error))
    var chars = [UInt8](repeating: 0, count: 4)
    withUnsafeBytes(of: code) { for i in 0..<4 { chars[i] = $0[i] } }
    if chars.allSatisfy({ isprint(Int32($0)) != 0 }) {
        fputs("Error: \(operation) ('\(String(decoding: chars, as: UTF8.self))')\n", stderr)
    } else {
        fputs("Error: \(operation) (\(error))\n", stderr)
    }
    exit(1)
}

struct MyAudioConverterSettings {
    var outputFormat = AudioStreamBasicDescription()
    var inputFile: ExtAudioFileRef?
    var outputFileID: AudioFileID?
    var outputFile: ExtAudioFileRef?
}

func Convert(_ mySettings: inout MyAudioConverterSettings, clientFormat: AudioStreamBasicDescription) {
    let outputBufferSize: UInt32 = 32 * 1024
    let sizePerPacket = clientFormat.mBytesPerPacket
    let packetsPerBuffer = outputBufferSize / sizePerPacket
    let outputBuffer = UnsafeMutablePointer<UInt8>.allocate(capacity: Int(outputBufferSize))
    defer { outputBuffer.deallocate() }
    var framesWritten: Int64 = 0
    while true {
        var convertedData = AudioBufferList()
        convertedData.mNumberBuffers = 1
        convertedData.mBuffers.mNumberChannels = clientFormat.mChannelsPerFrame
        convertedData.mBuffers.mDataByteSize = outputBufferSize
        convertedData.mBuffers.mData = UnsafeMutableRawPointer(outputBuffer)
        var frameCount = packetsPerBuffer
        CheckError(ExtAudioFileRead(mySettings.inputFile!, &frameCount, &convertedData), "Couldn't read from input file")
        if frameCount == 0 {
            fputs("Done reading from file\n", stderr)
            break
        }
        CheckError(ExtAudioFileWrite(mySettings.outputFile!, frameCount, &convertedData), "Couldn't write to output file")
        framesWritten += Int64(frameCount)
    }
    fputs("wrote \(framesWritten) frames\n", stderr)
}

let args = CommandLine.arguments
guard args.count == 3 else {
    fputs("usage: porting-extaudiofile-convert INPUT OUTPUT\n", stderr)
    exit(2)
}
var mySettings = MyAudioConverterSettings()
CheckError(ExtAudioFileOpenURL(URL(fileURLWithPath: args[1]) as CFURL, &mySettings.inputFile), "ExtAudioFileOpenURL failed")

var inputFormat = AudioStreamBasicDescription()
var propSize = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
CheckError(ExtAudioFileGetProperty(mySettings.inputFile!, kExtAudioFileProperty_FileDataFormat, &propSize, &inputFormat),
           "Couldn't get file's data format")

let outputURL = URL(fileURLWithPath: args[2])
let ext = outputURL.pathExtension.lowercased()
var clientFormat = AudioStreamBasicDescription()
switch ext {
case "aif", "aiff":
    // 16-bit big-endian PCM, the client format too (the converter does everything on the read side).
    mySettings.outputFormat.mSampleRate = inputFormat.mSampleRate
    mySettings.outputFormat.mFormatID = kAudioFormatLinearPCM
    mySettings.outputFormat.mFormatFlags = kAudioFormatFlagIsBigEndian | kAudioFormatFlagIsSignedInteger | kAudioFormatFlagIsPacked
    mySettings.outputFormat.mBytesPerPacket = 2 * inputFormat.mChannelsPerFrame
    mySettings.outputFormat.mFramesPerPacket = 1
    mySettings.outputFormat.mBytesPerFrame = 2 * inputFormat.mChannelsPerFrame
    mySettings.outputFormat.mChannelsPerFrame = inputFormat.mChannelsPerFrame
    mySettings.outputFormat.mBitsPerChannel = 16
    var outputFormat = mySettings.outputFormat
    var outputFileID: AudioFileID?
    CheckError(AudioFileCreateWithURL(outputURL as CFURL, kAudioFileAIFFType, &outputFormat, .eraseFile, &outputFileID),
               "AudioFileCreateWithURL failed")
    mySettings.outputFileID = outputFileID
    CheckError(ExtAudioFileWrapAudioFileID(outputFileID!, true, &mySettings.outputFile), "ExtAudioFileWrapAudioFileID failed")
    clientFormat = mySettings.outputFormat
case "wav":
    mySettings.outputFormat = AudioStreamBasicDescription(mSampleRate: inputFormat.mSampleRate, mFormatID: kAudioFormatLinearPCM,
                                                          mFormatFlags: kAudioFormatFlagIsSignedInteger | kAudioFormatFlagIsPacked,
                                                          mBytesPerPacket: 3 * inputFormat.mChannelsPerFrame, mFramesPerPacket: 1,
                                                          mBytesPerFrame: 3 * inputFormat.mChannelsPerFrame,
                                                          mChannelsPerFrame: inputFormat.mChannelsPerFrame, mBitsPerChannel: 24, mReserved: 0)
    var outputFormat = mySettings.outputFormat
    var outputFile: ExtAudioFileRef?
    CheckError(ExtAudioFileCreateWithURL(outputURL as CFURL, kAudioFileWAVEType, &outputFormat, nil,
                                         AudioFileFlags.eraseFile.rawValue, &outputFile),
               "ExtAudioFileCreateWithURL failed")
    mySettings.outputFile = outputFile
    clientFormat = AudioStreamBasicDescription(mSampleRate: inputFormat.mSampleRate, mFormatID: kAudioFormatLinearPCM,
                                               mFormatFlags: kAudioFormatFlagsNativeFloatPacked,
                                               mBytesPerPacket: 4 * inputFormat.mChannelsPerFrame, mFramesPerPacket: 1,
                                               mBytesPerFrame: 4 * inputFormat.mChannelsPerFrame,
                                               mChannelsPerFrame: inputFormat.mChannelsPerFrame, mBitsPerChannel: 32, mReserved: 0)
default:
    // AAC: the encoder fills in the rest of the description.
    mySettings.outputFormat.mFormatID = kAudioFormatMPEG4AAC
    mySettings.outputFormat.mSampleRate = inputFormat.mSampleRate
    mySettings.outputFormat.mChannelsPerFrame = inputFormat.mChannelsPerFrame
    var outputFormat = mySettings.outputFormat
    var outputFile: ExtAudioFileRef?
    CheckError(ExtAudioFileCreateWithURL(outputURL as CFURL, ext == "m4a" ? kAudioFileM4AType : kAudioFileCAFType, &outputFormat, nil,
                                         AudioFileFlags.eraseFile.rawValue, &outputFile),
               "ExtAudioFileCreateWithURL failed")
    mySettings.outputFile = outputFile
    clientFormat = AudioStreamBasicDescription(mSampleRate: inputFormat.mSampleRate, mFormatID: kAudioFormatLinearPCM,
                                               mFormatFlags: kAudioFormatFlagIsSignedInteger | kAudioFormatFlagIsPacked,
                                               mBytesPerPacket: 2 * inputFormat.mChannelsPerFrame, mFramesPerPacket: 1,
                                               mBytesPerFrame: 2 * inputFormat.mChannelsPerFrame,
                                               mChannelsPerFrame: inputFormat.mChannelsPerFrame, mBitsPerChannel: 16, mReserved: 0)
}

CheckError(ExtAudioFileSetProperty(mySettings.inputFile!, kExtAudioFileProperty_ClientDataFormat,
                                   UInt32(MemoryLayout<AudioStreamBasicDescription>.size), &clientFormat),
           "Couldn't set client data format on input ext file")
CheckError(ExtAudioFileSetProperty(mySettings.outputFile!, kExtAudioFileProperty_ClientDataFormat,
                                   UInt32(MemoryLayout<AudioStreamBasicDescription>.size), &clientFormat),
           "Couldn't set client data format on output ext file")
fputs("Converting...\n", stderr)
Convert(&mySettings, clientFormat: clientFormat)
ExtAudioFileDispose(mySettings.inputFile!)
ExtAudioFileDispose(mySettings.outputFile!)
if let id = mySettings.outputFileID { AudioFileClose(id) }
exit(0)
