import OATCore

/// A marker in a file: a named position (Apple's `AudioFileMarker`, Swift form). Read from WAV
/// `cue ` (names from `LIST`/`adtl` `labl`), AIFF `MARK` and CAF `mark` (names from `strg`).
public struct AudioFileMarkerInfo: Equatable, Sendable {
    /// Frame position from the start of the audio data.
    public var framePosition: Double
    /// The marker's name, if the file gives one.
    public var name: String?
    /// The file's identifier of the marker.
    public var markerID: Int32
    /// Marker type: 0 (generic) or a CAF marker type code (`'rbeg'`, `'rend'`, `'slls'`...).
    public var type: UInt32
    /// Channel (0: all channels).
    public var channel: UInt16

    /// A marker.
    public init(framePosition: Double, name: String? = nil, markerID: Int32, type: UInt32 = 0, channel: UInt16 = 0) {
        self.framePosition = framePosition
        self.name = name
        self.markerID = markerID
        self.type = type
        self.channel = channel
    }

    /// CAF marker types used for the markers of regions (CAFFile.h's `kCAFMarkerType_*`).
    public static let regionStart: UInt32 = 0x7262_6567 // 'rbeg'
    /// End of a region.
    public static let regionEnd: UInt32 = 0x7265_6E64 // 'rend'
    /// Start of a sustain loop.
    public static let sustainLoopStart: UInt32 = 0x736C_6C73 // 'slls'
    /// End of a sustain loop.
    public static let sustainLoopEnd: UInt32 = 0x736C_6C65 // 'slle'
    /// Start of a release loop.
    public static let releaseLoopStart: UInt32 = 0x726C_6C73 // 'rlls'
    /// End of a release loop.
    public static let releaseLoopEnd: UInt32 = 0x726C_6C65 // 'rlle'
}

/// A region of a file: a segment between markers, maybe looped (Apple's `AudioFileRegion`,
/// Swift form). Read from WAV `ltxt` labelled text, AIFF `INST` loops and CAF `regn`.
public struct AudioFileRegionInfo: Equatable, Sendable {
    /// The file's identifier of the region.
    public var regionID: UInt32
    /// The region's name, if the file gives one.
    public var name: String?
    /// Apple's `AudioFileRegionFlags` bits: 1 loop, 2 play forward, 4 play backward.
    public var flags: UInt32
    /// The region's markers (start and end, at least).
    public var markers: [AudioFileMarkerInfo]

    /// A region.
    public init(regionID: UInt32, name: String? = nil, flags: UInt32, markers: [AudioFileMarkerInfo]) {
        self.regionID = regionID
        self.name = name
        self.flags = flags
        self.markers = markers
    }
}

/// Most markers or regions kept from one chunk (a hostile count cannot make the list huge; each
/// entry needs its bytes in the chunk anyway).
let maximumMarkerEntries = 1 << 16

// MARK: - WAV: cue, LIST/adtl

/// What the WAV `cue ` and `LIST`/`adtl` chunks say, combined into markers and regions.
struct WAVCueInfo {
    /// Cue points in file order: identifier and sample frame.
    var cues: [(id: UInt32, frame: UInt32)] = []
    /// `labl` names by cue identifier.
    var labels: [UInt32: String] = [:]
    /// `ltxt` segments by cue identifier: length in frames and text.
    var segments: [(id: UInt32, length: UInt32, text: String)] = []


    /// Reads a `cue ` chunk body: a count, then 24-byte points (identifier, play order position,
    /// data chunk ID, chunk start, block start, sample offset). The count is bounded by the body.
    mutating func readCue(_ body: UnsafeRawBufferPointer, bigEndian: Bool) {
        var r = ByteReader(body)
        guard let n = try? r.integer(UInt32.self, bigEndian: bigEndian) else { return }
        let count = min(Int(n), r.remaining / 24, maximumMarkerEntries)
        var out: [(UInt32, UInt32)] = []
        for _ in 0..<count {
            guard let id = try? r.integer(UInt32.self, bigEndian: bigEndian) else { break }
            _ = try? r.skip(16)
            guard let sample = try? r.integer(UInt32.self, bigEndian: bigEndian) else { break }
            out.append((id, sample))
        }
        cues = out.map { (id: $0.0, frame: $0.1) }
    }

    /// Reads the sub-chunks of a `LIST`/`adtl` body (after the `adtl` type): `labl` (cue
    /// identifier and a NUL-terminated name) and `ltxt` (cue identifier, length in frames, purpose,
    /// country, language, dialect, code page, text).
    mutating func readAssociatedData(_ body: UnsafeRawBufferPointer, bigEndian: Bool) {
        var r = ByteReader(body)
        var entries = 0
        while r.remaining >= 8, entries < maximumMarkerEntries {
            entries += 1
            guard let id = try? r.fourCC(), let size = try? r.integer(UInt32.self, bigEndian: bigEndian) else { break }
            let n = Int(min(Int64(size), Int64(r.remaining)))
            guard let sub = try? r.slice(n) else { break }
            if size & 1 == 1, r.remaining > 0 { r.position += 1 }
            var s = ByteReader(sub)
            switch id {
            case "labl":
                guard let cue = try? s.integer(UInt32.self, bigEndian: bigEndian) else { continue }
                let text = cString(UnsafeRawBufferPointer(rebasing: sub[s.position...]))
                if !text.isEmpty { labels[cue] = text }
            case "ltxt":
                guard let cue = try? s.integer(UInt32.self, bigEndian: bigEndian),
                      let length = try? s.integer(UInt32.self, bigEndian: bigEndian), (try? s.skip(12)) != nil else { continue }
                segments.append((id: cue, length: length, text: cString(UnsafeRawBufferPointer(rebasing: sub[s.position...]))))
            default:
                continue
            }
        }
    }

    /// Markers (one per cue point, named by its `labl`) and regions (one per `ltxt` with a length,
    /// from its cue point's frame for its length, played forward once).
    var markers: [AudioFileMarkerInfo] {
        cues.map { AudioFileMarkerInfo(framePosition: Double($0.frame), name: labels[$0.id], markerID: Int32(bitPattern: $0.id)) }
    }

    var regions: [AudioFileRegionInfo] {
        guard !segments.isEmpty else { return [] }
        var frames: [UInt32: UInt32] = [:] // first cue point of each identifier (a lookup, not a scan per segment)
        for cue in cues where frames[cue.id] == nil { frames[cue.id] = cue.frame }
        return segments.compactMap { seg -> AudioFileRegionInfo? in
            guard seg.length > 0, let frame = frames[seg.id] else { return nil }
            let name = labels[seg.id] ?? (seg.text.isEmpty ? nil : seg.text)
            let start = Double(frame)
            let id = Int32(bitPattern: seg.id)
            return AudioFileRegionInfo(regionID: seg.id, name: name, flags: 2, markers: [
                AudioFileMarkerInfo(framePosition: start, name: name, markerID: id, type: AudioFileMarkerInfo.regionStart),
                AudioFileMarkerInfo(framePosition: start + Double(seg.length), name: name, markerID: id, type: AudioFileMarkerInfo.regionEnd),
            ])
        }
    }
}

/// Text up to the first NUL (or the end), decoded as the tag readers do.
func cString(_ raw: UnsafeRawBufferPointer) -> String { decodeText(raw) }

// MARK: - AIFF: MARK, INST

/// What the AIFF `MARK` and `INST` chunks say.
struct AIFFMarkerInfo {
    /// Markers in file order.
    var marks: [AudioFileMarkerInfo] = []
    /// Sustain and release loops: play mode (0 none, 1 forward, 2 forward-backward), begin and
    /// end marker identifiers.
    var loops: [(mode: Int16, begin: Int16, end: Int16)] = []


    /// Reads a `MARK` body: a count, then markers (identifier, frame position, Pascal string
    /// padded to an even length).
    mutating func readMarkers(_ body: UnsafeRawBufferPointer) {
        var r = ByteReader(body)
        guard let n = try? r.u16be() else { return }
        var out: [AudioFileMarkerInfo] = []
        for _ in 0..<min(Int(n), maximumMarkerEntries) {
            guard let id = try? r.u16be(), let position = try? r.u32be(), let length = try? r.u8() else { break }
            guard let text = try? r.slice(Int(length)) else { break }
            if (Int(length) + 1) & 1 == 1 { _ = try? r.skip(1) }
            let name = decodeText(text).trimmingSpaces()
            out.append(AudioFileMarkerInfo(framePosition: Double(position), name: name.isEmpty ? nil : name, markerID: Int32(Int16(bitPattern: id))))
        }
        marks = out
    }

    /// Reads an `INST` body: six note/velocity bytes, gain, then the sustain and release loops.
    mutating func readInstrument(_ body: UnsafeRawBufferPointer) {
        var r = ByteReader(body)
        guard (try? r.skip(8)) != nil else { return }
        var out: [(Int16, Int16, Int16)] = []
        for _ in 0..<2 {
            guard let mode = try? r.u16be(), let begin = try? r.u16be(), let end = try? r.u16be() else { break }
            out.append((Int16(bitPattern: mode), Int16(bitPattern: begin), Int16(bitPattern: end)))
        }
        loops = out.map { (mode: $0.0, begin: $0.1, end: $0.2) }
    }

    /// Regions: one per loop that plays (region 1 the sustain loop, 2 the release loop), with
    /// its begin and end markers; flags loop + forward (+ backward for forward-backward).
    var regions: [AudioFileRegionInfo] {
        loops.enumerated().compactMap { (i, loop) -> AudioFileRegionInfo? in
            guard loop.mode == 1 || loop.mode == 2,
                  let begin = marks.first(where: { $0.markerID == Int32(loop.begin) }),
                  let end = marks.first(where: { $0.markerID == Int32(loop.end) }) else { return nil }
            var b = begin, e = end
            b.type = i == 0 ? AudioFileMarkerInfo.sustainLoopStart : AudioFileMarkerInfo.releaseLoopStart
            e.type = i == 0 ? AudioFileMarkerInfo.sustainLoopEnd : AudioFileMarkerInfo.releaseLoopEnd
            return AudioFileRegionInfo(regionID: UInt32(i + 1), flags: loop.mode == 1 ? 3 : 7, markers: [b, e])
        }
    }
}

// MARK: - CAF: mark, regn, strg

/// What the CAF `mark`, `regn` and `strg` chunks say.
struct CAFMarkerInfo {
    var marks: [AudioFileMarkerInfo] = []
    var regionList: [AudioFileRegionInfo] = []
    /// `strg` strings by identifier (marker names: a marker's identifier names its string).
    var strings: [UInt32: String] = [:]

    /// One 28-byte CAF marker: type, frame position (Float64), identifier, SMPTE time (8 bytes),
    /// channel. Nil when the bytes end, or the position is not a finite frame.
    private static func marker(_ r: inout ByteReader) -> AudioFileMarkerInfo? {
        guard let type = try? r.u32be(), let bits = try? r.u64be(), let id = try? r.u32be(), (try? r.skip(8)) != nil,
              let channel = try? r.u32be() else { return nil }
        let position = Double(bitPattern: bits)
        guard position.isFinite else { return nil }
        return AudioFileMarkerInfo(framePosition: position, markerID: Int32(bitPattern: id), type: type, channel: UInt16(truncatingIfNeeded: channel))
    }

    /// Reads a `mark` body: SMPTE time type, count, markers.
    mutating func readMarkers(_ body: UnsafeRawBufferPointer) {
        var r = ByteReader(body)
        guard (try? r.skip(4)) != nil, let n = try? r.u32be() else { return }
        var out: [AudioFileMarkerInfo] = []
        for _ in 0..<min(Int(n), r.remaining / 28, maximumMarkerEntries) {
            guard let m = Self.marker(&r) else { break }
            out.append(m)
        }
        marks = out
    }

    /// Reads a `regn` body: SMPTE time type, count, regions (identifier, flags, marker count,
    /// markers).
    mutating func readRegions(_ body: UnsafeRawBufferPointer) {
        var r = ByteReader(body)
        guard (try? r.skip(4)) != nil, let n = try? r.u32be() else { return }
        var out: [AudioFileRegionInfo] = []
        for _ in 0..<min(Int(n), maximumMarkerEntries) {
            guard let id = try? r.u32be(), let flags = try? r.u32be(), let count = try? r.u32be() else { break }
            var markers: [AudioFileMarkerInfo] = []
            for _ in 0..<min(Int(count), r.remaining / 28) {
                guard let m = Self.marker(&r) else { break }
                markers.append(m)
            }
            out.append(AudioFileRegionInfo(regionID: id, flags: flags, markers: markers))
        }
        regionList = out
    }

    /// Reads a `strg` body: count, (identifier, offset) entries, then NUL-terminated UTF-8 strings
    /// at those offsets from the end of the entries.
    mutating func readStrings(_ body: UnsafeRawBufferPointer) {
        var r = ByteReader(body)
        guard let n = try? r.u32be() else { return }
        let count = min(Int(n), r.remaining / 12, maximumMarkerEntries)
        var entries: [(UInt32, UInt64)] = []
        for _ in 0..<count {
            guard let id = try? r.u32be(), let offset = try? r.u64be() else { break }
            entries.append((id, offset))
        }
        let data = UnsafeRawBufferPointer(rebasing: body[r.position...])
        var out: [UInt32: String] = [:]
        for (id, offset) in entries where offset < UInt64(data.count) {
            let text = cString(UnsafeRawBufferPointer(rebasing: data[Int(offset)...]))
            if !text.isEmpty { out[id] = text }
        }
        strings = out
    }

    /// The markers, named from `strg`.
    var markers: [AudioFileMarkerInfo] { marks.map { named($0) } }
    /// The regions, their markers named from `strg`.
    var regions: [AudioFileRegionInfo] {
        regionList.map { region in
            var r = region
            r.markers = r.markers.map { named($0) }
            return r
        }
    }

    private func named(_ m: AudioFileMarkerInfo) -> AudioFileMarkerInfo {
        var m = m
        if m.name == nil { m.name = strings[UInt32(bitPattern: m.markerID)] }
        return m
    }
}
