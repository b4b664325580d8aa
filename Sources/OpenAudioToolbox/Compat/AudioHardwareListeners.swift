// Calls the HAL's property listeners (AudioObjectAddPropertyListener) as Apple's HAL does: the
// system object's kAudioHardwarePropertyDevices when a device appears or goes,
// kAudioHardwarePropertyDefaultOutputDevice / DefaultSystemOutputDevice / DefaultInputDevice when
// a default changes, and a device's kAudioDevicePropertyDeviceIsAlive when it goes away. Backed by
// PulseAudio's subscription events (PulseAudioDeviceWatcher) when the HAL maps PulseAudio; over
// ALSA nothing is watched (no hot-plug events there), so listeners are kept but not called.
//
// Listeners run on the watcher's thread (not a render thread), with no lock held, one call per
// object with every changed address of that object, as Apple's HAL batches them.

import OATCore
import OATDevices
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

enum HALNotifier {
    /// A registered listener: the address it asked for and how to call it.
    struct Entry: @unchecked Sendable {
        var object: AudioObjectID
        var address: AudioObjectPropertyAddress
        var clientData: UInt
        var call: (AudioObjectID, [AudioObjectPropertyAddress]) -> Void
    }

    /// What the listeners are told about, as last seen.
    struct Snapshot: Equatable {
        var devices: [AudioObjectID]
        var defaultOutput: AudioObjectID
        var defaultInput: AudioObjectID
    }

    struct State {
        var entries: [(id: UInt64, entry: Entry)] = []
        var nextID: UInt64 = 1
        var watcher: PulseAudioDeviceWatcher?
        var snapshot: Snapshot?
        /// The listener being called now (its id) and the thread calling it: a removal from
        /// another thread waits until that call has returned.
        var calling: UInt64?
        var callingThread: pthread_t?
    }

    static let state = Locked(State())

    /// The devices and defaults now.
    static func snapshot() -> Snapshot {
        let all = HAL.devices()
        let out = all.first { !$0.1.isInput && $0.1.isDefault }?.0 ?? all.first { !$0.1.isInput }?.0 ?? kAudioObjectUnknown
        let inp = all.first { $0.1.isInput && $0.1.isDefault }?.0 ?? all.first { $0.1.isInput }?.0 ?? kAudioObjectUnknown
        return Snapshot(devices: all.map(\.0).sorted(), defaultOutput: out, defaultInput: inp)
    }

    /// Registers a listener; starts watching PulseAudio with the first one.
    static func add(_ entry: Entry) {
        let needsWatcher = state.withLock { s -> Bool in
            s.entries.append((s.nextID, entry))
            s.nextID += 1
            return s.watcher == nil
        }
        guard needsWatcher, PulseAudioOutputDevice.serverAnswers() else { return }
        let first = snapshot()
        guard let watcher = try? PulseAudioDeviceWatcher(onChange: { changed() }) else { return }
        let extra = state.withLock { s -> PulseAudioDeviceWatcher? in
            if s.watcher != nil || s.entries.isEmpty { return watcher }
            s.watcher = watcher
            s.snapshot = first
            return nil
        }
        extra?.stop()
    }

    /// Removes the listener registered with the same object, address and client data (the
    /// first such one); stops watching when none is left. False when there was none.
    ///
    /// As Apple's HAL promises: once this returns, the listener is not called again. A call
    /// already under way on the notification thread is waited for (unless the listener removes
    /// itself, or another, from inside a call: that thread does not wait for itself), so that a
    /// caller may free the client data right after.
    @discardableResult
    static func remove(object: AudioObjectID, address: AudioObjectPropertyAddress, clientData: UInt) -> Bool {
        let (found, idle) = state.withLock { s -> (UInt64?, PulseAudioDeviceWatcher?) in
            guard let i = s.entries.firstIndex(where: { $0.entry.object == object && $0.entry.address == address && $0.entry.clientData == clientData }) else {
                return (nil, nil)
            }
            let id = s.entries.remove(at: i).id
            guard s.entries.isEmpty else { return (id, nil) }
            defer { s.watcher = nil; s.snapshot = nil }
            return (id, s.watcher)
        }
        guard let found else { return false }
        let onNotifierThread = state.withLock { s in s.callingThread.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
        if onNotifierThread {
            // Inside a listener: the watcher's thread cannot join itself; it ends on another.
            if let idle { DispatchQueue.global().async { idle.stop() } }
            return true
        }
        // A call of this listener that started before the removal: wait for it to return.
        while state.withLock({ $0.calling == found }) { usleep(200) }
        // No call starts after this: the watcher's thread has ended.
        idle?.stop()
        return true
    }

    /// Calls the listener `id` with `addresses` if it is still registered (a removal from
    /// another thread waits for the call to return).
    private static func call(_ id: UInt64, _ object: AudioObjectID, _ addresses: [AudioObjectPropertyAddress]) {
        let entry = state.withLock { s -> Entry? in
            guard let e = s.entries.first(where: { $0.id == id })?.entry else { return nil }
            s.calling = id
            s.callingThread = pthread_self()
            return e
        }
        guard let entry else { return }
        defer { state.withLock { s in s.calling = nil; s.callingThread = nil } }
        entry.call(object, addresses)
    }

    /// The watcher saw a burst of events: find what changed and tell the listeners.
    static func changed() {
        let now = snapshot()
        let before = state.withLock { s -> Snapshot? in
            defer { s.snapshot = now }
            return s.snapshot
        }
        guard let before, before != now else { return }
        var changes: [AudioObjectID: [AudioObjectPropertySelector]] = [:]
        func global(_ selector: AudioObjectPropertySelector) { changes[kAudioObjectSystemObject, default: []].append(selector) }
        if before.devices != now.devices { global(kAudioHardwarePropertyDevices) }
        if before.defaultOutput != now.defaultOutput {
            global(kAudioHardwarePropertyDefaultOutputDevice)
            global(kAudioHardwarePropertyDefaultSystemOutputDevice)
        }
        if before.defaultInput != now.defaultInput { global(kAudioHardwarePropertyDefaultInputDevice) }
        for gone in Set(before.devices).subtracting(now.devices) { changes[gone, default: []].append(kAudioDevicePropertyDeviceIsAlive) }
        let entries = state.withLock { $0.entries }
        for (object, selectors) in changes.sorted(by: { $0.key < $1.key }) {
            for (id, entry) in entries where entry.object == object {
                let matching = selectors.filter { matches(entry.address, selector: $0) }
                guard !matching.isEmpty else { continue }
                // Looked up again at the call: a listener removed since the list was taken is
                // not called.
                call(id, object, matching.map {
                    AudioObjectPropertyAddress(mSelector: $0, mScope: kAudioObjectPropertyScopeGlobal, mElement: kAudioObjectPropertyElementMain)
                })
            }
        }
    }

    /// Whether a listener for `address` hears about `selector` (global scope, main element, as
    /// the HAL reports these; the wildcards match anything).
    static func matches(_ address: AudioObjectPropertyAddress, selector: AudioObjectPropertySelector) -> Bool {
        (address.mSelector == selector || address.mSelector == kAudioObjectPropertySelectorWildcard)
            && (address.mScope == kAudioObjectPropertyScopeGlobal || address.mScope == kAudioObjectPropertyScopeWildcard
                || address.mScope == kAudioObjectPropertyScopeOutput || address.mScope == kAudioObjectPropertyScopeInput)
            && (address.mElement == kAudioObjectPropertyElementMain || address.mElement == kAudioObjectPropertyElementWildcard)
    }
}

/// Any scope (Apple's `kAudioObjectPropertyScopeWildcard`, `'****'`).
public let kAudioObjectPropertyScopeWildcard: AudioObjectPropertyScope = fourCC("****")
/// Any element (Apple's `kAudioObjectPropertyElementWildcard`, `0xFFFFFFFF`).
public let kAudioObjectPropertyElementWildcard: AudioObjectPropertyElement = 0xFFFF_FFFF
