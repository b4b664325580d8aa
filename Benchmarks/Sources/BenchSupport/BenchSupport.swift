// Shared helpers for the benchmark executables: child processes with their resource usage,
// a private PulseAudio daemon with a null sink, tool lookup, medians and Markdown tables.

import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Monotonic seconds.
public func monotonicSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// The median (the mean of the middle two for an even count); 0 for none.
public func median(_ xs: [Double]) -> Double {
    guard !xs.isEmpty else { return 0 }
    let s = xs.sorted()
    return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
}

/// Progress and diagnostics go to stderr, tables to stdout.
public func note(_ message: String) {
    FileHandle.standardError.write(Data("\(message)\n".utf8))
}

/// The path of `name` on PATH, or nil.
public func findTool(_ name: String) -> String? {
    if name.contains("/") { return access(name, X_OK) == 0 ? name : nil }
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
    for dir in path.split(separator: ":") {
        let candidate = "\(dir)/\(name)"
        if access(candidate, X_OK) == 0 { return candidate }
    }
    return nil
}

/// How a child process ran: exit status, wall time, CPU time and peak resident memory.
public struct ChildUsage: Sendable {
    /// The exit status (128 + signal when killed by a signal; -1 when it could not start).
    public var status: Int32
    /// Wall-clock seconds from spawn to exit.
    public var wallSeconds: Double
    /// User CPU seconds.
    public var userSeconds: Double
    /// System CPU seconds.
    public var systemSeconds: Double
    /// Peak resident set size in KiB (`ru_maxrss`).
    public var maxRSSKiB: Int
    /// User plus system CPU seconds.
    public var cpuSeconds: Double { userSeconds + systemSeconds }
}

/// Runs `path args` with `environment` added to ours (stdout/stderr to `outputPath`, or
/// /dev/null), waits for it with wait4 and returns its resource usage. `timeout` kills it
/// (SIGTERM, then SIGKILL) when it runs too long.
public func runChild(_ path: String, _ args: [String], environment: [String: String] = [:],
                     outputPath: String = "/dev/null", timeout: Double = 600) -> ChildUsage {
    var env = ProcessInfo.processInfo.environment
    for (k, v) in environment { env[k] = v }
    let argv = ([path] + args).map { strdup($0) } + [nil]
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
    var pid: pid_t = 0
    let start = monotonicSeconds()
    let rc = posix_spawn(&pid, path, &actions, nil, argv, envp)
    guard rc == 0 else { return ChildUsage(status: -1, wallSeconds: 0, userSeconds: 0, systemSeconds: 0, maxRSSKiB: 0) }
    var status: Int32 = 0
    var usage = rusage()
    var termSent = false
    while true {
        let r = wait4(pid, &status, WNOHANG, &usage)
        if r == pid { break }
        if r < 0 && errno != EINTR { break }
        let elapsed = monotonicSeconds() - start
        if elapsed > timeout && !termSent { kill(pid, SIGTERM); termSent = true }
        if elapsed > timeout + 5 { kill(pid, SIGKILL) }
        usleep(2_000)
    }
    let wall = monotonicSeconds() - start
    let exited = (status & 0x7f) == 0
    let code: Int32 = exited ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    func secs(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
    return ChildUsage(status: code, wallSeconds: wall, userSeconds: secs(usage.ru_utime),
                      systemSeconds: secs(usage.ru_stime), maxRSSKiB: Int(usage.ru_maxrss))
}

/// Runs a command and returns its stdout+stderr (nil when it fails to start or exits non-zero).
public func captureOutput(_ path: String, _ args: [String], environment: [String: String] = [:]) -> String? {
    let out = "/tmp/oat-bench-capture-\(getpid()).txt"
    defer { unlink(out) }
    let u = runChild(path, args, environment: environment, outputPath: out)
    guard u.status == 0, let data = FileManager.default.contents(atPath: out) else { return nil }
    return String(decoding: data, as: UTF8.self)
}

/// A private PulseAudio daemon: its own directory under /tmp, a unix socket, and a null sink
/// (float32le) as the default sink. The sink runs with `norewinds=1`: without it PulseAudio's
/// null sink keeps its initial 2-second block after a low-latency stream connects, and every
/// client stalls for about 2 s after its first buffer. Clients reach it through ``environment`` (`PULSE_SERVER`
/// and private runtime paths), so nothing on the machine is touched. Stopped by PID.
public final class PrivatePulse: @unchecked Sendable {
    /// The null sink's name.
    public let sinkName = "oat_bench"
    /// The private directory.
    public let directory: String
    /// The socket path.
    public var socketPath: String { "\(directory)/native" }
    /// `unix:PATH`.
    public var server: String { "unix:\(socketPath)" }
    private var pid: pid_t = 0

    /// The environment for the daemon and its clients.
    public var environment: [String: String] {
        ["HOME": "\(directory)/home", "XDG_CONFIG_HOME": "\(directory)/config", "XDG_RUNTIME_DIR": "\(directory)/runtime",
         "PULSE_RUNTIME_PATH": "\(directory)/runtime", "PULSE_STATE_PATH": "\(directory)/state", "PULSE_SERVER": server,
         "DBUS_SESSION_BUS_ADDRESS": "disabled:"]
    }

    /// Starts the daemon and waits (at most 10 s) until its socket accepts connections.
    public init(sampleRate: Int = 44100, channels: Int = 2) throws {
        guard let binary = findTool("pulseaudio") else { throw BenchError("pulseaudio is not installed") }
        var template = Array("/tmp/oat-bench-pa-XXXXXX".utf8CString)
        guard let dir = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw BenchError("cannot create a private directory")
        }
        directory = String(cString: dir)
        for sub in ["runtime", "state", "config", "home"] { mkdir("\(directory)/\(sub)", 0o700) }
        let script = """
        load-module module-native-protocol-unix socket=\(directory)/native auth-anonymous=1
        load-module module-null-sink sink_name=\(sinkName) format=float32le rate=\(sampleRate) channels=\(channels) norewinds=1
        set-default-sink \(sinkName)

        """
        _ = FileManager.default.createFile(atPath: "\(directory)/daemon.pa", contents: Data(script.utf8))
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        let args = [binary, "-n", "--daemonize=no", "--system=false", "--exit-idle-time=-1", "--disallow-exit",
                    "--use-pid-file=false", "--disable-shm=true", "--log-target=stderr", "-F", "\(directory)/daemon.pa"]
        let argv = args.map { strdup($0) } + [nil]
        let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for p in argv { free(p) }; for p in envp { free(p) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "\(directory)/daemon.log", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        guard posix_spawn(&pid, binary, &actions, nil, argv, envp) == 0 else { throw BenchError("cannot start pulseaudio") }
        let deadline = monotonicSeconds() + 10
        while monotonicSeconds() < deadline {
            if PrivatePulse.socketAccepts(socketPath) { return }
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid { pid = 0; break }
            usleep(20_000)
        }
        let log = (try? String(contentsOfFile: "\(directory)/daemon.log", encoding: .utf8)) ?? ""
        stop()
        throw BenchError("the private pulseaudio did not come up: \(log.suffix(500))")
    }

    /// Stops the daemon (SIGTERM, then SIGKILL, by PID) and removes its directory.
    public func stop() {
        if pid > 0 {
            kill(pid, SIGTERM)
            var status: Int32 = 0
            let deadline = monotonicSeconds() + 3
            while waitpid(pid, &status, WNOHANG) != pid && monotonicSeconds() < deadline { usleep(10_000) }
            if monotonicSeconds() >= deadline { kill(pid, SIGKILL); waitpid(pid, &status, 0) }
            pid = 0
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    deinit { stop() }

    static func socketAccepts(_ path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else { return false }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
        return withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0 }
        }
    }
}

/// A benchmark set-up failure.
public struct BenchError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Prints a Markdown table (header, then rows) to stdout.
public func printTable(_ header: [String], _ rows: [[String]]) {
    print("| " + header.joined(separator: " | ") + " |")
    print("|" + header.map { _ in "---" }.joined(separator: "|") + "|")
    for r in rows { print("| " + r.joined(separator: " | ") + " |") }
}

/// `x` with `digits` decimals, or `—` for nil.
public func fmt(_ x: Double?, _ digits: Int = 2) -> String {
    guard let x, x.isFinite else { return "—" }
    return String(format: "%.\(digits)f", x)
}

/// Generates `output` with ffmpeg unless it already exists; returns false on failure.
public func ffmpegGenerate(_ output: String, _ args: [String]) -> Bool {
    if FileManager.default.fileExists(atPath: output) { return true }
    guard let ffmpeg = findTool("ffmpeg") else { return false }
    let partial = (output as NSString).deletingPathExtension + ".part." + (output as NSString).pathExtension
    let u = runChild(ffmpeg, ["-nostdin", "-hide_banner", "-loglevel", "error", "-y"] + args + [partial])
    guard u.status == 0 else { unlink(partial); return false }
    return rename(partial, output) == 0
}
