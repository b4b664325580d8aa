#if canImport(Glibc)
@preconcurrency import Glibc // stdout: a constant in practice, a C global var to the checker
#endif
import OATCore
import OATFiles
import Synchronization

/// Writes `text` as one line to standard error (the command-line tools' error reporting).
/// Control characters other than newline and tab are escaped (``terminalSafe(_:keepNewlines:)``):
/// messages quote names, titles and bytes that came from files and servers.
package func writeStandardError(_ text: String) {
    let safe = terminalSafe(text, keepNewlines: true)
    let line = safe.hasSuffix("\n") ? safe : safe + "\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
}

/// The first failed write to standard output by ``writeStandardOutput(_:)`` (its errno), 0 if none.
private let standardOutputError = Atomic<Int32>(0)

/// Writes `text` to standard output unbuffered (`write(2)`), remembering a failure (a full
/// disk, a closed pipe) for ``exitTool(_:_:)`` to report.
package func writeStandardOutput(_ text: String) {
    var failed: Int32 = 0
    text.withCString { p in
        var rest = strlen(p)
        var at = p
        while rest > 0 {
            let n = write(1, at, rest)
            if n < 0 {
                if errno == EINTR { continue }
                failed = errno
                return
            }
            rest -= n
            at += n
        }
    }
    if failed != 0 { _ = standardOutputError.compareExchange(expected: 0, desired: failed, ordering: .relaxed) }
}

/// Ends the tool with `code`, after flushing standard output: when anything written to it
/// (`print`, ``writeStandardOutput(_:)``) failed, says so on standard error and exits 1 (or
/// `code` if that is already an error). A tool's output that did not arrive is an error, as
/// with `afinfo --json f > /dev/full`.
package func exitTool(_ code: Int32, _ tool: String) -> Never {
    var failure = standardOutputError.load(ordering: .relaxed)
    if fflush(stdout) != 0 && failure == 0 { failure = errno }
    if failure == 0 && ferror(stdout) != 0 { failure = EIO }
    if failure != 0 {
        writeStandardError("\(tool): cannot write to standard output: \(String(cString: strerror(failure)))")
        exit(code == 0 ? 1 : code)
    }
    exit(code)
}

/// An input file as the tools read it: a regular file is read where it is; a FIFO (named
/// pipe) or socket, including `-` (standard input) when it is one, is read once, as a stream, into an
/// unlinked temporary file (under `TMPDIR`, else /tmp) that ``path`` names through
/// `/proc/self/fd`, so the random-access reader can seek in it. ``name`` is what the user gave.
package struct ToolInput {
    /// The name the user gave (for messages).
    package let name: String
    /// The path to open.
    package let path: String
    /// The temporary's descriptor, kept open while the tool runs (-1 for a plain file).
    private let descriptor: Int32

    /// The most a stream is spooled: 4 GiB.
    package static let maximumStreamBytes: Int64 = 4 << 30

    /// Prepares `name` for reading; throws when a stream cannot be read or spooled.
    package init(_ name: String) throws(AudioError) {
        self.name = name
        var st = stat()
        let isStdin = name == "-"
        let ok = isStdin ? fstat(0, &st) == 0 : stat(name, &st) == 0
        let type = st.st_mode & S_IFMT
        guard ok, type == S_IFIFO || type == S_IFSOCK else {
            // A regular file (or whatever the reader will say it is).
            path = isStdin ? "/proc/self/fd/0" : name
            descriptor = -1
            return
        }
        let source = isStdin ? 0 : open(name, O_RDONLY | O_CLOEXEC)
        guard source >= 0 else {
            throw AudioError(.io, component: "input", "cannot open \(name)", underlying: String(cString: strerror(errno)), osStatus: -43)
        }
        defer { if !isStdin { close(source) } }
        let directory = getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array("\(directory)/oat-stream-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else {
            throw AudioError(.io, component: "input", "cannot read \(name) as a stream: no temporary file in \(directory)", underlying: String(cString: strerror(errno)))
        }
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var total: Int64 = 0
        while true {
            let n = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress!, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                let e = errno
                close(fd)
                throw AudioError(.io, component: "input", "read failed on \(name)", offset: total, underlying: String(cString: strerror(e)))
            }
            if n == 0 { break }
            total += Int64(n)
            guard total <= Self.maximumStreamBytes else {
                close(fd)
                throw AudioError(.limitExceeded, component: "input", "\(name) is a stream longer than \(Self.maximumStreamBytes >> 30) GiB, the most read from a pipe")
            }
            var done = 0
            while done < n {
                let w = buffer.withUnsafeBytes { write(fd, $0.baseAddress! + done, n - done) }
                if w < 0 {
                    if errno == EINTR { continue }
                    let e = errno
                    close(fd)
                    throw AudioError(.io, component: "input", "cannot spool \(name) to a temporary file in \(directory)", underlying: String(cString: strerror(e)))
                }
                done += w
            }
        }
        descriptor = fd
        path = "/proc/self/fd/\(fd)"
    }

    /// `error` naming ``name`` where it named ``path``.
    package func naming(_ error: AudioError) -> AudioError {
        AudioFileConversion.renaming(path, to: name, error)
    }
}

/// Names the `--hint` values afinfo takes: the container types the readers know, by their
/// four-character codes (`MPG3`, `adts`, `WAVE`, `caff`, ...) or afconvert's names (`mp3`,
/// `aac`, `wav`, ...). Nil for anything else.
package func fileTypeHint(named name: String) -> AudioFileType? {
    let known: [AudioFileType] = [.wave, .rf64, .bw64, .aiff, .aifc, .caf, .next, .flac, .ogg, .mpeg4, .m4a, .mp1, .mp2, .mp3, .aacADTS]
    if let t = known.first(where: { $0.description == name }) { return t }
    if let t = AudioFileConversion.fileType(named: name) { return t }
    return known.first { $0.description.lowercased() == name.lowercased() }
}

/// The `--hint` values, for messages.
package let fileTypeHintNames = "MPG3, MPG2, MPG1, adts, WAVE, RF64, BW64, AIFF, AIFC, caff, NeXT, flac, OggS, m4af, mp4f"

/// The command-line tools' argument reader: options and their values in order, failing with the
/// tool's own `fail` (which prints usage and exits) on a missing or malformed value.
package struct ToolArguments {
    private var rest: ArraySlice<String>
    private let fail: (String) -> Never

    /// Reads `arguments` (without the program name); `fail` reports an error and exits.
    package init(_ arguments: ArraySlice<String>, fail: @escaping (String) -> Never) {
        rest = arguments
        self.fail = fail
    }

    /// The next argument, if any.
    package mutating func next() -> String? { rest.popFirst() }

    /// The next argument, left in place.
    package func peek() -> String? { rest.first }

    /// The value that follows `flag`.
    package mutating func value(_ flag: String) -> String {
        guard let v = rest.popFirst() else { fail("\(flag) needs a value") }
        return v
    }

    /// The integer value that follows `flag`, within `range`.
    package mutating func integer(_ flag: String, _ range: ClosedRange<Int>) -> Int {
        let v = value(flag)
        guard let n = Int(v), range.contains(n) else { fail("\(flag) \(v): expected an integer in \(range.lowerBound)...\(range.upperBound)") }
        return n
    }

    /// The file type named by the value that follows `flag` (afconvert's names: WAVE, caff, ...).
    package mutating func fileType(_ flag: String) -> AudioFileType {
        let v = value(flag)
        guard let t = AudioFileConversion.fileType(named: v) else { fail("unknown file format '\(v)' (WAVE, RF64, AIFF, AIFC, caff, m4af, flac, Ogg, adts, MPG3)") }
        return t
    }
}

/// The crash report: the message (prepared before any crash, as a C string) and the terminal
/// settings to restore, read by the signal handler only.
private enum CrashReport {
    nonisolated(unsafe) static var lines: [UnsafeMutablePointer<CChar>?] = []
    nonisolated(unsafe) static var numbers: [Int32] = []
    nonisolated(unsafe) static var terminal: UnsafeMutablePointer<termios>?
    nonisolated(unsafe) static var alternateStack: UnsafeMutableRawPointer?
    static let signals: [(Int32, String)] = [(SIGILL, "illegal instruction (a failed check or arithmetic overflow)"), (SIGSEGV, "segmentation fault"),
                                             (SIGBUS, "bus error"), (SIGFPE, "arithmetic exception"), (SIGABRT, "abort"), (SIGTRAP, "trap (a failed check)")]

    /// Async-signal-safe: write, tcsetattr, signal, raise.
    static func handle(_ sig: Int32) {
        if let t = terminal { _ = tcsetattr(0, TCSANOW, t) }
        for i in 0..<min(numbers.count, lines.count) where numbers[i] == sig {
            if let line = lines[i] { _ = write(2, line, strlen(line)) }
        }
        signal(sig, SIG_DFL)
        raise(sig)
    }
}

/// Makes a crash of `tool` print what happened before the process dies of the signal:
/// `TOOL: crashed: illegal instruction (signal 4) while playing ARGS; this is a bug ...` on
/// standard error, and the terminal restored when ``rememberTerminalForCrashes(_:)`` was told
/// its settings. For programs the Swift runtime's backtracer does not cover (afplay links the
/// runtime statically, where the backtracer is not found; afinfo and afconvert print its
/// report). Runs on an alternate stack, so a stack overflow is reported too.
package func installCrashReport(_ tool: String, context: String) {
    CrashReport.numbers = CrashReport.signals.map(\.0)
    CrashReport.lines = CrashReport.signals.map { sig, name in
        strdup("\n\(tool): crashed: \(name) (signal \(sig))\(context.isEmpty ? "" : " \(terminalSafe(context))"); this is a bug: please report it with the command line and the file or stream\n")
    }
    let size = 1 << 16
    CrashReport.alternateStack = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
    var stack = stack_t()
    stack.ss_sp = CrashReport.alternateStack
    stack.ss_size = size
    stack.ss_flags = 0
    _ = sigaltstack(&stack, nil)
    for (sig, _) in CrashReport.signals {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { s in CrashReport.handle(s) }
        action.sa_flags = Int32(SA_ONSTACK)
        sigemptyset(&action.sa_mask)
        _ = sigaction(sig, &action, nil)
    }
}

/// The terminal settings a crash report restores (afplay's status line turns echo off).
package func rememberTerminalForCrashes(_ settings: termios?) {
    guard let settings else { CrashReport.terminal = nil; return }
    let p = UnsafeMutablePointer<termios>.allocate(capacity: 1)
    p.initialize(to: settings)
    CrashReport.terminal = p
}
