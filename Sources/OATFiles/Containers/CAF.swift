import OATCore

/// Core Audio Format files: `caff` header, then chunks with 64-bit big-endian sizes. `desc`
/// gives the format as an ASBD, `data` the audio (size -1: until the end of the input, as written
/// while streaming), `pakt` the packet table of variable-size formats, `kuki` the magic cookie,
/// `chan` the channel layout, `info` tags.
///
/// Variable-size packets need the packet table. When `pakt` follows `data` (as FFmpeg writes
/// it) the data is skipped, the table read, `isNotOptimized` set, and the reader seeks back:
/// ``seek(toPacket:_:)`` is exact from the table. MPEG audio without a preceding table is split
/// by its frame headers. Magic cookies: ALAC is normalised to the 36-byte `alac` atom form; for
/// AAC the AudioSpecificConfig is taken out of the ES_Descriptor; Opus and others are kept as
/// stored.
struct CAFParser: ContainerParser {
    static let component = "CAF parser"

    enum State: Equatable {
        case header
        case chunks
        case data(ChunkDataRegion)
    }


    var state = State.header
    var format: AudioStreamBasicDescription?
    var table: PacketTable?
    var dataStart: Int64?
    var dataSize: Int64?
    /// True when the data chunk was skipped to read a packet table after it.
    var dataSkipped = false
    /// The `mark`, `regn` and `strg` chunks read so far.
    var markerInfo = CAFMarkerInfo()

    init() {}

    var isVBR: Bool { format.map { $0.bytesPerPacket == 0 || $0.framesPerPacket == 0 } ?? false }
    var isMPEG: Bool {
        guard let id = format?.formatID else { return false }
        return id == .mpegLayer1 || id == .mpegLayer2 || id == .mpegLayer3
    }

    mutating func parse(_ input: UnsafeRawBufferPointer, at offset: Int64, isEOF: Bool, _ out: inout ParseOutput) throws -> ParseStatus {
        switch state {
        case .header:
            let (magic, version) = try readLeadingHeader(input, at: offset, isEOF: isEOF, component: Self.component, what: "CAF header", size: 8) { r throws(NeedMoreData) in
                let magic = try r.fourCC()
                let version = try r.u16be()
                _ = try r.u16be()
                return (magic, version)
            }
            guard magic == "caff" else { throw invalidData(Self.component, "not a CAF file (magic \(magic))", at: offset) }
            guard version == 1 else { throw unsupported(Self.component, "CAF version \(version) is not supported", at: offset + 4) }
            out.set(\.fileFormat, .caf, .fileFormat)
            state = .chunks
            return .consumed(8)
        case .chunks:
            return try parseChunk(input, at: offset, isEOF: isEOF, &out)
        case .data(var d):
            let status = try d.step(input, at: offset, isEOF: isEOF, &out, component: Self.component)
            if let status {
                state = .data(d)
                return status
            }
            // Data done. After a seek back to skipped data, everything else was already read.
            guard !dataSkipped, let start = dataStart, let size = dataSize else { return .finished }
            state = .chunks
            let next = start + size
            if offset < next { return .skip(next - offset) }
            return try parseChunk(input, at: offset, isEOF: isEOF, &out)
        }
    }

    private mutating func parseChunk(_ input: UnsafeRawBufferPointer, at offset: Int64, isEOF: Bool, _ out: inout ParseOutput) throws -> ParseStatus {
        do {
            return try parseChunkBody(input, at: offset, isEOF: isEOF, &out)
        } catch let need as NeedMoreData {
            guard isEOF else { throw need }
            if dataStart != nil { return .finished }
            if input.isEmpty { throw invalidData(Self.component, "the file ends before a data chunk", at: offset) }
            throw invalidData(Self.component, "the file ends inside a chunk (\(input.count) bytes of \(need.needed) present)", at: offset + Int64(input.count))
        }
    }

    private mutating func parseChunkBody(_ input: UnsafeRawBufferPointer, at offset: Int64, isEOF: Bool, _ out: inout ParseOutput) throws -> ParseStatus {
        var r = ByteReader(input, baseOffset: offset)
        let type = try r.fourCC()
        let size = Int64(bitPattern: try r.u64be())
        if size < 0 && !(type == "data" && size == -1) {
            throw invalidData(Self.component, "chunk '\(type)' has a negative size \(size)", at: offset + 4)
        }
        let (total, overflow) = size.addingReportingOverflow(12)
        if overflow { throw invalidData(Self.component, "chunk '\(type)' size \(size) is out of range", at: offset + 4) }
        switch type {
        case "desc":
            guard size >= 32 else { throw invalidData(Self.component, "desc chunk of \(size) bytes is too short", at: offset) }
            let rate = Double(bitPattern: try r.u64be())
            let formatID = AudioFormatCode(rawValue: try r.u32be())
            let flags = AudioFormatFlagSet(rawValue: try r.u32be())
            let bytesPerPacket = try r.u32be()
            let framesPerPacket = try r.u32be()
            let channels = try r.u32be()
            let bits = try r.u32be()
            if format != nil { return .skip(total) }
            guard rate.isFinite, rate > 0 else { throw invalidData(Self.component, "sample rate \(rate) is not a positive number", at: offset + 12) }
            guard channels > 0 else { throw invalidData(Self.component, "channel count is 0", at: offset + 36) }
            let asbd: AudioStreamBasicDescription
            if formatID == .linearPCM {
                // CAF flags: bit 0 float, bit 1 little-endian; integer samples are signed.
                guard bytesPerPacket > 0, bytesPerPacket % channels == 0, framesPerPacket == 1, bits > 0,
                      UInt64(bits) <= UInt64(bytesPerPacket / channels) * 8 else {
                    throw invalidData(Self.component, "invalid linear PCM description (\(bytesPerPacket) bytes, \(framesPerPacket) frames per packet, \(bits) bits, \(channels) channels)", at: offset + 12)
                }
                let isFloat = flags.rawValue & 1 != 0
                if isFloat && bits != 32 && bits != 64 {
                    throw unsupported(Self.component, "float PCM with \(bits) bits", at: offset + 12)
                }
                asbd = .linearPCM(sampleRate: rate, channels: channels, bitsPerChannel: bits, isFloat: isFloat,
                                  isBigEndian: flags.rawValue & 2 == 0, bytesPerSample: bytesPerPacket / channels)
            } else {
                let perFrame = framesPerPacket == 1 ? bytesPerPacket : 0
                asbd = AudioStreamBasicDescription(sampleRate: rate, formatID: formatID, formatFlags: flags,
                    bytesPerPacket: bytesPerPacket, framesPerPacket: framesPerPacket, bytesPerFrame: perFrame,
                    channelsPerFrame: channels, bitsPerChannel: bits)
            }
            format = asbd
            out.set(\.dataFormat, asbd, .dataFormat)
            return .skip(total)
        case "data":
            if dataStart != nil { return .skip(total) }
            guard let format else { throw invalidData(Self.component, "data chunk before the desc chunk", at: offset) }
            guard size == -1 || size >= 4 else { throw invalidData(Self.component, "data chunk of \(size) bytes has no edit count", at: offset) }
            _ = try r.u32be() // edit count
            let start = offset + 16
            let length: Int64? = size == -1 ? nil : size - 4
            if let length {
                // The end of the data must be representable (a size near 2^63 passes the chunk check).
                _ = try InputArithmetic(Self.component, at: offset).add(start, length, "end of the data chunk (size \(size))")
            }
            if let length { out.set(\.audioDataByteCount, length, .audioDataByteCount) }
            out.set(\.dataOffset, start, .dataOffset)
            let newState: ChunkDataRegion
            if !isVBR {
                if let length { out.set(\.audioDataPacketCount, length / Int64(format.bytesPerPacket), .audioDataPacketCount) }
                newState = .cbr(CBRDataRegion(bytesPerPacket: Int(format.bytesPerPacket), remaining: length))
            } else if let table {
                if let length, table.offsets[table.count] > length {
                    throw invalidData(Self.component, "the packet table describes \(table.offsets[table.count]) bytes but the data chunk holds \(length)", at: offset)
                }
                newState = .table(TablePacketReader(table: table, dataStart: start, next: 0))
            } else if isMPEG {
                newState = .mpeg(MPEGFrameSplitter(remaining: length))
            } else if let length {
                // The packet table follows the data: skip it and come back by seeking.
                if out.failsWhenNotOptimized {
                    throw notOptimized(Self.component, "the data chunk comes before its packet table: the file is not optimized for streaming", at: offset)
                }
                dataStart = start
                dataSize = length
                dataSkipped = true
                return .skip(total)
            } else {
                throw unsupported(Self.component, "variable-size packets of unknown total size and without a preceding packet table cannot be split", at: offset)
            }
            out.ready()
            dataStart = start
            dataSize = length
            state = .data(newState)
            return .consumed(16)
        case "pakt":
            guard let format else { throw invalidData(Self.component, "pakt chunk before the desc chunk", at: offset) }
            guard size >= 24 else { throw invalidData(Self.component, "pakt chunk of \(size) bytes is too short", at: offset) }
            guard size <= Int64(out.limits.maximumBufferedBytes) else {
                throw limitExceeded(Self.component, "pakt chunk of \(size) bytes exceeds the \(out.limits.maximumBufferedBytes)-byte limit", at: offset)
            }
            let body = try r.slice(Int(size))
            if table != nil || out.info.packetTableInfo != nil { return .skip(total) }
            let (info, parsed) = try parsePacketTable(body, format: format, at: offset + 12, limits: out.limits)
            if let parsed, let length = dataSize, parsed.offsets[parsed.count] > length {
                throw invalidData(Self.component, "the packet table describes \(parsed.offsets[parsed.count]) bytes but the data chunk holds \(length)", at: offset)
            }
            if let parsed {
                table = parsed
                out.set(\.audioDataPacketCount, Int64(parsed.count), .audioDataPacketCount)
                var largest = 0
                for i in 0..<parsed.count { largest = max(largest, parsed.size(i)) }
                out.set(\.maximumPacketSize, UInt32(clamping: largest), .maximumPacketSize)
            }
            out.set(\.packetTableInfo, info, .packetTableInfo)
            if dataSkipped {
                out.info.isNotOptimized = true
                out.ready()
            }
            return .skip(total)
        case "kuki":
            guard size <= Int64(out.limits.maximumBufferedBytes) else {
                throw limitExceeded(Self.component, "kuki chunk of \(size) bytes exceeds the limit", at: offset)
            }
            let raw = try r.array(Int(size))
            if out.info.magicCookie == nil {
                var cookie = raw
                switch format?.formatID {
                case .appleLossless?: cookie = normalizedALACCookie(raw)
                case .mpeg4AAC?, .mpeg4AAC_HE?, .mpeg4AAC_HE_V2?: cookie = audioSpecificConfig(fromESDS: raw) ?? raw
                default: break
                }
                out.set(\.magicCookie, cookie, .magicCookieData)
            }
            return .skip(total)
        case "chan":
            guard size >= 12, size <= 1 << 20 else { return .skip(total) }
            let body = try r.slice(Int(size))
            if let layout = decodeChannelLayout(body) { out.set(\.channelLayout, layout, .channelLayout) }
            return .skip(total)
        case "mark", "regn", "strg":
            guard size >= 4, size <= Int64(out.limits.maximumTagBytes) else { return .skip(total) }
            let body = try r.slice(Int(size))
            switch type {
            case "mark": markerInfo.readMarkers(body)
            case "regn": markerInfo.readRegions(body)
            default: markerInfo.readStrings(body)
            }
            out.info.markers = markerInfo.markers
            out.info.regions = markerInfo.regions
            return .skip(total)
        case "info":
            guard size >= 4, size <= Int64(out.limits.maximumTagBytes) else { return .skip(total) }
            let body = try r.slice(Int(size))
            let tags = parseInfo(body)
            if !tags.isEmpty { out.setTags(tags) }
            return .skip(total)
        default:
            if size == -1 { return .finished }
            return .skip(total)
        }
    }

    /// The `pakt` chunk: counts, priming, remainder, then one or two varints per packet.
    private func parsePacketTable(_ body: UnsafeRawBufferPointer, format: AudioStreamBasicDescription, at offset: Int64, limits: ParserLimits) throws -> (AudioFilePacketTableInfo, PacketTable?) {
        var r = ByteReader(body, baseOffset: offset)
        let packets = Int64(bitPattern: try r.u64be())
        let valid = Int64(bitPattern: try r.u64be())
        let priming = Int32(bitPattern: try r.u32be())
        let remainder = Int32(bitPattern: try r.u32be())
        guard packets >= 0, valid >= 0 else { throw invalidData(Self.component, "pakt counts are negative", at: offset) }
        let info = AudioFilePacketTableInfo(numberValidFrames: valid, primingFrames: priming, remainderFrames: remainder)
        guard isVBR else { return (info, nil) }
        guard packets <= Int64(limits.maximumTableEntries) else {
            throw limitExceeded(Self.component, "pakt lists \(packets) packets", at: offset)
        }
        let perPacket = (format.bytesPerPacket == 0 ? 1 : 0) + (format.framesPerPacket == 0 ? 1 : 0)
        guard packets * Int64(perPacket) <= Int64(r.remaining) else {
            throw invalidData(Self.component, "pakt lists \(packets) packets but holds only \(r.remaining) bytes of entries", at: offset)
        }
        var t = PacketTable()
        t.offsets.reserveCapacity(Int(packets) + 1)
        if format.framesPerPacket == 0 { t.frames.reserveCapacity(Int(packets)) }
        var position: Int64 = 0
        for i in 0..<Int(packets) {
            var size = Int64(format.bytesPerPacket)
            do {
                if format.bytesPerPacket == 0 {
                    guard let v = try readVarint(&r), v <= UInt64(limits.maximumPacketSize) else {
                        throw invalidData(Self.component, "pakt entry \(i) has an invalid packet size", at: r.absoluteOffset)
                    }
                    size = Int64(v)
                }
                if format.framesPerPacket == 0 {
                    guard let v = try readVarint(&r), v <= UInt64(UInt32.max) else {
                        throw invalidData(Self.component, "pakt entry \(i) has an invalid frame count", at: r.absoluteOffset)
                    }
                    t.frames.append(UInt32(v))
                }
            } catch is NeedMoreData {
                throw invalidData(Self.component, "pakt ends inside entry \(i) of \(packets)", at: offset + Int64(body.count))
            }
            position += size
            t.offsets.append(position)
        }
        if !t.frames.isEmpty {
            t.frameStarts.reserveCapacity(t.frames.count + 1)
            var frame: Int64 = 0
            t.frameStarts.append(0)
            for f in t.frames { frame += Int64(f); t.frameStarts.append(frame) }
        }
        return (info, t)
    }

    /// The `info` chunk: a count, then NUL-terminated key and value strings.
    private func parseInfo(_ body: UnsafeRawBufferPointer) -> [String: String] {
        var tags: [String: String] = [:]
        var pos = 4
        func next() -> String? {
            guard pos < body.count else { return nil }
            let end = body[pos...].firstIndex(of: 0) ?? body.count
            let s = decodeText(UnsafeRawBufferPointer(rebasing: body[pos..<end]))
            pos = end + 1
            return s
        }
        while let key = next(), let value = next() {
            if !key.isEmpty && !value.isEmpty { tags[key] = value }
        }
        return tags
    }

    // MARK: Seeking

    mutating func seek(toPacket packet: Int64, _ out: inout ParseOutput) throws(AudioError) -> AudioFileStreamSeekResult {
        guard isVBR, let table, let start = dataStart else {
            return try defaultSeek(toPacket: packet, out.info, component: Self.component)
        }
        guard packet >= 0, packet <= Int64(table.count) else {
            throw AudioError(.invalidArgument, component: Self.component, "packet \(packet) is outside 0...\(table.count)")
        }
        let rel = table.offsets[Int(packet)]
        return AudioFileStreamSeekResult(byteOffset: start + rel, dataByteOffset: rel, isEstimated: false, packetIndex: packet)
    }

    mutating func resume(at offset: Int64, packetIndex: Int64?, _ out: inout ParseOutput) {
        guard let format, let start = dataStart, offset >= start else { return }
        if let size = dataSize, offset >= start + size {
            state = .chunks
            return
        }
        let remaining = dataSize.map { $0 - (offset - start) }
        if isVBR, let table {
            var index: Int
            if let p = packetIndex, p >= 0, p <= Int64(table.count), table.offsets[Int(p)] == offset - start {
                index = Int(p)
            } else {
                // First packet starting at or after the offset.
                var lo = 0, hi = table.count
                let rel = offset - start
                while lo < hi {
                    let mid = (lo + hi) / 2
                    if table.offsets[mid] < rel { lo = mid + 1 } else { hi = mid }
                }
                index = lo
                out.nextPacketIndex = Int64(index)
            }
            state = .data(.table(TablePacketReader(table: table, dataStart: start, next: index)))
        } else if isVBR {
            state = .data(.mpeg(MPEGFrameSplitter(remaining: remaining)))
        } else {
            state = .data(.cbr(CBRDataRegion(bytesPerPacket: Int(format.bytesPerPacket), remaining: remaining)))
        }
    }

    func frame(forPacket packet: Int64) -> Int64? {
        guard let table, !table.frames.isEmpty, packet >= 0, packet <= Int64(table.count) else { return nil }
        return table.startFrame(Int(packet))
    }
}
