import OATCore
import COATPulseAudio

// MARK: - One-off queries

/// Short-lived connections on a private (non-threaded) main loop, for probing and introspection.
enum PulseQuery {
    /// A sink or source as the server lists it.
    private struct Entry {
        var name: String
        var description: String
        var sampleRate: Int
        var channels: Int
        var isMonitor: Bool
        /// The average of its channels' volumes (`pa_volume_t`; PulseAudio's 100 % is 0x10000).
        var volume: UInt32 = 0
    }

    /// What one query collects: the server's defaults and, when asked for, its sinks or sources.
    private final class Collector {
        var entries: [Entry] = []
        var defaultSink: String?
        var defaultSource: String?
        var serverDone = false
        var listDone = false

        func add(name: UnsafePointer<CChar>?, description: UnsafePointer<CChar>?, spec: pa_sample_spec, isMonitor: Bool, volume: UInt32 = 0) {
            entries.append(Entry(name: name.map { String(cString: $0) } ?? "", description: description.map { String(cString: $0) } ?? "",
                                 sampleRate: Int(spec.rate), channels: Int(spec.channels), isMonitor: isMonitor, volume: volume))
        }
    }

    /// The list a query asks for besides the server's defaults.
    private enum ListKind { case none, sinks, sources }

    /// Connects, runs `body` until it reports done, and disconnects; the whole call is bounded
    /// by `timeout`.
    private static func withContext(server: String?, timeout: Double,
                                    _ body: (OpaquePointer, () -> Bool) throws(AudioError) -> Void) throws(AudioError) {
        try DeviceLibraries.requirePulseAudio(component: "PulseAudio")
        guard let ml = pa_mainloop_new() else {
            throw AudioError(.deviceUnavailable, component: "PulseAudio", "cannot create a main loop")
        }
        defer { pa_mainloop_free(ml) }
        guard let ctx = pa_context_new(pa_mainloop_get_api(ml), "OpenAudioToolbox query") else {
            throw AudioError(.deviceUnavailable, component: "PulseAudio", "cannot create a context")
        }
        defer { pa_context_disconnect(ctx); pa_context_unref(ctx) }
        let deadline = HostTime.now() + HostTime.ticks(seconds: timeout)
        let step: () -> Bool = {
            let left = Int64(deadline) - Int64(HostTime.now())
            if left <= 0 { return false }
            if pa_mainloop_prepare(ml, Int32(min(left / 1000, 100_000))) < 0 { return false }
            if pa_mainloop_poll(ml) < 0 { return false }
            return pa_mainloop_dispatch(ml) >= 0
        }
        if pa_context_connect(ctx, server, PA_CONTEXT_NOAUTOSPAWN, nil) < 0 {
            throw AudioError(.deviceUnavailable, component: "PulseAudio", "no PulseAudio server answers\(server.map { " at \($0)" } ?? "")",
                             underlying: String(cString: pa_strerror(pa_context_errno(ctx))))
        }
        while true {
            let state = pa_context_get_state(ctx)
            if state == PA_CONTEXT_READY { break }
            if state == PA_CONTEXT_FAILED || state == PA_CONTEXT_TERMINATED || !step() {
                let text = state == PA_CONTEXT_FAILED || state == PA_CONTEXT_TERMINATED
                    ? String(cString: pa_strerror(pa_context_errno(ctx))) : "timed out after \(timeout) s"
                throw AudioError(.deviceUnavailable, component: "PulseAudio", "no PulseAudio server answers\(server.map { " at \($0)" } ?? "")",
                                 underlying: text)
            }
        }
        try body(ctx, step)
    }

    /// Asks the server for its defaults and the `list`, and waits for every answer (`what`
    /// names the query in the timeout error).
    private static func query(server: String?, timeout: Double, list: ListKind, what: String) throws(AudioError) -> Collector {
        let collector = Collector()
        try withContext(server: server, timeout: timeout) { ctx, step throws(AudioError) in
            let ud = Unmanaged.passUnretained(collector).toOpaque()
            if let op = pa_context_get_server_info(ctx, { _, info, ud in
                let c = Unmanaged<Collector>.fromOpaque(ud!).takeUnretainedValue()
                if let info {
                    c.defaultSink = info.pointee.default_sink_name.map { String(cString: $0) }
                    c.defaultSource = info.pointee.default_source_name.map { String(cString: $0) }
                }
                c.serverDone = true
            }, ud) { pa_operation_unref(op) }
            switch list {
            case .none:
                collector.listDone = true
            case .sinks:
                if let op = pa_context_get_sink_info_list(ctx, { _, info, eol, ud in
                    let c = Unmanaged<Collector>.fromOpaque(ud!).takeUnretainedValue()
                    if eol != 0 { c.listDone = true; return }
                    guard let i = info?.pointee else { return }
                    c.add(name: i.name, description: i.description, spec: i.sample_spec, isMonitor: false)
                }, ud) { pa_operation_unref(op) }
            case .sources:
                if let op = pa_context_get_source_info_list(ctx, { _, info, eol, ud in
                    let c = Unmanaged<Collector>.fromOpaque(ud!).takeUnretainedValue()
                    if eol != 0 { c.listDone = true; return }
                    guard let i = info?.pointee else { return }
                    var volume = i.volume
                    c.add(name: i.name, description: i.description, spec: i.sample_spec, isMonitor: i.monitor_of_sink != UInt32.max,
                          volume: pa_cvolume_avg(&volume))
                }, ud) { pa_operation_unref(op) }
            }
            while !(collector.serverDone && collector.listDone) {
                guard step() else { throw AudioError(.deviceUnavailable, component: "PulseAudio", "\(what) timed out") }
            }
        }
        return collector
    }

    static func serverDefaultSink(server: String?, timeout: Double) throws(AudioError) -> String {
        try query(server: server, timeout: timeout, list: .none, what: "server info").defaultSink ?? ""
    }

    static func listSinks(server: String?, timeout: Double) throws(AudioError) -> [PulseAudioSinkInfo] {
        let c = try query(server: server, timeout: timeout, list: .sinks, what: "sink list")
        return c.entries.map {
            PulseAudioSinkInfo(name: $0.name, description: $0.description, sampleRate: $0.sampleRate, channels: $0.channels,
                               isDefault: $0.name == c.defaultSink)
        }
    }

    /// PulseAudio's normal (100 %) volume, `PA_VOLUME_NORM`.
    static let normalVolume: UInt32 = 0x10000

    /// Source `name` (nil: the default source): its name, its volume as a fraction of the
    /// normal volume (1 = 100 %; PulseAudio allows more) and its channel count; nil when the
    /// server has no such source.
    static func sourceVolume(_ name: String?, server: String?, timeout: Double) throws(AudioError) -> (name: String, volume: Double, channels: Int)? {
        let c = try query(server: server, timeout: timeout, list: .sources, what: "source list")
        guard let wanted = name ?? c.defaultSource, let e = c.entries.first(where: { $0.name == wanted }) else { return nil }
        return (e.name, Double(e.volume) / Double(normalVolume), e.channels)
    }

    /// Sets every channel of source `name` to `fraction` of the normal volume.
    static func setSourceVolume(_ name: String, fraction: Double, channels: Int, server: String?, timeout: Double) throws(AudioError) {
        final class Answer { var done = false; var ok = false }
        try withContext(server: server, timeout: timeout) { ctx, step throws(AudioError) in
            var volume = pa_cvolume()
            pa_cvolume_set(&volume, UInt32(max(1, min(32, channels))), pa_volume_t((max(0, fraction) * Double(normalVolume)).rounded()))
            let answer = Answer()
            let ud = Unmanaged.passUnretained(answer).toOpaque()
            guard let op = pa_context_set_source_volume_by_name(ctx, name, &volume, { _, success, ud in
                let a = Unmanaged<Answer>.fromOpaque(ud!).takeUnretainedValue()
                a.ok = success != 0
                a.done = true
            }, ud) else {
                throw AudioError(.deviceUnavailable, component: "PulseAudio", "cannot ask for the volume of source \(name)")
            }
            pa_operation_unref(op)
            while !answer.done {
                guard step() else { throw AudioError(.deviceUnavailable, component: "PulseAudio", "setting the volume of source \(name) timed out") }
            }
            guard answer.ok else { throw AudioError(.deviceUnavailable, component: "PulseAudio", "the server refused the volume of source \(name)") }
        }
    }

    /// The server's sources (monitors included), the default one marked.
    static func listSources(server: String?, timeout: Double) throws(AudioError) -> [AudioInputDeviceInfo] {
        let c = try query(server: server, timeout: timeout, list: .sources, what: "source list")
        return c.entries.map {
            var s = AudioInputDeviceInfo(spec: .pulse(source: $0.name), description: $0.description,
                                         nativeFormat: AudioDeviceFormat(sampleRate: Double($0.sampleRate), channels: $0.channels),
                                         isMonitor: $0.isMonitor)
            s.isDefault = s.spec == .pulse(source: c.defaultSource)
            return s
        }
    }
}
