import OATCore

/// Raw MPEG audio (MPEG-1/2/2.5 Layer I, II, III) and AAC ADTS streams.
///
/// Synchronisation: a frame is accepted without further checks only where the previous frame
/// ends ("in sync") and it belongs to the same stream (version, layer and rate, or AAC profile,
/// rate and channels). Anywhere else (the first frame, after junk or a seek) a candidate header
/// is accepted only when the header right after its frame belongs to the same family, or a tag
/// starts there, or the input ends within 8 bytes of it. A free-format candidate's length is
/// where the next matching header was found, so the header after that one must agree as well (or
/// a tag start there, or the input end): three frames in a row, as FFmpeg's probe wants.
/// Everything else is junk and skipped.
/// Free-format frames (bit rate index 0) get their length from the distance to the next
/// matching header (searched within ``maximumFreeFormatFrame`` bytes), remembered for the
/// frames that follow in sync.
///
/// A Xing/Info (with LAME extension) or VBRI header in the first Layer III frame supplies the
/// packet and byte counts, the seek table and the encoder delay and padding; that frame is not
/// delivered as a packet. ID3v1 (`TAG`), APE (`APETAGEX`, header form read, footer-only tags
/// skipped) and ID3v2 tags between or after frames are read or skipped, never delivered.
///
/// ADTS: packets are the raw AAC access units without the 7- or 9-byte header; the magic cookie
/// is the 2-byte AudioSpecificConfig built from the header. Frames carrying more than one raw
/// data block are rejected as unsupported (as FFmpeg does): their block boundaries cannot be
/// found without decoding when there is no CRC, and they do not occur in practice.
///
/// Embedded mode (``init(embedded:)``): for WAV (format tag 0x55) and CAF `.mp3` data chunks.
/// The host passes only the bytes of its data chunk to ``parse(_:at:isEOF:_:)`` (isEOF true
/// once the chunk's end is within `input`) and reports the format itself; the parser then only
/// splits MPEG frames (every frame, a Xing frame included, is a packet), reports no properties
/// and reads no tags.
struct MPEGAudioParser: ContainerParser {
    static let component = "MPEG audio parser"
    /// Largest free-format frame searched for.
    static let maximumFreeFormatFrame = 8192
    /// Junk accepted before the first frame before giving up on the input.
    static let maximumLeadingJunk: Int64 = 1 << 20
    /// Layer III decoder delay (samples) added to the LAME encoder delay for the priming frames.
    static let decoderDelay = 529

    let embedded: Bool

    /// The established stream: the first accepted frame's header.
    private(set) var mpeg: MPEGFrameHeader?
    private(set) var adts: ADTSHeader?
    /// Free-format frame length without padding, once known.
    private var freeBase: Int?
    /// Where the next frame is expected while in sync, else -1.
    private var expected: Int64 = -1
    /// Properties have been reported (the first frame was accepted).
    private(set) var started = false
    private var searchStart: Int64?
    private(set) var vbr: MPEGVBRInfo?
    private var vbrFrameOffset: Int64 = 0
    private var dataStart: Int64 = 0
    /// File offset of each frame (header included) from packet 0, for exact seeks.
    private(set) var frameOffsets: [Int64] = []
    private var seenFrameBytes: Int64 = 0
    private var seenFrames: Int64 = 0

    /// A parser for a raw MPEG audio or ADTS file. No file type hint takes part: as Apple's, an
    /// ADTS stream opened with an MP3 hint (streamers pass one for every stream) is still ADTS.
    init() {
        self.embedded = false
    }

    /// A frame splitter for MPEG audio data inside another container (see the type's notes).
    init(embedded: Bool) {
        self.embedded = embedded
    }

    // The two families' headers never match each other's (ADTS has layer bits 00, reserved in MPEG
    // audio), so the first frame found decides; the hint does not exclude either family.
    private var allowsADTS: Bool { adts != nil || (mpeg == nil && !embedded) }
    private var allowsMPEG: Bool { mpeg != nil || adts == nil }

    // MARK: Steps

    mutating func parse(_ input: UnsafeRawBufferPointer, at offset: Int64, isEOF: Bool, _ out: inout ParseOutput) throws -> ParseStatus {
        if searchStart == nil { searchStart = offset }
        if !started && !embedded, let s = searchStart, offset - s >= Self.maximumLeadingJunk {
            throw noFrameError(limitReached: true)
        }
        if input.isEmpty {
            if !started && !embedded { throw noFrameError(limitReached: false) }
            return .finished
        }
        if !embedded, let status = try tagStep(input, at: offset, isEOF: isEOF, &out) { return status }
        if input[0] == 0xFF, let status = try frameStep(input, at: offset, isEOF: isEOF, &out) { return status }
        return try junkStep(input, at: offset, isEOF: isEOF)
    }

    /// Nothing of any family found: Apple's AudioFileStream answers `kAudioFileStreamError_UnsupportedFileType`.
    private func noFrameError(limitReached: Bool) -> AudioError {
        let start = searchStart ?? 0
        let message = limitReached
            ? "no MPEG audio or ADTS frame found in the \(Self.maximumLeadingJunk) bytes from offset \(start)"
            : "no MPEG audio or ADTS frame found from offset \(start) to the end of the input"
        return AudioError(.invalidData, component: Self.component, message, offset: start, osStatus: 0x7479_703F) // 'typ?'
    }

    /// True when `count` bytes are at hand; false at the end of input; else asks for them.
    private func has(_ count: Int, _ input: UnsafeRawBufferPointer, _ isEOF: Bool) throws(NeedMoreData) -> Bool {
        if input.count >= count { return true }
        if isEOF { return false }
        throw NeedMoreData(needed: count)
    }

    private static func matches(_ input: UnsafeRawBufferPointer, _ i: Int, _ text: StaticString) -> Bool {
        let n = text.utf8CodeUnitCount
        guard i + n <= input.count else { return false }
        let p = text.utf8Start
        for k in 0..<n where input[i + k] != p[k] { return false }
        return true
    }

    /// Reads or skips an ID3v1, APE or ID3v2 tag starting at `input[0]`; nil when none starts there.
    private mutating func tagStep(_ input: UnsafeRawBufferPointer, at offset: Int64, isEOF: Bool, _ out: inout ParseOutput) throws -> ParseStatus? {
        switch input[0] {
        case 0x54: // TAG
            guard try has(3, input, isEOF), Self.matches(input, 0, "TAG") else { return nil }
            guard try has(128, input, isEOF) else { return nil }
            if let tags = parseID3v1(UnsafeRawBufferPointer(rebasing: input[0..<128])) {
                // ID3v2 (read first) wins over ID3v1.
                var fresh: [String: String] = [:]
                for (k, v) in tags where out.info.infoDictionary[k] == nil { fresh[k] = v }
                if !fresh.isEmpty { out.setTags(fresh) }
            }
            expected = -1
            return .consumed(128)
        case 0x41: // APETAGEX
            guard try has(8, input, isEOF), Self.matches(input, 0, "APETAGEX") else { return nil }
            guard try has(32, input, isEOF), let header = APETagHeader(input, 0) else { return nil }
            expected = -1
            guard header.isHeader else { return .consumed(32) } // footer of a tag whose items were skipped
            let total = 32 + Int64(header.size)
            if total > Int64(out.limits.maximumTagBytes) { return .skip(total) }
            guard try has(Int(total), input, isEOF) else { return .consumed(input.count) }
            let itemsEnd = Int(total) - (header.hasFooter ? 32 : 0)
            let tags = parseAPEItems(UnsafeRawBufferPointer(rebasing: input[32..<max(32, itemsEnd)]), count: header.itemCount)
            var fresh: [String: String] = [:]
            for (k, v) in tags where out.info.infoDictionary[k] == nil { fresh[k] = v }
            if !fresh.isEmpty { out.setTags(fresh) }
            return .consumed(Int(total))
        case 0x49: // ID3v2 after the start: skipped
            guard try has(10, input, isEOF), Self.matches(input, 0, "ID3") else { return nil }
            guard input[3] >= 2, input[3] <= 4, input[4] != 0xFF, (6..<10).allSatisfy({ input[$0] < 0x80 }) else { return nil }
            var size = Int64((6..<10).reduce(0) { $0 << 7 | Int(input[$1]) }) + 10
            if input[3] == 4 && input[5] & 0x10 != 0 { size += 10 }
            expected = -1
            return .skip(size)
        default:
            return nil
        }
    }

    /// Skips junk up to the next byte where a frame or a tag may start.
    private mutating func junkStep(_ input: UnsafeRawBufferPointer, at offset: Int64, isEOF: Bool) throws -> ParseStatus {
        expected = -1
        var limit = input.count
        var capped = false
        if !started && !embedded, let s = searchStart {
            let capEnd = s + Self.maximumLeadingJunk - offset
            if capEnd <= Int64(limit) { limit = Int(max(1, capEnd)); capped = true }
        }
        let count = input.count
        var i = 1
        while i < limit {
            let c = input[i]
            if c == 0xFF {
                if i + 1 >= count || input[i + 1] & 0xE0 == 0xE0 { return .consumed(i) }
            } else if !embedded && (c == 0x54 || c == 0x41 || c == 0x49) {
                if i + 1 >= count { return .consumed(i) }
                let d = input[i + 1]
                if (c == 0x54 && d == 0x41) || (c == 0x41 && d == 0x50) || (c == 0x49 && d == 0x44) { return .consumed(i) }
            }
            i += 1
        }
        if capped { throw noFrameError(limitReached: true) }
        if isEOF {
            if !started && !embedded { throw noFrameError(limitReached: false) }
            return .finished
        }
        return .consumed(count)
    }

    /// Whether what follows a candidate frame of `length` bytes confirms it.
    private func confirmed(_ input: UnsafeRawBufferPointer, after length: Int, isEOF: Bool, _ sameFamily: (Int) -> Bool) throws(NeedMoreData) -> Bool {
        if !(try has(length + 8, input, isEOF)) && input.count == length { return true } // the input ends right after it
        if sameFamily(length) { return true }
        if embedded { return false }
        return Self.matches(input, length, "TAG") || Self.matches(input, length, "APETAGEX") || Self.matches(input, length, "ID3")
    }

    /// A frame starting at `input[0]`: accepted and delivered with the frames following it in
    /// sync, or nil when it is not a frame here.
    private mutating func frameStep(_ input: UnsafeRawBufferPointer, at offset: Int64, isEOF: Bool, _ out: inout ParseOutput) throws -> ParseStatus? {
        guard try has(2, input, isEOF) else { return nil }
        let inSync = expected == offset
        if input[1] & 0xF6 == 0xF0 {
            guard allowsADTS, try has(7, input, isEOF), let h = ADTSHeader(input, 0) else { return nil }
            if let s = adts, !h.sameStream(s) { return nil }
            let length = h.frameLength
            guard try has(length, input, isEOF) else {
                return inSync ? emitCutFrame(input, at: offset, headerLength: h.headerLength, &out) : nil
            }
            if !inSync {
                let ok = try confirmed(input, after: length, isEOF: isEOF) { i in
                    i + 7 <= input.count && ADTSHeader(input, i).map { $0.sameStream(h) } ?? false
                }
                guard ok else { return nil }
            }
            if h.extraBlocks > 0 {
                throw unsupported(Self.component, "ADTS frame with \(h.extraBlocks + 1) raw data blocks is not supported", at: offset)
            }
            if !started && !embedded {
                var cookie = h.audioSpecificConfig
                var channels = h.channels
                if h.channelConfiguration == 0 {
                    let payload = UnsafeRawBufferPointer(rebasing: input[h.headerLength..<length])
                    guard let pce = adtsConfigFromPCE(payload, objectType: h.objectType, sampleRateIndex: h.sampleRateIndex) else {
                        throw unsupported(Self.component, "ADTS channel configuration 0 without a program config element at the start of the first frame", at: offset + Int64(h.headerLength))
                    }
                    (cookie, channels) = pce
                }
                reportADTS(h, cookie: cookie, channels: channels, at: offset, &out)
            }
            adts = h
            return emitRun(input, at: offset, firstLength: length, &out)
        }
        guard allowsMPEG, try has(4, input, isEOF), let h = MPEGFrameHeader(input, 0) else { return nil }
        if let s = mpeg, !h.sameStream(s) { return nil }
        var length: Int
        var newBase = freeBase
        if let l = h.frameLength() {
            length = l
        } else if inSync, let base = freeBase {
            length = base + h.padding * h.slotSize
        } else if !inSync, let s = mpeg, !s.isFreeFormat {
            return nil // a free-format header while resynchronising a fixed-rate stream: junk
        } else {
            // Free format: the frame ends where the next matching header starts.
            let window = Self.maximumFreeFormatFrame + 4
            _ = try has(window, input, isEOF)
            let end = min(window, input.count) - 4
            // From 4: a matching header closer than the smallest frame that can hold the side
            // information means an empty frame (a run of bare headers, `FF FB 00 00 ...`), junk
            // rather than audio: 256 KiB of them were 16000 frames of 1152 samples each.
            var q = 4
            var found: Int?
            while q <= end {
                if input[q] == 0xFF, input[q + 1] == input[1], input[q + 2] & 0xFC == input[2] & 0xFC,
                   let n = MPEGFrameHeader(input, q), n.sameFamily(h) {
                    found = q
                    break
                }
                q += 1
            }
            guard let f = found, f >= h.minimumLength else { return nil }
            length = f
            newBase = h.freeFormatBase(length: f)
        }
        guard try has(length, input, isEOF) else {
            return inSync ? emitCutFrame(input, at: offset, headerLength: 4, &out) : nil
        }
        if !inSync {
            let family: (Int) -> Bool = { i in
                i + 4 <= input.count && MPEGFrameHeader(input, i).map { $0.sameFamily(h) } ?? false
            }
            guard try confirmed(input, after: length, isEOF: isEOF, family) else { return nil }
            // A free-format candidate's length is where the search found the next matching
            // header, so that header confirms nothing: the one after it, at the distance the
            // length gives, must agree too (FFmpeg's probe wants three frames in a row). Two
            // COM markers (`FF FE 00 xx`) of a JPEG in an ID3 picture read as MPEG-1 Layer I
            // free-format headers within 8 KiB of each other.
            if h.isFreeFormat, family(length), let next = MPEGFrameHeader(input, length), let base = newBase {
                let third = length + base + next.padding * next.slotSize
                let inputEnds = isEOF && input.count < third + 4 // the second frame is the last, maybe cut
                guard try inputEnds || confirmed(input, after: third, isEOF: isEOF, family) else { return nil }
            }
        }
        freeBase = newBase
        if !started && !embedded {
            let frame = UnsafeRawBufferPointer(rebasing: input[0..<length])
            let info = MPEGVBRInfo.parse(frame, header: h, limits: out.limits)
            reportMPEG(h, length: length, vbr: info, at: offset, &out)
            mpeg = h
            if info != nil {
                vbr = info
                vbrFrameOffset = offset
                expected = offset + Int64(length)
                return .consumed(length)
            }
        }
        mpeg = h
        return emitRun(input, at: offset, firstLength: length, &out)
    }

    /// Length of the frame at `i` when it continues the stream in sync and is complete in
    /// `input`; nil otherwise.
    private func nextInSync(_ input: UnsafeRawBufferPointer, _ i: Int) -> Int? {
        guard i + 7 <= input.count, input[i] == 0xFF else { return nil }
        if let s = adts {
            guard let h = ADTSHeader(input, i), h.sameStream(s), h.extraBlocks == 0 else { return nil }
            return i + h.frameLength <= input.count ? h.frameLength : nil
        }
        guard let s = mpeg, let h = MPEGFrameHeader(input, i), h.sameStream(s) else { return nil }
        var length: Int
        if let l = h.frameLength() { length = l }
        else if let base = freeBase { length = base + h.padding * h.slotSize }
        else { return nil }
        return i + length <= input.count ? length : nil
    }

    /// Delivers the accepted frame at `input[0]` and the complete frames following it in sync.
    private mutating func emitRun(_ input: UnsafeRawBufferPointer, at offset: Int64, firstLength: Int, _ out: inout ParseOutput) -> ParseStatus {
        var p = 0
        var length = firstLength
        let limit = out.limits.maximumTableEntries
        while true {
            let frameOffset = offset + Int64(p)
            if out.nextPacketIndex == Int64(frameOffsets.count) && frameOffsets.count < limit {
                frameOffsets.append(frameOffset)
            }
            let skip = adts == nil ? 0 : (input[p + 1] & 1 == 0 ? 9 : 7)
            let bytes = UnsafeRawBufferPointer(rebasing: input[(p + skip)..<(p + length)])
            out.emitPacket(bytes, fileOffset: frameOffset + Int64(skip))
            seenFrameBytes += Int64(length)
            seenFrames += 1
            p += length
            guard let next = nextInSync(input, p) else { break }
            // Track the header of every frame delivered, as a step starting at this frame would:
            // how runs are cut by the input's chunking must not change the parser's state.
            if adts != nil { adts = ADTSHeader(input, p) ?? adts } else { mpeg = MPEGFrameHeader(input, p) ?? mpeg }
            length = next
        }
        expected = offset + Int64(p)
        return .consumed(p)
    }

    /// The last frame, cut off by the end of the input while in sync: delivered as it is (its
    /// header and side information decode with the bit reservoir, as FFmpeg does), up to an
    /// ID3v1 tag that ends the input. `input` holds everything to the end.
    private mutating func emitCutFrame(_ input: UnsafeRawBufferPointer, at offset: Int64, headerLength: Int, _ out: inout ParseOutput) -> ParseStatus? {
        var end = input.count
        if end >= 128, Self.matches(input, end - 128, "TAG") { end -= 128 }
        guard end > headerLength else { return nil }
        if out.nextPacketIndex == Int64(frameOffsets.count) && frameOffsets.count < out.limits.maximumTableEntries {
            frameOffsets.append(offset)
        }
        let skip = adts == nil ? 0 : headerLength
        out.emitPacket(UnsafeRawBufferPointer(rebasing: input[skip..<end]), fileOffset: offset + Int64(skip))
        expected = -1
        return .consumed(end)
    }

    // MARK: Properties

    private mutating func reportADTS(_ h: ADTSHeader, cookie: [UInt8], channels: UInt32, at offset: Int64, _ out: inout ParseOutput) {
        out.set(\.fileFormat, .aacADTS, .fileFormat)
        let format = AudioStreamBasicDescription.compressed(
            .mpeg4AAC, sampleRate: Double(h.sampleRate), channels: channels, framesPerPacket: 1024,
            flags: .mpeg4ObjectType(UInt32(h.objectType)))
        out.set(\.dataFormat, format, .dataFormat)
        out.set(\.magicCookie, cookie, .magicCookieData)
        out.set(\.dataOffset, offset, .dataOffset)
        out.set(\.packetSizeUpperBound, 768 * channels, .packetSizeUpperBound)
        out.ready()
        dataStart = offset
        started = true
    }

    private mutating func reportMPEG(_ h: MPEGFrameHeader, length: Int, vbr info: MPEGVBRInfo?, at offset: Int64, _ out: inout ParseOutput) {
        let spf = h.samplesPerFrame
        out.set(\.fileFormat, h.fileType, .fileFormat)
        let format = AudioStreamBasicDescription.compressed(
            h.formatID, sampleRate: Double(h.sampleRate), channels: h.channels, framesPerPacket: UInt32(spf))
        out.set(\.dataFormat, format, .dataFormat)
        let first = offset + (info != nil ? Int64(length) : 0)
        if let info {
            if let bytes = info.bytes, bytes > Int64(length) {
                out.set(\.audioDataByteCount, bytes - Int64(length), .audioDataByteCount)
            }
            if let frames = info.frames {
                out.set(\.audioDataPacketCount, frames, .audioDataPacketCount)
            }
        }
        out.set(\.dataOffset, first, .dataOffset)
        if let info, let frames = info.frames, let delay = info.encoderDelay, let padding = info.encoderPadding {
            // Priming convention: LAME's encoder delay plus the 529-sample decoder delay are
            // priming; the padding minus those 529 samples is remainder; so the valid frames are
            // total - delay - padding (what FFmpeg plays, e.g. 132300 for 3 s at 44.1 kHz).
            let (total, overflow) = frames.multipliedReportingOverflow(by: Int64(spf))
            let valid = total - Int64(delay) - Int64(padding)
            if !overflow, valid > 0 {
                var priming = delay + Self.decoderDelay
                var remainder = padding - Self.decoderDelay
                if remainder < 0 { priming += remainder; remainder = 0 }
                out.set(\.packetTableInfo, AudioFilePacketTableInfo(
                    numberValidFrames: valid, primingFrames: Int32(priming), remainderFrames: Int32(remainder)), .packetTableInfo)
            }
        }
        var bitRate: Int?
        // A VBR (Xing) tag gives the mean rate; a CBR (Info) tag's frames and bytes would give a
        // rate a rounding off the header's (191999 for 192 kb/s), so CBR states the header's rate.
        let cbr = info?.tag == "Info" && h.bitRate > 0
        if let info, !cbr, let frames = info.frames, let bytes = info.bytes, bytes > Int64(length) {
            let seconds = Double(frames) * Double(spf) / Double(h.sampleRate)
            let bits = Double(bytes - Int64(length)) * 8 / seconds
            if bits.isFinite, bits > 0, bits < Double(UInt32.max) { bitRate = Int(bits.rounded()) }
        } else if info == nil || info?.tag == "Info" {
            bitRate = h.bitRate > 0 ? h.bitRate : length * 8 * h.sampleRate / spf
        }
        if let bitRate { out.set(\.bitRate, UInt32(bitRate), .bitRate) }
        let upper = h.isFreeFormat ? h.freeFormatBase(length: length) + h.slotSize : h.largestFrame
        out.set(\.packetSizeUpperBound, UInt32(upper), .packetSizeUpperBound)
        out.ready()
        dataStart = first
        started = true
    }

    // MARK: Seeking

    mutating func seek(toPacket packet: Int64, _ out: inout ParseOutput) throws(AudioError) -> AudioFileStreamSeekResult {
        guard packet >= 0 else {
            throw AudioError(.invalidArgument, component: Self.component, "packet \(packet) is negative")
        }
        guard started || embedded else {
            throw AudioError(.invalidState, component: Self.component, "cannot seek before the first frame is found", osStatus: 0x6473_6F6E)
        }
        if packet < Int64(frameOffsets.count) {
            let at = frameOffsets[Int(packet)]
            return AudioFileStreamSeekResult(byteOffset: at, dataByteOffset: at - dataStart, isEstimated: false, packetIndex: packet)
        }
        var estimate: Int64?
        if let v = vbr, let frames = v.frames, frames > 0 {
            if let toc = v.toc, let bytes = v.bytes {
                let percent = min(99.999, Double(packet) / Double(frames) * 100)
                let i = Int(percent)
                let a = Double(toc[i]), b = i < 99 ? Double(toc[i + 1]) : 256
                let position = (a + (b - a) * (percent - Double(i))) / 256 * Double(bytes)
                estimate = max(dataStart, vbrFrameOffset + Int64(position))
            } else if let sizes = v.vbriSizes, v.vbriFramesPerEntry > 0 {
                let entry = Int(min(Int64(sizes.count), packet / Int64(v.vbriFramesPerEntry)))
                var sum: Int64 = 0
                for k in 0..<entry { sum += sizes[k] }
                estimate = dataStart + sum
            }
        }
        if estimate == nil {
            var average = 0.0
            if seenFrames > 0 { average = Double(seenFrameBytes) / Double(seenFrames) }
            else if let b = out.info.audioDataByteCount, let p = out.info.audioDataPacketCount, p > 0 { average = Double(b) / Double(p) }
            else if let h = mpeg, let l = h.frameLength() { average = Double(l) }
            guard average > 0 else {
                throw AudioError(.valueUnknown, component: Self.component, "no frame size known yet to estimate a seek offset")
            }
            let rel = Double(packet) * average
            guard rel < 9e18 else { throw AudioError(.invalidArgument, component: Self.component, "packet \(packet) is out of range") }
            estimate = dataStart + Int64(rel)
        }
        let at = estimate!
        return AudioFileStreamSeekResult(byteOffset: at, dataByteOffset: at - dataStart, isEstimated: true, packetIndex: packet)
    }

    mutating func resume(at offset: Int64, packetIndex: Int64?, _ out: inout ParseOutput) {
        expected = -1
    }
}
