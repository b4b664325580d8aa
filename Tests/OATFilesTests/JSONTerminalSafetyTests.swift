import OATFiles
import Testing

/// Issue 27 §2: `afinfo --json` passed U+202E and raw C1 controls from tags through; JSON allowed
/// them, terminals act on them. They are escaped now, as the text output does.
@Suite struct JSONTerminalSafetyTests {
    @Test func controlsAndBidiOverridesAreEscaped() {
        let tag = "Title\u{9B}31m\u{202E}evil\u{7F}\u{2066}x\u{2028}é"
        let json = jsonString(tag)
        #expect(json == "\"Title\\u009b31m\\u202eevil\\u007f\\u2066x\\u2028é\"", "\(json)")
        for scalar in json.unicodeScalars {
            let v = scalar.value
            #expect(!(v < 0x20 || (0x7F...0x9F).contains(v) || (0x202A...0x202E).contains(v) || (0x2066...0x2069).contains(v)),
                    "raw U+\(String(v, radix: 16)) in \(json)")
        }
        #expect(jsonString("plain \"q\" \\ \n") == "\"plain \\\"q\\\" \\\\ \\n\"")
    }
}
