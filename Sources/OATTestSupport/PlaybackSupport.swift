import OATCore
#if canImport(Glibc)
import Glibc
#endif

/// A child process whose exit status a test wants (the tools under test: `afplay`). Started with
/// `posix_spawn`, stdout and stderr into a file, stopped by PID.
public final class ToolProcess: @unchecked Sendable {
    /// The process id.
    public let pid: pid_t
    /// Where stdout and stderr go.
    public let outputPath: String
    private var status: Int32?

    /// Starts `executable` with `arguments`; `environment` entries override the inherited ones.
    public init(_ executable: String, _ arguments: [String], environment: [String: String] = [:], outputPath: String) throws(AudioError) {
        pid = try spawnProcess(executable, arguments, environment: environment, outputPath: outputPath)
        self.outputPath = outputPath
    }

    /// Waits up to `timeout` seconds; returns the exit code (128 + signal when killed), or nil
    /// if it is still running.
    public func wait(timeout: Double) -> Int32? {
        if let status { return status }
        let deadline = HostTime.now() + HostTime.ticks(seconds: timeout)
        repeat {
            var raw: Int32 = 0
            if waitpid(pid, &raw, WNOHANG) == pid {
                let code = raw & 0x7F == 0 ? (raw >> 8) & 0xFF : 128 + (raw & 0x7F)
                status = code
                return code
            }
            usleep(5_000)
        } while HostTime.now() < deadline
        return nil
    }

    /// Stops it (SIGTERM, then SIGKILL after `grace` seconds) unless it has exited.
    public func stop(grace: Double = 2) {
        guard status == nil else { return }
        kill(pid, SIGTERM)
        if wait(timeout: grace) == nil {
            kill(pid, SIGKILL)
            _ = wait(timeout: 5)
        }
    }

    /// What it printed.
    public var output: String { Corpus.read(outputPath).map { String(decoding: $0, as: UTF8.self) } ?? "" }

    deinit { stop(grace: 0.5) }
}

/// A scratch directory for generated fixtures, removed by ``remove()``.
public final class ScratchDirectory: @unchecked Sendable {
    /// The directory.
    public let path: String

    /// Creates `/tmp/oat-<stem>-XXXXXX`.
    public init(_ stem: String) throws(AudioError) {
        var template = Array("/tmp/oat-\(stem)-XXXXXX".utf8CString)
        guard let dir = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw AudioError(.io, component: "ScratchDirectory", "cannot create a scratch directory")
        }
        path = String(cString: dir)
    }

    /// Removes the directory and what is in it.
    public func remove() { removeTree(path) }

    deinit { remove() }
}

/// Runs `ffmpeg` with `arguments` (no shell); true when it succeeded.
@discardableResult
public func runFFmpeg(_ arguments: [String]) -> Bool {
    guard let ffmpeg = ChildProcess.which("ffmpeg") else { return false }
    let log = "/tmp/oat-ffmpeg-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).log"
    defer { unlink(log) }
    guard let p = try? ToolProcess(ffmpeg, ["-hide_banner", "-loglevel", "error", "-nostdin", "-y"] + arguments, outputPath: log) else { return false }
    return p.wait(timeout: 60) == 0
}

/// The test signal for playback fixtures, as an `aevalsrc` expression per channel: a rising
/// chirp (300 Hz to 3.3 kHz over `seconds`) on the first channel and a 441 Hz tone on the second,
/// both starting at a non-zero sample so the first played frame is never silent.
public func fixtureSignalExpression(channels: Int, seconds: Double) -> String {
    let sweep = "0.45*sin(2*PI*(300+\(1500.0 / seconds)*t)*t+0.3)"
    let tone = "0.35*sin(2*PI*441*t+1)"
    return channels == 1 ? sweep : [sweep, tone].prefix(channels).joined(separator: "|")
}

/// Encodes `seconds` of the fixture signal at `rate` with `channels` into `path`, with the
/// codec arguments `codec` (e.g. `["-c:a", "libmp3lame", "-b:a", "192k"]`); false on failure.
public func makeFixture(_ path: String, rate: Int, channels: Int, seconds: Double, codec: [String]) -> Bool {
    runFFmpeg(["-f", "lavfi", "-i", "aevalsrc=\(fixtureSignalExpression(channels: channels, seconds: seconds)):s=\(rate):d=\(seconds)",
               "-map_metadata", "-1"] + codec + [path])
}
