import OATCore

/// AIFF and AIFF-C files: a big-endian `FORM` of chunks; `COMM` gives the format, `SSND` holds the
/// samples. Supports AIFF integer PCM and the AIFC compression types NONE/twos, sowt, fl32/FL32,
/// fl64/FL64, ulaw/ULAW, alaw/ALAW, ima4, raw, in24, in32, 42ni, 23ni; text chunks, `ID3 ` and
/// `CHAN`. An `SSND` before `COMM` is skipped and reached again by seeking (`isNotOptimized`).
struct AIFFParser: ContainerParser {
    static let component = "AIFF parser"

    enum State: Equatable {
        case header
        case chunks
        case data(CBRDataRegion)
    }

    var state = State.header
    var isAIFC = false
    var format: AudioStreamBasicDescription?
    var frameCount: UInt32 = 0
    var dataStart: Int64?
    var dataSize: Int64?
    var afterData: Int64?
    /// True once packets of the data chunk have been set up for delivery.
    var deliveredData = false
    /// The `MARK` and `INST` chunks read so far (markers and loop regions).
    var markerInfo = AIFFMarkerInfo()

    init() {}

    mutating func parse(_ input: UnsafeRawBufferPointer, at offset: Int64, isEOF: Bool, _ out: inout ParseOutput) throws -> ParseStatus {
        switch state {
        case .header:
            let (magic, form) = try readLeadingHeader(input, at: offset, isEOF: isEOF, component: Self.component, what: "FORM header", size: 12) { r throws(NeedMoreData) in
                let magic = try r.fourCC()
                _ = try r.u32be()
                return (magic, try r.fourCC())
            }
            guard magic == "FORM" else { throw invalidData(Self.component, "not an IFF file (magic \(magic))", at: offset) }
            switch form {
            case "AIFF": isAIFC = false
            case "AIFC": isAIFC = true
            default: throw unsupported(Self.component, "IFF form type \(form) is not AIFF or AIFC", at: offset + 8)
            }
            out.set(\.fileFormat, isAIFC ? .aifc : .aiff, .fileFormat)
            state = .chunks
            return .consumed(12)
        case .chunks:
            return try parseChunk(input, at: offset, isEOF: isEOF, &out)
        case .data(var region):
            if let status = region.step(input, at: offset, isEOF: isEOF, &out) {
                state = .data(region)
                return status
            }
            guard let next = afterData else { return .finished }
            state = .chunks
            if offset < next { return .skip(next - offset) }
            return try parseChunk(input, at: offset, isEOF: isEOF, &out)
        }
    }

    private mutating func parseChunk(_ input: UnsafeRawBufferPointer, at offset: Int64, isEOF: Bool, _ out: inout ParseOutput) throws -> ParseStatus {
        do {
            return try parseChunkBody(input, at: offset, isEOF: isEOF, &out)
        } catch let need as NeedMoreData {
            guard isEOF else { throw need }
            if dataStart != nil || (input.isEmpty && format != nil) { return .finished }
            if input.isEmpty { throw invalidData(Self.component, "the file ends before a sound data (SSND) chunk", at: offset) }
            throw invalidData(Self.component, "the file ends inside a chunk (\(input.count) bytes of \(need.needed) present)", at: offset + Int64(input.count))
        }
    }

    private mutating func parseChunkBody(_ input: UnsafeRawBufferPointer, at offset: Int64, isEOF: Bool, _ out: inout ParseOutput) throws -> ParseStatus {
        var r = ByteReader(input, baseOffset: offset)
        let id = try r.fourCC()
        let size32 = try r.u32be()
        let size = Int64(size32)
        let total = 8 + size + (size & 1)
        switch id {
        case "COMM":
            guard size >= 18 else { throw invalidData(Self.component, "COMM chunk of \(size) bytes is too short", at: offset) }
            guard size <= 1 << 16 else { throw limitExceeded(Self.component, "COMM chunk of \(size) bytes", at: offset) }
            let body = try r.slice(Int(size))
            if format != nil { return .skip(total) }
            let (asbd, frames) = try parseCommon(body, at: offset + 8)
            format = asbd
            frameCount = frames
            out.set(\.dataFormat, asbd, .dataFormat)
            if let start = dataStart {
                // SSND came first and was skipped: the reader must seek back to it.
                reportCounts(&out, start: start)
                out.info.isNotOptimized = true
                out.ready()
            }
            return .skip(total)
        case "SSND":
            if dataStart != nil { return .skip(total) }
            let dataOffset = try r.u32be()
            _ = try r.u32be() // block size
            let start = offset + 16 + Int64(dataOffset)
            var length: Int64? = size32 == 0 || size32 == 0xFFFF_FFFF ? nil : size - 8 - Int64(dataOffset)
            if let l = length, l < 0 {
                throw invalidData(Self.component, "SSND data offset \(dataOffset) exceeds the chunk size \(size)", at: offset + 8)
            }
            if let format, frameCount > 0 {
                // The frame count bounds the samples (and says how many there are while streaming).
                let stated = try InputArithmetic(Self.component, at: offset).multiply(Int64(frameCount), Int64(format.bytesPerPacket), "COMM frame count × bytes per frame")
                length = min(length ?? stated, stated)
            }
            dataStart = start
            dataSize = length
            afterData = size32 == 0 || size32 == 0xFFFF_FFFF ? nil : offset + total
            guard let format else {
                if out.failsWhenNotOptimized {
                    throw notOptimized(Self.component, "the SSND chunk comes before COMM: the file is not optimized for streaming", at: offset)
                }
                // COMM comes later: skip the samples, reach them again by seeking.
                guard let next = afterData else {
                    throw unsupported(Self.component, "SSND of unknown size before COMM cannot be streamed", at: offset)
                }
                return .skip(next - offset)
            }
            reportCounts(&out, start: start)
            out.ready()
            state = .data(CBRDataRegion(bytesPerPacket: Int(format.bytesPerPacket), remaining: length))
            deliveredData = true
            return .skip(16 + Int64(dataOffset))
        case "NAME", "AUTH", "(c) ", "ANNO":
            guard size <= Int64(out.limits.maximumTagBytes) else { return .skip(total) }
            let text = try r.string(Int(size))
            let key: String
            switch id {
            case "NAME": key = InfoKey.title
            case "AUTH": key = InfoKey.artist
            case "(c) ": key = InfoKey.copyright
            default: key = InfoKey.comments
            }
            if !text.isEmpty && out.info.infoDictionary[key] == nil { out.setTags([key: text]) }
            return .skip(total)
        case "MARK", "INST":
            guard size >= 2, size <= Int64(out.limits.maximumTagBytes) else { return .skip(total) }
            let body = try r.slice(Int(size))
            if id == "MARK" { markerInfo.readMarkers(body) } else { markerInfo.readInstrument(body) }
            out.info.markers = markerInfo.marks
            out.info.regions = markerInfo.regions
            return .skip(total)
        case "ID3 ", "id3 ":
            guard size <= Int64(out.limits.maximumTagBytes) else { return .skip(total) }
            let body = try r.slice(Int(size))
            readID3Chunk(body, at: offset + 8, &out)
            return .skip(total)
        case "CHAN":
            guard size >= 12, size <= 1 << 20 else { return .skip(total) }
            let body = try r.slice(Int(size))
            if let layout = decodeChannelLayout(body) { out.set(\.channelLayout, layout, .channelLayout) }
            return .skip(total)
        default:
            return .skip(total)
        }
    }

    private func reportCounts(_ out: inout ParseOutput, start: Int64) {
        guard let format else { return }
        if let dataSize { out.set(\.audioDataByteCount, dataSize, .audioDataByteCount) }
        if frameCount > 0 || dataSize != nil {
            let packets = frameCount > 0 ? Int64(frameCount) : dataSize! / Int64(format.bytesPerPacket)
            out.set(\.audioDataPacketCount, packets, .audioDataPacketCount)
        }
        out.set(\.dataOffset, start, .dataOffset)
    }

    /// The `COMM` chunk: channels, frames, bits, 80-bit rate, and for AIFC the compression type.
    private func parseCommon(_ body: UnsafeRawBufferPointer, at offset: Int64) throws -> (AudioStreamBasicDescription, UInt32) {
        var r = ByteReader(body, baseOffset: offset)
        let channels = UInt32(try r.u16be())
        let frames = try r.u32be()
        let bits = UInt32(try r.u16be())
        let rateBytes = try r.array(10)
        var compression: FourCC = "NONE"
        if isAIFC {
            guard r.remaining >= 4 else { throw invalidData(Self.component, "AIFC COMM chunk has no compression type", at: offset + 18) }
            compression = try r.fourCC()
        }
        guard channels > 0 else { throw invalidData(Self.component, "channel count is 0", at: offset) }
        guard let rate = float80ToDouble(rateBytes), rate > 0, rate < 1e9 else {
            throw invalidData(Self.component, "sample rate is not a positive number", at: offset + 8)
        }
        func pcm(_ bits: UInt32, float: Bool = false, bigEndian: Bool = true, signed: Bool = true) throws -> AudioStreamBasicDescription {
            guard bits > 0, bits <= 64 else { throw unsupported(Self.component, "PCM with \(bits) bits per sample", at: offset + 6) }
            return .linearPCM(sampleRate: rate, channels: channels, bitsPerChannel: bits, isFloat: float, isBigEndian: bigEndian, isSigned: signed)
        }
        let asbd: AudioStreamBasicDescription
        switch compression {
        case "NONE", "twos": asbd = try pcm(bits)
        case "sowt": asbd = try pcm(bits, bigEndian: false)
        case "fl32", "FL32": asbd = try pcm(32, float: true)
        case "fl64", "FL64": asbd = try pcm(64, float: true)
        case "in24": asbd = try pcm(24)
        case "in32": asbd = try pcm(32)
        case "42ni": asbd = try pcm(24, bigEndian: false)
        case "23ni": asbd = try pcm(32, bigEndian: false)
        case "raw ": asbd = try pcm(8, signed: false)
        case "ulaw", "ULAW", "alaw", "ALAW":
            let id: AudioFormatCode = compression == "ulaw" || compression == "ULAW" ? .ulaw : .alaw
            asbd = AudioStreamBasicDescription(sampleRate: rate, formatID: id, bytesPerPacket: channels, framesPerPacket: 1,
                                               bytesPerFrame: channels, channelsPerFrame: channels, bitsPerChannel: 8)
        case "ima4":
            asbd = .compressed(.appleIMA4, sampleRate: rate, channels: channels, framesPerPacket: 64, bytesPerPacket: 34 * channels)
        default:
            throw unsupported(Self.component, "AIFC compression type '\(compression)' is not supported", at: offset + 18)
        }
        return (asbd, frames)
    }

    mutating func resume(at offset: Int64, packetIndex: Int64?, _ out: inout ParseOutput) {
        guard let start = dataStart, let format, offset >= start else { return }
        if let end = dataSize.map({ start + $0 }), offset >= end { state = .chunks; return }
        state = .data(CBRDataRegion(bytesPerPacket: Int(format.bytesPerPacket), remaining: dataSize.map { max(0, $0 - (offset - start)) }))
    }
}
