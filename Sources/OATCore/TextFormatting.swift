/// `value` with `digits` decimals, rounded half away from zero (what the tools print instead of
/// Foundation's `String(format:)`, so they load no Foundation).
package func fixed(_ value: Double, _ digits: Int) -> String {
    guard value.isFinite else { return "\(value)" }
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let scaled = (abs(value) * scale).rounded()
    let whole = Int(scaled / scale)
    var frac = String(Int(scaled.truncatingRemainder(dividingBy: scale)))
    while frac.count < digits { frac = "0" + frac }
    return (value < 0 && scaled > 0 ? "-" : "") + "\(whole)" + (digits > 0 ? "." + frac : "")
}

/// `text` padded on the left with `pad` to at least `width` characters (printf's `%6s`, `%02d`).
package func leftPadded(_ text: String, _ width: Int, _ pad: Character = " ") -> String {
    text.count >= width ? text : String(repeating: pad, count: width - text.count) + text
}

/// Whether a terminal acts on this scalar or reorders text around it: C0 and C1 controls, DEL,
/// and the bidirectional overrides and isolates (U+202A-202E, U+2066-2069).
package func isTerminalControl(_ v: UInt32) -> Bool {
    v < 0x20 || (0x7F...0x9F).contains(v) || (0x202A...0x202E).contains(v) || (0x2066...0x2069).contains(v)
}

/// `text` safe to print on a terminal: control characters (C0 other than tab and, with
/// `keepNewlines`, newline; DEL; C1) and the bidirectional overrides that reorder what a
/// terminal shows are replaced by visible escapes (`\x1B`, `\u{202E}`), so text that came from a
/// file or a server (tags, titles, names) cannot clear the screen, retitle the terminal or forge
/// lines of output.
package func terminalSafe(_ text: String, keepNewlines: Bool = false) -> String {
    func unsafe(_ v: UInt32) -> Bool {
        if v == 0x09 { return false }
        if v == 0x0A { return !keepNewlines }
        return isTerminalControl(v)
    }
    guard text.unicodeScalars.contains(where: { unsafe($0.value) }) else { return text }
    var out = ""
    for scalar in text.unicodeScalars {
        let v = scalar.value
        if !unsafe(v) {
            out.unicodeScalars.append(scalar)
        } else if v == 0x0A {
            out += "\\n"
        } else if v == 0x0D {
            out += "\\r"
        } else if v <= 0xFF {
            let hex = Array("0123456789ABCDEF")
            out += "\\x" + String(hex[Int(v >> 4)]) + String(hex[Int(v & 0xF)])
        } else {
            out += "\\u{" + String(v, radix: 16, uppercase: true) + "}"
        }
    }
    return out
}
