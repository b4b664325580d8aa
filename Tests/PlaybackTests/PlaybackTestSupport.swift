#if canImport(Glibc)
import Glibc
#endif
import OATTestSupport
import OpenAudioToolbox
import Synchronization
import Testing

/// Why playback tests cannot run here, or nil.
let playbackUnavailable: String? = {
    if let reason = PulseTestDaemon.unavailableReason { return reason }
    if ChildProcess.which("parec") == nil { return "parec is not installed (pulseaudio-utils)" }
    if ChildProcess.which("ffmpeg") == nil { return "ffmpeg is not installed (fixtures are generated with it)" }
    return nil
}()

/// Collects a player's events with the host time they arrived.
final class PlayerEvents: Sendable {
    private let log = Locked<[(time: UInt64, event: AudioFilePlayer.Event)]>([])

    var handler: @Sendable (AudioFilePlayer.Event) -> Void {
        { [self] e in log.withLock { $0.append((HostTime.now(), e)) } }
    }

    var events: [AudioFilePlayer.Event] { log.withLock { $0.map(\.event) } }

    /// Index and host time of the first event matching `predicate`.
    func first(where predicate: (AudioFilePlayer.Event) -> Bool) -> (index: Int, time: UInt64)? {
        log.withLock { l in
            l.firstIndex { predicate($0.event) }.map { ($0, l[$0].time) }
        }
    }

    func waitFor(_ seconds: Double, _ predicate: (AudioFilePlayer.Event) -> Bool) -> Bool {
        waitUntil(seconds) { first(where: predicate) != nil }
    }
}

func isState(_ s: AudioFilePlayer.State) -> (AudioFilePlayer.Event) -> Bool {
    { if case .state(let x) = $0 { x == s } else { false } }
}

func isLost(_ e: AudioFilePlayer.Event) -> Bool {
    if case .queue(.device(.lost)) = e { true } else { false }
}

func waitUntil(_ seconds: Double, _ condition: () -> Bool) -> Bool {
    let deadline = HostTime.now() + HostTime.ticks(seconds: seconds)
    while HostTime.now() < deadline {
        if condition() { return true }
        usleep(5_000)
    }
    return condition()
}


func elapsedSeconds(since t: UInt64) -> Double { HostTime.seconds(ticks: HostTime.now() - t) }

/// Opens the private daemon's null sink.
func pulseOutput(_ daemon: PulseTestDaemon) -> AudioOutputDeviceFactory {
    let sink = daemon.sinkName, server = daemon.server
    return { format throws(AudioError) in
        try AudioOutput.open(.pulse(sink: sink), format: format, options: AudioOutput.Options(pulseServer: server)).device
    }
}

/// A finished playback: what the monitor recorded and what the player reported.
struct PlaybackRun {
    var samples: [Float]
    var events: PlayerEvents
    var ended: Bool
    var underruns: Int
}

/// Plays `paths` with an ``AudioFilePlayer`` into the daemon's null sink while recording its
/// monitor; `during` runs after `play` (seek, pause, ...). Waits for the end (or `timeout`).
func playAndRecord(_ paths: [String], daemon: PulseTestDaemon, from: Double = 0, duration: Double? = nil, timeout: Double = 15,
                   during: (AudioFilePlayer, PlayerEvents) throws -> Void = { _, _ in }) throws -> PlaybackRun {
    let recording = try daemon.recordMonitor(to: "\(daemon.directory)/monitor.raw")
    let player = try AudioFilePlayer(paths: paths, output: pulseOutput(daemon))
    let events = PlayerEvents()
    player.eventHandler = events.handler
    try player.play(from: from, duration: duration)
    try during(player, events)
    let ended = waitUntil(timeout) { player.currentState == .ended }
    // The monitor lags the sink by its own latency (20 ms asked).
    sleep(seconds: 0.3)
    let samples = recording.stop()
    let underruns = player.underrunCount
    player.stop()
    return PlaybackRun(samples: samples, events: events, ended: ended, underruns: underruns)
}

/// Our reference decode of `path` (priming and remainder trimmed) and ffmpeg's.
struct ReferenceDecode {
    var samples: [Float]
    var channels: Int
    var rate: Double
    var frames: Int { samples.count / channels }
}

func referenceDecode(_ path: String) throws -> ReferenceDecode {
    let d = try decodeWithToolbox(path)
    return ReferenceDecode(samples: d.samples, channels: d.channels, rate: d.rate)
}

/// Where the tools are built: next to the test bundle.
func builtProduct(_ name: String) -> String? {
    var buffer = [CChar](repeating: 0, count: 4096)
    let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    var dirs: [String] = []
    if n > 0 {
        let exe = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        // .../debug/OpenAudioToolboxPackageTests.xctest (an executable on Linux)
        if let slash = exe.lastIndex(of: "/") { dirs.append(String(exe[..<slash])) }
    }
    dirs.append("\(Corpus.packageRoot)/.build/debug")
    for d in dirs where access("\(d)/\(name)", X_OK) == 0 { return "\(d)/\(name)" }
    return nil
}
