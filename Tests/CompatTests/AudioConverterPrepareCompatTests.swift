// AudioConverterPrepare and AudioConverterFillComplexBufferRealtimeSafe (AudioConverter.h, macOS 15
// and 26) as macOS code calls them: the warm-up with a completion block, and the real-time
// variant for a PCM-to-PCM conversion (same output as AudioConverterFillComplexBuffer) and for a
// decoder (refused with kAudioConverterErr_OperationNotSupported, as Apple documents).
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Dispatch
import Testing

private func RealtimeInputProc(_ inAudioConverter: AudioConverterRef, _ ioNumberDataPackets: UnsafeMutablePointer<UInt32>,
                               _ ioData: UnsafeMutablePointer<AudioBufferList>,
                               _ outDataPacketDescription: UnsafeMutablePointer<UnsafeMutablePointer<AudioStreamPacketDescription>?>?,
                               _ inUserData: UnsafeMutableRawPointer?) -> OSStatus {
    let source = Unmanaged<PCMSource>.fromOpaque(inUserData!).takeUnretainedValue()
    let n = min(Int(ioNumberDataPackets.pointee), source.frames - source.position)
    ioData.pointee.mNumberBuffers = 1
    ioData.pointee.mBuffers.mNumberChannels = 2
    ioData.pointee.mBuffers.mData = n > 0 ? UnsafeMutableRawPointer(source.samples + 2 * source.position) : nil
    ioData.pointee.mBuffers.mDataByteSize = UInt32(n * 4)
    ioNumberDataPackets.pointee = UInt32(n)
    source.position += n
    return noErr
}

private final class Done: @unchecked Sendable {
    var status: OSStatus = 1
    let semaphore = DispatchSemaphore(value: 0)
}

/// Converts 0.5 s of 44.1 kHz 16-bit stereo to 48 kHz Float32 stereo, with either fill call.
private func convert(realtime: Bool) throws -> [Float] {
    var src = AudioStreamBasicDescription(mSampleRate: 44100, mFormatID: kAudioFormatLinearPCM,
                                          mFormatFlags: kAudioFormatFlagIsSignedInteger | kAudioFormatFlagIsPacked,
                                          mBytesPerPacket: 4, mFramesPerPacket: 1, mBytesPerFrame: 4, mChannelsPerFrame: 2, mBitsPerChannel: 16, mReserved: 0)
    var dst = AudioStreamBasicDescription(mSampleRate: 48000, mFormatID: kAudioFormatLinearPCM,
                                          mFormatFlags: kAudioFormatFlagIsFloat | kAudioFormatFlagIsPacked,
                                          mBytesPerPacket: 8, mFramesPerPacket: 1, mBytesPerFrame: 8, mChannelsPerFrame: 2, mBitsPerChannel: 32, mReserved: 0)
    var ref: AudioConverterRef?
    try #require(AudioConverterNew(&src, &dst, &ref) == noErr)
    let converter = try #require(ref)
    defer { AudioConverterDispose(converter) }
    let source = PCMSource(frames: 22050)
    var out: [Float] = []
    var chunk = [Float](repeating: 0, count: 1024 * 2)
    while true {
        var frames: UInt32 = 1024
        let status = chunk.withUnsafeMutableBytes { raw -> OSStatus in
            var list = AudioBufferList(mNumberBuffers: 1, mBuffers: AudioBuffer(mNumberChannels: 2, mDataByteSize: UInt32(raw.count), mData: raw.baseAddress))
            let client = Unmanaged.passUnretained(source).toOpaque()
            return realtime ? AudioConverterFillComplexBufferRealtimeSafe(converter, RealtimeInputProc, client, &frames, &list, nil)
                            : AudioConverterFillComplexBuffer(converter, RealtimeInputProc, client, &frames, &list, nil)
        }
        try #require(status == noErr)
        if frames == 0 { break }
        out += chunk[0..<Int(frames) * 2]
    }
    return out
}

@Suite struct AudioConverterPrepareCompatTests {
    /// The warm-up loads the codec libraries and calls the completion block with noErr.
    @Test func prepareCallsItsCompletionBlock() {
        let done = Done()
        AudioConverterPrepare(0, nil) { status in
            done.status = status
            done.semaphore.signal()
        }
        #expect(done.semaphore.wait(timeout: .now() + 30) == .success)
        #expect(done.status == noErr)
        #if !canImport(AudioToolbox)
        #expect(AudioConverter.codecsLoaded) // the Swift API's view: FFmpeg is in the process
        #endif
        AudioConverterPrepare(0, nil, nil) // without a block: synchronous, and again a no-op
    }

    /// PCM to PCM (with a rate change): the real-time variant gives what FillComplexBuffer gives.
    @Test func realtimeSafePCMConversionMatchesFillComplexBuffer() throws {
        let plain = try convert(realtime: false)
        let realtime = try convert(realtime: true)
        #expect(plain.count > 2 * 23000 && plain.count < 2 * 25000)
        #expect(realtime == plain)
        #expect(realtime.contains { abs($0) > 0.1 })
    }

    /// A decoder is not real-time safe: kAudioConverterErr_OperationNotSupported, nothing produced.
    @Test func realtimeSafeRefusesADecoder() throws {
        var src = AudioStreamBasicDescription(mSampleRate: 44100, mFormatID: kAudioFormatMPEGLayer3, mFormatFlags: 0, mBytesPerPacket: 0,
                                              mFramesPerPacket: 1152, mBytesPerFrame: 0, mChannelsPerFrame: 2, mBitsPerChannel: 0, mReserved: 0)
        var dst = AudioStreamBasicDescription(mSampleRate: 44100, mFormatID: kAudioFormatLinearPCM,
                                              mFormatFlags: kAudioFormatFlagIsFloat | kAudioFormatFlagIsPacked,
                                              mBytesPerPacket: 8, mFramesPerPacket: 1, mBytesPerFrame: 8, mChannelsPerFrame: 2, mBitsPerChannel: 32, mReserved: 0)
        var ref: AudioConverterRef?
        try #require(AudioConverterNew(&src, &dst, &ref) == noErr)
        let converter = try #require(ref)
        defer { AudioConverterDispose(converter) }
        var frames: UInt32 = 1024
        var samples = [Float](repeating: 0, count: 2048)
        let source = PCMSource(frames: 10)
        let status = samples.withUnsafeMutableBytes { raw -> OSStatus in
            var list = AudioBufferList(mNumberBuffers: 1, mBuffers: AudioBuffer(mNumberChannels: 2, mDataByteSize: UInt32(raw.count), mData: raw.baseAddress))
            return AudioConverterFillComplexBufferRealtimeSafe(converter, RealtimeInputProc, Unmanaged.passUnretained(source).toOpaque(), &frames, &list, nil)
        }
        #expect(status == kAudioConverterErr_OperationNotSupported && frames == 0)
        #expect(source.position == 0)
    }
}
