// Microphone input inside an AUGraph through the C API, written as macOS/iOS code writes it:
// an I/O node with kAudioOutputUnitProperty_EnableIO on element 1 connected from element 1
// (mic -> EQ -> mixer -> io), the "play-through" render callback that pulls the microphone
// with AudioUnitRender(ioUnit, flags, ts, 1, frames, ioData), and an input callback with a
// 16 kHz client format under a 48 kHz output. The "microphone" is a private PulseAudio daemon's
// null-sink monitor into which another client plays a known tone; the graph plays into a
// second null sink (so it does not feed back), recorded with parec, or (the 16 kHz case) into
// the first sink, so what it captures is what it played. Everything is checked by analysis.
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

/// Float32 non-interleaved (or Int16 interleaved) linear PCM.
private func pcmFormat(rate: Double, channels: UInt32, int16: Bool = false) -> AudioStreamBasicDescription {
    if int16 {
        return AudioStreamBasicDescription(mSampleRate: rate, mFormatID: kAudioFormatLinearPCM,
                                           mFormatFlags: kAudioFormatFlagIsSignedInteger | kAudioFormatFlagIsPacked,
                                           mBytesPerPacket: 2 * channels, mFramesPerPacket: 1, mBytesPerFrame: 2 * channels,
                                           mChannelsPerFrame: channels, mBitsPerChannel: 16, mReserved: 0)
    }
    return AudioStreamBasicDescription(mSampleRate: rate, mFormatID: kAudioFormatLinearPCM,
                                       mFormatFlags: kAudioFormatFlagIsFloat | kAudioFormatFlagIsPacked | kAudioFormatFlagIsNonInterleaved,
                                       mBytesPerPacket: 4, mFramesPerPacket: 1, mBytesPerFrame: 4, mChannelsPerFrame: channels,
                                       mBitsPerChannel: 32, mReserved: 0)
}

private let asbdSize = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)

private func setFormat(_ unit: AudioUnit, _ scope: AudioUnitScope, _ element: AudioUnitElement, _ format: AudioStreamBasicDescription) -> OSStatus {
    var f = format
    return AudioUnitSetProperty(unit, kAudioUnitProperty_StreamFormat, scope, element, &f, asbdSize)
}

private func addNode(_ graph: AUGraph, _ type: UInt32, _ subType: UInt32) -> AUNode {
    var desc = AudioComponentDescription(componentType: type, componentSubType: subType, componentManufacturer: kAudioUnitManufacturer_Apple,
                                         componentFlags: 0, componentFlagsMask: 0)
    var node: AUNode = 0
    _ = AUGraphAddNode(graph, &desc, &node)
    return node
}

private func nodeUnit(_ graph: AUGraph, _ node: AUNode) -> AudioUnit? {
    var unit: AudioUnit?
    _ = AUGraphNodeInfo(graph, node, nil, &unit)
    return unit
}

private func waitFor(_ seconds: Double, _ condition: () -> Bool) -> Bool {
    let end = Date().addingTimeInterval(seconds)
    while Date() < end {
        if condition() { return true }
        usleep(20_000)
    }
    return condition()
}

/// The amplitude of `freq` in `x[from..<from+count]` (a single-bin DFT over whole periods).
private func amplitude(_ x: [Float], freq: Double, rate: Double, from: Int, count: Int) -> Double {
    toneAmplitude(x, freq: freq, rate: rate, from: from, count: count)
}

/// A private daemon (sink `oat_test`, the microphone is its monitor) with a second null sink
/// `oat_graph_out` the graph plays into, recorded by parec.
private final class Loopback {
    let daemon: PulseTestDaemon
    let rate = 48000
    let outSink = "oat_graph_out"
    var recorder: ChildProcess?
    var recordPath: String { "\(daemon.directory)/graph-out.raw" }

    init(secondSink: Bool) throws {
        daemon = try PulseTestDaemon(sampleRate: rate, channels: 2)
        if secondSink {
            let parec = try #require(ChildProcess.which("parec"), "parec is not installed (pulseaudio-utils)")
            try daemon.loadNullSink(.init(name: outSink, rate: rate, channels: 2))
            recorder = try ChildProcess.spawn(parec, ["-d", "\(outSink).monitor", "--raw", "--format=float32le", "--rate=\(rate)",
                                                      "--channels=2", "--latency-msec=20", "--file-format=raw", recordPath],
                                              environment: daemon.environment, outputPath: "\(daemon.directory)/parec-out.log")
        }
        setenv("OAT_OUTPUT", "pulse:\(secondSink ? outSink : daemon.sinkName)", 1)
        setenv("OAT_INPUT", "pulse:\(daemon.monitorSource)", 1)
        setenv("PULSE_SERVER", daemon.server, 1)
    }

    /// Stops everything it started (by PID) and unsets the environment.
    func stop() {
        recorder?.killNow()
        daemon.stop()
        unsetenv("OAT_OUTPUT"); unsetenv("OAT_INPUT"); unsetenv("PULSE_SERVER")
    }

    /// Plays `seconds` of `freq` Hz at `level` on both channels into the microphone's sink
    /// with pacat (another client), waiting for it to finish.
    func playTone(freq: Double, level: Double, seconds: Double) throws {
        var samples = [Float](repeating: 0, count: Int(seconds * Double(rate)) * 2)
        for i in 0..<(samples.count / 2) {
            let v = Float(level * sin(2 * Double.pi * freq * Double(i) / Double(rate)))
            samples[2 * i] = v
            samples[2 * i + 1] = v
        }
        let path = "\(daemon.directory)/tone.raw"
        _ = FileManager.default.createFile(atPath: path, contents: samples.withUnsafeBytes { Data($0) })
        let pacat = try #require(ChildProcess.which("pacat"), "pacat is not installed (pulseaudio-utils)")
        let player = try ChildProcess.spawn(pacat, ["--playback", "-d", daemon.sinkName, "--raw", "--format=float32le", "--rate=\(rate)",
                                                    "--channels=2", "--latency-msec=20", path],
                                            environment: daemon.environment, outputPath: "\(daemon.directory)/pacat.log")
        #expect(waitFor(seconds + 10) { !player.isRunning }, "pacat did not finish")
        player.killNow()
    }

    /// What the graph played into the second sink (left channel).
    func recordedLeft() throws -> [Float] {
        recorder?.terminate()
        let bytes = try #require(Corpus.read(recordPath), "parec recorded nothing")
        let samples: [Float] = bytes[0..<(bytes.count / 4 * 4)].withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        return stride(from: 0, to: samples.count - 1, by: 2).map { samples[$0] }
    }

    /// The tone's level in dB re `level` in what the graph played: the median of fifteen 0.1 s
    /// windows from 0.25 s after the tone arrived (a dropout under load spoils only its windows).
    func measuredGain(freq: Double, level: Double) throws -> Double {
        let left = try recordedLeft()
        let first = try #require(left.firstIndex { abs($0) > 0.02 }, "the graph's output is silent (\(left.count) frames)")
        let windows = (0..<15).map { w in amplitude(left, freq: freq, rate: Double(rate), from: first + rate / 4 + w * rate / 10, count: rate / 10) }
        return 20 * log10(max(windows.sorted()[7], 1e-9) / level)
    }
}

/// The play-through listing's render callback (on mixer input 0): pull the microphone with
/// AudioUnitRender on the I/O unit's element 1 straight into the mixer's input buffers.
private final class PlayThrough: @unchecked Sendable {
    var ioUnit: AudioUnit?
    let failure = Atomic<Int32>(0)
    let calls = Atomic<Int>(0)
}

private func playThroughCallback(_ inRefCon: UnsafeMutableRawPointer, _ ioActionFlags: UnsafeMutablePointer<AudioUnitRenderActionFlags>,
                                 _ inTimeStamp: UnsafePointer<AudioTimeStamp>, _ inBusNumber: UInt32, _ inNumberFrames: UInt32,
                                 _ ioData: UnsafeMutablePointer<AudioBufferList>?) -> OSStatus {
    let state = Unmanaged<PlayThrough>.fromOpaque(inRefCon).takeUnretainedValue()
    guard let io = state.ioUnit, let ioData else { return noErr }
    let status = AudioUnitRender(io, ioActionFlags, inTimeStamp, 1, inNumberFrames, ioData)
    if status != noErr { state.failure.store(status, ordering: .relaxed) }
    state.calls.add(1, ordering: .relaxed)
    return status
}

/// The 16 kHz recorder: an input callback that pulls element 1 (mono Int16 at 16 kHz) into a
/// preallocated buffer, and a mixer render callback that plays a 48 kHz tone.
private final class Recorder16k: @unchecked Sendable {
    var ioUnit: AudioUnit?
    let capacity: Int
    let captured: UnsafeMutablePointer<Int16>
    let count = Atomic<Int>(0)
    let failure = Atomic<Int32>(0)
    let maxCallFrames = Atomic<Int>(0)
    var played = 0
    let toneFreq: Double
    let outputRate: Double

    init(seconds: Double, toneFreq: Double, outputRate: Double) {
        capacity = Int(16000 * seconds)
        captured = .allocate(capacity: capacity)
        captured.initialize(repeating: 0, count: capacity)
        self.toneFreq = toneFreq
        self.outputRate = outputRate
    }

    deinit { captured.deallocate() }

    func recording() -> [Float] { (0..<count.load(ordering: .acquiring)).map { Float(captured[$0]) / 32768 } }
}

private func recorder16kInput(_ inRefCon: UnsafeMutableRawPointer, _ ioActionFlags: UnsafeMutablePointer<AudioUnitRenderActionFlags>,
                              _ inTimeStamp: UnsafePointer<AudioTimeStamp>, _ inBusNumber: UInt32, _ inNumberFrames: UInt32,
                              _ ioData: UnsafeMutablePointer<AudioBufferList>?) -> OSStatus {
    let r = Unmanaged<Recorder16k>.fromOpaque(inRefCon).takeUnretainedValue()
    guard let io = r.ioUnit else { return noErr }
    var list = AudioBufferList(mNumberBuffers: 1, mBuffers: AudioBuffer(mNumberChannels: 1, mDataByteSize: inNumberFrames * 2, mData: nil))
    let status = AudioUnitRender(io, ioActionFlags, inTimeStamp, 1, inNumberFrames, &list)
    guard status == noErr, let data = list.mBuffers.mData else {
        r.failure.store(status, ordering: .relaxed)
        return status
    }
    if Int(inNumberFrames) > r.maxCallFrames.load(ordering: .relaxed) { r.maxCallFrames.store(Int(inNumberFrames), ordering: .relaxed) }
    let at = r.count.load(ordering: .relaxed)
    let n = min(Int(list.mBuffers.mDataByteSize) / 2, r.capacity - at)
    if n > 0 { (r.captured + at).update(from: data.assumingMemoryBound(to: Int16.self), count: n) }
    r.count.store(at + max(0, n), ordering: .releasing)
    return noErr
}

private func recorder16kRender(_ inRefCon: UnsafeMutableRawPointer, _ ioActionFlags: UnsafeMutablePointer<AudioUnitRenderActionFlags>,
                               _ inTimeStamp: UnsafePointer<AudioTimeStamp>, _ inBusNumber: UInt32, _ inNumberFrames: UInt32,
                               _ ioData: UnsafeMutablePointer<AudioBufferList>?) -> OSStatus {
    let r = Unmanaged<Recorder16k>.fromOpaque(inRefCon).takeUnretainedValue()
    let list = UnsafeMutableAudioBufferListPointer(ioData!)
    for i in 0..<Int(inNumberFrames) {
        let v = Float(0.3 * sin(2 * Double.pi * r.toneFreq * Double(r.played + i) / r.outputRate))
        for b in list { b.mData!.assumingMemoryBound(to: Float.self)[i] = v }
    }
    r.played += Int(inNumberFrames)
    return noErr
}

@Suite("PlaybackAUGraphInputTests", .serialized, .requires(TestResource.pulseAudioMissing))
struct PlaybackAUGraphInputTests {
    /// mic (RemoteIO element 1) -> N-band EQ (+6 dB at 1 kHz) -> mixer -> RemoteIO: the played
    /// 1 kHz tone comes out 6 dB louder.
    @Test func graphMicThroughEQAndMixerToTheOutput() throws {
        let loop = try Loopback(secondSink: true)
        defer { loop.stop() }
        let rate = Double(loop.rate)
        var graph: AUGraph?
        #expect(NewAUGraph(&graph) == noErr)
        let g = try #require(graph)
        defer { DisposeAUGraph(g) }
        let ioNode = addNode(g, kAudioUnitType_Output, kAudioUnitSubType_HALOutput)
        let eqNode = addNode(g, kAudioUnitType_Effect, kAudioUnitSubType_NBandEQ)
        let mixerNode = addNode(g, kAudioUnitType_Mixer, kAudioUnitSubType_MultiChannelMixer)
        #expect(AUGraphOpen(g) == noErr)
        let io = try #require(nodeUnit(g, ioNode)), eq = try #require(nodeUnit(g, eqNode)), mixer = try #require(nodeUnit(g, mixerNode))
        var one: UInt32 = 1
        #expect(AudioUnitSetProperty(io, kAudioOutputUnitProperty_EnableIO, kAudioUnitScope_Input, 1, &one, 4) == noErr)
        let stereo = pcmFormat(rate: rate, channels: 2)
        #expect(setFormat(io, kAudioUnitScope_Output, 1, stereo) == noErr)
        #expect(setFormat(io, kAudioUnitScope_Input, 0, stereo) == noErr)
        for unit in [eq, mixer] {
            #expect(setFormat(unit, kAudioUnitScope_Input, 0, stereo) == noErr)
            #expect(setFormat(unit, kAudioUnitScope_Output, 0, stereo) == noErr)
        }
        var bands: UInt32 = 1
        #expect(AudioUnitSetProperty(eq, kAUNBandEQProperty_NumberOfBands, kAudioUnitScope_Global, 0, &bands, 4) == noErr)
        #expect(AudioUnitSetParameter(eq, kAUNBandEQParam_FilterType, kAudioUnitScope_Global, 0, Float(kAUNBandEQFilterType_Parametric), 0) == noErr)
        #expect(AudioUnitSetParameter(eq, kAUNBandEQParam_Frequency, kAudioUnitScope_Global, 0, 1000, 0) == noErr)
        #expect(AudioUnitSetParameter(eq, kAUNBandEQParam_Gain, kAudioUnitScope_Global, 0, 6, 0) == noErr)
        #expect(AudioUnitSetParameter(eq, kAUNBandEQParam_Bandwidth, kAudioUnitScope_Global, 0, 0.5, 0) == noErr)
        #expect(AudioUnitSetParameter(eq, kAUNBandEQParam_BypassBand, kAudioUnitScope_Global, 0, 0, 0) == noErr)
        #expect(AUGraphConnectNodeInput(g, ioNode, 1, eqNode, 0) == noErr)
        #expect(AUGraphConnectNodeInput(g, eqNode, 0, mixerNode, 0) == noErr)
        #expect(AUGraphConnectNodeInput(g, mixerNode, 0, ioNode, 0) == noErr)
        // Element 0 of an I/O unit is its output: not a source.
        #expect(AUGraphConnectNodeInput(g, ioNode, 0, mixerNode, 1) == kAUGraphErr_InvalidConnection)
        #expect(AUGraphInitialize(g) == noErr)
        var latency = Float64(-1)
        var size = UInt32(8)
        #expect(AudioUnitGetProperty(io, kAudioUnitProperty_Latency, kAudioUnitScope_Input, 1, &latency, &size) == noErr)
        #expect(AUGraphStart(g) == noErr)
        usleep(400_000)
        #expect(AudioUnitGetProperty(io, kAudioUnitProperty_Latency, kAudioUnitScope_Input, 1, &latency, &size) == noErr)
        print("AUGraph mic -> EQ -> mixer -> io: input latency \(String(format: "%.1f", latency * 1000)) ms")
        #expect(latency > 0.001 && latency < 0.1, "input latency \(latency) s")
        try loop.playTone(freq: 1000, level: 0.2, seconds: 2)
        usleep(300_000)
        #expect(AUGraphStop(g) == noErr)
        let gain = try loop.measuredGain(freq: 1000, level: 0.2)
        print("AUGraph mic -> EQ -> mixer -> io: 1 kHz at \(String(format: "%+.2f", gain)) dB (EQ designed +6.00 dB)")
        #expect(abs(gain - 6) < 0.5, "1 kHz came out at \(gain) dB, the EQ gives +6 dB")
    }

    /// The play-through listing: a render callback on mixer input 0 calls
    /// AudioUnitRender(ioUnit, flags, ts, 1, frames, ioData); mixer input volume 0.5.
    @Test func playThroughRenderCallbackPullsTheMicrophone() throws {
        let loop = try Loopback(secondSink: true)
        defer { loop.stop() }
        let rate = Double(loop.rate)
        var graph: AUGraph?
        #expect(NewAUGraph(&graph) == noErr)
        let g = try #require(graph)
        defer { DisposeAUGraph(g) }
        let ioNode = addNode(g, kAudioUnitType_Output, kAudioUnitSubType_RemoteIO)
        let mixerNode = addNode(g, kAudioUnitType_Mixer, kAudioUnitSubType_MultiChannelMixer)
        #expect(AUGraphOpen(g) == noErr)
        let io = try #require(nodeUnit(g, ioNode)), mixer = try #require(nodeUnit(g, mixerNode))
        var one: UInt32 = 1
        #expect(AudioUnitSetProperty(io, kAudioOutputUnitProperty_EnableIO, kAudioUnitScope_Input, 1, &one, 4) == noErr)
        let stereo = pcmFormat(rate: rate, channels: 2)
        #expect(setFormat(io, kAudioUnitScope_Output, 1, stereo) == noErr)
        #expect(setFormat(io, kAudioUnitScope_Input, 0, stereo) == noErr)
        #expect(setFormat(mixer, kAudioUnitScope_Input, 0, stereo) == noErr)
        #expect(setFormat(mixer, kAudioUnitScope_Output, 0, stereo) == noErr)
        #expect(AudioUnitSetParameter(mixer, kMultiChannelMixerParam_Volume, kAudioUnitScope_Input, 0, 0.5, 0) == noErr)
        let state = PlayThrough()
        state.ioUnit = io
        var callback = AURenderCallbackStruct(inputProc: playThroughCallback, inputProcRefCon: Unmanaged.passUnretained(state).toOpaque())
        #expect(AUGraphSetNodeInputCallback(g, mixerNode, 0, &callback) == noErr)
        #expect(AUGraphConnectNodeInput(g, mixerNode, 0, ioNode, 0) == noErr)
        #expect(AUGraphInitialize(g) == noErr)
        #expect(AUGraphStart(g) == noErr)
        usleep(400_000)
        try loop.playTone(freq: 1000, level: 0.3, seconds: 2)
        usleep(300_000)
        #expect(AUGraphStop(g) == noErr)
        #expect(state.failure.load(ordering: .relaxed) == noErr)
        #expect(state.calls.load(ordering: .relaxed) > 50)
        let gain = try loop.measuredGain(freq: 1000, level: 0.3)
        print("AUGraph play-through (AudioUnitRender on element 1): 1 kHz at \(String(format: "%+.2f", gain)) dB (mixer volume 0.5: -6.02 dB)")
        #expect(abs(gain - 20 * log10(0.5)) < 0.5, "1 kHz came out at \(gain) dB, expected -6.02 dB")
    }

    /// The play-through listing on the I/O node itself: a render callback on its input bus 0
    /// (no mixer) pulls element 1 into the buffers the unit is about to play.
    @Test func playThroughOnTheIONodesOwnInputBus() throws {
        let loop = try Loopback(secondSink: true)
        defer { loop.stop() }
        let rate = Double(loop.rate)
        var graph: AUGraph?
        #expect(NewAUGraph(&graph) == noErr)
        let g = try #require(graph)
        defer { DisposeAUGraph(g) }
        let ioNode = addNode(g, kAudioUnitType_Output, kAudioUnitSubType_RemoteIO)
        #expect(AUGraphOpen(g) == noErr)
        let io = try #require(nodeUnit(g, ioNode))
        var one: UInt32 = 1
        #expect(AudioUnitSetProperty(io, kAudioOutputUnitProperty_EnableIO, kAudioUnitScope_Input, 1, &one, 4) == noErr)
        let stereo = pcmFormat(rate: rate, channels: 2)
        #expect(setFormat(io, kAudioUnitScope_Output, 1, stereo) == noErr)
        #expect(setFormat(io, kAudioUnitScope_Input, 0, stereo) == noErr)
        let state = PlayThrough()
        state.ioUnit = io
        var callback = AURenderCallbackStruct(inputProc: playThroughCallback, inputProcRefCon: Unmanaged.passUnretained(state).toOpaque())
        #expect(AUGraphSetNodeInputCallback(g, ioNode, 0, &callback) == noErr)
        #expect(AUGraphInitialize(g) == noErr)
        #expect(AUGraphStart(g) == noErr)
        usleep(400_000)
        try loop.playTone(freq: 1000, level: 0.3, seconds: 2)
        usleep(300_000)
        #expect(AUGraphStop(g) == noErr)
        #expect(state.failure.load(ordering: .relaxed) == noErr)
        let gain = try loop.measuredGain(freq: 1000, level: 0.3)
        print("AUGraph play-through on the I/O node's bus 0: 1 kHz at \(String(format: "%+.2f", gain)) dB")
        #expect(abs(gain) < 0.5, "1 kHz came out at \(gain) dB")
    }

    /// The microphone at 16 kHz connected from element 1 into a 48 kHz graph (mic -> mixer ->
    /// io): converted to the graph rate, the played tone keeps its frequency and level.
    @Test func sixteenKilohertzMicrophoneConnectedIntoA48kGraph() throws {
        let loop = try Loopback(secondSink: true)
        defer { loop.stop() }
        let rate = Double(loop.rate)
        var graph: AUGraph?
        #expect(NewAUGraph(&graph) == noErr)
        let g = try #require(graph)
        defer { DisposeAUGraph(g) }
        let ioNode = addNode(g, kAudioUnitType_Output, kAudioUnitSubType_HALOutput)
        let mixerNode = addNode(g, kAudioUnitType_Mixer, kAudioUnitSubType_MultiChannelMixer)
        #expect(AUGraphOpen(g) == noErr)
        let io = try #require(nodeUnit(g, ioNode)), mixer = try #require(nodeUnit(g, mixerNode))
        var one: UInt32 = 1
        #expect(AudioUnitSetProperty(io, kAudioOutputUnitProperty_EnableIO, kAudioUnitScope_Input, 1, &one, 4) == noErr)
        let stereo = pcmFormat(rate: rate, channels: 2)
        #expect(setFormat(io, kAudioUnitScope_Output, 1, pcmFormat(rate: 16000, channels: 2)) == noErr)
        #expect(setFormat(io, kAudioUnitScope_Input, 0, stereo) == noErr)
        #expect(setFormat(mixer, kAudioUnitScope_Input, 0, pcmFormat(rate: 16000, channels: 2)) == noErr)
        #expect(setFormat(mixer, kAudioUnitScope_Output, 0, stereo) == noErr)
        #expect(AUGraphConnectNodeInput(g, ioNode, 1, mixerNode, 0) == noErr)
        #expect(AUGraphConnectNodeInput(g, mixerNode, 0, ioNode, 0) == noErr)
        #expect(AUGraphInitialize(g) == noErr)
        #expect(AUGraphStart(g) == noErr)
        usleep(400_000)
        try loop.playTone(freq: 1000, level: 0.3, seconds: 2)
        usleep(300_000)
        #expect(AUGraphStop(g) == noErr)
        let left = try loop.recordedLeft()
        let first = try #require(left.firstIndex { abs($0) > 0.02 }, "the graph's output is silent (\(left.count) frames)")
        let windows = (0..<15).map { w in amplitude(left, freq: 1000, rate: rate, from: first + loop.rate / 4 + w * loop.rate / 10, count: loop.rate / 10) }
        let gain = 20 * log10(max(windows.sorted()[7], 1e-9) / 0.3)
        let freq = dominantFrequency(Array(left[(first + loop.rate / 4)..<min(left.count, first + loop.rate * 7 / 4)]), sampleRate: rate)
        print("AUGraph 16 kHz mic -> mixer -> 48 kHz io: 1 kHz at \(String(format: "%+.2f", gain)) dB, \(String(format: "%.3f", freq)) Hz")
        #expect(abs(gain) < 0.5, "1 kHz came out at \(gain) dB")
        #expect(abs(freq - 1000) < 1, "the tone came out at \(freq) Hz")
    }

    /// An input callback in a graph with a 16 kHz mono Int16 client format while the output
    /// runs at 48 kHz: the tone the graph plays comes back at its frequency, and the frames
    /// delivered match the elapsed time at 16 kHz.
    @Test func sixteenKilohertzClientInputUnderA48kOutput() throws {
        let loop = try Loopback(secondSink: false)
        defer { loop.stop() }
        let rate = Double(loop.rate)
        let toneFreq = 997.0
        var graph: AUGraph?
        #expect(NewAUGraph(&graph) == noErr)
        let g = try #require(graph)
        defer { DisposeAUGraph(g) }
        let ioNode = addNode(g, kAudioUnitType_Output, kAudioUnitSubType_RemoteIO)
        let mixerNode = addNode(g, kAudioUnitType_Mixer, kAudioUnitSubType_MultiChannelMixer)
        #expect(AUGraphOpen(g) == noErr)
        let io = try #require(nodeUnit(g, ioNode)), mixer = try #require(nodeUnit(g, mixerNode))
        var one: UInt32 = 1
        #expect(AudioUnitSetProperty(io, kAudioOutputUnitProperty_EnableIO, kAudioUnitScope_Input, 1, &one, 4) == noErr)
        let stereo = pcmFormat(rate: rate, channels: 2)
        #expect(setFormat(io, kAudioUnitScope_Output, 1, pcmFormat(rate: 16000, channels: 1, int16: true)) == noErr)
        #expect(setFormat(io, kAudioUnitScope_Input, 0, stereo) == noErr)
        #expect(setFormat(mixer, kAudioUnitScope_Input, 0, stereo) == noErr)
        #expect(setFormat(mixer, kAudioUnitScope_Output, 0, stereo) == noErr)
        let recorder = Recorder16k(seconds: 12, toneFreq: toneFreq, outputRate: rate)
        recorder.ioUnit = io
        let refCon = Unmanaged.passUnretained(recorder).toOpaque()
        var input = AURenderCallbackStruct(inputProc: recorder16kInput, inputProcRefCon: refCon)
        #expect(AudioUnitSetProperty(io, kAudioOutputUnitProperty_SetInputCallback, kAudioUnitScope_Global, 1, &input,
                                     UInt32(MemoryLayout<AURenderCallbackStruct>.size)) == noErr)
        var render = AURenderCallbackStruct(inputProc: recorder16kRender, inputProcRefCon: refCon)
        #expect(AUGraphSetNodeInputCallback(g, mixerNode, 0, &render) == noErr)
        #expect(AUGraphConnectNodeInput(g, mixerNode, 0, ioNode, 0) == noErr)
        #expect(AUGraphInitialize(g) == noErr)
        #expect(AUGraphStart(g) == noErr)
        usleep(1_000_000)
        let t0 = Date(), n0 = recorder.count.load(ordering: .acquiring)
        usleep(4_000_000)
        let t1 = Date(), n1 = recorder.count.load(ordering: .acquiring)
        #expect(AUGraphStop(g) == noErr)
        #expect(recorder.failure.load(ordering: .relaxed) == noErr)
        let elapsed = t1.timeIntervalSince(t0)
        let expectedFrames = elapsed * 16000
        let ratio = Double(n1 - n0) / expectedFrames
        let mic = recorder.recording()
        let first = try #require(mic.firstIndex { abs($0) > 0.05 }, "the microphone heard nothing")
        let steady = Array(mic[min(mic.count, first + 8000)..<mic.count])
        let freq = dominantFrequency(steady, sampleRate: 16000)
        // The median of twenty 0.1 s windows: a dropout under load spoils only its windows.
        let windows = (0..<20).map { amplitude(steady, freq: toneFreq, rate: 16000, from: $0 * 1600, count: 1600) }.sorted()
        let level = 20 * log10(max(windows[10], 1e-9) / 0.3)
        print("16 kHz input under 48 kHz output: \(n1 - n0) frames in \(String(format: "%.3f", elapsed)) s (\(String(format: "%.4f", ratio)) of 16 kHz), largest call \(recorder.maxCallFrames.load(ordering: .relaxed)) frames; tone \(String(format: "%.3f", freq)) Hz (played \(toneFreq)), \(String(format: "%+.2f", level)) dB (median of 0.1 s windows; lowest \(String(format: "%+.1f", 20 * log10(max(windows[0], 1e-9) / 0.3))) dB)")
        #expect(abs(ratio - 1) < 0.01, "\(n1 - n0) frames in \(elapsed) s at 16 kHz")
        #expect(abs(freq - toneFreq) < 1, "captured tone at \(freq) Hz")
        #expect(abs(level) < 1, "captured tone at \(level) dB re played")
        #expect(recorder.maxCallFrames.load(ordering: .relaxed) < 1024, "inNumberFrames is at the client rate")
    }
}
