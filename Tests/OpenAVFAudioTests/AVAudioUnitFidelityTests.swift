import OATTestSupport
import Foundation
import OpenAVFAudio
import Testing

/// Apple's class layer over audio units (AVAudioUnit, AVAudioUnitEffect, AVAudioUnitTimeEffect,
/// instantiate(with:)), AVAudioStereoMixing, lastRenderTime outside the rendering graph, and the
/// input node's manual-rendering input block.
@Suite struct AVAudioUnitFidelityTests {
    static func apple(_ type: UInt32, _ subType: UInt32) -> AudioComponentDescription {
        AudioComponentDescription(componentType: type, componentSubType: subType, componentManufacturer: kAudioUnitManufacturer_Apple,
                                  componentFlags: 0, componentFlagsMask: 0)
    }

    /// An offline engine rendering stereo at 48 kHz, 1024 frames a call at most.
    static func offlineEngine() throws -> AVAudioEngine {
        let engine = AVAudioEngine()
        let format = try #require(AVAudioFormat(standardFormatWithSampleRate: 48000, channels: 2))
        try engine.enableManualRenderingMode(.offline, format: format, maximumFrameCount: 1024)
        return engine
    }

    // MARK: 1. AVAudioUnit

    @Test func theEffectsAreAudioUnitsWithApplesComponentDescriptions() {
        let reverb = AVAudioUnitReverb(), eq = AVAudioUnitEQ(numberOfBands: 2), delay = AVAudioUnitDelay()
        let distortion = AVAudioUnitDistortion(), timePitch = AVAudioUnitTimePitch(), varispeed = AVAudioUnitVarispeed()
        var effects: [AVAudioUnit] = [reverb, eq]
        effects += [delay, distortion, timePitch, varispeed]
        let expected: [(UInt32, UInt32, String)] = [
            (kAudioUnitType_Effect, kAudioUnitSubType_Reverb2, "AUReverb2"), (kAudioUnitType_Effect, kAudioUnitSubType_NBandEQ, "AUNBandEQ"),
            (kAudioUnitType_Effect, kAudioUnitSubType_Delay, "AUDelay"), (kAudioUnitType_Effect, kAudioUnitSubType_Distortion, "AUDistortion"),
            (kAudioUnitType_FormatConverter, kAudioUnitSubType_NewTimePitch, "AUNewTimePitch"),
            (kAudioUnitType_FormatConverter, kAudioUnitSubType_Varispeed, "AUVarispeed"),
        ]
        for (unit, (type, subType, name)) in zip(effects, expected) {
            let d = unit.audioComponentDescription
            #expect(d.componentType == type && d.componentSubType == subType && d.componentManufacturer == kAudioUnitManufacturer_Apple, "\(name)")
            #expect(unit.name == name)
            #expect(unit.manufacturerName == "Apple")
            #expect(unit.version > 0)
        }
        let nodes: [AVAudioNode] = effects
        #expect(nodes.count == 6)
        // Effects and time effects as on Apple: time-pitch and varispeed are time effects.
        #expect(effects[0..<4].allSatisfy { $0 is AVAudioUnitEffect } && !effects[0..<4].contains { $0 is AVAudioUnitTimeEffect })
        #expect(effects[4...].allSatisfy { $0 is AVAudioUnitTimeEffect } && !effects[4...].contains { $0 is AVAudioUnitEffect })
        let time: AVAudioUnitTimeEffect = varispeed
        time.bypass = true
        #expect(varispeed.bypass)
    }

    /// A 1 kHz burst of 0.1 s at 0.5, then silence, through a delay made by
    /// `AVAudioUnit.instantiate(with:)`: Apple's AUDelay defaults (1 s, 50 % wet) put an echo at 1 s.
    @Test func instantiateWithACompletionHandlerMakesAWorkingDelay() async throws {
        let description = Self.apple(kAudioUnitType_Effect, kAudioUnitSubType_Delay)
        let made: AVAudioUnit = try await withCheckedThrowingContinuation { continuation in
            AVAudioUnit.instantiate(with: description) { unit, error in
                if let unit { continuation.resume(returning: unit) } else { continuation.resume(throwing: error ?? CancellationError()) }
            }
        }
        let unit = try #require(made as? AVAudioUnitEffect)
        #expect(unit.name == "AUDelay" && unit.audioComponentDescription.componentSubType == kAudioUnitSubType_Delay)
        let engine = try Self.offlineEngine()
        let player = AVAudioPlayerNode()
        engine.attach(player)
        engine.attach(unit)
        let mono = try #require(AVAudioFormat(standardFormatWithSampleRate: 48000, channels: 1))
        engine.connect(player, to: unit, format: mono)
        engine.connect(unit, to: engine.mainMixerNode, format: mono)
        try engine.start()
        player.scheduleBuffer(AVAudioEngineOfflineTests.toneBuffer(frequency: 1000, amplitude: 0.5, frames: 4800))
        player.play()
        let out = try AVAudioEngineOfflineTests.render(engine, total: 72000)
        try #require(out[0].count == 72000)
        let dry = toneAmplitude(out[0], freq: 1000, rate: 48000, from: 960, count: 2880)
        let gap = toneAmplitude(out[0], freq: 1000, rate: 48000, from: 24000, count: 2880)
        let echo = toneAmplitude(out[0], freq: 1000, rate: 48000, from: 48960, count: 2880)
        #expect(dry > 0.1, "the dry burst passes: \(dry)")
        #expect(gap < 0.01, "nothing between the burst and its echo: \(gap)")
        #expect(echo > 0.1, "the echo 1 s later: \(echo)")
        engine.stop()
    }

    @Test func instantiateAsyncMakesTimeEffectsAndRefusesUnknownComponents() async throws {
        let varispeed = try await AVAudioUnit.instantiate(with: Self.apple(kAudioUnitType_FormatConverter, kAudioUnitSubType_Varispeed))
        #expect(varispeed is AVAudioUnitTimeEffect && varispeed.name == "AUVarispeed")
        let reverb = try await AVAudioUnit.instantiate(with: Self.apple(kAudioUnitType_Effect, kAudioUnitSubType_Reverb2), options: [])
        #expect(reverb is AVAudioUnitEffect && reverb.name == "AUReverb2")
        let bogus = Self.apple(kAudioUnitType_Effect, 0x7A7A_7A7A)
        await #expect(throws: NSError.self) { _ = try await AVAudioUnit.instantiate(with: bogus) }
        let (unit, error): (AVAudioUnit?, NSError?) = await withCheckedContinuation { continuation in
            AVAudioUnit.instantiate(with: bogus) { unit, error in continuation.resume(returning: (unit, error as NSError?)) }
        }
        #expect(unit == nil)
        #expect(error?.domain == NSOSStatusErrorDomain && error?.code == -3000)
    }

    // MARK: 2. AVAudioStereoMixing

    @Test func stereoMixingIsTheProtocolOfPanAndMixingRefinesIt() throws {
        func hardLeft(_ sources: [any AVAudioStereoMixing]) { for s in sources { s.pan = -1 } }
        let engine = try Self.offlineEngine()
        let player = AVAudioPlayerNode()
        engine.attach(player)
        let mono = try #require(AVAudioFormat(standardFormatWithSampleRate: 48000, channels: 1))
        engine.connect(player, to: engine.mainMixerNode, format: mono)
        let mixing: any AVAudioMixing = player
        let stereo: any AVAudioStereoMixing = mixing
        hardLeft([stereo])
        #expect(player.pan == -1)
        try engine.start()
        player.scheduleBuffer(AVAudioEngineOfflineTests.toneBuffer(frequency: 500, amplitude: 0.5, frames: 9600))
        player.play()
        let out = try AVAudioEngineOfflineTests.render(engine, total: 9600)
        let left = toneAmplitude(out[0], freq: 500, rate: 48000, from: 2400, count: 4800)
        let right = toneAmplitude(out[1], freq: 500, rate: 48000, from: 2400, count: 4800)
        #expect(left > 0.3 && right < 0.01, "pan -1 set through AVAudioStereoMixing: left \(left), right \(right)")
        engine.stop()
    }

    // MARK: 3. lastRenderTime

    @Test func lastRenderTimeIsNilForANodeOutsideTheRenderingGraph() throws {
        let engine = try Self.offlineEngine()
        let connected = AVAudioPlayerNode(), lonely = AVAudioPlayerNode(), dangling = AVAudioUnitReverb()
        let feedsDangling = AVAudioPlayerNode()
        for n in [connected, lonely, dangling, feedsDangling] as [AVAudioNode] { engine.attach(n) }
        engine.connect(connected, to: engine.mainMixerNode, format: nil)
        engine.connect(feedsDangling, to: dangling, format: nil)
        try engine.start()
        let buffer = try #require(AVAudioPCMBuffer(pcmFormat: engine.manualRenderingFormat, frameCapacity: 1024))
        #expect(try engine.renderOffline(1024, to: buffer) == .success)
        #expect(connected.lastRenderTime != nil)
        #expect(engine.mainMixerNode.lastRenderTime != nil)
        #expect(lonely.lastRenderTime == nil, "attached, connected to nothing")
        #expect(dangling.lastRenderTime == nil, "fed, but its output goes nowhere")
        #expect(feedsDangling.lastRenderTime == nil, "its chain ends before the output")
        engine.connect(lonely, to: engine.mainMixerNode, format: nil)
        #expect(try engine.renderOffline(1024, to: buffer) == .success)
        #expect(lonely.lastRenderTime != nil, "connected now")
        engine.stop()
        #expect(connected.lastRenderTime == nil, "stopped")
    }

    // MARK: 4. Manual rendering input

    /// A stereo block (440 Hz left, 660 Hz right, 0.5) through the input node, an EQ at −6.02 dB
    /// and the main mixer, rendered offline in 1000-frame calls: every frame the block gave is
    /// rendered, once, at half the level, in its channel.
    @Test func theInputNodePullsItsBlockInManualRendering() throws {
        let engine = try Self.offlineEngine()
        let format = try #require(AVAudioFormat(standardFormatWithSampleRate: 48000, channels: 2))
        let total = 48000
        let source = try #require(AVAudioPCMBuffer(pcmFormat: format, frameCapacity: 1024))
        var position = 0
        var asked: [AVAudioFrameCount] = []
        let ok = engine.inputNode.setManualRenderingInputPCMFormat(format) { frames in
            asked.append(frames)
            for f in 0..<Int(frames) {
                let t = Double(position + f) / 48000
                source.floatChannelData![0][f] = Float(0.5 * sin(2 * .pi * 440 * t))
                source.floatChannelData![1][f] = Float(0.5 * sin(2 * .pi * 660 * t))
            }
            source.frameLength = frames
            position += Int(frames)
            return source.audioBufferList
        }
        #expect(ok)
        #expect(engine.inputNode.inputFormat(forBus: 0).channelCount == 2)
        let eq = AVAudioUnitEQ(numberOfBands: 1)
        eq.globalGain = -6.0206
        engine.attach(eq)
        engine.connect(engine.inputNode, to: eq, format: format)
        engine.connect(eq, to: engine.mainMixerNode, format: format)
        try engine.start()
        let buffer = try #require(AVAudioPCMBuffer(pcmFormat: engine.manualRenderingFormat, frameCapacity: 1024))
        var out: [[Float]] = [[], []]
        while engine.manualRenderingSampleTime < total {
            let status = try engine.renderOffline(1000, to: buffer)
            try #require(status == .success)
            #expect(buffer.frameLength == 1000)
            for c in 0..<2 { out[c] += Array(UnsafeBufferPointer(start: buffer.floatChannelData![c], count: Int(buffer.frameLength))) }
        }
        #expect(out[0].count == total && engine.manualRenderingSampleTime == AVAudioFramePosition(total))
        #expect(Int(asked.reduce(0, +)) == total, "the block gave each rendered frame once: \(asked.reduce(0, +))")
        let left440 = toneAmplitude(out[0], freq: 440, rate: 48000, from: 4800, count: 38400)
        let right660 = toneAmplitude(out[1], freq: 660, rate: 48000, from: 4800, count: 38400)
        let leftLeak = toneAmplitude(out[0], freq: 660, rate: 48000, from: 4800, count: 38400)
        #expect(abs(left440 - 0.25) < 0.0125, "440 Hz left at 0.25: \(left440)")
        #expect(abs(right660 - 0.25) < 0.0125, "660 Hz right at 0.25: \(right660)")
        #expect(leftLeak < 0.001, "channels kept apart: \(leftLeak)")
        // Sample by sample: the output is the block's audio at half, not shifted.
        var worst: Float = 0
        for i in 4800..<total {
            let expected = Float(0.25 * sin(2 * .pi * 440 * Double(i) / 48000))
            worst = max(worst, abs(out[0][i] - expected))
        }
        #expect(worst < 0.002, "aligned with the block's audio: worst error \(worst)")
        engine.stop()
    }

    /// A mono block at 24 kHz into a 48 kHz engine: resampled on the way, so the block is asked
    /// for about half the frames rendered and the tone keeps its frequency.
    @Test func anInputBlockAtAnotherRateIsResampled() throws {
        let engine = try Self.offlineEngine()
        let format = try #require(AVAudioFormat(standardFormatWithSampleRate: 24000, channels: 1))
        let source = try #require(AVAudioPCMBuffer(pcmFormat: format, frameCapacity: 4096))
        var position = 0
        #expect(engine.inputNode.setManualRenderingInputPCMFormat(format) { frames in
            for f in 0..<Int(frames) { source.floatChannelData![0][f] = Float(0.5 * sin(2 * .pi * 1000 * Double(position + f) / 24000)) }
            source.frameLength = frames
            position += Int(frames)
            return source.audioBufferList
        })
        #expect(engine.inputNode.outputFormat(forBus: 0).sampleRate == 24000)
        engine.connect(engine.inputNode, to: engine.mainMixerNode, format: format)
        try engine.start()
        let out = try AVAudioEngineOfflineTests.render(engine, total: 48000)
        try #require(out[0].count == 48000)
        #expect(abs(position - 24000) <= 1024, "the block gave about 24000 frames (within a slice: the resampler reads ahead) for 48000 rendered: \(position)")
        let f = dominantFrequency(Array(out[0][4800..<43200]), sampleRate: 48000)
        #expect(abs(f - 1000) < 5, "1 kHz after resampling: \(f)")
        #expect(toneAmplitude(out[0], freq: 1000, rate: 48000, from: 4800, count: 38400) > 0.2)
        engine.stop()
    }

    /// Real-time manual rendering: `manualRenderingBlock` renders the input block's audio and
    /// reports `.insufficientDataFromInputNode` for a call where the block had none.
    @Test func theInputBlockFeedsRealtimeManualRendering() throws {
        let engine = AVAudioEngine()
        let format = try #require(AVAudioFormat(standardFormatWithSampleRate: 48000, channels: 2))
        try engine.enableManualRenderingMode(.realtime, format: format, maximumFrameCount: 512)
        let mono = try #require(AVAudioFormat(standardFormatWithSampleRate: 48000, channels: 1))
        let source = try #require(AVAudioPCMBuffer(pcmFormat: mono, frameCapacity: 512))
        var give = true
        #expect(engine.inputNode.setManualRenderingInputPCMFormat(mono) { frames in
            guard give else { return nil }
            for f in 0..<Int(frames) { source.floatChannelData![0][f] = 0.5 }
            source.frameLength = frames
            return source.audioBufferList
        })
        engine.connect(engine.inputNode, to: engine.mainMixerNode, format: mono)
        try engine.start()
        let block = engine.manualRenderingBlock
        let out = try #require(AVAudioPCMBuffer(pcmFormat: format, frameCapacity: 512))
        var status: OSStatus = 0
        #expect(block(256, out.mutableAudioBufferList, &status) == .success)
        out.frameLength = 256
        let level = out.floatChannelData![0][255]
        #expect(level > 0.3, "the block's constant 0.5 through the mixer: \(level)")
        give = false
        #expect(block(256, out.mutableAudioBufferList, &status) == .insufficientDataFromInputNode)
        #expect(out.floatChannelData![0][255] == 0, "no data: silence")
        give = true
        #expect(block(256, out.mutableAudioBufferList, &status) == .success)
        engine.stop()
    }

    @Test func anInputBlockWithoutDataRendersSilenceAndSaysSo() throws {
        let engine = try Self.offlineEngine()
        let format = try #require(AVAudioFormat(commonFormat: .pcmFormatInt16, sampleRate: 48000, channels: 1, interleaved: true))
        let source = try #require(AVAudioPCMBuffer(pcmFormat: format, frameCapacity: 1024))
        var calls = 0
        #expect(engine.inputNode.setManualRenderingInputPCMFormat(format) { frames in
            calls += 1
            guard calls == 1 else { return nil }
            for f in 0..<Int(frames) { source.int16ChannelData![0][f] = Int16(16384 * sin(2 * .pi * 1000 * Double(f) / 48000)) }
            source.frameLength = frames
            return source.audioBufferList
        })
        engine.connect(engine.inputNode, to: engine.mainMixerNode, format: nil)
        try engine.start()
        let buffer = try #require(AVAudioPCMBuffer(pcmFormat: engine.manualRenderingFormat, frameCapacity: 1024))
        #expect(try engine.renderOffline(960, to: buffer) == .success)
        let first = Array(UnsafeBufferPointer(start: buffer.floatChannelData![0], count: 960))
        #expect(toneAmplitude(first, freq: 1000, rate: 48000, from: 0, count: 960) > 0.2, "Int16 input read")
        #expect(try engine.renderOffline(960, to: buffer) == .insufficientDataFromInputNode)
        let second = UnsafeBufferPointer(start: buffer.floatChannelData![0], count: 960)
        #expect(second.allSatisfy { $0 == 0 }, "no data: silence")
        engine.stop()
    }
}
