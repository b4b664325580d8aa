// The C API players scenario of render-alloc-bench: an AUGraph (ScheduledSoundPlayer and
// AudioFilePlayer -> MultiChannelMixer -> DefaultOutput) playing to a real device while the
// control side keeps rescheduling slices (polling their Complete flags), resets the slice player
// (AudioUnitReset while the graph plays: the render thread acts on a reset generation) and sets
// file regions after the file player ran dry (its render skips or its feeder claims the late
// frames). A graph render notification opens the counting window on the device thread after the
// warm-up renders, as the AVAudioEngine scenario's source node does.

import BenchSupport
import Foundation
import MallocCounter
import OpenAVFAudio
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

private func probeNotify(_ refCon: UnsafeMutableRawPointer, _ flags: UnsafeMutablePointer<AudioUnitRenderActionFlags>,
                         _ time: UnsafePointer<AudioTimeStamp>, _ bus: UInt32, _ frames: UInt32,
                         _ ioData: UnsafeMutablePointer<AudioBufferList>?) -> OSStatus {
    if flags.pointee.contains(.unitRenderAction_PreRender) {
        Unmanaged<EngineProbe>.fromOpaque(refCon).takeUnretainedValue().enter(frames: Int(frames))
    }
    return noErr
}

private let sliceDone: ScheduledAudioSliceCompletionProc = { _, _ in }

/// A 16-bit stereo WAV of `frames` frames of a tone at `rate`, written to `path`.
private func writeToneWAV(_ path: String, frames: Int, rate: Int) {
    var data = Data()
    func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { data.append(contentsOf: $0) } }
    func u16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { data.append(contentsOf: $0) } }
    data.append(contentsOf: Array("RIFF".utf8)); u32(UInt32(36 + frames * 4)); data.append(contentsOf: Array("WAVEfmt ".utf8))
    u32(16); u16(1); u16(2); u32(UInt32(rate)); u32(UInt32(rate * 4)); u16(4); u16(16)
    data.append(contentsOf: Array("data".utf8)); u32(UInt32(frames * 4))
    for i in 0..<frames {
        let v = Int16(8000 * sin(2 * Double.pi * 330 * Double(i) / Double(rate)))
        u16(UInt16(bitPattern: v)); u16(UInt16(bitPattern: v))
    }
    FileManager.default.createFile(atPath: path, contents: data)
}

/// Plays the players' graph on `spec` (an `OAT_OUTPUT` value) and reports what was allocated on
/// the render thread once warm.
func runPlayers(_ kind: String, spec: String, options: Options) -> KindResult {
    var result = KindResult(kind: kind, device: "AUGraph players on \(spec)")
    setenv("OAT_OUTPUT", spec, 1)
    let rate = 44100
    let wav = NSTemporaryDirectory() + "render-alloc-players-\(getpid()).wav"
    writeToneWAV(wav, frames: rate * 2, rate: rate)
    defer { unlink(wav) }

    var graph: AUGraph?
    guard NewAUGraph(&graph) == noErr, let g = graph else { result.skipped = "NewAUGraph failed"; return result }
    defer { DisposeAUGraph(g) }
    func node(_ type: UInt32, _ subType: UInt32) -> AUNode {
        var d = AudioComponentDescription(componentType: type, componentSubType: subType, componentManufacturer: kAudioUnitManufacturer_Apple,
                                          componentFlags: 0, componentFlagsMask: 0)
        var n: AUNode = 0
        _ = AUGraphAddNode(g, &d, &n)
        return n
    }
    let slicesNode = node(kAudioUnitType_Generator, kAudioUnitSubType_ScheduledSoundPlayer)
    let fileNode = node(kAudioUnitType_Generator, kAudioUnitSubType_AudioFilePlayer)
    let mixerNode = node(kAudioUnitType_Mixer, kAudioUnitSubType_MultiChannelMixer)
    let outNode = node(kAudioUnitType_Output, kAudioUnitSubType_DefaultOutput)
    guard AUGraphOpen(g) == noErr else { result.skipped = "AUGraphOpen failed"; return result }
    var su: AudioUnit?, fu: AudioUnit?
    _ = AUGraphNodeInfo(g, slicesNode, nil, &su)
    _ = AUGraphNodeInfo(g, fileNode, nil, &fu)
    guard let slices = su, let filePlayer = fu else { result.skipped = "no player units"; return result }
    _ = AUGraphConnectNodeInput(g, slicesNode, 0, mixerNode, 0)
    _ = AUGraphConnectNodeInput(g, fileNode, 0, mixerNode, 1)
    _ = AUGraphConnectNodeInput(g, mixerNode, 0, outNode, 0)
    let probe = EngineProbe(warmupCalls: options.warmupCalls)
    _ = AUGraphAddRenderNotify(g, probeNotify, Unmanaged.passUnretained(probe).toOpaque())
    guard AUGraphInitialize(g) == noErr else { result.skipped = "AUGraphInitialize failed"; return result }

    // Eight slices of 2400 frames, allocated once and rescheduled when complete.
    var format = AudioStreamBasicDescription()
    var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
    _ = AudioUnitGetProperty(slices, kAudioUnitProperty_StreamFormat, kAudioUnitScope_Output, 0, &format, &size)
    let channels = max(1, Int(format.mChannelsPerFrame))
    let frames = 2400, count = 8
    let samples = UnsafeMutablePointer<Float>.allocate(capacity: frames * channels * count)
    for i in 0..<(frames * channels * count) { samples[i] = Float(0.1 * sin(Double(i) * 0.07)) }
    let lists = (0..<count).map { k -> UnsafeMutableAudioBufferListPointer in
        let list = AudioBufferList.allocate(maximumBuffers: channels)
        for c in 0..<channels {
            list[c] = AudioBuffer(mNumberChannels: 1, mDataByteSize: UInt32(frames * 4),
                                  mData: UnsafeMutableRawPointer(samples + (k * channels + c) * frames))
        }
        return list
    }
    let pool = UnsafeMutablePointer<ScheduledAudioSlice>.allocate(capacity: count)
    for k in 0..<count {
        pool[k] = ScheduledAudioSlice(mTimeStamp: AudioTimeStamp(), mCompletionProc: sliceDone, mCompletionProcUserData: UnsafeMutableRawPointer(pool + k),
                                      mFlags: .scheduledAudioSliceFlag_Complete, mReserved: 0, mReserved2: nil,
                                      mNumberFrames: UInt32(frames), mBufferList: lists[k].unsafeMutablePointer)
    }
    defer {
        pool.deallocate()
        for l in lists { free(l.unsafeMutablePointer) }
        samples.deallocate()
    }
    func playTime(_ unit: AudioUnit) -> Double {
        var t = AudioTimeStamp()
        var s = UInt32(MemoryLayout<AudioTimeStamp>.size)
        _ = AudioUnitGetProperty(unit, kAudioUnitProperty_CurrentPlayTime, kAudioUnitScope_Global, 0, &t, &s)
        return t.mSampleTime
    }
    func start(_ unit: AudioUnit) {
        var t = AudioTimeStamp()
        t.mFlags = .sampleTimeValid
        t.mSampleTime = -1
        _ = AudioUnitSetProperty(unit, kAudioUnitProperty_ScheduleStartTimeStamp, kAudioUnitScope_Global, 0, &t, UInt32(MemoryLayout<AudioTimeStamp>.size))
    }
    var nextSliceTime = 0.0
    var scheduled = 0, resets = 0, regions = 0
    func reschedule() {
        for k in 0..<count where pool[k].mFlags.contains(.scheduledAudioSliceFlag_Complete) {
            nextSliceTime = max(nextSliceTime, playTime(slices) + 1200)
            pool[k].mTimeStamp.mFlags = .sampleTimeValid
            pool[k].mTimeStamp.mSampleTime = nextSliceTime
            nextSliceTime += Double(frames)
            if AudioUnitSetProperty(slices, kAudioUnitProperty_ScheduleAudioSlice, kAudioUnitScope_Global, 0, pool + k,
                                    UInt32(MemoryLayout<ScheduledAudioSlice>.size)) == noErr { scheduled += 1 }
        }
    }

    var fileID: AudioFileID?
    guard AudioFileOpenURL(URL(fileURLWithPath: wav) as CFURL, .readPermission, 0, &fileID) == noErr, let file = fileID else {
        result.skipped = "the tone file did not open"
        return result
    }
    defer { AudioFileClose(file) }
    var ids: [AudioFileID?] = [file]
    _ = AudioUnitSetProperty(filePlayer, kAudioUnitProperty_ScheduledFileIDs, kAudioUnitScope_Global, 0, &ids, UInt32(MemoryLayout<AudioFileID>.size))
    func setRegion(at time: Double) {
        var stamp = AudioTimeStamp()
        stamp.mFlags = .sampleTimeValid
        stamp.mSampleTime = time
        var region = ScheduledAudioFileRegion(mTimeStamp: stamp, mCompletionProc: nil, mCompletionProcUserData: nil, mAudioFile: file,
                                              mLoopCount: 0, mStartFrame: 0, mFramesToPlay: 4410)
        if AudioUnitSetProperty(filePlayer, kAudioUnitProperty_ScheduledFileRegion, kAudioUnitScope_Global, 0, &region,
                                UInt32(MemoryLayout<ScheduledAudioFileRegion>.size)) == noErr { regions += 1 }
    }
    setRegion(at: 0)
    var prime: UInt32 = 0
    _ = AudioUnitSetProperty(filePlayer, kAudioUnitProperty_ScheduledFilePrime, kAudioUnitScope_Global, 0, &prime, 4)
    start(filePlayer)
    reschedule()
    start(slices)
    oat_mc_reset()
    guard AUGraphStart(g) == noErr else { result.skipped = "AUGraphStart failed on \(spec)"; return result }
    let t0 = monotonicSeconds()
    var lastReset = t0, lastRegion = t0
    while monotonicSeconds() - t0 < options.seconds * Double(options.cycles) {
        reschedule()
        if monotonicSeconds() - lastReset > 0.4 {
            // A seek: the schedule cleared while the graph plays, then a new start.
            if AudioUnitReset(slices, kAudioUnitScope_Global, 0) == noErr { resets += 1 }
            nextSliceTime = 0
            start(slices)
            lastReset = monotonicSeconds()
        }
        if monotonicSeconds() - lastRegion > 0.3 {
            // The file player ran dry meanwhile: a region just ahead (or just behind) the timeline.
            setRegion(at: playTime(filePlayer) + (Int(lastRegion * 10) % 2 == 0 ? 2205 : -1000))
            lastRegion = monotonicSeconds()
        }
        usleep(5_000)
    }
    probe.closeWindow.store(true, ordering: .releasing)
    usleep(300_000)   // a few more renders: the notification closes the window on the next one
    _ = AUGraphStop(g)
    note("render-alloc-bench: \(kind): \(probe.calls) renders, \(probe.measuredCalls) counted; \(scheduled) slices scheduled, \(resets) resets while playing, \(regions) regions set")
    result.measuredCalls = probe.measuredCalls
    result.measuredFrames = probe.measuredFrames
    result.requestedFrames = probe.measuredFrames
    collectAllocations(into: &result)
    return result
}
