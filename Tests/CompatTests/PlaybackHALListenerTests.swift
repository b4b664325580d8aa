// Issue 17: HAL property listeners are called as Apple's HAL calls them, written as macOS code
// registers them (only the import differs), against a private PulseAudio daemon changed with
// pactl: a sink loaded and unloaded, the default sink and source set.
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import OATTestSupport
import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import Testing

/// What the listeners heard: (object, selector) in order, and whether a HAL query made from
/// inside a listener answered (it would deadlock if a lock were held).
private final class HeardChanges: @unchecked Sendable {
    let calls = Locked<[(AudioObjectID, AudioObjectPropertySelector)]>([])
    let queriesAnswered = Atomic<Int>(0)
    let listenerCalls = Atomic<Int>(0)
    let onMainThread = Atomic<Bool>(false)
    let mainThread = pthread_self()

    func count(_ object: AudioObjectID, _ selector: AudioObjectPropertySelector) -> Int {
        calls.withLock { $0.filter { $0.0 == object && $0.1 == selector }.count }
    }
    var total: Int { calls.withLock { $0.count } }
}

private func heardListener(_ object: AudioObjectID, _ count: UInt32, _ addresses: UnsafePointer<AudioObjectPropertyAddress>,
                           _ clientData: UnsafeMutableRawPointer?) -> OSStatus {
    let heard = Unmanaged<HeardChanges>.fromOpaque(clientData!).takeUnretainedValue()
    if pthread_equal(pthread_self(), heard.mainThread) != 0 { heard.onMainThread.store(true, ordering: .relaxed) }
    heard.listenerCalls.add(1, ordering: .relaxed)
    for i in 0..<Int(count) { heard.calls.withLock { $0.append((object, addresses[i].mSelector)) } }
    // A listener that asks the HAL for the new default (what real listeners do).
    var address = AudioObjectPropertyAddress(mSelector: kAudioHardwarePropertyDefaultOutputDevice, mScope: kAudioObjectPropertyScopeGlobal,
                                             mElement: kAudioObjectPropertyElementMain)
    var device = AudioDeviceID(0)
    var size = UInt32(MemoryLayout<AudioDeviceID>.size)
    if AudioObjectGetPropertyData(AudioObjectID(kAudioObjectSystemObject), &address, 0, nil, &size, &device) == noErr {
        heard.queriesAnswered.add(1, ordering: .relaxed)
    }
    return noErr
}

private func deviceWithUID(_ uid: String) -> AudioDeviceID? {
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

/// Waits up to `seconds` for `condition`.
private func eventually(_ seconds: Double, _ condition: () -> Bool) -> Bool {
    for _ in 0..<Int(seconds * 100) {
        if condition() { return true }
        usleep(10_000)
    }
    return condition()
}

@Suite("PlaybackHALListenerTests", .serialized, .requires(PulseTestDaemon.unavailableReason))
struct PlaybackHALListenerTests {
    /// Runs pactl against the daemon; its output.
    func pactl(_ daemon: PulseTestDaemon, _ arguments: [String]) throws -> String {
        let pactl = try #require(ChildProcess.which("pactl"), "pactl is not installed")
        let out = "\(daemon.directory)/pactl-\(UInt32.random(in: 0...UInt32.max)).out"
        defer { unlink(out) }
        let p = try ChildProcess.spawn(pactl, arguments, environment: daemon.environment, outputPath: out)
        #expect(eventually(10) { !p.isRunning }, "pactl \(arguments) did not finish")
        return Corpus.read(out).map { String(decoding: $0, as: UTF8.self) } ?? ""
    }

    @Test("Listeners hear devices come and go and the defaults change; removed listeners hear nothing")
    func listenersHearDeviceChanges() throws {
        let daemon = try PulseTestDaemon(sampleRate: 48000, channels: 2)
        setenv("PULSE_SERVER", daemon.server, 1)
        defer { unsetenv("PULSE_SERVER"); daemon.stop() }
        let heard = HeardChanges()
        // The listeners' client data stays alive until every listener is removed, whichever way
        // the test ends (a listener left registered by a failed step would be called later with
        // freed client data, and crash the test process).
        let client = Unmanaged.passRetained(heard).toOpaque()
        let registered = Locked<[(AudioObjectID, AudioObjectPropertyAddress)]>([])
        defer {
            for (object, address) in registered.withLock({ $0 }) {
                var a = address
                AudioObjectRemovePropertyListener(object, &a, heardListener, client)
            }
            Unmanaged<HeardChanges>.fromOpaque(client).release()
        }
        let system = AudioObjectID(kAudioObjectSystemObject)
        let selectors = [kAudioHardwarePropertyDevices, kAudioHardwarePropertyDefaultOutputDevice, kAudioHardwarePropertyDefaultInputDevice]
        for selector in selectors {
            var address = AudioObjectPropertyAddress(mSelector: selector, mScope: kAudioObjectPropertyScopeGlobal,
                                                     mElement: kAudioObjectPropertyElementMain)
            #expect(AudioObjectAddPropertyListener(system, &address, heardListener, client) == noErr)
            registered.withLock { $0.append((system, address)) }
        }

        // A sink appears: the device list changes (the sink and its monitor source).
        let index = String(try daemon.loadNullSink(.init(name: "oat_extra", rate: 48000, channels: 2)))
        #expect(eventually(5) { heard.count(system, kAudioHardwarePropertyDevices) >= 1 }, "no Devices call after a sink was loaded")
        let extra = try #require(deviceWithUID("oat_extra"))
        var alive = AudioObjectPropertyAddress(mSelector: kAudioDevicePropertyDeviceIsAlive, mScope: kAudioObjectPropertyScopeGlobal,
                                               mElement: kAudioObjectPropertyElementMain)
        #expect(AudioObjectAddPropertyListener(extra, &alive, heardListener, client) == noErr)
        registered.withLock { $0.append((extra, alive)) }

        // The defaults change.
        _ = try pactl(daemon, ["set-default-sink", "oat_extra"])
        #expect(eventually(5) { heard.count(system, kAudioHardwarePropertyDefaultOutputDevice) >= 1 }, "no DefaultOutputDevice call")
        _ = try pactl(daemon, ["set-default-source", "oat_extra.monitor"])
        #expect(eventually(5) { heard.count(system, kAudioHardwarePropertyDefaultInputDevice) >= 1 }, "no DefaultInputDevice call")

        // The sink goes: the list changes, the device is no longer alive, the default moves back.
        let devicesBefore = heard.count(system, kAudioHardwarePropertyDevices)
        let outputBefore = heard.count(system, kAudioHardwarePropertyDefaultOutputDevice)
        _ = try pactl(daemon, ["unload-module", index])
        #expect(eventually(5) { heard.count(extra, kAudioDevicePropertyDeviceIsAlive) == 1 }, "no DeviceIsAlive call for the sink that went")
        #expect(eventually(5) { heard.count(system, kAudioHardwarePropertyDevices) > devicesBefore })
        #expect(eventually(5) { heard.count(system, kAudioHardwarePropertyDefaultOutputDevice) > outputBefore })

        // Removed: no more calls. Once the removals have returned no call is under way, so the
        // counts below are final (read before, a call that had counted itself but not yet
        // finished its query made `answered` one short).
        for (object, address) in registered.withLock({ s in defer { s.removeAll() }; return s }) {
            var a = address
            #expect(AudioObjectRemovePropertyListener(object, &a, heardListener, client) == noErr)
        }
        let answered = heard.queriesAnswered.load(ordering: .relaxed)
        let onMain = heard.onMainThread.load(ordering: .relaxed)
        let listenerCalls = heard.listenerCalls.load(ordering: .relaxed)
        #expect(answered > 0 && answered == listenerCalls, "\(answered) of \(listenerCalls) HAL queries from a listener answered")
        #expect(!onMain, "a listener ran on the thread that registered it")
        let total = heard.total
        try daemon.loadNullSink(.init(name: "oat_later", rate: 48000, channels: 2))
        usleep(1_000_000)
        #expect(heard.total == total, "listeners were called after they were removed")
    }

    @Test("Removing a listener waits for a call of it under way: none runs after the removal returned")
    func removalWaitsForACallUnderWay() throws {
        let daemon = try PulseTestDaemon(sampleRate: 48000, channels: 2)
        setenv("PULSE_SERVER", daemon.server, 1)
        defer { unsetenv("PULSE_SERVER"); daemon.stop() }
        let slow = SlowListener()
        let client = Unmanaged.passRetained(slow).toOpaque()
        defer { Unmanaged<SlowListener>.fromOpaque(client).release() }
        var address = AudioObjectPropertyAddress(mSelector: kAudioHardwarePropertyDevices, mScope: kAudioObjectPropertyScopeGlobal,
                                                 mElement: kAudioObjectPropertyElementMain)
        let system = AudioObjectID(kAudioObjectSystemObject)
        // Another listener stays registered meanwhile (removing the last one stopped the HAL's
        // watcher thread, which waited for the call anyway).
        let other = HeardChanges()
        let otherClient = Unmanaged.passRetained(other).toOpaque()
        var otherAddress = AudioObjectPropertyAddress(mSelector: kAudioHardwarePropertyDefaultOutputDevice, mScope: kAudioObjectPropertyScopeGlobal,
                                                      mElement: kAudioObjectPropertyElementMain)
        #expect(AudioObjectAddPropertyListener(system, &otherAddress, heardListener, otherClient) == noErr)
        defer {
            AudioObjectRemovePropertyListener(system, &otherAddress, heardListener, otherClient)
            Unmanaged<HeardChanges>.fromOpaque(otherClient).release()
        }
        #expect(AudioObjectAddPropertyListener(system, &address, slowListener, client) == noErr)
        try daemon.loadNullSink(.init(name: "oat_slow", rate: 48000, channels: 2))
        let entered = eventually(5) { slow.state.load(ordering: .acquiring) >= 1 }
        #expect(entered, "the listener was not called for the new sink")
        #expect(AudioObjectRemovePropertyListener(system, &address, slowListener, client) == noErr)
        // The call that was under way has returned; none starts later.
        let after = slow.state.load(ordering: .acquiring)
        #expect(!entered || after == 2, "the removal returned while the listener was still running (state \(after))")
        let calls = slow.calls.load(ordering: .relaxed)
        try daemon.loadNullSink(.init(name: "oat_slow_later", rate: 48000, channels: 2))
        usleep(700_000)
        #expect(slow.calls.load(ordering: .relaxed) == calls, "called after the removal")
    }
}

/// A listener that takes 0.4 s: `state` 1 while inside its first call, 2 once that returned.
private final class SlowListener: Sendable {
    let state = Atomic<Int>(0)
    let calls = Atomic<Int>(0)
}

private func slowListener(_ object: AudioObjectID, _ count: UInt32, _ addresses: UnsafePointer<AudioObjectPropertyAddress>,
                          _ clientData: UnsafeMutableRawPointer?) -> OSStatus {
    let slow = Unmanaged<SlowListener>.fromOpaque(clientData!).takeUnretainedValue()
    slow.calls.add(1, ordering: .relaxed)
    guard slow.state.compareExchange(expected: 0, desired: 1, ordering: .acquiringAndReleasing).exchanged else { return noErr }
    usleep(400_000)
    slow.state.store(2, ordering: .releasing)
    return noErr
}
