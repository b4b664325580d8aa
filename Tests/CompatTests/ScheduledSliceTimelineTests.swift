// Issue 17: the scheduled sound player plays each slice at its own time stamp on the unit's
// timeline, as Apple's: silence in the gaps, late slices partly (the late part not played,
// BeganToRenderLate), Loop until Interrupt; its completion tracker sleeps until the render
// thread reports something. Offline: AudioUnitRender on a standalone unit, no device.
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Foundation
import Synchronization
import Testing

/// A slice and its buffers (two deinterleaved channels, the same samples), alive until deinit,
/// as Apple requires of a slice until the unit is done with it.
final class TestSlice: @unchecked Sendable {
    let slice: UnsafeMutablePointer<ScheduledAudioSlice>
    let samples: [Float]
    private let left: UnsafeMutableBufferPointer<Float>
    private let right: UnsafeMutableBufferPointer<Float>
    private let list: UnsafeMutableAudioBufferListPointer
    let calls = Atomic<Int>(0)

    init(_ samples: [Float], at sampleTime: Double?, flags: AUScheduledAudioSliceFlags = []) {
        self.samples = samples
        left = .allocate(capacity: max(1, samples.count))
        right = .allocate(capacity: max(1, samples.count))
        _ = left.initialize(from: samples)
        _ = right.initialize(from: samples.map { -$0 })
        list = AudioBufferList.allocate(maximumBuffers: 2)
        list[0] = AudioBuffer(mNumberChannels: 1, mDataByteSize: UInt32(samples.count * 4), mData: UnsafeMutableRawPointer(left.baseAddress))
        list[1] = AudioBuffer(mNumberChannels: 1, mDataByteSize: UInt32(samples.count * 4), mData: UnsafeMutableRawPointer(right.baseAddress))
        slice = .allocate(capacity: 1)
        var stamp = AudioTimeStamp()
        if let sampleTime {
            stamp.mFlags = kAudioTimeStampSampleTimeValid
            stamp.mSampleTime = sampleTime
        }
        slice.initialize(to: ScheduledAudioSlice(mTimeStamp: stamp, mCompletionProc: { user, _ in
            Unmanaged<TestSlice>.fromOpaque(user!).takeUnretainedValue().calls.add(1, ordering: .relaxed)
        }, mCompletionProcUserData: Unmanaged.passUnretained(self).toOpaque(), mFlags: flags, mReserved: 0, mReserved2: nil,
                                                 mNumberFrames: UInt32(samples.count), mBufferList: list.unsafeMutablePointer))
    }

    deinit {
        slice.deallocate()
        left.deallocate()
        right.deallocate()
        free(list.unsafeMutablePointer)
    }

    var flags: AUScheduledAudioSliceFlags { slice.pointee.mFlags }

    func schedule(on unit: AudioUnit) -> OSStatus {
        AudioUnitSetProperty(unit, kAudioUnitProperty_ScheduleAudioSlice, kAudioUnitScope_Global, 0, slice,
                             UInt32(MemoryLayout<ScheduledAudioSlice>.size))
    }
}

/// A started scheduled sound player (standalone, initialised, start time stamp -1: the next render).
private func startedPlayer(start: Bool = true) throws -> AudioUnit {
    var desc = AudioComponentDescription(componentType: kAudioUnitType_Generator, componentSubType: kAudioUnitSubType_ScheduledSoundPlayer,
                                         componentManufacturer: kAudioUnitManufacturer_Apple, componentFlags: 0, componentFlagsMask: 0)
    let component = try #require(AudioComponentFindNext(nil, &desc))
    var unit: AudioUnit?
    #expect(AudioComponentInstanceNew(component, &unit) == noErr)
    let u = try #require(unit)
    #expect(AudioUnitInitialize(u) == noErr)
    if start { startNow(u) }
    return u
}

private func startNow(_ unit: AudioUnit) {
    var start = AudioTimeStamp()
    start.mFlags = kAudioTimeStampSampleTimeValid
    start.mSampleTime = -1
    #expect(AudioUnitSetProperty(unit, kAudioUnitProperty_ScheduleStartTimeStamp, kAudioUnitScope_Global, 0, &start,
                                 UInt32(MemoryLayout<AudioTimeStamp>.size)) == noErr)
}

/// Renders `count` frames (in 512-frame calls) from sample time `from`; the left and right channels.
private func render(_ unit: AudioUnit, _ count: Int, from: Int) -> (left: [Float], right: [Float]) {
    var left: [Float] = [], right: [Float] = []
    let frames = 512
    var l = [Float](repeating: 0, count: frames), r = [Float](repeating: 0, count: frames)
    let list = AudioBufferList.allocate(maximumBuffers: 2)
    defer { free(list.unsafeMutablePointer) }
    var done = 0
    while done < count {
        renderStereoSlice(unit, at: from + done, &l, &r, list: list)
        left += l
        right += r
        done += frames
    }
    return (Array(left[..<count]), Array(right[..<count]))
}

/// The frames of `out` in `range` that differ from `expected` (a slice's samples from `offset`).
private func mismatches(_ out: [Float], _ range: Range<Int>, _ expected: [Float], from offset: Int = 0) -> Int {
    var n = 0
    for (k, i) in range.enumerated() where out[i] != expected[offset + k] { n += 1 }
    return n
}

private func ramp(_ n: Int, _ scale: Float = 1) -> [Float] { (0..<n).map { scale * Float($0 + 1) / Float(n) } }

@Suite struct ScheduledSliceTimelineTests {
    /// Each slice starts at its `mTimeStamp.mSampleTime` on the player's timeline (sample 0 =
    /// the start time stamp), silence before and between: not one after another.
    @Test func slicesPlayAtTheirTimeStampsWithSilenceBetween() throws {
        let unit = try startedPlayer()
        defer { AudioComponentInstanceDispose(unit) }
        let a = TestSlice(ramp(1000), at: 2000), b = TestSlice(ramp(700, 0.5), at: 5000)
        #expect(a.schedule(on: unit) == noErr)
        #expect(b.schedule(on: unit) == noErr)
        let out = render(unit, 8192, from: 0)
        #expect(out.left[0..<2000].allSatisfy { $0 == 0 }, "sound before the first slice's time stamp")
        #expect(mismatches(out.left, 2000..<3000, a.samples) == 0, "the first slice is not at sample 2000")
        #expect(mismatches(out.right, 2000..<3000, a.samples.map { -$0 }) == 0)
        #expect(out.left[3000..<5000].allSatisfy { $0 == 0 }, "no silence between the slices")
        #expect(mismatches(out.left, 5000..<5700, b.samples) == 0, "the second slice is not at sample 5000")
        #expect(out.left[5700...].allSatisfy { $0 == 0 })
        for s in [a, b] {
            #expect(s.flags.contains(.scheduledAudioSliceFlag_Complete) && s.flags.contains(.scheduledAudioSliceFlag_BeganToRender))
            #expect(!s.flags.contains(.scheduledAudioSliceFlag_BeganToRenderLate))
            #expect(s.calls.load(ordering: .relaxed) == 1)
        }
        var now = AudioTimeStamp()
        var size = UInt32(MemoryLayout<AudioTimeStamp>.size)
        #expect(AudioUnitGetProperty(unit, kAudioUnitProperty_CurrentPlayTime, kAudioUnitScope_Global, 0, &now, &size) == noErr)
        #expect(now.mSampleTime == 8192)
    }

    /// The timeline starts at the start time stamp's sample time; before it nothing plays and
    /// CurrentPlayTime is -1.
    @Test func timelineStartsAtTheStartTimeStamp() throws {
        let unit = try startedPlayer(start: false)
        defer { AudioComponentInstanceDispose(unit) }
        let a = TestSlice(ramp(500), at: 100)
        #expect(a.schedule(on: unit) == noErr)
        var now = AudioTimeStamp()
        var size = UInt32(MemoryLayout<AudioTimeStamp>.size)
        _ = render(unit, 1024, from: 0)
        #expect(AudioUnitGetProperty(unit, kAudioUnitProperty_CurrentPlayTime, kAudioUnitScope_Global, 0, &now, &size) == noErr)
        #expect(now.mSampleTime == -1)
        var start = AudioTimeStamp()
        start.mFlags = kAudioTimeStampSampleTimeValid
        start.mSampleTime = 1800   // render sample time: timeline sample 0
        #expect(AudioUnitSetProperty(unit, kAudioUnitProperty_ScheduleStartTimeStamp, kAudioUnitScope_Global, 0, &start,
                                     UInt32(MemoryLayout<AudioTimeStamp>.size)) == noErr)
        let out = render(unit, 2048, from: 1024)
        // Render sample 1800 + 100 = output index 876.
        #expect(out.left[0..<876].allSatisfy { $0 == 0 })
        #expect(mismatches(out.left, 876..<1376, a.samples) == 0, "the slice is not at start + 100")
        #expect(out.left[1376...].allSatisfy { $0 == 0 })
        #expect(AudioUnitGetProperty(unit, kAudioUnitProperty_CurrentPlayTime, kAudioUnitScope_Global, 0, &now, &size) == noErr)
        #expect(now.mSampleTime == Double(1024 + 2048 - 1800))
    }

    /// A slice whose time has passed plays from the frame due now (the late frames are not
    /// played) and is marked BeganToRenderLate; one wholly in the past completes unplayed
    /// (Complete and Late, not BeganToRender) and its proc is called.
    @Test func lateSlicesPlayPartlyAndAreMarkedLate() throws {
        let unit = try startedPlayer()
        defer { AudioComponentInstanceDispose(unit) }
        _ = render(unit, 4096, from: 0)
        let past = TestSlice(ramp(100), at: 0)
        let late = TestSlice(ramp(2048), at: 3096)
        #expect(past.schedule(on: unit) == noErr)
        #expect(late.schedule(on: unit) == noErr)
        let out = render(unit, 2048, from: 4096)
        #expect(mismatches(out.left, 0..<1048, late.samples, from: 1000) == 0, "the late slice does not resume where the timeline is")
        #expect(out.left[1048...].allSatisfy { $0 == 0 })
        #expect(late.flags.contains(.scheduledAudioSliceFlag_BeganToRenderLate))
        #expect(late.flags.contains(.scheduledAudioSliceFlag_BeganToRender) && late.flags.contains(.scheduledAudioSliceFlag_Complete))
        #expect(past.flags.contains(.scheduledAudioSliceFlag_Complete) && past.flags.contains(.scheduledAudioSliceFlag_BeganToRenderLate))
        #expect(!past.flags.contains(.scheduledAudioSliceFlag_BeganToRender), "nothing of the past slice was played")
        #expect(past.calls.load(ordering: .relaxed) == 1 && late.calls.load(ordering: .relaxed) == 1)
    }

    /// Slices play in the order scheduled: a slice whose time comes while an earlier one still
    /// plays waits for it, and is then late by the overlap.
    @Test func overlappingSliceWaitsForThePlayingOne() throws {
        let unit = try startedPlayer()
        defer { AudioComponentInstanceDispose(unit) }
        let a = TestSlice(ramp(1000), at: 0), b = TestSlice(ramp(1000, 0.5), at: 600)
        #expect(a.schedule(on: unit) == noErr)
        #expect(b.schedule(on: unit) == noErr)
        let out = render(unit, 2048, from: 0)
        #expect(mismatches(out.left, 0..<1000, a.samples) == 0, "the playing slice was cut")
        #expect(mismatches(out.left, 1000..<1600, b.samples, from: 400) == 0)
        #expect(out.left[1600...].allSatisfy { $0 == 0 })
        #expect(b.flags.contains(.scheduledAudioSliceFlag_BeganToRenderLate))
        #expect(!a.flags.contains(.scheduledAudioSliceFlag_BeganToRenderLate))
    }

    /// A slice without a valid sample time follows the one before it.
    @Test func sliceWithoutSampleTimeFollowsThePrevious() throws {
        let unit = try startedPlayer()
        defer { AudioComponentInstanceDispose(unit) }
        let a = TestSlice(ramp(700), at: 300), b = TestSlice(ramp(500, 0.5), at: nil)
        #expect(a.schedule(on: unit) == noErr)
        #expect(b.schedule(on: unit) == noErr)
        let out = render(unit, 2048, from: 0)
        #expect(out.left[0..<300].allSatisfy { $0 == 0 })
        #expect(mismatches(out.left, 300..<1000, a.samples) == 0)
        #expect(mismatches(out.left, 1000..<1500, b.samples) == 0)
        #expect(out.left[1500...].allSatisfy { $0 == 0 })
        #expect(!b.flags.contains(.scheduledAudioSliceFlag_BeganToRenderLate))
    }

    /// Loop repeats a slice until a slice with Interrupt takes over at its own time stamp;
    /// InterruptAtLoop waits for the end of the looping slice's pass.
    @Test func loopUntilInterrupted() throws {
        let unit = try startedPlayer()
        defer { AudioComponentInstanceDispose(unit) }
        let loop = TestSlice(ramp(300), at: 0, flags: .scheduledAudioSliceFlag_Loop)
        #expect(loop.schedule(on: unit) == noErr)
        var out = render(unit, 1024, from: 0)
        for i in 0..<1024 where out.left[i] != loop.samples[i % 300] { Issue.record("loop differs at \(i)"); break }
        #expect(!loop.flags.contains(.scheduledAudioSliceFlag_Complete))
        let cut = TestSlice(ramp(100, 0.25), at: 2000, flags: .scheduledAudioSliceFlag_Interrupt)
        #expect(cut.schedule(on: unit) == noErr)
        out = render(unit, 2048, from: 1024)
        for i in 0..<(2000 - 1024) where out.left[i] != loop.samples[(1024 + i) % 300] { Issue.record("loop differs at \(1024 + i)"); break }
        #expect(mismatches(out.left, 976..<1076, cut.samples) == 0, "the interrupting slice is not at its time stamp")
        #expect(out.left[1076...].allSatisfy { $0 == 0 })
        #expect(loop.flags.contains(.scheduledAudioSliceFlag_Complete) && loop.calls.load(ordering: .relaxed) == 1)
        #expect(cut.flags.contains(.scheduledAudioSliceFlag_Complete) && cut.calls.load(ordering: .relaxed) == 1)

        // InterruptAtLoop: the looping slice finishes its pass first.
        let loop2 = TestSlice(ramp(400), at: 3200, flags: .scheduledAudioSliceFlag_Loop)
        let atLoop = TestSlice(ramp(100, 0.25), at: nil, flags: .scheduledAudioSliceFlag_InterruptAtLoop)
        #expect(loop2.schedule(on: unit) == noErr)
        out = render(unit, 512, from: 3072)   // timeline 3072 ..< 3584: the loop starts at 3200
        #expect(atLoop.schedule(on: unit) == noErr)
        out = render(unit, 1024, from: 3584)  // the pass 3200 ..< 3600 ends at 3600 = index 16
        #expect(mismatches(out.left, 0..<16, loop2.samples, from: 384) == 0)
        #expect(mismatches(out.left, 16..<116, atLoop.samples) == 0, "InterruptAtLoop did not take over at the loop point")
        #expect(out.left[116...].allSatisfy { $0 == 0 })
        #expect(loop2.calls.load(ordering: .relaxed) == 1 && atLoop.calls.load(ordering: .relaxed) == 1)
    }

    /// The completion tracker sleeps while nothing is rendered: with a slice pending and no
    /// render for 300 ms its thread does not wake (the old tracker polled every 2 ms: ~150
    /// wake-ups), and a render that completes the slice still calls its proc.
    @Test func completionTrackerSleepsUntilSignalled() throws {
        let before = Set(trackerThreads())
        let unit = try startedPlayer()
        defer { AudioComponentInstanceDispose(unit) }
        let a = TestSlice(ramp(1000), at: 0)
        #expect(a.schedule(on: unit) == noErr)
        var mine = Set<String>()
        for _ in 0..<100 where mine.isEmpty {   // the thread names itself when it starts
            mine = Set(trackerThreads()).subtracting(before)
            if mine.isEmpty { usleep(10_000) }
        }
        try #require(!mine.isEmpty, "no slice tracker thread found")
        let threads = Array(mine)
        let switches0 = threads.map(voluntarySwitches)
        usleep(300_000)
        let switches1 = threads.map(voluntarySwitches)
        // A tracker of another test started meanwhile may be among the new threads and wake for
        // its renders: the quietest new tracker is this unit's (a polling tracker wakes ~150 times).
        let woke = zip(switches1, switches0).map { $0 - $1 }.min() ?? 0
        #expect(woke < 10, "the tracker woke \(woke) times in 300 ms with nothing rendered")
        _ = render(unit, 1024, from: 0)
        #expect(a.calls.load(ordering: .relaxed) == 1)
    }
}

/// Thread ids of this process's slice tracker threads.
private func trackerThreads() -> [String] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.filter { tid in
        let comm = (try? String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8)) ?? ""
        return comm.hasPrefix("oat-slice-track")
    }
}

/// A thread's voluntary context switches (each sleep and wake-up counts one).
private func voluntarySwitches(_ tid: String) -> Int {
    let status = (try? String(contentsOfFile: "/proc/self/task/\(tid)/status", encoding: .utf8)) ?? ""
    for line in status.split(separator: "\n") where line.hasPrefix("voluntary_ctxt_switches:") {
        return Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) ?? 0
    }
    return 0
}
