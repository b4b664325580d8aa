// The file player and scheduled sound player units (kAudioUnitSubType_AudioFilePlayer,
// kAudioUnitSubType_ScheduledSoundPlayer): their AudioUnitProperties.h properties on AUPlayerNode.

import OATCore
import OATDevices
import OATFiles
import OATUnits
import Dispatch
import FoundationEssentials
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// MARK: - Players

func isPlayer(_ unit: CompatUnit) -> Bool {
    let s = unit.component.description.componentSubType
    return unit.component.description.componentType == kAudioUnitType_Generator
        && (s == kAudioUnitSubType_AudioFilePlayer || s == kAudioUnitSubType_ScheduledSoundPlayer)
}

func playerPropertySize(_ unit: CompatUnit, _ id: AudioUnitPropertyID) -> UInt32? {
    switch id {
    case kAudioUnitProperty_ScheduledFileIDs: return UInt32(unit.extras.fileIDs.count * MemoryLayout<AudioFileID>.stride)
    case kAudioUnitProperty_ScheduledFileRegion: return UInt32(MemoryLayout<ScheduledAudioFileRegion>.size)
    case kAudioUnitProperty_ScheduleStartTimeStamp, kAudioUnitProperty_CurrentPlayTime: return UInt32(MemoryLayout<AudioTimeStamp>.size)
    case kAudioUnitProperty_ScheduledFilePrime, kAudioUnitProperty_ScheduledFileBufferSizeFrames, kAudioUnitProperty_ScheduledFileNumberBuffers: return 4
    case kAudioUnitProperty_ScheduleAudioSlice: return UInt32(MemoryLayout<ScheduledAudioSlice>.size)
    default: return nil
    }
}

func getPlayerProperty(_ unit: CompatUnit, _ id: AudioUnitPropertyID, _ out: UnsafeMutableRawPointer,
                               _ ioSize: UnsafeMutablePointer<UInt32>) -> OSStatus? {
    let e = kAudio_ParamError
    let x = unit.extras
    switch id {
    case kAudioUnitProperty_ScheduledFileIDs:
        let n = min(x.fileIDs.count, Int(ioSize.pointee) / MemoryLayout<AudioFileID>.stride)
        let p = out.assumingMemoryBound(to: AudioFileID?.self)
        for i in 0..<n { p[i] = x.fileIDs[i] }
        ioSize.pointee = UInt32(n * MemoryLayout<AudioFileID>.stride)
        return noErr
    case kAudioUnitProperty_ScheduledFileRegion:
        guard let r = x.region else { return kAudioUnitErr_FileNotSpecified }
        guard Int(ioSize.pointee) >= MemoryLayout<ScheduledAudioFileRegion>.size else { return e }
        out.assumingMemoryBound(to: ScheduledAudioFileRegion.self).pointee = r
        return noErr
    case kAudioUnitProperty_ScheduleStartTimeStamp: return writeProperty(x.startTime, ioSize, out, sizeError: e)
    case kAudioUnitProperty_CurrentPlayTime:
        let played: Double
        if let slices = unit.node as? ScheduledSlicePlayerNode {
            played = Double(slices.timelineSampleTime)   // -1 before the start, as Apple's
        } else {
            // The timeline (frames since the start time stamp, silence included: a player that
            // ran dry keeps counting, as Apple's); -1 before the start.
            played = x.started ? Double((unit.node as? AUPlayerNode)?.timelineSampleTime ?? -1) : -1
        }
        return writeProperty(AudioTimeStamp(sampleTime: played, hostTime: 0, rateScalar: 1, flags: .sampleTimeValid), ioSize, out, sizeError: e)
    case kAudioUnitProperty_ScheduledFilePrime: return writeProperty(x.primeFrames, ioSize, out, sizeError: e)
    case kAudioUnitProperty_ScheduledFileBufferSizeFrames: return writeProperty(x.bufferFrames, ioSize, out, sizeError: e)
    case kAudioUnitProperty_ScheduledFileNumberBuffers: return writeProperty(UInt32(1), ioSize, out, sizeError: e)
    default: return nil
    }
}

func setPlayerProperty(_ unit: CompatUnit, _ id: AudioUnitPropertyID, _ data: UnsafeRawPointer?, _ size: UInt32) -> OSStatus? {
    let x = unit.extras
    switch id {
    case kAudioUnitProperty_ScheduledFileIDs:
        guard let data else { x.fileIDs = []; return noErr }
        let n = Int(size) / MemoryLayout<AudioFileID>.stride
        var ids: [AudioFileID] = []
        for i in 0..<n {
            guard let id = data.loadUnaligned(fromByteOffset: i * MemoryLayout<AudioFileID>.stride, as: AudioFileID?.self),
                  CompatAudioFile.from(id) != nil else { return kAudioUnitErr_InvalidFile }
            ids.append(id)
        }
        x.fileIDs = ids
        return noErr
    case kAudioUnitProperty_ScheduledFileRegion:
        guard unit.component.description.componentSubType == kAudioUnitSubType_AudioFilePlayer else { return kAudioUnitErr_InvalidProperty }
        guard let data, Int(size) >= MemoryLayout<ScheduledAudioFileRegion>.size else { return kAudio_ParamError }
        guard unit.initialized else { return kAudioUnitErr_Uninitialized }
        let r = data.assumingMemoryBound(to: ScheduledAudioFileRegion.self).pointee
        guard let f = r.audioFileIfSet, x.fileIDs.contains(f) else { return kAudioUnitErr_FileNotSpecified }
        x.region = r
        // Added to the schedule (Apple's player queues regions, each at its time stamp). A
        // running feeder takes it; once the feeder has ended (its regions read), a started or
        // primed player gets a new one that continues the timeline.
        let running = x.regions.add(r)
        if !running && (x.started || x.primed), let player = unit.node as? AUPlayerNode {
            return startFileRegion(unit, player, fresh: false)
        }
        return noErr
    case kAudioUnitProperty_ScheduledFilePrime:
        guard let data, size >= 4 else { return kAudio_ParamError }
        guard unit.initialized else { return kAudioUnitErr_Uninitialized }
        x.primeFrames = data.loadUnaligned(as: UInt32.self)
        // Apple's prime reads ahead now: the region's reader starts and this call returns once
        // the frames are buffered; playback waits for the start time stamp.
        guard !x.primed, x.region != nil, unit.component.description.componentSubType == kAudioUnitSubType_AudioFilePlayer,
              let player = unit.node as? AUPlayerNode else { return noErr }
        let status = startFileRegion(unit, player)
        x.primed = status == noErr
        return status
    case kAudioUnitProperty_ScheduledFileBufferSizeFrames:
        guard let data, size >= 4 else { return kAudio_ParamError }
        guard !unit.initialized else { return kAudioUnitErr_Initialized }
        x.bufferFrames = max(1024, data.loadUnaligned(as: UInt32.self))
        unit.node = unit.makeNode()
        return noErr
    case kAudioUnitProperty_ScheduledFileNumberBuffers:
        return data != nil && size >= 4 ? noErr : kAudio_ParamError
    case kAudioUnitProperty_ScheduleStartTimeStamp:
        guard let data, Int(size) >= MemoryLayout<AudioTimeStamp>.size else { return kAudio_ParamError }
        guard unit.initialized else { return kAudioUnitErr_Uninitialized }
        x.startTime = data.loadUnaligned(as: AudioTimeStamp.self)
        x.started = true
        let t = x.startTime
        let at: Int64? = t.mFlags.contains(.sampleTimeValid) && t.mSampleTime >= 0 ? Int64(t.mSampleTime) : nil
        if let slices = unit.node as? ScheduledSlicePlayerNode {
            slices.start(atSampleTime: at)
            return noErr
        }
        guard let player = unit.node as? AUPlayerNode else { return kAudioUnitErr_Uninitialized }
        if unit.component.description.componentSubType == kAudioUnitSubType_AudioFilePlayer {
            if !x.primed {
                let status = startFileRegion(unit, player)
                guard status == noErr else { return status }
            }
            x.primed = false
            player.scheduleStart(atSampleTime: at)
        }
        return noErr
    case kAudioUnitProperty_ScheduleAudioSlice:
        guard unit.component.description.componentSubType == kAudioUnitSubType_ScheduledSoundPlayer else { return kAudioUnitErr_InvalidProperty }
        guard let data, Int(size) >= MemoryLayout<ScheduledAudioSlice>.size else { return kAudio_ParamError }
        guard unit.initialized, let player = unit.node as? ScheduledSlicePlayerNode else { return kAudioUnitErr_Uninitialized }
        let slice = UnsafeMutablePointer(mutating: data.assumingMemoryBound(to: ScheduledAudioSlice.self))
        return scheduleSlice(unit, player, slice)
    case kAudioUnitProperty_CurrentPlayTime:
        return kAudioUnitErr_PropertyNotWritable
    default:
        return nil
    }
}

/// The file player's schedule: the regions set with `kAudioUnitProperty_ScheduledFileRegion`
/// that the feeder has not taken yet (each set adds one, as Apple's), the one it reads, and
/// where on the player's timeline the feeder's next frame goes.
final class FileRegionSchedule: @unchecked Sendable {
    /// (Regions hold C pointers: Sendable by this lock.)
    private struct State: @unchecked Sendable {
        /// Regions waiting for the feeder, in the order set.
        var list: [ScheduledAudioFileRegion] = []
        /// The region the feeder reads (its completion proc not called yet).
        var current: ScheduledAudioFileRegion?
        /// True while a feeder runs: it takes the regions set meanwhile.
        var feeding = false
    }
    private let state = Locked(State())
    /// Timeline position after the last frame fed (frames after the start time stamp).
    let end = Atomic<Int64>(0)

    /// Adds a region; true when a feeder runs and will take it.
    func add(_ region: ScheduledAudioFileRegion) -> Bool {
        state.withLock { s in s.list.append(region); return s.feeding }
    }
    /// The first region waiting, if any.
    var first: ScheduledAudioFileRegion? { state.withLock { $0.list.first } }
    /// A feeder starts.
    func feederStarts() { state.withLock { $0.feeding = true } }
    /// Feeder: the next region (now the current one), or nil (the feeder ends; `position` is where it ended).
    func take(endingAt position: Int64) -> ScheduledAudioFileRegion? {
        state.withLock { s in
            s.current = nil
            if s.list.isEmpty { s.feeding = false; end.store(position, ordering: .releasing); return nil }
            s.current = s.list.removeFirst()
            return s.current
        }
    }
    /// Feeder: the current region has been read (its proc is called next).
    func currentRead() { state.withLock { $0.current = nil } }
    /// Forgets every region (AudioUnitReset, once the feeder has been stopped); returns those
    /// not read yet (the current one first), whose completion procs the reset calls.
    func removeAll() -> [ScheduledAudioFileRegion] {
        state.withLock { s in
            defer { s = State() }
            return (s.current.map { [$0] } ?? []) + s.list
        }
    }
}

/// Starts the feeder that reads the scheduled regions (each at its time stamp, looping as
/// asked) into the player and waits until the prime frames are buffered (at most 5 s).
/// `fresh`: the player is held until its start time stamp and the timeline starts at 0;
/// otherwise the feeder continues the timeline where the last one ended.
///
/// The player is anchored to its timeline (``AUPlayerNode/anchorToTimeline(_:)``): frames whose
/// time passed while it had nothing to play (it ran dry, or the reader fell behind) are not
/// played late; the feeder does not write them (``AUPlayerNode/claimLateFrames(upTo:)``) or the
/// render skips them, so a region set after the player ran dry starts exactly at its time stamp
/// (or, when that has passed, at the next render with its past part skipped).
///
/// Completion procs, as Apple's header describes them: called on the reading thread once the
/// region has been read (not when played), and, when part of the region was not read in time to
/// play at its scheduled time, called a second time with `kAudioUnitErr_RenderTimeout` (Apple
/// says "an error code" without naming it).
private func startFileRegion(_ unit: CompatUnit, _ player: AUPlayerNode, fresh: Bool = true) -> OSStatus {
    let schedule = unit.extras.regions
    guard let first = schedule.first else { return kAudioUnitErr_FileNotSpecified }
    let format = unit.format(kAudioUnitScope_Output, 0)
    let channels = player.channels
    let client = AudioStreamBasicDescription.linearPCM(sampleRate: format.mSampleRate, channels: UInt32(channels), bitsPerChannel: 32, isFloat: true)
    /// The region being read.
    struct Current {
        var reader: ExtendedAudioFile
        var state: UncheckedState
        var framesPerPass: Int64
        var passesLeft: Int
        var leftInPass: Int64
        /// Part of it was not read in time to play at its time (skipped).
        var late = false
    }
    func open(_ region: ScheduledAudioFileRegion) throws(AudioError) -> Current {
        guard let id = region.audioFileIfSet, let box = CompatAudioFile.from(id) else {
            throw AudioError(.invalidArgument, component: "AudioFilePlayer", "the region's file is not open")
        }
        let reader = try ExtendedAudioFile(file: box.file, clientFormat: client)
        try reader.seek(toFrame: max(0, min(region.mStartFrame, reader.frameCount)))
        let ratio = format.mSampleRate / box.file.dataFormat.sampleRate
        let fileFrames = region.mFramesToPlay == UInt32.max ? reader.frameCount - region.mStartFrame : Int64(region.mFramesToPlay)
        let framesPerPass = Int64((Double(max(0, fileFrames)) * ratio).rounded())
        // A region of no frames plays once, even when asked to loop forever.
        let passes = framesPerPass == 0 ? 1 : region.mLoopCount == UInt32.max ? Int.max : Int(region.mLoopCount) + 1
        return Current(reader: reader, state: UncheckedState(region: region), framesPerPass: framesPerPass,
                       passesLeft: passes, leftInPass: framesPerPass)
    }
    func complete(_ c: Current) {
        schedule.currentRead()
        guard let done = c.state.region.mCompletionProc else { return }
        done(c.state.region.mCompletionProcUserData, &c.state.region, noErr)
        if c.late { done(c.state.region.mCompletionProcUserData, &c.state.region, kAudioUnitErr_RenderTimeout) }
    }
    /// Seeks the current region's reader to `done` frames (output rate) into its pass.
    func seek(_ c: Current, toPassFrame done: Int64) throws(AudioError) {
        let fileFrames = Int64((Double(done) * c.reader.file.dataFormat.sampleRate / format.mSampleRate).rounded())
        try c.reader.seek(toFrame: max(0, min(c.state.region.mStartFrame + fileFrames, c.reader.frameCount)))
    }
    // The first region must open now (Apple's prime and start fail for a bad file).
    do throws(AudioError) { _ = try open(first) } catch { return kAudioUnitErr_InvalidFile }
    var position: Int64 = fresh ? 0 : schedule.end.load(ordering: .acquiring)
    player.anchorToTimeline(true)
    var leadIn: Int64 = 0
    var current: Current?
    var pcm: AudioPCMBuffer?
    // Prime: the asked frames (at most half the read-ahead buffer, at most the first region
    // and the silence before it) are buffered before this returns, and before playback may start.
    let prime = Int(unit.extras.primeFrames == 0 ? 65536 : unit.extras.primeFrames)
    var target = prime
    if let c = try? open(first) {
        let t = first.mTimeStamp
        // (Continuing a running timeline, the silence whose time has passed is not written.)
        let now = fresh ? position : max(position, player.timelineSampleTime)
        let at = t.mFlags.contains(.sampleTimeValid) ? max(Int64(t.mSampleTime.rounded()), now) : now
        target = min(prime, Int(unit.extras.bufferFrames) / 2, Int(clamping: at - now + c.framesPerPass))
    }
    schedule.feederStarts()
    if fresh { player.holdPlayback(untilBuffered: target) }
    player.play(from: { (out: UnsafeMutableBufferPointer<Float>) throws(AudioError) -> Int in
        let want = out.count / channels
        while true {
            if leadIn > 0 {
                // Silence whose time has passed (the player ran dry meanwhile) is not written.
                let claimed = player.claimLateFrames(upTo: leadIn)
                leadIn -= claimed
                position += claimed
                if leadIn == 0 { continue }
                let n = Int(min(Int64(want), leadIn))
                out.baseAddress!.update(repeating: 0, count: n * channels)
                leadIn -= Int64(n)
                position += Int64(n)
                return n
            }
            guard var c = current else {
                // The next region: its time stamp places it on the timeline (silence before it;
                // without a valid sample time it follows the last); a region whose time has
                // passed starts with the frame due now, as the scheduled slices do.
                guard let region = schedule.take(endingAt: position) else { return 0 }
                var opened: Current
                do throws(AudioError) { opened = try open(region) } catch {
                    schedule.currentRead()
                    if let done = region.mCompletionProc {
                        var r = region
                        done(region.mCompletionProcUserData, &r, kAudioUnitErr_InvalidFile)
                    }
                    continue
                }
                let t = region.mTimeStamp
                let at = t.mFlags.contains(.sampleTimeValid) ? Int64(t.mSampleTime.rounded()) : position
                if at > position { leadIn = at - position }
                var late = position - at
                if late >= 0 {
                    // The player ran dry before it: the frames due meanwhile are late too.
                    let claimed = player.claimLateFrames(upTo: Int64.max)
                    position += claimed
                    late += claimed
                }
                opened.late = late > 0
                while late > 0 && opened.passesLeft > 0 {
                    if late >= opened.leftInPass {
                        late -= opened.leftInPass
                        opened.passesLeft -= 1
                        opened.leftInPass = opened.framesPerPass
                        if opened.passesLeft > 0 { try opened.reader.seek(toFrame: max(0, min(region.mStartFrame, opened.reader.frameCount))) }
                    } else {
                        let fileFrames = Int64((Double(late) * opened.reader.file.dataFormat.sampleRate / format.mSampleRate).rounded())
                        try opened.reader.seek(toFrame: max(0, min(region.mStartFrame + fileFrames, opened.reader.frameCount)))
                        opened.leftInPass -= late
                        late = 0
                    }
                }
                if opened.passesLeft == 0 { complete(opened); continue }
                current = opened
                continue
            }
            if c.leftInPass <= 0 {
                c.passesLeft -= 1
                if c.passesLeft == 0 { complete(c); current = nil; continue }
                try c.reader.seek(toFrame: max(0, min(c.state.region.mStartFrame, c.reader.frameCount)))
                c.leftInPass = c.framesPerPass
                current = c
                continue
            }
            // Frames whose time passed before they were read (the reader fell behind): skipped.
            let claimed = player.claimLateFrames(upTo: c.leftInPass)
            if claimed > 0 {
                c.leftInPass -= claimed
                position += claimed
                c.late = true
                try seek(c, toPassFrame: c.framesPerPass - c.leftInPass)
                current = c
                continue
            }
            let n = Int(min(Int64(want), c.leftInPass))
            if pcm == nil || pcm!.frameCapacity != n { pcm = try AudioPCMBuffer(format: client, frameCapacity: n) }
            let got = try c.reader.read(into: pcm!)
            if got == 0 { c.leftInPass = 0; current = c; continue }
            out.baseAddress!.update(from: pcm!.floatChannel(0)!.baseAddress!, count: got * channels)
            c.leftInPass -= Int64(got)
            current = c
            position += Int64(got)
            return got
        }
    })
    let deadline = Date().addingTimeInterval(5)
    while player.bufferedFrames < target && !player.isInputEnded && Date() < deadline { usleep(1000) }
    return noErr
}

/// AudioUnitReset on a file player: the schedule is cleared as on Apple: the feeder stops, the
/// regions not yet read are dropped (their completion procs called), what was read ahead is discarded, and nothing plays until a
/// new start time stamp (regions set from now on start a new timeline at 0). While the unit
/// renders (its graph runs), the discarding happens at the next render, waited for (at most 0.2 s).
func resetFilePlayer(_ unit: CompatUnit, _ player: AUPlayerNode, rendering: Bool) {
    let x = unit.extras
    player.stop()
    let dropped = x.regions.removeAll()
    x.regions.end.store(0, ordering: .releasing)
    x.primed = false
    x.started = false
    player.holdPlayback(untilBuffered: 0)
    if rendering {
        player.flush()
        let deadline = HostTime.now() + HostTime.ticks(seconds: 0.2)
        _ = pollWithBackoff(until: deadline) { !player.isFlushPending }
    } else {
        player.discardBuffered()
    }
    // Apple's header: the completion proc of each region in the schedule is called (the status
    // is not documented; noErr here). Regions already read had theirs called then.
    for region in dropped {
        guard let done = region.mCompletionProc else { continue }
        var r = region
        done(r.mCompletionProcUserData, &r, noErr)
    }
}

private final class UncheckedState: @unchecked Sendable {
    var region: ScheduledAudioFileRegion
    init(region: ScheduledAudioFileRegion) { self.region = region }
}

/// Queues a slice on the scheduled sound player (not copied: the render thread reads the
/// slice's buffers when its time comes, as Apple's; see ``ScheduledSlicePlayerNode``). The slice
/// is marked and its completion proc called as Apple's unit does: `BeganToRender` (and
/// `BeganToRenderLate`) once the unit has rendered part of it, `Complete` and the proc once the
/// unit is done with it (see ``SliceTracker``). Its memory must stay valid until then.
private func scheduleSlice(_ unit: CompatUnit, _ player: ScheduledSlicePlayerNode, _ slice: UnsafeMutablePointer<ScheduledAudioSlice>) -> OSStatus {
    // A non-optional pointer in Apple's Swift; a C caller may still leave it null.
    guard let listPointer = slice.pointee.bufferListIfSet else { return kAudio_ParamError }
    let list = UnsafeMutableAudioBufferListPointer(listPointer)
    let format = unit.format(kAudioUnitScope_Output, 0)
    guard format.isFloat, format.mBitsPerChannel == 32 else { return kAudioUnitErr_FormatNotSupported }
    let channels = player.channels
    let frames = Int(slice.pointee.mNumberFrames)
    let interleaved = format.isInterleaved && channels > 1
    if interleaved {
        guard list.count >= 1, list[0].mData != nil, Int(list[0].mDataByteSize) >= frames * channels * 4 else { return kAudio_ParamError }
    } else {
        guard list.count >= 1 else { return kAudio_ParamError }
        for c in 0..<min(channels, list.count) {
            guard list[c].mData != nil, Int(list[c].mDataByteSize) >= frames * 4 else { return kAudio_ParamError }
        }
    }
    slice.pointee.mFlags.remove([.scheduledAudioSliceFlag_Complete, .scheduledAudioSliceFlag_BeganToRender, .scheduledAudioSliceFlag_BeganToRenderLate])
    let t = slice.pointee.mTimeStamp
    let start = t.mFlags.contains(.sampleTimeValid) ? Int64(t.mSampleTime.rounded()) : Int64.min
    let tracker = unit.extras.slices ?? SliceTracker()
    unit.extras.slices = tracker
    guard tracker.attach(player) == noErr else { return kAudioUnitErr_CannotDoInCurrentContext }
    let entry = ScheduledSlicePlayerNode.Entry(address: UInt(bitPattern: slice), list: listPointer, frames: frames, start: start,
                                               flags: slice.pointee.mFlags.rawValue, interleaved: interleaved,
                                               proc: slice.pointee.mCompletionProc, userData: slice.pointee.completionProcUserDataIfSet)
    // The player holds ScheduledSlicePlayerNode.capacity slices; more wait (at most 1 s) for room.
    let deadline = HostTime.now() + HostTime.ticks(seconds: 1)
    return pollWithBackoff(until: deadline) { player.schedule(entry) } ? noErr : kAudioUnitErr_CannotDoInCurrentContext
}

/// Calls a scheduled sound player's completion procs as the render thread reports them
/// (``ScheduledSlicePlayerNode/events``; the render thread sets the slices' flags itself). Called
/// from this tracker's thread, which sleeps on a semaphore the render thread posts after a
/// render that completed a slice with a proc (no polling), from
/// ``AudioUnitRender(_:_:_:_:_:_:)`` on the unit (an offline render returns with the procs
/// called) and from ``AudioUnitReset(_:_:_:)`` (the procs of the slices it dropped run before it
/// returns). Never on a device's render thread.
final class SliceTracker: @unchecked Sendable {
    /// What the render thread posts.
    let signal = SliceSignal()
    private let stopped = Atomic<Bool>(false)
    private let thread = Locked<JoinableThread?>(nil)
    /// The player whose events are drained (the consumer side of its queue: under this lock).
    private let player = Locked<ScheduledSlicePlayerNode?>(nil)
    /// Times the thread woke (tests: it sleeps while nothing happens).
    let wakeups = Atomic<Int>(0)

    /// Drains `node`'s events from now on (and the previous player's last ones); starts the
    /// thread on first use.
    func attach(_ node: ScheduledSlicePlayerNode) -> OSStatus {
        let old = player.withLock { p -> ScheduledSlicePlayerNode? in
            defer { p = node }
            return p === node ? nil : p
        }
        if let old { drain(old) }
        let running = thread.withLock { $0 != nil }
        guard !running else { return noErr }
        do throws(AudioError) {
            let t = try JoinableThread(name: "oat-slice-tracker") { [self] in
                // Named for tools and tests (15 characters at most; pthread_setname_np is
                // not in Swift's Glibc module).
                let fd = open("/proc/thread-self/comm", O_WRONLY)
                if fd >= 0 { _ = write(fd, "oat-slice-track", 15); close(fd) }
                while true {
                    signal.wait()
                    if stopped.load(ordering: .acquiring) { break }
                    wakeups.add(1, ordering: .relaxed)
                    sweep()
                }
            }
            thread.withLock { $0 = t }
            return noErr
        } catch {
            return kAudioUnitErr_CannotDoInCurrentContext
        }
    }

    /// Applies what the attached player reported.
    func sweep() {
        guard let node = player.withLock({ $0 }) else { return }
        drain(node)
    }

    private func drain(_ node: ScheduledSlicePlayerNode) {
        // One consumer at a time (this thread, AudioUnitRender); the procs run outside the lock.
        // The slice's memory is the caller's again (Complete is set): only its address is passed.
        while let event = player.withLock({ _ in node.events.pop() }) {
            guard let slice = UnsafeMutablePointer<ScheduledAudioSlice>(bitPattern: event.address) else { continue }
            event.proc(event.userData, slice)
        }
    }

    /// Stops the thread (the unit is disposed of); slices not yet reported are not called.
    func stop() {
        stopped.store(true, ordering: .releasing)
        signal.post()
        thread.withLock { t -> JoinableThread? in defer { t = nil }; return t }?.join()
        player.withLock { $0 = nil }
    }
}
