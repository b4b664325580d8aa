import OATCore

/// Reads the small ID3v2 tags HLS carries as timed metadata (TS stream type 0x15, or at the start
/// of packed-audio segments): text frames (`TIT2`, `TPE1`, `TXXX`...), `WXXX`/`W***` URLs, and the
/// `PRIV` frame `com.apple.streaming.transportStreamTimestamp` (a 33-bit 90 kHz time stamp).
public struct TimedID3: Sendable, Equatable {
    /// Text and URL frames by frame ID (`TIT2`, `TPE1`; `TXXX:description` for user text frames).
    public var fields: [String: String]
    /// The packed-audio time stamp (90 kHz units), when the tag has one.
    public var transportStreamTimestamp: Int64?

    /// The title (`TIT2`), if any.
    public var title: String? { fields["TIT2"] }

    /// The total length (header, body, footer) of the ID3v2 tag starting at `bytes[0]`, or nil when
    /// the bytes do not start with a valid ID3v2 header (10 bytes needed).
    public static func tagLength(_ bytes: UnsafeRawBufferPointer) -> Int? {
        guard bytes.count >= 10, bytes[0] == 0x49, bytes[1] == 0x44, bytes[2] == 0x33,
              bytes[3] >= 2, bytes[3] <= 4, bytes[4] != 0xFF,
              bytes[6] < 0x80, bytes[7] < 0x80, bytes[8] < 0x80, bytes[9] < 0x80 else { return nil }
        var size = Int(bytes[6]) << 21 | Int(bytes[7]) << 14 | Int(bytes[8]) << 7 | Int(bytes[9])
        size += 10
        if bytes[3] == 4 && bytes[5] & 0x10 != 0 { size += 10 }
        return size
    }

    /// Parses one ID3v2.3/2.4 tag (v2.2 three-letter frames too); nil when `bytes` is not a tag.
    /// Never traps; frames that run past the tag end stop the walk.
    public static func parse(_ bytes: UnsafeRawBufferPointer) -> TimedID3? {
        guard let total = tagLength(bytes) else { return nil }
        let version = bytes[3]
        let flags = bytes[5]
        let end = min(total, bytes.count)
        var pos = 10
        if flags & 0x40 != 0 && version >= 3 && pos + 4 <= end {
            let raw = Int(bytes[pos]) << 24 | Int(bytes[pos + 1]) << 16 | Int(bytes[pos + 2]) << 8 | Int(bytes[pos + 3])
            let ext = version == 4 ? syncsafe(raw) : raw + 4
            guard ext >= 4, ext <= end - pos else { return TimedID3(fields: [:], transportStreamTimestamp: nil) }
            pos += ext
        }
        var result = TimedID3(fields: [:], transportStreamTimestamp: nil)
        let idLength = version == 2 ? 3 : 4
        let headerLength = version == 2 ? 6 : 10
        while pos + headerLength <= end {
            if bytes[pos] == 0 { break }   // padding
            var id = ""
            for i in 0..<idLength {
                let c = bytes[pos + i]
                guard (c >= 0x41 && c <= 0x5A) || (c >= 0x30 && c <= 0x39) else { return result }
                id.unicodeScalars.append(Unicode.Scalar(c))
            }
            var size: Int
            if version == 2 {
                size = Int(bytes[pos + 3]) << 16 | Int(bytes[pos + 4]) << 8 | Int(bytes[pos + 5])
            } else {
                size = Int(bytes[pos + 4]) << 24 | Int(bytes[pos + 5]) << 16 | Int(bytes[pos + 6]) << 8 | Int(bytes[pos + 7])
                if version == 4 { size = syncsafe(size) }
            }
            let bodyStart = pos + headerLength
            guard size >= 0, size <= end - bodyStart else { break }
            let body = UnsafeRawBufferPointer(rebasing: bytes[bodyStart..<(bodyStart + size)])
            let formatFlags: UInt8 = version >= 3 ? bytes[pos + 9] : 0
            let compressedOrEncrypted = version == 4 ? formatFlags & 0x0C != 0 : (version == 3 && formatFlags & 0xC0 != 0)
            if !compressedOrEncrypted {
                result.add(id: id, body: body)
            }
            pos = bodyStart + size
        }
        return result
    }

    static func syncsafe(_ v: Int) -> Int {
        (v & 0x7F) | (v >> 8 & 0x7F) << 7 | (v >> 16 & 0x7F) << 14 | (v >> 24 & 0x7F) << 21
    }

    private mutating func add(id: String, body: UnsafeRawBufferPointer) {
        if id == "PRIV" {
            guard let zero = body.firstIndex(of: 0) else { return }
            let owner = String(decoding: body[..<zero], as: UTF8.self)
            let data = body[(zero + 1)...]
            if owner == "com.apple.streaming.transportStreamTimestamp", data.count >= 8 {
                var v: Int64 = 0
                for b in data.prefix(8) { v = v << 8 | Int64(b) }
                transportStreamTimestamp = v & 0x1_FFFF_FFFF
            }
            return
        }
        if id == "TXXX" || id == "TXX" {
            guard let enc = body.first else { return }
            let parts = TimedID3.splitText(UnsafeRawBufferPointer(rebasing: body[1...]), encoding: enc)
            fields[id + ":" + (parts.first ?? "")] = parts.count > 1 ? parts[1] : ""
            return
        }
        if id.hasPrefix("T") {
            guard let enc = body.first else { return }
            let parts = TimedID3.splitText(UnsafeRawBufferPointer(rebasing: body[1...]), encoding: enc)
            fields[id] = parts.joined(separator: "/")
            return
        }
        if id == "WXXX" {
            guard let enc = body.first else { return }
            let rest = UnsafeRawBufferPointer(rebasing: body[1...])
            let parts = TimedID3.splitText(rest, encoding: enc, limit: 1)
            if let first = parts.first {
                let skip = TimedID3.encodedLength(of: first, encoding: enc) + (enc == 1 || enc == 2 ? 2 : 1)
                if skip <= rest.count {
                    fields["WXXX"] = String(decoding: rest[skip...].prefix { $0 != 0 }, as: UTF8.self)
                }
            }
            return
        }
        if id.hasPrefix("W") {
            fields[id] = String(decoding: body.prefix { $0 != 0 }, as: UTF8.self)
        }
    }

    static func encodedLength(of s: String, encoding: UInt8) -> Int {
        switch encoding {
        case 0: return s.unicodeScalars.count
        case 1: return s.utf16.count * 2 + 2
        case 2: return s.utf16.count * 2
        default: return s.utf8.count
        }
    }

    /// Decodes NUL-separated strings in an ID3 text encoding (0 Latin-1, 1 UTF-16 with BOM,
    /// 2 UTF-16BE, 3 UTF-8); trailing empty strings dropped.
    static func splitText(_ b: UnsafeRawBufferPointer, encoding: UInt8, limit: Int = 64) -> [String] {
        var out: [String] = []
        if encoding == 1 || encoding == 2 {
            var i = 0
            while i + 1 < b.count && out.count < limit {
                var little = false
                if encoding == 1 && i + 1 < b.count {
                    if b[i] == 0xFF && b[i + 1] == 0xFE { little = true; i += 2 }
                    else if b[i] == 0xFE && b[i + 1] == 0xFF { i += 2 }
                }
                var units: [UInt16] = []
                while i + 1 < b.count {
                    let u = little ? UInt16(b[i]) | UInt16(b[i + 1]) << 8 : UInt16(b[i]) << 8 | UInt16(b[i + 1])
                    i += 2
                    if u == 0 { break }
                    units.append(u)
                }
                out.append(String(decoding: units, as: UTF16.self))
            }
        } else {
            for part in b.split(separator: 0, omittingEmptySubsequences: false).prefix(limit) {
                if encoding == 3 {
                    out.append(String(decoding: part, as: UTF8.self))
                } else {
                    out.append(String(String.UnicodeScalarView(part.map { Unicode.Scalar($0) })))
                }
            }
        }
        while let last = out.last, last.isEmpty { out.removeLast() }
        return out
    }
}
