// OAT_OUTPUT's `rate=HZ` option on queues opened through the C API: the device runs at that
// rate (the queue resamples), as the engine's output did; before, the queue opened the device
// at the stream's rate (and the WAV path kept the option as part of its name).
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import OATTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

private func ignoreBuffer(_ user: UnsafeMutableRawPointer?, _ queue: AudioQueueRef, _ buffer: AudioQueueBufferRef) {}

@Suite(.serialized) struct PlaybackAudioQueueOutputRateTests {
    @Test func aQueueWritesAWAVAtOATOutputsRate() throws {
        let wav = temporaryWAV("queue-rate")
        defer { remove(wav) }
        setenv("OAT_OUTPUT", "wav:\(wav),rate=22050", 1)
        defer { unsetenv("OAT_OUTPUT") }
        // One second of 1 kHz, mono Float32 at 48 kHz, in ten buffers.
        var format = AudioStreamBasicDescription(mSampleRate: 48000, mFormatID: kAudioFormatLinearPCM,
                                                 mFormatFlags: kLinearPCMFormatFlagIsFloat | kLinearPCMFormatFlagIsPacked,
                                                 mBytesPerPacket: 4, mFramesPerPacket: 1, mBytesPerFrame: 4, mChannelsPerFrame: 1,
                                                 mBitsPerChannel: 32, mReserved: 0)
        var queue: AudioQueueRef?
        try #require(AudioQueueNewOutput(&format, ignoreBuffer, nil, nil, nil, 0, &queue) == noErr)
        let q = try #require(queue)
        for b in 0..<10 {
            var buffer: AudioQueueBufferRef?
            try #require(AudioQueueAllocateBuffer(q, 4800 * 4, &buffer) == noErr)
            let buf = try #require(buffer)
            let samples = buf.pointee.mAudioData.assumingMemoryBound(to: Float.self)
            for i in 0..<4800 { samples[i] = 0.4 * Float(sin(2 * .pi * 1000 * Double(b * 4800 + i) / 48000)) }
            buf.pointee.mAudioDataByteSize = 4800 * 4
            #expect(AudioQueueEnqueueBuffer(q, buf, 0, nil) == noErr)
        }
        #expect(AudioQueueStart(q, nil) == noErr)
        // The end of the stream: what the resampler still holds plays too (Apple's idiom).
        #expect(AudioQueueFlush(q) == noErr)
        // The queue's time is in the stream's rate: about 48000 once the second has played.
        var time = AudioTimeStamp()
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            usleep(10_000)
            if AudioQueueGetCurrentTime(q, nil, &time, nil) == noErr, time.mSampleTime >= 47000 { break }
        }
        #expect(time.mSampleTime >= 47000 && time.mSampleTime <= 48000 + 4800, "queue time \(time.mSampleTime) (stream frames)")
        #expect(AudioQueueStop(q, false) == noErr)
        usleep(300_000)
        AudioQueueDispose(q, true)
        let (samples, channels) = readFloatWAV(wav)
        let header = try #require(Corpus.read(wav))
        let rate = Int(header[24]) | Int(header[25]) << 8 | Int(header[26]) << 16 | Int(header[27]) << 24
        #expect(rate == 22050, "the WAV is at \(rate) Hz")
        #expect(channels == 1)
        let seconds = Double(samples.count) / 22050
        #expect(abs(seconds - 1) < 0.05, "\(seconds) s of the 1 s tone")
        let middle = Array(samples[(samples.count / 4)..<(samples.count * 3 / 4)])
        let crossings = zip(middle, middle.dropFirst()).filter { $0 < 0 && $1 >= 0 }.count
        let frequency = Double(crossings) / (Double(middle.count) / 22050)
        #expect(abs(frequency - 1000) < 10, "the tone is at \(frequency) Hz")
    }
}
