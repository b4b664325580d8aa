// Time-pitch and player units, render notifications, property listeners, scheduled parameters
// and AudioComponentRegister through the C API, as macOS code calls them (only the import and
// the registered node, which is Swift by design, differ). Units render offline with
// AudioUnitRender.
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Foundation
import Synchronization
import Testing

/// A tone source for render callbacks that counts the frames pulled.
final class PulledTone: @unchecked Sendable {
    var frames = 0
    let hz: Double
    init(hz: Double) { self.hz = hz }
}

private func toneRender(_ refCon: UnsafeMutableRawPointer, _ flags: UnsafeMutablePointer<AudioUnitRenderActionFlags>,
                        _ time: UnsafePointer<AudioTimeStamp>, _ bus: UInt32, _ frames: UInt32,
                        _ ioData: UnsafeMutablePointer<AudioBufferList>?) -> OSStatus {
    let tone = Unmanaged<PulledTone>.fromOpaque(refCon).takeUnretainedValue()
    for buffer in UnsafeMutableAudioBufferListPointer(ioData!) {
        let p = buffer.mData!.assumingMemoryBound(to: Float.self)
        for i in 0..<Int(frames) { p[i] = Float(0.5 * sin(2 * Double.pi * tone.hz * Double(tone.frames + i) / 44100)) }
    }
    tone.frames += Int(frames)
    return noErr
}

/// Counts render notifications.
final class NotifyCount: @unchecked Sendable {
    var pre = 0
    var post = 0
    var postEnergy = 0.0
    var postFrames = 0
    var listened: [AudioUnitPropertyID] = []
}

private func countNotify(_ refCon: UnsafeMutableRawPointer, _ flags: UnsafeMutablePointer<AudioUnitRenderActionFlags>,
                         _ time: UnsafePointer<AudioTimeStamp>, _ bus: UInt32, _ frames: UInt32,
                         _ ioData: UnsafeMutablePointer<AudioBufferList>?) -> OSStatus {
    let count = Unmanaged<NotifyCount>.fromOpaque(refCon).takeUnretainedValue()
    if flags.pointee.contains(.unitRenderAction_PreRender) { count.pre += 1 }
    if flags.pointee.contains(.unitRenderAction_PostRender) {
        count.post += 1
        count.postFrames += Int(frames)
        let p = UnsafeMutableAudioBufferListPointer(ioData!)[0].mData!.assumingMemoryBound(to: Float.self)
        for i in 0..<Int(frames) { count.postEnergy += Double(p[i] * p[i]) }
    }
    return noErr
}

private func listener(_ refCon: UnsafeMutableRawPointer, _ unit: AudioUnit, _ id: AudioUnitPropertyID, _ scope: AudioUnitScope, _ element: AudioUnitElement) {
    Unmanaged<NotifyCount>.fromOpaque(refCon).takeUnretainedValue().listened.append(id)
}

/// Halves its input: a unit implemented in Swift and registered with AudioComponentRegister.
final class HalvingNode: OATUnits.RenderNode, @unchecked Sendable {
    init() { super.init(name: "halver", inputChannels: [2], outputChannels: [2]) }
    override func render(_ context: AURenderContext) {
        let input = context.pullInput(0, frames: context.frames)
        let out = context.output(0)
        for c in 0..<out.channelCount { for f in 0..<context.frames { out[c][f] = input[c][f] * 0.5 } }
    }
}

/// Renders `slices` slices of `frames` frames from a unit; returns the left channel.
private func render(_ unit: AudioUnit, slices: Int, frames: Int = 1024, each: ((Int) -> Void)? = nil) -> [Float] {
    var left: [Float] = []
    var l = [Float](repeating: 0, count: frames), r = [Float](repeating: 0, count: frames)
    let list = AudioBufferList.allocate(maximumBuffers: 2)
    defer { free(list.unsafeMutablePointer) }
    for s in 0..<slices {
        renderStereoSlice(unit, at: s * frames, &l, &r, list: list)
        left += l
        each?(s)
    }
    return left
}

private func newUnit(_ type: UInt32, _ subType: UInt32, manufacturer: UInt32 = kAudioUnitManufacturer_Apple) throws -> AudioUnit {
    var desc = AudioComponentDescription(componentType: type, componentSubType: subType, componentManufacturer: manufacturer,
                                         componentFlags: 0, componentFlagsMask: 0)
    let component = try #require(AudioComponentFindNext(nil, &desc))
    var unit: AudioUnit?
    #expect(AudioComponentInstanceNew(component, &unit) == noErr)
    return try #require(unit)
}

@Suite struct AudioUnitExtrasCompatTests {
    /// NewTimePitch at rate 2 pulls twice the input it outputs (steady state, within 1%); at
    /// pitch +1200 cents a 440 Hz tone comes out at 880 Hz. Render notifications see every
    /// render, the post-render one with the audio.
    @Test func timePitchUnitRateAndPitch() throws {
        let unit = try newUnit(kAudioUnitType_FormatConverter, kAudioUnitSubType_NewTimePitch)
        defer { AudioComponentInstanceDispose(unit) }
        let tone = PulledTone(hz: 440)
        var callback = AURenderCallbackStruct(inputProc: toneRender, inputProcRefCon: Unmanaged.passUnretained(tone).toOpaque())
        #expect(AudioUnitSetProperty(unit, kAudioUnitProperty_SetRenderCallback, kAudioUnitScope_Input, 0, &callback,
                                     UInt32(MemoryLayout<AURenderCallbackStruct>.size)) == noErr)
        #expect(AudioUnitSetParameter(unit, kNewTimePitchParam_Rate, kAudioUnitScope_Global, 0, 2, 0) == noErr)
        let count = NotifyCount()
        #expect(AudioUnitAddRenderNotify(unit, countNotify, Unmanaged.passUnretained(count).toOpaque()) == noErr)
        #expect(AudioUnitInitialize(unit) == noErr)
        var pulledAt20 = 0
        let out = render(unit, slices: 150) { s in if s == 19 { pulledAt20 = tone.frames } }
        let ratio = Double(tone.frames - pulledAt20) / Double(130 * 1024)
        print("NewTimePitch rate 2: input/output \(ratio)")
        #expect(abs(ratio - 2) < 0.02)
        #expect(abs(dominantHz(Array(out[40_000...]), rate: 44100) - 440) < 4.4)
        #expect(count.pre == 150 && count.post == 150 && count.postEnergy > 1000)
        #expect(AudioUnitRemoveRenderNotify(unit, countNotify, Unmanaged.passUnretained(count).toOpaque()) == noErr)
        _ = render(unit, slices: 2)
        #expect(count.pre == 150)

        // Pitch through AudioUnitScheduleParameters (immediate events).
        var events = [
            AudioUnitParameterEvent(scope: kAudioUnitScope_Global, element: 0, parameter: kNewTimePitchParam_Rate, eventType: kParameterEvent_Immediate,
                                    eventValues: .init(immediate: .init(bufferOffset: 0, value: 1))),
            AudioUnitParameterEvent(scope: kAudioUnitScope_Global, element: 0, parameter: kNewTimePitchParam_Pitch, eventType: kParameterEvent_Ramped,
                                    eventValues: .init(ramp: .init(startBufferOffset: 0, durationInFrames: 512, startValue: 0, endValue: 1200))),
        ]
        #expect(AudioUnitScheduleParameters(unit, &events, 2) == noErr)
        var pitch: AudioUnitParameterValue = 0
        #expect(AudioUnitGetParameter(unit, kNewTimePitchParam_Pitch, kAudioUnitScope_Global, 0, &pitch) == noErr && pitch == 1200)
        let shifted = render(unit, slices: 80)
        let f = dominantHz(Array(shifted[30_000...]), rate: 44100)
        #expect(abs(1200 * log2(f / 440) - 1200) < 10, "\(f) Hz")
        #expect(AudioUnitSetParameter(unit, kNewTimePitchParam_Rate, kAudioUnitScope_Global, 0, 40, 0) == kAudioUnitErr_InvalidParameter)
    }

    /// Property listeners hear changes made through AudioUnitSetProperty until removed.
    @Test func propertyListeners() throws {
        let unit = try newUnit(kAudioUnitType_FormatConverter, kAudioUnitSubType_TimePitch)
        defer { AudioComponentInstanceDispose(unit) }
        let count = NotifyCount()
        let user = Unmanaged.passUnretained(count).toOpaque()
        #expect(AudioUnitAddPropertyListener(unit, kAudioUnitProperty_MaximumFramesPerSlice, listener, user) == noErr)
        var frames: UInt32 = 2048
        #expect(AudioUnitSetProperty(unit, kAudioUnitProperty_MaximumFramesPerSlice, kAudioUnitScope_Global, 0, &frames, 4) == noErr)
        var format = AudioStreamBasicDescription()
        var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
        #expect(AudioUnitGetProperty(unit, kAudioUnitProperty_StreamFormat, kAudioUnitScope_Input, 0, &format, &size) == noErr)
        #expect(AudioUnitSetProperty(unit, kAudioUnitProperty_StreamFormat, kAudioUnitScope_Input, 0, &format, size) == noErr)
        #expect(count.listened == [kAudioUnitProperty_MaximumFramesPerSlice])
        #expect(AudioUnitRemovePropertyListenerWithUserData(unit, kAudioUnitProperty_MaximumFramesPerSlice, listener, user) == noErr)
        frames = 1024
        #expect(AudioUnitSetProperty(unit, kAudioUnitProperty_MaximumFramesPerSlice, kAudioUnitScope_Global, 0, &frames, 4) == noErr)
        #expect(count.listened.count == 1)
    }

    /// An AudioFilePlayer unit plays a WAV region exactly (the samples of the file, then
    /// silence), reports its play time (its timeline), and calls the region's completion proc.
    @Test(.requires(corpusMissing)) func audioFilePlayerPlaysARegion() throws {
        let path = try corpusFile("ffmpeg-generated/wav/pcm_s16le_listinfo.wav")
        let unit = try newUnit(kAudioUnitType_Generator, kAudioUnitSubType_AudioFilePlayer)
        defer { AudioComponentInstanceDispose(unit) }
        var bufferFrames: UInt32 = 262_144
        #expect(AudioUnitSetProperty(unit, kAudioUnitProperty_ScheduledFileBufferSizeFrames, kAudioUnitScope_Global, 0, &bufferFrames, 4) == noErr)
        #expect(AudioUnitInitialize(unit) == noErr)
        var fileID: AudioFileID?
        #expect(AudioFileOpenURL(URL(fileURLWithPath: path) as CFURL, .readPermission, 0, &fileID) == noErr)
        let file = try #require(fileID)
        defer { AudioFileClose(file) }
        var ids: [AudioFileID?] = [file]
        #expect(AudioUnitSetProperty(unit, kAudioUnitProperty_ScheduledFileIDs, kAudioUnitScope_Global, 0, &ids,
                                     UInt32(MemoryLayout<AudioFileID>.size)) == noErr)
        let doneBox = DoneFlag()
        var region = ScheduledAudioFileRegion(mTimeStamp: AudioTimeStamp(), mCompletionProc: nil, mCompletionProcUserData: nil,
                                              mAudioFile: file, mLoopCount: 0, mStartFrame: 1000, mFramesToPlay: 100_000)
        region.mTimeStamp.mFlags = kAudioTimeStampSampleTimeValid
        region.mTimeStamp.mSampleTime = 0
        region.mCompletionProc = { user, _, status in
            Unmanaged<DoneFlag>.fromOpaque(user!).takeUnretainedValue().done.withLock { $0 = status == noErr }
        }
        region.mCompletionProcUserData = Unmanaged.passUnretained(doneBox).toOpaque()
        #expect(AudioUnitSetProperty(unit, kAudioUnitProperty_ScheduledFileRegion, kAudioUnitScope_Global, 0, &region,
                                     UInt32(MemoryLayout<ScheduledAudioFileRegion>.size)) == noErr)
        var prime: UInt32 = 120_000
        #expect(AudioUnitSetProperty(unit, kAudioUnitProperty_ScheduledFilePrime, kAudioUnitScope_Global, 0, &prime, 4) == noErr)
        var start = AudioTimeStamp()
        start.mFlags = kAudioTimeStampSampleTimeValid
        start.mSampleTime = -1
        #expect(AudioUnitSetProperty(unit, kAudioUnitProperty_ScheduleStartTimeStamp, kAudioUnitScope_Global, 0, &start,
                                     UInt32(MemoryLayout<AudioTimeStamp>.size)) == noErr)
        let left = render(unit, slices: 100)
        // The file's left channel from frame 1000, as Float32.
        var wav = [Int16](repeating: 0, count: 2 * 101_000)
        var bytes = UInt32(wav.count * 2)
        var packets: UInt32 = 101_000
        _ = wav.withUnsafeMutableBytes { AudioFileReadPacketData(file, false, &bytes, nil, 0, &packets, $0.baseAddress) }
        var exact = true
        for i in 0..<100_000 where left[i] != Float(wav[2 * (1000 + i)]) / 32768 { exact = false }
        #expect(exact)
        #expect(left[100_000...].allSatisfy { $0 == 0 })
        var now = AudioTimeStamp()
        var size = UInt32(MemoryLayout<AudioTimeStamp>.size)
        #expect(AudioUnitGetProperty(unit, kAudioUnitProperty_CurrentPlayTime, kAudioUnitScope_Global, 0, &now, &size) == noErr)
        // The timeline: every frame rendered since the start, the silence after the region too
        // (Apple: "the unit's current time offset from its start time"; the slice player's too).
        #expect(now.mSampleTime == 102_400)
        #expect(doneBox.done.withLock { $0 })
    }

    /// A ScheduledSoundPlayer plays a scheduled slice.
    @Test func scheduledSoundPlayerPlaysASlice() throws {
        let unit = try newUnit(kAudioUnitType_Generator, kAudioUnitSubType_ScheduledSoundPlayer)
        defer { AudioComponentInstanceDispose(unit) }
        #expect(AudioUnitInitialize(unit) == noErr)
        var l = (0..<4096).map { Float($0) / 4096 }, r = (0..<4096).map { -Float($0) / 4096 }
        let list = AudioBufferList.allocate(maximumBuffers: 2)
        defer { free(list.unsafeMutablePointer) }
        // Apple's Swift types the user data non-optional: any pointer does when there is no proc.
        var slice = ScheduledAudioSlice(mTimeStamp: AudioTimeStamp(), mCompletionProc: nil, mCompletionProcUserData: list.unsafeMutablePointer,
                                        mFlags: [], mReserved: 0, mReserved2: nil, mNumberFrames: 4096, mBufferList: list.unsafeMutablePointer)
        let status = l.withUnsafeMutableBytes { lb in
            r.withUnsafeMutableBytes { rb -> OSStatus in
                list[0] = AudioBuffer(mNumberChannels: 1, mDataByteSize: UInt32(lb.count), mData: lb.baseAddress)
                list[1] = AudioBuffer(mNumberChannels: 1, mDataByteSize: UInt32(rb.count), mData: rb.baseAddress)
                return AudioUnitSetProperty(unit, kAudioUnitProperty_ScheduleAudioSlice, kAudioUnitScope_Global, 0, &slice,
                                            UInt32(MemoryLayout<ScheduledAudioSlice>.size))
            }
        }
        // Complete only once played (AudioUnitFidelityTests checks the flags with a slice that outlives the call).
        #expect(status == noErr)
        var start = AudioTimeStamp()
        start.mFlags = kAudioTimeStampSampleTimeValid
        start.mSampleTime = -1
        #expect(AudioUnitSetProperty(unit, kAudioUnitProperty_ScheduleStartTimeStamp, kAudioUnitScope_Global, 0, &start,
                                     UInt32(MemoryLayout<AudioTimeStamp>.size)) == noErr)
        let left = render(unit, slices: 5)
        #expect(Array(left[0..<4096]) == l)
        #expect(left[4096...].allSatisfy { $0 == 0 })
    }

    /// A Swift node registered with AudioComponentRegister is found and works like a built-in
    /// unit; music device calls on it answer that it is not a music device.
    @Test func componentRegisterAndMusicDevice() throws {
        var desc = AudioComponentDescription(componentType: kAudioUnitType_Effect, componentSubType: 0x6861_6C66 /* 'half' */,
                                             componentManufacturer: 0x7465_7374 /* 'test' */, componentFlags: 0, componentFlagsMask: 0)
        let component = AudioComponentRegister(&desc, "Test: halver", 1) { _ in HalvingNode() }
        var found = AudioComponentDescription()
        #expect(AudioComponentGetDescription(component, &found) == noErr && found == desc)
        let unit = try newUnit(kAudioUnitType_Effect, 0x6861_6C66, manufacturer: 0x7465_7374)
        defer { AudioComponentInstanceDispose(unit) }
        let tone = PulledTone(hz: 1000)
        var callback = AURenderCallbackStruct(inputProc: toneRender, inputProcRefCon: Unmanaged.passUnretained(tone).toOpaque())
        #expect(AudioUnitSetProperty(unit, kAudioUnitProperty_SetRenderCallback, kAudioUnitScope_Input, 0, &callback,
                                     UInt32(MemoryLayout<AURenderCallbackStruct>.size)) == noErr)
        #expect(AudioUnitInitialize(unit) == noErr)
        let out = render(unit, slices: 4)
        let peak = out.map { abs($0) }.max() ?? 0
        #expect(abs(peak - 0.25) < 0.01, "peak \(peak)")
        // An effect is not a music device: the Component Manager's badComponentSelector.
        #expect(MusicDeviceMIDIEvent(unit, 0x90, 60, 100, 0) == OSStatus(bitPattern: 0x8000_8002))
        var music = AudioComponentDescription(componentType: kAudioUnitType_MusicDevice, componentSubType: 0, componentManufacturer: 0,
                                              componentFlags: 0, componentFlagsMask: 0)
        let first = try #require(AudioComponentFindNext(nil, &music))
        var firstDesc = AudioComponentDescription()
        #expect(AudioComponentGetDescription(first, &firstDesc) == noErr && firstDesc.componentSubType == kAudioUnitSubType_Sampler)
    }

    /// Apple's dynamics and reverb parameter IDs our DSP lacks are refused as parameters.
    @Test func parametersWithoutControls() throws {
        let dynamics = try newUnit(kAudioUnitType_Effect, kAudioUnitSubType_DynamicsProcessor)
        defer { AudioComponentInstanceDispose(dynamics) }
        #expect(AudioUnitSetParameter(dynamics, kDynamicsProcessorParam_Threshold, kAudioUnitScope_Global, 0, -30, 0) == noErr)
        #expect(AudioUnitSetParameter(dynamics, kDynamicsProcessorParam_HeadRoom, kAudioUnitScope_Global, 0, 5, 0) == kAudioUnitErr_InvalidParameter)
        #expect(kDynamicsProcessorParam_ExpansionRatio == 2 && kDynamicsProcessorParam_CompressionAmount == 1000)
        let reverb = try newUnit(kAudioUnitType_Effect, kAudioUnitSubType_Reverb2)
        defer { AudioComponentInstanceDispose(reverb) }
        var value: AudioUnitParameterValue = 0
        #expect(AudioUnitGetParameter(reverb, kReverb2Param_MaxDelayTime, kAudioUnitScope_Global, 0, &value) == kAudioUnitErr_InvalidParameter)
        #expect(kReverb2Param_MinDelayTime == 2 && kReverb2Param_RandomizeReflections == 6)
    }
}

/// A flag the completion proc sets from the player's thread.
final class DoneFlag: Sendable {
    let done = Locked(false)
}

extension AudioUnitExtrasCompatTests {
    /// An AUGraph: AudioFilePlayer -> NewTimePitch (pitch 0, rate 1: passes through) ->
    /// GenericOutput, rendered with AudioUnitRender on the output unit: the file's samples come
    /// out in order, and the graph's render notifications run around every render.
    @Test(.requires(corpusMissing)) func filePlayerInAGraphWithRenderNotify() throws {
        let path = try corpusFile("ffmpeg-generated/wav/pcm_s16le_listinfo.wav")
        let pg = try PlayerUnitGraph(kAudioUnitSubType_AudioFilePlayer)
        let g = pg.graph, p = pg.player, o = pg.output
        defer { DisposeAUGraph(g) }
        var bufferFrames: UInt32 = 131_072
        #expect(AudioUnitSetProperty(p, kAudioUnitProperty_ScheduledFileBufferSizeFrames, kAudioUnitScope_Global, 0, &bufferFrames, 4) == noErr)
        let count = NotifyCount()
        #expect(AUGraphAddRenderNotify(g, countNotify, Unmanaged.passUnretained(count).toOpaque()) == noErr)
        #expect(AUGraphInitialize(g) == noErr)

        var fileID: AudioFileID?
        #expect(AudioFileOpenURL(URL(fileURLWithPath: path) as CFURL, .readPermission, 0, &fileID) == noErr)
        let file = try #require(fileID)
        defer { AudioFileClose(file) }
        var ids: [AudioFileID?] = [file]
        #expect(AudioUnitSetProperty(p, kAudioUnitProperty_ScheduledFileIDs, kAudioUnitScope_Global, 0, &ids, UInt32(MemoryLayout<AudioFileID>.size)) == noErr)
        var packets: UInt64 = 0
        var size = UInt32(8)
        #expect(AudioFileGetProperty(file, kAudioFilePropertyAudioDataPacketCount, &size, &packets) == noErr)
        var region = ScheduledAudioFileRegion(mTimeStamp: AudioTimeStamp(), mCompletionProc: nil, mCompletionProcUserData: nil,
                                              mAudioFile: file, mLoopCount: 0, mStartFrame: 0, mFramesToPlay: UInt32(packets))
        region.mTimeStamp.mFlags = kAudioTimeStampSampleTimeValid
        #expect(AudioUnitSetProperty(p, kAudioUnitProperty_ScheduledFileRegion, kAudioUnitScope_Global, 0, &region,
                                     UInt32(MemoryLayout<ScheduledAudioFileRegion>.size)) == noErr)
        var prime: UInt32 = 65536   // more than the test renders: no dependence on the feeder's pace
        #expect(AudioUnitSetProperty(p, kAudioUnitProperty_ScheduledFilePrime, kAudioUnitScope_Global, 0, &prime, 4) == noErr)
        var start = AudioTimeStamp()
        start.mFlags = kAudioTimeStampSampleTimeValid
        start.mSampleTime = -1
        #expect(AudioUnitSetProperty(p, kAudioUnitProperty_ScheduleStartTimeStamp, kAudioUnitScope_Global, 0, &start,
                                     UInt32(MemoryLayout<AudioTimeStamp>.size)) == noErr)
        var rendered: [Float] = []
        for _ in 0..<10 {
            rendered += render(o, slices: 4)
            usleep(2000)
        }
        var wav = [Int16](repeating: 0, count: 2 * 40960)
        var bytes = UInt32(wav.count * 2)
        var n: UInt32 = 40960
        _ = wav.withUnsafeMutableBytes { AudioFileReadPacketData(file, false, &bytes, nil, 0, &n, $0.baseAddress) }
        var exact = true
        for i in 0..<40960 where rendered[i] != Float(wav[2 * i]) / 32768 { exact = false }
        #expect(exact)
        // The post-render notifications saw exactly the audio rendered.
        let energy = rendered.reduce(0.0) { $0 + Double($1 * $1) }
        #expect(count.pre == 40 && count.post == 40)
        #expect(energy > 0 && abs(count.postEnergy - energy) <= 1e-6 * energy, "\(count.postEnergy) vs \(energy)")
    }
}

extension CompatSeedTests {
    /// A RemoteIO-style output unit playing to OAT_OUTPUT=wav:...: its render notifications run
    /// around every device render, and the post-render ones see exactly the frames and audio
    /// that reach the WAV.
    @Test("AudioUnitAddRenderNotify on an output unit playing to a device")
    func renderNotifyOnAPlayingOutputUnit() throws {
        let wav = temporaryWAV("notify")
        setenv("OAT_OUTPUT", "wav:" + wav, 1)
        defer { unsetenv("OAT_OUTPUT"); remove(wav) }
        let unit = try newUnit(kAudioUnitType_Output, kAudioUnitSubType_DefaultOutput)
        defer { AudioComponentInstanceDispose(unit) }
        let tone = PulledTone(hz: 440)
        var callback = AURenderCallbackStruct(inputProc: toneRender, inputProcRefCon: Unmanaged.passUnretained(tone).toOpaque())
        #expect(AudioUnitSetProperty(unit, kAudioUnitProperty_SetRenderCallback, kAudioUnitScope_Input, 0, &callback,
                                     UInt32(MemoryLayout<AURenderCallbackStruct>.size)) == noErr)
        let count = NotifyCount()
        #expect(AudioUnitAddRenderNotify(unit, countNotify, Unmanaged.passUnretained(count).toOpaque()) == noErr)
        #expect(AudioUnitAddPropertyListener(unit, kAudioOutputUnitProperty_IsRunning, listener, Unmanaged.passUnretained(count).toOpaque()) == noErr)
        #expect(AudioUnitInitialize(unit) == noErr)
        #expect(AudioOutputUnitStart(unit) == noErr)
        usleep(300_000)
        #expect(AudioOutputUnitStop(unit) == noErr)
        #expect(count.listened == [kAudioOutputUnitProperty_IsRunning, kAudioOutputUnitProperty_IsRunning])
        let (samples, channels) = readFloatWAV(wav)
        let frames = samples.count / max(1, channels)
        var energy = 0.0
        for f in 0..<frames { energy += Double(samples[f * channels] * samples[f * channels]) }
        print("render notify on a playing output unit: \(count.pre) pre, \(count.post) post, \(count.postFrames) frames; WAV \(frames) frames")
        #expect(count.pre > 0 && count.pre == count.post)
        #expect(frames > 0 && count.postFrames == frames)
        #expect(abs(count.postEnergy - energy) <= 1e-6 * max(1, energy))
    }
}
