// Apple's AudioQueue hands no buffer back to the output callback before AudioQueueStart: buffers
// enqueued (and primed) before it stay with the queue and come back once it runs and has played
// them (here: rendered offline). Through the C
// API, as macOS code calls it (only the import differs), on an offline queue (no device needed).
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

/// Buffers the output callback received, in order.
final class ReturnedBuffers: Sendable {
    /// Buffer addresses.
    let list = Locked<[Int]>([])
    init() {}
}

private func countingCallback(_ user: UnsafeMutableRawPointer?, _ queue: AudioQueueRef, _ buffer: AudioQueueBufferRef) {
    let returned = Unmanaged<ReturnedBuffers>.fromOpaque(user!).takeUnretainedValue()
    let address = Int(bitPattern: UnsafeMutableRawPointer(buffer))
    returned.list.withLock { $0.append(address) }
}

/// Renders `frames` frames of an offline queue (Float32 stereo) in 4096-frame calls.
func renderQueueOffline(_ q: AudioQueueRef, frames: Int) throws {
    var out: AudioQueueBufferRef?
    #expect(AudioQueueAllocateBuffer(q, 4096 * 8, &out) == noErr)
    let o = try #require(out)
    defer { AudioQueueFreeBuffer(q, o) }
    var time = AudioTimeStamp()
    time.mFlags = kAudioTimeStampSampleTimeValid
    #expect(AudioQueueOfflineRender(q, &time, o, 0) == noErr)
    var done = 0
    while done < frames {
        time.mSampleTime = Double(done)
        #expect(AudioQueueOfflineRender(q, &time, o, 4096) == noErr)
        done += 4096
    }
}

@Suite struct AudioQueueStartCompatTests {
    /// Three buffers enqueued, then AudioQueuePrime: they are decoded (frames prepared) but none
    /// comes back for 0.3 s; after AudioQueueStart all three come back, in the order enqueued.
    @Test func buffersComeBackOnlyAfterStart() throws {
        var format = AudioStreamBasicDescription(mSampleRate: 44100, mFormatID: kAudioFormatLinearPCM, mFormatFlags: kAudioFormatFlagsNativeFloatPacked,
                                                 mBytesPerPacket: 8, mFramesPerPacket: 1, mBytesPerFrame: 8, mChannelsPerFrame: 2,
                                                 mBitsPerChannel: 32, mReserved: 0)
        let returned = ReturnedBuffers()
        var queue: AudioQueueRef?
        #expect(AudioQueueNewOutput(&format, countingCallback, Unmanaged.passUnretained(returned).toOpaque(), nil, nil, 0, &queue) == noErr)
        let q = try #require(queue)
        defer { AudioQueueDispose(q, true) }
        var renderFormat = format
        #expect(AudioQueueSetOfflineRenderFormat(q, &renderFormat, nil) == noErr)
        var enqueued: [Int] = []
        for b in 0..<3 {
            var buffer: AudioQueueBufferRef?
            #expect(AudioQueueAllocateBuffer(q, 2048 * 8, &buffer) == noErr)
            let buf = try #require(buffer)
            let samples = buf.pointee.mAudioData.assumingMemoryBound(to: Float.self)
            for i in 0..<4096 { samples[i] = Float(0.25 * sin(Double(b * 2048 + i / 2) * 0.05)) }
            buf.pointee.mAudioDataByteSize = 2048 * 8
            #expect(AudioQueueEnqueueBuffer(q, buf, 0, nil) == noErr)
            enqueued.append(Int(bitPattern: UnsafeMutableRawPointer(buf)))
        }
        var prepared: UInt32 = 0
        #expect(AudioQueuePrime(q, 0, &prepared) == noErr)
        #expect(prepared == 3 * 2048, "prepared \(prepared) frames")
        usleep(300_000)
        #expect(returned.list.withLock { $0.count } == 0, "buffers came back before AudioQueueStart")
        #expect(AudioQueueStart(q, nil) == noErr)
        try renderQueueOffline(q, frames: 3 * 2048)
        for _ in 0..<2500 where returned.list.withLock({ $0.count }) < 3 { usleep(2_000) }
        #expect(returned.list.withLock { $0 } == enqueued)
    }

    /// Without a prime either: enqueued before the start, nothing comes back until it.
    @Test func enqueuedBeforeStartWithoutPrimeIsHeld() throws {
        var format = AudioStreamBasicDescription(mSampleRate: 44100, mFormatID: kAudioFormatLinearPCM, mFormatFlags: kAudioFormatFlagsNativeFloatPacked,
                                                 mBytesPerPacket: 8, mFramesPerPacket: 1, mBytesPerFrame: 8, mChannelsPerFrame: 2,
                                                 mBitsPerChannel: 32, mReserved: 0)
        let returned = ReturnedBuffers()
        var queue: AudioQueueRef?
        #expect(AudioQueueNewOutput(&format, countingCallback, Unmanaged.passUnretained(returned).toOpaque(), nil, nil, 0, &queue) == noErr)
        let q = try #require(queue)
        defer { AudioQueueDispose(q, true) }
        var renderFormat = format
        #expect(AudioQueueSetOfflineRenderFormat(q, &renderFormat, nil) == noErr)
        var buffer: AudioQueueBufferRef?
        #expect(AudioQueueAllocateBuffer(q, 1024 * 8, &buffer) == noErr)
        let buf = try #require(buffer)
        buf.pointee.mAudioDataByteSize = 1024 * 8
        #expect(AudioQueueEnqueueBuffer(q, buf, 0, nil) == noErr)
        usleep(300_000)
        #expect(returned.list.withLock { $0.count } == 0, "a buffer came back before AudioQueueStart")
        #expect(AudioQueueStart(q, nil) == noErr)
        try renderQueueOffline(q, frames: 1024)
        for _ in 0..<2500 where returned.list.withLock({ $0.count }) < 1 { usleep(2_000) }
        #expect(returned.list.withLock { $0.count } == 1)
    }
}
