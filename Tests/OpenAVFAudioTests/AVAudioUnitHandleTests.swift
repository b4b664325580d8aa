import OATTestSupport
import Foundation
import OpenAVFAudio
import Testing

/// Multiplies its input by 0.25: a unit registered with AudioComponentRegister (Swift node form).
final class QuarterGainNode: OATUnits.RenderNode, @unchecked Sendable {
    init(channels: Int) { super.init(name: "quarter", inputChannels: [channels], outputChannels: [channels]) }
    override func render(_ context: AURenderContext) {
        let input = context.pullInput(0, frames: context.frames)
        let out = context.output(0)
        for c in 0..<out.channelCount { for f in 0..<context.frames { out[c][f] = input[c][f] * 0.25 } }
    }
}

/// The Audio Unit behind AVFAudio nodes: `AVAudioUnit.audioUnit` (a handle of the C API over the
/// node the engine renders), `auAudioUnit` (AUAudioUnit, its parameter tree, presets and state),
/// `loadPreset(at:)` (.aupreset files), and units registered with AudioComponentRegister made as
/// AVAudioUnits.
@Suite struct AVAudioUnitHandleTests {
    /// A mono 1 kHz burst of 0.1 s at 0.5 through `effect` into the main mixer of an offline
    /// 48 kHz engine; `prepare` runs once the graph is connected, before the engine starts.
    static func renderBurst(through effect: AVAudioUnit, seconds: Double, frames burst: Int = 4800,
                            prepare: (AVAudioEngine) throws -> Void = { _ in }) throws -> [Float] {
        let engine = try AVAudioUnitFidelityTests.offlineEngine()
        let player = AVAudioPlayerNode()
        engine.attach(player)
        engine.attach(effect)
        let mono = try #require(AVAudioFormat(standardFormatWithSampleRate: 48000, channels: 1))
        engine.connect(player, to: effect, format: mono)
        engine.connect(effect, to: engine.mainMixerNode, format: mono)
        try prepare(engine)
        try engine.start()
        player.scheduleBuffer(AVAudioEngineOfflineTests.toneBuffer(frequency: 1000, amplitude: 0.5, frames: burst))
        player.play()
        let out = try AVAudioEngineOfflineTests.render(engine, total: Int(seconds * 48000))
        engine.stop()
        return out[0]
    }

    static func rms(_ x: [Float], from: Int, count: Int) -> Double {
        let s = x[from..<min(x.count, from + count)]
        return (s.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(1, s.count))).squareRoot()
    }

    // MARK: audioUnit

    /// Apple's way to make a reverb dry through its audio unit. Set before the node is attached
    /// (the handle holds the value until the engine makes the node, then the node has it): the
    /// tail after the burst is gone and the burst passes dry; the property follows.
    @Test func settingTheReverbsDryWetMixThroughAudioUnitIsHeard() throws {
        let wet = AVAudioUnitReverb()
        let wetOut = try Self.renderBurst(through: wet, seconds: 1)
        let dry = AVAudioUnitReverb()
        #expect(AudioUnitSetParameter(dry.audioUnit, kReverb2Param_DryWetMix, kAudioUnitScope_Global, 0, 0, 0) == noErr)
        #expect(dry.wetDryMix == 0, "the property follows the parameter")
        let dryOut = try Self.renderBurst(through: dry, seconds: 1)
        let wetTail = Self.rms(wetOut, from: 9600, count: 24000), dryTail = Self.rms(dryOut, from: 9600, count: 24000)
        #expect(wetTail > 0.003, "the wet reverb rings on: \(wetTail)")
        #expect(dryTail < 0.0001, "dry: nothing after the burst: \(dryTail)")
        let burst = toneAmplitude(dryOut, freq: 1000, rate: 48000, from: 960, count: 2880)
        #expect(abs(burst - 0.5) < 0.05, "dry: the burst passes as it is: \(burst)")
        var value: AudioUnitParameterValue = -1
        #expect(AudioUnitGetParameter(dry.audioUnit, kReverb2Param_DryWetMix, kAudioUnitScope_Global, 0, &value) == noErr)
        #expect(value == 0)
    }

    /// A parameter no property stands for (the reverb's output gain), set through the handle
    /// before the node is attached, is in the node the engine makes, and stays when a property
    /// changes: -20 dB makes the tail a tenth.
    @Test func aParameterWithoutAPropertyReachesTheNodeTheEngineMakes() throws {
        let plain = try Self.renderBurst(through: AVAudioUnitReverb(), seconds: 1)
        let reverb = AVAudioUnitReverb()
        #expect(AudioUnitSetParameter(reverb.audioUnit, 1, kAudioUnitScope_Global, 0, -20, 0) == noErr)   // kReverb2Param_Gain
        reverb.wetDryMix = 100
        let quiet = try Self.renderBurst(through: reverb, seconds: 1)
        let ratio = Self.rms(quiet, from: 9600, count: 24000) / Self.rms(plain, from: 9600, count: 24000)
        #expect(abs(ratio - 0.1) < 0.02, "-20 dB: \(ratio)")
        var gain: AudioUnitParameterValue = 0
        AudioUnitGetParameter(reverb.audioUnit, 1, kAudioUnitScope_Global, 0, &gain)
        #expect(gain == -20)
    }

    /// A parameter set through the handle while the engine renders reaches the node on the
    /// render thread: a delay's echo (1 s after the burst) goes when its wet/dry mix is set to 0
    /// between two renders.
    @Test func aParameterSetWhileRenderingReachesTheRenderedNode() throws {
        let delay = AVAudioUnitDelay()
        var out: [Float] = []
        let engine = try AVAudioUnitFidelityTests.offlineEngine()
        let player = AVAudioPlayerNode()
        engine.attach(player)
        engine.attach(delay)
        let mono = try #require(AVAudioFormat(standardFormatWithSampleRate: 48000, channels: 1))
        engine.connect(player, to: delay, format: mono)
        engine.connect(delay, to: engine.mainMixerNode, format: mono)
        try engine.start()
        player.scheduleBuffer(AVAudioEngineOfflineTests.toneBuffer(frequency: 1000, amplitude: 0.5, frames: 4800))
        player.play()
        out = try AVAudioEngineOfflineTests.render(engine, total: 24000)[0]
        let handle = delay.audioUnit
        #expect(AudioUnitSetParameter(handle, kDelayParam_WetDryMix, kAudioUnitScope_Global, 0, 0, 0) == noErr)
        out += try AVAudioEngineOfflineTests.render(engine, total: 72000)[0]
        try #require(out.count == 72000)
        let echo = toneAmplitude(out, freq: 1000, rate: 48000, from: 48960, count: 2880)
        #expect(echo < 0.005, "the echo is gone: \(echo)")
        #expect(delay.wetDryMix == 0)
    }

    /// The handle's stream formats are the node's, its parameter list and info are the
    /// reverb's, its class info names AUReverb2, and the engine's state cannot be changed
    /// through it (Apple: no operations that conflict with the engine).
    @Test func theHandleReportsTheNodesFormatsAndParameters() throws {
        let engine = try AVAudioUnitFidelityTests.offlineEngine()
        let reverb = AVAudioUnitReverb()
        let player = AVAudioPlayerNode()
        engine.attach(player)
        engine.attach(reverb)
        let mono = try #require(AVAudioFormat(standardFormatWithSampleRate: 48000, channels: 1))
        engine.connect(player, to: reverb, format: mono)
        engine.connect(reverb, to: engine.mainMixerNode, format: mono)
        try engine.start()
        defer { engine.stop() }
        let au = reverb.audioUnit
        for (scope, format) in [(kAudioUnitScope_Input, reverb.inputFormat(forBus: 0)), (kAudioUnitScope_Output, reverb.outputFormat(forBus: 0))] {
            var asbd = AudioStreamBasicDescription()
            var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
            #expect(AudioUnitGetProperty(au, kAudioUnitProperty_StreamFormat, scope, 0, &asbd, &size) == noErr)
            #expect(asbd.mSampleRate == format.sampleRate && asbd.mChannelsPerFrame == format.channelCount && asbd.mChannelsPerFrame == 1)
            #expect(asbd.mFormatID == kAudioFormatLinearPCM && asbd.mBitsPerChannel == 32)
        }
        var size: UInt32 = 0
        #expect(AudioUnitGetPropertyInfo(au, kAudioUnitProperty_ParameterList, kAudioUnitScope_Global, 0, &size, nil) == noErr)
        var ids = [AudioUnitParameterID](repeating: 0, count: Int(size) / 4)
        #expect(AudioUnitGetProperty(au, kAudioUnitProperty_ParameterList, kAudioUnitScope_Global, 0, &ids, &size) == noErr)
        #expect(ids.contains(kReverb2Param_DryWetMix) && ids.contains(kReverb2Param_DecayTimeAt0Hz))
        var info = AudioUnitParameterInfo()
        size = UInt32(MemoryLayout<AudioUnitParameterInfo>.size)
        #expect(AudioUnitGetProperty(au, kAudioUnitProperty_ParameterInfo, kAudioUnitScope_Global, kReverb2Param_DryWetMix, &info, &size) == noErr)
        #expect(info.minValue == 0 && info.maxValue == 100 && info.unit == .percent)
        var classInfo: Unmanaged<CFDictionary>?
        size = UInt32(MemoryLayout<Unmanaged<CFDictionary>?>.size)
        #expect(AudioUnitGetProperty(au, kAudioUnitProperty_ClassInfo, kAudioUnitScope_Global, 0, &classInfo, &size) == noErr)
        let dict = try #require(classInfo?.takeRetainedValue() as? [String: Any])
        #expect((dict[kAUPresetSubtypeKey] as? NSNumber)?.uint32Value == kAudioUnitSubType_Reverb2)
        #expect((dict[kAUPresetManufacturerKey] as? NSNumber)?.uint32Value == kAudioUnitManufacturer_Apple)
        #expect(dict[kAUPresetDataKey] is Data)
        // The engine owns it.
        var asbd = AudioStreamBasicDescription.canonicalFloat(sampleRate: 44100, channels: 2)
        #expect(AudioUnitSetProperty(au, kAudioUnitProperty_StreamFormat, kAudioUnitScope_Output, 0, &asbd,
                                     UInt32(MemoryLayout<AudioStreamBasicDescription>.size)) == kAudioUnitErr_Initialized)
        #expect(AudioComponentInstanceDispose(au) != noErr)
        #expect(AudioUnitGetParameter(au, kReverb2Param_DryWetMix, kAudioUnitScope_Global, 0, &info.minValue) == noErr, "still alive")
        #expect(reverb.audioUnit == au, "one handle per node")
    }

    // MARK: auAudioUnit

    /// The parameter tree drives the node: a delay's wet/dry mix set to 0 through its
    /// AUParameter leaves only the burst; its description, names, presets, state and bypass are
    /// the unit's.
    @Test func theParameterTreeChangesTheSound() throws {
        let delay = AVAudioUnitDelay()
        let au = delay.auAudioUnit
        #expect(au.componentName == "Apple: AUDelay" && au.audioUnitName == "AUDelay" && au.manufacturerName == "Apple")
        #expect(au.componentDescription.componentSubType == kAudioUnitSubType_Delay)
        let tree = try #require(au.parameterTree)
        #expect(tree.allParameters.count == 4)
        let mix = try #require(tree.parameter(withAddress: AUParameterAddress(kDelayParam_WetDryMix)))
        #expect(mix.minValue == 0 && mix.maxValue == 100 && mix.unit == .percent && !mix.displayName.isEmpty)
        #expect(mix.value == 50 || mix.value == 100, "the delay's default: \(mix.value)")
        mix.value = 0
        #expect(delay.wetDryMix == 0)
        let out = try Self.renderBurst(through: delay, seconds: 1.5)
        let echo = toneAmplitude(out, freq: 1000, rate: 48000, from: 48960, count: 2880)
        #expect(echo < 0.005, "no echo: \(echo)")
        // The same parameter through the tree and the handle.
        let time = try #require(tree.parameter(withID: kDelayParam_DelayTime, scope: kAudioUnitScope_Global, element: 0))
        time.value = 0.5
        var v: AudioUnitParameterValue = 0
        AudioUnitGetParameter(delay.audioUnit, kDelayParam_DelayTime, kAudioUnitScope_Global, 0, &v)
        #expect(v == 0.5 && delay.delayTime == 0.5)
        #expect(au.tailTime > 0)
        au.shouldBypassEffect = true
        #expect(delay.bypass)
        #expect(delay.auAudioUnit === au)
    }

    /// The reverb's factory presets (its rooms) load through `currentPreset`; `fullState`
    /// brings parameters back.
    @Test func reverbPresetsAndFullState() throws {
        let reverb = AVAudioUnitReverb()
        let au = reverb.auAudioUnit
        let presets = try #require(au.factoryPresets)
        #expect(presets.count == 13 && presets[8].name == "Cathedral")
        let before = au.tailTime
        au.currentPreset = presets[8]
        #expect(au.tailTime > before, "a cathedral decays longer: \(before) -> \(au.tailTime)")
        #expect(au.currentPreset?.number == 8)
        let state = try #require(au.fullState)
        let mix = try #require(au.parameterTree?.parameter(withAddress: AUParameterAddress(kReverb2Param_DryWetMix)))
        mix.value = 20
        #expect(reverb.wetDryMix == 20)
        au.fullState = state
        #expect(mix.value == 100 && reverb.wetDryMix == 100, "the state brought the mix back")
    }

    // MARK: loadPreset(at:)

    /// An .aupreset (XML property list as Logic and AU Lab write them) for AUDelay with delay
    /// time 0.25 s: after loadPreset(at:) the echo comes at 0.25 s, not 1 s.
    @Test func anAUPresetFileSetsTheParameters() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("oat-aupreset-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        func blob(_ params: [(UInt32, Float)]) -> Data {
            var d = Data()
            func put(_ v: UInt32) { withUnsafeBytes(of: v.bigEndian) { d.append(contentsOf: $0) } }
            put(kAudioUnitScope_Global); put(0); put(UInt32(params.count))
            for (id, value) in params { put(id); put(value.bitPattern) }
            return d
        }
        func write(_ name: String, subtype: UInt32, data: Data) throws -> URL {
            let plist: [String: Any] = [kAUPresetVersionKey: 0, kAUPresetTypeKey: Int(kAudioUnitType_Effect), kAUPresetSubtypeKey: Int(subtype),
                                        kAUPresetManufacturerKey: Int(kAudioUnitManufacturer_Apple), kAUPresetNameKey: name, kAUPresetDataKey: data]
            let url = dir.appendingPathComponent("\(name).aupreset")
            try PropertyListSerialization.data(fromPropertyList: plist, format: .xml, options: 0).write(to: url)
            return url
        }
        let quarter = try write("Quarter", subtype: kAudioUnitSubType_Delay,
                                data: blob([(kDelayParam_WetDryMix, 50), (kDelayParam_DelayTime, 0.25), (2, 0)]))
        let delay = AVAudioUnitDelay()
        try delay.loadPreset(at: quarter)
        #expect(delay.delayTime == 0.25 && delay.feedback == 0 && delay.wetDryMix == 50)
        let out = try Self.renderBurst(through: delay, seconds: 1.5, frames: 2400)
        let early = toneAmplitude(out, freq: 1000, rate: 48000, from: 12480, count: 1920)
        let late = toneAmplitude(out, freq: 1000, rate: 48000, from: 48480, count: 1920)
        #expect(early > 0.1, "an echo at 0.25 s: \(early)")
        #expect(late < 0.01, "none at 1 s (feedback 0): \(late)")
        // Another unit's preset, a cut-short blob and a file that is no preset are refused.
        let reverbPreset = try write("Room", subtype: kAudioUnitSubType_Reverb2, data: blob([(0, 10)]))
        #expect(throws: (any Error).self) { try delay.loadPreset(at: reverbPreset) }
        let cut = try write("Cut", subtype: kAudioUnitSubType_Delay, data: blob([(1, 0.5)]).prefix(14))
        #expect(throws: (any Error).self) { try delay.loadPreset(at: cut) }
        let text = dir.appendingPathComponent("text.aupreset")
        try Data("not a property list".utf8).write(to: text)
        #expect(throws: (any Error).self) { try delay.loadPreset(at: text) }
        #expect(throws: (any Error).self) { try delay.loadPreset(at: dir.appendingPathComponent("missing.aupreset")) }
        #expect(delay.delayTime == 0.25, "refused presets change nothing")
    }

    // MARK: Registered components

    /// A unit registered with AudioComponentRegister instantiates as an AVAudioUnit (an effect),
    /// with the registered name and version, and renders in the engine: 0.5 in, 0.125 out.
    @Test func anAudioComponentRegisteredUnitInstantiatesAndRenders() async throws {
        var desc = AudioComponentDescription(componentType: kAudioUnitType_Effect, componentSubType: 0x7172_7476,
                                             componentManufacturer: 0x4F41_5454, componentFlags: 0, componentFlagsMask: 0)
        _ = AudioComponentRegister(&desc, "OAT Test: Quarter", 0x0001_0203) { _ in QuarterGainNode(channels: 1) }
        let unit = try await AVAudioUnit.instantiate(with: desc)
        #expect(unit is AVAudioUnitEffect)
        #expect(unit.name == "Quarter" && unit.manufacturerName == "OAT Test" && unit.version == 0x0001_0203)
        #expect(unit.audioComponentDescription.componentSubType == 0x7172_7476)
        let out = try Self.renderBurst(through: unit, seconds: 0.2)
        let level = toneAmplitude(out, freq: 1000, rate: 48000, from: 960, count: 2880)
        #expect(abs(level - 0.125) < 0.01, "a quarter of 0.5: \(level)")
        #expect(unit.auAudioUnit.componentName == "OAT Test: Quarter")
    }
}
