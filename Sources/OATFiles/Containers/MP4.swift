import OATCore

/// ISO base media files: MP4, M4A, M4B (and QuickTime-style audio-only files).
///
/// Top-level boxes are walked one by one. `ftyp`, `moov` and `moof` are buffered whole (within
/// `maximumBufferedBytes`); `mdat` and every other box are skipped without buffering unless the
/// sample table says the first sound track has samples in it, in which case those samples are
/// delivered in file order as the bytes arrive (bytes of other tracks and gaps are skipped).
///
/// - `moov` first: properties are reported when it is parsed, then samples follow.
/// - `moov` last: the `mdat` is skipped (its range remembered), the properties are reported
///   with ``StreamInfo/isNotOptimized`` set; ``seek(toPacket:_:)`` gives the exact offset of a
///   sample and the bytes fed again from there deliver it.
/// - Fragmented (`mvex` in `moov`, then `moof`/`mdat` pairs): each `moof`'s runs are appended
///   to the sample table and delivered as its `mdat` arrives.
///
/// Formats: AAC (`mp4a` + `esds`, LC/HE/HEv2 from the AudioSpecificConfig; cookie = the
/// AudioSpecificConfig), MP3 (`mp4a` object type 0x69/0x6B, `.mp3`), ALS (`mp4a` object type
/// 36, reported as `'als '` with the AudioSpecificConfig as cookie and per-packet frames from the
/// sample durations; there is no Audio Toolbox constant and no decoder here), ALAC (cookie = the
/// 36-byte `alac` box), FLAC (`dfLa`, cookie = the 34-byte STREAMINFO body), Opus (`dOps`, cookie =
/// an Ogg-style OpusHead; per-packet frames from the TOC byte).
///
/// Priming and remainder come from the edit list (first non-empty edit: media time = priming
/// frames, segment duration = valid frames), else from iTunes' `iTunSMPB`; in a fragmented movie
/// (an fMP4 HLS init section) from the same, with `mehd` for an edit of duration 0, when both
/// the priming and the valid frames are stated.
struct MP4Parser: ContainerParser {
    static let component = MP4.component

    enum Mode: Equatable {
        case boxes
        /// Inside an `mdat` ending at `end` (nil: runs to the end of the input).
        case data(end: Int64?)
    }

    struct MdatRange: Equatable {
        var start: Int64
        var end: Int64?
    }

    /// Defaults of a `trex` box.
    struct TrackDefaults: Equatable {
        var duration: UInt32 = 0
        var size: UInt32 = 0
    }

    var mode = Mode.boxes
    var fileFormat: AudioFileType?
    var movieParsed = false
    var format: MP4Format?
    var table = MP4SampleTable()
    var cursor = MP4SampleTable.Cursor()
    var trackID: UInt32 = 0
    var mediaTimescale: UInt32 = 0
    var fragmented = false
    var defaults = TrackDefaults()
    var mdats: [MdatRange] = []
    /// End of the last top-level box whose header was read: a box boundary to resume at.
    var furthestBoxEnd: Int64 = 0
    /// Offset of the last `moof` whose runs are in the table (a seek back may feed it again).
    var lastFragmentOffset: Int64 = -1

    /// Creates a parser positioned at the start of the file.
    init() {}

    // MARK: Steps

    mutating func parse(_ input: UnsafeRawBufferPointer, at offset: Int64, isEOF: Bool, _ out: inout ParseOutput) throws -> ParseStatus {
        if case .data(let end) = mode {
            if let status = try dataStep(input, at: offset, isEOF: isEOF, end: end, &out) { return status }
        }
        return try boxStep(input, at: offset, isEOF: isEOF, &out)
    }

    /// One top-level box.
    mutating func boxStep(_ input: UnsafeRawBufferPointer, at offset: Int64, isEOF: Bool, _ out: inout ParseOutput) throws -> ParseStatus {
        if input.isEmpty && isEOF {
            guard movieParsed else {
                throw invalidData(Self.component, "the input ends without a 'moov' box (no movie header, so no audio format)", at: offset)
            }
            return .finished
        }
        var r = ByteReader(input, baseOffset: offset)
        let header: MP4.BoxHeader
        do {
            header = try MP4.readHeader(&r)
        } catch let need as NeedMoreData {
            guard isEOF else { throw need }
            if movieParsed { return .finished }
            throw invalidData(Self.component, "the input ends inside a box header (\(input.count) bytes left)", at: offset)
        } catch {
            // A broken header after the movie is trailing garbage: the audio is complete.
            if movieParsed { return .finished }
            throw error
        }
        if let size = header.size {
            guard !offset.addingReportingOverflow(size).overflow else {
                throw invalidData(Self.component, "box '\(header.type)' size \(size) overflows", at: offset)
            }
        }
        let status = try boxBody(header, input, at: offset, isEOF: isEOF, &out)
        // Only once the step completes: a seek may resume at this box boundary.
        if let size = header.size { furthestBoxEnd = max(furthestBoxEnd, offset + size) }
        return status
    }

    /// The rest of a top-level box step, once its header is read.
    mutating func boxBody(_ header: MP4.BoxHeader, _ input: UnsafeRawBufferPointer, at offset: Int64, isEOF: Bool, _ out: inout ParseOutput) throws -> ParseStatus {
        switch header.type {
        case "mdat":
            let range = MdatRange(start: offset, end: header.size.map { offset + $0 })
            if !mdats.contains(range) { mdats.append(range) }
            if movieParsed && cursor.sample < table.sampleCount {
                mode = .data(end: range.end)
                return .consumed(header.headerSize)
            }
            if !movieParsed && out.failsWhenNotOptimized {
                throw notOptimized(Self.component, "the 'mdat' box comes before the 'moov' box: the file is not optimized for streaming", at: offset)
            }
            return skip(header.size, input: input, isEOF: isEOF)
        case "ftyp", "moov", "moof":
            if header.type == "moov" && movieParsed { return skip(header.size, input: input, isEOF: isEOF) }
            if header.type == "moof" && !movieParsed {
                throw invalidData(Self.component, "a 'moof' fragment comes before the 'moov' box", at: offset)
            }
            let size: Int
            if let s = header.size {
                guard s <= Int64(out.limits.maximumBufferedBytes) else {
                    throw limitExceeded(Self.component, "'\(header.type)' box of \(s) bytes exceeds the \(out.limits.maximumBufferedBytes)-byte limit", at: offset)
                }
                size = Int(s)
            } else {
                // Size 0: the box runs to the end of the input.
                guard isEOF else { throw NeedMoreData(needed: input.count + 1) }
                size = input.count
            }
            var truncated = false
            if input.count < size {
                if isEOF && header.type == "moov" && input.count > header.headerSize {
                    // A file cut inside its movie box: use what is there if the sound track is.
                    truncated = true
                } else if isEOF {
                    throw invalidData(Self.component, "'\(header.type)' box of \(size) bytes is cut off: the input ends after \(input.count) bytes", at: offset)
                } else {
                    throw NeedMoreData(needed: size)
                }
            }
            let available = min(size, input.count)
            let box = MP4.Box(type: header.type, payload: UnsafeRawBufferPointer(rebasing: input[header.headerSize..<available]),
                              payloadOffset: offset + Int64(header.headerSize), offset: offset)
            switch header.type {
            case "ftyp": try parseFileType(box, &out)
            case "moov":
                do { try parseMovie(box, lenient: truncated, &out) } catch let error as AudioError where truncated {
                    throw invalidData(Self.component, "'moov' box of \(size) bytes is cut off: the input ends after \(input.count) bytes (\(error.message))", at: offset)
                }
                if truncated { return .finished }
            default: try parseFragment(box, &out)
            }
            return .consumed(size)
        default:
            return skip(header.size, input: input, isEOF: isEOF)
        }
    }

    /// Skips a box of `size` bytes (nil: to the end of the input).
    func skip(_ size: Int64?, input: UnsafeRawBufferPointer, isEOF: Bool) -> ParseStatus {
        guard let size, !(isEOF && size > Int64(input.count)) else { return .finished }
        return .skip(size)
    }

    /// Delivers the track's samples inside an `mdat`; nil when the `mdat` is done (continue with
    /// the next box in the same step).
    mutating func dataStep(_ input: UnsafeRawBufferPointer, at offset: Int64, isEOF: Bool, end: Int64?, _ out: inout ParseOutput) throws -> ParseStatus? {
        var c = cursor
        var used = 0
        var pos = offset
        let format = self.format!
        while true {
            if let end, pos >= end { break }
            if c.sample >= table.sampleCount {
                cursor = c
                if used > 0 { return .consumed(used) }
                guard let end else { return .finished }
                return isEOF && end - pos > Int64(input.count) ? .finished : .skip(end - pos)
            }
            let o = c.offset
            if o < pos {
                cursor = c
                if used > 0 { return .consumed(used) }
                throw invalidData(Self.component, "sample \(c.sample) at offset \(o) lies before the current position: samples out of file order cannot be streamed", at: pos)
            }
            if let end, o >= end {
                cursor = c
                if used > 0 { return .consumed(used) }
                return isEOF && end - pos > Int64(input.count) ? .finished : .skip(end - pos)
            }
            if o > pos {
                cursor = c
                if used > 0 { return .consumed(used) }
                return isEOF && o - pos > Int64(input.count) ? .finished : .skip(o - pos)
            }
            let size = Int(table.size(c.sample))
            if size > out.limits.maximumPacketSize {
                throw limitExceeded(Self.component, "sample \(c.sample) of \(size) bytes exceeds the \(out.limits.maximumPacketSize)-byte packet limit", at: o)
            }
            if let end, o + Int64(size) > end {
                throw invalidData(Self.component, "sample \(c.sample) (\(size) bytes) runs past the end of its 'mdat' box at \(end)", at: o)
            }
            if used + size > input.count {
                cursor = c
                if used > 0 { return .consumed(used) }
                if isEOF { return .finished } // the file is cut inside this sample
                throw NeedMoreData(needed: size)
            }
            if format.isFramePCM {
                // Every frame the chunk holds back to back, as far as the input and the 'mdat' go.
                var n = table.samplesLeftInChunk(c)
                if let end { n = min(n, Int((end - o) / Int64(size))) }
                n = min(n, (input.count - used) / size)
                guard n > 0 else { throw invalidData(Self.component, "sample table places PCM sample \(c.sample) in an empty chunk", at: o) }
                out.emitConstantPackets(UnsafeRawBufferPointer(rebasing: input[used..<(used + n * size)]), count: n, fileOffset: o)
                used += n * size
                pos += Int64(n * size)
                table.advance(&c, by: n)
                continue
            }
            let bytes = UnsafeRawBufferPointer(rebasing: input[used..<(used + size)])
            let frames: UInt32
            switch format.framesSource {
            case .fixed: frames = 0
            case .opusTOC: frames = opusPacketFrames(bytes)
            case .durations: frames = scaledDuration(table.duration(c))
            }
            out.emitPacket(bytes, fileOffset: o, frames: frames)
            used += size
            pos += Int64(size)
            table.advance(&c)
        }
        cursor = c
        mode = .boxes
        return used > 0 ? .consumed(used) : nil
    }

    /// A duration in the media timescale as frames at the format's sample rate.
    func scaledDuration(_ d: UInt32) -> UInt32 {
        guard let rate = format?.asbd.sampleRate, mediaTimescale > 0, Double(mediaTimescale) != rate else { return d }
        return clampedUInt32(Double(d) * rate / Double(mediaTimescale))
    }

    // MARK: Boxes

    mutating func parseFileType(_ box: MP4.Box, _ out: inout ParseOutput) throws {
        let major = try MP4.read(box) { r in try r.fourCC() }
        let type: AudioFileType = ["M4A ", "M4B ", "M4P "].contains(major) ? .m4a : .mpeg4
        fileFormat = type
        out.set(\.fileFormat, type, .fileFormat)
    }

    /// Everything the parser keeps from one `trak`.
    struct Track {
        var id: UInt32 = 0
        var handler: FourCC = 0
        var timescale: UInt32 = 0
        var editMediaTime: Int64?
        var editDuration: UInt64?
        var entry: MP4.Box?
        var stbl: MP4.Box?
    }

    /// The handler type of a `trak` (`soun`, `text`, `vide`...), or nil when it cannot be read.
    static func handlerType(_ trak: MP4.Box) -> FourCC? {
        guard let mdia = try? MP4.child(trak.payload, base: trak.payloadOffset, "mdia"),
              let hdlr = try? MP4.child(mdia.payload, base: mdia.payloadOffset, "hdlr") else { return nil }
        return try? MP4.read(hdlr) { r in
            try r.skip(8)
            return try r.fourCC()
        }
    }

    static func parseTrack(_ trak: MP4.Box) throws -> Track {
        var t = Track()
        for box in try MP4.children(trak.payload, base: trak.payloadOffset) {
            switch box.type {
            case "tkhd":
                t.id = try MP4.read(box) { r in
                    let v = try r.u8()
                    try r.skip(3 + (v == 1 ? 16 : 8))
                    return try r.u32be()
                }
            case "edts":
                guard let elst = try MP4.child(box.payload, base: box.payloadOffset, "elst") else { continue }
                try MP4.read(elst) { r in
                    let v = try r.u8()
                    try r.skip(3)
                    let n = try r.u32be()
                    for _ in 0..<min(n, 64) {
                        let duration = v == 1 ? try r.u64be() : UInt64(try r.u32be())
                        let time = v == 1 ? Int64(bitPattern: try r.u64be()) : Int64(Int32(bitPattern: try r.u32be()))
                        try r.skip(4)
                        if time >= 0 {
                            t.editMediaTime = time
                            t.editDuration = duration
                            break
                        }
                    }
                }
            case "mdia":
                for m in try MP4.children(box.payload, base: box.payloadOffset) {
                    switch m.type {
                    case "mdhd":
                        t.timescale = try MP4.read(m) { r in
                            let v = try r.u8()
                            try r.skip(3 + (v == 1 ? 16 : 8))
                            return try r.u32be()
                        }
                    case "hdlr":
                        t.handler = try MP4.read(m) { r in
                            try r.skip(8)
                            return try r.fourCC()
                        }
                    case "minf":
                        guard let stbl = try MP4.child(m.payload, base: m.payloadOffset, "stbl") else { continue }
                        t.stbl = stbl
                        if let stsd = try MP4.child(stbl.payload, base: stbl.payloadOffset, "stsd"), stsd.payload.count > 8 {
                            let entries = UnsafeRawBufferPointer(rebasing: stsd.payload[8...])
                            t.entry = try MP4.children(entries, base: stsd.payloadOffset + 8).first
                        }
                    default: break
                    }
                }
            default: break
            }
        }
        return t
    }

    mutating func parseMovie(_ moov: MP4.Box, lenient: Bool = false, _ out: inout ParseOutput) throws {
        var movieTimescale: UInt32 = 0
        var track: Track?
        var trex: [UInt32: TrackDefaults] = [:]
        var hasMvex = false
        var fragmentDuration: UInt64 = 0
        var meta = MP4Metadata()
        for box in try MP4.children(moov.payload, base: moov.payloadOffset, lenient: lenient) {
            switch box.type {
            case "mvhd":
                movieTimescale = try MP4.read(box) { r in
                    let v = try r.u8()
                    try r.skip(3 + (v == 1 ? 16 : 8))
                    return try r.u32be()
                }
            case "trak":
                // Only the first sound track is read: a chapter (text), video or other track that
                // this parser cannot read is skipped, not an error (as FFmpeg plays such files).
                guard track == nil, Self.handlerType(box) == "soun" else { continue }
                track = try Self.parseTrack(box)
            case "mvex":
                hasMvex = true
                if let mehd = try MP4.child(box.payload, base: box.payloadOffset, "mehd") {
                    fragmentDuration = try MP4.read(mehd) { r in
                        let v = try r.u8()
                        try r.skip(3)
                        return v == 1 ? try r.u64be() : UInt64(try r.u32be())
                    }
                }
                for x in try MP4.children(box.payload, base: box.payloadOffset) where x.type == "trex" {
                    try MP4.read(x) { r in
                        try r.skip(4)
                        let id = try r.u32be()
                        try r.skip(4)
                        let duration = try r.u32be()
                        let size = try r.u32be()
                        trex[id] = TrackDefaults(duration: duration, size: size)
                    }
                }
            case "udta":
                if let m = try? MP4.child(box.payload, base: box.payloadOffset, "meta") {
                    let found = MP4.parseMeta(m, limits: out.limits)
                    meta.tags.merge(found.tags) { a, _ in a }
                    if meta.smpb == nil { meta.smpb = found.smpb }
                }
            case "meta":
                let found = MP4.parseMeta(box, limits: out.limits)
                meta.tags.merge(found.tags) { a, _ in a }
                if meta.smpb == nil { meta.smpb = found.smpb }
            default: break
            }
        }
        guard let track else {
            throw unsupported(Self.component, "the 'moov' box has no sound track", at: moov.offset)
        }
        guard let entry = track.entry, let stbl = track.stbl else {
            throw invalidData(Self.component, "the sound track has no sample description", at: moov.offset)
        }
        let format = try MP4.parseSampleEntry(entry, mediaTimescale: track.timescale, limits: out.limits)
        var table = try MP4.parseSampleTable(stbl, limits: out.limits)
        if format.isFramePCM { table.setConstantSize(format.asbd.bytesPerFrame) }

        // Commit.
        self.format = format
        self.table = table
        self.cursor = table.cursor(at: 0)
        self.trackID = track.id
        self.mediaTimescale = track.timescale
        self.fragmented = hasMvex
        self.defaults = trex[track.id] ?? TrackDefaults()
        self.movieParsed = true

        out.set(\.fileFormat, fileFormat ?? .mpeg4, .fileFormat)
        out.set(\.dataFormat, format.asbd, .dataFormat)
        // Apple's MP4 parser states a format list for every track (one layer unless SBR/PS add
        // richer ones), after the data format and before the cookie; libraries make their converter
        // on this notice.
        let layers = format.formatList.isEmpty
            ? [AudioFormatListItem(format: format.asbd, channelLayoutTag: format.layout?.tag ?? .default(channels: format.asbd.channelsPerFrame))]
            : format.formatList
        out.set(\.formatList, layers, .formatList)
        if let cookie = format.cookie { out.set(\.magicCookie, cookie, .magicCookieData) }
        if let layout = format.layout { out.set(\.channelLayout, layout, .channelLayout) }
        if !hasMvex || table.sampleCount > 0 {
            if !hasMvex {
                out.set(\.audioDataByteCount, table.totalBytes, .audioDataByteCount)
                out.set(\.audioDataPacketCount, Int64(table.sampleCount), .audioDataPacketCount)
            }
            out.set(\.maximumPacketSize, table.maxSize, .maximumPacketSize)
        }
        if table.sampleCount > 0 {
            let first = table.offset(ofSample: 0)
            out.set(\.dataOffset, first, .dataOffset)
            if first < moov.offset { out.info.isNotOptimized = true }
        }
        if !hasMvex, let info = Self.packetTableInfo(format: format, table: table, track: track,
                                                     movieTimescale: movieTimescale, smpb: meta.smpb) {
            out.set(\.packetTableInfo, info, .packetTableInfo)
        } else if hasMvex, let info = Self.fragmentedPacketTableInfo(format: format, track: track, movieTimescale: movieTimescale,
                                                                      fragmentDuration: fragmentDuration, smpb: meta.smpb) {
            out.set(\.packetTableInfo, info, .packetTableInfo)
        }
        if let bits = format.sourceBitDepth, bits > 0 { meta.tags[InfoKey.sourceBitDepth] = "I\(bits)" }
        if !meta.tags.isEmpty { out.setTags(meta.tags) }
        if table.sampleCount > 0 { out.ready() }
    }

    /// Priming, valid and remainder frames from the edit list, else from `iTunSMPB`.
    static func packetTableInfo(format: MP4Format, table: MP4SampleTable, track: Track, movieTimescale: UInt32,
                                smpb: (priming: Int64, padding: Int64, valid: Int64)?) -> AudioFilePacketTableInfo? {
        let rate = format.asbd.sampleRate
        let count = Int64(table.sampleCount)
        guard count > 0, rate > 0 else { return nil }
        let mediaScale = track.timescale > 0 ? Double(track.timescale) : rate
        func frames(_ media: Int64) -> Int64 {
            Double(track.timescale) == rate ? media : clampedInt64(Double(media) * rate / mediaScale)
        }
        var total: Int64
        switch format.framesSource {
        case .fixed:
            let (t, overflow) = count.multipliedReportingOverflow(by: Int64(format.asbd.framesPerPacket))
            total = overflow ? 0 : t
        case .durations: total = frames(table.totalDuration)
        case .opusTOC:
            // Muxers shorten the last sample's duration to the end of the audio; the packet itself
            // decodes to a whole frame, the same as the one before it.
            var d = table.totalDuration
            if let lastDelta = table.durationDeltas.last, let lastCount = table.durationCounts.last {
                let previous = lastCount > 1 ? lastDelta : (table.durationDeltas.count > 1 ? table.durationDeltas[table.durationDeltas.count - 2] : lastDelta)
                if previous > lastDelta { d += Int64(previous - lastDelta) }
            }
            total = frames(d)
        }
        guard total > 0 else { return nil }
        var priming: Int64, valid: Int64
        if let mediaTime = track.editMediaTime, let duration = track.editDuration {
            priming = min(frames(mediaTime), total)
            if movieTimescale > 0 && duration > 0 && duration < UInt64(Int64.max >> 8) {
                valid = clampedInt64(Double(duration) * rate / Double(movieTimescale))
            } else {
                valid = total - priming
            }
        } else if let smpb {
            priming = min(smpb.priming, total)
            valid = smpb.valid > 0 ? smpb.valid : total - priming - smpb.padding
        } else {
            return nil
        }
        valid = max(0, min(valid, total - priming))
        guard priming <= Int64(Int32.max), total - priming - valid <= Int64(Int32.max) else { return nil }
        return AudioFilePacketTableInfo(numberValidFrames: valid, primingFrames: Int32(priming), remainderFrames: Int32(total - priming - valid))
    }

    /// Priming and valid frames of a fragmented movie (a CMAF/fMP4 HLS rendition's init section,
    /// which holds no samples): the edit list's media time is the priming, its duration (else
    /// the `mehd` fragment duration) the presentation's length, in movie time; else `iTunSMPB`'s
    /// priming and valid frames. Nil unless both are stated: the samples are not known yet, so
    /// the total cannot give the valid frames, and the remainder is 0 (the frames decoded past
    /// the valid ones are dropped by the valid-frame count).
    static func fragmentedPacketTableInfo(format: MP4Format, track: Track, movieTimescale: UInt32, fragmentDuration: UInt64,
                                          smpb: (priming: Int64, padding: Int64, valid: Int64)?) -> AudioFilePacketTableInfo? {
        let rate = format.asbd.sampleRate
        guard rate > 0 else { return nil }
        var priming: Int64, valid: Int64
        if let mediaTime = track.editMediaTime, let editDuration = track.editDuration, mediaTime > 0 || editDuration > 0 {
            let mediaScale = track.timescale > 0 ? Double(track.timescale) : rate
            priming = Double(track.timescale) == rate ? mediaTime : clampedInt64(Double(mediaTime) * rate / mediaScale)
            let duration = editDuration > 0 ? editDuration : fragmentDuration
            guard movieTimescale > 0, duration > 0, duration < UInt64(Int64.max >> 8) else { return nil }
            valid = clampedInt64(Double(duration) * rate / Double(movieTimescale))
        } else if let smpb, smpb.valid > 0 {
            priming = smpb.priming
            valid = smpb.valid
        } else {
            return nil
        }
        guard priming >= 0, priming <= Int64(Int32.max), valid > 0 else { return nil }
        return AudioFilePacketTableInfo(numberValidFrames: valid, primingFrames: Int32(priming), remainderFrames: 0)
    }

    /// A `moof`: appends the runs of the sound track to the sample table.
    mutating func parseFragment(_ moof: MP4.Box, _ out: inout ParseOutput) throws {
        guard moof.offset > lastFragmentOffset else { return } // already in the table
        var runs: [(offset: Int64, sizes: MP4SizeRun, durations: [UInt32], defaultDuration: UInt32)] = []
        var added = 0
        for traf in try MP4.children(moof.payload, base: moof.payloadOffset) where traf.type == "traf" {
            let kids = try MP4.children(traf.payload, base: traf.payloadOffset)
            guard let tfhd = kids.first(where: { $0.type == "tfhd" }) else {
                throw invalidData(Self.component, "'traf' without a 'tfhd' box", at: traf.offset)
            }
            var base = moof.offset
            var defaultDuration = defaults.duration, defaultSize = defaults.size
            let id: UInt32 = try MP4.read(tfhd) { r in
                let flags = try r.u32be() & 0xFF_FFFF
                let id = try r.u32be()
                if flags & 0x1 != 0 {
                    let b = try r.u64be()
                    guard b < 1 << 60 else { throw invalidData(Self.component, "base data offset \(b) is out of range", at: tfhd.offset) }
                    base = Int64(b)
                }
                if flags & 0x2 != 0 { try r.skip(4) }
                if flags & 0x8 != 0 { defaultDuration = try r.u32be() }
                if flags & 0x10 != 0 { defaultSize = try r.u32be() }
                return id
            }
            guard id == trackID else { continue }
            var next = base
            for trun in kids where trun.type == "trun" {
                try MP4.read(trun) { r in
                    let flags = try r.u32be() & 0xFF_FFFF
                    let rawCount = try r.u32be()
                    var dataOffset = next
                    if flags & 0x1 != 0 { dataOffset = base + Int64(Int32(bitPattern: try r.u32be())) }
                    if flags & 0x4 != 0 { try r.skip(4) }
                    var perSample = 0
                    for bit in [0x100, 0x200, 0x400, 0x800] where flags & UInt32(bit) != 0 { perSample += 4 }
                    let n: Int
                    if perSample > 0 {
                        n = try MP4.checkEntries(rawCount, entryBytes: perSample, in: r, box: "trun", limits: out.limits)
                    } else {
                        // Nothing per sample: the count is not backed by bytes in the box.
                        n = Int(rawCount)
                        guard n <= 1 << 20 else {
                            throw limitExceeded(Self.component, "'trun' claims \(n) samples with no per-sample data (more than \(1 << 20))", at: trun.offset)
                        }
                    }
                    guard table.sampleCount + added + n <= out.limits.maximumTableEntries else {
                        throw limitExceeded(Self.component, "fragments hold more than \(out.limits.maximumTableEntries) samples", at: trun.offset)
                    }
                    guard dataOffset >= 0, dataOffset < 1 << 60 else {
                        throw invalidData(Self.component, "'trun' data offset \(dataOffset) is out of range", at: trun.offset)
                    }
                    // Per-sample arrays only for what the box holds per sample (bounded by its
                    // bytes); a default size stays one value.
                    var sizes = [UInt32](repeating: 0, count: flags & 0x200 != 0 ? n : 0)
                    var durations = [UInt32](repeating: defaultDuration, count: flags & 0x100 != 0 ? n : 0)
                    var bytes: Int64 = flags & 0x200 != 0 ? 0 : Int64(defaultSize) * Int64(n)
                    for i in 0..<n {
                        if flags & 0x100 != 0 { durations[i] = try r.u32be() }
                        if flags & 0x200 != 0 { sizes[i] = try r.u32be(); bytes += Int64(sizes[i]) }
                        if flags & 0x400 != 0 { try r.skip(4) }
                        if flags & 0x800 != 0 { try r.skip(4) }
                    }
                    runs.append((dataOffset, flags & 0x200 != 0 ? .explicit(sizes) : .constant(defaultSize, count: n), durations, defaultDuration))
                    added += n
                    next = dataOffset + bytes
                }
            }
        }
        // Commit.
        lastFragmentOffset = moof.offset
        let wasEmpty = table.sampleCount == 0
        let c = InputArithmetic(Self.component, at: moof.offset)
        var updated = table
        for run in runs {
            try updated.appendRun(offset: run.offset, sizes: run.sizes, durations: run.durations, defaultDuration: run.defaultDuration, c)
        }
        table = updated
        cursor = table.cursor(at: cursor.sample)
        if wasEmpty && table.sampleCount > 0 {
            out.set(\.dataOffset, table.offset(ofSample: 0), .dataOffset)
            out.ready()
        }
    }

    // MARK: Seeking

    mutating func seek(toPacket packet: Int64, _ out: inout ParseOutput) throws(AudioError) -> AudioFileStreamSeekResult {
        guard movieParsed else {
            throw AudioError(.invalidState, component: Self.component, "cannot seek before the 'moov' box is parsed", osStatus: 0x6473_6F6E)
        }
        guard packet >= 0 else {
            throw AudioError(.invalidArgument, component: Self.component, "packet \(packet) is negative")
        }
        let dataOffset = out.info.dataOffset ?? 0
        let count = Int64(table.sampleCount)
        if packet < count || (packet == count && !fragmented && count > 0) {
            let at = table.offset(ofSample: Int(packet))
            return AudioFileStreamSeekResult(byteOffset: at, dataByteOffset: at - dataOffset, isEstimated: false, packetIndex: packet)
        }
        if fragmented {
            // Beyond the fragments seen: resume at the next unread top-level box.
            let at = max(furthestBoxEnd, 0)
            return AudioFileStreamSeekResult(byteOffset: at, dataByteOffset: at - dataOffset, isEstimated: true, packetIndex: count)
        }
        throw AudioError(.invalidArgument, component: Self.component, "packet \(packet) is past the last packet (\(count))")
    }

    mutating func resume(at offset: Int64, packetIndex: Int64?, _ out: inout ParseOutput) {
        guard movieParsed else { mode = .boxes; return }
        let range = mdats.first { offset >= $0.start && offset < ($0.end ?? Int64.max) }
        if let p = packetIndex {
            if p < Int64(table.sampleCount) {
                cursor = table.cursor(at: Int(p))
                mode = .data(end: range?.end)
            } else {
                cursor = table.cursor(at: table.sampleCount)
                mode = .boxes
            }
            return
        }
        if let range, offset > range.start {
            let s = table.firstSample(atOrAfter: offset)
            cursor = table.cursor(at: s)
            out.nextPacketIndex = Int64(s)
            mode = .data(end: range.end)
        } else {
            mode = .boxes
        }
    }

    func frame(forPacket packet: Int64) -> Int64? {
        guard let format, format.asbd.framesPerPacket == 0, packet >= 0 else { return nil }
        var left = packet, frames: Int64 = 0
        for (count, delta) in zip(table.durationCounts, table.durationDeltas) {
            let n = min(left, Int64(count))
            frames += n * Int64(scaledDuration(delta))
            left -= n
            if left == 0 { return frames }
        }
        return left == 0 ? frames : nil
    }
}
