import OATCore

// Shared by the FLAC and Ogg parsers: table-driven CRCs and Vorbis comments.

/// CRC-8 of FLAC frame headers (polynomial x^8 + x^2 + x + 1, initial 0, not reflected).
let flacCRC8Table: [UInt8] = (0..<256).map { (i: Int) -> UInt8 in
    var c = UInt8(i)
    for _ in 0..<8 { c = c & 0x80 != 0 ? (c << 1) ^ 0x07 : c << 1 }
    return c
}

/// CRC-16 of FLAC frames (polynomial x^16 + x^15 + x^2 + 1, initial 0, not reflected).
let flacCRC16Table: [UInt16] = (0..<256).map { (i: Int) -> UInt16 in
    var c = UInt16(i) << 8
    for _ in 0..<8 { c = c & 0x8000 != 0 ? (c << 1) ^ 0x8005 : c << 1 }
    return c
}

/// CRC-32 of Ogg pages (polynomial 0x04C11DB7, initial 0, not reflected, no final xor).
let oggCRC32Table: [UInt32] = (0..<256).map { (i: Int) -> UInt32 in
    var c = UInt32(i) << 24
    for _ in 0..<8 { c = c & 0x8000_0000 != 0 ? (c << 1) ^ 0x04C1_1DB7 : c << 1 }
    return c
}

/// Continues the FLAC CRC-8 over `bytes`.
@inline(__always)
func flacCRC8(_ bytes: UnsafeRawBufferPointer, _ start: UInt8 = 0) -> UInt8 {
    flacCRC8Table.withUnsafeBufferPointer { t in
        var c = start
        for b in bytes { c = t[Int(c ^ b)] }
        return c
    }
}

/// Continues the FLAC CRC-16 over `bytes`, one byte at a time (the reference for
/// ``flacCRC16(_:_:)``; also used where every intermediate value is needed).
@inline(__always)
func flacCRC16Bytewise(_ bytes: UnsafeRawBufferPointer, _ start: UInt16 = 0) -> UInt16 {
    flacCRC16Table.withUnsafeBufferPointer { t in
        var c = start
        for b in bytes { c = (c << 8) ^ t[Int(UInt8(truncatingIfNeeded: c >> 8) ^ b)] }
        return c
    }
}

/// Slice-by-8 tables of the FLAC CRC-16: row k (of 8, 256 entries each) is the CRC of a byte
/// followed by k zero bytes; row 0 is ``flacCRC16Table``.
let flacCRC16Slice8: [UInt16] = {
    var t = [UInt16](repeating: 0, count: 8 * 256)
    for i in 0..<256 { t[i] = flacCRC16Table[i] }
    for k in 1..<8 {
        for i in 0..<256 {
            let prev = t[(k - 1) * 256 + i]
            t[k * 256 + i] = (prev << 8) ^ flacCRC16Table[Int(prev >> 8)]
        }
    }
    return t
}()

/// Continues the FLAC CRC-16 over `bytes`: 8 bytes per step (slice-by-8), same result as
/// ``flacCRC16Bytewise(_:_:)``.
func flacCRC16(_ bytes: UnsafeRawBufferPointer, _ start: UInt16 = 0) -> UInt16 {
    guard var p = bytes.baseAddress else { return start }
    var n = bytes.count
    return flacCRC16Slice8.withUnsafeBufferPointer { tb in
        let t = tb.baseAddress!
        var c = start
        while n >= 8 {
            let w = UInt64(bigEndian: p.loadUnaligned(as: UInt64.self))
            let hi = UInt16(truncatingIfNeeded: w >> 48) ^ c
            c = t[7 * 256 + Int(hi >> 8)] ^ t[6 * 256 + Int(hi & 0xFF)]
                ^ t[5 * 256 + Int((w >> 40) & 0xFF)] ^ t[4 * 256 + Int((w >> 32) & 0xFF)]
                ^ t[3 * 256 + Int((w >> 24) & 0xFF)] ^ t[2 * 256 + Int((w >> 16) & 0xFF)]
                ^ t[256 + Int((w >> 8) & 0xFF)] ^ t[Int(w & 0xFF)]
            p += 8
            n -= 8
        }
        while n > 0 {
            c = (c << 8) ^ t[Int(UInt8(truncatingIfNeeded: c >> 8) ^ p.load(as: UInt8.self))]
            p += 1
            n -= 1
        }
        return c
    }
}

/// Continues the Ogg CRC-32 over `bytes`.
@inline(__always)
func oggCRC32(_ bytes: UnsafeRawBufferPointer, _ start: UInt32 = 0) -> UInt32 {
    oggCRC32Table.withUnsafeBufferPointer { t in
        var c = start
        for b in bytes { c = (c << 8) ^ t[Int(UInt8(truncatingIfNeeded: c >> 24) ^ b)] }
        return c
    }
}

/// Vorbis comments (FLAC VORBIS_COMMENT blocks, Vorbis comment headers, OpusTags): a vendor
/// string and `KEY=value` fields, lengths little-endian.
enum VorbisComment {
    /// The info-dictionary key for a Vorbis comment field name (upper-cased), or nil.
    static func infoKey(_ field: String) -> String? {
        switch field {
        case "TITLE": InfoKey.title
        case "ARTIST": InfoKey.artist
        case "ALBUM": InfoKey.album
        case "DATE", "YEAR": InfoKey.year
        case "TRACKNUMBER": InfoKey.trackNumber
        case "GENRE": InfoKey.genre
        case "COMMENT", "DESCRIPTION": InfoKey.comments
        case "COMPOSER": InfoKey.composer
        case "COPYRIGHT": InfoKey.copyright
        case "ALBUMARTIST", "ALBUM ARTIST": InfoKey.albumArtist
        case "DISCNUMBER": InfoKey.discNumber
        case "ENCODER": InfoKey.encodingApplication
        case "LYRICIST": InfoKey.lyricist
        default: nil
        }
    }

    /// Parses a comment block (without any codec prefix) into info-dictionary entries; the first
    /// value of a field wins. Malformed or truncated blocks give the fields read so far.
    static func parse(_ b: UnsafeRawBufferPointer) -> [String: String] {
        var tags: [String: String] = [:]
        var r = ByteReader(b)
        guard let vendorLength = try? r.u32le(), (try? r.skip(Int(vendorLength))) != nil,
              let count = try? r.u32le() else { return tags }
        var i: UInt32 = 0
        while i < count, let length = try? r.u32le(), let field = try? r.slice(Int(length)) {
            i += 1
            guard let eq = field.firstIndex(of: 0x3D), eq > 0 else { continue }
            var name = ""
            for c in field[0..<eq] {
                let u = c >= 0x61 && c <= 0x7A ? c - 0x20 : c
                name.unicodeScalars.append(Unicode.Scalar(u))
            }
            guard let key = infoKey(name), tags[key] == nil else { continue }
            let value = decodeText(UnsafeRawBufferPointer(rebasing: field[(eq + 1)...]))
            if !value.isEmpty { tags[key] = value }
        }
        return tags
    }
}
