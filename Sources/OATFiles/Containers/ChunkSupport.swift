import OATCore

// Pieces shared by the chunked containers (WAV, AIFF, CAF): packet tables, an MPEG frame
// splitter for MPEG audio carried in WAV/CAF, channel layouts, cookies and tag chunks.

// MARK: - Packet table (CAF pakt)

/// A decoded table of variable-size packets: where each packet starts relative to the audio data
/// and, when frames vary, how many frames each holds.
struct PacketTable: Equatable {
    /// Start of packet `i` relative to the first audio byte; `offsets.count == count + 1`.
    var offsets: [Int64] = [0]
    /// Frames per packet, when the format's frames per packet is 0; else empty.
    var frames: [UInt32] = []

    var count: Int { offsets.count - 1 }

    func size(_ i: Int) -> Int { Int(offsets[i + 1] - offsets[i]) }

    /// Frame at which each packet starts, when frames vary (`count + 1` entries); else empty.
    var frameStarts: [Int64] = []

    /// Frame at which packet `i` starts (when frames vary).
    func startFrame(_ i: Int) -> Int64? {
        guard i >= 0, i < frameStarts.count else { return nil }
        return frameStarts[i]
    }
}

/// Reads a CAF-style variable-length integer (7 bits per byte, high bit = more follows).
func readVarint(_ r: inout ByteReader) throws(NeedMoreData) -> UInt64? {
    var value: UInt64 = 0
    for _ in 0..<10 {
        let b = try r.u8()
        if value > (UInt64.max >> 7) { return nil }
        value = value << 7 | UInt64(b & 0x7F)
        if b & 0x80 == 0 { return value }
    }
    return nil
}

/// Delivers packets described by a ``PacketTable`` from a contiguous data region.
struct TablePacketReader: Equatable {
    var table: PacketTable
    /// Absolute file offset of the first audio byte.
    let dataStart: Int64
    /// Next packet to deliver.
    var next: Int

    static let maximumStepBytes = 1 << 20

    var isDone: Bool { next >= table.count }

    /// One step: emits whole packets from `input` (which starts at the next packet).
    mutating func step(_ input: UnsafeRawBufferPointer, at offset: Int64, isEOF: Bool, _ out: inout ParseOutput, component: String) throws -> ParseStatus? {
        if next >= table.count { return nil }
        let expected = dataStart + table.offsets[next]
        if offset != expected {
            // Resumed somewhere else: skip forward to the packet, never backwards.
            if offset < expected { return .skip(expected - offset) }
            throw invalidData(component, "packet \(next) starts at \(expected), not at \(offset)", at: offset)
        }
        var used = 0
        var i = next
        let varFrames = !table.frames.isEmpty
        while i < table.count && used < Self.maximumStepBytes {
            let size = table.size(i)
            if size > input.count - used { break }
            out.emitPacket(UnsafeRawBufferPointer(rebasing: input[used..<(used + size)]), fileOffset: offset + Int64(used),
                           frames: varFrames ? table.frames[i] : 0)
            used += size
            i += 1
        }
        if used > 0 || i > next {
            next = i
            if used == 0 { return next >= table.count ? nil : .needMore(table.size(next)) }
            return .consumed(used)
        }
        if isEOF {
            // The input ends inside packet `next`: drop the fragment.
            next = table.count
            return input.isEmpty ? nil : .consumed(input.count)
        }
        return .needMore(table.size(next))
    }
}

// MARK: - MPEG audio frame splitter (MPEG in WAV / CAF)

/// Splits an MPEG-1/2/2.5 Layer I/II/III elementary stream into frames. Used for MPEG audio
/// carried in a WAV `data` chunk or a CAF without a usable packet table; free-format streams
/// (bitrate index 0) are not split.
struct MPEGFrameSplitter: Equatable {
    /// Bytes left in the region, or nil when it runs to the end of the input.
    var remaining: Int64?

    /// (frame length in bytes, frames per packet, sample rate, channels) of a frame header, or nil.
    static func frameInfo(_ b0: UInt8, _ b1: UInt8, _ b2: UInt8, _ b3: UInt8) -> (length: Int, samples: UInt32, rate: UInt32, channels: UInt32)? {
        guard let h = MPEGFrameHeader(UInt32(b0) << 24 | UInt32(b1) << 16 | UInt32(b2) << 8 | UInt32(b3)),
              let length = h.frameLength() else { return nil }
        return (length, UInt32(h.samplesPerFrame), UInt32(h.sampleRate), h.channels)
    }

    /// One step: emits whole frames. Returns nil when the region is done.
    mutating func step(_ input: UnsafeRawBufferPointer, at offset: Int64, isEOF: Bool, _ out: inout ParseOutput) -> ParseStatus? {
        if remaining == 0 { return nil }
        let limit = remaining.map { Int(min($0, Int64(CBRDataRegion.maximumStep))) } ?? CBRDataRegion.maximumStep
        let avail = min(input.count, limit)
        var used = 0
        while used + 4 <= avail {
            guard let info = Self.frameInfo(input[used], input[used + 1], input[used + 2], input[used + 3]) else {
                if used > 0 { break }
                // Not a frame header: resynchronise at the next 0xFF.
                var k = 1
                while k < avail && input[k] != 0xFF { k += 1 }
                if let r = remaining { remaining = r - Int64(k) }
                return .consumed(k)
            }
            if used + info.length > avail { break }
            out.emitPacket(UnsafeRawBufferPointer(rebasing: input[used..<(used + info.length)]), fileOffset: offset + Int64(used))
            used += info.length
        }
        if used > 0 {
            if let r = remaining { remaining = r - Int64(used) }
            return .consumed(used)
        }
        // Less than one frame at hand.
        let need: Int
        if avail >= 4, let info = Self.frameInfo(input[0], input[1], input[2], input[3]) { need = info.length } else { need = 4 }
        if let r = remaining, r < Int64(need) {
            remaining = 0 // the region ends inside a frame: drop the fragment
            return .skip(r)
        }
        if isEOF {
            remaining = 0
            return input.isEmpty ? nil : .consumed(input.count)
        }
        return .needMore(need)
    }
}

// MARK: - Channel layouts

/// Maps a WAVE channel mask / Core Audio channel bitmap to a layout: a tag for the common
/// masks, else the bitmap itself. Nil when the mask is 0 or does not match the channel count.
func channelLayout(fromMask mask: UInt32, channels: UInt32) -> ChannelLayout? {
    guard mask != 0, UInt32(mask.nonzeroBitCount) == channels else { return nil }
    let tag: ChannelLayoutTag?
    switch mask {
    case 0x4: tag = .mono
    case 0x3: tag = .stereo
    case 0xB: tag = .itu_2_1
    case 0x7: tag = .mpeg_3_0_A
    case 0x33: tag = .quadraphonic
    case 0x603: tag = .itu_2_2
    case 0x107: tag = .mpeg_4_0_A
    case 0x37, 0x607: tag = .mpeg_5_0_A
    case 0x3F, 0x60F: tag = .mpeg_5_1_A
    case 0x13F, 0x70F: tag = .mpeg_6_1_A
    case 0xFF: tag = .mpeg_7_1_A
    case 0x63F: tag = .mpeg_7_1_C
    default: tag = nil
    }
    if let tag { return ChannelLayout(tag: tag) }
    return ChannelLayout(tag: .useChannelBitmap, bitmap: AudioChannelBitmap(rawValue: mask))
}

/// Decodes a Core Audio channel layout as stored in CAF `chan` and AIFF `CHAN` chunks
/// (big-endian tag, bitmap, description count, then 20-byte descriptions). Nil when malformed.
func decodeChannelLayout(_ body: UnsafeRawBufferPointer) -> ChannelLayout? {
    var r = ByteReader(body)
    guard let tag = try? r.u32be(), let bitmap = try? r.u32be(), let count = try? r.u32be() else { return nil }
    let layoutTag = ChannelLayoutTag(rawValue: tag)
    switch layoutTag {
    case .useChannelDescriptions:
        guard count > 0, Int64(count) * 20 <= Int64(r.remaining) else { return nil }
        var labels: [ChannelLabel] = []
        labels.reserveCapacity(Int(count))
        for _ in 0..<count {
            guard let label = try? r.u32be(), (try? r.skip(16)) != nil else { return nil }
            labels.append(ChannelLabel(rawValue: label))
        }
        return ChannelLayout(tag: .useChannelDescriptions, channelLabels: labels)
    case .useChannelBitmap:
        guard bitmap != 0 else { return nil }
        return ChannelLayout(tag: .useChannelBitmap, bitmap: AudioChannelBitmap(rawValue: bitmap))
    default:
        return ChannelLayout(tag: layoutTag)
    }
}

// MARK: - Magic cookies

/// Normalises an ALAC cookie to the 36-byte form `00 00 00 24 'alac' 00 00 00 00` + the 24-byte
/// ALACSpecificConfig, from either the bare config or a wrapped (`frma`/`alac` atoms) form.
func normalizedALACCookie(_ c: [UInt8]) -> [UInt8] {
    let header: [UInt8] = [0, 0, 0, 0x24, 0x61, 0x6C, 0x61, 0x63, 0, 0, 0, 0]
    if c.count == 24 { return header + c }
    // Find an 'alac' atom of size 36 holding version/flags and the config.
    var i = 4
    while i + 32 <= c.count {
        if c[i] == 0x61, c[i + 1] == 0x6C, c[i + 2] == 0x61, c[i + 3] == 0x63,
           c[i - 4] == 0, c[i - 3] == 0, c[i - 2] == 0, c[i - 1] == 0x24 {
            return header + Array(c[(i + 8)..<(i + 32)])
        }
        i += 1
    }
    return c
}

/// Extracts the AudioSpecificConfig (DecoderSpecificInfo) from an MPEG-4 ES_Descriptor, also
/// when wrapped in an `esds` atom. Nil when not found.
func audioSpecificConfig(fromESDS c: [UInt8]) -> [UInt8]? {
    func length(_ c: [UInt8], _ i: inout Int) -> Int? {
        var n = 0
        for _ in 0..<4 {
            guard i < c.count else { return nil }
            let b = c[i]; i += 1
            n = n << 7 | Int(b & 0x7F)
            if b & 0x80 == 0 { return n }
        }
        return n
    }
    func find(_ start: Int) -> [UInt8]? {
        var i = start
        guard i < c.count, c[i] == 0x03 else { return nil }
        i += 1
        guard length(c, &i) != nil, i + 3 <= c.count else { return nil }
        let flags = c[i + 2]
        i += 3
        if flags & 0x80 != 0 { i += 2 }
        if flags & 0x40 != 0 { guard i < c.count else { return nil }; i += 1 + Int(c[i]) }
        if flags & 0x20 != 0 { i += 2 }
        guard i < c.count, c[i] == 0x04 else { return nil }
        i += 1
        guard length(c, &i) != nil else { return nil }
        i += 13
        guard i < c.count, c[i] == 0x05 else { return nil }
        i += 1
        guard let n = length(c, &i), n > 0, i + n <= c.count else { return nil }
        return Array(c[i..<(i + n)])
    }
    if let asc = find(0) { return asc }
    if let asc = find(4) { return asc } // version/flags first
    if c.count > 12, c[4] == 0x65, c[5] == 0x73, c[6] == 0x64, c[7] == 0x73 { return find(12) } // 'esds' atom
    return nil
}

// MARK: - Tags

/// Reads the ID3v2 tag held whole in `body` (an `id3 `/`ID3 ` chunk) into the info dictionary.
func readID3Chunk(_ body: UnsafeRawBufferPointer, at offset: Int64, _ out: inout ParseOutput) {
    guard body.count >= 10, let (w, headerSize) = try? ID3v2Walker.header(body, at: offset) else { return }
    var walker = w
    var pos = headerSize
    let end = Int(min(Int64(body.count), walker.tagEnd - offset))
    while !walker.done && pos < end {
        let slice = UnsafeRawBufferPointer(rebasing: body[pos..<end])
        guard let status = try? walker.step(slice, at: offset + Int64(pos), isEOF: true, &out) else { return }
        switch status {
        case .consumed(let n): pos += n
        case .skip(let n): pos += Int(min(n, Int64(end - pos)))
        case .needMore, .finished: return
        }
    }
}

/// Info-dictionary key of a RIFF `INFO` list item, or nil.
func riffInfoKey(_ id: FourCC) -> String? {
    switch id {
    case "INAM": InfoKey.title
    case "IART": InfoKey.artist
    case "IPRD": InfoKey.album
    case "ICMT": InfoKey.comments
    case "ICRD": InfoKey.year
    case "IGNR": InfoKey.genre
    case "ITRK", "IPRT": InfoKey.trackNumber
    case "ISFT": InfoKey.encodingApplication
    case "ICOP": InfoKey.copyright
    case "IMUS": InfoKey.composer
    default: nil
    }
}

// MARK: - Audio data regions

/// How a chunked container's audio data is delivered: constant-size packets, packets from a
/// packet table, or MPEG frames found by their headers. Shared by WAV and CAF.
enum ChunkDataRegion: Equatable {
    case cbr(CBRDataRegion)
    case table(TablePacketReader)
    case mpeg(MPEGFrameSplitter)

    /// One step of the region; nil when it is done.
    mutating func step(_ input: UnsafeRawBufferPointer, at offset: Int64, isEOF: Bool, _ out: inout ParseOutput, component: String) throws -> ParseStatus? {
        switch self {
        case .cbr(var region):
            defer { self = .cbr(region) }
            return region.step(input, at: offset, isEOF: isEOF, &out)
        case .table(var reader):
            defer { self = .table(reader) }
            return try reader.step(input, at: offset, isEOF: isEOF, &out, component: component)
        case .mpeg(var splitter):
            defer { self = .mpeg(splitter) }
            return splitter.step(input, at: offset, isEOF: isEOF, &out)
        }
    }
}
