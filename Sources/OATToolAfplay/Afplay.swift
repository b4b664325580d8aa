// afplay: plays audio files, like macOS afplay, with a live status line on a terminal. The tool's
// code, run by the thin afplay executable (Sources/afplay) and by the multi-call binary oat-tools.
import AudioToolboxKit
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

let usage = """
usage: afplay [options] FILE|URL|-...
  Plays the files one after another, gaplessly. URLs (http, https, icy) and - (standard
  input) play through the streaming player: live radio with ICY titles, progressive files,
  PLS/M3U playlists and HLS (.m3u8).
  -v VOLUME            volume 0.0 ... 1.0 (default 1.0)
  -t SECONDS           play only this many seconds
  -d                   print debug information (formats, device) to stderr
\(timePitchUsage)
  --start SECONDS      start this far into the first file
  --output SPEC        auto (default), pulse[:SINK], alsa[:DEVICE], wav:PATH, null, null:fast;
                       SPEC,rate=HZ (null:rate=HZ) plays files at that rate (resampled)
  --no-ui              no status line or keys, even on a terminal
  --json-events        print one JSON object per line on stdout for each event
  --record FILE        streams: also write the received audio to FILE (packets copied when
                       the container holds them, e.g. MP3 to .mp3, AAC to .aac/.m4a; else re-encoded)
  --prebuffer SECONDS  streams: decoded audio to buffer before starting (default 0.15)
  --crossfade SECONDS  fade each item into the next over SECONDS (equal power) instead of
                       joining them gaplessly (files and on-demand streams; not live radio)
\(GraphOptions.usage)
  --version            print the version and exit
  -h, --help           this help
keys on a terminal: space pause/resume, left/right seek 10 s, +/- volume, q quit;
  streams also: n next item, l jump to live

"""

func fail(_ message: String, code: Int32 = 2) -> Never {
    writeStderr("afplay: \(message)")
    exitTool(code, "afplay")
}

func writeStderr(_ text: String) { writeStandardError(text) }

/// Writes to standard output; a failed write makes afplay's exit status 1 (``exitTool``).
func writeStdout(_ text: String) { writeStandardOutput(text) }

// MARK: Arguments

struct Options: Sendable {
    var volume: Float = 1
    var limit: Double?
    var debug = false
    var start: Double = 0
    var output = AudioOutputSpec.auto
    /// The `rate=HZ` option of `--output`: the device's rate (files resampled to it).
    var outputRate: Double?
    var noUI = false
    var jsonEvents = false
    var prebuffer: Double?
    var crossfade: Double?
    var record: String?
    var files: [String] = []
}

/// Longest `-t`/`--start` taken literally (about 31 years): larger values, up to `inf`, mean
/// "the whole file" or "the end", so no seconds-to-frames conversion can overflow.
let maximumSeconds = 1e9

func parseArguments() -> Options {
    var o = Options()
    var args = ArraySlice(graphOptions.remaining)
    func value(_ flag: String) -> String {
        guard let v = args.popFirst() else { fail("\(flag) needs a value\n\(usage)") }
        return v
    }
    while let arg = args.popFirst() {
        switch arg {
        case "-v": guard let v = Float(value(arg)), v >= 0 else { fail("-v takes a number from 0 to 1") }; o.volume = min(1, v)
        case "-t":
            // Beyond any file (up to inf) means the whole file: no limit, never a frame-count overflow.
            guard let v = Double(value(arg)), v > 0 else { fail("-t takes a positive number of seconds") }
            o.limit = v < maximumSeconds ? v : nil
        case "-d": o.debug = true
        case _ where takeTimePitchOption(arg, { value(arg) }): break // -r, -q, --pitch: TimePitchOptions.swift
        case "--start":
            guard let v = Double(value(arg)), v >= 0, v.isFinite else { fail("--start takes a finite number of seconds >= 0") }
            o.start = min(v, maximumSeconds) // past the end of the file: the item ends at once
        case "--output":
            let text = value(arg)
            guard let spec = AudioOutputSpec(parsing: text) else { fail("--output takes auto, pulse[:SINK], alsa[:DEVICE], wav:PATH, null or null:fast (each may end in ,rate=HZ)") }
            o.output = spec
            o.outputRate = AudioOutputSpec.sampleRate(parsing: text)
        case "--no-ui": o.noUI = true
        case "--json-events": o.jsonEvents = true
        case "--record": o.record = value(arg)
        case "--crossfade": guard let v = Double(value(arg)), v >= 0, v <= 30 else { fail("--crossfade takes seconds from 0 to 30") }; o.crossfade = v
        case "--prebuffer": guard let v = Double(value(arg)), v >= 0, v <= 60 else { fail("--prebuffer takes seconds from 0 to 60") }; o.prebuffer = v
        case "-h", "--help": writeStdout(usage); exitTool(0, "afplay")
        case "--version": writeStdout(OpenAudioToolboxVersion.line(tool: "afplay")); exitTool(0, "afplay")
        default:
            if arg.hasPrefix("-") && arg.count > 1 { fail("unknown option \(arg)\n\(usage)") }
            o.files.append(arg)
        }
    }
    if o.files.isEmpty { fail("no file given\n\(usage)") }
    return o
}

/// afplay's command line (without the program name), set by ``runAfplay(arguments:)`` before the
/// globals below are first read (they are initialised lazily, on first use, from it).
private let commandLineArguments = Locked<[String]>([])
let graphOptions = GraphOptions.extract(commandLineArguments.withLock { $0 })
let options = parseArguments()

// MARK: Events

let startTime = HostTime.now()
func elapsed() -> String { jsonNumber(HostTime.seconds(ticks: HostTime.now() - startTime)) }
func jsonNumber(_ d: Double) -> String { String((d * 1000).rounded() / 1000) }

func emitJSON(_ fields: [(String, String)]) {
    guard options.jsonEvents else { return }
    let body = ([("time", elapsed())] + fields).map { "\(jsonString($0.0)): \($0.1)" }.joined(separator: ", ")
    writeStdout("{\(body)}\n")
}

let anyFailed = Atomic<Bool>(false)
let interrupted = Atomic<Bool>(false)
/// Seconds the output device may stay lost (server gone, reconnecting) before afplay gives up:
/// 30, or `OAT_DEVICE_LOST_TIMEOUT`.
let deviceLostTimeout = getenv("OAT_DEVICE_LOST_TIMEOUT").flatMap { Double(String(cString: $0)) } ?? 30
/// When the output device was lost (host time) and why; nil while it works.
let deviceLost = Locked<(since: UInt64, reason: String)?>(nil)

@Sendable func handle(_ event: AudioFilePlayer.Event) {
    switch event {
    case .itemStarted(let index, let format):
        if options.debug { writeStderr("afplay: [\(index)] \(options.files[index]): \(format)") }
        emitJSON([("event", jsonString("item")), ("index", String(index)), ("path", jsonString(options.files[index])),
                  ("format_id", jsonString(format.formatID.description)), ("sample_rate", jsonNumber(format.sampleRate)),
                  ("channels", String(format.channelsPerFrame))])
    case .state(let state):
        emitJSON([("event", jsonString("state")), ("state", jsonString(state.rawValue))])
        if state == .ended { emitJSON([("event", jsonString("end"))]) }
    case .itemFailed(let index, let error):
        anyFailed.store(true, ordering: .relaxed)
        writeStderr("afplay: \(options.files[index]): \(error)")
        emitJSON([("event", jsonString("error")), ("index", String(index)), ("message", jsonString(error.description))])
    case .queue(let e):
        switch e {
        case .underrun(let count): emitJSON([("event", jsonString("underrun")), ("count", String(count))])
        case .device(let d):
            emitJSON([("event", jsonString("device")), ("detail", jsonString("\(d)"))])
            if case .lost(let reason) = d { deviceLost.withLock { if $0 == nil { $0 = (HostTime.now(), reason) } } }
            if d == .restored { deviceLost.withLock { $0 = nil } }
        case .converterError(let error): emitJSON([("event", jsonString("decode_error")), ("message", jsonString(error.description))])
        case .timePitchError(let error):
            writeStderr("afplay: rate/pitch not applied: \(error)")
            emitJSON([("event", jsonString("time_pitch_error")), ("message", jsonString(error.description))])
        default: break
        }
    }
}

func clock(_ s: Double) -> String {
    let t = Int(max(0, s))
    let m = t / 60, sec = t % 60
    return "\(m < 10 ? "0" : "")\(m):\(sec < 10 ? "0" : "")\(sec)"
}

func format1(_ v: Double) -> String { String((v * 10).rounded() / 10) }

/// One malloc arena for the whole process, set before any thread starts. glibc gives each thread
/// that allocates an arena of its own (8 threads play a stream: decoder, reader, queue, PulseAudio,
/// dispatch), and the memory one of them frees is not reused by the others: 0.2 MB of a stream's
/// peak RSS (docs/PERFORMANCE.md, "The stream's footprint"). The render thread does not allocate,
/// and the others allocate a few times per buffer, so they do not contend for it.
/// (mallopt and M_ARENA_MAX, -8, are in malloc.h, which the Glibc module does not import.)
private func useOneMallocArena() {
#if canImport(Glibc)
    if let mallopt = dlsym(nil, "mallopt") {
        _ = unsafeBitCast(mallopt, to: (@convention(c) (Int32, Int32) -> Int32).self)(-8, 1)
    }
#endif
}

/// Runs afplay with `arguments` (the command line without the program name); exits with its status.
@MainActor package func runAfplay(arguments: [String]) -> Never {
    useOneMallocArena()
    commandLineArguments.withLock { $0 = arguments }
    installCrashReport("afplay", context: "while playing " + options.files.prefix(3).joined(separator: " ") + (options.files.count > 3 ? " ..." : ""))

    // An output file that is one of the inputs would be destroyed before it is read: refused
    // before anything is opened (wav:PATH and --record FILE; also through links).
    do {
        let inputs = options.files.filter { $0 == "-" || !$0.contains("://") }
        if case .wav(let path, _) = options.output { try SafeOutputFile.refuseInputs(output: path, inputs: inputs) }
        if let path = options.record { try SafeOutputFile.refuseInputs(output: path, inputs: inputs) }
    } catch {
        fail("\(error)", code: 1)
    }

    _ = startTime // the clock of --json-events starts here

    // MARK: Output

    let spec = options.output
    let streaming = options.record != nil || options.crossfade != nil || options.files.contains(where: needsStreaming)
    let factory: AudioOutputDeviceFactory = { format throws(AudioError) in
        // A file player can buffer more than the 0.1 s default: 0.4 s lets PulseAudio ask for audio
        // every 100 ms instead of every 25 ms (fewer wakeups). Pause is a cork and seeks flush, so
        // only volume changes are heard that much later. Streams keep the default: the streaming
        // player starts after 0.15 s of audio, and a 0.4 s first request would be padded with
        // silence that delays the first audio at the speaker by about 0.3 s.
        var outputOptions = AudioOutput.Options()
        if !streaming { outputOptions.pulseLatency = 0.4 }
        let opened = try AudioOutput.open(spec, format: format, options: outputOptions)
        if let notice = opened.notice { writeStderr("afplay: \(notice)") }
        if options.debug { writeStderr("afplay: output \(opened.device.name), \(opened.device.format), latency \(Int(opened.device.latency * 1000)) ms") }
        emitJSON([("event", jsonString("output")), ("device", jsonString(opened.device.name))])
        return opened.device
    }

    // MARK: Play

    // Signals stop playback; outputs (wav:PATH, --record) are finished and kept.
    SafeOutputFile.installSignalHandler(SIGINT) { _ in interrupted.store(true, ordering: .relaxed) }
    SafeOutputFile.installSignalHandler(SIGTERM) { _ in interrupted.store(true, ordering: .relaxed) }
    SafeOutputFile.installSignalHandler(SIGHUP) { _ in interrupted.store(true, ordering: .relaxed) }

    // Streams with --eq/--reverb/--compress: the streaming player's output device is wrapped in an
    // effect chain (AUProcessingOutputDevice), processed on the device's render thread.
    if streaming, let rate = options.outputRate {
        fail("--output ...,rate=\(Int(rate)) applies to local files; streams and --record play at the stream's rate")
    }
    if streaming && graphOptions.isActive {
        if graphOptions.mix { fail("--mix plays local files at the same time; it does not apply to streams or --record") }
        let effects = graphOptions
        let inner = factory
        exitTool(runStreaming(options, output: { format throws(AudioError) in
            let device = try inner(format)
            // The chain's nodes are made for 2 channels; other layouts play without effects.
            guard format.channels == 2 else {
                writeStderr("afplay: effects apply to stereo streams; this one has \(format.channels) channels, played without them")
                return device
            }
            do throws(AudioError) {
                return try AUProcessingOutputDevice(wrapping: device, effects: effects.makeEffects())
            } catch {
                device.close()
                throw error
            }
        }), "afplay")
    }
    // --eq/--reverb/--compress/--mix: play through the OATUnits graph (GraphPlayback.swift).
    if graphOptions.isActive {
        exitTool(runGraphPlayback(files: options.files, graphOptions: graphOptions, volume: options.volume, start: options.start,
                                  limit: options.limit, output: options.output, outputRate: options.outputRate, debug: options.debug,
                                  interrupted: interrupted), "afplay")
    }
    if streaming {
        exitTool(runStreaming(options, output: factory), "afplay")
    }

    let player: AudioFilePlayer
    do {
        player = try AudioFilePlayer(paths: options.files, output: factory, sampleRate: options.outputRate)
    } catch {
        fail("\(error)", code: 1)
    }
    player.eventHandler = handle
    do {
        try player.setVolume(options.volume, rampSeconds: 0)
        try applyTimePitchOptions(to: player, debug: options.debug)
        try player.play(from: options.start, duration: options.limit)
    } catch {
        fail("\(error)", code: 1)
    }

    let ui = !options.noUI && !options.jsonEvents && isatty(1) == 1 && isatty(0) == 1
    var terminal = termios()
    if ui {
        tcgetattr(0, &terminal)
        rememberTerminalForCrashes(terminal)
        var raw = terminal
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        tcsetattr(0, TCSANOW, &raw)
    }

    func statusLine() -> String {
        let p = player.position()
        let total = p.duration ?? 0
        let width = 24
        let filled = total > 0 ? min(width, Int(Double(width) * p.seconds / total)) : 0
        let bar = String(repeating: "=", count: filled) + String(repeating: "-", count: width - filled)
        let meters = player.levels().map { level -> String in
            let db = level.peakPower > 1e-6 ? 20 * log10(Double(level.peakPower)) : -60
            let n = max(0, min(8, Int((db + 48) / 6)))
            return String(repeating: "#", count: n) + String(repeating: " ", count: 8 - n)
        }.joined(separator: "|")
        let state = player.currentState == .paused ? "paused " : "playing"
        let name = options.files[p.item].split(separator: "/").last.map(String.init) ?? ""
        return "\r\(state) \(clock(p.seconds))/\(clock(total)) [\(bar)] buf \(String(format1(player.bufferedSeconds)))s vol \(Int(player.volume * 100))% [\(meters)] \(terminalSafe(name))\u{1B}[K"
    }

    if ui { player.isMeteringEnabled = true }
    while true {
        let state = player.currentState
        if state == .ended || state == .stopped { break }
        if interrupted.load(ordering: .relaxed) { break }
        if let lost = deviceLost.withLock({ $0 }), HostTime.seconds(ticks: HostTime.now() &- lost.since) > deviceLostTimeout {
            if ui { writeStdout("\n") }
            writeStderr("afplay: the output device has been gone for \(Int(deviceLostTimeout)) s (\(lost.reason)); giving up")
            anyFailed.store(true, ordering: .relaxed)
            break
        }
        if ui {
            writeStdout(statusLine())
            var fds = pollfd(fd: 0, events: Int16(POLLIN), revents: 0)
            if poll(&fds, 1, 100) > 0 {
                var buf = [UInt8](repeating: 0, count: 8)
                let n = read(0, &buf, 8)
                if n > 0 {
                    let key = Array(buf[0..<n])
                    do {
                        switch key {
                        case [0x20]: if player.currentState == .paused { try player.resume() } else { try player.pause() }
                        case [0x71], [0x51]: interrupted.store(true, ordering: .relaxed)
                        case [0x2B], [0x3D]: try player.setVolume(min(1, player.volume + 0.1))
                        case [0x2D], [0x5F]: try player.setVolume(max(0, player.volume - 0.1))
                        case [0x1B, 0x5B, 0x43]: player.seek(to: player.position().seconds + 10)
                        case [0x1B, 0x5B, 0x44]: player.seek(to: max(0, player.position().seconds - 10))
                        default: break
                        }
                    } catch {
                        writeStderr("afplay: \(error)")
                    }
                }
            }
        } else {
            sleep(seconds: 0.1)
        }
    }
    if ui {
        writeStdout(statusLine() + "\n")
        tcsetattr(0, TCSANOW, &terminal)
    }
    player.stop()
    exitTool(anyFailed.load(ordering: .relaxed) ? 1 : 0, "afplay")
}
