import OATCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Native FLAC: `fLaC`, metadata blocks (STREAMINFO, SEEKTABLE, VORBIS_COMMENT; others
/// skipped), then frames. Frames carry no length: a frame ends where the next valid frame
/// header begins (sync, legal fields and CRC-8 of the header, CRC-16 of the frame it closes).
/// Each frame is one packet whose frame count is the header's block size.
struct FLACParser: ContainerParser {
    static let component = "FLAC parser"

    enum Phase { case magic, metadata, frames }
    var phase = Phase.magic
    var streamInfo: FLACStreamInfo?
    var dataOffset: Int64 = 0
    var tags: [String: String] = [:]
    // SEEKTABLE points (placeholders dropped): sample number and byte offset after the metadata.
    var seekSamples: [UInt64] = []
    var seekOffsets: [UInt64] = []

    // Frame scan: the frame starting at `scanStart` has been searched for its end up to
    // `scanPos` (relative) without finding it; `scanCRC` is the CRC-16 of the bytes before
    // `scanCRCPos` (at most `scanPos`). A pure cache of the bytes.
    var scanStart: Int64 = -1
    var scanPos = 0
    var scanCRC: UInt16 = 0
    var scanCRCPos = 0

    /// False after a discontinuity until a valid frame header is found.
    var synced = true
    /// True for the first packet after a resume (its index is taken from the frame header).
    var reindex = false

    // Index of packets seen in order from the start: file offset and first sample.
    var packetOffsets: [Int64] = []
    var packetSamples: [Int64] = []
    /// The first frame's header has not been compared with STREAMINFO yet.
    var firstFrameChecked = false

    init() {}

    mutating func parse(_ input: UnsafeRawBufferPointer, at offset: Int64, isEOF: Bool, _ out: inout ParseOutput) throws -> ParseStatus {
        switch phase {
        case .magic:
            var r = ByteReader(input, baseOffset: offset)
            if isEOF && input.count < 4 {
                throw invalidData(Self.component, "the input ends inside the fLaC marker", at: offset)
            }
            guard try r.fourCC() == "fLaC" else { throw invalidData(Self.component, "missing fLaC marker", at: offset) }
            phase = .metadata
            return .consumed(4)
        case .metadata:
            return try metadataBlock(input, at: offset, isEOF: isEOF, &out)
        case .frames:
            return try frameStep(input, at: offset, isEOF: isEOF, &out)
        }
    }

    // MARK: Metadata

    private mutating func metadataBlock(_ input: UnsafeRawBufferPointer, at offset: Int64, isEOF: Bool, _ out: inout ParseOutput) throws -> ParseStatus {
        var r = ByteReader(input, baseOffset: offset)
        if isEOF && input.count < 4 {
            throw invalidData(Self.component, "the input ends inside a metadata block header", at: offset)
        }
        let head = try r.u8()
        let isLast = head & 0x80 != 0
        let type = head & 0x7F
        let length = Int(try r.u24be())
        let bodyOffset = offset + 4
        if streamInfo == nil && type != 0 {
            throw invalidData(Self.component, "first metadata block is type \(type), not STREAMINFO", at: offset)
        }
        var skipBody = false
        switch type {
        case 0:
            guard streamInfo == nil else { throw invalidData(Self.component, "second STREAMINFO block", at: offset) }
            guard length == 34 else { throw invalidData(Self.component, "STREAMINFO length \(length), expected 34", at: offset + 1) }
            let info = try FLACStreamInfo(try r.slice(34), at: bodyOffset)
            streamInfo = info
            out.set(\.fileFormat, .flac, .fileFormat)
            out.set(\.dataFormat, info.format, .dataFormat)
            out.set(\.magicCookie, info.body, .magicCookieData)
            if info.maxFrameSize > 0 { out.set(\.maximumPacketSize, info.maxFrameSize, .maximumPacketSize) }
        case 3:
            // A length that is not a multiple of 18 is a wrong block length: the whole points
            // are used and the frames are found by their sync code (as FFmpeg does).
            guard length / 18 <= out.limits.maximumTableEntries else {
                throw limitExceeded(Self.component, "SEEKTABLE has \(length / 18) points", at: offset)
            }
            let body = try r.slice(length)
            var samples: [UInt64] = [], offsets: [UInt64] = []
            var p = ByteReader(body, baseOffset: bodyOffset)
            for _ in 0..<(length / 18) {
                let sample = try p.u64be()
                let byte = try p.u64be()
                try p.skip(2)
                if sample == UInt64.max { continue }
                // Points must ascend; out-of-order points are ignored.
                if let last = samples.last, sample <= last { continue }
                samples.append(sample)
                offsets.append(byte)
            }
            seekSamples = samples
            seekOffsets = offsets
        case 4:
            if length <= out.limits.maximumTagBytes {
                let found = VorbisComment.parse(try r.slice(length))
                for (k, v) in found where tags[k] == nil { tags[k] = v }
            } else {
                skipBody = true
            }
        default:
            skipBody = true
        }
        if isLast {
            let start = bodyOffset + Int64(length)
            dataOffset = start
            if let info = streamInfo {
                var allTags = tags
                allTags[InfoKey.sourceBitDepth] = "I\(info.bitsPerSample)"
                out.setTags(allTags)
                out.set(\.dataOffset, start, .dataOffset)
                if info.totalSamples > 0 {
                    let table = AudioFilePacketTableInfo(numberValidFrames: Int64(info.totalSamples), primingFrames: 0, remainderFrames: 0)
                    out.set(\.packetTableInfo, table, .packetTableInfo)
                }
                out.ready()
            }
            phase = .frames
        }
        return skipBody ? .skip(4 + Int64(length)) : .consumed(4 + length)
    }

    /// The first frame's header wins over STREAMINFO where their channel counts differ (FFmpeg's
    /// decoder follows the frames too): the format and the cookie (patched to match) are reported
    /// again, before the first packet, so a decoder is made for what the frames hold.
    private mutating func checkFirstFrame(_ header: FLACFrameHeader, _ out: inout ParseOutput) {
        guard !firstFrameChecked else { return }
        firstFrameChecked = true
        guard var info = streamInfo, header.channels != info.channels, header.channels >= 1, header.channels <= 8,
              info.body.count > 12 else { return }
        info.channels = header.channels
        info.body[12] = (info.body[12] & 0xF1) | UInt8((header.channels - 1) << 1)
        streamInfo = info
        out.set(\.dataFormat, info.format, .dataFormat)
        out.set(\.magicCookie, info.body, .magicCookieData)
    }

    // MARK: Frames

    private mutating func frameStep(_ input: UnsafeRawBufferPointer, at offset: Int64, isEOF: Bool, _ out: inout ParseOutput) throws -> ParseStatus {
        guard let info = streamInfo else { return .finished }
        if isEOF && input.isEmpty { return .finished }
        if !synced, let status = resync(input, isEOF: isEOF) { return status }
        let header: FLACFrameHeader
        do throws(NeedMoreData) {
            guard let h = try FLACFrameHeader.parse(input, at: 0) else {
                synced = false
                return resync(input, isEOF: isEOF) ?? .needMore(1)
            }
            header = h
        } catch {
            if isEOF { return .finished } // a few trailing bytes that are not a frame
            return .needMore(error.needed)
        }
        // Find where this frame ends: the next valid header, with the CRC-16 of this frame zero.
        // Candidates are found by looking for the sync byte 0xFF; only at a candidate whose
        // header is valid (sync, legal fields, CRC-8) is the CRC-16 brought up to date (8 bytes
        // per step) and checked. Every boundary is thus verified exactly as a byte-by-byte scan
        // would: a frame whose CRC-16 fails at the next header is not cut there.
        let minimum = header.length + 3
        if scanStart != offset {
            scanStart = offset
            scanPos = minimum
            scanCRC = 0
            scanCRCPos = 0
        }
        let bound = min(header.sizeBound(streamBitsPerSample: info.bitsPerSample), out.limits.maximumPacketSize)
        let count = input.count
        var end = -1
        var pos = scanPos
        var crc = scanCRC
        var crcPos = scanCRCPos
        var needed = 0
        // Last candidate position: a header needs the byte after the sync byte.
        let last = min(count - 2, bound + 1)
        if let base = input.baseAddress {
            while pos <= last {
                guard let hit = memchr(base + pos, 0xFF, last - pos + 1) else { pos = last + 1; break }
                pos = UnsafeRawPointer(hit) - base
                if base.load(fromByteOffset: pos + 1, as: UInt8.self) & 0xFE == 0xF8 {
                    do throws(NeedMoreData) {
                        if try FLACFrameHeader.parse(input, at: pos) != nil {
                            crc = flacCRC16(UnsafeRawBufferPointer(rebasing: input[crcPos..<pos]), crc)
                            crcPos = pos
                            if crc == 0 { end = pos; break }
                        }
                    } catch {
                        needed = error.needed
                        break
                    }
                }
                pos += 1
            }
        }
        scanPos = pos
        scanCRC = crc
        scanCRCPos = crcPos
        if end < 0 {
            if pos > bound {
                throw invalidData(Self.component, "no valid frame follows the frame at \(offset) within \(bound) bytes", at: offset)
            }
            // Ask for a run of bytes at a time (a pure lookahead: the result does not depend on it).
            if !isEOF { return .needMore(max(needed, min(pos + 2 + 4096, bound + 2))) }
            // The last frame runs to the end of the input, or, when something other than audio
            // follows it, to the last place its CRC-16 checked (byte by byte: one frame, once).
            var whole: UInt16 = 0
            var lastZero = -1
            flacCRC16Table.withUnsafeBufferPointer { t in
                for p in 0..<count {
                    if whole == 0 && p >= minimum && p + 1 < count { lastZero = p }
                    whole = (whole << 8) ^ t[Int(UInt8(truncatingIfNeeded: whole >> 8) ^ input[p])]
                }
            }
            end = whole == 0 || lastZero < 0 ? count : lastZero
        }
        if reindex {
            reindex = false
            if info.isFixedBlockSize && !header.isVariable, header.number <= UInt64(Int64.max) {
                out.nextPacketIndex = Int64(header.number)
            }
        }
        let firstSample = header.firstSample(fixedBlockSize: info.isFixedBlockSize ? info.maxBlockSize : 0)
        if out.nextPacketIndex == Int64(packetOffsets.count), firstSample <= UInt64(Int64.max) {
            packetOffsets.append(offset)
            packetSamples.append(Int64(firstSample))
        }
        checkFirstFrame(header, &out)
        out.emitPacket(UnsafeRawBufferPointer(rebasing: input[0..<end]), fileOffset: offset, frames: header.blockSize)
        scanStart = -1
        return .consumed(end)
    }

    /// Looks for the next valid frame header (after a discontinuity or junk); nil when one
    /// starts the input.
    private mutating func resync(_ input: UnsafeRawBufferPointer, isEOF: Bool) -> ParseStatus? {
        var i = 0
        while i + 1 < input.count {
            if input[i] == 0xFF && input[i + 1] & 0xFE == 0xF8 {
                do throws(NeedMoreData) {
                    if try FLACFrameHeader.parse(input, at: i) != nil {
                        if i == 0 { synced = true; return nil }
                        return .consumed(i)
                    }
                } catch {
                    if isEOF { return input.isEmpty ? .finished : .consumed(input.count) }
                    if i > 0 { return .consumed(i) }
                    return .needMore(error.needed)
                }
            }
            i += 1
        }
        if isEOF { return input.isEmpty ? .finished : .consumed(input.count) }
        if i > 0 { return .consumed(i) }
        return .needMore(2)
    }

    // MARK: Seeking

    mutating func seek(toPacket packet: Int64, _ out: inout ParseOutput) throws(AudioError) -> AudioFileStreamSeekResult {
        guard packet >= 0 else {
            throw AudioError(.invalidArgument, component: Self.component, "packet \(packet) is negative")
        }
        guard let info = streamInfo, phase == .frames else {
            throw AudioError(.invalidState, component: Self.component, "cannot seek before the audio data is reached", osStatus: 0x6473_6F6E)
        }
        if packet < Int64(packetOffsets.count) {
            let at = packetOffsets[Int(packet)]
            return AudioFileStreamSeekResult(byteOffset: at, dataByteOffset: at - dataOffset, isEstimated: false, packetIndex: packet)
        }
        // Fixed block size: packet n starts at sample n * blocksize; the seektable is exact.
        if info.isFixedBlockSize, !seekSamples.isEmpty {
            let (target, overflow) = UInt64(packet).multipliedReportingOverflow(by: UInt64(info.maxBlockSize))
            if !overflow, let i = lastIndex(in: seekSamples, atMost: target) {
                let sample = seekSamples[i]
                let rel = seekOffsets[i]
                if sample % UInt64(info.maxBlockSize) == 0, rel <= UInt64(Int64.max / 2) {
                    let p = Int64(sample / UInt64(info.maxBlockSize))
                    // Prefer a packet already indexed when it is nearer.
                    if let known = packetOffsets.indices.last, Int64(known) > p {
                        return AudioFileStreamSeekResult(byteOffset: packetOffsets[known], dataByteOffset: packetOffsets[known] - dataOffset, isEstimated: false, packetIndex: Int64(known))
                    }
                    return AudioFileStreamSeekResult(byteOffset: dataOffset + Int64(rel), dataByteOffset: Int64(rel), isEstimated: false, packetIndex: p)
                }
            }
        }
        // Estimated from the average packet size.
        var average = out.packetsSeen > 0 ? Double(out.packetBytesSeen) / Double(out.packetsSeen) : 0
        if average <= 0, info.maxFrameSize > 0 { average = Double(info.minFrameSize + info.maxFrameSize) / 2 }
        guard average > 0 else {
            throw AudioError(.valueUnknown, component: Self.component, "no packet size known yet to estimate a seek offset")
        }
        let rel = Double(packet) * average
        guard rel < 9e18 else { throw AudioError(.invalidArgument, component: Self.component, "packet \(packet) is out of range") }
        let relative = Int64(rel)
        return AudioFileStreamSeekResult(byteOffset: dataOffset + relative, dataByteOffset: relative, isEstimated: true, packetIndex: packet)
    }

    mutating func resume(at offset: Int64, packetIndex: Int64?, _ out: inout ParseOutput) {
        scanStart = -1
        guard phase == .frames else { return }
        synced = false
        // After seek(toPacket:) the packets are numbered from the packet it returned (the
        // stream's contract); after a bare discontinuity, from the next frame header.
        reindex = packetIndex == nil
    }

    func frame(forPacket packet: Int64) -> Int64? {
        guard packet >= 0, packet < Int64(packetSamples.count) else { return nil }
        return packetSamples[Int(packet)]
    }
}

/// Index of the last element of the ascending `values` that is at most `target`.
func lastIndex(in values: [UInt64], atMost target: UInt64) -> Int? {
    var lo = 0, hi = values.count
    while lo < hi {
        let mid = (lo + hi) / 2
        if values[mid] <= target { lo = mid + 1 } else { hi = mid }
    }
    return lo > 0 ? lo - 1 : nil
}
