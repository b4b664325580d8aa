import OATCore

/// The 32-byte header or footer of an APE v1/v2 tag (`APETAGEX`).
struct APETagHeader: Equatable {
    let version: UInt32
    /// Bytes of the items plus the footer (the header not counted).
    let size: UInt32
    let itemCount: UInt32
    let flags: UInt32

    /// Parses 32 bytes at `i` (the caller checks bounds); nil unless `APETAGEX` with a
    /// plausible version and size.
    init?(_ b: UnsafeRawBufferPointer, _ i: Int) {
        let magic: [UInt8] = [0x41, 0x50, 0x45, 0x54, 0x41, 0x47, 0x45, 0x58]
        for k in 0..<8 where b[i + k] != magic[k] { return nil }
        func le(_ at: Int) -> UInt32 {
            UInt32(b[i + at]) | UInt32(b[i + at + 1]) << 8 | UInt32(b[i + at + 2]) << 16 | UInt32(b[i + at + 3]) << 24
        }
        version = le(8)
        size = le(12)
        itemCount = le(16)
        flags = le(20)
        guard version == 1000 || version == 2000, size >= 32 else { return nil }
    }

    /// This is the header (before the items), not the footer.
    var isHeader: Bool { flags & (1 << 29) != 0 }
    /// The tag ends with a footer (always for v1; v2 unless flag bit 30).
    var hasFooter: Bool { version == 1000 || flags & (1 << 30) == 0 }
}

/// Reads APE tag items (`size`, `flags`, NUL-terminated key, value) into info-dictionary
/// entries; binary and link items and unknown keys are ignored. Never reads out of `items`.
func parseAPEItems(_ items: UnsafeRawBufferPointer, count: UInt32) -> [String: String] {
    var tags: [String: String] = [:]
    var pos = 0
    var n: UInt32 = 0
    while n < count, pos + 8 <= items.count {
        n += 1
        let size = Int(UInt32(items[pos]) | UInt32(items[pos + 1]) << 8 | UInt32(items[pos + 2]) << 16 | UInt32(items[pos + 3]) << 24)
        let flags = items[pos + 4]
        pos += 8
        guard let keyEnd = UnsafeRawBufferPointer(rebasing: items[pos...]).firstIndex(of: 0) else { break }
        let key = String(decoding: UnsafeRawBufferPointer(rebasing: items[pos..<(pos + keyEnd)]), as: UTF8.self).lowercased()
        pos += keyEnd + 1
        guard size >= 0, size <= items.count - pos else { break }
        let value = UnsafeRawBufferPointer(rebasing: items[pos..<(pos + size)])
        pos += size
        guard flags >> 1 & 3 == 0 else { continue } // binary or external link
        let mapped: String?
        switch key {
        case "title": mapped = InfoKey.title
        case "artist": mapped = InfoKey.artist
        case "album": mapped = InfoKey.album
        case "album artist", "albumartist": mapped = InfoKey.albumArtist
        case "year": mapped = InfoKey.year
        case "track": mapped = InfoKey.trackNumber
        case "disc": mapped = InfoKey.discNumber
        case "genre": mapped = InfoKey.genre
        case "comment": mapped = InfoKey.comments
        case "composer": mapped = InfoKey.composer
        case "copyright": mapped = InfoKey.copyright
        case "lyricist": mapped = InfoKey.lyricist
        case "encoder", "encodedby", "tool": mapped = InfoKey.encodingApplication
        default: mapped = nil
        }
        guard let k = mapped, tags[k] == nil else { continue }
        let text = decodeText(value) // stops at the NUL between multiple values
        if !text.isEmpty { tags[k] = text }
    }
    return tags
}
