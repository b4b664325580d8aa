import OATCore

/// How the text of ICY metadata blocks is decoded.
public enum ICYCharset: String, Sendable, Equatable, CaseIterable {
    /// UTF-8 when the bytes are valid UTF-8, otherwise Latin-1 with Windows-1252 for 0x80-0x9F.
    case automatic
    /// Always UTF-8 (invalid sequences become U+FFFD).
    case utf8
    /// Always ISO-8859-1 (each byte is the code point of the same value).
    case latin1
    /// Always Windows-1252 (Latin-1 with printable characters in 0x80-0x9F).
    case windows1252
}

/// Removes SHOUTcast/Icecast metadata blocks from an ICY byte stream and parses them.
///
/// An ICY stream with `icy-metaint: N` carries N audio bytes, then one length byte L, then
/// L × 16 bytes of metadata text (`StreamTitle='...';StreamUrl='...';`, NUL-padded), then N audio
/// bytes again. The demuxer is pure and incremental: feeding the same bytes in any split gives
/// the same audio bytes and the same metadata at the same audio offsets.
///
/// Thread safety: a value type; use one instance from one thread.
public struct ICYDemuxer: Sendable {
    /// The largest `icy-metaint` accepted (servers use 8192 to 65536).
    public static let maximumMetaInterval = 1 << 20
    /// The largest metadata block the format can express (255 × 16 bytes).
    public static let maximumBlockSize = 255 * 16

    /// Audio bytes between metadata blocks.
    public let metaInterval: Int
    /// How metadata text is decoded.
    public var charset: ICYCharset
    /// The stream offset of the next audio byte produced (starts at the offset given to init).
    public private(set) var audioOffset: Int64
    /// Metadata blocks received (including empty ones).
    public private(set) var blockCount = 0
    /// Non-empty blocks whose text could not be parsed as `Key='value';` pairs (skipped).
    public private(set) var invalidBlockCount = 0

    private enum Phase: Sendable { case audio(remaining: Int), length, block(remaining: Int) }
    private var phase: Phase
    private var block: [UInt8] = []

    /// Creates a demuxer for a stream with the given `icy-metaint`. `audioOffset` is the stream
    /// offset reported for the first audio byte. Throws if the interval is not 1...1 MiB.
    public init(metaInterval: Int, audioOffset: Int64 = 0, charset: ICYCharset = .automatic) throws(AudioError) {
        guard metaInterval > 0, metaInterval <= Self.maximumMetaInterval else {
            throw AudioError(.invalidData, component: "ICY", "icy-metaint \(metaInterval) is outside 1...\(Self.maximumMetaInterval)")
        }
        self.metaInterval = metaInterval
        self.charset = charset
        self.audioOffset = audioOffset
        self.phase = .audio(remaining: metaInterval)
    }

    /// Consumes `input`. Audio runs are passed to `audio` (slices of `input`, valid only during the
    /// call) and complete metadata to `metadata`, in stream order.
    public mutating func feed(_ input: UnsafeRawBufferPointer,
                              audio: (UnsafeRawBufferPointer) -> Void,
                              metadata: (StreamMetadata) -> Void) {
        var i = 0
        let n = input.count
        while i < n {
            switch phase {
            case .audio(let remaining):
                let take = min(remaining, n - i)
                audio(UnsafeRawBufferPointer(rebasing: input[i..<(i + take)]))
                audioOffset += Int64(take)
                i += take
                phase = remaining - take == 0 ? .length : .audio(remaining: remaining - take)
            case .length:
                let length = Int(input[i]) * 16
                i += 1
                blockCount += 1
                if length == 0 {
                    phase = .audio(remaining: metaInterval)
                } else {
                    block.removeAll(keepingCapacity: true)
                    phase = .block(remaining: length)
                }
            case .block(let remaining):
                let take = min(remaining, n - i)
                block.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[i..<(i + take)]))
                i += take
                if remaining - take == 0 {
                    if let m = ICYDemuxer.parse(block, charset: charset, audioByteOffset: audioOffset) {
                        metadata(m)
                    } else {
                        invalidBlockCount += 1
                    }
                    phase = .audio(remaining: metaInterval)
                } else {
                    phase = .block(remaining: remaining - take)
                }
            }
        }
    }

    /// Parses the text of one metadata block (`StreamTitle='...';StreamUrl='...';` with NUL
    /// padding). Quotes and semicolons inside values are kept (a value ends at a quote followed by
    /// `;` and another `Key=` or the end), a missing final `;` or quote is tolerated. Returns nil
    /// for an empty block or text that has no `Key=value` pair or contains control bytes.
    public static func parse(_ bytes: [UInt8], charset: ICYCharset = .automatic, audioByteOffset: Int64 = 0) -> StreamMetadata? {
        var end = bytes.count
        while end > 0, bytes[end - 1] == 0 || bytes[end - 1] == 0x20 || bytes[end - 1] == 0x0A || bytes[end - 1] == 0x0D { end -= 1 }
        if end == 0 { return nil }
        for b in bytes[0..<end] where b < 0x20 && b != 0x09 { return nil }
        var fields: [String: String] = [:]
        var order: [String] = []
        var i = 0
        while i < end {
            while i < end, bytes[i] == 0x3B || bytes[i] == 0x20 { i += 1 }   // ';' and spaces between pairs
            if i >= end { break }
            guard let eq = bytes[i..<end].firstIndex(of: 0x3D) else { break }   // '='
            let key = decode(bytes[i..<eq], charset: charset).trimmingBlanks()
            guard isKey(bytes[i..<eq]) else { return fields.isEmpty ? nil : finish(fields, order, audioByteOffset) }
            var v = eq + 1
            var valueEnd = end
            var next = end
            if v < end, bytes[v] == 0x27 || bytes[v] == 0x22 {   // quoted value
                let quote = bytes[v]
                v += 1
                var j = v
                var found = false
                while j < end {
                    if bytes[j] == quote {
                        if j + 1 == end { valueEnd = j; next = end; found = true; break }
                        if bytes[j + 1] == 0x3B, j + 2 == end || startsKey(bytes, j + 2, end) {
                            valueEnd = j; next = j + 2; found = true; break
                        }
                    }
                    j += 1
                }
                if !found {   // no closing quote: the rest, minus a trailing ';'
                    valueEnd = end
                    if valueEnd > v, bytes[valueEnd - 1] == 0x3B { valueEnd -= 1 }
                    next = end
                }
            } else {
                if let semi = bytes[v..<end].firstIndex(of: 0x3B) { valueEnd = semi; next = semi + 1 } else { valueEnd = end; next = end }
            }
            let value = decode(bytes[v..<max(v, valueEnd)], charset: charset)
            if fields[key] == nil { order.append(key) }
            fields[key] = value
            i = next
        }
        return fields.isEmpty ? nil : finish(fields, order, audioByteOffset)
    }

    private static func finish(_ fields: [String: String], _ order: [String], _ offset: Int64) -> StreamMetadata {
        func find(_ name: String) -> String? {
            for k in order where k.lowercased() == name { return fields[k] }
            return nil
        }
        return StreamMetadata(title: find("streamtitle"), url: find("streamurl"), fields: fields, audioByteOffset: offset)
    }

    private static func isKeyByte(_ b: UInt8) -> Bool {
        (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || (b >= 0x30 && b <= 0x39) || b == 0x5F || b == 0x2D
    }

    private static func isKey(_ s: ArraySlice<UInt8>) -> Bool {
        var t = s
        while let f = t.first, f == 0x20 { t = t.dropFirst() }
        while let l = t.last, l == 0x20 { t = t.dropLast() }
        return !t.isEmpty && t.allSatisfy(isKeyByte)
    }

    /// True when `bytes[at...]` starts with `Key=`.
    private static func startsKey(_ bytes: [UInt8], _ at: Int, _ end: Int) -> Bool {
        var j = at
        while j < end, bytes[j] == 0x20 { j += 1 }
        let start = j
        while j < end, isKeyByte(bytes[j]) { j += 1 }
        return j > start && j < end && bytes[j] == 0x3D
    }

    /// Decodes bytes per `charset` (automatic: UTF-8 if valid, else Windows-1252/Latin-1).
    public static func decode<C: Collection<UInt8>>(_ bytes: C, charset: ICYCharset) -> String {
        switch charset {
        case .utf8:
            return String(decoding: bytes, as: UTF8.self)
        case .latin1:
            return String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
        case .windows1252:
            return windows1252(bytes)
        case .automatic:
            if let s = String(validating: bytes, as: UTF8.self) { return s }
            return windows1252(bytes)
        }
    }

    private static let cp1252High: [UInt32] = [
        0x20AC, 0x81, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0x8D, 0x017D, 0x8F,
        0x90, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x9D, 0x017E, 0x0178,
    ]

    private static func windows1252<C: Collection<UInt8>>(_ bytes: C) -> String {
        var scalars = String.UnicodeScalarView()
        for b in bytes {
            if b >= 0x80, b <= 0x9F, let s = Unicode.Scalar(cp1252High[Int(b) - 0x80]) {
                scalars.append(s)
            } else {
                scalars.append(Unicode.Scalar(b))
            }
        }
        return String(scalars)
    }
}

extension String {
    func trimmingBlanks() -> String {
        var s = Substring(self)
        while let f = s.first, f == " " { s = s.dropFirst() }
        while let l = s.last, l == " " { s = s.dropLast() }
        return String(s)
    }
}
