// The file player and scheduled sound player units (kAudioUnitSubType_AudioFilePlayer,
// kAudioUnitSubType_ScheduledSoundPlayer): their AudioUnitProperties.h properties on AUPlayerNode.

import AudioCore
import AudioDevices
import AudioFiles
import AudioUnits
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
        let played = x.started ? Double((unit.node as? AUPlayerNode)?.playedFrames ?? 0) : -1
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
        x.primed = false
        return noErr
    case kAudioUnitProperty_ScheduledFilePrime:
        guard let data, size >= 4 else { return kAudio_ParamError }
        guard unit.initialized else { return kAudioUnitErr_Uninitialized }
        x.primeFrames = data.loadUnaligned(as: UInt32.self)
        // Apple's prime reads ahead now: the region's reader starts and this call returns once
        // the frames are buffered; playback waits for the start time stamp.
        guard x.region != nil, unit.component.description.componentSubType == kAudioUnitSubType_AudioFilePlayer,
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
        guard unit.initialized, let player = unit.node as? AUPlayerNode else { return kAudioUnitErr_Uninitialized }
        x.startTime = data.loadUnaligned(as: AudioTimeStamp.self)
        x.started = true
        if unit.component.description.componentSubType == kAudioUnitSubType_AudioFilePlayer {
            if !x.primed {
                let status = startFileRegion(unit, player)
                guard status == noErr else { return status }
            }
            x.primed = false
            let t = x.startTime
            player.scheduleStart(atSampleTime: t.mFlags.contains(.sampleTimeValid) && t.mSampleTime >= 0 ? Int64(t.mSampleTime) : nil)
        }
        return noErr
    case kAudioUnitProperty_ScheduleAudioSlice:
        guard unit.component.description.componentSubType == kAudioUnitSubType_ScheduledSoundPlayer else { return kAudioUnitErr_InvalidProperty }
        guard let data, Int(size) >= MemoryLayout<ScheduledAudioSlice>.size else { return kAudio_ParamError }
        guard unit.initialized, let player = unit.node as? AUPlayerNode else { return kAudioUnitErr_Uninitialized }
        let slice = UnsafeMutablePointer(mutating: data.assumingMemoryBound(to: ScheduledAudioSlice.self))
        return scheduleSlice(unit, player, slice)
    case kAudioUnitProperty_CurrentPlayTime:
        return kAudioUnitErr_PropertyNotWritable
    default:
        return nil
    }
}

/// Starts the feeder that reads the scheduled region (looping as asked) into the player, held
/// until its start time stamp, and waits until the prime frames are buffered (at most 5 s).
private func startFileRegion(_ unit: CompatUnit, _ player: AUPlayerNode) -> OSStatus {
    guard let region = unit.extras.region, let id = region.audioFileIfSet, let box = CompatAudioFile.from(id) else { return kAudioUnitErr_FileNotSpecified }
    let format = unit.format(kAudioUnitScope_Output, 0)
    let channels = player.channels
    let client = AudioStreamBasicDescription.linearPCM(sampleRate: format.mSampleRate, channels: UInt32(channels), bitsPerChannel: 32, isFloat: true)
    let reader: ExtendedAudioFile
    do throws(AudioError) {
        reader = try ExtendedAudioFile(file: box.file, clientFormat: client)
        try reader.seek(toFrame: max(0, min(region.mStartFrame, reader.frameCount)))
    } catch {
        return kAudioUnitErr_InvalidFile
    }
    let ratio = format.mSampleRate / box.file.dataFormat.sampleRate
    let fileFrames = region.mFramesToPlay == UInt32.max ? reader.frameCount - region.mStartFrame : Int64(region.mFramesToPlay)
    let framesPerPass = Int64((Double(max(0, fileFrames)) * ratio).rounded())
    // The region's own time stamp: where on the player's timeline (sample 0 = the start time
    // stamp) the region begins, as Apple's; the frames before it are silence.
    let t = region.mTimeStamp
    var leadIn = t.mFlags.contains(.sampleTimeValid) && t.mSampleTime > 0 ? Int64(t.mSampleTime.rounded()) : 0
    var passesLeft = region.mLoopCount == UInt32.max ? Int.max : Int(region.mLoopCount) + 1
    var leftInPass = framesPerPass
    var pcm: AudioPCMBuffer?
    let state = UncheckedState(region: region)
    // Prime: the asked frames (at most half the read-ahead buffer, at most the region) are
    // buffered before this returns, and before playback may start.
    let prime = Int(unit.extras.primeFrames == 0 ? 65536 : unit.extras.primeFrames)
    let target = min(prime, Int(unit.extras.bufferFrames) / 2, Int(clamping: leadIn + framesPerPass))
    player.holdPlayback(untilBuffered: target)
    player.play(from: { (out: UnsafeMutableBufferPointer<Float>) throws(AudioError) -> Int in
        let want = out.count / channels
        if leadIn > 0 {
            let n = Int(min(Int64(want), leadIn))
            out.baseAddress!.update(repeating: 0, count: n * channels)
            leadIn -= Int64(n)
            return n
        }
        while passesLeft > 0 {
            if leftInPass <= 0 {
                passesLeft -= 1
                if passesLeft == 0 { break }
                try reader.seek(toFrame: max(0, min(state.region.mStartFrame, reader.frameCount)))
                leftInPass = framesPerPass
                continue
            }
            let n = Int(min(Int64(want), leftInPass))
            if pcm == nil || pcm!.frameCapacity != n { pcm = try AudioPCMBuffer(format: client, frameCapacity: n) }
            let got = try reader.read(into: pcm!)
            if got == 0 { leftInPass = 0; continue }
            out.baseAddress!.update(from: pcm!.floatChannel(0)!.baseAddress!, count: got * channels)
            leftInPass -= Int64(got)
            return got
        }
        if let done = state.region.mCompletionProc {
            done(state.region.mCompletionProcUserData, &state.region, noErr)
        }
        return 0
    })
    let deadline = Date().addingTimeInterval(5)
    while player.bufferedFrames < target && !player.isInputEnded && Date() < deadline { usleep(1000) }
    return noErr
}

private final class UncheckedState: @unchecked Sendable {
    var region: ScheduledAudioFileRegion
    init(region: ScheduledAudioFileRegion) { self.region = region }
}

/// Copies a slice (in the unit's output format: Float32, planar or interleaved) into the player.
/// The slice is marked and its completion proc called as Apple's scheduled sound player does:
/// `BeganToRender` once the unit has rendered a frame of it, `Complete` (and the proc) once it
/// has rendered all of it, not when it was copied (see ``SliceTracker``). The slice's memory
/// must stay valid until then, as on Apple.
private func scheduleSlice(_ unit: CompatUnit, _ player: AUPlayerNode, _ slice: UnsafeMutablePointer<ScheduledAudioSlice>) -> OSStatus {
    guard let listPointer = slice.pointee.bufferListIfSet else { return kAudio_ParamError }
    let list = UnsafeMutableAudioBufferListPointer(listPointer)
    let format = unit.format(kAudioUnitScope_Output, 0)
    guard format.isFloat, format.mBitsPerChannel == 32 else { return kAudioUnitErr_FormatNotSupported }
    let channels = player.channels
    let frames = Int(slice.pointee.mNumberFrames)
    var interleaved = [Float](repeating: 0, count: frames * channels)
    if format.isInterleaved {
        guard list.count >= 1, let p = list[0].mData, Int(list[0].mDataByteSize) >= frames * channels * 4 else { return kAudio_ParamError }
        interleaved.withUnsafeMutableBytes { $0.baseAddress!.copyMemory(from: p, byteCount: frames * channels * 4) }
    } else {
        guard list.count >= channels else { return kAudio_ParamError }
        for c in 0..<channels {
            guard let p = list[c].mData?.assumingMemoryBound(to: Float.self), Int(list[c].mDataByteSize) >= frames * 4 else { return kAudio_ParamError }
            for f in 0..<frames { interleaved[f * channels + c] = p[f] }
        }
    }
    slice.pointee.mFlags.remove([.scheduledAudioSliceFlag_Complete, .scheduledAudioSliceFlag_BeganToRender, .scheduledAudioSliceFlag_BeganToRenderLate])
    let tracker = unit.extras.slices ?? SliceTracker()
    unit.extras.slices = tracker
    // Wait (at most 1 s) for room when the player's buffer is full.
    var offset = 0
    let deadline = Date().addingTimeInterval(1)
    let first = tracker.queuedFrames
    while offset < frames && Date() < deadline {
        let wrote = interleaved.withUnsafeBufferPointer { player.schedule(UnsafeBufferPointer(rebasing: $0[(offset * channels)...])) }
        offset += wrote
        if offset < frames { usleep(1000) }
    }
    tracker.queuedFrames += Int64(offset)
    guard offset == frames else { return kAudioUnitErr_CannotDoInCurrentContext }
    return tracker.track(slice, from: first, to: first + Int64(frames), player: player)
}

/// Watches a scheduled sound player's played frames and marks its slices as Apple's unit does:
/// `kScheduledAudioSliceFlag_BeganToRender` when the unit has rendered part of a slice,
/// `kScheduledAudioSliceFlag_Complete` and the slice's completion proc when it has rendered all
/// of it. The render thread only counts frames (``AUPlayerNode/playedFrames``); the flags and the
/// procs are set and called from this tracker's thread (every 2 ms while slices are pending,
/// asleep otherwise) and from ``AudioUnitRender(_:_:_:_:_:_:)`` on the unit, so an offline
/// render sees its slices complete when the call returns. Never on a device's render thread.
final class SliceTracker: @unchecked Sendable {
    private struct Pending {
        /// The slice's address (the caller's memory, valid until it is complete, as on Apple).
        var address: UInt
        var start: Int64
        var end: Int64
        var began: Bool
    }
    private let pending = Locked<[Pending]>([])
    private let wake = DispatchSemaphore(value: 0)
    private let stopped = Atomic<Bool>(false)
    private let thread = Locked<JoinableThread?>(nil)
    private let playerRef = Locked<AUPlayerNode?>(nil)
    /// Frames copied into the player so far (the scheduling thread only).
    var queuedFrames: Int64 = 0

    /// Tracks a slice occupying the player's frames `from ..< to`.
    func track(_ slice: UnsafeMutablePointer<ScheduledAudioSlice>, from: Int64, to: Int64, player: AUPlayerNode) -> OSStatus {
        playerRef.withLock { $0 = player }
        let address = UInt(bitPattern: slice)
        pending.withLock { $0.append(Pending(address: address, start: from, end: to, began: false)) }
        let running = thread.withLock { $0 != nil }
        if !running {
            do throws(AudioError) {
                let t = try JoinableThread(name: "oat-slice-tracker") { [self] in
                    while !stopped.load(ordering: .acquiring) {
                        if pending.withLock({ $0.isEmpty }) { wake.wait(); continue }
                        sweep()
                        usleep(2000)
                    }
                }
                thread.withLock { $0 = t }
            } catch {
                return kAudioUnitErr_CannotDoInCurrentContext
            }
        }
        wake.signal()
        return noErr
    }

    /// Marks what the player has rendered; calls the completion procs (no lock held).
    func sweep() {
        guard let player = playerRef.withLock({ $0 }) else { return }
        let played = player.playedFrames
        let done = pending.withLock { list -> [UInt] in
            var done: [UInt] = []
            var i = 0
            while i < list.count {
                if played > list[i].start && !list[i].began {
                    UnsafeMutablePointer<ScheduledAudioSlice>(bitPattern: list[i].address)?.pointee.mFlags.insert(.scheduledAudioSliceFlag_BeganToRender)
                    list[i].began = true
                }
                if played >= list[i].end {
                    done.append(list[i].address)
                    list.remove(at: i)
                } else {
                    i += 1
                }
            }
            return done
        }
        for address in done {
            guard let slice = UnsafeMutablePointer<ScheduledAudioSlice>(bitPattern: address) else { continue }
            slice.pointee.mFlags.insert(.scheduledAudioSliceFlag_Complete)
            slice.pointee.mCompletionProc?(slice.pointee.completionProcUserDataIfSet, slice)
        }
    }

    /// Stops the thread (the unit is disposed of); pending slices are not called.
    func stop() {
        stopped.store(true, ordering: .releasing)
        wake.signal()
        thread.withLock { t -> JoinableThread? in defer { t = nil }; return t }?.join()
        pending.withLock { $0.removeAll() }
    }
}
