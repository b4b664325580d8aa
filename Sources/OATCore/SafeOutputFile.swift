#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// An output file a tool writes for the user, written so that no existing file is lost
/// (docs/reliability.md, "What the tools guarantee about your files").
///
/// Every tool that writes a path the user named (afconvert, afrecord, `afplay --output wav:`,
/// `afplay --record`) opens it through this type:
///
/// - The output is refused, before anything is opened for writing, when it is one of the
///   inputs (the same file: same device and inode, so also through a symbolic or hard link).
/// - A regular file (existing, or through a symbolic link to one) is never truncated: the
///   bytes go to a temporary file beside it (`.NAME.XXXXXX.partial`, same directory, so the
///   final step is a `rename`), and ``commit()`` renames it over the path; ``discard()``
///   removes the temporary and leaves the path as it was.
/// - ``Mode/recording`` writes a path that does not exist yet directly (created with `O_EXCL`,
///   so it is certainly this run's), so a recorder killed with SIGKILL leaves its crash-safe
///   file at the path; ``discard()`` removes it (this run created it).
/// - A seekable character device (`/dev/null`, `/dev/full`) is written in place, never
///   truncated or removed. FIFOs, sockets, terminals and other files that cannot seek, block
///   devices and directories are refused: audio files are written with seeks.
///
/// Temporaries of ``Mode/replaceOnSuccess`` outputs are registered with
/// ``removeUnfinishedOutputsOnSignals(_:)``'s handler, so a converter interrupted by a signal
/// leaves no half file. Not thread-safe; use from one thread.
public final class SafeOutputFile: @unchecked Sendable {
    /// How the output reaches its path.
    public enum Mode: Sendable {
        /// A converter's output: always through a temporary, renamed into place by ``commit()``.
        case replaceOnSuccess
        /// A recording: a new path is written in place (readable after a crash); an existing
        /// file is replaced only by ``commit()``.
        case recording
    }

    /// Where the bytes go while writing.
    public enum Kind: Sendable, Equatable {
        /// A temporary file beside the target, renamed over it by ``commit()``.
        case temporary
        /// The target itself, created by this run (it did not exist).
        case created
        /// An existing seekable device, written in place.
        case device
    }

    /// The path the user named.
    public let path: String
    /// The file that ``commit()`` puts the output at: ``path``, or the regular file a symbolic
    /// link at ``path`` points to.
    public let target: String
    /// The file being written now: the temporary, or ``target`` itself.
    public let writingPath: String
    /// How the output is written.
    public let kind: Kind
    /// True when a file existed at the path before (a regular file, or a device): it is left
    /// as it was unless ``commit()`` replaces it.
    public let existed: Bool
    /// The open descriptor (write-only); -1 after ``commit()``, ``discard()`` or
    /// ``closeDescriptor()``.
    public private(set) var descriptor: Int32
    /// How the output was opened.
    public let mode: Mode
    private var finished = false
    private var registration: Int?

    /// Opens `path` for writing as described above. `inputs` are the files this run reads
    /// (paths; `-` is standard input): an output that is one of them is refused.
    public init(path: String, mode: Mode, inputs: [String] = []) throws(AudioError) {
        self.path = path
        self.mode = mode
        try Self.refuseInputs(output: path, inputs: inputs)
        var lst = stat()
        let exists = lstat(path, &lst) == 0
        if !exists && errno != ENOENT {
            throw Self.error("cannot create \(path)", errno: errno)
        }
        existed = exists
        var resolved = path
        var st = lst
        if exists && (lst.st_mode & S_IFMT) == S_IFLNK {
            guard stat(path, &st) == 0 else {
                throw Self.error("cannot create \(path): it is a symbolic link to a file that cannot be reached", errno: errno)
            }
            if (st.st_mode & S_IFMT) == S_IFREG {
                guard let real = realpath(path, nil) else { throw Self.error("cannot resolve the symbolic link \(path)", errno: errno) }
                resolved = String(cString: real)
                free(real)
            }
        }
        target = resolved
        if exists {
            switch st.st_mode & S_IFMT {
            case S_IFREG:
                kind = .temporary
            case S_IFCHR:
                // A device such as /dev/null: written in place, never truncated or removed.
                let fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY)
                guard fd >= 0 else { throw Self.error("cannot open \(path)", errno: errno) }
                if isatty(fd) != 0 || lseek(fd, 0, SEEK_CUR) < 0 {
                    close(fd)
                    throw AudioError(.invalidArgument, component: "output", "\(path) is \(Self.describe(st)) that cannot seek; audio files are written with seeks, so write to a regular file (nothing was written)")
                }
                kind = .device
                writingPath = path
                descriptor = fd
                return
            default:
                throw AudioError(.invalidArgument, component: "output", "\(path) is \(Self.describe(st)), not a regular file: it is left alone and nothing was written")
            }
        } else {
            kind = mode == .recording ? .created : .temporary
        }
        if kind == .created {
            let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o666)
            guard fd >= 0 else { throw Self.error("cannot create \(path)", errno: errno) }
            writingPath = path
            descriptor = fd
            registration = nil
            return
        }
        // A temporary beside the target: same directory, so commit() is a rename.
        let slash = resolved.lastIndex(of: "/")
        let directory = slash.map { String(resolved[...$0]) } ?? ""
        var base = slash.map { String(resolved[resolved.index(after: $0)...]) } ?? resolved
        if base.utf8.count > 200 { base = String(decoding: base.utf8.prefix(200), as: UTF8.self) }
        let letters = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        var fd: Int32 = -1
        var temporary = ""
        for _ in 0..<100 {
            let tag = String((0..<6).map { _ in letters[Int.random(in: 0..<letters.count)] })
            temporary = "\(directory).\(base).\(tag).partial"
            fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o666)
            if fd >= 0 || errno != EEXIST { break }
        }
        guard fd >= 0 else {
            throw Self.error("cannot create \(path) (a temporary file in \(directory.isEmpty ? "." : directory) could not be made)", errno: errno)
        }
        if exists {
            // The replacement keeps the replaced file's permissions (and owner, where allowed).
            _ = fchmod(fd, st.st_mode & 0o7777)
            _ = fchown(fd, st.st_uid, st.st_gid)
        }
        writingPath = temporary
        descriptor = fd
        if mode == .replaceOnSuccess { registration = SignalCleanup.register(temporary) }
    }

    /// A converter's output dropped unfinished is discarded; a recording's is kept where it is.
    deinit {
        if !finished {
            if mode == .replaceOnSuccess { discard() } else { _ = keepUnfinished() }
        }
    }

    /// Closes the descriptor without finishing (the writer is done with it); ``commit()`` or
    /// ``discard()`` still decide what becomes of the file.
    public func closeDescriptor() {
        if descriptor >= 0 { _ = close(descriptor) }
        descriptor = -1
    }

    /// Puts the finished output at its path: renames the temporary over the target (after
    /// flushing it to disk). A created file or a device is already in place. When the rename
    /// fails the output stays unfinished (``discard()`` or ``keepUnfinished()`` decide).
    public func commit() throws(AudioError) {
        guard !finished else { return }
        if kind == .temporary, descriptor >= 0 { _ = fsync(descriptor) }
        closeDescriptor()
        if kind == .temporary {
            guard rename(writingPath, target) == 0 else {
                throw Self.error("cannot put the finished output at \(target) (\(path) was left as it was)", errno: errno)
            }
        }
        finished = true
        unregister()
    }

    /// Gives up the output: removes the temporary, or the file this run created; a device and
    /// any file that existed before are left as they were.
    public func discard() {
        guard !finished else { return }
        finished = true
        closeDescriptor()
        if kind == .temporary || kind == .created { unlink(writingPath) }
        unregister()
    }

    /// For a recording that could not be finished: keeps what was written where it is (the
    /// temporary, or the created file) and returns that path.
    public func keepUnfinished() -> String {
        finished = true
        closeDescriptor()
        unregister()
        return writingPath
    }

    private func unregister() {
        if let r = registration { SignalCleanup.unregister(r) }
        registration = nil
    }

    /// Throws when `output` is one of `inputs` (the same file, also through links), naming
    /// both. An output that does not exist yet is no input. `-` is standard input.
    public static func refuseInputs(output: String, inputs: [String]) throws(AudioError) {
        var out = stat()
        guard stat(output, &out) == 0 else { return }
        for input in inputs {
            var st = stat()
            let ok = input == "-" ? fstat(0, &st) == 0 : stat(input, &st) == 0
            guard ok, st.st_dev == out.st_dev, st.st_ino == out.st_ino else { continue }
            let how = input == output ? "" : input == "-" ? " (standard input is read from it)" : " (the same file under another name or through a link)"
            throw AudioError(.invalidArgument, component: "output",
                             "the output \(output) is the input \(input)\(how): writing it would destroy the input; choose another output (nothing was written)")
        }
    }

    private static func describe(_ st: stat) -> String {
        switch st.st_mode & S_IFMT {
        case S_IFDIR: "a directory"
        case S_IFIFO: "a FIFO (named pipe)"
        case S_IFSOCK: "a socket"
        case S_IFBLK: "a block device"
        case S_IFCHR: "a character device"
        default: "not a regular file"
        }
    }

    private static func error(_ message: String, errno e: Int32) -> AudioError {
        AudioError(.io, component: "output", message, underlying: String(cString: strerror(e)), osStatus: -54)
    }

    /// Installs handlers for `signals` (default SIGINT, SIGTERM, SIGHUP) that remove every
    /// unfinished ``Mode/replaceOnSuccess`` temporary, write `message` to standard error and
    /// then end the process by the same signal (exit status 128 + N). For converters: an
    /// interrupted conversion leaves no half file and the original output untouched.
    public static func removeUnfinishedOutputsOnSignals(_ signals: [Int32] = [SIGINT, SIGTERM, SIGHUP], message: String) {
        SignalCleanup.setMessage(message)
        for s in signals { installSignalHandler(s) { sig in SignalCleanup.handle(sig) } }
    }

    /// Installs `handler` for `sig` unless the signal is ignored (a background job's SIGINT,
    /// `nohup`'s SIGHUP stay ignored, as the user asked). Returns true when installed.
    @discardableResult
    public static func installSignalHandler(_ sig: Int32, _ handler: @convention(c) (Int32) -> Void) -> Bool {
        var old = sigaction()
        guard sigaction(sig, nil, &old) == 0 else { return false }
        if unsafeBitCast(old.__sigaction_handler.sa_handler, to: Int.self) == unsafeBitCast(SIG_IGN, to: Int.self) { return false }
        signal(sig, handler)
        return true
    }
}

/// The temporaries a signal handler removes: C strings in fixed slots, written by the tool's
/// thread under a lock, read by the handler without one (a slot is cleared before its string
/// would go; strings are never freed, so the handler never reads freed memory).
enum SignalCleanup {
    static let capacity = 16
    nonisolated(unsafe) static let slots: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?> = {
        let p = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>.allocate(capacity: capacity)
        p.initialize(repeating: nil, count: capacity)
        return p
    }()
    nonisolated(unsafe) static var message: UnsafeMutablePointer<CChar>?
    nonisolated(unsafe) static var messageLength = 0
    static let lock = Locked<Void>(())

    static func register(_ path: String) -> Int? {
        let copy = strdup(path)
        return lock.withLock { _ in
            for i in 0..<capacity where slots[i] == nil {
                slots[i] = copy
                return i
            }
            return nil
        }
    }

    static func unregister(_ slot: Int) {
        lock.withLock { _ in slots[slot] = nil }
    }

    static func setMessage(_ text: String) {
        _ = slots // initialised before any handler can run
        let line = text.hasSuffix("\n") ? text : text + "\n"
        message = strdup(line)
        messageLength = line.utf8.count
    }

    /// The handler: async-signal-safe calls only (unlink, write, signal, raise).
    static func handle(_ sig: Int32) {
        for i in 0..<capacity {
            if let p = slots[i] { unlink(p) }
        }
        if let m = message { _ = write(2, m, messageLength) }
        signal(sig, SIG_DFL)
        raise(sig)
    }
}
