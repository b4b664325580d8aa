import OATCore

/// A URL split into its RFC 3986 parts, enough to resolve a playlist's relative references and to
/// tell remote from local resources. No percent-decoding or normalisation beyond dot segments.
public struct PlaylistURL: Sendable, Equatable {
    /// The scheme, lower-cased (`http`, `https`, `file`), or nil for a bare path.
    public var scheme: String?
    /// `//authority` without the slashes, or nil when absent.
    public var authority: String?
    /// The path (may be empty).
    public var path: String
    /// The query without `?`, or nil.
    public var query: String?

    /// Splits `text` (fragment dropped).
    public init(_ text: String) {
        var rest = Substring(text)
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        scheme = nil
        if let colon = rest.firstIndex(of: ":") {
            let candidate = rest[..<colon]
            if let first = candidate.first, first.isASCII, first.isLetter,
               candidate.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "+" || $0 == "-" || $0 == ".") }),
               candidate.count > 1 {   // "C:" drive letters stay paths
                scheme = candidate.lowercased()
                rest = rest[rest.index(after: colon)...]
            }
        }
        authority = nil
        if rest.hasPrefix("//") {
            rest = rest.dropFirst(2)
            let end = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
            authority = String(rest[..<end])
            rest = rest[end...]
        }
        query = nil
        if let q = rest.firstIndex(of: "?") {
            query = String(rest[rest.index(after: q)...])
            rest = rest[..<q]
        }
        path = String(rest)
    }

    /// True for network schemes (`http`, `https`, and the ICY aliases `icy`, `icyx`).
    public var isRemote: Bool {
        guard let scheme else { return false }
        return ["http", "https", "icy", "icyx"].contains(scheme)
    }

    /// True for a local file: a `file:` URL or a bare path.
    public var isLocal: Bool { scheme == nil || scheme == "file" }

    /// The text form.
    public var text: String {
        var s = ""
        if let scheme { s += scheme + ":" }
        if let authority { s += "//" + authority }
        s += path
        if let query { s += "?" + query }
        return s
    }

    /// Resolves `reference` against this base (RFC 3986 section 5.2.2, without fragments).
    public func resolving(_ reference: String) -> PlaylistURL {
        let r = PlaylistURL(reference)
        if r.scheme != nil {
            var t = r
            t.path = PlaylistURL.removeDotSegments(r.path)
            return t
        }
        var t = PlaylistURL("")
        t.scheme = scheme
        if r.authority != nil {
            t.authority = r.authority
            t.path = PlaylistURL.removeDotSegments(r.path)
            t.query = r.query
            return t
        }
        t.authority = authority
        if r.path.isEmpty {
            t.path = path
            t.query = r.query ?? query
        } else {
            if r.path.hasPrefix("/") {
                t.path = PlaylistURL.removeDotSegments(r.path)
            } else {
                let merged: String
                if authority != nil && path.isEmpty {
                    merged = "/" + r.path
                } else if let slash = path.lastIndex(of: "/") {
                    merged = String(path[...slash]) + r.path
                } else {
                    merged = r.path
                }
                t.path = PlaylistURL.removeDotSegments(merged)
            }
            t.query = r.query
        }
        return t
    }

    /// Removes `.` and `..` segments from a path.
    static func removeDotSegments(_ path: String) -> String {
        guard path.contains(".") else { return path }
        let absolute = path.hasPrefix("/")
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        var out: [Substring] = []
        for (i, p) in parts.enumerated() {
            if i == 0 && absolute { continue }
            if p == "." { if i == parts.count - 1 { out.append("") }; continue }
            if p == ".." {
                if !out.isEmpty { out.removeLast() }
                if i == parts.count - 1 { out.append("") }
                continue
            }
            out.append(p)
        }
        return (absolute ? "/" : "") + out.joined(separator: "/")
    }
}

/// Decoding of playlist text: a UTF-8 or UTF-16 byte-order mark, UTF-8, else Latin-1.
enum PlaylistText {
    /// Decodes bytes to a String: BOMs are honoured and removed; invalid UTF-8 falls back to Latin-1.
    static func decode(_ bytes: UnsafeRawBufferPointer) -> String {
        var b = bytes
        if b.count >= 3, b[0] == 0xEF, b[1] == 0xBB, b[2] == 0xBF { b = UnsafeRawBufferPointer(rebasing: b[3...]) }
        else if b.count >= 2, (b[0] == 0xFF && b[1] == 0xFE) || (b[0] == 0xFE && b[1] == 0xFF) {
            let little = b[0] == 0xFF
            var units: [UInt16] = []
            units.reserveCapacity(b.count / 2)
            var i = 2
            while i + 1 < b.count {
                units.append(little ? UInt16(b[i]) | UInt16(b[i + 1]) << 8 : UInt16(b[i]) << 8 | UInt16(b[i + 1]))
                i += 2
            }
            return String(decoding: units, as: UTF16.self)
        }
        if isValidUTF8(b) { return String(decoding: b, as: UTF8.self) }
        return String(String.UnicodeScalarView(b.map { Unicode.Scalar($0) }))
    }

    static func isValidUTF8(_ b: UnsafeRawBufferPointer) -> Bool {
        var it = b.makeIterator()
        var decoder = UTF8()
        while true {
            switch decoder.decode(&it) {
            case .scalarValue: continue
            case .emptyInput: return true
            case .error: return false
            }
        }
    }

    /// Splits text into lines on LF, CRLF or CR; each line trimmed of surrounding white space.
    static func lines(_ text: String) -> [Substring] {
        var out: [Substring] = []
        var start = text.startIndex
        var i = text.startIndex
        while i < text.endIndex {
            let c = text[i]
            if c == "\n" || c == "\r" || c == "\r\n" {
                out.append(text[start..<i])
                start = text.index(after: i)
            }
            i = text.index(after: i)
        }
        if start < text.endIndex { out.append(text[start...]) }
        return out.map(trim)
    }

    static func trim(_ s: Substring) -> Substring {
        var s = s
        while let f = s.first, f == " " || f == "\t" || f == "\u{FEFF}" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return s
    }
}
