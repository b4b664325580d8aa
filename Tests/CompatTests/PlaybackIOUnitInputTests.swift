// Input on an I/O unit through the C API, written as an iOS/macOS app would: RemoteIO (and
// VoiceProcessingIO) with kAudioOutputUnitProperty_EnableIO on element 1, an input callback
// that pulls the microphone with AudioUnitRender(unit, flags, ts, 1, frames, &bufferList) and a
// render callback that plays. On Linux the "speaker" is a private PulseAudio daemon's null sink
// and the "microphone" its monitor (OAT_OUTPUT / OAT_INPUT), so what is captured is what was
// played, one round trip later; the captured audio is checked by analysis.
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import OATTestSupport
import Foundation
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The app side: an I/O unit that plays `signal` and records the microphone (mono Int16).
final class IOUnitRecorder: @unchecked Sendable {
    let sampleRate: Double
    let signal: @Sendable (Int) -> Float
    var unit: AudioUnit?
    var played = 0                                   // I/O thread only
    let capacity: Int
    let captured: UnsafeMutablePointer<Int16>        // written on the I/O thread
    let capturedCount = Atomic<Int>(0)
    let renderFailure = Atomic<Int32>(0)

    init(sampleRate: Double, seconds: Double, signal: @escaping @Sendable (Int) -> Float) {
        self.sampleRate = sampleRate
        self.signal = signal
        capacity = Int(sampleRate * seconds)
        captured = .allocate(capacity: capacity)
        captured.initialize(repeating: 0, count: capacity)
    }

    deinit { captured.deallocate() }

    /// The usual set-up sequence; returns the first failing status.
    func setUp(subType: UInt32) -> OSStatus {
        var desc = AudioComponentDescription()
        desc.componentType = kAudioUnitType_Output
        desc.componentSubType = subType
        desc.componentManufacturer = kAudioUnitManufacturer_Apple
        guard let component = AudioComponentFindNext(nil, &desc) else { return -1 }
        var status = AudioComponentInstanceNew(component, &unit)
        guard status == noErr, let unit else { return status }
        var one: UInt32 = 1
        status = AudioUnitSetProperty(unit, kAudioOutputUnitProperty_EnableIO, kAudioUnitScope_Input, 1, &one, UInt32(MemoryLayout<UInt32>.size))
        guard status == noErr else { return status }
        status = AudioUnitSetProperty(unit, kAudioOutputUnitProperty_EnableIO, kAudioUnitScope_Output, 0, &one, UInt32(MemoryLayout<UInt32>.size))
        guard status == noErr else { return status }
        // What we play: Float32, non-interleaved stereo.
        var playFormat = AudioStreamBasicDescription()
        playFormat.mSampleRate = sampleRate
        playFormat.mFormatID = kAudioFormatLinearPCM
        playFormat.mFormatFlags = kAudioFormatFlagIsFloat | kAudioFormatFlagIsPacked | kAudioFormatFlagIsNonInterleaved
        playFormat.mBytesPerPacket = 4
        playFormat.mFramesPerPacket = 1
        playFormat.mBytesPerFrame = 4
        playFormat.mChannelsPerFrame = 2
        playFormat.mBitsPerChannel = 32
        status = AudioUnitSetProperty(unit, kAudioUnitProperty_StreamFormat, kAudioUnitScope_Input, 0, &playFormat, UInt32(MemoryLayout<AudioStreamBasicDescription>.size))
        guard status == noErr else { return status }
        // What we record: 16-bit mono, the microphone side (output scope of element 1).
        var micFormat = AudioStreamBasicDescription()
        micFormat.mSampleRate = sampleRate
        micFormat.mFormatID = kAudioFormatLinearPCM
        micFormat.mFormatFlags = kAudioFormatFlagIsSignedInteger | kAudioFormatFlagIsPacked
        micFormat.mBytesPerPacket = 2
        micFormat.mFramesPerPacket = 1
        micFormat.mBytesPerFrame = 2
        micFormat.mChannelsPerFrame = 1
        micFormat.mBitsPerChannel = 16
        status = AudioUnitSetProperty(unit, kAudioUnitProperty_StreamFormat, kAudioUnitScope_Output, 1, &micFormat, UInt32(MemoryLayout<AudioStreamBasicDescription>.size))
        guard status == noErr else { return status }
        let refCon = Unmanaged.passUnretained(self).toOpaque()
        var input = AURenderCallbackStruct(inputProc: recorderInputCallback, inputProcRefCon: refCon)
        status = AudioUnitSetProperty(unit, kAudioOutputUnitProperty_SetInputCallback, kAudioUnitScope_Global, 1, &input, UInt32(MemoryLayout<AURenderCallbackStruct>.size))
        guard status == noErr else { return status }
        var render = AURenderCallbackStruct(inputProc: recorderRenderCallback, inputProcRefCon: refCon)
        status = AudioUnitSetProperty(unit, kAudioUnitProperty_SetRenderCallback, kAudioUnitScope_Input, 0, &render, UInt32(MemoryLayout<AURenderCallbackStruct>.size))
        guard status == noErr else { return status }
        return AudioUnitInitialize(unit)
    }

    /// The recording so far, as Float.
    func recording() -> [Float] {
        (0..<capturedCount.load(ordering: .acquiring)).map { Float(captured[$0]) / 32768 }
    }
}

/// Input callback: input is available; pull it with AudioUnitRender on element 1 into a list
/// whose mData is NULL (the unit supplies the memory, as on iOS).
private func recorderInputCallback(_ inRefCon: UnsafeMutableRawPointer, _ ioActionFlags: UnsafeMutablePointer<AudioUnitRenderActionFlags>,
                                   _ inTimeStamp: UnsafePointer<AudioTimeStamp>, _ inBusNumber: UInt32, _ inNumberFrames: UInt32,
                                   _ ioData: UnsafeMutablePointer<AudioBufferList>?) -> OSStatus {
    let recorder = Unmanaged<IOUnitRecorder>.fromOpaque(inRefCon).takeUnretainedValue()
    guard let unit = recorder.unit else { return noErr }
    var list = AudioBufferList(mNumberBuffers: 1, mBuffers: AudioBuffer(mNumberChannels: 1, mDataByteSize: inNumberFrames * 2, mData: nil))
    let status = AudioUnitRender(unit, ioActionFlags, inTimeStamp, 1, inNumberFrames, &list)
    guard status == noErr, let data = list.mBuffers.mData else {
        recorder.renderFailure.store(status, ordering: .relaxed)
        return status
    }
    let samples = data.assumingMemoryBound(to: Int16.self)
    let at = recorder.capturedCount.load(ordering: .relaxed)
    let n = min(Int(list.mBuffers.mDataByteSize) / 2, recorder.capacity - at)
    if n > 0 { (recorder.captured + at).update(from: samples, count: n) }
    recorder.capturedCount.store(at + max(0, n), ordering: .releasing)
    return noErr
}

/// Render callback: plays the test signal on both channels.
private func recorderRenderCallback(_ inRefCon: UnsafeMutableRawPointer, _ ioActionFlags: UnsafeMutablePointer<AudioUnitRenderActionFlags>,
                                    _ inTimeStamp: UnsafePointer<AudioTimeStamp>, _ inBusNumber: UInt32, _ inNumberFrames: UInt32,
                                    _ ioData: UnsafeMutablePointer<AudioBufferList>?) -> OSStatus {
    let recorder = Unmanaged<IOUnitRecorder>.fromOpaque(inRefCon).takeUnretainedValue()
    let list = UnsafeMutableAudioBufferListPointer(ioData!)
    for i in 0..<Int(inNumberFrames) {
        let v = recorder.signal(recorder.played + i)
        for b in list { b.mData!.assumingMemoryBound(to: Float.self)[i] = v }
    }
    recorder.played += Int(inNumberFrames)
    return noErr
}

/// The amplitude of the `freq` component of `x[from..<from+count]` (Goertzel, whole periods).
private func goertzel(_ x: [Float], freq: Double, rate: Double, from: Int, count: Int) -> Double {
    let periods = (Double(count) * freq / rate).rounded(.down)
    let n = min(max(1, Int((periods * rate / freq).rounded())), max(0, x.count - from))
    let k = 2 * cos(2 * Double.pi * freq / rate)
    var s1 = 0.0, s2 = 0.0
    for i in 0..<n {
        let s = Double(x[from + i]) + k * s1 - s2
        s2 = s1
        s1 = s
    }
    return 2 * (s1 * s1 + s2 * s2 - k * s1 * s2).squareRoot() / Double(max(1, n))
}

private func rmsOf(_ x: ArraySlice<Float>) -> Double {
    guard !x.isEmpty else { return 0 }
    return (x.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(x.count)).squareRoot()
}

/// Plays 700 Hz bursts into the daemon's sink with `pacat` (another client): the near-end talker.
private func playNearEnd(daemon: PulseTestDaemon, seconds: Double) throws -> ChildProcess {
    let rate = 48000
    var samples = [Float](repeating: 0, count: Int(seconds * Double(rate)))
    for i in samples.indices where i % (rate / 2) < rate / 5 {
        samples[i] = Float(0.1 * sin(2 * Double.pi * 700 * Double(i) / Double(rate)))
    }
    let path = "\(daemon.directory)/near-end.raw"
    _ = FileManager.default.createFile(atPath: path, contents: samples.withUnsafeBytes { Data($0) })
    let pacat = try #require(ChildProcess.which("pacat"), "pacat is not installed (pulseaudio-utils)")
    return try ChildProcess.spawn(pacat, ["--playback", "-d", daemon.sinkName, "--raw", "--format=float32le", "--rate=\(rate)",
                                          "--channels=1", "--latency-msec=20", path],
                                  environment: daemon.environment, outputPath: "\(daemon.directory)/pacat.log")
}

/// The unit's output and input are the private daemon's null sink and its monitor.
@Suite("PlaybackIOUnitInputTests", .serialized, .requires(TestResource.pulseAudioMissing))
struct PlaybackIOUnitInputTests {
    /// Runs `body` with OAT_OUTPUT/OAT_INPUT/PULSE_SERVER pointing at a fresh daemon.
    func withLoopback(_ body: (PulseTestDaemon) throws -> Void) throws {
        let daemon = try PulseTestDaemon(sampleRate: 48000, channels: 2)
        defer { daemon.stop() }
        setenv("OAT_OUTPUT", "pulse:\(daemon.sinkName)", 1)
        setenv("OAT_INPUT", "pulse:\(daemon.monitorSource)", 1)
        setenv("PULSE_SERVER", daemon.server, 1)
        defer { unsetenv("OAT_OUTPUT"); unsetenv("OAT_INPUT"); unsetenv("PULSE_SERVER") }
        try body(daemon)
    }

    @Test func remoteIOInputCallbackPullsTheCapturedMicrophone() throws {
        try withLoopback { _ in
            let rate = 48000.0
            let recorder = IOUnitRecorder(sampleRate: rate, seconds: 10) { n in Float(0.3 * sin(2 * Double.pi * 1000 * Double(n) / rate)) }
            #expect(recorder.setUp(subType: kAudioUnitSubType_RemoteIO) == noErr)
            let unit = try #require(recorder.unit)
            defer { AudioComponentInstanceDispose(unit) }
            var size = UInt32(4)
            var enabled: UInt32 = 0
            #expect(AudioUnitGetProperty(unit, kAudioOutputUnitProperty_EnableIO, kAudioUnitScope_Input, 1, &enabled, &size) == noErr && enabled == 1)
            #expect(AudioOutputUnitStart(unit) == noErr)
            usleep(2_000_000)
            #expect(AudioOutputUnitStop(unit) == noErr)
            #expect(recorder.renderFailure.load(ordering: .relaxed) == noErr)
            let mic = recorder.recording()
            print("RemoteIO input: \(mic.count) frames captured")
            if let path = getenv("OAT_DUMP_MIC") { _ = FileManager.default.createFile(atPath: String(cString: path), contents: mic.withUnsafeBytes { Data($0) }) }
            #expect(mic.count > Int(rate * 1.5), "captured \(mic.count) frames in 2 s")
            let first = try #require(mic.firstIndex { abs($0) > 0.05 }, "the microphone heard nothing")
            // The played tone comes back: 1 kHz at 0.3 (both channels, averaged to mono), to 0.5 dB.
            let windows = (0..<4).map { goertzel(mic, freq: 1000, rate: rate, from: first + 2400 + $0 * 4800, count: 4800) }
            let amplitude = windows.sorted()[1]
            print("RemoteIO input: 1 kHz at \(String(format: "%.2f", 20 * log10(amplitude / 0.3))) dB re played")
            #expect(abs(20 * log10(amplitude / 0.3)) < 0.5, "amplitude \(amplitude)")
            #expect(goertzel(mic, freq: 1500, rate: rate, from: first + 2400, count: 9600) < 0.003)
        }
    }

    @Test func voiceProcessingIOCancelsWhatItPlaysAndBypassLetsItThrough() throws {
        try withLoopback { daemon in
            let rate = 48000.0
            // Broadband far-end signal (the "remote talker"): deterministic noise at about -23 dBFS RMS.
            let recorder = IOUnitRecorder(sampleRate: rate, seconds: 16) { n in
                var x = UInt32(truncatingIfNeeded: n &* 747_796_405 &+ 2_891_336_453)
                x = ((x >> ((x >> 28) &+ 4)) ^ x) &* 277_803_737
                x = (x >> 22) ^ x
                return (Float(x) / Float(UInt32.max) - 0.5) * 0.25
            }
            #expect(recorder.setUp(subType: kAudioUnitSubType_VoiceProcessingIO) == noErr)
            let unit = try #require(recorder.unit)
            defer { AudioComponentInstanceDispose(unit) }
            var bypass: UInt32 = 0
            #expect(AudioUnitSetProperty(unit, kAUVoiceIOProperty_BypassVoiceProcessing, kAudioUnitScope_Global, 1, &bypass, 4) == noErr)
            #expect(AudioOutputUnitStart(unit) == noErr)
            usleep(3_000_000)                        // converge on the far end alone
            // The near-end talker: 700 Hz bursts (0.2 s on, 0.3 s off, 0.1 peak) played into the
            // sink by another client, so they reach the microphone but are not in the reference.
            let burstStart = recorder.capturedCount.load(ordering: .acquiring)
            let talker = try playNearEnd(daemon: daemon, seconds: 2)
            usleep(2_300_000)
            talker.terminate()
            let burstEnd = recorder.capturedCount.load(ordering: .acquiring)
            // Far end alone again: SpeexDSP has no double-talk detector, so the talker can upset
            // the adaptive filter (it then resets itself); give it time to converge again.
            usleep(2_500_000)
            let processedEnd = recorder.capturedCount.load(ordering: .acquiring)
            bypass = 1
            #expect(AudioUnitSetProperty(unit, kAUVoiceIOProperty_BypassVoiceProcessing, kAudioUnitScope_Global, 1, &bypass, 4) == noErr)
            var check: UInt32 = 0
            var size = UInt32(4)
            #expect(AudioUnitGetProperty(unit, kAUVoiceIOProperty_BypassVoiceProcessing, kAudioUnitScope_Global, 1, &check, &size) == noErr && check == 1)
            usleep(2_000_000)
            #expect(AudioOutputUnitStop(unit) == noErr)
            #expect(recorder.renderFailure.load(ordering: .relaxed) == noErr)
            let mic = recorder.recording()
            if let path = getenv("OAT_DUMP_MIC") { _ = FileManager.default.createFile(atPath: String(cString: path), contents: mic.withUnsafeBytes { Data($0) }) }
            // After convergence: the quietest half second of the 2 s before bypass (a scheduling
            // stall on this shared machine shifts the echo path and costs a re-convergence).
            let processed = stride(from: max(0, processedEnd - Int(rate * 2)), through: processedEnd - 24000, by: 6000)
                .map { rmsOf(mic[$0..<($0 + 24000)]) }.min() ?? 1
            let bypassed = rmsOf(mic[min(mic.count, processedEnd + Int(rate * 0.5))..<mic.count])
            let erle = 20 * log10(bypassed / max(processed, 1e-9))
            // The near end survives: the strongest 0.1 s of 700 Hz while the bursts played.
            let nearEnd = stride(from: burstStart, to: max(burstStart, burstEnd - 4800), by: 2400).map {
                goertzel(mic, freq: 700, rate: rate, from: $0, count: 4800)
            }.max() ?? 0
            print("VoiceProcessingIO: echo \(String(format: "%.1f", 20 * log10(bypassed))) dBFS bypassed, \(String(format: "%.1f", 20 * log10(max(processed, 1e-9)))) dBFS processed: \(String(format: "%.1f", erle)) dB reduction; near-end 700 Hz at \(String(format: "%.1f", 20 * log10(max(nearEnd, 1e-9) / 0.1))) dB re played")
            #expect(bypassed > 0.03, "bypassed, the echo should come through (RMS \(bypassed))")
            #expect(20 * log10(max(nearEnd, 1e-9) / 0.1) > -10, "the near-end talker was suppressed too (700 Hz at \(nearEnd))")
            #expect(erle >= 20, "echo reduced by \(erle) dB")
        }
    }
}

/// The input properties' rules, without devices.
@Suite struct IOUnitInputPropertyTests {
    func newUnit(_ subType: UInt32) throws -> AudioUnit {
        var desc = AudioComponentDescription(componentType: kAudioUnitType_Output, componentSubType: subType,
                                             componentManufacturer: kAudioUnitManufacturer_Apple, componentFlags: 0, componentFlagsMask: 0)
        let component = try #require(AudioComponentFindNext(nil, &desc))
        var unit: AudioUnit?
        #expect(AudioComponentInstanceNew(component, &unit) == noErr)
        return try #require(unit)
    }

    @Test func enableIOAndVoiceProperties() throws {
        var one: UInt32 = 1
        let generic = try newUnit(kAudioUnitSubType_GenericOutput)
        defer { AudioComponentInstanceDispose(generic) }
        #expect(AudioUnitSetProperty(generic, kAudioOutputUnitProperty_EnableIO, kAudioUnitScope_Input, 1, &one, 4) == kAudioUnitErr_InvalidProperty)

        let remote = try newUnit(kAudioUnitSubType_RemoteIO)
        defer { AudioComponentInstanceDispose(remote) }
        var value: UInt32 = 9
        var size = UInt32(4)
        #expect(AudioUnitGetProperty(remote, kAudioOutputUnitProperty_EnableIO, kAudioUnitScope_Input, 1, &value, &size) == noErr && value == 0)
        #expect(AudioUnitGetProperty(remote, kAudioOutputUnitProperty_HasIO, kAudioUnitScope_Input, 1, &value, &size) == noErr && value == 1)
        #expect(AudioUnitSetProperty(remote, kAudioOutputUnitProperty_EnableIO, kAudioUnitScope_Input, 1, &one, 4) == noErr)
        #expect(AudioUnitSetProperty(remote, kAudioOutputUnitProperty_EnableIO, kAudioUnitScope_Input, 2, &one, 4) == kAudioUnitErr_InvalidElement)
        #expect(AudioUnitSetProperty(remote, kAUVoiceIOProperty_BypassVoiceProcessing, kAudioUnitScope_Global, 1, &one, 4) == kAudioUnitErr_InvalidProperty)
        // Element 1 before initialising: nothing to render yet.
        var list = AudioBufferList(mNumberBuffers: 1, mBuffers: AudioBuffer(mNumberChannels: 1, mDataByteSize: 0, mData: nil))
        var flags = AudioUnitRenderActionFlags()
        var time = AudioTimeStamp()
        #expect(AudioUnitRender(remote, &flags, &time, 1, 256, &list) == kAudioUnitErr_Uninitialized)
        // A client format at another rate than the output (16 kHz under 44.1 kHz): the capture
        // runs at the client rate.
        var mic = AudioStreamBasicDescription(mSampleRate: 16000, mFormatID: kAudioFormatLinearPCM,
                                              mFormatFlags: kAudioFormatFlagIsSignedInteger | kAudioFormatFlagIsPacked,
                                              mBytesPerPacket: 2, mFramesPerPacket: 1, mBytesPerFrame: 2, mChannelsPerFrame: 1,
                                              mBitsPerChannel: 16, mReserved: 0)
        #expect(AudioUnitSetProperty(remote, kAudioUnitProperty_StreamFormat, kAudioUnitScope_Output, 1, &mic, UInt32(MemoryLayout<AudioStreamBasicDescription>.size)) == noErr)
        #expect(AudioUnitInitialize(remote) == noErr)
        var latency = Float64(-1)
        var latencySize = UInt32(8)
        #expect(AudioUnitGetProperty(remote, kAudioUnitProperty_Latency, kAudioUnitScope_Input, 1, &latency, &latencySize) == noErr)
        #expect(latency > 0 && latency < 0.05, "input latency \(latency) s")
        // Element 1 renders at the client rate: the most per call is the largest slice (4096
        // frames at 44.1 kHz) at 16 kHz, 1487 frames (plus a few); 4096 is too many.
        var list16 = AudioBufferList(mNumberBuffers: 1, mBuffers: AudioBuffer(mNumberChannels: 1, mDataByteSize: 0, mData: nil))
        #expect(AudioUnitRender(remote, &flags, &time, 1, 342, &list16) == noErr && list16.mBuffers.mDataByteSize == 342 * 2)
        #expect(AudioUnitRender(remote, &flags, &time, 1, 4096, &list16) == kAudioUnitErr_TooManyFramesToProcess)
        // Voice processing keeps the output's rate (its echo reference is what the unit plays).
        let voice16 = try newUnit(kAudioUnitSubType_VoiceProcessingIO)
        defer { AudioComponentInstanceDispose(voice16) }
        #expect(AudioUnitSetProperty(voice16, kAudioOutputUnitProperty_EnableIO, kAudioUnitScope_Input, 1, &one, 4) == noErr)
        #expect(AudioUnitSetProperty(voice16, kAudioUnitProperty_StreamFormat, kAudioUnitScope_Output, 1, &mic, UInt32(MemoryLayout<AudioStreamBasicDescription>.size)) == noErr)
        #expect(AudioUnitInitialize(voice16) == kAudioUnitErr_FormatNotSupported)

        let voice = try newUnit(kAudioUnitSubType_VoiceProcessingIO)
        defer { AudioComponentInstanceDispose(voice) }
        #expect(AudioUnitSetProperty(voice, kAudioOutputUnitProperty_EnableIO, kAudioUnitScope_Input, 1, &one, 4) == noErr)
        #expect(AudioUnitSetProperty(voice, kAUVoiceIOProperty_VoiceProcessingEnableAGC, kAudioUnitScope_Global, 1, &one, 4) == noErr)
        #expect(AudioUnitSetProperty(voice, kAUVoiceIOProperty_MuteOutput, kAudioUnitScope_Global, 0, &one, 4) == noErr)
        #expect(AudioUnitGetProperty(voice, kAUVoiceIOProperty_MuteOutput, kAudioUnitScope_Global, 0, &value, &size) == noErr && value == 1)
        #expect(AudioUnitInitialize(voice) == noErr)
        var callback = AURenderCallbackStruct()
        #expect(AudioUnitSetProperty(voice, kAudioOutputUnitProperty_SetInputCallback, kAudioUnitScope_Global, 1, &callback,
                                     UInt32(MemoryLayout<AURenderCallbackStruct>.size)) == kAudioUnitErr_Initialized)
        #expect(AudioUnitSetProperty(voice, kAUVoiceIOProperty_VoiceProcessingEnableAGC, kAudioUnitScope_Global, 1, &one, 4) == kAudioUnitErr_Initialized)
        // Initialised but not started: element 1 renders (silence: nothing captured yet).
        #expect(AudioUnitRender(voice, &flags, &time, 1, 256, &list) == noErr)
        #expect(list.mBuffers.mData != nil && list.mBuffers.mDataByteSize == 256 * 4)
    }

    /// Input inside an AUGraph, without devices: element 1 of the I/O node is a source only with
    /// EnableIO on it; initialising builds the input (element 1 renders silence before the
    /// start), uninitialising removes it, and it comes back on the next initialisation.
    @Test func inputInsideAnAUGraph() throws {
        var graph: AUGraph?
        #expect(NewAUGraph(&graph) == noErr)
        let g = try #require(graph)
        defer { DisposeAUGraph(g) }
        var ioDesc = AudioComponentDescription(componentType: kAudioUnitType_Output, componentSubType: kAudioUnitSubType_RemoteIO,
                                               componentManufacturer: kAudioUnitManufacturer_Apple, componentFlags: 0, componentFlagsMask: 0)
        var mixerDesc = AudioComponentDescription(componentType: kAudioUnitType_Mixer, componentSubType: kAudioUnitSubType_MultiChannelMixer,
                                                  componentManufacturer: kAudioUnitManufacturer_Apple, componentFlags: 0, componentFlagsMask: 0)
        var ioNode: AUNode = 0, mixerNode: AUNode = 0
        #expect(AUGraphAddNode(g, &ioDesc, &ioNode) == noErr)
        #expect(AUGraphAddNode(g, &mixerDesc, &mixerNode) == noErr)
        #expect(AUGraphOpen(g) == noErr)
        var ioUnit: AudioUnit?
        #expect(AUGraphNodeInfo(g, ioNode, nil, &ioUnit) == noErr)
        let io = try #require(ioUnit)
        var stereo = AudioStreamBasicDescription(mSampleRate: 44100, mFormatID: kAudioFormatLinearPCM,
                                                 mFormatFlags: kAudioFormatFlagIsFloat | kAudioFormatFlagIsPacked | kAudioFormatFlagIsNonInterleaved,
                                                 mBytesPerPacket: 4, mFramesPerPacket: 1, mBytesPerFrame: 4, mChannelsPerFrame: 2,
                                                 mBitsPerChannel: 32, mReserved: 0)
        #expect(AudioUnitSetProperty(io, kAudioUnitProperty_StreamFormat, kAudioUnitScope_Output, 1, &stereo, UInt32(MemoryLayout<AudioStreamBasicDescription>.size)) == noErr)
        #expect(AUGraphConnectNodeInput(g, ioNode, 1, mixerNode, 0) == noErr)
        #expect(AUGraphConnectNodeInput(g, mixerNode, 0, ioNode, 0) == noErr)
        // Element 1 without EnableIO: no microphone to connect.
        #expect(AUGraphInitialize(g) == kAUGraphErr_InvalidConnection)
        var one: UInt32 = 1
        #expect(AudioUnitSetProperty(io, kAudioOutputUnitProperty_EnableIO, kAudioUnitScope_Input, 1, &one, 4) == noErr)
        #expect(AUGraphInitialize(g) == noErr)
        #expect(AudioUnitSetProperty(io, kAudioOutputUnitProperty_EnableIO, kAudioUnitScope_Input, 1, &one, 4) == kAudioUnitErr_Initialized)
        let list = AudioBufferList.allocate(maximumBuffers: 2)
        defer { free(list.unsafeMutablePointer) }
        var flags = AudioUnitRenderActionFlags()
        var time = AudioTimeStamp()
        func renderMic() -> OSStatus {
            for b in 0..<2 { list[b] = AudioBuffer(mNumberChannels: 1, mDataByteSize: 0, mData: nil) }
            return AudioUnitRender(io, &flags, &time, 1, 512, list.unsafeMutablePointer)
        }
        #expect(renderMic() == noErr)
        #expect(list[0].mData != nil && list[1].mDataByteSize == 512 * 4)
        var latency = Float64(-1)
        var size = UInt32(8)
        #expect(AudioUnitGetProperty(io, kAudioUnitProperty_Latency, kAudioUnitScope_Global, 1, &latency, &size) == noErr)
        #expect(latency > 0 && latency < 0.01, "input latency \(latency) s before the start (the reserve only)")
        #expect(AUGraphUninitialize(g) == noErr)
        #expect(renderMic() == kAudioUnitErr_Uninitialized)
        #expect(AUGraphInitialize(g) == noErr)
        #expect(renderMic() == noErr)
        // A failed initialisation (the microphone is stereo, the mixer's input 0 mono) leaves no
        // input behind: connected to a stereo input instead, the graph initialises.
        #expect(AUGraphUninitialize(g) == noErr)
        var mono = stereo
        mono.mChannelsPerFrame = 1
        var mixerUnit: AudioUnit?
        #expect(AUGraphNodeInfo(g, mixerNode, nil, &mixerUnit) == noErr)
        let mixer = try #require(mixerUnit)
        #expect(AudioUnitSetProperty(mixer, kAudioUnitProperty_StreamFormat, kAudioUnitScope_Input, 0, &mono, UInt32(MemoryLayout<AudioStreamBasicDescription>.size)) == noErr)
        #expect(AUGraphInitialize(g) == kAudioUnitErr_FormatNotSupported)
        #expect(AUGraphDisconnectNodeInput(g, mixerNode, 0) == noErr)
        #expect(AUGraphConnectNodeInput(g, ioNode, 1, mixerNode, 1) == noErr)
        #expect(AUGraphInitialize(g) == noErr)
        #expect(renderMic() == noErr)
    }
}
