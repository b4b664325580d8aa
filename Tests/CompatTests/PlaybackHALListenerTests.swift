// Issue 17: HAL property listeners are called as Apple's HAL calls them, written as macOS code
// registers them (only the import differs), against a private PulseAudio daemon changed with
// pactl: a sink loaded and unloaded, the default sink and source set.
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import AudioTestSupport
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
        let client = Unmanaged.passUnretained(heard).toOpaque()
        let system = AudioObjectID(kAudioObjectSystemObject)
        let selectors = [kAudioHardwarePropertyDevices, kAudioHardwarePropertyDefaultOutputDevice, kAudioHardwarePropertyDefaultInputDevice]
        for selector in selectors {
            var address = AudioObjectPropertyAddress(mSelector: selector, mScope: kAudioObjectPropertyScopeGlobal,
                                                     mElement: kAudioObjectPropertyElementMain)
            #expect(AudioObjectAddPropertyListener(system, &address, heardListener, client) == noErr)
        }

        // A sink appears: the device list changes (the sink and its monitor source).
        let index = try pactl(daemon, ["load-module", "module-null-sink", "sink_name=oat_extra"]).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(Int(index) != nil, "load-module said \(index)")
        #expect(eventually(5) { heard.count(system, kAudioHardwarePropertyDevices) >= 1 }, "no Devices call after a sink was loaded")
        let extra = try #require(deviceWithUID("oat_extra"))
        var alive = AudioObjectPropertyAddress(mSelector: kAudioDevicePropertyDeviceIsAlive, mScope: kAudioObjectPropertyScopeGlobal,
                                               mElement: kAudioObjectPropertyElementMain)
        #expect(AudioObjectAddPropertyListener(extra, &alive, heardListener, client) == noErr)

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
        let answered = heard.queriesAnswered.load(ordering: .relaxed)
        let onMain = heard.onMainThread.load(ordering: .relaxed)
        let listenerCalls = heard.listenerCalls.load(ordering: .relaxed)
        #expect(answered > 0 && answered == listenerCalls, "\(answered) of \(listenerCalls) HAL queries from a listener answered")
        #expect(!onMain, "a listener ran on the thread that registered it")

        // Removed: no more calls.
        for selector in selectors {
            var address = AudioObjectPropertyAddress(mSelector: selector, mScope: kAudioObjectPropertyScopeGlobal,
                                                     mElement: kAudioObjectPropertyElementMain)
            #expect(AudioObjectRemovePropertyListener(system, &address, heardListener, client) == noErr)
        }
        #expect(AudioObjectRemovePropertyListener(extra, &alive, heardListener, client) == noErr)
        let total = heard.total
        _ = try pactl(daemon, ["load-module", "module-null-sink", "sink_name=oat_later"])
        usleep(1_000_000)
        #expect(heard.total == total, "listeners were called after they were removed")
    }
}
