import OATCore

/// Collects an HTTP response head from its lines (status line, fields, blank line), as libcurl's
/// header callback hands them over; a new status line (after a redirect or a 1xx) starts over.
/// Pure, so the fuzzer can drive it.
struct HTTPResponseHead: Sendable, Equatable {
    /// What one line was.
    enum Line: Equatable { case status, field, ignored, end }

    /// The status code of the latest status line (0 if it had none).
    var status = 0
    /// The fields since the latest status line, names lower-cased, values trimmed.
    var headers: [ByteSourceInfo.HeaderField] = []

    /// Consumes one line (with or without its CR LF).
    mutating func consume(_ data: UnsafeRawBufferPointer) -> Line {
        var end = data.count
        while end > 0, data[end - 1] == 0x0A || data[end - 1] == 0x0D { end -= 1 }
        if end == 0 { return .end }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: data[0..<end]), as: UTF8.self)
        if text.hasPrefix("HTTP/") || text.hasPrefix("ICY ") {
            headers.removeAll()
            let parts = text.split(separator: " ", maxSplits: 2)
            status = parts.count >= 2 ? Int(parts[1]).flatMap { (0...999).contains($0) ? $0 : nil } ?? 0 : 0
            return .status
        }
        guard let colon = text.firstIndex(of: ":") else { return .ignored }
        let name = text[..<colon].lowercased().trimmingBlanks()
        var value = Substring(text[text.index(after: colon)...])
        while let f = value.first, f == " " || f == "\t" { value = value.dropFirst() }
        while let l = value.last, l == " " || l == "\t" { value = value.dropLast() }
        headers.append(ByteSourceInfo.HeaderField(name: name, value: String(value)))
        return .field
    }

    /// The first value of `name` (lower-case).
    func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }
}

/// Parses `bytes first-last/total` (total may be `*`); nil when malformed or inconsistent.
func parseContentRange(_ value: String) -> (first: Int64, last: Int64, total: Int64?)? {
    let v = value.trimmingBlanks().lowercased()
    guard v.hasPrefix("bytes") else { return nil }
    let rest = v.dropFirst(5).drop { $0 == " " || $0 == "=" }
    let parts = rest.split(separator: "/", maxSplits: 1)
    guard parts.count == 2 else { return nil }
    let range = parts[0].split(separator: "-", maxSplits: 1)
    guard range.count == 2, let first = Int64(range[0]), let last = Int64(range[1]), first >= 0, last >= first else { return nil }
    let total: Int64? = parts[1] == "*" ? nil : Int64(parts[1])
    if parts[1] != "*" && total == nil { return nil }
    if let total, last >= total { return nil }
    return (first, last, total)
}
