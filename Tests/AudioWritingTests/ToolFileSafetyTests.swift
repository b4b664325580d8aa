import OATTestSupport
import OpenAudioToolbox
import Testing
#if canImport(Glibc)
import Glibc
#endif

// Issue 16, section 1 (data loss) and the tool items of section 4, through the real tool
// binaries: what the tools guarantee about the user's files (docs/reliability.md).

/// A tool built next to the test bundle (afconvert, afinfo, afplay, afrecord), or nil.
func builtTool(_ name: String) -> String? {
    guard let afconvert = afconvertPath, let slash = afconvert.lastIndex(of: "/") else { return nil }
    let path = String(afconvert[..<slash]) + "/" + name
    return access(path, X_OK) == 0 ? path : nil
}

/// The bytes of a file (nil when it cannot be read).
func bytes(_ path: String) -> [UInt8]? { Corpus.read(path) }

/// The file type bits of `path` without following a link (0 when missing).
func fileKind(_ path: String) -> mode_t {
    var st = stat()
    return lstat(path, &st) == 0 ? st.st_mode & S_IFMT : 0
}

/// Names in `dir` that look like unfinished temporaries (`.NAME.XXXXXX.partial`).
func temporaries(in dir: String) -> [String] {
    guard let d = opendir(dir) else { return [] }
    defer { closedir(d) }
    var names: [String] = []
    while let entry = readdir(d) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in String(cString: raw.bindMemory(to: CChar.self).baseAddress!) }
        if name.hasSuffix(".partial") { names.append(name) }
    }
    return names
}

/// Quotes arguments for `sh -c`.
func quoted(_ args: [String]) -> String { args.map { "'\($0)'" }.joined(separator: " ") }

/// The device number of /dev/full (major 1, minor 7).
let devFull = dev_t(1 << 8 | 7)

/// True when this process may create device nodes (root in CI).
let canMakeDeviceNodes: Bool = {
    let path = "/tmp/oat-mknod-probe-\(getpid())"
    defer { unlink(path) }
    return mknod(path, S_IFCHR | 0o600, devFull) == 0
}()

@Suite(.requires(afconvertPath == nil ? "needs the tools built (swift build)" : nil))
struct ToolFileSafetyTests {
    // MARK: input == output

    /// `afconvert a.X a.X` (and through a symbolic or a hard link) is refused before anything
    /// is opened for writing: exit 1, one line naming both paths, the input byte for byte as
    /// it was, no temporary left. Before: the input was truncated, then unlinked as the
    /// "partial output" (80 bytes left through a link).
    @Test(arguments: ["wav", "mp3", "flac"])
    func afconvertRefusesToOverwriteItsInput(_ ext: String) throws {
        let afconvert = try #require(afconvertPath)
        let s = Scratch("in-is-out")
        defer { s.cleanup() }
        let wav = s.path("source.wav")
        try writeTestSignal(wav, frames: 22050)
        let input = s.path("a.\(ext)")
        if ext == "wav" {
            try #require(shell("cp '\(wav)' '\(input)'").status == 0)
        } else {
            try #require(shell(quoted([afconvert, "--no-progress", wav, input])).status == 0, "cannot make the \(ext) input")
        }
        let original = try #require(bytes(input))
        try #require(symlink(input, s.path("link.\(ext)")) == 0)
        try #require(link(input, s.path("hard.\(ext)")) == 0)
        for output in [input, s.path("link.\(ext)"), s.path("hard.\(ext)")] {
            let r = shell(quoted([afconvert, "--no-progress", input, output]) + " 2>&1")
            #expect(r.status == 1, "afconvert \(input) \(output): exit \(r.status): \(r.output)")
            #expect(r.output.contains(input) && r.output.contains(output) && r.output.contains("is the input"), "\(r.output)")
            #expect(bytes(input) == original, "afconvert \(input) \(output) changed the input (\(fileSize(input)) bytes now)")
        }
        #expect(fileKind(s.path("link.\(ext)")) == S_IFLNK)
        #expect(temporaries(in: s.dir).isEmpty)
    }

    /// `afplay --output wav:x.wav x.wav` and `afplay --record x.wav x.wav` are refused before
    /// anything is opened. Before: x.wav was truncated to 58 bytes, then failed to play.
    @Test func afplayRefusesToOverwriteWhatItPlays() throws {
        let afplay = try #require(builtTool("afplay"))
        let s = Scratch("afplay-in-is-out")
        defer { s.cleanup() }
        let input = s.path("x.wav")
        try writeTestSignal(input, frames: 22050)
        let original = try #require(bytes(input))
        try #require(symlink(input, s.path("link.wav")) == 0)
        for args in [["--output", "wav:\(input)", input], ["--output", "wav:\(s.path("link.wav"))", input],
                     ["--output", "null", "--record", input, input]] {
            let r = shell(quoted([afplay, "--no-ui"] + args) + " 2>&1")
            #expect(r.status == 1, "afplay \(args): exit \(r.status): \(r.output)")
            #expect(r.output.contains("is the input"), "afplay \(args): \(r.output)")
            #expect(bytes(input) == original, "afplay \(args) changed its input (\(fileSize(input)) bytes now)")
        }
    }

    // MARK: outputs that are not regular files

    /// An output that is a character device (a node for /dev/full made with mknod), a FIFO or a
    /// symbolic link to /proc/self/fd/1 (a pipe) fails with exit 1 and is never removed.
    /// Before: each was unlinked as the "partial output" (as root, device nodes were deleted).
    @Test func afconvertNeverRemovesAnOutputThatIsNotARegularFile() throws {
        let afconvert = try #require(afconvertPath)
        let s = Scratch("special-out")
        defer { s.cleanup() }
        let input = s.path("in.wav")
        try writeTestSignal(input, frames: 22050)
        // A FIFO with a reader (so a writer that opens it does not block).
        let fifo = s.path("fifo.wav")
        try #require(mkfifo(fifo, 0o644) == 0)
        let reader = open(fifo, O_RDONLY | O_NONBLOCK)
        defer { close(reader) }
        let r1 = shell("timeout 30 " + quoted([afconvert, "--no-progress", input, fifo]) + " 2>&1")
        #expect(r1.status == 1, "FIFO: exit \(r1.status): \(r1.output)")
        #expect(fileKind(fifo) == S_IFIFO, "the FIFO output was removed: \(r1.output)")
        // A symbolic link to standard output, which is a pipe.
        let toStdout = s.path("stdout.wav")
        try #require(symlink("/proc/self/fd/1", toStdout) == 0)
        let r2 = shell("timeout 30 " + quoted([afconvert, "--no-progress", input, toStdout]) + " 2>&1 | cat")
        #expect(r2.output.contains("afconvert: "), "link to stdout: \(r2.output)")
        #expect(fileKind(toStdout) == S_IFLNK, "the link to /proc/self/fd/1 was removed: \(r2.output)")
        // /dev/null is a device that seeks: written in place, exit 0, left alone.
        let r3 = shell(quoted([afconvert, "--no-progress", "-f", "WAVE", input, "/dev/null"]) + " 2>&1")
        #expect(r3.status == 0, "/dev/null: \(r3.output)")
        #expect(fileKind("/dev/null") == S_IFCHR)
        #expect(temporaries(in: s.dir).isEmpty)
    }

    @Test(.requires(canMakeDeviceNodes ? nil : "needs permission to make device nodes (root)"))
    func afconvertNeverRemovesADeviceNode() throws {
        let afconvert = try #require(afconvertPath)
        let s = Scratch("device-out")
        defer { s.cleanup() }
        let input = s.path("in.wav")
        try writeTestSignal(input, frames: 22050)
        let full = s.path("full")
        try #require(mknod(full, S_IFCHR | 0o644, devFull) == 0)
        let r = shell(quoted([afconvert, "--no-progress", "-f", "WAVE", input, full]) + " 2>&1")
        #expect(r.status == 1, "exit \(r.status): \(r.output)")
        #expect(r.output.contains("No space left on device") && r.output.contains(full), "\(r.output)")
        #expect(fileKind(full) == S_IFCHR, "the device node was removed: \(r.output)")
        #expect(temporaries(in: s.dir).isEmpty)
    }

    // MARK: signals

    /// SIGINT, SIGTERM or SIGHUP during a conversion (AAC in M4A, ALAC in CAF, PCM WAVE) ends
    /// afconvert by that signal with one line on stderr, leaving no file at the output path and
    /// no temporary; an output that existed before is byte for byte as it was. Before: an M4A
    /// without `moov`, an unreadable ALAC CAF, a WAVE half written over the old file.
    @Test(arguments: [("m4af", "aac", "m4a"), ("caff", "alac", "caf"), ("WAVE", "LEI24", "wav")], [SIGINT, SIGTERM, SIGHUP])
    func aSignalLeavesNoHalfFile(_ format: (type: String, data: String, ext: String), _ sig: Int32) throws {
        let afconvert = try #require(afconvertPath)
        let s = Scratch("signal")
        defer { s.cleanup() }
        let input = s.path("long.wav")
        try writeTestSignal(input, frames: 48000 * 60, rate: 48000)
        for existing in [false, true] {
            let output = s.path("out-\(existing).\(format.ext)")
            let old = Array("an older file the user keeps\n".utf8)
            if existing { try #require(writeFile(output, old)) }
            let p = try ToolProcess(afconvert, ["--no-progress", "-f", format.type, "-d", format.data, input, output],
                                    outputPath: s.path("log-\(existing)"))
            // Signal once some audio is on disk (in the temporary; before the fix, in the output).
            var waited = 0
            while waited < 4000 {
                let sizes = temporaries(in: s.dir).map { fileSize(s.path($0)) } + [existing ? 0 : fileSize(output)]
                if sizes.contains(where: { $0 > 100_000 }) { break }
                usleep(5_000)
                waited += 1
            }
            kill(p.pid, sig)
            let code = p.wait(timeout: 30)
            #expect(code == 128 + sig, "\(format.type) \(format.data), signal \(sig): exit \(String(describing: code)): \(p.output)")
            if existing {
                #expect(bytes(output) == old, "signal \(sig): the existing \(output) was changed (\(fileSize(output)) bytes)")
            } else {
                #expect(fileKind(output) == 0, "signal \(sig): a half \(format.ext) (\(fileSize(output)) bytes) was left at \(output)")
            }
            #expect(temporaries(in: s.dir).isEmpty, "signal \(sig): temporaries left: \(temporaries(in: s.dir))")
            #expect(p.output.contains("interrupted"), "\(p.output)")
        }
    }

    /// afrecord with no input device (an ALSA PCM that does not exist; a PulseAudio server
    /// that does not answer) exits 1 and leaves an existing take untouched. Before: the writer
    /// was created before the device opened and the take was deleted.
    @Test func afrecordWithoutAnInputDeviceLeavesTheExistingTake() throws {
        let afrecord = try #require(builtTool("afrecord"))
        let s = Scratch("afrecord-nodevice")
        defer { s.cleanup() }
        for (i, (args, env)) in [(["--input", "alsa:oat_no_such_pcm"], [String: String]()),
                                 (["--input", "pulse"], ["PULSE_SERVER": "unix:/nonexistent/oat-no-server"])].enumerated() {
            for ext in ["caf", "wav", "m4a"] {
                let take = s.path("take\(i).\(ext)")
                try writeTestSignal(s.path("src.wav"), frames: 4410)
                try #require(shell(quoted([afconvert(), "--no-progress", s.path("src.wav"), take])).status == 0)
                let original = try #require(bytes(take))
                let p = try ToolProcess(afrecord, ["-t", "1", "--no-meter"] + args + [take], environment: env, outputPath: s.path("log\(i)\(ext)"))
                let code = p.wait(timeout: 20)
                if code == nil { p.stop() }
                #expect(code == 1, "afrecord \(args) \(take): exit \(String(describing: code)): \(p.output)")
                #expect(p.output.contains("left as it was"), "\(p.output)")
                #expect(bytes(take) == original, "afrecord \(args) changed the existing \(take) (\(fileSize(take)) bytes now)")
                // A new path: not created at all.
                let fresh = s.path("fresh\(i).\(ext)")
                let q = try ToolProcess(afrecord, ["-t", "1", "--no-meter"] + args + [fresh], environment: env, outputPath: s.path("logf\(i)\(ext)"))
                let c2 = q.wait(timeout: 20)
                if c2 == nil { q.stop() }
                #expect(c2 == 1 && fileKind(fresh) == 0 && q.output.contains("was not created"), "\(q.output)")
            }
        }
        #expect(temporaries(in: s.dir).isEmpty)
    }

    func afconvert() -> String { afconvertPath ?? "afconvert" }

    /// `afplay --output wav:PATH` over an existing file replaces it only when playback ends
    /// (here by SIGHUP, which finishes the recording like SIGINT/SIGTERM): what was played is
    /// kept and readable, and nothing is left beside it. The input is a FIFO that stays open
    /// after 2 s of audio, so afplay is still playing when the signal comes. Before: SIGHUP
    /// killed afplay, and the old file was truncated when playback started.
    @Test func afplayWAVOutputIsFinishedOnSIGHUPAndReplacesTheOldFile() throws {
        let afplay = try #require(builtTool("afplay"))
        let s = Scratch("afplay-wav-hup")
        defer { s.cleanup() }
        let input = s.path("in.wav")
        try writeTestSignal(input, frames: 44100 * 2)
        let fifo = s.path("pipe")
        try #require(mkfifo(fifo, 0o644) == 0)
        // Writes the file into the FIFO, then keeps it open (exec: the PID is the sleeper's).
        let feeder = try ToolProcess("/bin/sh", ["-c", "exec 3>\"$0\"; cat \"$1\" >&3; exec sleep 60", fifo, input], outputPath: s.path("feed.log"))
        defer { feeder.stop(grace: 0.2) }
        let out = s.path("played.wav")
        try #require(writeFile(out, Array("old".utf8)))
        let p = try ToolProcess(afplay, ["--no-ui", "--output", "wav:\(out)", fifo], outputPath: s.path("log"))
        var waited = 0
        while waited < 400, !temporaries(in: s.dir).contains(where: { fileSize(s.path($0)) > 44100 * 8 }) {
            usleep(25_000)
            waited += 1
        }
        #expect(p.wait(timeout: 0.5) == nil, "afplay ended before the signal: \(p.output)")
        // Until the end, the old file is still there.
        #expect(bytes(out) == Array("old".utf8))
        kill(p.pid, SIGHUP)
        let code = p.wait(timeout: 20)
        if code == nil { p.stop() }
        #expect(code == 0, "exit \(String(describing: code)): \(p.output)")
        let frames = (try? AudioFile(path: out))?.validFrames ?? 0
        #expect(frames >= 44100, "only \(frames) frames kept")
        #expect(temporaries(in: s.dir).isEmpty, "\(temporaries(in: s.dir))")
    }

    // MARK: section 4: afinfo and standard output

    /// Tags with terminal control sequences (clear screen, set title, BEL, a right-to-left
    /// override) print as visible escapes in afinfo's text output; `--json` escapes them too.
    /// Before: printed raw.
    @Test func afinfoEscapesControlCharactersInTags() throws {
        let afinfo = try #require(builtTool("afinfo"))
        let s = Scratch("afinfo-escapes")
        defer { s.cleanup() }
        let input = s.path("in.wav")
        try writeTestSignal(input, frames: 44100)
        let hostile = "Evil\u{1B}[2J\u{1B}]0;pwned\u{07}\u{202E}Title\nFake: line\rover"
        for ext in ["m4a", "flac"] {
            let output = s.path("tagged.\(ext)")
            var settings = AudioFileConversionSettings()
            settings.writerOptions.tags = [InfoKey.title: hostile, InfoKey.artist: "Plain Artist"]
            try AudioFileConversion.convert(input: input, output: output, settings: settings)
            let r = shell(quoted([afinfo, output]))
            #expect(r.status == 0)
            let raw = Array(r.output.utf8)
            #expect(!raw.contains(0x1B) && !raw.contains(0x07) && !raw.contains(0x0D), "afinfo printed control characters: \(r.output.debugDescription)")
            #expect(!r.output.unicodeScalars.contains("\u{202E}"))
            #expect(r.output.contains("Evil\\x1B[2J\\x1B]0;pwned\\x07\\u{202E}Title\\nFake: line\\rover"), "\(r.output.debugDescription)")
            #expect(!r.output.split(separator: "\n").contains { $0.hasPrefix("Fake:") }, "a tag forged a line")
            #expect(r.output.contains("Plain Artist"))
        }
    }

    /// Output that cannot be written (standard output on /dev/full) is an error: exit 1 and a
    /// message, for every tool. Before: `afinfo --json f > /dev/full` exited 0.
    @Test func aFailedWriteToStandardOutputIsAnError() throws {
        let s = Scratch("dev-full")
        defer { s.cleanup() }
        let input = s.path("in.wav")
        try writeTestSignal(input, frames: 4410)
        let afinfo = try #require(builtTool("afinfo")), afplay = try #require(builtTool("afplay"))
        let afrecord = try #require(builtTool("afrecord")), afconvert = try #require(afconvertPath)
        let runs: [[String]] = [
            [afinfo, "--json", input], [afinfo, input], [afinfo, "--help"],
            [afconvert, "--no-progress", "-v", input, s.path("out.caf")],
            [afplay, "--json-events", "--output", "null:fast", input],
            [afrecord, "--help"],
        ]
        for args in runs {
            let r = shell(quoted(args) + " 2>&1 >/dev/full")
            #expect(r.status == 1, "\(args.dropFirst()) > /dev/full: exit \(r.status): \(r.output)")
            #expect(r.output.contains("cannot write to standard output"), "\(args.dropFirst()): \(r.output)")
        }
        // The same runs to a working stdout succeed.
        #expect(shell(quoted([afinfo, "--json", input]) + " >/dev/null 2>&1").status == 0)
    }

    /// `--hint` with a type afinfo does not know is an error (exit 2) naming it and the known
    /// ones; known types, by four-character code or afconvert's name, are taken. Before:
    /// silently ignored.
    @Test func afinfoRejectsAnUnknownHint() throws {
        let afinfo = try #require(builtTool("afinfo"))
        let s = Scratch("hint")
        defer { s.cleanup() }
        let input = s.path("in.wav")
        try writeTestSignal(input, frames: 4410)
        let bad = shell(quoted([afinfo, "--hint", "XXXX", input]) + " 2>&1")
        #expect(bad.status == 2, "exit \(bad.status): \(bad.output)")
        #expect(bad.output.contains("--hint XXXX") && bad.output.contains("unknown") && bad.output.contains("MPG3"), "\(bad.output)")
        for hint in ["MPG3", "adts", "WAVE", "mp3", "caff"] {
            let ok = shell(quoted([afinfo, "--hint", hint, input]) + " 2>&1")
            #expect(ok.status == 0, "--hint \(hint): \(ok.output)")
        }
    }

    /// A named pipe as input is read as a stream by afinfo, afconvert and afplay (and `-`, a
    /// pipe on standard input, by afinfo and afconvert). Before: "Illegal seek".
    @Test func namedPipesAreReadAsStreams() throws {
        let s = Scratch("fifo-in")
        defer { s.cleanup() }
        let input = s.path("in.wav")
        try writeTestSignal(input, frames: 44100)
        let afinfo = try #require(builtTool("afinfo")), afplay = try #require(builtTool("afplay"))
        let afconvert = try #require(afconvertPath)
        let fifo = s.path("pipe")
        try #require(mkfifo(fifo, 0o644) == 0)
        /// Feeds `input` into the FIFO from a child process (stopped by PID).
        func feed() throws -> ToolProcess {
            try ToolProcess("/bin/sh", ["-c", "cat '\(input)' > '\(fifo)'"], outputPath: s.path("feed.log"))
        }
        var writer = try feed()
        let info = shell("timeout 30 " + quoted([afinfo, "--json", fifo]) + " 2>&1")
        writer.stop()
        #expect(info.status == 0 && info.output.contains("\"valid_frames\": 44100"), "afinfo FIFO: \(info.output)")
        writer = try feed()
        let out = s.path("out.caf")
        let conv = shell("timeout 30 " + quoted([afconvert, "--no-progress", fifo, out]) + " 2>&1")
        writer.stop()
        #expect(conv.status == 0, "afconvert FIFO: \(conv.output)")
        #expect((try? AudioFile(path: out))?.validFrames == 44100)
        writer = try feed()
        let played = s.path("played.wav")
        let play = shell("timeout 30 " + quoted([afplay, "--no-ui", "--output", "wav:\(played)", fifo]) + " 2>&1")
        writer.stop()
        #expect(play.status == 0, "afplay FIFO: \(play.output)")
        let playedFrames = (try? AudioFile(path: played))?.validFrames ?? 0
        #expect(playedFrames >= 40_000, "afplay played \(playedFrames) of 44100 frames from the FIFO")
        let stdinInfo = shell("cat '\(input)' | " + quoted([afinfo, "--json", "-"]) + " 2>&1")
        #expect(stdinInfo.status == 0 && stdinInfo.output.contains("\"valid_frames\": 44100"), "afinfo -: \(stdinInfo.output)")
    }

    /// A crash of afplay prints what happened (here a SIGILL, what a failed check raises) and
    /// the process still dies of the signal. Before: silent (afplay links the Swift runtime
    /// statically, where the runtime's backtracer that afinfo and afconvert print is not found).
    @Test func anAfplayCrashSaysWhatHappened() throws {
        let afplay = try #require(builtTool("afplay"))
        let s = Scratch("afplay-crash")
        defer { s.cleanup() }
        let input = s.path("in.wav")
        try writeTestSignal(input, frames: 44100 * 20)
        let p = try ToolProcess(afplay, ["--no-ui", "--output", "null", input], outputPath: s.path("log"))
        usleep(1_500_000)
        kill(p.pid, SIGILL)
        let code = p.wait(timeout: 20)
        #expect(code == 128 + SIGILL, "exit \(String(describing: code))")
        #expect(p.output.contains("afplay: crashed") && p.output.contains("signal 4") && p.output.contains("in.wav"), "\(p.output)")
    }
}
