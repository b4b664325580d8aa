// Seed 001, without its RemoteIO unit (the AudioUnit layer comes later): packets parsed by an
// AudioFileStream are decoded to 16-bit stereo PCM with AudioConverterFillComplexBuffer, one
// packet per input-proc call, as the seed's render callback does. Only the import differs.
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

final class ConverterPlayer {
    var streamDescription = AudioStreamBasicDescription()
    var audioFileStreamID: AudioFileStreamID?
    var converter: AudioConverterRef?
    var packets: [[UInt8]] = []
    var readPacketIndex = 0
    var failure: OSStatus = noErr
    var currentPacket: [UInt8] = []
    var packetDescription = AudioStreamPacketDescription()

    static func audioStreamBasicDescription() -> AudioStreamBasicDescription {
        var description = AudioStreamBasicDescription()
        description.mSampleRate = 44100.0
        description.mFormatID = kAudioFormatLinearPCM
        description.mFormatFlags = kLinearPCMFormatFlagIsSignedInteger
        description.mFramesPerPacket = 1
        description.mBytesPerPacket = 4
        description.mBytesPerFrame = 4
        description.mChannelsPerFrame = 2
        description.mBitsPerChannel = 16
        description.mReserved = 0
        return description
    }
}

private func DJAudioFileStream_PropertyListenerProc(_ inClientData: UnsafeMutableRawPointer, _ inAudioFileStream: AudioFileStreamID,
                                                    _ inPropertyID: AudioFileStreamPropertyID,
                                                    _ ioFlags: UnsafeMutablePointer<AudioFileStreamPropertyFlags>) {
    guard inPropertyID == kAudioFileStreamProperty_DataFormat else { return }
    let player = Unmanaged<ConverterPlayer>.fromOpaque(inClientData).takeUnretainedValue()
    var dataSize: UInt32 = 0
    var writable: DarwinBoolean = false
    var status = AudioFileStreamGetPropertyInfo(inAudioFileStream, kAudioFileStreamProperty_DataFormat, &dataSize, &writable)
    guard status == noErr else { player.failure = status; return }
    status = AudioFileStreamGetProperty(inAudioFileStream, kAudioFileStreamProperty_DataFormat, &dataSize, &player.streamDescription)
    guard status == noErr else { player.failure = status; return }
    var destFormat = ConverterPlayer.audioStreamBasicDescription()
    status = AudioConverterNew(&player.streamDescription, &destFormat, &player.converter)
    if status != noErr { player.failure = status }
}

private func DJAudioFileStreamPacketsProc(_ inClientData: UnsafeMutableRawPointer, _ inNumberBytes: UInt32, _ inNumberPackets: UInt32,
                                          _ inInputData: UnsafeRawPointer, _ inPacketDescriptions: UnsafeMutablePointer<AudioStreamPacketDescription>?) {
    let player = Unmanaged<ConverterPlayer>.fromOpaque(inClientData).takeUnretainedValue()
    if let inPacketDescriptions {
        for i in 0..<Int(inNumberPackets) {
            let packetOffset = Int(inPacketDescriptions[i].mStartOffset)
            let packetSize = Int(inPacketDescriptions[i].mDataByteSize)
            player.packets.append(Array(UnsafeRawBufferPointer(start: inInputData + packetOffset, count: packetSize)))
        }
    }
}

private func DJAudioConverterComplexInputDataProc(_ inAudioConverter: AudioConverterRef, _ ioNumberDataPackets: UnsafeMutablePointer<UInt32>,
                                                  _ ioData: UnsafeMutablePointer<AudioBufferList>,
                                                  _ outDataPacketDescription: UnsafeMutablePointer<UnsafeMutablePointer<AudioStreamPacketDescription>?>?,
                                                  _ inUserData: UnsafeMutableRawPointer?) -> OSStatus {
    let player = Unmanaged<ConverterPlayer>.fromOpaque(inUserData!).takeUnretainedValue()
    if player.readPacketIndex >= player.packets.count {
        ioNumberDataPackets.pointee = 0
        return -1 // "Have No Data"
    }
    // The packet must stay valid until the next call: keep it in the player.
    player.currentPacket = player.packets[player.readPacketIndex]
    ioData.pointee.mNumberBuffers = 1
    ioData.pointee.mBuffers.mData = player.currentPacket.withUnsafeMutableBytes { $0.baseAddress }
    ioData.pointee.mBuffers.mDataByteSize = UInt32(player.currentPacket.count)
    ioNumberDataPackets.pointee = 1
    player.packetDescription = AudioStreamPacketDescription(mStartOffset: 0, mVariableFramesInPacket: 1, mDataByteSize: UInt32(player.currentPacket.count))
    withUnsafeMutablePointer(to: &player.packetDescription) { outDataPacketDescription?.pointee = $0 }
    player.readPacketIndex += 1
    return noErr
}

extension CompatSeedTests {
    @Test("seed 001 (converter part): AudioFileStream packets -> AudioConverterFillComplexBuffer -> 16-bit PCM")
    func converterFromStreamPackets() throws {
        let relative = "ffmpeg-generated/mp3/l3_cbr128_44k_st_info.mp3"
        guard let path = corpusFile(relative) else {
            print("skipped: \(relative): \(corpusAbsent)")
            return
        }
        let player = ConverterPlayer()
        let client = Unmanaged.passUnretained(player).toOpaque()
        #expect(AudioFileStreamOpen(client, DJAudioFileStream_PropertyListenerProc, DJAudioFileStreamPacketsProc, 0, &player.audioFileStreamID) == noErr)
        guard let stream = player.audioFileStreamID, let file = fopen(path, "rb") else { return }
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = fread(&chunk, 1, chunk.count, file)
            if n == 0 { break }
            #expect(AudioFileStreamParseBytes(stream, UInt32(n), chunk, []) == noErr)
        }
        fclose(file)
        AudioFileStreamParseBytes(stream, 0, nil, [])
        #expect(player.failure == noErr)
        guard let converter = player.converter else { Issue.record("no converter"); return }

        // The render loop: 1024 frames per call into a 16 KiB buffer, until the input proc says
        // it has no more data (-1) and nothing more comes out.
        let bufferSize: UInt32 = 4096 * 4
        let renderBufferList = AudioBufferList.allocate(maximumBuffers: 1)
        defer { free(renderBufferList.unsafeMutablePointer) }
        let storage = UnsafeMutableRawPointer.allocate(byteCount: Int(bufferSize), alignment: 16)
        defer { storage.deallocate() }
        var pcm: [Int16] = []
        var lastStatus = noErr
        while true {
            renderBufferList[0] = AudioBuffer(mNumberChannels: 2, mDataByteSize: bufferSize, mData: storage)
            var packetSize: UInt32 = 1024
            let status = AudioConverterFillComplexBuffer(converter, DJAudioConverterComplexInputDataProc, client, &packetSize,
                                                         renderBufferList.unsafeMutablePointer, nil)
            let bytes = Int(renderBufferList[0].mDataByteSize)
            pcm.append(contentsOf: UnsafeBufferPointer(start: storage.assumingMemoryBound(to: Int16.self), count: bytes / 2))
            #expect(bytes == Int(packetSize) * 4)
            lastStatus = status
            if status != noErr || packetSize == 0 { break }
        }
        #expect(lastStatus == -1, "the input proc's error comes back")

        var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
        var current = AudioStreamBasicDescription()
        #expect(AudioConverterGetProperty(converter, kAudioConverterCurrentOutputStreamDescription, &size, &current) == noErr)
        #expect(current.mSampleRate == 44100 && current.mChannelsPerFrame == 2 && current.mBitsPerChannel == 16)
        AudioConverterDispose(converter)
        AudioFileStreamClose(stream)

        // Everything came out but at most the frames the decoder still held when the proc
        // failed; the audio matches our own decode to 16-bit precision.
        let floats = pcm.map { Float($0) / 32768 }
        let result = try compare(recording: floats, channels: 2, with: path)
        print("\(relative): \(player.packets.count) packets, \(result)")
        #expect(result.lag == 0, "\(result)")
        #expect(result.snr > 80, "\(result)")
        #expect(result.referenceFrames - result.playedFrames >= 0 && result.referenceFrames - result.playedFrames <= 1152 * 2, "\(result)")
    }

    @Test("AudioConverterConvertBuffer: Int16 to Float32 and back")
    func convertBuffer() {
        var int16 = AudioStreamBasicDescription(mSampleRate: 48000, mFormatID: kAudioFormatLinearPCM,
                                                mFormatFlags: kLinearPCMFormatFlagIsSignedInteger | kLinearPCMFormatFlagIsPacked,
                                                mBytesPerPacket: 4, mFramesPerPacket: 1, mBytesPerFrame: 4, mChannelsPerFrame: 2, mBitsPerChannel: 16, mReserved: 0)
        var float32 = AudioStreamBasicDescription(mSampleRate: 48000, mFormatID: kAudioFormatLinearPCM, mFormatFlags: kAudioFormatFlagsNativeFloatPacked,
                                                  mBytesPerPacket: 8, mFramesPerPacket: 1, mBytesPerFrame: 8, mChannelsPerFrame: 2, mBitsPerChannel: 32, mReserved: 0)
        var toFloat: AudioConverterRef?
        #expect(AudioConverterNew(&int16, &float32, &toFloat) == noErr)
        guard let toFloat else { return }
        defer { AudioConverterDispose(toFloat) }
        let input: [Int16] = (0..<2000).map { Int16(truncatingIfNeeded: $0 * 31 - 30000) }
        var output = [Float](repeating: 0, count: input.count)
        var outSize = UInt32(output.count * 4)
        let status = input.withUnsafeBytes { i in
            output.withUnsafeMutableBytes { o in AudioConverterConvertBuffer(toFloat, UInt32(i.count), i.baseAddress!, &outSize, o.baseAddress!) }
        }
        #expect(status == noErr)
        #expect(outSize == UInt32(output.count * 4))
        #expect(zip(input, output).allSatisfy { abs(Float($0) / 32768 - $1) < 1e-6 })

        var mp3 = AudioStreamBasicDescription(mSampleRate: 44100, mFormatID: kAudioFormatMPEGLayer3, mFormatFlags: 0, mBytesPerPacket: 0,
                                              mFramesPerPacket: 1152, mBytesPerFrame: 0, mChannelsPerFrame: 2, mBitsPerChannel: 0, mReserved: 0)
        var encoder: AudioConverterRef?
        #expect(AudioConverterNew(&float32, &mp3, &encoder) == noErr)
        if let encoder { AudioConverterDispose(encoder) }
        var decoderToMP3: AudioConverterRef?
        #expect(AudioConverterNew(&mp3, &mp3, &decoderToMP3) == kAudioConverterErr_FormatNotSupported)
    }
}
