import OATCore
import COATPulseAudio
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A PulseAudio sink as the server reports it.
public struct PulseAudioSinkInfo: Hashable, Sendable {
    /// The sink name (what ``AudioOutputSpec/pulse(sink:)`` takes).
    public var name: String
    /// The human-readable description.
    public var description: String
    /// The sink's native sample rate.
    public var sampleRate: Int
    /// The sink's channel count.
    public var channels: Int
    /// True for the server's default sink.
    public var isDefault: Bool
}

/// Plays to a PulseAudio server through the asynchronous API: a threaded main loop whose stream
/// write callback pulls frames from the render callback, so the server's clock drives rendering.
///
/// The stream runs at the device format as interleaved float32le, with the target latency set
/// through the buffer attributes (`tlength`, `minreq` a quarter of it). If the server goes away
/// the device posts ``AudioDeviceEvent/lost(reason:)``, reconnects with a backoff (0.1 s doubling
/// to 2 s), re-creates the stream and keeps pulling from the same render callback, then posts
/// ``AudioDeviceEvent/restored``.
///
/// Thread safety: the render callback runs on PulseAudio's main-loop thread (the device thread);
/// control methods take the main-loop lock briefly and may be called from any one control thread;
/// counters are atomics readable from anywhere.
public final class PulseAudioOutputDevice: AudioOutputDevice {
    /// `pulse:SINK`, or `pulse` for the default sink.
    public let name: String
    /// The device format.
    public let format: AudioDeviceFormat
    /// Frames per render call at most (the stream's `minreq`).
    public let framesPerRender: Int
    /// The sink asked for (nil: the server's default).
    public let sink: String?
    /// The server string (nil: the environment's `PULSE_SERVER` or the default server).
    public let server: String?
    private let core: PulseCore

    /// Connects to the server (waiting at most `connectTimeout` seconds) and prepares a playback
    /// stream at `format` for `sink` (nil: the default sink) with about `targetLatency` seconds
    /// of buffering.
    ///
    /// Throws ``AudioError/Code/deviceUnavailable`` with PulseAudio's error text when no server
    /// answers.
    public init(format: AudioDeviceFormat, sink: String? = nil, server: String? = nil,
                targetLatency: Double = 0.1, connectTimeout: Double = 2) throws(AudioError) {
        guard format.channels >= 1, format.channels <= Int(PA_CHANNELS_MAX), format.sampleRate >= 1,
              format.sampleRate <= Double(PA_RATE_MAX) else {
            throw AudioError(.invalidArgument, component: "PulseAudio output", "unsupported format \(format)")
        }
        self.format = format
        self.sink = sink
        self.server = server
        name = sink.map { "pulse:\($0)" } ?? "pulse"
        let latencyFrames = max(256, Int(targetLatency * format.sampleRate))
        framesPerRender = max(64, latencyFrames / 4)
        core = PulseCore(format: format, sink: sink, server: server, targetFrames: latencyFrames,
                         renderFrames: framesPerRender)
        try core.open(timeout: connectTimeout)
    }

    deinit { core.close() }

    /// Output latency in seconds: the stream's measured latency once playing, the target before.
    public var latency: Double { core.latencySeconds }
    /// Frames played (the stream's playback clock, summed over reconnects).
    public var playedFrames: Int64 { core.played.load(ordering: .acquiring) }
    /// Frames rendered (exact).
    public var renderedFrames: Int64 { core.rendered.load(ordering: .acquiring) }

    /// Creates the playback stream and starts pulling from `render`.
    public func start(_ render: @escaping AudioRenderCallback) throws(AudioError) {
        try core.start(render)
    }

    /// Changes the playing stream's target latency (`tlength`, `minreq` a quarter of it): the
    /// server then asks for the difference at once, and for a quarter of the new length at a
    /// time after that. A stream re-created after the server came back starts at the latency
    /// the device was opened with.
    public func setTargetLatency(_ seconds: Double) { core.setTargetLatency(seconds) }

    /// Corks the stream: pulling stops, the buffered audio is kept.
    public func pause() throws(AudioError) { try core.setCorked(true) }
    /// Uncorks the stream.
    public func resume() throws(AudioError) { try core.setCorked(false) }
    /// Stops; with `drain`, first plays what the server holds (at most about a second of waiting).
    public func stop(drain: Bool) { core.stop(drain: drain) }
    /// Replaces what the server holds but has not played: the next write goes at the stream's
    /// read index (`PA_SEEK_RELATIVE_ON_READ`), at once and covering all of it, from the
    /// main-loop thread; `resume` runs under the main-loop lock before it. The old audio stops
    /// within the sink's own latency (about 20 ms on a null sink), with no gap.
    public func flush(_ resume: () -> Void) { core.flush(resume) }
    /// Disconnects and ends the main loop.
    public func close() { core.close() }
    /// Takes pending events.
    public func takeEvents() -> [AudioDeviceEvent] { core.events.take() }
    /// Events dropped.
    public var droppedEventCount: Int { core.events.droppedCount }

    /// True once the end of stream has been played out (``AudioDeviceEvent/drained`` posted).
    public var hasDrained: Bool { core.drainedFlag.load(ordering: .acquiring) }
    /// True while the server is away and the device is reconnecting.
    public var isLost: Bool { core.lostFlag.load(ordering: .acquiring) }
    /// Reconnection attempts scheduled since the device was created (one per backoff step while
    /// the server is away: 0.1 s doubling to 2 s).
    public var reconnectAttempts: Int { core.connection.reconnectAttempts.load(ordering: .relaxed) }

    /// Lists the server's sinks (connecting for the call, at most `timeout` seconds).
    public static func listSinks(server: String? = nil, timeout: Double = 2) throws(AudioError) -> [PulseAudioSinkInfo] {
        try PulseQuery.listSinks(server: server, timeout: timeout)
    }

    /// True if a PulseAudio server answers within `timeout` seconds.
    public static func serverAnswers(server: String? = nil, timeout: Double = 0.5) -> Bool {
        (try? PulseQuery.serverDefaultSink(server: server, timeout: timeout)) != nil
    }
}

// MARK: - The main-loop side

/// State shared between the control side (under the main-loop lock) and PulseAudio's main-loop
/// thread (callbacks run with that lock held).
private final class PulseCore: PulseConnectionOwner, @unchecked Sendable {
    let format: AudioDeviceFormat
    let sink: String?
    let server: String?
    let targetFrames: Int
    let frameBytes: Int
    let events = AudioDeviceEventQueue()
    let rendered = Atomic<Int64>(0)
    let played = Atomic<Int64>(0)
    let latencyMicros = Atomic<UInt64>(0)
    let drainedFlag = Atomic<Bool>(false)
    let lostFlag = Atomic<Bool>(false)
    private let buffers: RenderBuffers

    /// The server connection: main loop, context, loss and reconnection (shared with the input device).
    let connection: PulseConnection
    private var mainloop: OpaquePointer? { connection.mainloop }
    private var context: OpaquePointer? { connection.context }
    private var stream: OpaquePointer?
    private var render: AudioRenderCallback?
    // Main-loop-lock protected state.
    private var closing: Bool { connection.closing }
    private var stopping = false
    private var corked = false
    private var established: Bool { connection.established }
    private var startedPosted = false
    private var startFailure: String?
    private var ended = false
    private var drainStarted = false
    private var playedBase: Int64 = 0
    private var streamPlayed: Int64 = 0
    private var streamWritten: Int64 = 0
    private var underflowAt: UInt64 = 0
    private var runsDryAt: UInt64 = 0
    private var missedAt: UInt64 = 0
    /// `streamWritten` when the stream was last flushed (main-loop lock).
    private var writtenAtFlush: Int64 = 0
    /// Frames the server held at the last flush, as the clock tells (main-loop lock).
    private var heldAtFlush: Int64 = 0
    /// The next write goes at the read index, replacing what the server holds (main-loop lock).
    private var writeAtReadIndex = false

    init(format: AudioDeviceFormat, sink: String?, server: String?, targetFrames: Int, renderFrames: Int) {
        self.format = format
        self.sink = sink
        self.server = server
        self.targetFrames = targetFrames
        connection = PulseConnection(server: server, component: "PulseAudio output", threadName: "oat-pulse-out")
        frameBytes = 4 * format.channels
        buffers = RenderBuffers(channels: format.channels, frames: renderFrames)
        latencyMicros.store(UInt64(Double(targetFrames) / format.sampleRate * 1e6), ordering: .relaxed)
    }

    var latencySeconds: Double { Double(latencyMicros.load(ordering: .relaxed)) / 1e6 }

    private var userdata: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    private func lock() { connection.lock() }
    private func unlock() { connection.unlock() }
    private func wait(_ timeout: Double, _ condition: () -> Bool) -> Bool { connection.wait(timeout, condition) }

    func open(timeout: Double) throws(AudioError) {
        connection.owner = self
        try connection.open(timeout: timeout)
    }

    // MARK: Callbacks (main-loop thread, lock held)

    func connectionReady() {
        guard lostFlag.load(ordering: .relaxed) else { return }
        if render != nil && !stopping {
            // Back after a loss: a new stream continues pulling from the same callback.
            if !createStream() { contextLost("cannot re-create the stream") }
        } else {
            lostFlag.store(false, ordering: .releasing)
            connection.resetBackoff()
            events.post(.restored)
        }
    }

    func connectionFailed(_ reason: String) { contextLost(reason) }

    /// The server went away (or the stream failed): post `.lost` once, drop the stream and the
    /// context, and schedule a reconnection.
    private func contextLost(_ reason: String) {
        if !lostFlag.load(ordering: .relaxed) {
            lostFlag.store(true, ordering: .releasing)
            events.post(.lost(reason: reason))
            connection.resetBackoff()
        }
        dropStream()
        connection.reconnectLater()
    }

    /// The stream's channel map: the order libavcodec (and so our decoders) deliver channels
    /// in, so that the server maps each to its speaker. Mono and stereo as usual; 5.1 (6) and
    /// 7.1 (8) as FL FR FC LFE RL RR (SL SR); other counts in WAVEFORMATEXTENSIBLE order.
    /// PulseAudio's default map (nil) was wrong for surround (its AIFF order labels six
    /// channels FL FLC FC FR FRC RC) and does not exist for eight: the stream was refused
    /// (`Invalid argument`).
    static func channelMap(channels: Int, labels: [ChannelLabel]? = nil) -> pa_channel_map {
        var map = pa_channel_map()
        if let labels, labels.count == channels, channels <= Int(PA_CHANNELS_MAX) {
            let positions = labels.compactMap(position(of:))
            if positions.count == channels, Set(positions.map(\.rawValue)).count == channels {
                map.channels = UInt8(channels)
                withUnsafeMutableBytes(of: &map.map) { raw in
                    let p = raw.bindMemory(to: pa_channel_position_t.self)
                    for i in 0..<channels { p[i] = positions[i] }
                }
                return map
            }
        }
        let count = max(1, min(channels, Int(PA_CHANNELS_MAX)))
        let surround: [pa_channel_position_t] = [PA_CHANNEL_POSITION_FRONT_LEFT, PA_CHANNEL_POSITION_FRONT_RIGHT,
                                                 PA_CHANNEL_POSITION_FRONT_CENTER, PA_CHANNEL_POSITION_LFE,
                                                 PA_CHANNEL_POSITION_REAR_LEFT, PA_CHANNEL_POSITION_REAR_RIGHT,
                                                 PA_CHANNEL_POSITION_SIDE_LEFT, PA_CHANNEL_POSITION_SIDE_RIGHT]
        switch count {
        case 6, 8:
            map.channels = UInt8(count)
            withUnsafeMutableBytes(of: &map.map) { raw in
                let positions = raw.bindMemory(to: pa_channel_position_t.self)
                for i in 0..<count { positions[i] = surround[i] }
            }
        default:
            if pa_channel_map_init_extend(&map, UInt32(count), PA_CHANNEL_MAP_WAVEEX) == nil {
                _ = pa_channel_map_init_extend(&map, UInt32(count), PA_CHANNEL_MAP_DEFAULT)
            }
        }
        return map
    }

    /// PulseAudio's position for a channel label; nil for labels it has no position for.
    static func position(of label: ChannelLabel) -> pa_channel_position_t? {
        switch label {
        case .mono: PA_CHANNEL_POSITION_MONO
        case .left: PA_CHANNEL_POSITION_FRONT_LEFT
        case .right: PA_CHANNEL_POSITION_FRONT_RIGHT
        case .center: PA_CHANNEL_POSITION_FRONT_CENTER
        case .lfeScreen: PA_CHANNEL_POSITION_LFE
        case .leftSurround, .rearSurroundLeft: PA_CHANNEL_POSITION_REAR_LEFT
        case .rightSurround, .rearSurroundRight: PA_CHANNEL_POSITION_REAR_RIGHT
        case .leftCenter: PA_CHANNEL_POSITION_FRONT_LEFT_OF_CENTER
        case .rightCenter: PA_CHANNEL_POSITION_FRONT_RIGHT_OF_CENTER
        case .centerSurround: PA_CHANNEL_POSITION_REAR_CENTER
        case .leftSurroundDirect: PA_CHANNEL_POSITION_SIDE_LEFT
        case .rightSurroundDirect: PA_CHANNEL_POSITION_SIDE_RIGHT
        case .topCenterSurround: PA_CHANNEL_POSITION_TOP_CENTER
        case .verticalHeightLeft: PA_CHANNEL_POSITION_TOP_FRONT_LEFT
        case .verticalHeightCenter: PA_CHANNEL_POSITION_TOP_FRONT_CENTER
        case .verticalHeightRight: PA_CHANNEL_POSITION_TOP_FRONT_RIGHT
        case .topBackLeft: PA_CHANNEL_POSITION_TOP_REAR_LEFT
        case .topBackCenter: PA_CHANNEL_POSITION_TOP_REAR_CENTER
        case .topBackRight: PA_CHANNEL_POSITION_TOP_REAR_RIGHT
        default: nil
        }
    }

    /// Creates and connects the playback stream (lock held).
    private func createStream() -> Bool {
        guard let ctx = context else { return false }
        var spec = pa_sample_spec(format: PA_SAMPLE_FLOAT32LE, rate: UInt32(format.sampleRate), channels: UInt8(format.channels))
        var map = Self.channelMap(channels: format.channels, labels: format.channelLabels)
        guard let s = pa_stream_new(ctx, "OpenAudioToolbox playback", &spec, &map) else { return false }
        stream = s
        drainStarted = false
        streamWritten = 0
        streamPlayed = 0
        let ud = userdata
        pa_stream_set_state_callback(s, { s, ud in
            Unmanaged<PulseCore>.fromOpaque(ud!)._withUnsafeGuaranteedRef { $0.streamStateChanged(s!) }
        }, ud)
        pa_stream_set_write_callback(s, { s, nbytes, ud in
            Unmanaged<PulseCore>.fromOpaque(ud!)._withUnsafeGuaranteedRef { $0.writeRequested(s!, nbytes) }
        }, ud)
        pa_stream_set_underflow_callback(s, { s, ud in
            Unmanaged<PulseCore>.fromOpaque(ud!)._withUnsafeGuaranteedRef { $0.underflow(s!) }
        }, ud)
        pa_stream_set_started_callback(s, { s, ud in
            Unmanaged<PulseCore>.fromOpaque(ud!)._withUnsafeGuaranteedRef { $0.playbackStarted(s!) }
        }, ud)
        pa_stream_set_latency_update_callback(s, { s, ud in
            Unmanaged<PulseCore>.fromOpaque(ud!)._withUnsafeGuaranteedRef { $0.updateTiming(s!) }
        }, ud)
        let tlength = UInt32(targetFrames * frameBytes)
        var attr = pa_buffer_attr(maxlength: UInt32.max, tlength: tlength, prebuf: UInt32.max,
                                  minreq: UInt32(buffers.frames * frameBytes), fragsize: UInt32.max)
        if pa_stream_connect_playback(s, sink, &attr, PulseConnection.streamFlags(corked: corked), nil, nil) < 0 {
            dropStream()
            return false
        }
        return true
    }

    private func dropStream() {
        guard let s = stream else { return }
        playedBase += streamPlayed
        streamPlayed = 0
        pa_stream_set_state_callback(s, nil, nil)
        pa_stream_set_write_callback(s, nil, nil)
        pa_stream_set_underflow_callback(s, nil, nil)
        pa_stream_set_started_callback(s, nil, nil)
        pa_stream_set_latency_update_callback(s, nil, nil)
        if pa_stream_get_state(s) == PA_STREAM_READY || pa_stream_get_state(s) == PA_STREAM_CREATING {
            pa_stream_disconnect(s)
        }
        pa_stream_unref(s)
        stream = nil
        underflowAt = 0
    }

    private func streamStateChanged(_ s: OpaquePointer) {
        guard s == stream else { return }
        switch pa_stream_get_state(s) {
        case PA_STREAM_READY:
            if !startedPosted {
                startedPosted = true
                events.post(.started)
            }
            if lostFlag.load(ordering: .relaxed) {
                lostFlag.store(false, ordering: .releasing)
                connection.resetBackoff()
                events.post(.restored)
                if ended { startDrain(s) }
            }
        case PA_STREAM_FAILED:
            guard !closing, established else { return }
            if !startedPosted, let ctx = context, pa_context_get_state(ctx) == PA_CONTEXT_READY {
                // The first stream was refused (no such sink, bad format): start() reports it.
                startFailure = String(cString: pa_strerror(pa_context_errno(ctx)))
                dropStream()
                render = nil
                return
            }
            // The stream failed while the server may still be up (sink removed): reconnect all.
            contextLost(String(cString: pa_strerror(pa_context_errno(context))))
        default:
            break
        }
    }

    /// The server asks for `nbytes`: render into its buffers directly (no allocation here).
    private func writeRequested(_ s: OpaquePointer, _ nbytes: Int) {
        guard s == stream, !ended, !stopping, let render else { return }
        let channels = format.channels
        var remaining = nbytes / frameBytes
        while remaining > 0 {
            var data: UnsafeMutableRawPointer?
            var size = remaining * frameBytes
            guard pa_stream_begin_write(s, &data, &size) >= 0, let data else { break }
            let chunk = min(size / frameBytes, buffers.frames, remaining)
            if chunk == 0 {
                pa_stream_cancel_write(s)
                break
            }
            let done = rendered.load(ordering: .relaxed)
            let heardAt = HostTime.now() &+ latencyMicros.load(ordering: .relaxed) &* 1000
            let time = AudioTimeStamp(sampleTime: Double(done), hostTime: heardAt, rateScalar: 1, flags: .sampleHostTimeValid)
            var result = render(buffers.pointers, chunk, time)
            result.frames = max(0, min(result.frames, chunk))
            let frames = result.isEndOfStream ? result.frames : chunk
            if result.frames < frames { buffers.silence(from: result.frames) }
            if frames > 0 {
                let out = data.assumingMemoryBound(to: Float.self)
                for c in 0..<channels {
                    let src = buffers.pointers[c]
                    var j = c
                    for i in 0..<frames {
                        out[j] = src[i]
                        j &+= channels
                    }
                }
                pa_stream_write(s, data, frames * frameBytes, nil, 0, writeAtReadIndex ? PA_SEEK_RELATIVE_ON_READ : PA_SEEK_RELATIVE)
                writeAtReadIndex = false
            } else {
                pa_stream_cancel_write(s)
            }
            streamWritten += Int64(frames)
            rendered.store(done + Int64(frames), ordering: .releasing)
            remaining -= chunk
            if result.isEndOfStream {
                ended = true
                startDrain(s)
                break
            }
        }
        // A late callback or render (the buffer ran dry before it finished) dates the underflow,
        // whose notification is only handled after this callback.
        let now = HostTime.now()
        if runsDryAt != 0, now > runsDryAt {
            if missedAt == 0 { missedAt = runsDryAt }
        } else {
            missedAt = 0
        }
        updateTiming(s)
        runsDryAt = now &+ latencyMicros.load(ordering: .relaxed) &* 1000
    }

    /// Main-loop thread, after a flush: writes, from the read index, what the server held and
    /// 10 ms more (the clock's error; old audio left after it would play), less what write
    /// requests since the flush brought.
    private func refillAfterFlush() {
        guard !closing, let s = stream, pa_stream_get_state(s) == PA_STREAM_READY else { return }
        let owed = Int(heldAtFlush) + Int(format.sampleRate / 100) - Int(streamWritten - writtenAtFlush)
        if owed > 0 { writeRequested(s, owed * frameBytes) }
    }

    private func startDrain(_ s: OpaquePointer) {
        guard !drainStarted else { return }
        drainStarted = true
        if let op = pa_stream_drain(s, { s, success, ud in
            Unmanaged<PulseCore>.fromOpaque(ud!)._withUnsafeGuaranteedRef { $0.drained(s!, success != 0) }
        }, userdata) {
            pa_operation_unref(op)
        }
    }

    private func drained(_ s: OpaquePointer, _ success: Bool) {
        guard s == stream, success, !drainedFlag.load(ordering: .relaxed) else { return }
        streamPlayed = streamWritten
        played.store(playedBase + streamPlayed, ordering: .releasing)
        drainedFlag.store(true, ordering: .releasing)
        events.post(.drained)
    }

    private func underflow(_ s: OpaquePointer) {
        guard s == stream, !ended else { return }
        if underflowAt == 0 { underflowAt = missedAt != 0 ? missedAt : HostTime.now() }
        missedAt = 0
    }

    private func playbackStarted(_ s: OpaquePointer) {
        guard s == stream, underflowAt != 0 else { return }
        let gap = HostTime.seconds(ticks: HostTime.now() &- underflowAt)
        underflowAt = 0
        missedAt = 0
        events.post(.underrun(frames: max(1, Int(gap * format.sampleRate))))
    }

    private func updateTiming(_ s: OpaquePointer) {
        guard s == stream else { return }
        var usec: pa_usec_t = 0
        if pa_stream_get_time(s, &usec) >= 0 {
            let frames = Int64(Double(usec) * format.sampleRate / 1e6)
            streamPlayed = max(streamPlayed, min(frames, streamWritten))
            if !drainedFlag.load(ordering: .relaxed) {
                played.store(playedBase + streamPlayed, ordering: .releasing)
            }
        }
        var negative: Int32 = 0
        if pa_stream_get_latency(s, &usec, &negative) >= 0 {
            latencyMicros.store(negative != 0 ? 0 : usec, ordering: .relaxed)
        }
    }

    // MARK: Control side

    func start(_ render: @escaping AudioRenderCallback) throws(AudioError) {
        guard mainloop != nil else { throw AudioError(.invalidState, component: "PulseAudio output", "device is closed") }
        lock()
        if self.render != nil {
            unlock()
            throw AudioError(.invalidState, component: "PulseAudio output", "already started")
        }
        self.render = render
        startFailure = nil
        let ok = context.map { pa_context_get_state($0) == PA_CONTEXT_READY } ?? false ? createStream() : false
        let failure = ok ? nil : (context.map { String(cString: pa_strerror(pa_context_errno($0))) } ?? "no connection")
        unlock()
        if let failure {
            throw AudioError(.deviceUnavailable, component: "PulseAudio output", "cannot create the playback stream", underlying: failure)
        }
        let state = connection.waitForStream(5, { stream }, gone: { lostFlag.load(ordering: .relaxed) || startFailure != nil })
        lock()
        let refused = startFailure
        unlock()
        if let refused {
            throw AudioError(.deviceUnavailable, component: "PulseAudio output",
                             "cannot play to \(sink ?? "the default sink")", underlying: refused)
        }
        if state == PA_STREAM_FAILED || state == PA_STREAM_TERMINATED {
            lock()
            let text = context.map { String(cString: pa_strerror(pa_context_errno($0))) } ?? "stream failed"
            unlock()
            throw AudioError(.deviceUnavailable, component: "PulseAudio output",
                             "cannot play to \(sink ?? "the default sink")", underlying: text)
        }
    }

    func setTargetLatency(_ seconds: Double) {
        guard mainloop != nil, seconds > 0, seconds.isFinite else { return }
        let frames = max(256, Int(min(seconds, 10) * format.sampleRate))
        lock()
        defer { unlock() }
        guard let s = stream, pa_stream_get_state(s) == PA_STREAM_READY, !stopping else { return }
        var attr = pa_buffer_attr(maxlength: UInt32.max, tlength: UInt32(frames * frameBytes), prebuf: UInt32.max,
                                  minreq: UInt32(max(64, frames / 4) * frameBytes), fragsize: UInt32.max)
        if let op = pa_stream_set_buffer_attr(s, &attr, nil, nil) { pa_operation_unref(op) }
    }

    func setCorked(_ cork: Bool) throws(AudioError) {
        try connection.setCorked(cork, { (render != nil && !stopping, stream) }, corked: &corked)
    }

    func flush(_ resume: () -> Void) {
        guard mainloop != nil else { return resume() }
        lock()
        defer { unlock() }
        guard render != nil, !stopping, !ended, let s = stream, pa_stream_get_state(s) == PA_STREAM_READY else {
            return resume()
        }
        // Not pa_stream_flush: after it the server waits to prebuffer and counts the dropped
        // bytes as still requested, and the audio written next came with a gap (28 ms at a
        // 0.4 s target). The next write goes at the read index instead, replacing what the
        // server holds, and at once enough to cover all of it.
        updateTiming(s)
        heldAtFlush = max(0, streamWritten - streamPlayed)
        streamWritten = streamPlayed
        writtenAtFlush = streamWritten
        writeAtReadIndex = true
        // The write callback cannot run before the lock is released: what it renders next is
        // what replaces the old audio.
        resume()
        let api = pa_threaded_mainloop_get_api(mainloop)!
        var tv = timeval()
        pa_gettimeofday(&tv)
        _ = api.pointee.time_new(api, &tv, { api, event, _, ud in
            api!.pointee.time_free(event)
            Unmanaged<PulseCore>.fromOpaque(ud!)._withUnsafeGuaranteedRef { $0.refillAfterFlush() }
        }, userdata)
    }

    func stop(drain: Bool) {
        guard mainloop != nil else { return }
        lock()
        let running = render != nil && !stopping
        stopping = true
        var op: OpaquePointer?
        if running, drain, !drainedFlag.load(ordering: .relaxed), let s = stream, pa_stream_get_state(s) == PA_STREAM_READY {
            if corked, let o = pa_stream_cork(s, 0, nil, nil) { pa_operation_unref(o); corked = false }
            op = pa_stream_drain(s, nil, nil)
        }
        unlock()
        if let op {
            _ = wait(latencySeconds + 1) { pa_operation_get_state(op) != PA_OPERATION_RUNNING }
            lock()
            if pa_operation_get_state(op) == PA_OPERATION_DONE {
                played.store(playedBase + streamWritten, ordering: .releasing)
            }
            pa_operation_unref(op)
            unlock()
        }
        lock()
        if running, !drain, let s = stream, pa_stream_get_state(s) == PA_STREAM_READY,
           let o = pa_stream_flush(s, nil, nil) {
            pa_operation_unref(o)
        }
        dropStream()
        unlock()
    }

    func close() {
        guard mainloop != nil else { return }
        stop(drain: false)
        connection.close()
    }
}
