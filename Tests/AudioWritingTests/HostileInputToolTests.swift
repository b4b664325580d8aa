import OATTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 16 §2-3: every tool on crafted files and hostile command-line values ends with a clean
/// exit code (never a signal), a message naming the problem, and bounded memory and time.
@Suite(.serialized) struct HostileInputToolTests {
    struct Outcome: CustomStringConvertible {
        var exitCode: Int32?
        var signal: Int32?
        var stderr: String
        var maxRSSKiB: Int
        var seconds: Double
        var timedOut: Bool
        var description: String {
            "exit \(exitCode.map(String.init) ?? "-") signal \(signal.map(String.init) ?? "-") \(maxRSSKiB) KiB \(seconds) s\(timedOut ? " TIMED OUT" : ""): \(stderr.prefix(300))"
        }
    }

    /// The built tools; `OAT_TOOLS_DIR` points the test at other builds (to check that it
    /// fails on an older one).
    static let toolsDirectory: String? = getenv("OAT_TOOLS_DIR").map { String(cString: $0) }
        ?? afconvertPath.map { String($0[..<$0.lastIndex(of: "/")!]) }

    /// Runs `tool` with `arguments`, stdout to /dev/null and stderr captured, killed after
    /// `timeout` seconds; memory is the child's own peak RSS (wait4).
    static func run(_ tool: String, _ arguments: [String], in dir: String, timeout: Double = 60) throws -> Outcome {
        let exe = try #require(toolsDirectory.map { $0 + "/" + tool }, "the tools are not built (swift build)")
        let errPath = dir + "/stderr-\(tool).txt"
        var pid: pid_t = 0
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let args = [exe] + arguments
        var argv: [UnsafeMutablePointer<CChar>?] = args.map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        // No backtracer: a crash must show as the signal, quickly.
        var inherited: [String] = []
        var e = environ
        while let p = e.pointee {
            let entry = String(cString: p)
            if !entry.hasPrefix("SWIFT_BACKTRACE=") { inherited.append(entry) }
            e += 1
        }
        var env: [UnsafeMutablePointer<CChar>?] = (inherited + ["SWIFT_BACKTRACE=enable=no"]).map { strdup($0) } + [nil]
        defer { for p in env { free(p) } }
        let spawned = posix_spawn(&pid, exe, &actions, nil, &argv, &env)
        try #require(spawned == 0, "cannot start \(exe): \(spawned)")
        var start = timespec()
        clock_gettime(CLOCK_MONOTONIC, &start)
        var status: Int32 = 0
        var usage = rusage()
        var timedOut = false
        var elapsed = 0.0
        while true {
            let r = wait4(pid, &status, WNOHANG, &usage)
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            elapsed = Double(now.tv_sec - start.tv_sec) + Double(now.tv_nsec - start.tv_nsec) / 1e9
            if r == pid { break }
            if elapsed > timeout && !timedOut {
                timedOut = true
                kill(pid, SIGKILL)
            }
            usleep(10_000)
        }
        let stderr = Corpus.read(errPath).map { String(decoding: $0, as: UTF8.self) } ?? ""
        let signalled = status & 0x7F != 0 && status & 0x7F != 0x7F
        return Outcome(exitCode: signalled ? nil : (status >> 8) & 0xFF, signal: signalled ? status & 0x7F : nil,
                       stderr: stderr, maxRSSKiB: usage.ru_maxrss, seconds: elapsed, timedOut: timedOut)
    }

    static func write(_ bytes: [UInt8], to path: String) throws {
        let f = try #require(fopen(path, "wb"))
        defer { fclose(f) }
        #expect(fwrite(bytes, 1, bytes.count, f) == bytes.count)
    }

    /// Every tool on every crafted file: a clean error naming the problem, under 512 MiB and 60 s.
    @Test(arguments: HostileFiles.all)
    func everyToolRefusesTheCraftedFileCleanly(_ c: HostileFiles.Case) throws {
        let scratch = Scratch("hostile")
        defer { scratch.cleanup() }
        let input = scratch.path(c.name)
        try Self.write(c.bytes, to: input)
        let runs: [(String, [String])] = [
            ("afinfo", [input]),
            ("afinfo", ["--decode", input]),
            ("afconvert", ["-f", "WAVE", "-d", "LEI16", input, scratch.path("out.wav")]),
            ("afplay", ["--output", "null", input]),
            ("afplay", ["--output", "wav:" + scratch.path("played.wav"), input]),
        ]
        for (tool, args) in runs {
            let o = try Self.run(tool, args, in: scratch.dir)
            let what = "\(tool) \(args.first == "--decode" || args.first == "--output" ? args[0] + " " : "")\(c.name)"
            #expect(o.signal == nil && !o.timedOut, "\(what): \(o)")
            #expect(o.maxRSSKiB < 512 << 10, "\(what): \(o)")
            if let message = c.message {
                #expect(o.exitCode == 1, "\(what): \(o)")
                #expect(o.stderr.contains(message), "\(what): \(o)")
            } else {
                #expect(o.exitCode == 0 || o.exitCode == 1, "\(what): \(o)")
            }
        }
    }

    /// 256 KiB of `FF FB 00 00`: afinfo --decode took 48-53 s (quadratic inside libmpg123) and
    /// afconvert made tens of MB from 128 KiB. Now: refused quickly, nothing written.
    @Test
    func bareMPEGHeadersCostLinearWorkAndProduceNoAudio() throws {
        let scratch = Scratch("mpeg-bare")
        defer { scratch.cleanup() }
        let input = scratch.path("bare.mp3")
        try Self.write(HostileFiles.mpegBareHeaders(bytes: 256 << 10), to: input)
        let decode = try Self.run("afinfo", ["--decode", input], in: scratch.dir, timeout: 120)
        #expect(decode.signal == nil && !decode.timedOut, "\(decode)")
        #expect(decode.exitCode == 1, "\(decode)")
        #expect(decode.stderr.contains("no MPEG audio or ADTS frame found"), "\(decode)")
        #expect(decode.seconds < 20, "\(decode)")
        let small = scratch.path("bare128k.mp3")
        try Self.write(HostileFiles.mpegBareHeaders(bytes: 128 << 10), to: small)
        let out = scratch.path("out.wav")
        let convert = try Self.run("afconvert", ["-f", "WAVE", "-d", "LEI16", small, out], in: scratch.dir, timeout: 120)
        #expect(convert.signal == nil && convert.exitCode == 1, "\(convert)")
        #expect(fileSize(out) <= 4096, "afconvert wrote \(fileSize(out)) bytes from 128 KiB of bare headers")
    }

    /// `afplay -t inf`, `-t 1e308`, `--start inf`, `--start 1e308` died with SIGILL
    /// (Double to Int64 of an infinite value). -t beyond the file plays it whole; a start past
    /// the end ends at once; values that are no seconds at all are refused with exit 2.
    @Test(arguments: [(["-t", "inf"], Int32(0), ""), (["-t", "1e308"], 0, ""), (["--start", "1e308"], 0, ""),
                      (["--start", "inf"], 2, "--start takes"), (["--start", "nan"], 2, "--start takes"),
                      (["-t", "nan"], 2, "-t takes"), (["-t", "-inf"], 2, "-t takes"), (["--start", "-1"], 2, "--start takes")])
    func afplayTimeValuesNeverTrap(_ options: [String], _ code: Int32, _ message: String) throws {
        let scratch = Scratch("afplay-t")
        defer { scratch.cleanup() }
        let input = scratch.path("tone.wav")
        try Self.write(HostileFiles.toneWAV(seconds: 0.5), to: input)
        let played = scratch.path("played.wav")
        let o = try Self.run("afplay", ["--output", "wav:" + played] + options + [input], in: scratch.dir)
        #expect(o.signal == nil && !o.timedOut, "afplay \(options): \(o)")
        #expect(o.exitCode == code, "afplay \(options): \(o)")
        if !message.isEmpty { #expect(o.stderr.contains(message), "afplay \(options): \(o)") }
        if options == ["-t", "inf"] || options == ["-t", "1e308"] {
            // The whole half second: 22050 frames of 16-bit stereo, 44 bytes of header or more.
            #expect(fileSize(played) >= 22050 * 4, "played \(fileSize(played)) bytes")
        }
    }
}
