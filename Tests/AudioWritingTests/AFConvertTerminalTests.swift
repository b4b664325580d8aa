import AudioTestSupport
import OpenAudioToolbox
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// afconvert's progress bar: drawn on stderr when it is a terminal (run under a pseudo-terminal
/// by `script`), never when stderr is a file or a pipe, nor with `--no-progress`.
@Suite(.enabled(if: afconvertPath != nil && shell("command -v script >/dev/null").status == 0, "needs the afconvert build and script(1)"))
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
