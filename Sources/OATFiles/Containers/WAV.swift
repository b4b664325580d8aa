import OATCore

/// RIFF WAVE files: `RIFF` (little-endian), `RIFX` (big-endian), `RF64`/`BW64` (64-bit sizes in a
/// `ds64` chunk). Chunks may come in any order before `data`; `fmt ` must precede `data`.
/// Supports PCM (8-64 bit, odd widths), IEEE float, A-law, mu-law, IMA and MS ADPCM, GSM 6.10,
/// MPEG Layer I/II/III (split into frames), WAVE_FORMAT_EXTENSIBLE, `LIST`/`INFO` and ID3 tags.
struct WAVParser: ContainerParser {
    static let component = "WAV parser"

    enum State: Equatable {
        case header
        case chunks
        case data(ChunkDataRegion)
    }


    var state = State.header
    var bigEndian = false
    var fileType = AudioFileType.wave
    var format: WAVFormat?
    /// 64-bit data size from `ds64`.
    var ds64DataSize: UInt64?
    /// Absolute offset of the first audio byte and the data size (nil: until the end of input).
    var dataStart: Int64?
    var dataSize: Int64?
    /// Where the chunk after `data` begins (including the pad byte), when the size is known.
    var afterData: Int64?
    /// The `cue ` and `LIST`/`adtl` chunks read so far (markers and regions).
    var cueInfo = WAVCueInfo()

    init() {}

    /// What the `fmt ` chunk says.
    struct WAVFormat: Equatable {
        var asbd: AudioStreamBasicDescription
        var cookie: [UInt8]?
        var layout: ChannelLayout?
        var isMPEG = false
    }

    mutating func parse(_ input: UnsafeRawBufferPointer, at offset: Int64, isEOF: Bool, _ out: inout ParseOutput) throws -> ParseStatus {
        switch state {
        case .header:
            return try parseHeader(input, at: offset, isEOF: isEOF, &out)
        case .chunks:
            return try parseChunk(input, at: offset, isEOF: isEOF, &out)
        case .data(var d):
            let status = try d.step(input, at: offset, isEOF: isEOF, &out, component: Self.component)
            if let status {
                state = .data(d)
                return status
            }
            // The data chunk is done: continue with the chunks after it (tags), never as audio.
            guard let next = afterData else { return .finished }
            state = .chunks
            if offset < next { return .skip(next - offset) }
            return try parseChunk(input, at: offset, isEOF: isEOF, &out)
        }
    }

    // MARK: Header and chunks

    private mutating func parseHeader(_ input: UnsafeRawBufferPointer, at offset: Int64, isEOF: Bool, _ out: inout ParseOutput) throws -> ParseStatus {
        let (magic, form) = try readLeadingHeader(input, at: offset, isEOF: isEOF, component: Self.component, what: "RIFF header", size: 12) { r throws(NeedMoreData) in
            let magic = try r.fourCC()
            _ = try r.u32le()
            return (magic, try r.fourCC())
        }
        let type: AudioFileType
        switch magic {
        case "RIFF": type = .wave
        case "RIFX": type = .wave; bigEndian = true
        case "RF64": type = .rf64
        case "BW64": type = .bw64
        default: throw invalidData(Self.component, "not a RIFF file (magic \(magic))", at: offset)
        }
        guard form == "WAVE" else { throw invalidData(Self.component, "RIFF form type is \(form), not WAVE", at: offset + 8) }
        fileType = type
        out.set(\.fileFormat, type, .fileFormat)
        state = .chunks
        return .consumed(12)
    }

    private func u16(_ r: inout ByteReader) throws(NeedMoreData) -> UInt16 { bigEndian ? try r.u16be() : try r.u16le() }
    private func u32(_ r: inout ByteReader) throws(NeedMoreData) -> UInt32 { bigEndian ? try r.u32be() : try r.u32le() }
    private func u64(_ r: inout ByteReader) throws(NeedMoreData) -> UInt64 { bigEndian ? try r.u64be() : try r.u64le() }

    private mutating func parseChunk(_ input: UnsafeRawBufferPointer, at offset: Int64, isEOF: Bool, _ out: inout ParseOutput) throws -> ParseStatus {
        do {
            return try parseChunkBody(input, at: offset, isEOF: isEOF, &out)
        } catch let need as NeedMoreData {
            guard isEOF else { throw need }
            // The input ends inside a chunk.
            if dataStart != nil || (input.isEmpty && format != nil) {
                return .finished // after the audio (or a header-only file): keep what we have
            }
            if input.isEmpty {
                throw invalidData(Self.component, "the file ends before a data chunk", at: offset)
            }
            throw invalidData(Self.component, "the file ends inside a chunk (\(input.count) bytes of \(need.needed) present)", at: offset + Int64(input.count))
        }
    }

    private mutating func parseChunkBody(_ input: UnsafeRawBufferPointer, at offset: Int64, isEOF: Bool, _ out: inout ParseOutput) throws -> ParseStatus {
        var r = ByteReader(input, baseOffset: offset)
        let id = try r.fourCC()
        let size32 = try u32(&r)
        let size = Int64(size32)
        let c = InputArithmetic(Self.component, at: offset)
        let total = 8 + size + (size & 1) // at most 2^32 + 8: cannot overflow
        switch id {
        case "data":
            if dataStart != nil { return .skip(total) } // a second data chunk: ignore
            guard let format else {
                throw invalidData(Self.component, "data chunk before the fmt chunk", at: offset)
            }
            var length: Int64?
            if size32 == 0xFFFF_FFFF {
                length = ds64DataSize.flatMap { $0 <= UInt64(Int64.max) ? Int64($0) : nil }
            } else if size32 == 0 {
                // Zero: an empty chunk when a chunk header follows, else written while streaming.
                if r.remaining >= 8 || isEOF {
                    if r.remaining == 0 { length = 0 }
                    else if r.remaining >= 8, FourCC(r.bytes[r.position], r.bytes[r.position + 1], r.bytes[r.position + 2], r.bytes[r.position + 3]).isPrintable { length = 0 }
                    else { length = nil }
                } else {
                    throw NeedMoreData(needed: 16)
                }
            } else {
                length = size
            }
            let start = try c.add(offset, 8, "data chunk offset")
            let asbd = format.asbd
            if let length {
                // ds64 can claim up to 2^64-1 bytes: the end of the data must be representable.
                _ = try c.add(start, try c.add(length, length & 1, "data chunk size"), "end of the data chunk (ds64 size \(length))")
                out.set(\.audioDataByteCount, length, .audioDataByteCount)
                if asbd.bytesPerPacket > 0 {
                    out.set(\.audioDataPacketCount, length / Int64(asbd.bytesPerPacket), .audioDataPacketCount)
                }
            }
            out.set(\.dataOffset, start, .dataOffset)
            out.ready()
            dataStart = start
            dataSize = length
            afterData = length.map { start + $0 + ($0 & 1) }
            state = .data(makeData(remaining: length))
            return .consumed(8)
        case "fmt ":
            guard size >= 14 else { throw invalidData(Self.component, "fmt chunk of \(size) bytes is too short", at: offset) }
            guard size <= 1 << 16 else { throw limitExceeded(Self.component, "fmt chunk of \(size) bytes", at: offset) }
            let body = try r.slice(Int(size))
            let parsed = try parseFormat(body, at: offset + 8)
            if format == nil {
                format = parsed
                out.set(\.dataFormat, parsed.asbd, .dataFormat)
                if let c = parsed.cookie { out.set(\.magicCookie, c, .magicCookieData) }
                if let l = parsed.layout { out.set(\.channelLayout, l, .channelLayout) }
            }
            return .skip(total)
        case "ds64":
            guard size >= 24 else { throw invalidData(Self.component, "ds64 chunk of \(size) bytes is too short", at: offset) }
            _ = try u64(&r)
            let dataSize64 = try u64(&r)
            ds64DataSize = dataSize64
            return .skip(total)
        case "LIST":
            guard size >= 4, size <= Int64(out.limits.maximumTagBytes) else { return .skip(total) }
            let body = try r.slice(Int(size))
            if body[0] == 0x49, body[1] == 0x4E, body[2] == 0x46, body[3] == 0x4F { // INFO
                let tags = parseInfoList(UnsafeRawBufferPointer(rebasing: body[4...]))
                if !tags.isEmpty { out.setTags(tags) }
            } else if body[0] == 0x61, body[1] == 0x64, body[2] == 0x74, body[3] == 0x6C { // adtl
                cueInfo.readAssociatedData(UnsafeRawBufferPointer(rebasing: body[4...]), bigEndian: bigEndian)
                out.info.markers = cueInfo.markers
                out.info.regions = cueInfo.regions
            }
            return .skip(total)
        case "cue ":
            guard size >= 4, size <= Int64(out.limits.maximumTagBytes) else { return .skip(total) }
            let body = try r.slice(Int(size))
            cueInfo.readCue(body, bigEndian: bigEndian)
            out.info.markers = cueInfo.markers
            out.info.regions = cueInfo.regions
            return .skip(total)
        case "id3 ", "ID3 ":
            guard size <= Int64(out.limits.maximumTagBytes) else { return .skip(total) }
            let body = try r.slice(Int(size))
            readID3Chunk(body, at: offset + 8, &out)
            return .skip(total)
        default:
            return .skip(total)
        }
    }

    private func makeData(remaining: Int64?) -> ChunkDataRegion {
        if format?.isMPEG == true { return .mpeg(MPEGFrameSplitter(remaining: remaining)) }
        return .cbr(CBRDataRegion(bytesPerPacket: Int(format?.asbd.bytesPerPacket ?? 1), remaining: remaining))
    }

    /// Items of a `LIST`/`INFO` chunk (after the `INFO` type).
    private func parseInfoList(_ body: UnsafeRawBufferPointer) -> [String: String] {
        var tags: [String: String] = [:]
        var r = ByteReader(body)
        while r.remaining >= 8 {
            guard let id = try? r.fourCC(), let size = try? u32(&r) else { break }
            let n = Int(min(Int64(size), Int64(r.remaining)))
            guard let text = try? r.string(n) else { break }
            if size & 1 == 1 && r.remaining > 0 { r.position += 1 }
            if let key = riffInfoKey(id), !text.isEmpty, tags[key] == nil { tags[key] = text }
        }
        return tags
    }

    // MARK: fmt

    private func parseFormat(_ body: UnsafeRawBufferPointer, at offset: Int64) throws -> WAVFormat {
        var r = ByteReader(body, baseOffset: offset)
        var tag = try u16(&r)
        let channels = UInt32(try u16(&r))
        let rate = try u32(&r)
        _ = try u32(&r) // byte rate
        let blockAlign = UInt32(try u16(&r))
        let bits = r.remaining >= 2 ? UInt32(try u16(&r)) : 8
        var extensionBytes: UnsafeRawBufferPointer?
        if r.remaining >= 2 {
            let cbSize = Int(try u16(&r))
            extensionBytes = try r.slice(min(cbSize, r.remaining))
        }
        guard channels > 0 else { throw invalidData(Self.component, "channel count is 0", at: offset + 2) }
        guard rate > 0 else { throw invalidData(Self.component, "sample rate is 0", at: offset + 4) }
        var validBits = bits
        var layout: ChannelLayout?
        if tag == 0xFFFE {
            guard let ext = extensionBytes, ext.count >= 22 else {
                throw invalidData(Self.component, "WAVE_FORMAT_EXTENSIBLE without its 22-byte extension", at: offset + 16)
            }
            var e = ByteReader(ext, baseOffset: offset + 18)
            let v = UInt32(try u16(&e))
            if v > 0 { validBits = v }
            let mask = try u32(&e)
            let guidData1 = try u32(&e)
            let suffix = try e.slice(12)
            // KSDATAFORMAT_SUBTYPE_* suffix; RIFX stores the GUID's 16-bit fields big-endian.
            let standard: [UInt8] = bigEndian
                ? [0x00, 0x00, 0x00, 0x10, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71]
                : [0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71]
            guard suffix.elementsEqual(standard), guidData1 <= 0xFFFF else {
                throw unsupported(Self.component, "WAVE_FORMAT_EXTENSIBLE sub-format GUID is not a known format", at: offset + 24)
            }
            tag = UInt16(guidData1)
            layout = channelLayout(fromMask: mask, channels: channels)
        }
        let sampleRate = Double(rate)
        var f: WAVFormat
        switch tag {
        case 1, 3:
            guard bits > 0, validBits > 0 else { throw invalidData(Self.component, "PCM with 0 bits per sample", at: offset + 14) }
            // Bytes per sample: from the block alignment when it is consistent, else from the bits.
            var sampleBytes = (bits + 7) / 8
            if blockAlign > 0, blockAlign % channels == 0, (blockAlign / channels) * 8 >= bits, blockAlign / channels <= 8 {
                sampleBytes = blockAlign / channels
            }
            let effectiveBits = min(validBits, bits)
            guard sampleBytes <= 8, effectiveBits <= sampleBytes * 8 else {
                throw unsupported(Self.component, "PCM with \(bits) bits per sample", at: offset + 14)
            }
            if tag == 3 {
                guard effectiveBits == 32 || effectiveBits == 64, sampleBytes * 8 == effectiveBits else {
                    throw unsupported(Self.component, "float PCM with \(bits) bits per sample", at: offset + 14)
                }
            }
            let asbd = AudioStreamBasicDescription.linearPCM(
                sampleRate: sampleRate, channels: channels, bitsPerChannel: effectiveBits, isFloat: tag == 3,
                isBigEndian: bigEndian, isSigned: sampleBytes > 1, bytesPerSample: sampleBytes)
            f = WAVFormat(asbd: asbd)
        case 6, 7:
            let asbd = AudioStreamBasicDescription(sampleRate: sampleRate, formatID: tag == 6 ? .alaw : .ulaw,
                bytesPerPacket: channels, framesPerPacket: 1, bytesPerFrame: channels, channelsPerFrame: channels, bitsPerChannel: 8)
            f = WAVFormat(asbd: asbd)
        case 0x11, 2, 0x31:
            guard blockAlign > 0 else { throw invalidData(Self.component, "ADPCM block alignment is 0", at: offset + 12) }
            var samplesPerBlock: UInt32 = 0
            if let ext = extensionBytes, ext.count >= 2 {
                var e = ByteReader(ext)
                samplesPerBlock = UInt32(try u16(&e))
            }
            if samplesPerBlock == 0 {
                switch tag {
                case 0x11: samplesPerBlock = blockAlign >= 4 * channels ? (blockAlign - 4 * channels) * 8 / (4 * channels) + 1 : 0
                case 2: samplesPerBlock = blockAlign >= 7 * channels ? (blockAlign - 7 * channels) * 2 / channels + 2 : 0
                default: samplesPerBlock = 320
                }
            }
            guard samplesPerBlock > 0 else { throw invalidData(Self.component, "ADPCM block of \(blockAlign) bytes holds no samples", at: offset + 12) }
            let id: AudioFormatCode = tag == 0x11 ? .dviIntelIMA : (tag == 2 ? .microsoftADPCM : AudioFormatCode(rawValue: 0x6D73_0031))
            let asbd = AudioStreamBasicDescription.compressed(id, sampleRate: sampleRate, channels: channels,
                framesPerPacket: samplesPerBlock, bytesPerPacket: blockAlign)
            f = WAVFormat(asbd: asbd)
            if tag == 2, let ext = extensionBytes { f.cookie = Array(ext) }
        case 0x50, 0x55:
            var layer = 3
            if tag == 0x50, let ext = extensionBytes, ext.count >= 2 {
                var e = ByteReader(ext)
                switch try u16(&e) { case 1: layer = 1; case 2: layer = 2; default: layer = 3 }
            }
            let fpp: UInt32 = layer == 1 ? 384 : (layer == 2 || rate >= 32000 ? 1152 : 576)
            let id: AudioFormatCode = layer == 1 ? .mpegLayer1 : (layer == 2 ? .mpegLayer2 : .mpegLayer3)
            f = WAVFormat(asbd: .compressed(id, sampleRate: sampleRate, channels: channels, framesPerPacket: fpp), isMPEG: true)
        default:
            throw unsupported(Self.component, "WAVE format tag 0x\(String(tag, radix: 16)) is not supported", at: offset)
        }
        f.layout = layout
        return f
    }

    // MARK: Seeking

    mutating func resume(at offset: Int64, packetIndex: Int64?, _ out: inout ParseOutput) {
        guard let start = dataStart, offset >= start else { return }
        let remaining = dataSize.map { max(0, $0 - (offset - start)) }
        if let end = dataSize.map({ start + $0 }), offset >= end {
            state = .chunks
            return
        }
        state = .data(makeData(remaining: remaining))
    }
}
