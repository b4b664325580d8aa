// AVAudioSession's view of the devices: the route built from PulseAudio's sinks and sources
// (else ALSA's), and the watcher that turns PulseAudio's device events into route-change and
// interruption notifications while the session is active.
import Foundation
import OpenAudioToolbox
internal import OATDevices
internal import OATCore
#if canImport(Glibc)
import Glibc
#endif

// MARK: - Devices

/// The devices a session sees: PulseAudio's sinks and sources, else ALSA's.
struct SessionDevices {
    struct Device {
        let port: AVAudioSessionPortDescription
        let isDefault: Bool
    }
    var outputs: [Device] = []
    var inputs: [Device] = []
    var serverAnswers = false

    /// Every device's name.
    var names: Set<String> { Set(outputs.map(\.port.uid) + inputs.map(\.port.uid)) }

    static func portType(name: String, input: Bool, monitor: Bool) -> AVAudioSession.Port {
        let n = name.lowercased()
        if monitor || n.contains("null") || n.contains("virtual") || n.contains("loopback") { return .virtual }
        if n.contains("bluez") || n.contains("bluetooth") { return input ? .bluetoothHFP : .bluetoothA2DP }
        if n.contains("hdmi") { return .HDMI }
        if n.contains("displayport") { return .displayPort }
        if n.contains("usb") { return .usbAudio }
        if n.contains("headphone") { return .headphones }
        if n.contains("headset") { return input ? .headsetMic : .headphones }
        if n.contains("pci") || n.contains("analog") || n.hasPrefix("hw:0") || n == "default" { return input ? .builtInMic : .builtInSpeaker }
        return input ? .lineIn : .lineOut
    }

    static func list() -> SessionDevices {
        var d = SessionDevices()
        if PulseAudioOutputDevice.serverAnswers() {
            d.serverAnswers = true
            for s in (try? PulseAudioOutputDevice.listSinks()) ?? [] {
                d.outputs.append(Device(port: AVAudioSessionPortDescription(type: portType(name: s.name + " " + s.description, input: false, monitor: false),
                                                                           name: s.description, uid: s.name, channelCount: s.channels),
                                        isDefault: s.isDefault))
            }
            for s in (try? PulseAudioInputDevice.listSources()) ?? [] {
                guard case .pulse(let name?) = s.spec else { continue }
                d.inputs.append(Device(port: AVAudioSessionPortDescription(type: portType(name: name + " " + s.description, input: true, monitor: s.isMonitor),
                                                                          name: s.description, uid: name, channelCount: s.nativeFormat?.channels ?? 2),
                                       isDefault: s.isDefault))
            }
        } else {
            let outs = ALSAOutputDevice.listDevices()
            for (i, o) in outs.enumerated() {
                d.outputs.append(Device(port: AVAudioSessionPortDescription(type: portType(name: o.name + " " + o.description, input: false, monitor: false),
                                                                           name: o.description, uid: o.name, channelCount: 2),
                                        isDefault: o.name == "default" || (i == 0 && !outs.contains { $0.name == "default" })))
            }
            let ins = ALSAInputDevice.listDevices()
            for (i, info) in ins.enumerated() {
                guard case .alsa(let name) = info.spec else { continue }
                d.inputs.append(Device(port: AVAudioSessionPortDescription(type: portType(name: name + " " + info.description, input: true, monitor: false),
                                                                          name: info.description, uid: name, channelCount: info.nativeFormat?.channels ?? 2),
                                       isDefault: info.isDefault || (i == 0 && !ins.contains { $0.isDefault })))
            }
        }
        return d
    }

    /// The route: the output the engines would open and the input they would capture.
    func route(preferredInput: String?) -> AVAudioSessionRouteDescription {
        let env = { (name: String) -> String? in getenv(name).map { String(cString: $0) } }
        var out: Device?
        if case .pulse(let sink?)? = env("OAT_OUTPUT").flatMap(AudioOutputSpec.init(parsing:)) { out = outputs.first { $0.port.uid == sink } }
        else if case .alsa(let device)? = env("OAT_OUTPUT").flatMap(AudioOutputSpec.init(parsing:)), !serverAnswers { out = outputs.first { $0.port.uid == device } }
        else { out = outputs.first { $0.isDefault } ?? outputs.first }
        var inp: Device?
        if let preferredInput { inp = inputs.first { $0.port.uid == preferredInput } }
        if inp == nil, case .pulse(let source?)? = env("OAT_INPUT").flatMap(AudioInputSpec.init(parsing:)) { inp = inputs.first { $0.port.uid == source } }
        if inp == nil { inp = inputs.first { $0.isDefault } ?? inputs.first }
        return AVAudioSessionRouteDescription(inputs: inp.map { [$0.port] } ?? [], outputs: out.map { [$0.port] } ?? [])
    }
}

/// Watches the devices for an active session: PulseAudio's events (PulseAudioDeviceWatcher)
/// turned into route-change notifications; the server going away and coming back into
/// interruptions. A thread retries the connection every 0.25 s while the server is gone.
final class SessionDeviceWatcher: @unchecked Sendable {
    private weak var session: AVAudioSession?
    private let lock = NSLock()
    private var watcher: PulseAudioDeviceWatcher?
    private var route: AVAudioSessionRouteDescription
    private var known: Set<String>
    private var interrupted = false
    private var stopped = false
    private var thread: Thread?
    private let wake = NSCondition()

    init(session: AVAudioSession) {
        self.session = session
        let devices = SessionDevices.list()
        route = devices.route(preferredInput: session.preferredInput?.uid)
        known = devices.names
        let t = Thread { [weak self] in self?.run() }
        t.name = "oat-avsession-watch"
        thread = t
        t.start()
    }

    func stop() {
        lock.lock(); stopped = true; let w = watcher; watcher = nil; lock.unlock()
        w?.stop()
        wake.lock(); wake.broadcast(); wake.unlock()
    }

    private var isStopped: Bool { lock.lock(); defer { lock.unlock() }; return stopped }

    private func run() {
        while !isStopped {
            lock.lock(); let current = watcher; lock.unlock()
            if current == nil || !(current!.isRunning) {
                if current != nil {
                    // The server went away: its last report already compared the route.
                    lock.lock(); watcher = nil; lock.unlock()
                }
                if PulseAudioOutputDevice.serverAnswers(),
                   let w = try? PulseAudioDeviceWatcher(onChange: { [weak self] in self?.changed() }) {
                    lock.lock()
                    if stopped { lock.unlock(); w.stop(); return }
                    watcher = w
                    let wasInterrupted = interrupted
                    interrupted = false
                    lock.unlock()
                    if wasInterrupted {
                        session?.post(interruption: .ended)
                        changed()
                    }
                }
            }
            wake.lock(); _ = wake.wait(until: Date().addingTimeInterval(0.25)); wake.unlock()
        }
    }

    /// A burst of device events (or the server's end): compare the route and post.
    private func changed() {
        guard let session, !isStopped else { return }
        let devices = SessionDevices.list()
        let now = devices.route(preferredInput: session.preferredInput?.uid)
        lock.lock()
        let before = route
        let knownBefore = known
        route = now
        known = devices.names
        var began = false
        if !devices.serverAnswers && !interrupted {
            interrupted = true
            began = true
        }
        lock.unlock()
        if began { session.post(interruption: .began) }
        guard !now.isEqual(before) else { return }
        let used = Set((before.outputs + before.inputs).map(\.uid))
        let using = Set((now.outputs + now.inputs).map(\.uid))
        let reason: AVAudioSession.RouteChangeReason
        if !used.isSubset(of: devices.names) {
            // A device the route used went away.
            reason = .oldDeviceUnavailable
        } else if !using.subtracting(knownBefore).isEmpty {
            // The route moved to a device that was not there before.
            reason = .newDeviceAvailable
        } else {
            // The route moved between devices that were there (the default was changed).
            reason = .override
        }
        session.post(routeChange: reason, previous: before)
    }
}

// MARK: - Input gain (the PulseAudio source's volume)

extension AVAudioSession {
    /// The PulseAudio source the input gain applies to: the preferred input, else `OAT_INPUT`'s
    /// source, else nil (the default source).
    private var gainSource: String? {
        if let uid = preferredInput?.uid { return uid }
        if let text = getenv("OAT_INPUT").map({ String(cString: $0) }), case .pulse(let source)? = AudioInputSpec(parsing: text) { return source }
        return nil
    }

    /// True when the input's gain can be set: the input is a PulseAudio source (its volume is
    /// the gain); false on ALSA or without an input.
    public var isInputGainSettable: Bool {
        guard PulseAudioOutputDevice.serverAnswers() else { return false }
        return ((try? PulseAudioInputDevice.sourceVolume(gainSource, timeout: 1)) ?? nil) != nil
    }

    /// The input's gain, 0 ... 1: the PulseAudio source's volume (1 = its normal 100 %; more
    /// reads as 1); 1 when it cannot be read (nothing attenuates the input).
    public var inputGain: Float {
        guard PulseAudioOutputDevice.serverAnswers(), let v = (try? PulseAudioInputDevice.sourceVolume(gainSource, timeout: 1)) ?? nil else { return 1 }
        return Float(min(1, max(0, v)))
    }

    /// Sets the input's gain (0 ... 1): the PulseAudio source's volume, 1 being its normal
    /// 100 % (`pactl set-source-volume SOURCE 50%` for 0.5). Throws for a gain out of range or
    /// when it is not settable (``isInputGainSettable``).
    public func setInputGain(_ gain: Float) throws {
        guard gain >= 0, gain <= 1 else {
            throw avError(kAudioSessionErrorParamErr, "AVAudioSession.setInputGain: \(gain) is not 0 ... 1")
        }
        guard PulseAudioOutputDevice.serverAnswers() else {
            throw avError(kAudioSessionErrorUnsupportedProperty, "AVAudioSession.setInputGain: the input gain is settable on a PulseAudio source only")
        }
        let source = gainSource
        do {
            try PulseAudioInputDevice.setSourceVolume(source, to: Double(gain), timeout: 2)
        } catch {
            throw avError(kAudioSessionErrorUnsupportedProperty, "AVAudioSession.setInputGain: \(error)")
        }
    }
    /// True when an input device exists.
    public var isInputAvailable: Bool { !(availableInputs ?? []).isEmpty }
    /// False: other apps' audio is not observed here.
    public var isOtherAudioPlaying: Bool { false }
    /// False: other apps' audio is not observed here.
    public var secondaryAudioShouldBeSilencedHint: Bool { false }
    /// The system output volume (1 here: the sink's volume is not read).
    public var outputVolume: Float { 1 }
}
