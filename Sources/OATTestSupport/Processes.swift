#if canImport(Glibc)
import Glibc
#endif
import OATCore

/// A child process started by a test and ended by its PID.
public final class ChildProcess: @unchecked Sendable {
    /// The process id.
    public let pid: pid_t
    private var reaped = false

    private init(pid: pid_t) { self.pid = pid }

    /// Finds `name` on `PATH` (or the usual system directories); nil if missing.
    public static func which(_ name: String) -> String? {
        let path = getenv("PATH").map { String(cString: $0) } ?? ""
        for dir in path.split(separator: ":") + ["/usr/bin", "/bin", "/usr/sbin", "/usr/local/bin"] {
            let candidate = "\(dir)/\(name)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }

    /// Starts `executable` with `arguments` (not including argv[0]); `environment` entries are
    /// added to (and override) the current environment; stdout and stderr go to `outputPath`
    /// (or `/dev/null`), stdin is `/dev/null`.
    public static func spawn(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
                             outputPath: String? = nil) throws(AudioError) -> ChildProcess {
        ChildProcess(pid: try spawnProcess(executable, arguments, environment: environment, outputPath: outputPath ?? "/dev/null"))
    }

    /// Sends `signal` to the process (by PID) if it has not been reaped.
    public func signal(_ signal: Int32) {
        if !reaped { kill(pid, signal) }
    }

    /// True while the process runs (reaps it when it has exited).
    public var isRunning: Bool {
        if reaped { return false }
        var status: Int32 = 0
        if waitpid(pid, &status, WNOHANG) == pid { reaped = true }
        return !reaped
    }

    /// Sends SIGTERM, waits up to `grace` seconds, then SIGKILL; reaps the process.
    public func terminate(grace: Double = 2) {
        guard !reaped else { return }
        kill(pid, SIGTERM)
        let deadline = HostTime.now() + HostTime.ticks(seconds: grace)
        while HostTime.now() < deadline {
            if !isRunning { return }
            usleep(5_000)
        }
        killNow()
    }

    /// Sends SIGKILL and reaps the process.
    public func killNow() {
        guard !reaped else { return }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        reaped = true
    }

    deinit { killNow() }
}

/// A private PulseAudio daemon for tests: its own runtime directory and unix socket under /tmp,
/// a `module-null-sink` named ``sinkName`` (float32le, `norewinds=1` so its monitor captures
/// every sample exactly), started by the test and stopped by PID.
///
/// Clients reach it through ``server`` (`unix:/tmp/.../native`); nothing is exported to the
/// environment, so parallel tests do not see each other's daemons.
public final class PulseTestDaemon: @unchecked Sendable {
    /// A null sink the daemon serves: its name, rate and channel count (float32le; 5.1 and 7.1
    /// in the order the output device's streams use, FL FR FC LFE RL RR (SL SR), so nothing is
    /// remixed and channel k of the stream is channel k of the monitor).
    public struct Sink: Hashable, Sendable {
        /// The sink's name (its monitor is `NAME.monitor`).
        public var name: String
        /// The sink's rate.
        public var rate: Int
        /// The sink's channels.
        public var channels: Int
        /// The sink's channel map (`front-left,front-right,...`); nil: the default for the count
        /// (5.1 and 7.1 as above).
        public var channelMap: String?
        /// A sink.
        public init(name: String, rate: Int, channels: Int, channelMap: String? = nil) {
            self.name = name
            self.rate = rate
            self.channels = channels
            self.channelMap = channelMap
        }
    }

    static let surroundMaps = [6: "front-left,front-right,front-center,lfe,rear-left,rear-right",
                               8: "front-left,front-right,front-center,lfe,rear-left,rear-right,side-left,side-right"]

    /// The first (default) null sink's name.
    public let sinkName: String
    /// Every null sink, the default first.
    public let sinks: [Sink]
    /// Seconds after the last client left at which the daemon exits by itself (nil: never).
    public let exitIdleSeconds: Int?
    /// The private directory (runtime, state, socket, log).
    public let directory: String
    /// The socket path.
    public let socketPath: String
    /// The null sink's rate.
    public let sampleRate: Int
    /// The null sink's channels.
    public let channels: Int
    /// The daemon process (nil while stopped).
    public private(set) var process: ChildProcess?
    private let binary: String

    /// The server string for clients: `unix:PATH`.
    public var server: String { "unix:\(socketPath)" }
    /// The monitor source of the null sink.
    public var monitorSource: String { "\(sinkName).monitor" }
    /// The log file.
    public var logPath: String { "\(directory)/daemon.log" }

    /// Why the daemon cannot run here (no `pulseaudio` binary), or nil.
    public static var unavailableReason: String? {
        which("pulseaudio") == nil ? "the pulseaudio binary is not installed (Scripts/setup.sh installs it)" : nil
    }

    private static func which(_ name: String) -> String? { ChildProcess.which(name) }

    /// Creates the private directory and starts the daemon, waiting until its socket accepts.
    public convenience init(sampleRate: Int = 44100, channels: Int = 2) throws(AudioError) {
        try self.init(sinks: [Sink(name: "oat_test", rate: sampleRate, channels: channels)])
    }

    /// Starts a daemon serving several null sinks (one daemon for many cases at several rates);
    /// the first is the default sink. With `exitIdleSeconds` the daemon exits by itself that
    /// long after its last client left (a daemon shared by many tests outlives none of them for
    /// long); ``ensureRunning()`` starts it again.
    public init(sinks: [Sink], exitIdleSeconds: Int? = nil) throws(AudioError) {
        guard let binary = Self.which("pulseaudio") else {
            throw AudioError(.deviceUnavailable, component: "PulseTestDaemon", Self.unavailableReason ?? "no pulseaudio")
        }
        guard let first = sinks.first else {
            throw AudioError(.invalidArgument, component: "PulseTestDaemon", "no sinks")
        }
        self.binary = binary
        self.sinks = sinks
        self.exitIdleSeconds = exitIdleSeconds
        sinkName = first.name
        sampleRate = first.rate
        channels = first.channels
        var template = Array("/tmp/oat-pa-XXXXXX".utf8CString)
        guard let dir = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw AudioError(.io, component: "PulseTestDaemon", "cannot create a private directory")
        }
        directory = String(cString: dir)
        socketPath = "\(directory)/native"
        for sub in ["runtime", "state", "config", "home"] { mkdir("\(directory)/\(sub)", 0o700) }
        let sinkLines = sinks.map {
            "load-module module-null-sink sink_name=\($0.name) format=float32le rate=\($0.rate) channels=\($0.channels)"
                + (($0.channelMap ?? Self.surroundMaps[$0.channels]).map { " channel_map=\($0)" } ?? "") + " norewinds=1\n"
        }.joined()
        let script = "load-module module-native-protocol-unix socket=\(socketPath) auth-anonymous=1\n"
            + sinkLines + "set-default-sink \(sinkName)\n"
        guard writeFile("\(directory)/daemon.pa", Array(script.utf8)) else {
            throw AudioError(.io, component: "PulseTestDaemon", "cannot write the daemon script")
        }
        try start()
    }

    /// The environment the daemon and the tools run with (private paths, no user configuration).
    public var environment: [String: String] {
        ["HOME": "\(directory)/home", "XDG_CONFIG_HOME": "\(directory)/config", "XDG_RUNTIME_DIR": "\(directory)/runtime",
         "PULSE_RUNTIME_PATH": "\(directory)/runtime", "PULSE_STATE_PATH": "\(directory)/state", "PULSE_SERVER": server,
         "DBUS_SESSION_BUS_ADDRESS": "disabled:"]
    }

    /// Starts the daemon (again, on the same socket) and waits until it accepts connections.
    public func start(timeout: Double = 10) throws(AudioError) {
        guard process == nil else { return }
        unlink(socketPath)
        let args = ["-n", "--daemonize=no", "--system=false", "--exit-idle-time=\(exitIdleSeconds ?? -1)", "--disallow-exit",
                    "--use-pid-file=false", "--disable-shm=true", "--log-target=stderr", "--resample-method=speex-float-10",
                    "-F", "\(directory)/daemon.pa"]
        let p = try ChildProcess.spawn(binary, args, environment: environment, outputPath: logPath)
        process = p
        let deadline = HostTime.now() + HostTime.ticks(seconds: timeout)
        while HostTime.now() < deadline {
            if !p.isRunning { break }
            if Self.socketAccepts(socketPath) { return }
            usleep(10_000)
        }
        let log = Corpus.read(logPath).map { String(decoding: $0.suffix(2000), as: UTF8.self) } ?? ""
        p.killNow()
        process = nil
        throw AudioError(.deviceUnavailable, component: "PulseTestDaemon", "the private pulseaudio did not come up", underlying: log)
    }

    /// Starts the daemon again if it exited by itself (``exitIdleSeconds``).
    public func ensureRunning() throws(AudioError) {
        if let p = process, !p.isRunning { process = nil }
        try start()
    }

    /// Kills the daemon at once (SIGKILL, by PID): clients see the server vanish.
    public func kill() {
        process?.killNow()
        process = nil
    }

    /// Stops the daemon (SIGTERM, then SIGKILL) and removes the private directory.
    public func stop() {
        process?.terminate()
        process = nil
        removeTree(directory)
    }

    deinit { stop() }

    /// True if a unix socket at `path` accepts a connection.
    public static func socketAccepts(_ path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else { return false }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
            raw[bytes.count] = 0
        }
        return withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0
            }
        }
    }

    /// Records the null sink's monitor as raw float32le with `parec` into `path` until
    /// ``MonitorRecording/stop()``.
    public func recordMonitor(to path: String) throws(AudioError) -> MonitorRecording {
        try recordMonitor(of: sinks[0], to: path)
    }

    /// Records the monitor of `sink` (one of ``sinks``) at its own rate and channel count.
    public func recordMonitor(of sink: Sink, to path: String) throws(AudioError) -> MonitorRecording {
        guard let parec = ChildProcess.which("parec") else {
            throw AudioError(.deviceUnavailable, component: "PulseTestDaemon", "parec is not installed (pulseaudio-utils)")
        }
        // The sink's own channel map (a recording stream with the default map would be
        // remixed from a 5.1 or 7.1 monitor).
        let map = (sink.channelMap ?? Self.surroundMaps[sink.channels]).map { ["--channel-map=\($0)"] } ?? []
        let p = try ChildProcess.spawn(parec, ["-d", "\(sink.name).monitor", "--raw", "--format=float32le", "--rate=\(sink.rate)",
                                               "--channels=\(sink.channels)"] + map + ["--latency-msec=20", "--file-format=raw", path],
                                       environment: environment, outputPath: "\(directory)/parec.log")
        // Wait until the recording stream exists (parec created its file and connected).
        let deadline = HostTime.now() + HostTime.ticks(seconds: 5)
        while HostTime.now() < deadline, p.isRunning, !Self.hasSourceOutput(self) { usleep(10_000) }
        return MonitorRecording(process: p, path: path, channels: sink.channels)
    }

    /// Runs `pactl` with `arguments` against the daemon (waiting at most 10 s) and returns what
    /// it printed; throws when pactl is missing, does not finish or fails.
    @discardableResult
    public func pactl(_ arguments: [String]) throws(AudioError) -> String {
        guard let pactl = ChildProcess.which("pactl") else {
            throw AudioError(.deviceUnavailable, component: "PulseTestDaemon", "pactl is not installed (pulseaudio-utils)")
        }
        let out = "\(directory)/pactl-\(UInt32.random(in: 0...UInt32.max)).out"
        defer { unlink(out) }
        let p = try ToolProcess(pactl, arguments, environment: environment, outputPath: out)
        let status = p.wait(timeout: 10)
        let text = p.output
        guard let status else {
            p.stop(grace: 0.5)
            throw AudioError(.timedOut, component: "PulseTestDaemon", "pactl \(arguments.joined(separator: " ")) did not finish")
        }
        guard status == 0 else {
            throw AudioError(.deviceUnavailable, component: "PulseTestDaemon", "pactl \(arguments.joined(separator: " ")) failed", underlying: text)
        }
        return text
    }

    /// Loads another null sink into the running daemon, as the daemon's own (float32le,
    /// `norewinds=1`), and returns its module index.
    ///
    /// Always through here, never a bare `pactl load-module module-null-sink`: a null sink with
    /// rewinds, idle, renders silence in blocks of its maximum latency (2 s) and sleeps until
    /// the block has "played"; a stream that connects then gets its first request (the target
    /// length: 3,307 frames at 0.1 s and 44.1 kHz, 3,600 at 48 kHz) and nothing more until
    /// the sink wakes, up to 2 s later (measured: 1.93 s with pacat's own client as with ours).
    /// `norewinds=1` makes it render only what is due.
    @discardableResult
    public func loadNullSink(_ sink: Sink) throws(AudioError) -> Int {
        let map = (sink.channelMap ?? Self.surroundMaps[sink.channels]).map { ["channel_map=\($0)"] } ?? []
        let text = try pactl(["load-module", "module-null-sink", "sink_name=\(sink.name)", "format=float32le", "rate=\(sink.rate)",
                              "channels=\(sink.channels)"] + map + ["norewinds=1"])
        guard let index = Int(String(text.filter { !$0.isWhitespace })) else {
            throw AudioError(.deviceUnavailable, component: "PulseTestDaemon", "pactl load-module printed no module index", underlying: text)
        }
        return index
    }

    /// True once some client records from the monitor (asks `pactl`).
    private static func hasSourceOutput(_ d: PulseTestDaemon) -> Bool {
        guard let pactl = ChildProcess.which("pactl") else { usleep(300_000); return true }
        let out = "\(d.directory)/pactl.out"
        guard let p = try? ChildProcess.spawn(pactl, ["list", "short", "source-outputs"], environment: d.environment, outputPath: out) else { return true }
        while p.isRunning { usleep(2_000) }
        return (Corpus.read(out)?.count ?? 0) > 0
    }
}

/// A `parec` recording of a monitor source.
public final class MonitorRecording: @unchecked Sendable {
    private let process: ChildProcess
    /// The raw float32le file.
    public let path: String
    /// Channels per frame.
    public let channels: Int

    init(process: ChildProcess, path: String, channels: Int) {
        self.process = process
        self.path = path
        self.channels = channels
    }

    /// Stops the recorder (SIGTERM by PID) and returns the interleaved samples.
    public func stop() -> [Float] {
        process.terminate()
        guard let bytes = Corpus.read(path) else { return [] }
        let usable = bytes.count / 4 * 4
        return bytes[0..<usable].withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    deinit { process.killNow(); unlink(path) }
}

/// Removes a directory tree (best effort, for test scratch directories).
public func removeTree(_ path: String) {
    guard let dir = opendir(path) else { unlink(path); return }
    while let entry = readdir(dir) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
        if name == "." || name == ".." { continue }
        let child = "\(path)/\(name)"
        var st = stat()
        if lstat(child, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR { removeTree(child) } else { unlink(child) }
    }
    closedir(dir)
    rmdir(path)
}

/// Starts `executable` with `arguments` through `posix_spawn`: stdin from /dev/null, stdout and
/// stderr into `outputPath`, the inherited environment with `environment` added, signals
/// unblocked; returns the PID.
func spawnProcess(_ executable: String, _ arguments: [String], environment: [String: String],
                  outputPath: String) throws(AudioError) -> pid_t {
    var env: [String: String] = [:]
    var e = environ
    while let p = e.pointee {
        let entry = String(cString: p)
        if let eq = entry.firstIndex(of: "=") { env[String(entry[..<eq])] = String(entry[entry.index(after: eq)...]) }
        e += 1
    }
    for (k, v) in environment { env[k] = v }
    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
        for p in argv { free(p) }
        for p in envp { free(p) }
    }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
    // Test threads (Swift concurrency / Dispatch workers) block most signals, and a spawned
    // process inherits the mask: unblock everything and restore the default SIGTERM/SIGINT/SIGHUP
    // handling, or the child ignores the SIGTERM it is stopped with.
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var noSignals = sigset_t()
    sigemptyset(&noSignals)
    posix_spawnattr_setsigmask(&attributes, &noSignals)
    var defaults = sigset_t()
    sigemptyset(&defaults)
    sigaddset(&defaults, SIGTERM)
    sigaddset(&defaults, SIGINT)
    sigaddset(&defaults, SIGHUP)
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    var pid: pid_t = 0
    let rc = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
    guard rc == 0 else {
        throw AudioError(.io, component: "test process", "cannot start \(executable)", underlying: String(cString: strerror(rc)))
    }
    return pid
}
