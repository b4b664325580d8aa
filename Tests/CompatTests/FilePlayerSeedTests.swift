// Seed 000: Audio Queue Services playback of a local file (AQPlayerState, HandleOutputBuffer,
// DeriveBufferSize, magic cookie, run loop), written as it would be on macOS. Only the import
// differs.
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

private let kNumberBuffers = 3

struct AQPlayerState {
    var mDataFormat = AudioStreamBasicDescription()
    var mQueue: AudioQueueRef?
    var mBuffers: [AudioQueueBufferRef?] = Array(repeating: nil, count: kNumberBuffers)
    var mAudioFile: AudioFileID?
    var bufferByteSize: UInt32 = 0
    var mCurrentPacket: Int64 = 0
    var mNumPacketsToRead: UInt32 = 0
    var mPacketDescs: UnsafeMutablePointer<AudioStreamPacketDescription>?
    var mIsRunning = false
}

private func HandleOutputBuffer(_ aqData: UnsafeMutableRawPointer?, _ inAQ: AudioQueueRef, _ inBuffer: AudioQueueBufferRef) {
    let pAqData = aqData!.assumingMemoryBound(to: AQPlayerState.self)
    if !pAqData.pointee.mIsRunning { return }
    var numBytesReadFromFile: UInt32 = 0
    var numPackets = pAqData.pointee.mNumPacketsToRead
    AudioFileReadPackets(pAqData.pointee.mAudioFile!, false, &numBytesReadFromFile, pAqData.pointee.mPacketDescs,
                         pAqData.pointee.mCurrentPacket, &numPackets, inBuffer.pointee.mAudioData)
    if numPackets > 0 {
        inBuffer.pointee.mAudioDataByteSize = numBytesReadFromFile
        AudioQueueEnqueueBuffer(pAqData.pointee.mQueue!, inBuffer, pAqData.pointee.mPacketDescs != nil ? numPackets : 0,
                                pAqData.pointee.mPacketDescs)
        pAqData.pointee.mCurrentPacket += Int64(numPackets)
    } else {
        AudioQueueStop(pAqData.pointee.mQueue!, false)
        pAqData.pointee.mIsRunning = false
    }
}

private func DeriveBufferSize(_ ASBDesc: AudioStreamBasicDescription, _ maxPacketSize: UInt32, _ seconds: Float64,
                              _ outBufferSize: inout UInt32, _ outNumPacketsToRead: inout UInt32) {
    let maxBufferSize: UInt32 = 0x50000
    let minBufferSize: UInt32 = 0x4000
    if ASBDesc.mFramesPerPacket != 0 {
        let numPacketsForTime = ASBDesc.mSampleRate / Float64(ASBDesc.mFramesPerPacket) * seconds
        outBufferSize = UInt32(numPacketsForTime * Float64(maxPacketSize))
    } else {
        outBufferSize = max(maxBufferSize, maxPacketSize)
    }
    if outBufferSize > maxBufferSize && outBufferSize > maxPacketSize {
        outBufferSize = maxBufferSize
    } else if outBufferSize < minBufferSize {
        outBufferSize = minBufferSize
    }
    outNumPacketsToRead = outBufferSize / maxPacketSize
}

/// Plays `path` the way seed 000 does; returns the first failing status, or noErr.
private func playFile(_ path: String) -> OSStatus {
    let aqData = UnsafeMutablePointer<AQPlayerState>.allocate(capacity: 1)
    aqData.initialize(to: AQPlayerState())
    defer { aqData.deinitialize(count: 1); aqData.deallocate() }

    let bytes = Array(path.utf8)
    let audioFileURL = CFURLCreateFromFileSystemRepresentation(nil, bytes, bytes.count, false)!
    var result = AudioFileOpenURL(audioFileURL, .readPermission, 0, &aqData.pointee.mAudioFile)
    guard result == noErr, let file = aqData.pointee.mAudioFile else { return result }

    var dataFormatSize = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
    result = AudioFileGetProperty(file, kAudioFilePropertyDataFormat, &dataFormatSize, &aqData.pointee.mDataFormat)
    guard result == noErr else { return result }

    result = AudioQueueNewOutput(&aqData.pointee.mDataFormat, HandleOutputBuffer, aqData, CFRunLoopGetCurrent(),
                                 CFRunLoopMode.commonModes.rawValue, 0, &aqData.pointee.mQueue)
    guard result == noErr, let queue = aqData.pointee.mQueue else { return result }

    var maxPacketSize: UInt32 = 0
    var propertySize = UInt32(MemoryLayout<UInt32>.size)
    result = AudioFileGetProperty(file, kAudioFilePropertyPacketSizeUpperBound, &propertySize, &maxPacketSize)
    guard result == noErr else { return result }
    DeriveBufferSize(aqData.pointee.mDataFormat, maxPacketSize, 0.5, &aqData.pointee.bufferByteSize, &aqData.pointee.mNumPacketsToRead)

    let isFormatVBR = aqData.pointee.mDataFormat.mBytesPerPacket == 0 || aqData.pointee.mDataFormat.mFramesPerPacket == 0
    if isFormatVBR {
        aqData.pointee.mPacketDescs = .allocate(capacity: Int(aqData.pointee.mNumPacketsToRead))
    } else {
        aqData.pointee.mPacketDescs = nil
    }
    defer { aqData.pointee.mPacketDescs?.deallocate() }

    var cookieSize = UInt32(MemoryLayout<UInt32>.size)
    let couldNotGetProperty = AudioFileGetPropertyInfo(file, kAudioFilePropertyMagicCookieData, &cookieSize, nil) != noErr
    if !couldNotGetProperty && cookieSize > 0 {
        let magicCookie = malloc(Int(cookieSize))!
        AudioFileGetProperty(file, kAudioFilePropertyMagicCookieData, &cookieSize, magicCookie)
        result = AudioQueueSetProperty(queue, kAudioQueueProperty_MagicCookie, magicCookie, cookieSize)
        free(magicCookie)
        guard result == noErr else { return result }
    }

    aqData.pointee.mCurrentPacket = 0
    aqData.pointee.mIsRunning = true // set before priming so HandleOutputBuffer fills the buffers
    for i in 0..<kNumberBuffers {
        result = AudioQueueAllocateBuffer(queue, aqData.pointee.bufferByteSize, &aqData.pointee.mBuffers[i])
        guard result == noErr else { return result }
        HandleOutputBuffer(aqData, queue, aqData.pointee.mBuffers[i]!)
    }

    let gain: Float32 = 1.0
    AudioQueueSetParameter(queue, kAudioQueueParam_Volume, gain)

    aqData.pointee.mIsRunning = true
    result = AudioQueueStart(queue, nil)
    guard result == noErr else { return result }
    repeat {
        CFRunLoopRunInMode(CFRunLoopMode.defaultMode, 0.25, false)
    } while aqData.pointee.mIsRunning
    CFRunLoopRunInMode(CFRunLoopMode.defaultMode, 1, false)

    // Not in the seed: make sure everything played before disposing immediately.
    var running: UInt32 = 1
    for _ in 0..<200 where running != 0 {
        var size = UInt32(MemoryLayout<UInt32>.size)
        AudioQueueGetProperty(queue, kAudioQueueProperty_IsRunning, &running, &size)
        if running != 0 { CFRunLoopRunInMode(CFRunLoopMode.defaultMode, 0.05, false) }
    }

    AudioQueueDispose(queue, true)
    AudioFileClose(file)
    return running == 0 ? noErr : kAudioQueueErr_InvalidRunState
}

extension CompatSeedTests {
    @Test("seed 000: AQPlayerState playback with AudioFileReadPackets and the magic cookie", .requires(corpusMissing), arguments: [
        "ffmpeg-generated/mp3/l3_cbr128_44k_st_info.mp3",
        "ffmpeg-generated/m4a/aac_faststart.m4a",
        "ffmpeg-generated/caf/alac_st.caf",
        "ffmpeg-generated/aiff/pcm_s16be_st.aiff",
        "flac-test-files/subset/01 - blocksize 4096.flac",
    ])
    func filePlayer(_ relative: String) throws {
        let path = try corpusFile(relative)
        let wav = temporaryWAV("file")
        defer { remove(wav) }
        setenv("OAT_OUTPUT", "wav:" + wav, 1)
        defer { unsetenv("OAT_OUTPUT") }

        let status = playFile(path)
        #expect(status == noErr, "\(relative): status \(status)")
        let recorded = readFloatWAV(wav)
        let result = try compare(recording: recorded.samples, channels: recorded.channels, with: path)
        print("\(relative): \(result)")
        #expect(result.lag == 0, "\(relative): \(result)")
        #expect(result.snr > 90, "\(relative): \(result)")
        #expect(result.playedFrames == result.referenceFrames, "\(relative): \(result)")
    }
}
