// Issue 17: the player units' schedules while their graph plays to a device (a private
// PulseAudio daemon's null sink), as on Apple: AudioUnitReset on a running scheduled sound player
// clears its schedule (a seek: the slices are complete when it returns, the new ones play from a
// new start time stamp), and a file region set after the player ran dry starts at its time stamp,
// sample-exact, or, when that has passed, at the next render in step with the timeline.
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import OATTestSupport
import Foundation
import Synchronization
import Testing

/// The graph's output (left channel), captured by a render notification into preallocated memory.
private final class OutputCapture: @unchecked Sendable {
    let capacity: Int
    let left: UnsafeMutablePointer<Float>
    let count = Atomic<Int>(0)
    init(seconds: Double, rate: Double) {
        capacity = Int(seconds * rate)
        left = .allocate(capacity: capacity)
        left.initialize(repeating: 0, count: capacity)
    }
    deinit { left.deallocate() }
    var frames: [Float] { Array(UnsafeBufferPointer(start: left, count: count.load(ordering: .acquiring))) }
}

private func captureNotify(_ refCon: UnsafeMutableRawPointer, _ flags: UnsafeMutablePointer<AudioUnitRenderActionFlags>,
                           _ time: UnsafePointer<AudioTimeStamp>, _ bus: UInt32, _ frames: UInt32,
                           _ ioData: UnsafeMutablePointer<AudioBufferList>?) -> OSStatus {
    guard flags.pointee.contains(.unitRenderAction_PostRender), let ioData,
          let p = UnsafeMutableAudioBufferListPointer(ioData)[0].mData?.assumingMemoryBound(to: Float.self) else { return noErr }
    let capture = Unmanaged<OutputCapture>.fromOpaque(refCon).takeUnretainedValue()
    let at = capture.count.load(ordering: .relaxed)
    let n = min(Int(frames), capture.capacity - at)
    if n > 0 { (capture.left + at).update(from: p, count: n) }
    capture.count.store(at + max(0, n), ordering: .releasing)
    return noErr
}

private func playTime(_ unit: AudioUnit) -> Double {
    var now = AudioTimeStamp()
    var size = UInt32(MemoryLayout<AudioTimeStamp>.size)
    _ = AudioUnitGetProperty(unit, kAudioUnitProperty_CurrentPlayTime, kAudioUnitScope_Global, 0, &now, &size)
    return now.mSampleTime
}

private func waitUntil(_ seconds: Double, _ condition: () -> Bool) -> Bool {
    let end = Date().addingTimeInterval(seconds)
    while Date() < end {
        if condition() { return true }
        usleep(2000)
    }
    return condition()
}

/// Where `window` first occurs exactly in `x` (nil: nowhere).
private func find(_ window: ArraySlice<Float>, in x: [Float]) -> Int? {
    guard let first = window.first, window.count <= x.count else { return nil }
    var i = 0
    while i + window.count <= x.count {
        if x[i] == first && x[i..<(i + window.count)].elementsEqual(window) { return i }
        i += 1
    }
    return nil
}

/// A graph: a player unit of `subType` -> DefaultOutput (the daemon's sink), its output captured.
private final class PlayerGraph {
    let graph: AUGraph
    let player: AudioUnit
    let capture: OutputCapture

    init(subType: UInt32, rate: Double) throws {
        let units = try PlayerUnitGraph(subType, output: kAudioUnitSubType_DefaultOutput)
        graph = units.graph
        player = units.player
        capture = OutputCapture(seconds: 30, rate: rate)
        #expect(AUGraphAddRenderNotify(graph, captureNotify, Unmanaged.passUnretained(capture).toOpaque()) == noErr)
        #expect(AUGraphInitialize(graph) == noErr)
    }

    func dispose() {
        AUGraphStop(graph)
        DisposeAUGraph(graph)
    }
}

@Suite("PlaybackSchedulingTests", .serialized, .requires(PulseTestDaemon.unavailableReason))
struct PlaybackSchedulingTests {
    /// AudioUnitReset on a scheduled sound player whose graph plays: noErr; when it returns every
    /// scheduled slice is Complete (BeganToRender only on the one that played) with its proc
    /// called, the timeline waits (CurrentPlayTime -1); slices scheduled then play from a new
    /// start time stamp.
    @Test func resetClearsASlicePlayersScheduleWhileItsGraphPlays() throws {
        let daemon = try PulseTestDaemon(sampleRate: 44100, channels: 2)
        defer { daemon.stop() }
        setenv("OAT_OUTPUT", "pulse:\(daemon.sinkName)", 1)
        setenv("PULSE_SERVER", daemon.server, 1)
        defer { unsetenv("OAT_OUTPUT"); unsetenv("PULSE_SERVER") }
        let looping = TestSlice((0..<4410).map { Float(sin(Double($0) * 0.05) * 0.3) }, at: 0, flags: .scheduledAudioSliceFlag_Loop)
        let later = TestSlice([Float](repeating: 0.25, count: 4410), at: 44100 * 60)
        let next = TestSlice([Float](repeating: 0.5, count: 4410), at: 2205)
        let g = try PlayerGraph(subType: kAudioUnitSubType_ScheduledSoundPlayer, rate: 44100)
        // The slices (their procs' user data) outlive the graph, as Apple requires.
        defer { g.dispose(); withExtendedLifetime([looping, later, next]) {} }
        #expect(looping.schedule(on: g.player) == noErr)
        #expect(later.schedule(on: g.player) == noErr)
        #expect(setStart(g.player) == noErr)
        #expect(AUGraphStart(g.graph) == noErr)
        #expect(waitUntil(10) { playTime(g.player) > 8820 }, "the player did not start")
        #expect(looping.flags.contains(.scheduledAudioSliceFlag_BeganToRender))

        #expect(AudioUnitReset(g.player, kAudioUnitScope_Global, 0) == noErr, "AudioUnitReset refused while the graph plays")
        // At once: the slices are the caller's again.
        #expect(looping.flags.contains(.scheduledAudioSliceFlag_Complete))
        #expect(later.flags.contains(.scheduledAudioSliceFlag_Complete))
        #expect(!later.flags.contains(.scheduledAudioSliceFlag_BeganToRender), "a slice that never played is marked as begun")
        #expect(looping.calls.load(ordering: .relaxed) == 1 && later.calls.load(ordering: .relaxed) == 1,
                "the completion procs of the dropped slices were not called by the time AudioUnitReset returned")
        #expect(playTime(g.player) == -1, "the timeline did not wait for a new start time stamp")
        let heard = g.capture.count.load(ordering: .acquiring)
        usleep(200_000)
        let after = Array(g.capture.frames[heard...])
        #expect(after.allSatisfy { $0 == 0 }, "the looping slice still plays after AudioUnitReset")

        // The seek: new slices, a new start.
        #expect(next.schedule(on: g.player) == noErr)
        #expect(setStart(g.player) == noErr)
        #expect(waitUntil(10) { next.calls.load(ordering: .relaxed) == 1 }, "the slice scheduled after the reset did not play")
        #expect(next.flags.contains(.scheduledAudioSliceFlag_Complete))
        #expect(next.flags.contains(.scheduledAudioSliceFlag_BeganToRender) && !next.flags.contains(.scheduledAudioSliceFlag_BeganToRenderLate))
        let out = g.capture.frames
        let first = try #require(out.firstIndex(of: 0.5), "the new slice is not in the output")
        #expect(out[first..<(first + 4410)].allSatisfy { $0 == 0.5 })
        #expect(first > heard)
    }

    /// A file player that played its region and ran dry: a region set then, at a time stamp
    /// 0.15 s ahead, starts exactly there on the timeline (sample-exact against the first
    /// region's start; ten times, set at different moments between renders), and one set with a
    /// time stamp already past plays from the next render in step with the timeline (its past
    /// part skipped), its completion proc called a second time with an error.
    @Test(.requires(TestResource.corpusMissing)) func regionSetAfterThePlayerRanDryStartsAtItsTimeStamp() throws {
        let path = try requiredCorpusFile("ffmpeg-generated/wav/pcm_s16le_listinfo.wav")
        let daemon = try PulseTestDaemon(sampleRate: 44100, channels: 2)
        defer { daemon.stop() }
        setenv("OAT_OUTPUT", "pulse:\(daemon.sinkName)", 1)
        setenv("PULSE_SERVER", daemon.server, 1)
        defer { unsetenv("OAT_OUTPUT"); unsetenv("PULSE_SERVER") }
        let g = try PlayerGraph(subType: kAudioUnitSubType_AudioFilePlayer, rate: 44100)
        defer { g.dispose() }
        var fileID: AudioFileID?
        #expect(AudioFileOpenURL(URL(fileURLWithPath: path) as CFURL, .readPermission, 0, &fileID) == noErr)
        let file = try #require(fileID)
        defer { AudioFileClose(file) }
        var ids: [AudioFileID?] = [file]
        #expect(AudioUnitSetProperty(g.player, kAudioUnitProperty_ScheduledFileIDs, kAudioUnitScope_Global, 0, &ids,
                                     UInt32(MemoryLayout<AudioFileID>.size)) == noErr)
        let fileLeft = fileLeftChannel(file, frames: 132_000)

        let a = RegionCalls(), c = RegionCalls()
        #expect(setRegion(g.player, testRegion(file, at: 0, startFrame: 10_000, frames: 4410, calls: a)) == noErr)
        var prime: UInt32 = 0
        #expect(AudioUnitSetProperty(g.player, kAudioUnitProperty_ScheduledFilePrime, kAudioUnitScope_Global, 0, &prime, 4) == noErr)
        #expect(setStart(g.player) == noErr)
        #expect(AUGraphStart(g.graph) == noErr)
        #expect(waitUntil(10) { playTime(g.player) > 4410 + 4410 }, "the first region did not play")

        // Ten times: the player ran dry; a region 0.15 s ahead, set at a different moment
        // between two renders each time (a render between reading the time and the region
        // reaching the player is what made it late).
        var due: [(at: Int, startFrame: Int)] = []
        for i in 0..<10 {
            let before = playTime(g.player)
            _ = waitUntil(1) { playTime(g.player) != before }
            usleep(UInt32(i) * 2500)
            let at = Int((playTime(g.player) + 6615).rounded())
            let startFrame = 25_000 + i * 6000
            let calls = RegionCalls()
            #expect(setRegion(g.player, testRegion(file, at: Double(at), startFrame: Int64(startFrame), frames: 2205, calls: calls)) == noErr)
            due.append((at, startFrame))
            #expect(waitUntil(10) { playTime(g.player) > Double(at + 2205 + 4410) }, "region \(i)'s time did not come")
            #expect(calls.all == [noErr])
        }

        // A region whose time passed 0.1 s ago.
        let cAt = (playTime(g.player) - 4410).rounded()
        #expect(setRegion(g.player, testRegion(file, at: cAt, startFrame: 90_000, frames: 22_050, calls: c)) == noErr)
        #expect(waitUntil(10) { playTime(g.player) > cAt + 22_050 + 4410 }, "the late region's time did not pass")
        #expect(AUGraphStop(g.graph) == noErr)

        let out = g.capture.frames
        let origin = try #require(find(fileLeft[10_000..<10_400], in: out), "the first region is not in the output")
        var offsets: [Int] = []
        for d in due {
            let index = try #require(find(fileLeft[d.startFrame..<(d.startFrame + 400)], in: out), "a region (or its start) is not in the output")
            offsets.append(index - origin - d.at)
            #expect(out[(index - 200)..<index].allSatisfy { $0 == 0 })
        }
        print("file player after running dry: regions start \(offsets) frames after their time stamps")
        #expect(offsets.allSatisfy { $0 == 0 }, "regions set after the player ran dry start late: \(offsets) frames")
        // The late region: in step with the timeline (the frame at timeline t is the region's frame t - cAt).
        let probe = 11_025   // half-way through it
        let cIndex = try #require(find(fileLeft[(90_000 + probe)..<(90_000 + probe + 400)], in: out), "the late region is not in the output")
        #expect(cIndex - origin == Int(cAt) + probe, "the late region is \(cIndex - origin - Int(cAt) - probe) frames off the timeline")
        #expect(a.all == [noErr])
        #expect(c.all == [noErr, kAudioUnitErr_RenderTimeout], "the late region's completion calls: \(c.all)")
    }
}
