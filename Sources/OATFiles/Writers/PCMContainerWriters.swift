import OATCore

/// RIFF WAVE: `RIFF`/`WAVE`, a 28-byte `JUNK` chunk kept for a `ds64`, `fmt `, `LIST`/`INFO`
/// tags, `data` last. Sizes are rewritten at every checkpoint; past the RF64 threshold the file
/// becomes `RF64` (the `JUNK` turns into `ds64`, the 32-bit sizes into 0xFFFFFFFF).
final class WAVWriter: ContainerWriter {
    private var junkOffset: Int64 = 12
    private var dataSizeOffset: Int64 = 0
    private var isRF64 = false

    override func start(_ c: WriterContext) throws(AudioError) {
        let f = c.format
        var b = ByteBuilder()
        b.ascii("RIFF"); b.u32le(0); b.ascii("WAVE")
        b.ascii("JUNK"); b.u32le(28); b.zeros(28)
        let channels = UInt16(f.channelsPerFrame)
        let sampleBytes = f.isPCM ? Int(f.bytesPerFrame / f.channelsPerFrame) : 1
        let bits = f.isPCM ? UInt16(f.bitsPerChannel) : 8
        let blockAlign = UInt16(f.bytesPerFrame)
        let rate = UInt32(f.sampleRate)
        var tag: UInt16 = f.formatID == .ulaw ? 7 : f.formatID == .alaw ? 6 : f.isFloat ? 3 : 1
        let extensible = f.isPCM && (channels > 2 || (sampleBytes * 8) > 16 && !f.isFloat || Int(bits) != sampleBytes * 8)
        if extensible { tag = 0xFFFE }
        b.ascii("fmt "); b.u32le(extensible ? 40 : tag == 1 ? 16 : 18)
        b.u16le(tag); b.u16le(channels); b.u32le(rate); b.u32le(rate * UInt32(blockAlign)); b.u16le(blockAlign)
        b.u16le(extensible ? UInt16(sampleBytes * 8) : bits)
        if extensible {
            b.u16le(22); b.u16le(bits)
            let masks: [UInt32] = [0x4, 0x3, 0x7, 0x33, 0x37, 0x3F, 0x13F, 0x63F]
            b.u32le(Int(channels) <= masks.count ? masks[Int(channels) - 1] : 0)
            b.u32le(f.isFloat ? 3 : 1); b.u16le(0); b.u16le(0x10)
            b.append([0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71])
        } else if tag != 1 {
            b.u16le(0)
        }
        let info: [(String, String)] = [("INAM", InfoKey.title), ("IART", InfoKey.artist), ("IPRD", InfoKey.album),
                                        ("ICRD", InfoKey.year), ("IGNR", InfoKey.genre), ("ICMT", InfoKey.comments), ("ITRK", InfoKey.trackNumber)]
        var list = ByteBuilder()
        for (id, key) in info {
            guard let v = c.tags[key] else { continue }
            var text = Array(v.utf8) + [0]
            list.ascii(id); list.u32le(UInt32(text.count))
            if text.count % 2 == 1 { text.append(0) }
            list.append(text)
        }
        if list.count > 0 {
            b.ascii("LIST"); b.u32le(UInt32(list.count + 4)); b.ascii("INFO"); b.append(list.bytes)
        }
        b.ascii("data"); b.u32le(0)
        dataSizeOffset = Int64(b.count - 4)
        if c.options.rf64Threshold <= 0 {
            // RF64 from the start: the JUNK is the ds64 (sizes 0 until the first checkpoint).
            isRF64 = true
            b.bytes.replaceSubrange(0..<4, with: Array("RF64".utf8))
            b.bytes.replaceSubrange(4..<8, with: [UInt8].le32(0xFFFF_FFFF))
            b.bytes.replaceSubrange(Int(junkOffset)..<Int(junkOffset + 4), with: Array("ds64".utf8))
            b.bytes.replaceSubrange(Int(dataSizeOffset)..<Int(dataSizeOffset + 4), with: [UInt8].le32(0xFFFF_FFFF))
        }
        try c.sink.append(b.bytes)
    }

    override func checkpoint(_ c: WriterContext) throws(AudioError) {
        let dataStart = dataSizeOffset + 4
        let riffSize = dataStart - 8 + c.dataBytes + (c.dataBytes & 1)
        if !isRF64 && riffSize + 8 > c.options.rf64Threshold {
            isRF64 = true
            try c.sink.write(Array("RF64".utf8), at: 0)
            try c.sink.write(Array("ds64".utf8), at: junkOffset)
        }
        if isRF64 {
            var ds = ByteBuilder()
            ds.u64le(UInt64(riffSize)); ds.u64le(UInt64(c.dataBytes)); ds.u64le(UInt64(c.frameCount)); ds.u32le(0)
            try c.sink.write(ds.bytes, at: junkOffset + 8)
            try c.sink.write(.le32(0xFFFF_FFFF), at: 4)
            try c.sink.write(.le32(0xFFFF_FFFF), at: dataSizeOffset)
        } else {
            try c.sink.write(.le32(UInt32(riffSize)), at: 4)
            try c.sink.write(.le32(UInt32(c.dataBytes)), at: dataSizeOffset)
        }
    }

    override func finish(_ c: WriterContext) throws(AudioError) {
        if c.dataBytes & 1 == 1 { try c.sink.write([0], at: dataSizeOffset + 4 + c.dataBytes) }
        try checkpoint(c)
    }
}

/// The 80-bit IEEE extended float of AIFF's COMM sample rate.
func extended80(_ value: Double) -> [UInt8] {
    guard value > 0 else { return [UInt8](repeating: 0, count: 10) }
    var exponent = 16383 + 63
    var mantissa = value
    while mantissa < 9_223_372_036_854_775_808.0 { mantissa *= 2; exponent -= 1 }
    while mantissa >= 18_446_744_073_709_551_616.0 { mantissa /= 2; exponent += 1 }
    let m = UInt64(mantissa)
    var b = ByteBuilder()
    b.u16be(UInt16(exponent)); b.u64be(m)
    return b.bytes
}

/// AIFF and AIFF-C: `FORM`, (`FVER`), `COMM`, `NAME`/`AUTH`/`ANNO`, `SSND` last; sizes and the
/// frame count rewritten at every checkpoint.
final class AIFFWriter: ContainerWriter {
    let compressed: Bool
    private var framesOffset: Int64 = 0
    private var ssndSizeOffset: Int64 = 0
    init(compressed: Bool) { self.compressed = compressed }

    override func start(_ c: WriterContext) throws(AudioError) {
        let f = c.format
        var b = ByteBuilder()
        b.ascii("FORM"); b.u32be(0); b.ascii(compressed ? "AIFC" : "AIFF")
        if compressed { b.ascii("FVER"); b.u32be(4); b.u32be(0xA280_5140) }
        var comm = ByteBuilder()
        comm.u16be(UInt16(f.channelsPerFrame))
        framesOffset = Int64(b.count + 8 + 2)
        comm.u32be(0)
        comm.u16be(UInt16(f.isPCM ? f.bitsPerChannel : 16))
        comm.append(extended80(f.sampleRate))
        if compressed {
            let (type, name): (String, String) = switch f.formatID {
            case .ulaw: ("ulaw", "\u{b5}Law 2:1")
            case .alaw: ("alaw", "ALaw 2:1")
            default: f.isFloat ? (f.bitsPerChannel == 64 ? ("fl64", "64-bit floating point") : ("fl32", "32-bit floating point"))
                : (f.isBigEndian || f.bitsPerChannel == 8 ? ("NONE", "not compressed") : ("sowt", ""))
            }
            comm.ascii(type)
            let text = Array(name.utf8.prefix(254))
            comm.u8(UInt8(text.count)); comm.append(text)
            if (text.count + 1) % 2 == 1 { comm.u8(0) }
        }
        b.ascii("COMM"); b.u32be(UInt32(comm.count)); b.append(comm.bytes)
        for (id, key) in [("NAME", InfoKey.title), ("AUTH", InfoKey.artist), ("ANNO", InfoKey.comments)] {
            guard let v = c.tags[key] else { continue }
            var text = Array(v.utf8)
            b.ascii(id); b.u32be(UInt32(text.count))
            if text.count % 2 == 1 { text.append(0) }
            b.append(text)
        }
        b.ascii("SSND")
        ssndSizeOffset = Int64(b.count)
        b.u32be(8); b.u32be(0); b.u32be(0)
        try c.sink.append(b.bytes)
    }

    override func checkpoint(_ c: WriterContext) throws(AudioError) {
        let formSize = ssndSizeOffset + 4 + 8 + c.dataBytes + (c.dataBytes & 1) - 8
        try c.sink.write(.be32(UInt32(truncatingIfNeeded: formSize)), at: 4)
        try c.sink.write(.be32(UInt32(truncatingIfNeeded: c.frameCount)), at: framesOffset)
        try c.sink.write(.be32(UInt32(truncatingIfNeeded: 8 + c.dataBytes)), at: ssndSizeOffset)
    }

    override func finish(_ c: WriterContext) throws(AudioError) {
        guard c.dataBytes + 64 < 0xFFFF_FFFF else {
            throw AudioError(.limitExceeded, component: "AudioFileWriter", "AIFF files hold at most 4 GiB of audio")
        }
        if c.dataBytes & 1 == 1 { try c.sink.write([0], at: ssndSizeOffset + 12 + c.dataBytes) }
        try checkpoint(c)
    }
}

/// CAF: `caff`, `desc`, `chan`-less, `kuki`, `info`, `data` with size -1 while writing (so a
/// cut file reads to its end), fixed at close; `pakt` after the data for compressed formats.
///
/// With ``AudioFileWriterOptions/crashSafe`` and variable-size packets, a `pakt` chunk of a fixed
/// reserved size (``AudioFileWriterOptions/packetTableReserveSeconds`` of packets) comes before
/// `data`; every checkpoint appends the new entries into it, then rewrites its 24-byte header
/// (counts) in one write, then the data chunk's size, so a killed writer leaves a table and a
/// data size that match the data up to the last checkpoint (readers ignore the unused zero bytes
/// after the entries, and what follows the sized data chunk). FFmpeg needs the size: with an
/// unknown (-1) data size it refuses packets over 4096 bytes, which ALAC has. If the entries outgrow
/// the reservation, close() writes the table after the data and renames the reserved chunk
/// `free`.
final class CAFWriter: ContainerWriter {
    private var dataSizeOffset: Int64 = 0
    private var reservedPaktOffset: Int64 = -1
    private var reservedPaktBody = 0
    private var reservedEntries: [UInt8] = []
    private var reservedPackets = 0
    private var reservedWritten = 0
    private var reserveOverflowed = false

    private func variablePackets(_ f: AudioStreamBasicDescription) -> Bool {
        !f.isPCM && (f.bytesPerPacket == 0 || f.framesPerPacket == 0)
    }

    override func start(_ c: WriterContext) throws(AudioError) {
        let f = c.format
        var b = ByteBuilder()
        b.ascii("caff"); b.u16be(1); b.u16be(0)
        b.ascii("desc"); b.u64be(32)
                // CAF's linear PCM flags: bit 0 float, bit 1 little-endian (not Core Audio's flag bits).
        let flags = f.isPCM ? (f.isFloat ? 1 : 0) | (f.isBigEndian || f.bitsPerChannel <= 8 ? 0 : 2) : f.formatFlags.rawValue
        b.u64be(f.sampleRate.bitPattern); b.u32be(f.formatID.rawValue); b.u32be(flags)
        b.u32be(f.bytesPerPacket); b.u32be(f.framesPerPacket); b.u32be(f.channelsPerFrame); b.u32be(f.bitsPerChannel)
        if let cookie = c.cookie, !cookie.isEmpty {
            var k = cookie
            if f.formatID == .mpeg4AAC { k = esdsDescriptor(asc: cookie, bitRate: 0) }
            if f.formatID == .appleLossless, cookie.count == 36 { k = Array(cookie[12...]) }
            b.ascii("kuki"); b.u64be(UInt64(k.count)); b.append(k)
        }
        let keys = [InfoKey.title, InfoKey.artist, InfoKey.album, InfoKey.year, InfoKey.genre, InfoKey.comments, InfoKey.trackNumber, InfoKey.composer]
        let present = keys.filter { c.tags[$0] != nil }
        if !present.isEmpty {
            var info = ByteBuilder()
            info.u32be(UInt32(present.count))
            for k in present { info.ascii(k); info.u8(0); info.ascii(c.tags[k]!); info.u8(0) }
            b.ascii("info"); b.u64be(UInt64(info.count)); b.append(info.bytes)
        }
        if c.options.crashSafe && variablePackets(f) {
            let framesPerPacket = Double(f.framesPerPacket > 0 ? f.framesPerPacket : 1024)
            let packets = Int((max(1, c.options.packetTableReserveSeconds) * f.sampleRate / framesPerPacket).rounded(.up))
            let entryBytes = (f.bytesPerPacket == 0 ? (f.formatID == .mpeg4AAC || f.formatID == .mpegLayer3 ? 2 : 3) : 0)
                + (f.framesPerPacket == 0 ? 3 : 0)
            reservedPaktBody = 24 + min(packets * entryBytes, 64 << 20)
            reservedPaktOffset = Int64(b.count)
            b.ascii("pakt"); b.u64be(UInt64(reservedPaktBody))
            b.u64be(0); b.u64be(0); b.u32be(UInt32(bitPattern: Int32(c.primingFrames))); b.u32be(0)
            b.zeros(reservedPaktBody - 24)
        }
        b.ascii("data")
        dataSizeOffset = Int64(b.count)
        b.u64be(UInt64.max); b.u32be(0)
        try c.sink.append(b.bytes)
    }

    /// Appends the new entries to the reserved table, then its counts (crash-safe mode).
    override func checkpoint(_ c: WriterContext) throws(AudioError) {
        guard reservedPaktOffset >= 0, !reserveOverflowed else { return }
        while reservedPackets < c.packetSizes.count {
            let i = reservedPackets
            if c.format.bytesPerPacket == 0 { reservedEntries.append(contentsOf: varint(UInt64(c.packetSizes[i]))) }
            if c.format.framesPerPacket == 0 { reservedEntries.append(contentsOf: varint(UInt64(c.packetFrames[i]))) }
            reservedPackets += 1
        }
        guard 24 + reservedEntries.count <= reservedPaktBody else {
            reserveOverflowed = true
            return
        }
        let bodyStart = reservedPaktOffset + 12
        if reservedEntries.count > reservedWritten {
            try c.sink.write(Array(reservedEntries[reservedWritten...]), at: bodyStart + 24 + Int64(reservedWritten))
            reservedWritten = reservedEntries.count
        }
        var h = ByteBuilder()
        let valid = max(0, c.frameCount - c.primingFrames)
        h.u64be(UInt64(reservedPackets)); h.u64be(UInt64(valid))
        h.u32be(UInt32(bitPattern: Int32(c.primingFrames))); h.u32be(0)
        try c.sink.write(h.bytes, at: bodyStart)
        // The data size too: FFmpeg reads packets over 4 KB (ALAC) only from a sized data chunk.
        try c.sink.write(.be64(UInt64(c.dataBytes + 4)), at: dataSizeOffset)
    }

    override func finish(_ c: WriterContext) throws(AudioError) {
        let dataEnd = dataSizeOffset + 12 + c.dataBytes
        if reservedPaktOffset >= 0 {
            try checkpoint(c)
            if !reserveOverflowed {
                var h = ByteBuilder()
                h.u64be(UInt64(c.packetCount)); h.u64be(UInt64(c.validFrames))
                h.u32be(UInt32(bitPattern: Int32(c.primingFrames))); h.u32be(UInt32(bitPattern: Int32(c.remainderFrames)))
                try c.sink.write(h.bytes, at: reservedPaktOffset + 12)
                try c.sink.write(.be64(UInt64(c.dataBytes + 4)), at: dataSizeOffset)
                return
            }
            try c.sink.write(Array("free".utf8), at: reservedPaktOffset)
        }
        if !c.format.isPCM && (c.format.bytesPerPacket == 0 || c.format.framesPerPacket == 0 || c.packetTableInfo != nil) {
            var p = ByteBuilder()
            p.u64be(UInt64(c.packetCount)); p.u64be(UInt64(c.validFrames))
            p.u32be(UInt32(bitPattern: Int32(c.primingFrames))); p.u32be(UInt32(bitPattern: Int32(c.remainderFrames)))
            for i in 0..<c.packetSizes.count {
                if c.format.bytesPerPacket == 0 { p.append(varint(UInt64(c.packetSizes[i]))) }
                if c.format.framesPerPacket == 0 { p.append(varint(UInt64(c.packetFrames[i]))) }
            }
            var h = ByteBuilder()
            h.ascii("pakt"); h.u64be(UInt64(p.count))
            try c.sink.write(h.bytes + p.bytes, at: dataEnd)
        }
        try c.sink.write(.be64(UInt64(c.dataBytes + 4)), at: dataSizeOffset)
    }

    private func varint(_ v: UInt64) -> [UInt8] {
        var groups: [UInt8] = [UInt8(v & 0x7F)]
        var rest = v >> 7
        while rest > 0 { groups.append(UInt8(rest & 0x7F) | 0x80); rest >>= 7 }
        return groups.reversed()
    }
}

/// An MPEG-4 ES_Descriptor holding an AudioSpecificConfig (the body of an `esds` box after its
/// version and flags; Apple's CAF cookie for AAC).
func esdsDescriptor(asc: [UInt8], bitRate: UInt32) -> [UInt8] {
    func descriptor(_ tag: UInt8, _ body: [UInt8]) -> [UInt8] {
        let n = UInt32(body.count)
        return [tag, UInt8(0x80 | (n >> 21) & 0x7F), UInt8(0x80 | (n >> 14) & 0x7F), UInt8(0x80 | (n >> 7) & 0x7F), UInt8(n & 0x7F)] + body
    }
    var config = ByteBuilder()
    config.u8(0x40); config.u8(0x15); config.u24be(0); config.u32be(bitRate); config.u32be(bitRate)
    let decoderConfig = descriptor(4, config.bytes + descriptor(5, asc))
    return descriptor(3, [0, 0, 0] + decoderConfig + descriptor(6, [2]))
}
