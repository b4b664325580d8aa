// Issue 17: the HAL's block listeners run on the dispatch queue they were given, and an output
// unit's kAudioOutputUnitProperty_CurrentDevice names a HAL device and plays to it, written as
// macOS code does (only the import differs), against a private PulseAudio daemon changed with
// pactl.
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import OATTestSupport
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import Testing

/// A render callback's tone (what the output unit plays).
private func quietTone(_ refCon: UnsafeMutableRawPointer, _ flags: UnsafeMutablePointer<AudioUnitRenderActionFlags>,
                       _ time: UnsafePointer<AudioTimeStamp>, _ bus: UInt32, _ frames: UInt32,
                       _ ioData: UnsafeMutablePointer<AudioBufferList>?) -> OSStatus {
    for buffer in UnsafeMutableAudioBufferListPointer(ioData!) {
        let p = buffer.mData!.assumingMemoryBound(to: Float.self)
        for i in 0..<Int(frames) { p[i] = Float(0.1 * sin(Double(i) * 0.06)) }
    }
    return noErr
}

/// What a listener block saw.
private final class BlockCalls: @unchecked Sendable {
    let calls = Atomic<Int>(0)
    let offQueue = Atomic<Int>(0)
    let devicesSeen = Atomic<Int>(0)
}

private func waitFor(_ seconds: Double, _ condition: () -> Bool) -> Bool {
    for _ in 0..<Int(seconds * 100) {
        if condition() { return true }
        usleep(10_000)
    }
    return condition()
}

private func systemDevice(_ selector: AudioObjectPropertySelector) -> AudioDeviceID {
    var address = AudioObjectPropertyAddress(mSelector: selector, mScope: kAudioObjectPropertyScopeGlobal, mElement: kAudioObjectPropertyElementMain)
    var device = AudioDeviceID(0)
    var size = UInt32(MemoryLayout<AudioDeviceID>.size)
    _ = AudioObjectGetPropertyData(AudioObjectID(kAudioObjectSystemObject), &address, 0, nil, &size, &device)
    return device
}

private func deviceNamed(_ uid: String) -> AudioDeviceID? {
    var address = AudioObjectPropertyAddress(mSelector: kAudioHardwarePropertyDevices, mScope: kAudioObjectPropertyScopeGlobal,
                                             mElement: kAudioObjectPropertyElementMain)
    var size: UInt32 = 0
    guard AudioObjectGetPropertyDataSize(AudioObjectID(kAudioObjectSystemObject), &address, 0, nil, &size) == noErr else { return nil }
    var devices = [AudioDeviceID](repeating: 0, count: Int(size) / 4)
    guard AudioObjectGetPropertyData(AudioObjectID(kAudioObjectSystemObject), &address, 0, nil, &size, &devices) == noErr else { return nil }
    for d in devices {
        var a = AudioObjectPropertyAddress(mSelector: kAudioDevicePropertyDeviceUID, mScope: kAudioObjectPropertyScopeGlobal,
                                           mElement: kAudioObjectPropertyElementMain)
        var value: CFString? = nil
        var s = UInt32(MemoryLayout<CFString?>.size)
        let status = withUnsafeMutablePointer(to: &value) { AudioObjectGetPropertyData(d, &a, 0, nil, &s, $0) }
        if status == noErr, let value, String(describing: value) == uid { return d }
    }
    return nil
}

@Suite("PlaybackHALDeviceTests", .serialized, .requires(PulseTestDaemon.unavailableReason))
struct PlaybackHALDeviceTests {
    func pactl(_ daemon: PulseTestDaemon, _ arguments: [String]) throws -> String {
        let pactl = try #require(ChildProcess.which("pactl"), "pactl is not installed")
        let out = "\(daemon.directory)/pactl-\(UInt32.random(in: 0...UInt32.max)).out"
        defer { unlink(out) }
        let p = try ChildProcess.spawn(pactl, arguments, environment: daemon.environment, outputPath: out)
        #expect(waitFor(10) { !p.isRunning }, "pactl \(arguments) did not finish")
        return Corpus.read(out).map { String(decoding: $0, as: UTF8.self) } ?? ""
    }

    @Test("A listener block runs on its dispatch queue when a device appears; removed, it is not called")
    func listenerBlockOnItsQueue() throws {
        let daemon = try PulseTestDaemon(sampleRate: 48000, channels: 2)
        setenv("PULSE_SERVER", daemon.server, 1)
        defer { unsetenv("PULSE_SERVER"); daemon.stop() }
        let queue = DispatchQueue(label: "oat.test.hal-listener")
        let key = DispatchSpecificKey<Int>()
        queue.setSpecific(key: key, value: 17)
        let heard = BlockCalls()
        let block: AudioObjectPropertyListenerBlock = { count, addresses in
            heard.calls.add(1, ordering: .relaxed)
            if DispatchQueue.getSpecific(key: key) != 17 { heard.offQueue.add(1, ordering: .relaxed) }
            for i in 0..<Int(count) where addresses[i].mSelector == kAudioHardwarePropertyDevices { heard.devicesSeen.add(1, ordering: .relaxed) }
        }
        var address = AudioObjectPropertyAddress(mSelector: kAudioHardwarePropertyDevices, mScope: kAudioObjectPropertyScopeGlobal,
                                                 mElement: kAudioObjectPropertyElementMain)
        #expect(AudioObjectAddPropertyListenerBlock(AudioObjectID(kAudioObjectSystemObject), &address, queue, block) == noErr)
        try daemon.loadNullSink(.init(name: "oat_block", rate: 48000, channels: 2))
        #expect(waitFor(5) { heard.devicesSeen.load(ordering: .relaxed) >= 1 }, "no Devices call after a sink was loaded")
        #expect(heard.offQueue.load(ordering: .relaxed) == 0, "the block ran off its dispatch queue")
        #expect(AudioObjectRemovePropertyListenerBlock(AudioObjectID(kAudioObjectSystemObject), &address, queue, block) == noErr)
        #expect(AudioObjectRemovePropertyListenerBlock(AudioObjectID(kAudioObjectSystemObject), &address, queue, block) != noErr)
        queue.sync {}
        let before = heard.calls.load(ordering: .relaxed)
        try daemon.loadNullSink(.init(name: "oat_block_later", rate: 48000, channels: 2))
        usleep(1_000_000)
        queue.sync {}
        #expect(heard.calls.load(ordering: .relaxed) == before, "the block was called after it was removed")
    }

    @Test("kAudioOutputUnitProperty_CurrentDevice: the default output device, settable to another sink that then plays")
    func outputUnitCurrentDevice() throws {
        let daemon = try PulseTestDaemon(sampleRate: 48000, channels: 2)
        setenv("PULSE_SERVER", daemon.server, 1)
        defer { unsetenv("PULSE_SERVER"); daemon.stop() }
        try daemon.loadNullSink(.init(name: "oat_second", rate: 48000, channels: 2))
        let second = try #require(deviceNamed("oat_second"), "the loaded sink is not a HAL device")
        var desc = AudioComponentDescription(componentType: kAudioUnitType_Output, componentSubType: kAudioUnitSubType_DefaultOutput,
                                             componentManufacturer: kAudioUnitManufacturer_Apple, componentFlags: 0, componentFlagsMask: 0)
        let component = try #require(AudioComponentFindNext(nil, &desc))
        var made: AudioUnit?
        #expect(AudioComponentInstanceNew(component, &made) == noErr)
        let unit = try #require(made)
        defer { AudioComponentInstanceDispose(unit) }

        var device = AudioDeviceID(0)
        var size = UInt32(MemoryLayout<AudioDeviceID>.size)
        #expect(AudioUnitGetProperty(unit, kAudioOutputUnitProperty_CurrentDevice, kAudioUnitScope_Global, 0, &device, &size) == noErr)
        #expect(device == systemDevice(kAudioHardwarePropertyDefaultOutputDevice) && device != 0)
        // An input device is refused; the second sink is taken.
        var input = systemDevice(kAudioHardwarePropertyDefaultInputDevice)
        #expect(AudioUnitSetProperty(unit, kAudioOutputUnitProperty_CurrentDevice, kAudioUnitScope_Global, 0, &input, 4) == kAudioUnitErr_InvalidPropertyValue)
        var target = second
        #expect(AudioUnitSetProperty(unit, kAudioOutputUnitProperty_CurrentDevice, kAudioUnitScope_Global, 0, &target, 4) == noErr)
        #expect(AudioUnitGetProperty(unit, kAudioOutputUnitProperty_CurrentDevice, kAudioUnitScope_Global, 0, &device, &size) == noErr)
        #expect(device == second)

        // Started, the unit's stream plays to that sink.
        var callback = AURenderCallbackStruct(inputProc: quietTone, inputProcRefCon: nil)
        #expect(AudioUnitSetProperty(unit, kAudioUnitProperty_SetRenderCallback, kAudioUnitScope_Input, 0, &callback,
                                     UInt32(MemoryLayout<AURenderCallbackStruct>.size)) == noErr)
        #expect(AudioUnitInitialize(unit) == noErr)
        #expect(AudioOutputUnitStart(unit) == noErr)
        defer { AudioOutputUnitStop(unit) }
        let sinks = try pactl(daemon, ["list", "short", "sinks"])
        let secondIndex = try #require(sinks.split(separator: "\n").first { $0.split(separator: "\t").dropFirst().first == "oat_second" }?
            .split(separator: "\t").first.map(String.init), "no oat_second in \(sinks)")
        var inputs = ""
        #expect(waitFor(5) {
            inputs = (try? pactl(daemon, ["list", "short", "sink-inputs"])) ?? ""
            return inputs.split(separator: "\n").contains { $0.split(separator: "\t").dropFirst().first.map(String.init) == secondIndex }
        }, "no stream on sink \(secondIndex) (oat_second): \(inputs)")

        // A generic output has no device.
        var generic = AudioComponentDescription(componentType: kAudioUnitType_Output, componentSubType: kAudioUnitSubType_GenericOutput,
                                                componentManufacturer: kAudioUnitManufacturer_Apple, componentFlags: 0, componentFlagsMask: 0)
        var g: AudioUnit?
        #expect(AudioComponentInstanceNew(try #require(AudioComponentFindNext(nil, &generic)), &g) == noErr)
        let genericUnit = try #require(g)
        defer { AudioComponentInstanceDispose(genericUnit) }
        #expect(AudioUnitGetProperty(genericUnit, kAudioOutputUnitProperty_CurrentDevice, kAudioUnitScope_Global, 0, &device, &size)
                == kAudioUnitErr_InvalidProperty)
    }
}
