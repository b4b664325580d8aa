// The file player and scheduled sound player units (kAudioUnitSubType_AudioFilePlayer,
// kAudioUnitSubType_ScheduledSoundPlayer): their AudioUnitProperties.h properties on AUPlayerNode.

import AudioCore
import AudioDevices
import AudioFiles
import AudioUnits
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
        guard let f = r.mAudioFile, x.fileIDs.contains(f) else { return kAudioUnitErr_FileNotSpecified }
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
    guard let region = unit.extras.region, let id = region.mAudioFile, let box = CompatAudioFile.from(id) else { return kAudioUnitErr_FileNotSpecified }
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
    var passesLeft = region.mLoopCount == UInt32.max ? Int.max : Int(region.mLoopCount) + 1
    var leftInPass = framesPerPass
    var pcm: AudioPCMBuffer?
    let state = UncheckedState(region: region)
    // Prime: the asked frames (at most half the read-ahead buffer, at most the region) are
    // buffered before this returns, and before playback may start.
    let prime = Int(unit.extras.primeFrames == 0 ? 65536 : unit.extras.primeFrames)
    let target = min(prime, Int(unit.extras.bufferFrames) / 2, Int(clamping: framesPerPass))
    player.holdPlayback(untilBuffered: target)
    player.play(from: { (out: UnsafeMutableBufferPointer<Float>) throws(AudioError) -> Int in
        let want = out.count / channels
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

/// Copies a slice (in the unit's output format: Float32, planar or interleaved) into the player
/// and marks it complete.
private func scheduleSlice(_ unit: CompatUnit, _ player: AUPlayerNode, _ slice: UnsafeMutablePointer<ScheduledAudioSlice>) -> OSStatus {
    guard let listPointer = slice.pointee.mBufferList else { return kAudio_ParamError }
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
    // Wait (at most 1 s) for room when the player's buffer is full.
    var offset = 0
    let deadline = Date().addingTimeInterval(1)
    while offset < frames && Date() < deadline {
        let wrote = interleaved.withUnsafeBufferPointer { player.schedule(UnsafeBufferPointer(rebasing: $0[(offset * channels)...])) }
        offset += wrote
        if offset < frames { usleep(1000) }
    }
    slice.pointee.mFlags.insert([.scheduledAudioSliceFlag_BeganToRender, .scheduledAudioSliceFlag_Complete])
    slice.pointee.mCompletionProc?(slice.pointee.mCompletionProcUserData, slice)
    return offset == frames ? noErr : kAudioUnitErr_CannotDoInCurrentContext
}
