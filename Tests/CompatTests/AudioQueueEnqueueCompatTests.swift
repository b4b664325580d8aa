// What AudioQueueEnqueueBuffer accepts, as macOS code calls it (only the import differs), on
// offline queues (no device needed): an empty buffer is kAudioQueueErr_BufferEmpty, and packet
// descriptions passed for linear PCM are ignored (the packets are the buffer's bytes).
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Counts the output callback's calls.
private final class CallbackCount: Sendable {
    let count = Locked(0)
    init() {}
}

private func countCalls(_ user: UnsafeMutableRawPointer?, _ queue: AudioQueueRef, _ buffer: AudioQueueBufferRef) {
    Unmanaged<CallbackCount>.fromOpaque(user!).takeUnretainedValue().count.withLock { $0 += 1 }
}

private func int16Stereo() -> AudioStreamBasicDescription {
    AudioStreamBasicDescription(mSampleRate: 44100, mFormatID: kAudioFormatLinearPCM,
                                mFormatFlags: kLinearPCMFormatFlagIsSignedInteger | kLinearPCMFormatFlagIsPacked,
                                mBytesPerPacket: 4, mFramesPerPacket: 1, mBytesPerFrame: 4, mChannelsPerFrame: 2,
                                mBitsPerChannel: 16, mReserved: 0)
}

@Suite struct AudioQueueEnqueueCompatTests {
    /// A player at the end of its file enqueues a buffer with no bytes: Apple's queue refuses it
    /// with kAudioQueueErr_BufferEmpty and does not hand it back (no callback storm).
    @Test func anEmptyBufferIsRefused() throws {
        var format = int16Stereo()
        let calls = CallbackCount()
        var queue: AudioQueueRef?
        #expect(AudioQueueNewOutput(&format, countCalls, Unmanaged.passUnretained(calls).toOpaque(), nil, nil, 0, &queue) == noErr)
        let q = try #require(queue)
        defer { AudioQueueDispose(q, true) }
        var renderFormat = format
        #expect(AudioQueueSetOfflineRenderFormat(q, &renderFormat, nil) == noErr)
        var buffer: AudioQueueBufferRef?
        #expect(AudioQueueAllocateBuffer(q, 4096, &buffer) == noErr)
        let buf = try #require(buffer)
        buf.pointee.mAudioDataByteSize = 0
        #expect(AudioQueueEnqueueBuffer(q, buf, 0, nil) == kAudioQueueErr_BufferEmpty)
        #expect(AudioQueueStart(q, nil) == noErr)
        usleep(200_000)
        #expect(calls.count.withLock { $0 } == 0, "the refused buffer came back through the callback")
        // The buffer is still the caller's: filled, it is accepted.
        buf.pointee.mAudioDataByteSize = 4096
        #expect(AudioQueueEnqueueBuffer(q, buf, 0, nil) == noErr)
    }

    /// A 16-bit PCM buffer enqueued with stale packet descriptions (a description array left
    /// from compressed data: 3 packets of 417 bytes): Apple ignores descriptions for linear PCM,
    /// so every frame of the buffer plays.
    @Test func packetDescriptionsOfLinearPCMAreIgnored() throws {
        var format = int16Stereo()
        let calls = CallbackCount()
        var queue: AudioQueueRef?
        #expect(AudioQueueNewOutput(&format, countCalls, Unmanaged.passUnretained(calls).toOpaque(), nil, nil, 0, &queue) == noErr)
        let q = try #require(queue)
        defer { AudioQueueDispose(q, true) }
        var renderFormat = AudioStreamBasicDescription(mSampleRate: 44100, mFormatID: kAudioFormatLinearPCM, mFormatFlags: kAudioFormatFlagsNativeFloatPacked,
                                                       mBytesPerPacket: 8, mFramesPerPacket: 1, mBytesPerFrame: 8, mChannelsPerFrame: 2,
                                                       mBitsPerChannel: 32, mReserved: 0)
        #expect(AudioQueueSetOfflineRenderFormat(q, &renderFormat, nil) == noErr)
        let frames = 8192
        var buffer: AudioQueueBufferRef?
        #expect(AudioQueueAllocateBuffer(q, UInt32(frames * 4), &buffer) == noErr)
        let buf = try #require(buffer)
        let samples = buf.pointee.mAudioData.assumingMemoryBound(to: Int16.self)
        for i in 0..<frames {
            let v = Int16(8000 * sin(Double(i) * 2 * Double.pi * 1000 / 44100))
            samples[2 * i] = v
            samples[2 * i + 1] = v
        }
        buf.pointee.mAudioDataByteSize = UInt32(frames * 4)
        let stale = (0..<3).map { AudioStreamPacketDescription(mStartOffset: Int64($0 * 417), mVariableFramesInPacket: 0, mDataByteSize: 417) }
        #expect(AudioQueueEnqueueBuffer(q, buf, UInt32(stale.count), stale) == noErr)
        #expect(AudioQueueStart(q, nil) == noErr)
        var out: AudioQueueBufferRef?
        #expect(AudioQueueAllocateBuffer(q, 4096 * 8, &out) == noErr)
        let o = try #require(out)
        var time = AudioTimeStamp()
        time.mFlags = kAudioTimeStampSampleTimeValid
        #expect(AudioQueueOfflineRender(q, &time, o, 0) == noErr)
        var left: [Float] = []
        while left.count < frames + 4096 {
            time.mSampleTime = Double(left.count)
            guard AudioQueueOfflineRender(q, &time, o, 4096) == noErr else { break }
            let n = Int(o.pointee.mAudioDataByteSize) / 8
            let p = o.pointee.mAudioData.assumingMemoryBound(to: Float.self)
            for i in 0..<n { left.append(p[i * 2]) }
            if n < 4096 { break }
        }
        // Every frame of the buffer, at its level (8000/32768 peak: RMS 0.173), none silent.
        let played = left.prefix(frames)
        #expect(played.count == frames, "rendered \(left.count) frames of \(frames)")
        let rms = (played.reduce(0) { $0 + Double($1) * Double($1) } / Double(max(1, played.count))).squareRoot()
        #expect(abs(rms - 8000 / 32768 / 2.0.squareRoot()) < 0.01, "RMS \(rms): the buffer did not play in full")
        let lastQuarter = played.suffix(frames / 4)
        #expect(lastQuarter.map { abs($0) }.max() ?? 0 > 0.2, "the end of the buffer is silent")
    }
}
