import OATTestSupport
import OpenAudioToolbox
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// afconvert's progress bar: drawn on stderr when it is a terminal (run under a pseudo-terminal
/// by `script`), never when stderr is a file or a pipe, nor with `--no-progress`.
@Suite(.requires(TestResource.first(afconvertMissing, shell("command -v script >/dev/null").status == 0 ? nil : "script(1) is not installed (bsdutils)")))
struct AFConvertTerminalTests {
    /// Runs `command` under a pseudo-terminal (`script -q -f -e -c`); returns its exit status
    /// and everything it wrote to the terminal.
    func underTerminal(_ command: String, log: String) -> (status: Int32, output: String) {
        let r = shell("script -qfec \"\(command)\" '\(log)' </dev/null >/dev/null 2>&1")
        let bytes = Corpus.read(log) ?? []
        return (r.status, String(decoding: bytes, as: UTF8.self))
    }

    /// The bar lines in `text`: `[###---] N%` after a carriage return.
    func barPercents(_ text: String) -> [Int] {
        text.split(separator: "\r").compactMap { part -> Int? in
            guard part.hasPrefix("["), let close = part.firstIndex(of: "]"),
                  part[part.index(after: part.startIndex)..<close].allSatisfy({ $0 == "#" || $0 == "-" }) else { return nil }
            let rest = part[part.index(after: close)...]
            guard let percent = rest.firstIndex(of: "%") else { return nil }
            return Int(rest[..<percent].filter(\.isNumber))
        }
    }

    @Test func progressBarOnlyOnATerminal() throws {
        let afconvert = try #require(afconvertPath)
        let s = Scratch("afconvert-tty")
        defer { s.cleanup() }
        let input = s.path("in.wav")
        try writeTestSignal(input, frames: 441_000, rate: 44100)

        let tty = underTerminal("\(afconvert) \(input) \(s.path("tty.m4a"))", log: s.path("tty.log"))
        #expect(tty.status == 0, "afconvert under a terminal: \(tty.output)")
        let percents = barPercents(tty.output)
        #expect(percents.count >= 3, "no progress bar on the terminal: \(tty.output.prefix(400))")
        #expect(percents == percents.sorted(), "progress went backwards: \(percents)")
        #expect(percents.last == 100, "the bar does not reach 100%: \(percents.suffix(3))")
        #expect(try AudioFile(path: s.path("tty.m4a")).validFrames == 441_000)

        let quiet = underTerminal("\(afconvert) --no-progress \(input) \(s.path("quiet.m4a"))", log: s.path("quiet.log"))
        #expect(quiet.status == 0)
        #expect(barPercents(quiet.output).isEmpty && !quiet.output.contains("%"), "--no-progress drew: \(quiet.output.prefix(400))")

        let piped = shell("\(afconvert) \(input) \(s.path("pipe.m4a")) 2>&1")
        #expect(piped.status == 0)
        #expect(piped.output.isEmpty, "afconvert wrote to a pipe: \(piped.output.prefix(400))")
        #expect(try AudioFile(path: s.path("pipe.m4a")).validFrames == 441_000)
    }
}

/// afconvert on bad input: the exit code (2 for usage errors, 1 for the rest), a first line
/// `afconvert: ...` naming what is wrong and which file, and no output left behind.
@Suite(.requires(afconvertMissing)) struct AFConvertErrorTests {
    @Test func badInputFailsClearly() throws {
        let afconvert = try #require(afconvertPath)
        let s = Scratch("afconvert-errors")
        defer { s.cleanup() }
        let input = s.path("in.wav")
        try writeTestSignal(input, frames: 4410, rate: 44100)
        let text = s.path("notes.txt")
        #expect(writeFile(text, Array(String(repeating: "not audio at all\n", count: 50).utf8)))
        let cases: [(args: [String], code: Int32, mentions: [String], output: String)] = [
            (["--bogus", input, s.path("a.wav")], 2, ["unknown option --bogus"], "a.wav"),
            (["-b", "5", input, s.path("b.m4a")], 2, ["-b 5"], "b.m4a"),
            (["-d", "XYZ", input, s.path("c.wav")], 2, ["'XYZ'"], "c.wav"),
            (["-f", "NOPE", input, s.path("d.wav")], 2, ["'NOPE'"], "d.wav"),
            ([input, s.path("e.wav"), s.path("extra.wav")], 2, ["too many"], "e.wav"),
            (["-d", "opus", input, s.path("f.aiff")], 1, ["f.aiff", "AIFF cannot hold 'opus'", "nothing was written"], "f.aiff"),
            (["-d", "aac", input, s.path("g.wav")], 1, ["g.wav", "WAVE cannot hold 'aac '"], "g.wav"),
            (["--decode", input, s.path("h.m4a")], 1, ["PCM"], "h.m4a"),
            ([input, "/nonexistent-dir/i.wav"], 1, ["cannot create /nonexistent-dir/i.wav"], "i.wav"),
            ([s.path("missing.wav"), s.path("j.wav")], 1, ["missing.wav"], "j.wav"),
            ([text, s.path("k.wav")], 1, ["notes.txt"], "k.wav"),
            ([input, s.path("l.unknownext")], 1, ["l.unknownext", "give -f"], "l.unknownext"),
        ]
        for c in cases {
            let command = ([afconvert, "--no-progress"] + c.args).map { "'\($0)'" }.joined(separator: " ")
            let r = shell(command + " 2>&1")
            let first = r.output.split(separator: "\n").first.map(String.init) ?? ""
            #expect(r.status == c.code, "afconvert \(c.args): exit \(r.status), expected \(c.code): \(r.output)")
            #expect(first.hasPrefix("afconvert: ") && c.mentions.allSatisfy { first.contains($0) },
                    "afconvert \(c.args): first line \"\(first)\" does not name \(c.mentions)")
            #expect(access(s.path(c.output), F_OK) != 0, "afconvert \(c.args) left \(c.output) behind")
        }
    }
}
