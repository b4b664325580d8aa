import AudioFiles
#if canImport(Glibc)
import Glibc
#endif

/// Writes `text` as one line to standard error (the command-line tools' error reporting).
package func writeStandardError(_ text: String) {
    let line = text.hasSuffix("\n") ? text : text + "\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
}

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
