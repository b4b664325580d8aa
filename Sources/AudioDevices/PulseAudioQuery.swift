import AudioCore
import CPulseAudio

// MARK: - One-off queries

/// Short-lived connections on a private (non-threaded) main loop, for probing and introspection.
enum PulseQuery {
    private final class Collector {
        var sinks: [PulseAudioSinkInfo] = []
        var defaultSink: String?
        var serverDone = false
        var sinksDone = false
    }

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

    static func serverDefaultSink(server: String?, timeout: Double) throws(AudioError) -> String {
        var result = ""
        try withContext(server: server, timeout: timeout) { ctx, step throws(AudioError) in
            let collector = Collector()
            let ud = Unmanaged.passUnretained(collector).toOpaque()
            if let op = pa_context_get_server_info(ctx, { _, info, ud in
                let c = Unmanaged<Collector>.fromOpaque(ud!).takeUnretainedValue()
                if let info, let name = info.pointee.default_sink_name { c.defaultSink = String(cString: name) }
                c.serverDone = true
            }, ud) { pa_operation_unref(op) }
            while !collector.serverDone {
                guard step() else { throw AudioError(.deviceUnavailable, component: "PulseAudio", "server info timed out") }
            }
            result = collector.defaultSink ?? ""
        }
        return result
    }

    static func listSinks(server: String?, timeout: Double) throws(AudioError) -> [PulseAudioSinkInfo] {
        var result: [PulseAudioSinkInfo] = []
        try withContext(server: server, timeout: timeout) { ctx, step throws(AudioError) in
            let collector = Collector()
            let ud = Unmanaged.passUnretained(collector).toOpaque()
            if let op = pa_context_get_server_info(ctx, { _, info, ud in
                let c = Unmanaged<Collector>.fromOpaque(ud!).takeUnretainedValue()
                if let info, let name = info.pointee.default_sink_name { c.defaultSink = String(cString: name) }
                c.serverDone = true
            }, ud) { pa_operation_unref(op) }
            if let op = pa_context_get_sink_info_list(ctx, { _, info, eol, ud in
                let c = Unmanaged<Collector>.fromOpaque(ud!).takeUnretainedValue()
                if eol != 0 { c.sinksDone = true; return }
                guard let i = info?.pointee else { return }
                c.sinks.append(PulseAudioSinkInfo(name: i.name.map { String(cString: $0) } ?? "",
                                                  description: i.description.map { String(cString: $0) } ?? "",
                                                  sampleRate: Int(i.sample_spec.rate), channels: Int(i.sample_spec.channels),
                                                  isDefault: false))
            }, ud) { pa_operation_unref(op) }
            while !(collector.serverDone && collector.sinksDone) {
                guard step() else { throw AudioError(.deviceUnavailable, component: "PulseAudio", "sink list timed out") }
            }
            result = collector.sinks.map { var s = $0; s.isDefault = s.name == collector.defaultSink; return s }
        }
        return result
    }

    /// Collects sources for ``listSources(server:timeout:)``.
    private final class SourceCollector {
        var sources: [AudioInputDeviceInfo] = []
        var defaultSource: String?
        var serverDone = false
        var sourcesDone = false
    }

    /// The server's sources (monitors included), the default one marked.
    static func listSources(server: String?, timeout: Double) throws(AudioError) -> [AudioInputDeviceInfo] {
        var result: [AudioInputDeviceInfo] = []
        try withContext(server: server, timeout: timeout) { ctx, step throws(AudioError) in
            let collector = SourceCollector()
            let ud = Unmanaged.passUnretained(collector).toOpaque()
            if let op = pa_context_get_server_info(ctx, { _, info, ud in
                let c = Unmanaged<SourceCollector>.fromOpaque(ud!).takeUnretainedValue()
                if let info, let name = info.pointee.default_source_name { c.defaultSource = String(cString: name) }
                c.serverDone = true
            }, ud) { pa_operation_unref(op) }
            if let op = pa_context_get_source_info_list(ctx, { _, info, eol, ud in
                let c = Unmanaged<SourceCollector>.fromOpaque(ud!).takeUnretainedValue()
                if eol != 0 { c.sourcesDone = true; return }
                guard let i = info?.pointee else { return }
                let name = i.name.map { String(cString: $0) } ?? ""
                c.sources.append(AudioInputDeviceInfo(spec: .pulse(source: name),
                                                      description: i.description.map { String(cString: $0) } ?? "",
                                                      nativeFormat: AudioDeviceFormat(sampleRate: Double(i.sample_spec.rate), channels: Int(i.sample_spec.channels)),
                                                      isMonitor: i.monitor_of_sink != UInt32.max))
            }, ud) { pa_operation_unref(op) }
            while !(collector.serverDone && collector.sourcesDone) {
                guard step() else { throw AudioError(.deviceUnavailable, component: "PulseAudio", "source list timed out") }
            }
            result = collector.sources.map { var s = $0; s.isDefault = s.spec == .pulse(source: collector.defaultSource); return s }
        }
        return result
    }
}
