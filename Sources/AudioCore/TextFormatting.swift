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
