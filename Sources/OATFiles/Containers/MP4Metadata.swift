import OATCore

/// What the iTunes metadata (`udta/meta/ilst`) says.
struct MP4Metadata: Equatable {
    var tags: [String: String] = [:]
    /// From `----:com.apple.iTunes:iTunSMPB`: priming, padding and valid frames.
    var smpb: (priming: Int64, padding: Int64, valid: Int64)?

    static func == (a: MP4Metadata, b: MP4Metadata) -> Bool {
        a.tags == b.tags && a.smpb?.priming == b.smpb?.priming && a.smpb?.padding == b.smpb?.padding && a.smpb?.valid == b.smpb?.valid
    }
}

extension MP4 {
    /// The info-dictionary key of an `ilst` item type.
    static func tagKey(_ type: FourCC) -> String? {
        switch type.rawValue {
        case 0xA96E_616D: InfoKey.title          // ©nam
        case 0xA941_5254: InfoKey.artist         // ©ART
        case 0xA961_6C62: InfoKey.album          // ©alb
        case 0xA964_6179: InfoKey.year           // ©day
        case 0xA967_656E: InfoKey.genre          // ©gen
        case 0xA963_6D74: InfoKey.comments       // ©cmt
        case 0xA977_7274: InfoKey.composer       // ©wrt
        case 0xA974_6F6F: InfoKey.encodingApplication // ©too
        case 0xA96C_7972: InfoKey.lyricist       // ©lyr
        case 0x6370_7274: InfoKey.copyright      // cprt
        case 0x6141_5254: InfoKey.albumArtist    // aART
        case 0x7472_6B6E: InfoKey.trackNumber    // trkn
        case 0x6469_736B: InfoKey.discNumber     // disk
        case 0x676E_7265: InfoKey.genre          // gnre
        default: nil
        }
    }

    /// Reads a `meta` box (with or without the full-box version field) for its `ilst`.
    /// Metadata problems never stop the audio: unreadable items are left out.
    static func parseMeta(_ meta: Box, limits: ParserLimits) -> MP4Metadata {
        var result = MP4Metadata()
        var start = 0
        // ISO 'meta' is a full box; QuickTime's is not (its first child, 'hdlr', follows at once).
        if meta.payload.count >= 8 {
            let t = FourCC(meta.payload[4], meta.payload[5], meta.payload[6], meta.payload[7])
            if t != "hdlr" && t != "ilst" && t != "keys" { start = 4 }
        }
        let body = UnsafeRawBufferPointer(rebasing: meta.payload[start...])
        guard let ilst = try? child(body, base: meta.payloadOffset + Int64(start), "ilst"),
              let items = try? children(ilst.payload, base: ilst.payloadOffset) else { return result }
        for item in items {
            guard let parts = try? children(item.payload, base: item.payloadOffset) else { continue }
            guard let data = parts.first(where: { $0.type == "data" }), data.payload.count >= 8,
                  data.payload.count - 8 <= limits.maximumTagBytes else { continue }
            let typeCode = UInt32(data.payload[1]) << 16 | UInt32(data.payload[2]) << 8 | UInt32(data.payload[3])
            let value = UnsafeRawBufferPointer(rebasing: data.payload[8...])
            if item.type == "----" {
                func text(_ t: FourCC) -> String? {
                    guard let b = parts.first(where: { $0.type == t }), b.payload.count >= 4 else { return nil }
                    return decodeText(UnsafeRawBufferPointer(rebasing: b.payload[4...]))
                }
                guard text("name") == "iTunSMPB" else { continue }
                let words = decodeText(value).split(separator: " ")
                if words.count >= 4, let p = Int64(words[1], radix: 16), let r = Int64(words[2], radix: 16),
                   let v = Int64(words[3], radix: 16), p >= 0, r >= 0, v >= 0 {
                    result.smpb = (p, r, v)
                }
                continue
            }
            guard let key = tagKey(item.type) else { continue }
            var text: String
            switch item.type {
            case "trkn", "disk":
                guard value.count >= 6 else { continue }
                let n = UInt16(value[2]) << 8 | UInt16(value[3])
                let total = UInt16(value[4]) << 8 | UInt16(value[5])
                guard n > 0 else { continue }
                text = total > 0 ? "\(n)/\(total)" : "\(n)"
            case "gnre":
                guard value.count >= 2 else { continue }
                let g = Int(UInt16(value[0]) << 8 | UInt16(value[1]))
                guard g >= 1, g <= id3Genres.count else { continue }
                text = id3Genres[g - 1]
            default:
                guard typeCode == 1 || typeCode == 0 else { continue }
                text = decodeText(value)
            }
            if !text.isEmpty && result.tags[key] == nil { result.tags[key] = text }
        }
        return result
    }
}
