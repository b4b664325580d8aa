import OATCore

/// What a Xing/Info (with LAME extension) or VBRI header in the first frame says.
struct MPEGVBRInfo: Equatable {
    /// Audio frames in the stream (the header frame not counted), when stated.
    var frames: Int64?
    /// Bytes of the stream including the header frame, when stated.
    var bytes: Int64?
    /// Xing table of contents: 100 entries, byte position / 256 of each percent of duration.
    var toc: [UInt8]?
    /// VBRI table: bytes of each run of `vbriFramesPerEntry` frames.
    var vbriSizes: [Int64]?
    var vbriFramesPerEntry: Int = 0
    /// LAME encoder delay and padding (samples), when a LAME-style extension is present.
    var encoderDelay: Int?
    var encoderPadding: Int?
    /// "Xing", "Info" or "VBRI".
    var tag: String

    /// Looks for a Xing/Info or VBRI header in the Layer III frame `frame` (whole frame bytes).
    static func parse(_ frame: UnsafeRawBufferPointer, header h: MPEGFrameHeader, limits: ParserLimits) -> MPEGVBRInfo? {
        guard h.layer == 3 else { return nil }
        func u32(_ i: Int) -> UInt32? {
            guard i >= 0, i + 4 <= frame.count else { return nil }
            return UInt32(frame[i]) << 24 | UInt32(frame[i + 1]) << 16 | UInt32(frame[i + 2]) << 8 | UInt32(frame[i + 3])
        }
        func u16(_ i: Int) -> Int? {
            guard i >= 0, i + 2 <= frame.count else { return nil }
            return Int(frame[i]) << 8 | Int(frame[i + 1])
        }
        let sideInfo = h.version == 0 ? (h.isMono ? 17 : 32) : (h.isMono ? 9 : 17)
        for start in h.hasCRC ? [4 + sideInfo, 6 + sideInfo] : [4 + sideInfo] {
            guard let tag = u32(start), tag == 0x5869_6E67 || tag == 0x496E_666F, let flags = u32(start + 4) else { continue }
            var info = MPEGVBRInfo(tag: tag == 0x5869_6E67 ? "Xing" : "Info")
            var pos = start + 8
            if flags & 1 != 0 {
                guard let v = u32(pos) else { return info }
                if v > 0 { info.frames = Int64(v) }
                pos += 4
            }
            if flags & 2 != 0 {
                guard let v = u32(pos) else { return info }
                if v > 0 { info.bytes = Int64(v) }
                pos += 4
            }
            if flags & 4 != 0 {
                guard pos + 100 <= frame.count else { return info }
                info.toc = Array(UnsafeRawBufferPointer(rebasing: frame[pos..<(pos + 100)]))
                pos += 100
            }
            if flags & 8 != 0 { pos += 4 }
            // LAME-style extension: 9-byte encoder string, then delay/padding at +21.
            if pos + 24 <= frame.count {
                let isText = (0..<4).allSatisfy { i in
                    let c = frame[pos + i]
                    return (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || (c >= 0x30 && c <= 0x39) || c == 0x2E
                }
                if isText, frame[pos] >= 0x41, frame[pos] <= 0x5A {
                    let b0 = Int(frame[pos + 21]), b1 = Int(frame[pos + 22]), b2 = Int(frame[pos + 23])
                    info.encoderDelay = b0 << 4 | b1 >> 4
                    info.encoderPadding = (b1 & 0xF) << 8 | b2
                }
            }
            return info
        }
        // VBRI (Fraunhofer) sits 32 bytes after the header.
        guard u32(36) == 0x5642_5249 else { return nil }
        var info = MPEGVBRInfo(tag: "VBRI")
        guard let bytes = u32(46), let frames = u32(50), let entries = u16(54), let scale = u16(56),
              let entrySize = u16(58), let perEntry = u16(60) else { return info }
        if frames > 0 { info.frames = Int64(frames) }
        if bytes > 0 { info.bytes = Int64(bytes) }
        let tableEnd = 62 + entries * entrySize
        if entries > 0, entrySize >= 1, entrySize <= 4, perEntry > 0, tableEnd <= frame.count,
           entries <= limits.maximumTableEntries {
            var sizes: [Int64] = []
            sizes.reserveCapacity(entries)
            for e in 0..<entries {
                var v: Int64 = 0
                for k in 0..<entrySize { v = v << 8 | Int64(frame[62 + e * entrySize + k]) }
                sizes.append(v * Int64(max(1, scale)))
            }
            info.vbriSizes = sizes
            info.vbriFramesPerEntry = perEntry
        }
        return info
    }
}
