// Issue 17: the player units' scheduling as Apple's AudioUnitProperties.h describes it, offline
// (AudioUnitRender, no device): the render marks a scheduled sound player's slices itself, so
// a caller polling kScheduledAudioSliceFlag_Complete after AudioUnitRender of a graph's output
// unit sees it; a file region is reported as Apple's header says ("called when it has been
// completely scheduled for reading from disk ... If the region is not read from disk in time to
// play at its scheduled time, mCompletionProc is called a second time with an error code"), and
// AudioUnitReset calls the completion proc of each region still in the schedule.
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Foundation
import Synchronization
import Testing

/// The statuses a region's completion proc was called with, in order.
final class RegionCalls: Sendable {
    let statuses = Locked<[OSStatus]>([])
    var all: [OSStatus] { statuses.withLock { $0 } }
}

private let regionCallsProc: ScheduledAudioFileRegionCompletionProc = { user, _, status in
    Unmanaged<RegionCalls>.fromOpaque(user!).takeUnretainedValue().statuses.withLock { $0.append(status) }
}

/// A region of `file` at `time` on the player's timeline whose proc records into `calls`.
func testRegion(_ file: AudioFileID, at time: Double, startFrame: Int64, frames: UInt32, calls: RegionCalls) -> ScheduledAudioFileRegion {
    var stamp = AudioTimeStamp()
    stamp.mFlags = kAudioTimeStampSampleTimeValid
    stamp.mSampleTime = time
    return ScheduledAudioFileRegion(mTimeStamp: stamp, mCompletionProc: regionCallsProc,
                                    mCompletionProcUserData: Unmanaged.passUnretained(calls).toOpaque(), mAudioFile: file,
                                    mLoopCount: 0, mStartFrame: startFrame, mFramesToPlay: frames)
}

/// Sets `region` on a file player.
func setRegion(_ unit: AudioUnit, _ region: ScheduledAudioFileRegion) -> OSStatus {
    var r = region
    return AudioUnitSetProperty(unit, kAudioUnitProperty_ScheduledFileRegion, kAudioUnitScope_Global, 0, &r,
                                UInt32(MemoryLayout<ScheduledAudioFileRegion>.size))
}

/// Sets a start time stamp of `sampleTime` (-1: the next render).
func setStart(_ unit: AudioUnit, _ sampleTime: Double = -1) -> OSStatus {
    var start = AudioTimeStamp()
    start.mFlags = kAudioTimeStampSampleTimeValid
    start.mSampleTime = sampleTime
    return AudioUnitSetProperty(unit, kAudioUnitProperty_ScheduleStartTimeStamp, kAudioUnitScope_Global, 0, &start,
                                UInt32(MemoryLayout<AudioTimeStamp>.size))
}

/// The left channel of the first `frames` frames of a 16-bit stereo file, as Float32.
func fileLeftChannel(_ file: AudioFileID, frames: Int) -> [Float] {
    var pcm = [Int16](repeating: 0, count: 2 * frames)
    var bytes = UInt32(pcm.count * 2)
    var packets = UInt32(frames)
    _ = pcm.withUnsafeMutableBytes { AudioFileReadPacketData(file, false, &bytes, nil, 0, &packets, $0.baseAddress) }
    return (0..<frames).map { Float(pcm[2 * $0]) / 32768 }
}

@Suite struct SchedulingFidelityTests {
    /// A graph (ScheduledSoundPlayer -> GenericOutput) rendered with AudioUnitRender on its
    /// output unit: when the call returns, the slice it finished has Complete set (and the next
    /// one not), with no wait for another thread (here one busy in a slow completion proc), as
    /// on Apple, whose render sets the flag.
    @Test func renderOfAGraphMarksSlicesCompleteBeforeItReturns() throws {
        let pg = try PlayerUnitGraph(kAudioUnitSubType_ScheduledSoundPlayer)
        let g = pg.graph, p = pg.player, o = pg.output
        defer { DisposeAUGraph(g) }
        #expect(AUGraphInitialize(g) == noErr)
        #expect(setStart(p) == noErr)
        let frames = 512, count = 24
        let slices = (0..<count).map { i in TestSlice((0..<frames).map { Float($0 + 1) / Float(frames) * (i % 2 == 0 ? 0.5 : -0.5) },
                                                      at: Double(i * frames)) }
        // The first slice's completion proc takes a while (user code may): the flags of the
        // slices after it must not wait for it.
        slices[0].slice.pointee.mCompletionProc = { _, _ in usleep(300_000) }
        for s in slices { #expect(s.schedule(on: p) == noErr) }
        var l = [Float](repeating: 0, count: frames), r = [Float](repeating: 0, count: frames)
        let list = AudioBufferList.allocate(maximumBuffers: 2)
        defer { free(list.unsafeMutablePointer) }
        var notYet = 0, early = 0
        for i in 0..<count {
            renderStereoSlice(o, at: i * frames, &l, &r, list: list)
            // Read at once, as a caller polling the flag does.
            if !slices[i].flags.contains(.scheduledAudioSliceFlag_Complete) { notYet += 1 }
            if i + 1 < count && slices[i + 1].flags.contains(.scheduledAudioSliceFlag_Complete) { early += 1 }
            #expect(l == slices[i].samples, "slice \(i) did not play in its render")
        }
        #expect(notYet == 0, "\(notYet) of \(count) slices were not marked Complete when AudioUnitRender returned")
        #expect(early == 0)
        for s in slices {
            #expect(s.flags.contains(.scheduledAudioSliceFlag_BeganToRender) && !s.flags.contains(.scheduledAudioSliceFlag_BeganToRenderLate))
        }
        // The procs run on the tracker thread, soon after.
        let deadline = Date().addingTimeInterval(5)
        while slices.dropFirst().contains(where: { $0.calls.load(ordering: .relaxed) == 0 }) && Date() < deadline { usleep(1000) }
        #expect(slices.dropFirst().allSatisfy { $0.calls.load(ordering: .relaxed) == 1 })
    }

    /// AudioUnitUninitialize clears a slice player's schedule as AudioUnitReset does (Apple's
    /// header: "This also happens when the unit is uninitialized"): a slice not played yet is
    /// Complete, not begun, its proc called, when the call returns.
    @Test func uninitializeCompletesTheScheduledSlices() throws {
        var desc = AudioComponentDescription(componentType: kAudioUnitType_Generator, componentSubType: kAudioUnitSubType_ScheduledSoundPlayer,
                                             componentManufacturer: kAudioUnitManufacturer_Apple, componentFlags: 0, componentFlagsMask: 0)
        let component = try #require(AudioComponentFindNext(nil, &desc))
        var instance: AudioUnit?
        #expect(AudioComponentInstanceNew(component, &instance) == noErr)
        let unit = try #require(instance)
        let slice = TestSlice([Float](repeating: 0.5, count: 1000), at: 100_000)
        defer { AudioComponentInstanceDispose(unit); withExtendedLifetime(slice) {} }
        #expect(AudioUnitInitialize(unit) == noErr)
        #expect(setStart(unit) == noErr)
        #expect(slice.schedule(on: unit) == noErr)
        var l = [Float](repeating: 0, count: 512), r = [Float](repeating: 0, count: 512)
        let list = AudioBufferList.allocate(maximumBuffers: 2)
        defer { free(list.unsafeMutablePointer) }
        renderStereoSlice(unit, at: 0, &l, &r, list: list)
        #expect(!slice.flags.contains(.scheduledAudioSliceFlag_Complete))
        #expect(AudioUnitUninitialize(unit) == noErr)
        #expect(slice.flags.contains(.scheduledAudioSliceFlag_Complete), "AudioUnitUninitialize left the slice scheduled")
        #expect(!slice.flags.contains(.scheduledAudioSliceFlag_BeganToRender))
        #expect(slice.calls.load(ordering: .relaxed) == 1)
    }

    /// A region whose time stamp has passed when it is set (the player ran dry before it) plays
    /// from the next render, its past part skipped, in step with the timeline; its completion
    /// proc is called once read and a second time with an error (it was not read in time to play
    /// at its scheduled time). AudioUnitReset calls the procs of the regions not read yet.
    @Test(.requires(corpusMissing)) func lateRegionsAndResetCallTheCompletionProcsAsApplesHeaderSays() throws {
        let path = try corpusFile("ffmpeg-generated/wav/pcm_s16le_listinfo.wav")
        let unit = try makeOfflineFilePlayer(bufferFrames: 65536)
        defer { AudioComponentInstanceDispose(unit) }
        var fileID: AudioFileID?
        #expect(AudioFileOpenURL(URL(fileURLWithPath: path) as CFURL, .readPermission, 0, &fileID) == noErr)
        let file = try #require(fileID)
        defer { AudioFileClose(file) }
        var ids: [AudioFileID?] = [file]
        #expect(AudioUnitSetProperty(unit, kAudioUnitProperty_ScheduledFileIDs, kAudioUnitScope_Global, 0, &ids,
                                     UInt32(MemoryLayout<AudioFileID>.size)) == noErr)
        let fileLeft = fileLeftChannel(file, frames: 60_000)

        let a = RegionCalls(), b = RegionCalls()
        #expect(setRegion(unit, testRegion(file, at: 0, startFrame: 1000, frames: 5000, calls: a)) == noErr)
        var prime: UInt32 = 0
        #expect(AudioUnitSetProperty(unit, kAudioUnitProperty_ScheduledFilePrime, kAudioUnitScope_Global, 0, &prime, 4) == noErr)
        #expect(setStart(unit) == noErr)
        var l = [Float](repeating: 0, count: 1024), r = [Float](repeating: 0, count: 1024)
        let list = AudioBufferList.allocate(maximumBuffers: 2)
        defer { free(list.unsafeMutablePointer) }
        var out: [Float] = []
        for i in 0..<10 {   // to 10240: the player ran dry at 5000
            renderStereoSlice(unit, at: i * 1024, &l, &r, list: list)
            out += l
        }
        #expect(a.all == [noErr], "the first region was read in time: one call, noErr")
        // Set at timeline 10240 for 8000: frames 8000..<10240 of it are past.
        #expect(setRegion(unit, testRegion(file, at: 8000, startFrame: 20_000, frames: 8000, calls: b)) == noErr)
        usleep(100_000)
        out = []
        for i in 10..<20 {
            renderStereoSlice(unit, at: i * 1024, &l, &r, list: list)
            out += l
        }
        // Timeline 10240 is the region's frame 2240: file frame 22240.
        let played = 16_000 - 10_240
        let differing = (0..<played).filter { out[$0] != fileLeft[22_240 + $0] }.count
        #expect(differing == 0, "the late region is not in step with the timeline (\(differing) frames differ)")
        #expect(out[played...].allSatisfy { $0 == 0 })
        #expect(b.all == [noErr, kAudioUnitErr_RenderTimeout],
                "a region not read in time to play at its time: called when read, then with an error (got \(b.all))")

        // AudioUnitReset: the regions still in the schedule get their completion procs.
        let c = RegionCalls(), d = RegionCalls()
        #expect(setRegion(unit, testRegion(file, at: 400_000, startFrame: 0, frames: 5000, calls: c)) == noErr)
        #expect(setRegion(unit, testRegion(file, at: 500_000, startFrame: 0, frames: 5000, calls: d)) == noErr)
        usleep(50_000)
        #expect(c.all.isEmpty && d.all.isEmpty)
        #expect(AudioUnitReset(unit, kAudioUnitScope_Global, 0) == noErr)
        #expect(c.all == [noErr] && d.all == [noErr], "AudioUnitReset did not call the procs of the regions it dropped (\(c.all), \(d.all))")
    }
}
