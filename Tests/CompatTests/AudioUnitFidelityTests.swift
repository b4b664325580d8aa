// Issue 17: player units and in-place processing behave as Apple's: a scheduled slice is marked
// complete (and its completion proc called) when the unit has played it, not when it was
// copied; a file region's own time stamp places it on the player's timeline; AudioUnitProcess
// and AudioUnitProcessMultiple process handed buffers outside a graph. Written as macOS code
// calls them (only the import differs; the registered node is Swift by design).
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Foundation
import Synchronization
import Testing

/// Counts a slice's completion calls and the flags the slice had when called.
final class SliceCompletions: @unchecked Sendable {
    let calls = Atomic<Int>(0)
    let flagsAtCall = Atomic<UInt32>(0)
}

/// Renders `slices` slices of `frames` frames of bus 0 from a standalone unit; the left channel.
private func renderLeft(_ unit: AudioUnit, slices: Int, frames: Int = 1024, from start: Int = 0) -> [Float] {
    var left: [Float] = []
    var l = [Float](repeating: 0, count: frames), r = [Float](repeating: 0, count: frames)
    let list = AudioBufferList.allocate(maximumBuffers: 2)
    defer { free(list.unsafeMutablePointer) }
    for s in 0..<slices {
        renderStereoSlice(unit, at: start + s * frames, &l, &r, list: list)
        left += l
    }
    return left
}

private func makeUnit(_ type: UInt32, _ subType: UInt32, manufacturer: UInt32 = kAudioUnitManufacturer_Apple) throws -> AudioUnit {
    var desc = AudioComponentDescription(componentType: type, componentSubType: subType, componentManufacturer: manufacturer,
                                         componentFlags: 0, componentFlagsMask: 0)
    let component = try #require(AudioComponentFindNext(nil, &desc))
    var unit: AudioUnit?
    #expect(AudioComponentInstanceNew(component, &unit) == noErr)
    return try #require(unit)
}

/// Scales its input by 0.25: a unit implemented in Swift for the in-place processing test.
final class QuarterNode: OATUnits.RenderNode, @unchecked Sendable {
    init() { super.init(name: "quarter", inputChannels: [2], outputChannels: [2]) }
    override func render(_ context: AURenderContext) {
        let input = context.pullInput(0, frames: context.frames)
        let out = context.output(0)
        for c in 0..<out.channelCount { for f in 0..<context.frames { out[c][f] = input[c][f] * 0.25 } }
    }
}

@Suite struct AudioUnitFidelityTests {
    /// Apple's scheduled sound player sets `kScheduledAudioSliceFlag_Complete` and calls the
    /// slice's completion proc once the unit has rendered the whole slice, and
    /// `kScheduledAudioSliceFlag_BeganToRender` once it has rendered part of it: not when the
    /// slice is scheduled.
    @Test func scheduledSliceCompletesWhenPlayedNotWhenCopied() throws {
        let unit = try makeUnit(kAudioUnitType_Generator, kAudioUnitSubType_ScheduledSoundPlayer)
        defer { AudioComponentInstanceDispose(unit) }
        #expect(AudioUnitInitialize(unit) == noErr)
        let frames = 4096
        let l = UnsafeMutableBufferPointer<Float>.allocate(capacity: frames), r = UnsafeMutableBufferPointer<Float>.allocate(capacity: frames)
        defer { l.deallocate(); r.deallocate() }
        for i in 0..<frames { l[i] = Float(i + 1) / Float(frames); r[i] = -l[i] }
        let list = AudioBufferList.allocate(maximumBuffers: 2)
        defer { free(list.unsafeMutablePointer) }
        list[0] = AudioBuffer(mNumberChannels: 1, mDataByteSize: UInt32(frames * 4), mData: UnsafeMutableRawPointer(l.baseAddress))
        list[1] = AudioBuffer(mNumberChannels: 1, mDataByteSize: UInt32(frames * 4), mData: UnsafeMutableRawPointer(r.baseAddress))
        // The slice lives until the unit is done with it, as Apple requires.
        let slice = UnsafeMutablePointer<ScheduledAudioSlice>.allocate(capacity: 1)
        defer { slice.deallocate() }
        let done = SliceCompletions()
        // A closure that captures nothing converts to the C function pointer type, as on Apple.
        slice.initialize(to: ScheduledAudioSlice(mTimeStamp: AudioTimeStamp(), mCompletionProc: { user, s in
            let d = Unmanaged<SliceCompletions>.fromOpaque(user!).takeUnretainedValue()
            d.flagsAtCall.store(s.pointee.mFlags.rawValue, ordering: .relaxed)
            d.calls.add(1, ordering: .relaxed)
        }, mCompletionProcUserData: Unmanaged.passUnretained(done).toOpaque(), mFlags: [], mReserved: 0, mReserved2: nil,
           mNumberFrames: UInt32(frames), mBufferList: list.unsafeMutablePointer))
        slice.pointee.mTimeStamp.mFlags = kAudioTimeStampSampleTimeValid
        #expect(AudioUnitSetProperty(unit, kAudioUnitProperty_ScheduleAudioSlice, kAudioUnitScope_Global, 0, slice,
                                     UInt32(MemoryLayout<ScheduledAudioSlice>.size)) == noErr)
        // Copied, not played: not complete, not begun, no call.
        usleep(50_000)
        #expect(!slice.pointee.mFlags.contains(.scheduledAudioSliceFlag_Complete), "complete before a frame was rendered")
        #expect(!slice.pointee.mFlags.contains(.scheduledAudioSliceFlag_BeganToRender))
        #expect(done.calls.load(ordering: .relaxed) == 0, "completion proc called before the slice played")
        var start = AudioTimeStamp()
        start.mFlags = kAudioTimeStampSampleTimeValid
        start.mSampleTime = -1
        #expect(AudioUnitSetProperty(unit, kAudioUnitProperty_ScheduleStartTimeStamp, kAudioUnitScope_Global, 0, &start,
                                     UInt32(MemoryLayout<AudioTimeStamp>.size)) == noErr)
        // Half played: begun, not complete.
        var left = renderLeft(unit, slices: 2)
        usleep(50_000)
        #expect(slice.pointee.mFlags.contains(.scheduledAudioSliceFlag_BeganToRender))
        #expect(!slice.pointee.mFlags.contains(.scheduledAudioSliceFlag_Complete), "complete after half of it played")
        #expect(done.calls.load(ordering: .relaxed) == 0)
        // All played: complete when the render returns, the proc called once with the flag set.
        left += renderLeft(unit, slices: 3, from: 2048)
        #expect(slice.pointee.mFlags.contains(.scheduledAudioSliceFlag_Complete))
        #expect(done.calls.load(ordering: .relaxed) == 1)
        #expect(AUScheduledAudioSliceFlags(rawValue: done.flagsAtCall.load(ordering: .relaxed)).contains(.scheduledAudioSliceFlag_Complete))
        #expect(Array(left[0..<frames]) == Array(l))
        #expect(left[frames...].allSatisfy { $0 == 0 })
        usleep(50_000)
        #expect(done.calls.load(ordering: .relaxed) == 1, "completion proc called more than once")
    }

    /// A file region's `mTimeStamp` is where on the player's timeline (frames after the start
    /// time stamp) the region starts: the frames before it are silence, then the file exactly.
    @Test(.requires(corpusMissing)) func fileRegionStartsAtItsTimeStamp() throws {
        let path = try corpusFile("ffmpeg-generated/wav/pcm_s16le_listinfo.wav")
        let unit = try makeUnit(kAudioUnitType_Generator, kAudioUnitSubType_AudioFilePlayer)
        defer { AudioComponentInstanceDispose(unit) }
        #expect(AudioUnitInitialize(unit) == noErr)
        var fileID: AudioFileID?
        #expect(AudioFileOpenURL(URL(fileURLWithPath: path) as CFURL, .readPermission, 0, &fileID) == noErr)
        let file = try #require(fileID)
        defer { AudioFileClose(file) }
        var ids: [AudioFileID?] = [file]
        #expect(AudioUnitSetProperty(unit, kAudioUnitProperty_ScheduledFileIDs, kAudioUnitScope_Global, 0, &ids,
                                     UInt32(MemoryLayout<AudioFileID>.size)) == noErr)
        let offset = 3000, played = 20_000
        var region = ScheduledAudioFileRegion(mTimeStamp: AudioTimeStamp(), mCompletionProc: nil, mCompletionProcUserData: nil,
                                              mAudioFile: file, mLoopCount: 0, mStartFrame: 500, mFramesToPlay: UInt32(played))
        region.mTimeStamp.mFlags = kAudioTimeStampSampleTimeValid
        region.mTimeStamp.mSampleTime = Double(offset)
        #expect(AudioUnitSetProperty(unit, kAudioUnitProperty_ScheduledFileRegion, kAudioUnitScope_Global, 0, &region,
                                     UInt32(MemoryLayout<ScheduledAudioFileRegion>.size)) == noErr)
        var prime: UInt32 = 0
        #expect(AudioUnitSetProperty(unit, kAudioUnitProperty_ScheduledFilePrime, kAudioUnitScope_Global, 0, &prime, 4) == noErr)
        var start = AudioTimeStamp()
        start.mFlags = kAudioTimeStampSampleTimeValid
        start.mSampleTime = -1
        #expect(AudioUnitSetProperty(unit, kAudioUnitProperty_ScheduleStartTimeStamp, kAudioUnitScope_Global, 0, &start,
                                     UInt32(MemoryLayout<AudioTimeStamp>.size)) == noErr)
        let left = renderLeft(unit, slices: 30)
        var wav = [Int16](repeating: 0, count: 2 * (500 + played))
        var bytes = UInt32(wav.count * 2)
        var packets = UInt32(500 + played)
        _ = wav.withUnsafeMutableBytes { AudioFileReadPacketData(file, false, &bytes, nil, 0, &packets, $0.baseAddress) }
        #expect(left[0..<offset].allSatisfy { $0 == 0 }, "sound before the region's time stamp")
        var mismatches = 0
        for i in 0..<played where left[offset + i] != Float(wav[2 * (500 + i)]) / 32768 { mismatches += 1 }
        #expect(mismatches == 0, "\(mismatches) frames differ from the file after the region's time stamp")
        #expect(left[(offset + played)...].allSatisfy { $0 == 0 })
    }

    /// AudioUnitProcess processes the buffers it is handed in place (no render callback, no
    /// graph); AudioUnitProcessMultiple mixes its input lists through a mixer into the output list.
    @Test func audioUnitProcessInPlaceAndMultiple() throws {
        var desc = AudioComponentDescription(componentType: kAudioUnitType_Effect, componentSubType: 0x7172_7472 /* 'qrtr' */,
                                             componentManufacturer: 0x7465_7374 /* 'test' */, componentFlags: 0, componentFlagsMask: 0)
        _ = AudioComponentRegister(&desc, "Test: quarter", 1) { _ in QuarterNode() }
        let unit = try makeUnit(kAudioUnitType_Effect, 0x7172_7472, manufacturer: 0x7465_7374)
        defer { AudioComponentInstanceDispose(unit) }
        let frames = 512
        var l = (0..<frames).map { Float($0) / Float(frames) }, r = (0..<frames).map { -Float($0) / Float(frames) }
        let original = l
        let list = AudioBufferList.allocate(maximumBuffers: 2)
        defer { free(list.unsafeMutablePointer) }
        var flags = AudioUnitRenderActionFlags()
        var time = AudioTimeStamp()
        time.mFlags = kAudioTimeStampSampleTimeValid
        func process() -> OSStatus {
            l.withUnsafeMutableBytes { lb in
                r.withUnsafeMutableBytes { rb -> OSStatus in
                    list[0] = AudioBuffer(mNumberChannels: 1, mDataByteSize: UInt32(lb.count), mData: lb.baseAddress)
                    list[1] = AudioBuffer(mNumberChannels: 1, mDataByteSize: UInt32(rb.count), mData: rb.baseAddress)
                    return AudioUnitProcess(unit, &flags, &time, UInt32(frames), list.unsafeMutablePointer)
                }
            }
        }
        #expect(process() == kAudioUnitErr_Uninitialized)
        #expect(AudioUnitInitialize(unit) == noErr)
        #expect(process() == noErr)
        #expect(l == original.map { $0 * 0.25 }, "left not processed in place")
        #expect(r == original.map { -$0 * 0.25 }, "right not processed in place")
        // Again: the unit keeps processing what it is handed.
        #expect(process() == noErr)
        #expect(l == original.map { $0 * 0.0625 })

        // A mixer: two input lists summed into one output list.
        let mixer = try makeUnit(kAudioUnitType_Mixer, kAudioUnitSubType_MultiChannelMixer)
        defer { AudioComponentInstanceDispose(mixer) }
        #expect(AudioUnitInitialize(mixer) == noErr)
        let a = UnsafeMutableBufferPointer<Float>.allocate(capacity: 2 * frames), b = UnsafeMutableBufferPointer<Float>.allocate(capacity: 2 * frames)
        let o = UnsafeMutableBufferPointer<Float>.allocate(capacity: 2 * frames)
        defer { a.deallocate(); b.deallocate(); o.deallocate() }
        a.initialize(repeating: 0.25); b.initialize(repeating: 0.125); o.initialize(repeating: 9)
        let la = AudioBufferList.allocate(maximumBuffers: 2), lb = AudioBufferList.allocate(maximumBuffers: 2), lo = AudioBufferList.allocate(maximumBuffers: 2)
        defer { free(la.unsafeMutablePointer); free(lb.unsafeMutablePointer); free(lo.unsafeMutablePointer) }
        for (abl, p) in [(la, a), (lb, b), (lo, o)] {
            abl[0] = AudioBuffer(mNumberChannels: 1, mDataByteSize: UInt32(frames * 4), mData: UnsafeMutableRawPointer(p.baseAddress))
            abl[1] = AudioBuffer(mNumberChannels: 1, mDataByteSize: UInt32(frames * 4), mData: UnsafeMutableRawPointer(p.baseAddress! + frames))
        }
        var inputs: [UnsafePointer<AudioBufferList>] = [UnsafePointer(la.unsafeMutablePointer), UnsafePointer(lb.unsafeMutablePointer)]
        var outputs: [UnsafeMutablePointer<AudioBufferList>] = [lo.unsafeMutablePointer]
        let status = AudioUnitProcessMultiple(mixer, &flags, &time, UInt32(frames), 2, &inputs, 1, &outputs)
        #expect(status == noErr)
        let worst = o.map { abs($0 - 0.375) }.max() ?? 1
        #expect(worst < 1e-6, "mixed output off by \(worst)")

        // A generator has nothing to process.
        let player = try makeUnit(kAudioUnitType_Generator, kAudioUnitSubType_ScheduledSoundPlayer)
        defer { AudioComponentInstanceDispose(player) }
        #expect(AudioUnitInitialize(player) == noErr)
        let g = l.withUnsafeMutableBytes { lb in
            r.withUnsafeMutableBytes { rb -> OSStatus in
                list[0] = AudioBuffer(mNumberChannels: 1, mDataByteSize: UInt32(lb.count), mData: lb.baseAddress)
                list[1] = AudioBuffer(mNumberChannels: 1, mDataByteSize: UInt32(rb.count), mData: rb.baseAddress)
                return AudioUnitProcess(player, &flags, &time, UInt32(frames), list.unsafeMutablePointer)
            }
        }
        #expect(g == kAudio_UnimplementedError)
    }

    /// MPEG4ObjectID is Apple's Int-backed enumeration with the MPEG-4 audio object types.
    @Test func mpeg4ObjectIDCases() {
        let all: [MPEG4ObjectID] = [.aac_Main, .AAC_LC, .AAC_SSR, .AAC_LTP, .AAC_SBR, .aac_Scalable, .twinVQ, .CELP, .HVXC]
        let raw: [Int] = all.map(\.rawValue)
        #expect(raw == Array(1...9))
        #expect(MPEG4ObjectID(rawValue: 2) == .AAC_LC)
        #expect(MPEG4ObjectID(rawValue: 0) == nil)
    }
}
