import OATCore

/// Ogg: pages (`OggS`, CRC-32 checked; a bad page is skipped and the parser resynchronises on
/// the next `OggS`), packets reassembled across pages, the first logical stream with a known
/// codec (Vorbis, Opus, FLAC) chosen. Chained streams (a new BOS page after EOS) report the new
/// format and continue. Priming and remainder come from the granule positions.
struct OggParser: ContainerParser {
    static let component = "Ogg parser"

    enum Codec: Equatable { case vorbis, opus, flac }

    /// The logical stream being delivered (one link of a chain).
    struct Link {
        var serial: UInt32
        var codec: Codec
        var format: AudioStreamBasicDescription
        /// Header packets seen so far (the id header included).
        var headerPackets: [[UInt8]] = []
        /// Header packets expected (nil: until the first audio packet, FLAC with count 0).
        var headerCount: Int?
        var isReady = false
        var tags: [String: String] = [:]
        var cookie: [UInt8] = []
        var bitRate: UInt32?
        // Vorbis
        var blockSizes: (UInt32, UInt32) = (0, 0)
        var modeLong: [Bool] = []
        var modeBits = 0
        var previousBlock: UInt32 = 0
        // Opus
        var preSkip: Int64 = 0
        // Granule bookkeeping (from the start of the link only).
        var tracksTotals = true
        var framesTotal: Int64 = 0
        var granuleStart: Int64?
        var lastGranule: Int64?
        var ended = false
    }

    var link: Link?
    var linkCount = 0
    var partial: [UInt8] = []
    var hasPartial = false
    /// True while a packet too big to keep is being dropped.
    var dropping = false
    var lastSequence: UInt32?

    /// Seek index: pages of the first link that begin a packet, and the packet they begin.
    struct PageEntry { var offset: Int64; var packet: Int64; var previousBlock: UInt32 }
    var index: [PageEntry] = []
    var sequential = true
    var dataOffset: Int64?
    /// Pages skipped for a bad CRC (for the error when nothing usable is found).
    var badPages = 0
    /// The first logical stream whose codec we do not read (name and offset), for the error
    /// when no stream is usable.
    var unknownStream: (name: String, offset: Int64)?
    var firstBadPage: Int64 = 0

    init() {}

    mutating func parse(_ input: UnsafeRawBufferPointer, at offset: Int64, isEOF: Bool, _ out: inout ParseOutput) throws -> ParseStatus {
        let count = input.count
        if count < 4 {
            if isEOF { try finishInput(at: offset, &out); return .finished }
            return .needMore(4)
        }
        guard input[0] == 0x4F, input[1] == 0x67, input[2] == 0x67, input[3] == 0x53 else {
            return .consumed(Self.distanceToCapture(input))
        }
        // A whole page: 27-byte header, lacing table, body.
        if count < 27 {
            if isEOF { return .consumed(1) }
            return .needMore(27)
        }
        guard input[4] == 0 else { return .consumed(1) } // version 0 only
        let segments = Int(input[26])
        if count < 27 + segments {
            if isEOF { return .consumed(1) }
            return .needMore(27 + segments)
        }
        var bodyLength = 0
        for i in 0..<segments { bodyLength += Int(input[27 + i]) }
        let pageLength = 27 + segments + bodyLength
        if count < pageLength {
            if isEOF { return .consumed(1) } // cut off: look for a later page
            return .needMore(pageLength)
        }
        let page = UnsafeRawBufferPointer(rebasing: input[0..<pageLength])
        var crc = oggCRC32(UnsafeRawBufferPointer(rebasing: page[0..<22]))
        let zeros: (UInt32) = 0
        crc = withUnsafeBytes(of: zeros) { oggCRC32($0, crc) }
        crc = oggCRC32(UnsafeRawBufferPointer(rebasing: page[26...]), crc)
        let stored = UInt32(page[22]) | UInt32(page[23]) << 8 | UInt32(page[24]) << 16 | UInt32(page[25]) << 24
        guard crc == stored else {
            // Bad CRC: resynchronise on the next OggS.
            if badPages == 0 { firstBadPage = offset }
            badPages += 1
            return .consumed(1)
        }
        try handlePage(page, segments: segments, at: offset, &out)
        return .consumed(pageLength)
    }

    /// Bytes to drop before the next possible `OggS` (keeps a tail that may begin one).
    static func distanceToCapture(_ b: UnsafeRawBufferPointer) -> Int {
        var i = 1
        while i + 3 < b.count {
            if b[i] == 0x4F && b[i + 1] == 0x67 && b[i + 2] == 0x67 && b[i + 3] == 0x53 { return i }
            i += 1
        }
        return max(1, b.count - 3)
    }

    // MARK: Pages

    private mutating func handlePage(_ page: UnsafeRawBufferPointer, segments: Int, at offset: Int64, _ out: inout ParseOutput) throws {
        let flags = page[5]
        let continued = flags & 1 != 0, bos = flags & 2 != 0, eos = flags & 4 != 0
        var granuleBits: UInt64 = 0
        for i in (6..<14).reversed() { granuleBits = granuleBits << 8 | UInt64(page[i]) }
        let granule = Int64(bitPattern: granuleBits)
        var serial: UInt32 = 0
        for i in (14..<18).reversed() { serial = serial << 8 | UInt32(page[i]) }
        var sequence: UInt32 = 0
        for i in (18..<22).reversed() { sequence = sequence << 8 | UInt32(page[i]) }
        let lacing = UnsafeRawBufferPointer(rebasing: page[27..<(27 + segments)])
        let bodyStart = 27 + segments
        let bodyOffset = offset + Int64(bodyStart)

        var skipIdentified = false
        if bos && (link == nil || link!.ended) && !continued {
            // A new logical stream: take it when its first packet names a known codec.
            var first = 0
            for l in lacing { first += Int(l); if l < 255 { break } }
            let packet = UnsafeRawBufferPointer(rebasing: page[bodyStart..<(bodyStart + first)])
            let identified = try Self.identify(packet, serial: serial, at: bodyOffset, limits: out.limits)
            if identified == nil && unknownStream == nil {
                let printable = packet.prefix(8).filter { $0 >= 0x20 && $0 < 0x7F }
                unknownStream = (String(decoding: printable, as: UTF8.self).trimmingSpaces(), offset)
            }
            if let newLink = identified {
                if let old = link, !old.isReady {
                    throw invalidData(Self.component, "stream \(old.serial) ended before its headers were complete", at: offset)
                }
                link = newLink
                linkCount += 1
                hasPartial = false
                dropping = false
                lastSequence = nil
                skipIdentified = true
                out.set(\.fileFormat, .ogg, .fileFormat)
            }
        }
        guard var current = link, current.serial == serial, !current.ended else { return }
        if let last = lastSequence, sequence != last &+ 1 {
            hasPartial = false // pages were lost: the packet in progress is incomplete
            dropping = false
        }
        lastSequence = sequence
        if !continued && (hasPartial || dropping) {
            hasPartial = false
            dropping = false
        }
        var pos = bodyStart
        var packetStart = bodyStart
        var skippingContinuation = (continued && !hasPartial && !dropping) || skipIdentified
        var completedAudio = false
        var indexed = false
        let pageEnd = offset + Int64(page.count)
        for (i, l) in lacing.enumerated() {
            pos += Int(l)
            if l == 255 && i < segments - 1 { continue }
            let piece = UnsafeRawBufferPointer(rebasing: page[packetStart..<pos])
            let endInPage = bodyOffset + Int64(pos - bodyStart)
            let isContinuation = packetStart == bodyStart && continued
            defer { packetStart = pos }
            if !isContinuation && !indexed {
                // Seek index: the first packet that begins on this page.
                indexed = true
                if sequential && linkCount == 1 && current.isReady,
                   index.last.map({ $0.offset < offset && $0.packet <= out.nextPacketIndex }) ?? true {
                    index.append(PageEntry(offset: offset, packet: out.nextPacketIndex, previousBlock: current.previousBlock))
                }
            }
            if skippingContinuation {
                skippingContinuation = false
                if l == 255 { break }
                continue
            }
            if l == 255 {
                // The last packet continues on the next page.
                try append(piece, at: offset, limits: out.limits)
                break
            }
            if hasPartial || dropping {
                try append(piece, at: offset, limits: out.limits)
                let complete = hasPartial && !dropping
                hasPartial = false
                dropping = false
                if !complete {
                    if !current.isReady {
                        Self.droppedHeader(&current)
                        if let n = current.headerCount, current.headerPackets.count >= n {
                            makeReady(&current, dataOffset: endInPage, &out)
                        }
                    }
                    continue
                }
                let whole = partial
                try whole.withUnsafeBytes { (raw) throws in
                    if try packet(raw, fileOffset: -1, &current, pageEnd: pageEnd, endInPage: endInPage, &out) {
                        completedAudio = true
                    }
                }
            } else if try packet(piece, fileOffset: bodyOffset + Int64(packetStart - bodyStart), &current,
                                 pageEnd: pageEnd, endInPage: endInPage, &out) {
                completedAudio = true
            }
        }
        if completedAudio && granule >= 0 && current.tracksTotals {
            if current.granuleStart == nil {
                // On a page that is both the first with audio and the last, the granule marks
                // the end (samples are trimmed there), not the start.
                current.granuleStart = eos ? max(0, granule - current.framesTotal) : granule - current.framesTotal
            }
            current.lastGranule = granule
        }
        if eos {
            current.ended = true
            link = current
            reportPacketTable(&out)
            return
        }
        link = current
    }

    private mutating func append(_ piece: UnsafeRawBufferPointer, at offset: Int64, limits: ParserLimits) throws {
        if dropping { return }
        if !hasPartial { partial.removeAll(keepingCapacity: true); hasPartial = true }
        let limit = link.map { $0.isReady ? limits.maximumPacketSize : max(limits.maximumTagBytes, 1 << 16) } ?? limits.maximumPacketSize
        if partial.count + piece.count > limit {
            if link?.isReady ?? true {
                throw limitExceeded(Self.component, "a packet of more than \(limit) bytes", at: offset)
            }
            // A header (comment with pictures) too big to keep: dropped, replaced where needed.
            dropping = true
            hasPartial = false
            partial.removeAll()
            return
        }
        partial.append(contentsOf: piece)
    }

    // MARK: Packets

    /// Handles one complete packet; returns true for an audio packet.
    private mutating func packet(_ p: UnsafeRawBufferPointer, fileOffset: Int64, _ l: inout Link,
                                 pageEnd: Int64, endInPage: Int64, _ out: inout ParseOutput) throws -> Bool {
        if !l.isReady {
            let isAudio = l.codec == .flac && l.headerCount == nil && p.count >= 2 && p[0] == 0xFF
            if !isAudio {
                try header(p, &l, at: fileOffset, &out)
                if let n = l.headerCount, l.headerPackets.count >= n {
                    makeReady(&l, dataOffset: endInPage, &out)
                }
                return false
            }
            makeReady(&l, dataOffset: fileOffset >= 0 ? fileOffset : endInPage, &out)
        }
        // An empty packet carries nothing to decode (FFmpeg's muxer ends streams with one).
        if p.isEmpty { return false }
        let frames = framesIn(p, &l)
        if l.tracksTotals { l.framesTotal += Int64(frames) }
        out.emitPacket(p, fileOffset: fileOffset, frames: frames)
        return true
    }

    private mutating func makeReady(_ l: inout Link, dataOffset start: Int64, _ out: inout ParseOutput) {
        l.isReady = true
        switch l.codec {
        case .vorbis:
            // Xiph lacing of the three headers.
            var cookie: [UInt8] = [2]
            for h in l.headerPackets.prefix(2) {
                var n = h.count
                while n >= 255 { cookie.append(255); n -= 255 }
                cookie.append(UInt8(n))
            }
            for h in l.headerPackets.prefix(3) { cookie.append(contentsOf: h) }
            l.cookie = cookie
        case .opus, .flac:
            break
        }
        out.set(\.dataFormat, l.format, .dataFormat)
        if linkCount > 1 && out.info.magicCookie == l.cookie {
            // A later link of a chain with the same setup is reported all the same: it is a new
            // encoder's stream, with its own priming (``AudioFileStream/primingFrames(ofOggLink:magicCookie:)``).
            out.report(.magicCookieData)
        } else {
            out.set(\.magicCookie, l.cookie, .magicCookieData)
        }
        if dataOffset == nil {
            dataOffset = start
            out.set(\.dataOffset, start, .dataOffset)
        }
        if let rate = l.bitRate { out.set(\.bitRate, rate, .bitRate) }
        if !l.tags.isEmpty { out.setTags(l.tags) }
        out.ready()
    }

    /// Recognises the first packet of a logical stream.
    static func identify(_ p: UnsafeRawBufferPointer, serial: UInt32, at offset: Int64, limits: ParserLimits) throws -> Link? {
        func matches(_ magic: [UInt8]) -> Bool {
            p.count >= magic.count && magic.indices.allSatisfy { p[$0] == magic[$0] }
        }
        if matches([1, 0x76, 0x6F, 0x72, 0x62, 0x69, 0x73]) { // \x01vorbis
            guard p.count >= 30 else { throw invalidData(component, "Vorbis identification header is \(p.count) bytes", at: offset) }
            var r = ByteReader(p, baseOffset: offset, position: 7)
            let version = try r.u32le()
            let channels = try r.u8()
            let rate = try r.u32le()
            _ = try r.u32le()
            let nominal = Int32(bitPattern: try r.u32le())
            _ = try r.u32le()
            let sizes = try r.u8()
            let b0 = UInt32(sizes & 0x0F), b1 = UInt32(sizes >> 4)
            guard version == 0, channels > 0, rate > 0, b0 >= 6, b1 <= 13, b0 <= b1 else {
                throw invalidData(component, "Vorbis identification header is invalid (version \(version), \(channels) channels, \(rate) Hz, block sizes 2^\(b0)/2^\(b1))", at: offset)
            }
            var l = Link(serial: serial, codec: .vorbis,
                         format: .compressed(.vorbis, sampleRate: Double(rate), channels: UInt32(channels), framesPerPacket: 0))
            l.blockSizes = (1 << b0, 1 << b1)
            l.headerCount = 3
            l.headerPackets = [Array(p)]
            if nominal > 0 { l.bitRate = UInt32(nominal) }
            return l
        }
        if matches([0x4F, 0x70, 0x75, 0x73, 0x48, 0x65, 0x61, 0x64]) { // OpusHead
            guard p.count >= 19, p[8] >> 4 == 0, p[9] > 0 else {
                throw invalidData(component, "OpusHead header is invalid (\(p.count) bytes)", at: offset)
            }
            var l = Link(serial: serial, codec: .opus,
                         format: .compressed(.opus, sampleRate: 48000, channels: UInt32(p[9]), framesPerPacket: 0))
            l.preSkip = Int64(UInt16(p[10]) | UInt16(p[11]) << 8)
            l.headerCount = 2
            l.headerPackets = [Array(p)]
            l.cookie = Array(p)
            return l
        }
        if matches([0x7F, 0x46, 0x4C, 0x41, 0x43]) { // \x7FFLAC
            guard p.count >= 51, p[9] == 0x66, p[10] == 0x4C, p[11] == 0x61, p[12] == 0x43, p[13] & 0x7F == 0 else {
                throw invalidData(component, "Ogg FLAC mapping header is invalid (\(p.count) bytes)", at: offset)
            }
            guard p[5] == 1 else { throw unsupported(component, "Ogg FLAC mapping version \(p[5]).\(p[6])", at: offset) }
            let info = try FLACStreamInfo(UnsafeRawBufferPointer(rebasing: p[17..<51]), at: offset + 17)
            var l = Link(serial: serial, codec: .flac, format: info.format)
            let others = Int(UInt16(p[7]) << 8 | UInt16(p[8]))
            l.headerCount = others == 0 ? nil : others + 1
            l.headerPackets = [[]]
            l.cookie = info.body
            l.tags[InfoKey.sourceBitDepth] = "I\(info.bitsPerSample)"
            return l
        }
        return nil
    }

    /// A header packet after the first.
    private func header(_ p: UnsafeRawBufferPointer, _ l: inout Link, at offset: Int64, _ out: inout ParseOutput) throws {
        let n = l.headerPackets.count
        switch l.codec {
        case .vorbis:
            let type: UInt8 = n == 1 ? 3 : 5
            guard p.count >= 7, p[0] == type, p[1] == 0x76, p[2] == 0x6F, p[3] == 0x72 else {
                throw invalidData(Self.component, "expected Vorbis header type \(type)", at: offset)
            }
            if n == 1 {
                l.tags.merge(VorbisComment.parse(UnsafeRawBufferPointer(rebasing: p[7...]))) { a, _ in a }
                l.headerPackets.append(Array(p))
            } else {
                try parseVorbisModes(p, &l, at: offset)
                l.headerPackets.append(Array(p))
            }
        case .opus:
            if p.count >= 8, p[0] == 0x4F, p[1] == 0x70, p[4] == 0x54 { // OpusTags
                l.tags.merge(VorbisComment.parse(UnsafeRawBufferPointer(rebasing: p[8...]))) { a, _ in a }
            }
            l.headerPackets.append([])
        case .flac:
            if p.count >= 4, p[0] & 0x7F == 4 {
                l.tags.merge(VorbisComment.parse(UnsafeRawBufferPointer(rebasing: p[4...]))) { a, _ in a }
            }
            l.headerPackets.append([])
        }
    }

    /// The oversized-header case: a dropped comment packet is replaced by an empty one.
    private static func droppedHeader(_ l: inout Link) {
        if l.codec == .vorbis && l.headerPackets.count == 1 {
            l.headerPackets.append([3, 0x76, 0x6F, 0x72, 0x62, 0x69, 0x73, 0, 0, 0, 0, 0, 0, 0, 0, 1])
        } else {
            l.headerPackets.append([])
        }
    }

    /// Reads the mode block flags from the end of a Vorbis setup header: the packet ends with
    /// the mode list (count-1 in 6 bits, then per mode a block flag, 16-bit window type 0,
    /// 16-bit transform type 0, 8-bit mapping) and a framing bit.
    private func parseVorbisModes(_ p: UnsafeRawBufferPointer, _ l: inout Link, at offset: Int64) throws {
        func bit(_ i: Int) -> Bool { p[i >> 3] >> UInt8(i & 7) & 1 != 0 }
        func bits(_ start: Int, _ count: Int) -> Int {
            var v = 0
            for k in 0..<count where bit(start + k) { v |= 1 << k }
            return v
        }
        // The framing bit: the last set bit of the packet.
        var end = p.count * 8 - 1
        while end >= 0 && !bit(end) { end -= 1 }
        var found: Int?
        var n = 0
        // Modes counted backwards from the framing bit while they look like modes.
        while n < 64 {
            let start = end - (n + 1) * 41
            guard start >= 7 * 8 else { break }
            guard bits(start + 1, 16) == 0, bits(start + 17, 16) == 0, bits(start + 33, 8) < 64 else { break }
            n += 1
            if start - 6 >= 7 * 8, bits(start - 6, 6) == n - 1 { found = n }
        }
        guard let count = found else {
            throw invalidData(Self.component, "Vorbis setup header: mode list not found", at: offset)
        }
        let first = end - count * 41
        l.modeLong = (0..<count).map { bit(first + $0 * 41) }
        var b = 0
        while (1 << b) < count { b += 1 }
        l.modeBits = b
    }

    /// Frames in an audio packet.
    private func framesIn(_ p: UnsafeRawBufferPointer, _ l: inout Link) -> UInt32 {
        guard !p.isEmpty else { return 0 }
        switch l.codec {
        case .vorbis:
            guard p[0] & 1 == 0 else { return 0 }
            let mode = Int(p[0] >> 1) & ((1 << l.modeBits) - 1)
            guard mode < l.modeLong.count else { return 0 }
            let current = l.modeLong[mode] ? l.blockSizes.1 : l.blockSizes.0
            let frames = l.previousBlock == 0 ? 0 : l.previousBlock / 4 + current / 4
            l.previousBlock = current
            return frames
        case .opus:
            return opusFrames(p)
        case .flac:
            guard let h = try? FLACFrameHeader.parse(p, at: 0) else { return 0 }
            return h.blockSize
        }
    }

    // MARK: End of stream

    private mutating func reportPacketTable(_ out: inout ParseOutput) {
        guard let l = link, l.tracksTotals, let start = l.granuleStart, let last = l.lastGranule else { return }
        let total = l.framesTotal
        // Granules are 64-bit values from the input: differences of extreme ones overflow.
        let c = InputArithmetic(Self.component)
        guard let skip = try? c.subtract(Int64(l.preSkip), start, "pre-skip relative to the first granule"),
              let span = try? c.subtract(last, start, "granule span") else { return }
        let priming = max(0, skip)
        let end = min(total, max(priming, span))
        let valid = end - priming
        let remainder = total - end
        guard priming <= Int64(Int32.max), remainder <= Int64(Int32.max) else { return }
        let table = AudioFilePacketTableInfo(numberValidFrames: valid, primingFrames: Int32(priming), remainderFrames: Int32(remainder))
        out.set(\.packetTableInfo, table, .packetTableInfo)
    }

    private mutating func finishInput(at offset: Int64, _ out: inout ParseOutput) throws {
        if link == nil && badPages > 0 {
            throw invalidData(Self.component, "no usable Ogg stream: \(badPages) page(s) failed the CRC check, the first", at: firstBadPage)
        }
        if link == nil, let unknown = unknownStream {
            throw unsupported(Self.component, "the Ogg stream carries \(unknown.name.isEmpty ? "an unknown codec" : "'\(unknown.name)'"), which is not supported (Vorbis, Opus and FLAC are)", at: unknown.offset)
        }
        if let l = link, !l.ended {
            if !l.isReady {
                throw invalidData(Self.component, "the input ends before the \(l.codec) headers are complete", at: offset)
            }
            reportPacketTable(&out)
        }
    }

    // MARK: Seeking

    mutating func seek(toPacket packet: Int64, _ out: inout ParseOutput) throws(AudioError) -> AudioFileStreamSeekResult {
        guard packet >= 0 else {
            throw AudioError(.invalidArgument, component: Self.component, "packet \(packet) is negative")
        }
        guard let start = dataOffset else {
            throw AudioError(.invalidState, component: Self.component, "cannot seek before the audio data is reached", osStatus: 0x6473_6F6E)
        }
        if let last = index.last, packet < out.packetsSeen || packet <= last.packet {
            var lo = 0, hi = index.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if index[mid].packet <= packet { lo = mid + 1 } else { hi = mid }
            }
            if lo > 0 {
                let e = index[lo - 1]
                return AudioFileStreamSeekResult(byteOffset: e.offset, dataByteOffset: e.offset - start, isEstimated: false, packetIndex: e.packet)
            }
        }
        let average = out.packetsSeen > 0 ? Double(out.packetBytesSeen) / Double(out.packetsSeen) : 0
        guard average > 0 else {
            throw AudioError(.valueUnknown, component: Self.component, "no packet size known yet to estimate a seek offset")
        }
        let rel = Double(packet) * average
        guard rel < 9e18 else { throw AudioError(.invalidArgument, component: Self.component, "packet \(packet) is out of range") }
        return AudioFileStreamSeekResult(byteOffset: start + Int64(rel), dataByteOffset: Int64(rel), isEstimated: true, packetIndex: packet)
    }

    mutating func resume(at offset: Int64, packetIndex: Int64?, _ out: inout ParseOutput) {
        hasPartial = false
        dropping = false
        lastSequence = nil
        guard var l = link else { return }
        l.tracksTotals = false
        l.ended = false
        if let p = packetIndex, let e = index.first(where: { $0.offset == offset && $0.packet == p }) {
            l.previousBlock = e.previousBlock
        } else {
            sequential = false
            l.previousBlock = 0
        }
        link = l
    }
}

/// Frames (at 48 kHz) in an Opus packet, from its TOC byte (RFC 6716 section 3.1).
func opusFrames(_ p: UnsafeRawBufferPointer) -> UInt32 {
    guard let toc = p.first else { return 0 }
    let config = Int(toc >> 3)
    let size: UInt32
    switch config {
    case 0..<12: size = [480, 960, 1920, 2880][config & 3]
    case 12..<16: size = [480, 960][config & 1]
    default: size = [120, 240, 480, 960][config & 3]
    }
    switch toc & 3 {
    case 0: return size
    case 1, 2: return size * 2
    default:
        guard p.count >= 2 else { return 0 }
        return size * UInt32(p[1] & 0x3F)
    }
}

extension AudioFileStream {
    /// The priming frames that begin one link of an Ogg stream, from its setup (the format and
    /// magic cookie reported when the link's headers are complete): Opus's pre-skip (OpusHead
    /// bytes 10-11, at 48 kHz); 0 for Vorbis and FLAC. Every link of a chain starts with its
    /// own priming; a `.magicCookieData` change is reported at each link.
    public static func primingFrames(ofOggLink format: AudioStreamBasicDescription, magicCookie: [UInt8]?) -> Int {
        guard format.formatID == .opus, let c = magicCookie, c.count >= 12, c.starts(with: Array("OpusHead".utf8)) else { return 0 }
        return Int(UInt16(c[10]) | UInt16(c[11]) << 8)
    }
}
