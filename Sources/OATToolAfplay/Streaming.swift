// afplay URL: plays http(s)/icy streams, playlists and standard input through StreamingPlayer.
import OATStreaming
import Dispatch
import AudioToolboxKit
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// True when `arg` is something only the streaming player handles: a URL with a network
/// scheme, or `-` (standard input).
func needsStreaming(_ arg: String) -> Bool {
    if arg == "-" { return true }
    // A named pipe or socket cannot seek: read it as a stream, like standard input.
    var st = stat()
    if stat(arg, &st) == 0, (st.st_mode & S_IFMT) == S_IFIFO || (st.st_mode & S_IFMT) == S_IFSOCK { return true }
    let lower = arg.lowercased()
    if [".pls", ".m3u", ".m3u8"].contains(where: { lower.hasSuffix($0) }) { return true }
    return ["http://", "https://", "icy://", "icyx://"].contains { lower.hasPrefix($0) }
}

/// What the status line shows, updated from the event stream.
final class StreamStatus: Sendable {
    struct Values {
        var title: String?
        var station: String?
        var health: BufferHealth?
        var state: StreamingPlayerState = .idle
        var index = 0
        var failed = false
        var done = false
    }
    let values = Locked(Values())
}

/// `--record FILE`: the recorder every stream's bytes also go to (nil when not recording).
let streamRecorder = Locked<StreamRecorder?>(nil)

/// The byte source afplay uses for each argument (recording what it delivers with `--record`).
@Sendable func afplaySource(_ url: String) throws(AudioError) -> any ByteSource {
    let source = try StreamingPlayer.defaultSource(for: url)
    if let recorder = streamRecorder.withLock({ $0 }) { return RecordingByteSource(source, recorder: recorder) }
    return source
}

/// Runs the streaming player over `options.files` until it stops; returns the exit code.
func runStreaming(_ options: Options, output: @escaping AudioOutputDeviceFactory) -> Int32 {
    let status = StreamStatus()
    let result = Locked<Int32>(0)
    let finished = DispatchSemaphore(value: 0)
    Task.detached {
        let code = await streamingMain(options, output: output, status: status)
        result.withLock { $0 = code }
        finished.signal()
    }
    finished.wait()
    return result.withLock { $0 }
}

private func streamingMain(_ options: Options, output: @escaping AudioOutputDeviceFactory, status: StreamStatus) async -> Int32 {
    if let path = options.record {
        do {
            let recorder = try StreamRecorder(path: path)
            streamRecorder.withLock { $0 = recorder }
        } catch {
            writeStderr("afplay: \(error)")
            return 2
        }
    }
    var policy = BufferingPolicy()
    if let s = options.prebuffer { policy.startSeconds = s }
    if let c = options.crossfade { policy.crossfadeSeconds = c }
    policy.deviceLostTimeout = deviceLostTimeout
    // Start on the device's small buffer (quick first audio), then 0.4 s like local files:
    // a quarter as many requests from PulseAudio once the stream plays.
    policy.steadyOutputLatency = 0.4
    let player = StreamingPlayer(policy: policy, output: output, sourceFactory: afplaySource)
    let files = options.files
    let events = Task.detached {
        for await event in player.events {
            report(event, files: files, status: status, options: options)
            if status.values.withLock({ $0.done }) { break }
        }
    }
    do {
        try await player.setVolume(options.volume, fade: 0)
    } catch {
        writeStderr("afplay: \(error)")
    }
    await player.play(files)
    if options.start > 0 {
        // Seek once the first item is playing.
        while true {
            let s = await player.state
            if s == .playing || s.name == "stopped" { break }
            try? await Task.sleep(for: .milliseconds(5))
        }
        do { try await player.seek(to: options.start) } catch { writeStderr("afplay: \(error)") }
    }
    // `-t` counts the audio played across every item (a playlist of short files stops after
    // `-t` seconds in all, not `-t` seconds into one of them), from the `--start` seek on.
    let playedBeforeStart = options.start > 0 ? await player.statistics.playedSeconds : 0
    let ui = !options.noUI && !options.jsonEvents && isatty(1) == 1 && isatty(0) == 1
    var terminal = termios()
    if ui {
        tcgetattr(0, &terminal)
        rememberTerminalForCrashes(terminal)
        var raw = terminal
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        tcsetattr(0, TCSANOW, &raw)
    }
    let began = HostTime.now()
    while true {
        if status.values.withLock({ $0.done }) { break }
        if interrupted.load(ordering: .relaxed) { break }
        // Without the status line this loop only watches for the end, a signal and `-t`: every
        // 250 ms (20 ms cost about 150 thread wake-ups a second across the timer and the
        // cooperative threads), every 20 ms or less near the `-t` limit.
        var pause = 250
        if let limit = options.limit, HostTime.seconds(ticks: HostTime.now() - began) >= limit - 0.3 {
            pause = 20
            let stats = await player.statistics
            if HostTime.seconds(ticks: HostTime.now() - began) >= limit, stats.timeToFirstAudio != nil {
                let p = await player.position
                let played = stats.playedSeconds - playedBeforeStart
                if (p.index == 0 && p.seconds >= limit + options.start - 0.01) || played >= limit - 0.01
                    || HostTime.seconds(ticks: HostTime.now() - began) >= limit + 30 { break }
                pause = max(2, min(20, Int((limit - played) * 1000)))
            }
        }
        if ui {
            writeStdout(await streamStatusLine(player, status: status, files: files))
            var fds = pollfd(fd: 0, events: Int16(POLLIN), revents: 0)
            if poll(&fds, 1, 100) > 0 {
                var buf = [UInt8](repeating: 0, count: 8)
                let n = read(0, &buf, 8)
                if n > 0 {
                    let key = Array(buf[0..<n])
                    do {
                        switch key {
                        case [0x20]: if await player.state == .paused { await player.resume() } else { await player.pause() }
                        case [0x71], [0x51]: interrupted.store(true, ordering: .relaxed)
                        case [0x2B], [0x3D]: try await player.setVolume(min(1, await player.currentVolume + 0.1))
                        case [0x2D], [0x5F]: try await player.setVolume(max(0, await player.currentVolume - 0.1))
                        case [0x1B, 0x5B, 0x43]: try await player.seek(to: await player.position.seconds + 10)
                        case [0x1B, 0x5B, 0x44]: try await player.seek(to: max(0, await player.position.seconds - 10))
                        case [0x6C], [0x4C]: await player.jumpToLive()
                        case [0x6E], [0x4E]: await player.skip()
                        default: break
                        }
                    } catch {
                        writeStderr("\nafplay: \(error)")
                    }
                }
            }
        } else {
            try? await Task.sleep(for: .milliseconds(pause))
        }
    }
    if ui {
        writeStdout(await streamStatusLine(player, status: status, files: files) + "\n")
        tcsetattr(0, TCSANOW, &terminal)
    }
    let stats = await player.statistics
    await player.stop()
    status.values.withLock { $0.done = true }
    events.cancel()
    var recordFailed = false
    if let recorder = streamRecorder.withLock({ $0 }) {
        do {
            try recorder.finish()
            writeStderr("afplay: recorded \(recorder.framesWritten) frames to \(recorder.path)\(recorder.isReencoding ? " (re-encoded)" : "")")
        } catch {
            writeStderr("afplay: recording \(recorder.path) failed: \(error)")
            recordFailed = true
        }
    }
    if options.debug {
        writeStderr("afplay: first audio \(stats.timeToFirstAudio.map { "\(Int($0 * 1000)) ms" } ?? "never"), \(stats.bytesReceived) bytes, \(stats.underruns) underruns, \(stats.reconnects) reconnects")
    }
    return status.values.withLock { $0.failed } || recordFailed ? 1 : 0
}

private func streamStatusLine(_ player: StreamingPlayer, status: StreamStatus, files: [String]) async -> String {
    let p = await player.position
    let state = await player.state
    let volume = await player.currentVolume
    let buffered = await player.statistics.bufferedSeconds
    let (title, station, underruns) = status.values.withLock { ($0.title, $0.station, $0.health?.underruns ?? 0) }
    let time = p.duration.map { "\(clock(p.seconds))/\(clock($0))" } ?? "\(clock(p.seconds)) live"
    let name = title ?? station ?? (files.indices.contains(p.index) ? files[p.index].split(separator: "/").last.map(String.init) ?? "" : "")
    let stateName = state.name == "buffering" ? "buffer " : state.name == "paused" ? "paused " : "playing"
    return "\r\(stateName) \(time) buf \(format1(buffered))s\(underruns > 0 ? " (\(underruns) underruns)" : "") vol \(Int(volume * 100))% \(terminalSafe(name))\u{1B}[K"
}

private func report(_ event: StreamingPlayerEvent, files: [String], status: StreamStatus, options: Options) {
    switch event {
    case .state(let s):
        status.values.withLock { $0.state = s }
        var fields = [("event", jsonString("state")), ("state", jsonString(s.name))]
        if case .buffering(let progress) = s { fields.append(("progress", jsonNumber(progress))) }
        if case .stopped(let reason) = s {
            switch reason {
            case .ended: fields.append(("reason", jsonString("ended")))
            case .stopped: fields.append(("reason", jsonString("stopped")))
            case .error(let e):
                fields.append(("reason", jsonString("error")))
                fields.append(("message", jsonString(e.description)))
                status.values.withLock { $0.failed = true }
            }
        }
        emitJSON(fields)
        if case .stopped(let reason) = s {
            if reason == .ended { emitJSON([("event", jsonString("end"))]) }
            status.values.withLock { $0.done = true }
        }
    case .itemStarted(let index, let url, let format):
        status.values.withLock { $0.index = index; $0.title = nil }
        if options.debug { writeStderr("afplay: [\(index)] \(url): \(format)") }
        emitJSON([("event", jsonString("item")), ("index", String(index)), ("path", jsonString(url)),
                  ("format_id", jsonString(format.formatID.description)), ("sample_rate", jsonNumber(format.sampleRate)),
                  ("channels", String(format.channelsPerFrame))])
    case .itemFinished(let index, let url):
        emitJSON([("event", jsonString("item_end")), ("index", String(index)), ("path", jsonString(url))])
    case .metadata(let m, let index, let time):
        status.values.withLock { $0.title = m.title ?? $0.title }
        if options.debug { writeStderr("afplay: title at \(jsonNumber(time)) s: \(m.title ?? "")") }
        var fields = [("event", jsonString("metadata")), ("index", String(index)), ("playback_time", jsonNumber(time))]
        if let t = m.title { fields.append(("title", jsonString(t))) }
        if let u = m.url { fields.append(("url", jsonString(u))) }
        emitJSON(fields)
    case .firstAudio(let seconds):
        emitJSON([("event", jsonString("first_audio")), ("seconds", jsonNumber(seconds))])
    case .bufferHealth(let h):
        status.values.withLock { $0.health = h }
        emitJSON([("event", jsonString("buffer")), ("seconds", jsonNumber(h.bufferedSeconds)), ("bytes", String(h.bufferedBytes)),
                  ("underruns", String(h.underruns))])
    case .reconnected(let index, let continuous):
        emitJSON([("event", jsonString("reconnect")), ("index", String(index)), ("continuous", continuous ? "true" : "false")])
    case .seeked(let index, let seconds, let estimated, let newRequest):
        emitJSON([("event", jsonString("seek")), ("index", String(index)), ("seconds", jsonNumber(seconds)),
                  ("estimated", estimated ? "true" : "false"), ("new_request", newRequest ? "true" : "false")])
    case .error(let index, let error):
        status.values.withLock { $0.failed = true }
        writeStderr("afplay: \(files.indices.contains(index) ? files[index] : "item \(index)"): \(error)")
        emitJSON([("event", jsonString("error")), ("index", String(index)), ("message", jsonString(error.description))])
    }
}
