// AudioQueue device time, the tap's queue time and the channel layout property through the C API,
// as macOS code calls them (only the import differs). The queues render offline, so the device
// clock is the offline render position.
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Queue times a tap saw through AudioQueueProcessingTapGetQueueTime.
final class TapTimes: @unchecked Sendable {
    var times: [(Double, UInt32)] = []
    let source: ToneSource
    init(_ source: ToneSource) { self.source = source }
}

private func timeTap(_ clientData: UnsafeMutableRawPointer, _ tap: AudioQueueProcessingTapRef, _ frames: UInt32,
                     _ time: UnsafeMutablePointer<AudioTimeStamp>, _ flags: UnsafeMutablePointer<AudioQueueProcessingTapFlags>,
                     _ outFrames: UnsafeMutablePointer<UInt32>, _ data: UnsafeMutablePointer<AudioBufferList>) {
    let record = Unmanaged<TapTimes>.fromOpaque(clientData).takeUnretainedValue()
    var got: UInt32 = 0
    guard AudioQueueProcessingTapGetSourceAudio(tap, frames, time, flags, &got, data) == noErr else { outFrames.pointee = 0; return }
    var sampleTime: Float64 = -1
    var count: UInt32 = 0
    if AudioQueueProcessingTapGetQueueTime(tap, &sampleTime, &count) == noErr { record.times.append((sampleTime, count)) }
    outFrames.pointee = got
}

private func toneCallback(_ user: UnsafeMutableRawPointer?, _ queue: AudioQueueRef, _ buffer: AudioQueueBufferRef) {
    let source = Unmanaged<ToneSource>.fromOpaque(user!).takeUnretainedValue()
    let ended = source.frame.withLock { frame -> Bool in
        let n = min(2048, source.totalFrames - frame)
        guard n > 0 else { return true }
        let samples = buffer.pointee.mAudioData.assumingMemoryBound(to: Float.self)
        for i in 0..<n {
            let v = Float(0.5 * sin(2 * Double.pi * 440 * Double(frame + i) / 44100))
            samples[i * 2] = v
            samples[i * 2 + 1] = v
        }
        frame += n
        buffer.pointee.mAudioDataByteSize = UInt32(n * 8)
        AudioQueueEnqueueBuffer(queue, buffer, 0, nil)
        return false
    }
    if ended { AudioQueueStop(queue, false) }
}

@Suite struct AudioQueueTimeCompatTests {
    private var stereoFloat: AudioStreamBasicDescription {
        AudioStreamBasicDescription(mSampleRate: 44100, mFormatID: kAudioFormatLinearPCM, mFormatFlags: kAudioFormatFlagsNativeFloatPacked,
                                    mBytesPerPacket: 8, mFramesPerPacket: 1, mBytesPerFrame: 8, mChannelsPerFrame: 2,
                                    mBitsPerChannel: 32, mReserved: 0)
    }

    /// The device clock follows the offline render position; translating a sample time one
    /// second ahead gives a host time one second ahead and back; the nearest start time is not
    /// in the past; a tap sees contiguous queue times that add up to the stream.
    @Test func deviceTimeTranslationAndTapQueueTime() throws {
        let source = ToneSource(totalFrames: 44100)
        let record = TapTimes(source)
        var format = stereoFloat
        var queue: AudioQueueRef?
        let user = Unmanaged.passUnretained(source).toOpaque()
        #expect(AudioQueueNewOutput(&format, toneCallback, user, nil, nil, 0, &queue) == noErr)
        let q = try #require(queue)
        defer { AudioQueueDispose(q, true) }
        var now = AudioTimeStamp()
        #expect(AudioQueueDeviceGetCurrentTime(q, &now) == kAudioQueueErr_InvalidRunState)
        var tapRef: AudioQueueProcessingTapRef?
        var maxFrames: UInt32 = 0
        var tapFormat = AudioStreamBasicDescription()
        #expect(AudioQueueProcessingTapNew(q, timeTap, Unmanaged.passUnretained(record).toOpaque(), [.preEffects], &maxFrames, &tapFormat, &tapRef) == noErr)
        var sampleTime: Float64 = 0
        var count: UInt32 = 0
        #expect(AudioQueueProcessingTapGetQueueTime(try #require(tapRef), &sampleTime, &count) == kAudioQueueErr_InvalidTapContext)
        var renderFormat = format
        #expect(AudioQueueSetOfflineRenderFormat(q, &renderFormat, nil) == noErr)
        for _ in 0..<3 {
            var buffer: AudioQueueBufferRef?
            #expect(AudioQueueAllocateBuffer(q, 2048 * 8, &buffer) == noErr)
            toneCallback(user, q, buffer!)
        }
        #expect(AudioQueueStart(q, nil) == noErr)
        var out: AudioQueueBufferRef?
        #expect(AudioQueueAllocateBuffer(q, 4096 * 8, &out) == noErr)
        var time = AudioTimeStamp()
        time.mFlags = kAudioTimeStampSampleTimeValid
        #expect(AudioQueueOfflineRender(q, &time, out!, 0) == noErr)
        var rendered = 0
        for _ in 0..<3 {
            time.mSampleTime = Double(rendered)
            #expect(AudioQueueOfflineRender(q, &time, out!, 4096) == noErr)
            rendered += 4096
        }
        #expect(AudioQueueDeviceGetCurrentTime(q, &now) == noErr)
        #expect(now.mSampleTime == Double(rendered))
        #expect(now.mFlags.contains(kAudioTimeStampSampleHostTimeValid))
        let host = AudioGetCurrentHostTime()
        #expect(now.mHostTime <= host && host - now.mHostTime < 1_000_000_000)

        var ahead = AudioTimeStamp()
        ahead.mSampleTime = now.mSampleTime + 44100
        ahead.mFlags = kAudioTimeStampSampleTimeValid
        var translated = AudioTimeStamp()
        #expect(AudioQueueDeviceTranslateTime(q, &ahead, &translated) == noErr)
        let seconds = Double(translated.mHostTime) / 1e9 - Double(now.mHostTime) / 1e9
        #expect(abs(seconds - 1) < 0.05, "\(seconds) s")
        var back = AudioTimeStamp()
        back.mHostTime = translated.mHostTime
        back.mFlags = kAudioTimeStampHostTimeValid
        var sample = AudioTimeStamp()
        #expect(AudioQueueDeviceTranslateTime(q, &back, &sample) == noErr)
        #expect(abs(sample.mSampleTime - ahead.mSampleTime) < 0.05 * 44100)

        var start = AudioTimeStamp()
        start.mSampleTime = 0
        start.mFlags = kAudioTimeStampSampleTimeValid
        #expect(AudioQueueDeviceGetNearestStartTime(q, &start, 0) == noErr)
        #expect(start.mSampleTime >= now.mSampleTime && start.mFlags.contains(kAudioTimeStampHostTimeValid))
        #expect(start.mHostTime >= now.mHostTime)

        // The tap's queue times are contiguous from 0 and cover what was rendered.
        #expect(!record.times.isEmpty)
        var expected = 0.0
        for (t, n) in record.times {
            #expect(t == expected)
            expected += Double(n)
        }
        #expect(expected >= Double(rendered))
        #expect(AudioQueueProcessingTapDispose(tapRef!) == noErr)
    }

    /// kAudioQueueProperty_ChannelLayout: stereo by default, a layout with the queue's channel
    /// count is kept (descriptions included), a wrong channel count is refused; on input queues
    /// too.
    @Test func channelLayoutProperty() throws {
        var format = stereoFloat
        var queue: AudioQueueRef?
        #expect(AudioQueueNewOutput(&format, toneCallback, nil, nil, nil, 0, &queue) == noErr)
        let q = try #require(queue)
        defer { AudioQueueDispose(q, true) }
        var size: UInt32 = 0
        #expect(AudioQueueGetPropertySize(q, kAudioQueueProperty_ChannelLayout, &size) == noErr)
        var layout = AudioChannelLayout()
        size = UInt32(MemoryLayout<AudioChannelLayout>.size)
        #expect(AudioQueueGetProperty(q, kAudioQueueProperty_ChannelLayout, &layout, &size) == noErr)
        #expect(layout.mChannelLayoutTag == kAudioChannelLayoutTag_Stereo)

        var mono = AudioChannelLayout()
        mono.mChannelLayoutTag = kAudioChannelLayoutTag_Mono
        #expect(AudioQueueSetProperty(q, kAudioQueueProperty_ChannelLayout, &mono, UInt32(MemoryLayout<AudioChannelLayout>.size)) == kAudioQueueErr_InvalidPropertyValue)

        // Two channel descriptions (right, left) in Apple's variable-length shape.
        let bytes = MemoryLayout<AudioChannelLayout>.size + MemoryLayout<AudioChannelDescription>.stride
        let raw = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 8)
        defer { raw.deallocate() }
        raw.initializeMemory(as: UInt8.self, repeating: 0, count: bytes)
        let custom = raw.bindMemory(to: AudioChannelLayout.self, capacity: 1)
        custom.pointee.mChannelLayoutTag = kAudioChannelLayoutTag_UseChannelDescriptions
        custom.pointee.mNumberChannelDescriptions = 2
        let descriptions = UnsafeMutableRawPointer(custom).advanced(by: MemoryLayout<AudioChannelLayout>.offset(of: \AudioChannelLayout.mChannelDescriptions)!)
            .assumingMemoryBound(to: AudioChannelDescription.self)
        descriptions[0].mChannelLabel = 2 // right
        descriptions[1].mChannelLabel = 1 // left
        #expect(AudioQueueSetProperty(q, kAudioQueueProperty_ChannelLayout, raw, UInt32(bytes)) == noErr)
        #expect(AudioQueueGetPropertySize(q, kAudioQueueProperty_ChannelLayout, &size) == noErr && Int(size) == bytes)
        let readBack = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 8)
        defer { readBack.deallocate() }
        #expect(AudioQueueGetProperty(q, kAudioQueueProperty_ChannelLayout, readBack, &size) == noErr)
        #expect(memcmp(readBack, raw, bytes) == 0)

        var input: AudioQueueRef?
        var monoFormat = AudioStreamBasicDescription(mSampleRate: 16000, mFormatID: kAudioFormatLinearPCM,
                                                     mFormatFlags: kLinearPCMFormatFlagIsSignedInteger | kLinearPCMFormatFlagIsPacked,
                                                     mBytesPerPacket: 2, mFramesPerPacket: 1, mBytesPerFrame: 2, mChannelsPerFrame: 1,
                                                     mBitsPerChannel: 16, mReserved: 0)
        #expect(AudioQueueNewInput(&monoFormat, { _, _, _, _, _, _ in }, nil, nil, nil, 0, &input) == noErr)
        let i = try #require(input)
        defer { AudioQueueDispose(i, true) }
        size = UInt32(MemoryLayout<AudioChannelLayout>.size)
        #expect(AudioQueueGetProperty(i, kAudioQueueProperty_ChannelLayout, &layout, &size) == noErr && layout.mChannelLayoutTag == kAudioChannelLayoutTag_Mono)
        #expect(AudioQueueSetProperty(i, kAudioQueueProperty_ChannelLayout, &mono, UInt32(MemoryLayout<AudioChannelLayout>.size)) == noErr)
    }
}
