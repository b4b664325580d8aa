// Time-pitch, processing taps and offline rendering through the Audio Toolbox C API, written as
// on macOS (only the import differs).
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A 440 Hz stereo tone the output callback hands out, then end of stream.
final class ToneSource: @unchecked Sendable {
    /// The next frame; the callback runs under this lock because the priming calls on the test
    /// thread and the queue's own callbacks can overlap.
    let frame = Locked(0)
    let totalFrames: Int
    var tapFrames = 0
    init(totalFrames: Int) { self.totalFrames = totalFrames }
}

private func toneCallback(_ user: UnsafeMutableRawPointer?, _ queue: AudioQueueRef, _ buffer: AudioQueueBufferRef) {
    let source = Unmanaged<ToneSource>.fromOpaque(user!).takeUnretainedValue()
    let buffer = UncheckedSendable(buffer)
    let ended = source.frame.withLock { frame -> Bool in
        let n = min(2048, source.totalFrames - frame)
        guard n > 0 else { return true }
        let samples = buffer.value.pointee.mAudioData.assumingMemoryBound(to: Float.self)
        for i in 0..<n {
            let v = Float(0.5 * sin(2 * Double.pi * 440 * Double(frame + i) / 44100))
            samples[i * 2] = v
            samples[i * 2 + 1] = v
        }
        frame += n
        buffer.value.pointee.mAudioDataByteSize = UInt32(n * 8)
        AudioQueueEnqueueBuffer(queue, buffer.value, 0, nil)
        return false
    }
    if ended { AudioQueueStop(queue, false) }
}

private func halvingTap(_ clientData: UnsafeMutableRawPointer, _ tap: AudioQueueProcessingTapRef, _ frames: UInt32,
                        _ time: UnsafeMutablePointer<AudioTimeStamp>, _ flags: UnsafeMutablePointer<AudioQueueProcessingTapFlags>,
                        _ outFrames: UnsafeMutablePointer<UInt32>, _ data: UnsafeMutablePointer<AudioBufferList>) {
    let source = Unmanaged<ToneSource>.fromOpaque(clientData).takeUnretainedValue()
    var got: UInt32 = 0
    guard AudioQueueProcessingTapGetSourceAudio(tap, frames, time, flags, &got, data) == noErr else { outFrames.pointee = 0; return }
    for buffer in UnsafeMutableAudioBufferListPointer(data) {
        let p = buffer.mData!.assumingMemoryBound(to: Float.self)
        for i in 0..<Int(got) { p[i] *= 0.5 }
    }
    source.tapFrames += Int(got)
    outFrames.pointee = got
}

@Suite struct TimePitchCompatTests {
    /// Renders the whole queue offline; returns the left channel.
    func renderQueue(playRate: Float, pitch: Float, algorithm: UInt32, tap: Bool) throws -> (left: [Float], source: ToneSource) {
        let source = ToneSource(totalFrames: 88200)
        var format = AudioStreamBasicDescription(mSampleRate: 44100, mFormatID: kAudioFormatLinearPCM, mFormatFlags: kAudioFormatFlagsNativeFloatPacked,
                                                 mBytesPerPacket: 8, mFramesPerPacket: 1, mBytesPerFrame: 8, mChannelsPerFrame: 2,
                                                 mBitsPerChannel: 32, mReserved: 0)
        var queue: AudioQueueRef?
        let user = Unmanaged.passUnretained(source).toOpaque()
        #expect(AudioQueueNewOutput(&format, toneCallback, user, nil, nil, 0, &queue) == noErr)
        let q = try #require(queue)
        defer { AudioQueueDispose(q, true) }
        var enable: UInt32 = 1
        #expect(AudioQueueSetProperty(q, kAudioQueueProperty_EnableTimePitch, &enable, 4) == noErr)
        var algo = algorithm
        #expect(AudioQueueSetProperty(q, kAudioQueueProperty_TimePitchAlgorithm, &algo, 4) == noErr)
        #expect(AudioQueueSetParameter(q, kAudioQueueParam_PlayRate, playRate) == noErr)
        #expect(AudioQueueSetParameter(q, kAudioQueueParam_Pitch, pitch) == noErr)
        var readBack: UInt32 = 0
        var size: UInt32 = 4
        #expect(AudioQueueGetProperty(q, kAudioQueueProperty_TimePitchAlgorithm, &readBack, &size) == noErr && readBack == algorithm)
        var tapRef: AudioQueueProcessingTapRef?
        if tap {
            var maxFrames: UInt32 = 0
            var tapFormat = AudioStreamBasicDescription()
            #expect(AudioQueueProcessingTapNew(q, halvingTap, user, [.preEffects], &maxFrames, &tapFormat, &tapRef) == noErr)
            #expect(maxFrames > 0 && tapFormat.mChannelsPerFrame == 2 && tapFormat.mBitsPerChannel == 32)
        }
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
        var left: [Float] = []
        while true {
            time.mSampleTime = Double(left.count)
            guard AudioQueueOfflineRender(q, &time, out!, 4096) == noErr else { break }
            let frames = Int(out!.pointee.mAudioDataByteSize) / 8
            let p = out!.pointee.mAudioData.assumingMemoryBound(to: Float.self)
            for i in 0..<frames { left.append(p[i * 2]) }
            if frames < 4096 { break }
        }
        if let tapRef { #expect(AudioQueueProcessingTapDispose(tapRef) == noErr) }
        return (left, source)
    }

    @Test func playRateHalvesTheOfflineFrameCount() throws {
        let (left, source) = try renderQueue(playRate: 2, pitch: 0, algorithm: kAudioQueueTimePitchAlgorithm_Spectral, tap: false)
        #expect(abs(left.count - source.totalFrames / 2) < source.totalFrames / 200)
        #expect(abs(dominantHz(left, rate: 44100) - 440) < 4.4)
    }

    @Test func pitchAndAPreEffectsTap() throws {
        let (left, source) = try renderQueue(playRate: 1, pitch: 1200, algorithm: kAudioQueueTimePitchAlgorithm_TimeDomain, tap: true)
        #expect(abs(left.count - source.totalFrames) < source.totalFrames / 100)
        #expect(source.tapFrames == source.totalFrames)
        let f = dominantHz(left, rate: 44100)
        #expect(abs(1200 * log2(f / 440) - 1200) < 5, "\(f) Hz")
        // The tap halved the level before the pitch shift: peak about 0.25.
        let peak = left[10000..<70000].map { abs($0) }.max() ?? 0
        #expect(peak > 0.2 && peak < 0.3, "peak \(peak)")
    }

    @Test func rejectsABadOfflineFormatAndUnknownAlgorithm() throws {
        var format = AudioStreamBasicDescription(mSampleRate: 44100, mFormatID: kAudioFormatLinearPCM, mFormatFlags: kAudioFormatFlagsNativeFloatPacked,
                                                 mBytesPerPacket: 8, mFramesPerPacket: 1, mBytesPerFrame: 8, mChannelsPerFrame: 2,
                                                 mBitsPerChannel: 32, mReserved: 0)
        var queue: AudioQueueRef?
        #expect(AudioQueueNewOutput(&format, toneCallback, nil, nil, nil, 0, &queue) == noErr)
        let q = try #require(queue)
        defer { AudioQueueDispose(q, true) }
        var other = format
        other.mSampleRate = 48000
        #expect(AudioQueueSetOfflineRenderFormat(q, &other, nil) == kAudioQueueErr_InvalidOfflineMode)
        var algo: UInt32 = 0x1234
        #expect(AudioQueueSetProperty(q, kAudioQueueProperty_TimePitchAlgorithm, &algo, 4) == kAudioQueueErr_InvalidPropertyValue)
        #expect(AudioQueueSetParameter(q, kAudioQueueParam_PlayRate, 4) != noErr)
    }
}

/// Dominant frequency by counting rising zero crossings over the middle of `x` (a clean tone).
func dominantHz(_ x: [Float], rate: Double) -> Double {
    let from = x.count / 4, to = 3 * x.count / 4
    var first = -1, last = -1, crossings = 0
    for i in (from + 1)..<to where x[i - 1] < 0 && x[i] >= 0 {
        // Interpolated crossing position.
        if first < 0 { first = i } else { crossings += 1; last = i }
    }
    guard crossings > 0 else { return 0 }
    return Double(crossings) * rate / Double(last - first)
}
