import OATCore

/// Reads ID3v2.2-2.4 tags frame by frame: text frames and comments become info-dictionary
/// entries; pictures and other large frames are skipped without buffering them.
struct ID3v2Walker {
    static let component = "ID3v2 tag"
    let version: UInt8
    let tagEnd: Int64
    var done = false

    /// Parses the 10-byte header at the start of `input` if it is an ID3v2 tag; returns the
    /// walker and the header size consumed, or nil when the bytes are not an ID3v2 header.
    static func header(_ input: UnsafeRawBufferPointer, at offset: Int64) throws -> (ID3v2Walker, Int)? {
        let r = ByteReader(input, baseOffset: offset)
        try r.require(10)
        guard input[0] == 0x49, input[1] == 0x44, input[2] == 0x33 else { return nil }
        let version = input[3]
        let flags = input[5]
        let sizeBytes = (6..<10).map { input[$0] }
        guard version >= 2, version <= 4, input[4] != 0xFF, sizeBytes.allSatisfy({ $0 < 0x80 }) else {
            throw invalidData(component, "bad ID3v2 header (version 2.\(version), size bytes \(sizeBytes))", at: offset)
        }
        var size = Int64(sizeBytes.reduce(0) { $0 << 7 | Int($1) })
        if version == 4 && flags & 0x10 != 0 { size += 10 }
        var walker = ID3v2Walker(version: version, tagEnd: offset + 10 + size)
        walker.unsynchronised = flags & 0x80 != 0
        walker.hasExtendedHeader = flags & 0x40 != 0 && version >= 3
        return (walker, 10)
    }

    var unsynchronised = false
    var hasExtendedHeader = false

    /// One step inside the tag.
    mutating func step(_ input: UnsafeRawBufferPointer, at offset: Int64, isEOF: Bool, _ out: inout ParseOutput) throws -> ParseStatus {
        let remaining = tagEnd - offset
        if isEOF && Int64(input.count) < remaining && input.count < 10 {
            done = true
            return input.isEmpty ? .finished : .consumed(input.count)
        }
        if hasExtendedHeader {
            var r = ByteReader(input, baseOffset: offset)
            let raw = try r.u32be()
            let size = version == 4 ? Int64(syncsafe(raw)) : Int64(raw) + 4
            hasExtendedHeader = false
            guard size >= 4, size <= remaining else { done = true; return .skip(remaining) }
            return .skip(size)
        }
        if unsynchronised && version < 4 {
            // Whole-tag unsynchronisation: read the tag whole when small enough, else skip it.
            guard remaining <= Int64(out.limits.maximumTagBytes) else { done = true; return .skip(remaining) }
            var r = ByteReader(input, baseOffset: offset)
            let raw = try r.array(Int(remaining))
            var clean: [UInt8] = []
            clean.reserveCapacity(raw.count)
            var i = 0
            while i < raw.count {
                clean.append(raw[i])
                if raw[i] == 0xFF && i + 1 < raw.count && raw[i + 1] == 0 { i += 2 } else { i += 1 }
            }
            var tags: [String: String] = [:]
            var pos = 0
            while pos < clean.count {
                guard let (id, size, headerSize, _) = frameHeader(clean, pos) else { break }
                if pos + headerSize + size > clean.count { break }
                if let (key, value) = decodeFrame(id: id, Array(clean[(pos + headerSize)..<(pos + headerSize + size)])) {
                    if tags[key] == nil { tags[key] = value }
                }
                pos += headerSize + size
            }
            out.setTags(tags)
            done = true
            return .consumed(Int(remaining))
        }
        let headerSize = version == 2 ? 6 : 10
        if remaining < Int64(headerSize) { done = true; return .skip(remaining) }
        var r = ByteReader(input, baseOffset: offset)
        let head = try r.array(headerSize)
        guard let (id, size, _, frameFlags) = frameHeader(head, 0) else {
            done = true
            return .skip(remaining) // padding or garbage: the rest of the tag is not frames
        }
        let total = Int64(headerSize) + Int64(size)
        if total > remaining {
            done = true
            return .skip(remaining)
        }
        let wanted = id.hasPrefix("T") || id == "COMM" || id == "COM"
        let compressedOrEncrypted = version == 4 ? frameFlags & 0x000C != 0 : (version == 3 ? frameFlags & 0x00C0 != 0 : false)
        if wanted && !compressedOrEncrypted && size <= out.limits.maximumTagBytes && size > 0 {
            var body = try r.array(size)
            if version == 4 && frameFlags & 0x0002 != 0 {
                var clean: [UInt8] = []
                var i = 0
                while i < body.count {
                    clean.append(body[i])
                    if body[i] == 0xFF && i + 1 < body.count && body[i + 1] == 0 { i += 2 } else { i += 1 }
                }
                body = clean
            }
            if version == 4 && frameFlags & 0x0001 != 0 && body.count >= 4 { body.removeFirst(4) } // data length indicator
            if let (key, value) = decodeFrame(id: id, body), out.info.infoDictionary[key] == nil {
                out.setTags([key: value])
            }
            if total == remaining { done = true }
            return .consumed(Int(total))
        }
        if total == remaining { done = true }
        return .skip(total)
    }

    private func syncsafe(_ v: UInt32) -> UInt32 {
        (v & 0x7F) | (v >> 8 & 0x7F) << 7 | (v >> 16 & 0x7F) << 14 | (v >> 24 & 0x7F) << 21
    }

    /// (id, body size, header size, flags) of the frame at `pos`, or nil for padding/garbage.
    private func frameHeader(_ b: [UInt8], _ pos: Int) -> (String, Int, Int, UInt16)? {
        let headerSize = version == 2 ? 6 : 10
        guard pos + headerSize <= b.count else { return nil }
        let idLength = version == 2 ? 3 : 4
        let idBytes = b[pos..<(pos + idLength)]
        guard idBytes.allSatisfy({ ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x30 && $0 <= 0x39) }) else { return nil }
        let id = String(decoding: idBytes, as: UTF8.self)
        let size: Int
        var flags: UInt16 = 0
        if version == 2 {
            size = Int(b[pos + 3]) << 16 | Int(b[pos + 4]) << 8 | Int(b[pos + 5])
        } else {
            let raw = UInt32(b[pos + 4]) << 24 | UInt32(b[pos + 5]) << 16 | UInt32(b[pos + 6]) << 8 | UInt32(b[pos + 7])
            size = Int(version == 4 ? syncsafe(raw) : raw)
            flags = UInt16(b[pos + 8]) << 8 | UInt16(b[pos + 9])
        }
        return (id, size, headerSize, flags)
    }

    /// Maps a text or comment frame to an info-dictionary entry.
    private func decodeFrame(id: String, _ body: [UInt8]) -> (String, String)? {
        let key: String
        switch id {
        case "TIT2", "TT2": key = InfoKey.title
        case "TPE1", "TP1": key = InfoKey.artist
        case "TALB", "TAL": key = InfoKey.album
        case "TRCK", "TRK": key = InfoKey.trackNumber
        case "TYER", "TYE", "TDRC": key = InfoKey.year
        case "TCON", "TCO": key = InfoKey.genre
        case "TCOM", "TCM": key = InfoKey.composer
        case "TCOP", "TCR": key = InfoKey.copyright
        case "TENC", "TEN", "TSSE", "TSS": key = InfoKey.encodingApplication
        case "TPE2", "TP2": key = InfoKey.albumArtist
        case "TPOS", "TPA": key = InfoKey.discNumber
        case "TEXT", "TXT": key = InfoKey.lyricist
        case "TLEN", "TLE": key = "TLEN"
        case "COMM", "COM": key = InfoKey.comments
        default: return nil
        }
        guard let enc = body.first else { return nil }
        var text: ArraySlice<UInt8> = body.dropFirst()
        if key == InfoKey.comments {
            guard text.count >= 3 else { return nil }
            text = text.dropFirst(3)
            // Skip the short content description.
            let (_, rest) = splitTerminated(text, encoding: enc)
            text = rest
        }
        var value = decodeID3Text(text, encoding: enc)
        if key == "TLEN" {
            guard let ms = Int(value), ms > 0 else { return nil }
            return (InfoKey.approximateDurationInSeconds, String(Double(ms) / 1000))
        }
        if key == InfoKey.genre { value = id3GenreName(value) }
        return value.isEmpty ? nil : (key, value)
    }
}

/// Splits ID3 text at its first terminator (one NUL, or two for UTF-16).
func splitTerminated(_ text: ArraySlice<UInt8>, encoding: UInt8) -> (ArraySlice<UInt8>, ArraySlice<UInt8>) {
    if encoding == 1 || encoding == 2 {
        var i = text.startIndex
        while i + 1 < text.endIndex {
            if text[i] == 0 && text[i + 1] == 0 { return (text[text.startIndex..<i], text[(i + 2)...]) }
            i += 2
        }
        return (text, [])
    }
    if let z = text.firstIndex(of: 0) { return (text[text.startIndex..<z], text[(z + 1)...]) }
    return (text, [])
}

/// Decodes ID3 text in encoding 0 (Latin-1), 1 (UTF-16 with BOM), 2 (UTF-16BE) or 3 (UTF-8);
/// keeps the first of several NUL-separated strings.
func decodeID3Text(_ text: ArraySlice<UInt8>, encoding: UInt8) -> String {
    let (first, _) = splitTerminated(text, encoding: encoding)
    switch encoding {
    case 1, 2:
        var bytes = Array(first)
        var bigEndian = encoding == 2
        if bytes.count >= 2 {
            if bytes[0] == 0xFF && bytes[1] == 0xFE { bigEndian = false; bytes.removeFirst(2) }
            else if bytes[0] == 0xFE && bytes[1] == 0xFF { bigEndian = true; bytes.removeFirst(2) }
        }
        var units: [UInt16] = []
        var i = 0
        while i + 1 < bytes.count {
            units.append(bigEndian ? UInt16(bytes[i]) << 8 | UInt16(bytes[i + 1]) : UInt16(bytes[i + 1]) << 8 | UInt16(bytes[i]))
            i += 2
        }
        return String(decoding: units, as: UTF16.self).trimmingSpaces()
    case 3:
        return String(decoding: first, as: UTF8.self).trimmingSpaces()
    default:
        return String(String.UnicodeScalarView(first.map { Unicode.Scalar($0) })).trimmingSpaces()
    }
}

/// Replaces an ID3 numeric genre reference such as `(17)` or `17` with its name.
func id3GenreName(_ value: String) -> String {
    var v = value
    if v.hasPrefix("("), let close = v.firstIndex(of: ")") {
        let inner = v[v.index(after: v.startIndex)..<close]
        let rest = v[v.index(after: close)...]
        if !rest.isEmpty { return String(rest) }
        v = String(inner)
    }
    if let n = Int(v), n >= 0, n < id3Genres.count { return id3Genres[n] }
    return value
}

/// The genre names ID3v1 numbers 0-79 stand for.
let id3Genres = [
    "Blues", "Classic Rock", "Country", "Dance", "Disco", "Funk", "Grunge", "Hip-Hop", "Jazz", "Metal",
    "New Age", "Oldies", "Other", "Pop", "R&B", "Rap", "Reggae", "Rock", "Techno", "Industrial",
    "Alternative", "Ska", "Death Metal", "Pranks", "Soundtrack", "Euro-Techno", "Ambient", "Trip-Hop",
    "Vocal", "Jazz+Funk", "Fusion", "Trance", "Classical", "Instrumental", "Acid", "House", "Game",
    "Sound Clip", "Gospel", "Noise", "AlternRock", "Bass", "Soul", "Punk", "Space", "Meditative",
    "Instrumental Pop", "Instrumental Rock", "Ethnic", "Gothic", "Darkwave", "Techno-Industrial",
    "Electronic", "Pop-Folk", "Eurodance", "Dream", "Southern Rock", "Comedy", "Cult", "Gangsta",
    "Top 40", "Christian Rap", "Pop/Funk", "Jungle", "Native American", "Cabaret", "New Wave",
    "Psychadelic", "Rave", "Showtunes", "Trailer", "Lo-Fi", "Tribal", "Acid Punk", "Acid Jazz", "Polka",
    "Retro", "Musical", "Rock & Roll", "Hard Rock",
]

/// Parses a 128-byte ID3v1/v1.1 tag (`TAG` + fields) into info-dictionary entries.
func parseID3v1(_ b: UnsafeRawBufferPointer) -> [String: String]? {
    guard b.count >= 128, b[0] == 0x54, b[1] == 0x41, b[2] == 0x47 else { return nil }
    func field(_ start: Int, _ length: Int) -> String { decodeText(UnsafeRawBufferPointer(rebasing: b[start..<(start + length)])) }
    var tags: [String: String] = [:]
    tags[InfoKey.title] = field(3, 30)
    tags[InfoKey.artist] = field(33, 30)
    tags[InfoKey.album] = field(63, 30)
    tags[InfoKey.year] = field(93, 4)
    if b[125] == 0 && b[126] != 0 {
        tags[InfoKey.comments] = field(97, 28)
        tags[InfoKey.trackNumber] = String(b[126])
    } else {
        tags[InfoKey.comments] = field(97, 30)
    }
    if Int(b[127]) < id3Genres.count { tags[InfoKey.genre] = id3Genres[Int(b[127])] }
    return tags.filter { !$0.value.isEmpty }
}
