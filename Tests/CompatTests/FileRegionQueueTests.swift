// Issue 17: the file player queues its regions as Apple's: each region set with
// kAudioUnitProperty_ScheduledFileRegion is added to the schedule at its own time stamp (not
// replacing the last), each with its completion proc; a region set after the others were read
// continues the timeline. Offline: AudioUnitRender on a standalone unit, no device.
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Foundation
import Synchronization
import Testing

/// Counts a region's completion calls.
final class RegionDone: Sendable {
    let calls = Atomic<Int>(0)
}

/// Renders `count` frames (1024 per call) of the left channel.
private func renderLeft(_ unit: AudioUnit, _ count: Int, from: Int) -> [Float] {
    var left: [Float] = []
    let frames = 1024
    var l = [Float](repeating: 0, count: frames), r = [Float](repeating: 0, count: frames)
    let list = AudioBufferList.allocate(maximumBuffers: 2)
    defer { free(list.unsafeMutablePointer) }
    while left.count < count {
        renderStereoSlice(unit, at: from + left.count, &l, &r, list: list)
        left += l
    }
    return Array(left[..<count])
}

@Suite struct FileRegionQueueTests {
    /// Two regions set one after the other both play, each at its time stamp (silence between),
    /// each from its own start frame, and each region's completion proc is called; a third set
    /// once the first two were read plays at its time stamp too.
    @Test(.requires(corpusMissing)) func regionsQueueAtTheirTimeStamps() throws {
        let path = try corpusFile("ffmpeg-generated/wav/pcm_s16le_listinfo.wav")
        // Rendering offline, as Apple's hosts say with kAudioUnitProperty_OfflineRender: a render
        // waits for the player's reading thread instead of rendering silence where it is late
        // (without it, this test failed under CI's parallel load: the second region came out as
        // silence).
        let unit = try makeOfflineFilePlayer(bufferFrames: 131_072)
        defer { AudioComponentInstanceDispose(unit) }
        var readBack: UInt32 = 0
        var readSize: UInt32 = 4
        #expect(AudioUnitGetProperty(unit, kAudioUnitProperty_OfflineRender, kAudioUnitScope_Global, 0, &readBack, &readSize) == noErr && readBack == 1)
        var fileID: AudioFileID?
        #expect(AudioFileOpenURL(URL(fileURLWithPath: path) as CFURL, .readPermission, 0, &fileID) == noErr)
        let file = try #require(fileID)
        defer { AudioFileClose(file) }
        var ids: [AudioFileID?] = [file]
        #expect(AudioUnitSetProperty(unit, kAudioUnitProperty_ScheduledFileIDs, kAudioUnitScope_Global, 0, &ids,
                                     UInt32(MemoryLayout<AudioFileID>.size)) == noErr)
        var wav = [Int16](repeating: 0, count: 2 * 60_000)
        var bytes = UInt32(wav.count * 2)
        var packets: UInt32 = 60_000
        _ = wav.withUnsafeMutableBytes { AudioFileReadPacketData(file, false, &bytes, nil, 0, &packets, $0.baseAddress) }
        let fileLeft = (0..<60_000).map { Float(wav[2 * $0]) / 32768 }

        let done = [RegionDone(), RegionDone(), RegionDone()]
        func schedule(_ i: Int, at time: Double, startFrame: Int64, frames: UInt32) -> OSStatus {
            var stamp = AudioTimeStamp()
            stamp.mFlags = kAudioTimeStampSampleTimeValid
            stamp.mSampleTime = time
            var region = ScheduledAudioFileRegion(mTimeStamp: stamp, mCompletionProc: { user, _, status in
                if status == noErr { Unmanaged<RegionDone>.fromOpaque(user!).takeUnretainedValue().calls.add(1, ordering: .relaxed) }
            }, mCompletionProcUserData: Unmanaged.passUnretained(done[i]).toOpaque(), mAudioFile: file, mLoopCount: 0,
                                                  mStartFrame: startFrame, mFramesToPlay: frames)
            return AudioUnitSetProperty(unit, kAudioUnitProperty_ScheduledFileRegion, kAudioUnitScope_Global, 0, &region,
                                        UInt32(MemoryLayout<ScheduledAudioFileRegion>.size))
        }
        #expect(schedule(0, at: 0, startFrame: 500, frames: 10_000) == noErr)
        #expect(schedule(1, at: 20_000, startFrame: 40_000, frames: 5000) == noErr)
        var prime: UInt32 = 0
        #expect(AudioUnitSetProperty(unit, kAudioUnitProperty_ScheduledFilePrime, kAudioUnitScope_Global, 0, &prime, 4) == noErr)
        var start = AudioTimeStamp()
        start.mFlags = kAudioTimeStampSampleTimeValid
        start.mSampleTime = -1
        #expect(AudioUnitSetProperty(unit, kAudioUnitProperty_ScheduleStartTimeStamp, kAudioUnitScope_Global, 0, &start,
                                     UInt32(MemoryLayout<AudioTimeStamp>.size)) == noErr)
        var left = renderLeft(unit, 30_720, from: 0)
        func differing(_ range: Range<Int>, from fileFrame: Int) -> Int {
            range.enumerated().filter { left[$0.element] != fileLeft[fileFrame + $0.offset] }.count
        }
        #expect(differing(0..<10_000, from: 500) == 0, "the first region does not play at 0")
        #expect(left[10_000..<20_000].allSatisfy { $0 == 0 }, "no silence between the regions")
        #expect(differing(20_000..<25_000, from: 40_000) == 0, "the second region does not play at its time stamp")
        #expect(left[25_000...].allSatisfy { $0 == 0 })
        #expect(done[0].calls.load(ordering: .relaxed) == 1 && done[1].calls.load(ordering: .relaxed) == 1)

        // A third region, set after the others were read: at its time stamp on the same timeline.
        #expect(schedule(2, at: 40_000, startFrame: 1000, frames: 4000) == noErr)
        usleep(100_000)   // the new feeder reads ahead
        left = renderLeft(unit, 20_480, from: 30_720)
        let at = 40_000 - 30_720
        #expect(left[0..<at].allSatisfy { $0 == 0 })
        #expect(differing(at..<(at + 4000), from: 1000) == 0, "the region set later does not play at its time stamp")
        #expect(left[(at + 4000)...].allSatisfy { $0 == 0 })
        #expect(done[2].calls.load(ordering: .relaxed) == 1)

        // AudioUnitReset clears the schedule (what was read ahead too): after it, a new region,
        // prime and start time stamp play from a new timeline, nothing of the old schedule.
        #expect(schedule(0, at: 0, startFrame: 500, frames: 20_000) == noErr)
        #expect(schedule(1, at: 30_000, startFrame: 40_000, frames: 5000) == noErr)
        usleep(100_000)
        _ = renderLeft(unit, 4096, from: 51_200)
        #expect(AudioUnitReset(unit, kAudioUnitScope_Global, 0) == noErr)
        #expect(schedule(2, at: 1000, startFrame: 30_000, frames: 3000) == noErr)
        #expect(AudioUnitSetProperty(unit, kAudioUnitProperty_ScheduledFilePrime, kAudioUnitScope_Global, 0, &prime, 4) == noErr)
        #expect(AudioUnitSetProperty(unit, kAudioUnitProperty_ScheduleStartTimeStamp, kAudioUnitScope_Global, 0, &start,
                                     UInt32(MemoryLayout<AudioTimeStamp>.size)) == noErr)
        left = renderLeft(unit, 40_960, from: 55_296)
        #expect(left[0..<1000].allSatisfy { $0 == 0 }, "audio of the old schedule after AudioUnitReset")
        #expect(differing(1000..<4000, from: 30_000) == 0, "the region set after the reset does not start the new timeline")
        #expect(left[4000...].allSatisfy { $0 == 0 }, "the old schedule's regions still play after AudioUnitReset")
    }
}
