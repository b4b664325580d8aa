// AUAudioUnit as Apple's I/O host interface, without a device: units of their own made from
// component descriptions, their busses, the output provider rendered through a generic output's
// render block, an effect fed by a pull block, render resources, errors; and parameter observers.
import Foundation
import OpenAVFAudio
import Testing

struct AUAudioUnitHostTests {
    static func apple(_ type: UInt32, _ subType: UInt32) -> AudioComponentDescription {
        AudioComponentDescription(componentType: type, componentSubType: subType, componentManufacturer: kAudioUnitManufacturer_Apple,
                                  componentFlags: 0, componentFlagsMask: 0)
    }

    /// The status an `NSOSStatusErrorDomain` error carries (nil: no error).
    static func status(_ body: () throws -> Void) -> Int? {
        do { try body(); return nil } catch { return (error as NSError).code }
    }

    @Test("Output units are AUAudioUnits of their own, with Apple's busses and capabilities")
    func ioUnitsHaveBusses() throws {
        let out = try AUAudioUnit(componentDescription: Self.apple(kAudioUnitType_Output, kAudioUnitSubType_DefaultOutput))
        #expect(out.componentName == "Apple: DefaultOutputUnit")
        #expect(out.inputBusses.count == 2 && out.outputBusses.count == 2)
        #expect(out.inputBusses[0].busType == .input && out.outputBusses[1].index == 1)
        #expect(out.canPerformOutput && !out.canPerformInput)
        #expect(out.isOutputEnabled && !out.isInputEnabled)
        #expect(!out.renderResourcesAllocated && !out.isRunning)
        let hal = try AUAudioUnit(componentDescription: Self.apple(kAudioUnitType_Output, kAudioUnitSubType_HALOutput))
        #expect(hal.canPerformInput && hal.canPerformOutput)
        let remote = try AUAudioUnit(componentDescription: Self.apple(kAudioUnitType_Output, kAudioUnitSubType_RemoteIO))
        #expect(remote.canPerformInput)
        // The render format a player sets on input bus 0 is the unit's stream format there.
        let format = try #require(AVAudioFormat(standardFormatWithSampleRate: 48000, channels: 1))
        try out.inputBusses[0].setFormat(format)
        #expect(out.inputBusses[0].format.sampleRate == 48000 && out.inputBusses[0].format.channelCount == 1)
        // The hardware cannot start before render resources are allocated.
        #expect(Self.status { try out.startHardware() } == Int(kAudioUnitErr_Uninitialized))
        out.maximumFramesToRender = 1024
        #expect(out.maximumFramesToRender == 1024)
    }

    @Test("No component: Apple's invalidComponentID; AVAudioUnit.instantiate makes an I/O unit whose auAudioUnit hosts it")
    func instantiation() async throws {
        #expect(Self.status { _ = try AUAudioUnit(componentDescription: Self.apple(kAudioUnitType_Output, 0x6E6F_6E65)) } == -3000)
        let unit = try await AVAudioUnit.instantiate(with: Self.apple(kAudioUnitType_Output, kAudioUnitSubType_DefaultOutput))
        #expect(unit.name == "DefaultOutputUnit" && unit.manufacturerName == "Apple")
        #expect(unit.auAudioUnit === unit.auAudioUnit)
        #expect(unit.auAudioUnit.canPerformOutput)
        var d = AudioComponentDescription()
        #expect(AudioComponentGetDescription(AudioComponentInstanceGetComponent(unit.audioUnit), &d) == noErr)
        #expect(d.componentSubType == kAudioUnitSubType_DefaultOutput)
        let fromBlock: AUAudioUnit? = await withCheckedContinuation { done in
            AUAudioUnit.instantiate(with: Self.apple(kAudioUnitType_Output, kAudioUnitSubType_GenericOutput)) { au, _ in done.resume(returning: au) }
        }
        #expect(fromBlock?.canPerformOutput == false)
    }

    @Test("A generic output renders exactly what its outputProvider gives, through its renderBlock")
    func outputProviderThroughRenderBlock() throws {
        let unit = try AUAudioUnit(componentDescription: Self.apple(kAudioUnitType_Output, kAudioUnitSubType_GenericOutput))
        let format = try #require(AVAudioFormat(standardFormatWithSampleRate: 44100, channels: 2))
        try unit.inputBusses[0].setFormat(format)
        try unit.outputBusses[0].setFormat(format)
        let calls = HostCallCounter()
        unit.outputProvider = { _, _, frames, _, data in
            calls.add()
            let list = UnsafeMutableAudioBufferListPointer(data)
            for (c, buffer) in list.enumerated() {
                let samples = buffer.mData!.assumingMemoryBound(to: Float.self)
                for i in 0..<Int(frames) { samples[i] = Float(i) / 1024 * (c == 0 ? 1 : -1) }
            }
            return noErr
        }
        try unit.allocateRenderResources()
        #expect(unit.renderResourcesAllocated)
        let out = try #require(AVAudioPCMBuffer(pcmFormat: format, frameCapacity: 512))
        out.frameLength = 512
        var flags = AudioUnitRenderActionFlags()
        var time = AudioTimeStamp()
        time.mFlags = .sampleTimeValid
        let status = unit.renderBlock(&flags, &time, 512, 0, out.mutableAudioBufferList, nil)
        #expect(status == noErr)
        #expect(calls.value >= 1)
        let left = out.floatChannelData![0], right = out.floatChannelData![1]
        #expect((0..<512).allSatisfy { left[$0] == Float($0) / 1024 && right[$0] == -Float($0) / 1024 })
        // No provider: silence, flagged.
        unit.outputProvider = nil
        var flags2 = AudioUnitRenderActionFlags()
        #expect(unit.renderBlock(&flags2, &time, 512, 0, out.mutableAudioBufferList, nil) == noErr)
        #expect((0..<512).allSatisfy { left[$0] == 0 })
        unit.deallocateRenderResources()
        #expect(!unit.renderResourcesAllocated)
    }

    @Test("An effect of its own renders its pull block's input (a delay set fully dry passes it through)")
    func effectWithPullBlock() throws {
        let delay = try AUAudioUnit(componentDescription: Self.apple(kAudioUnitType_Effect, kAudioUnitSubType_Delay))
        let mix = try #require(delay.parameterTree?.parameter(withAddress: AUParameterAddress(kDelayParam_WetDryMix)))
        mix.value = 0
        let format = try #require(AVAudioFormat(standardFormatWithSampleRate: 44100, channels: 2))
        try delay.inputBusses[0].setFormat(format)
        try delay.outputBusses[0].setFormat(format)
        try delay.allocateRenderResources()
        let out = try #require(AVAudioPCMBuffer(pcmFormat: format, frameCapacity: 256))
        out.frameLength = 256
        var flags = AudioUnitRenderActionFlags()
        var time = AudioTimeStamp()
        time.mFlags = .sampleTimeValid
        let pulls = HostCallCounter()
        let status = delay.renderBlock(&flags, &time, 256, 0, out.mutableAudioBufferList) { _, _, frames, _, data in
            pulls.add()
            for buffer in UnsafeMutableAudioBufferListPointer(data) {
                let samples = buffer.mData!.assumingMemoryBound(to: Float.self)
                for i in 0..<Int(frames) { samples[i] = sinf(Float(i) * 0.05) * 0.5 }
            }
            return noErr
        }
        #expect(status == noErr && pulls.value >= 1)
        let left = out.floatChannelData![0]
        let maxError = (0..<256).map { abs(left[$0] - sinf(Float($0) * 0.05) * 0.5) }.max() ?? 1
        #expect(maxError < 1e-5, "dry output differs from the input by \(maxError)")
    }

    @Test("Parameter observers: told of changes but their own, removable, gestures for automation observers")
    func parameterObservers() throws {
        let delay = AVAudioUnitDelay()
        let tree = try #require(delay.auAudioUnit.parameterTree)
        let mix = try #require(tree.parameter(withAddress: AUParameterAddress(kDelayParam_WetDryMix)))
        let seen = HostLog()
        let token = tree.token(byAddingParameterObserver: { address, value in seen.add("\(address)=\(value)") })
        let gestures = HostLog()
        let automation = mix.token(byAddingParameterAutomationObserver: { count, events in
            for i in 0..<count { gestures.add("\(events[i].eventType.rawValue):\(events[i].value)") }
        })
        mix.value = 30
        mix.setValue(40, originator: token)
        mix.setValue(50, originator: nil, atHostTime: 0, eventType: .touch)
        #expect(seen.items == ["\(kDelayParam_WetDryMix)=30.0"])
        #expect(delay.wetDryMix == 40)
        #expect(gestures.items == ["0:30.0", "0:40.0", "1:50.0"])
        tree.removeParameterObserver(token)
        mix.removeParameterObserver(automation)
        mix.value = 60
        #expect(seen.items.count == 1 && gestures.items.count == 3)
        #expect(delay.wetDryMix == 60)
    }
}

/// A thread-safe counter for render-thread callbacks in tests.
final class HostCallCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var n = 0
    func add() { lock.lock(); n += 1; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return n }
}

/// A thread-safe list of strings.
final class HostLog: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [String] = []
    func add(_ s: String) { lock.lock(); list.append(s); lock.unlock() }
    var items: [String] { lock.lock(); defer { lock.unlock() }; return list }
}
