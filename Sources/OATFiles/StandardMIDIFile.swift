import OATCore

/// A Standard MIDI File (SMF, types 0, 1 and 2) as tracks of timed messages: what
/// `MusicSequenceFileLoad` reads and `MusicSequenceFileCreate` writes.
///
/// Times are in ticks of the header's division (ticks per quarter note; SMPTE divisions are
/// read and kept as ``Division/smpte(framesPerSecond:ticksPerFrame:)``). Running status, note
/// on with velocity 0, System Exclusive (`F0` and `F7` escapes) and meta events are decoded;
/// the parser never traps on input and names the offset of what is wrong.
public struct StandardMIDIFile: Sendable, Equatable {
    /// The header's time division.
    public enum Division: Sendable, Equatable {
        /// Ticks per quarter note (1...32767).
        case ticksPerQuarter(Int)
        /// SMPTE: frames per second (24, 25, 29 (drop frame 30), 30) and ticks per frame.
        case smpte(framesPerSecond: Int, ticksPerFrame: Int)
    }

    /// One timed message of a track.
    public struct Event: Sendable, Equatable {
        /// Absolute time in ticks from the start of the track.
        public var tick: Int
        /// What it is.
        public var message: Message
        /// Creates an event.
        public init(tick: Int, message: Message) {
            self.tick = tick
            self.message = message
        }
    }

    /// A message of a track.
    public enum Message: Sendable, Equatable {
        /// A channel message: status (0x80...0xEF) and its one or two data bytes (data2 is 0
        /// for program change and channel pressure).
        case channel(status: UInt8, data1: UInt8, data2: UInt8)
        /// System Exclusive: the bytes as sent (`F0 ... F7` for an `F0` event; an `F7` escape's
        /// bytes as they are).
        case sysex([UInt8])
        /// A meta event (`FF type length data`); end-of-track is not kept as an event.
        case meta(type: UInt8, data: [UInt8])
    }

    /// The file's format (0: one track, 1: simultaneous tracks, 2: independent patterns).
    public var format: Int
    /// The time division.
    public var division: Division
    /// The tracks, each sorted by tick; ``trackLengths`` holds where each one's end-of-track is.
    public var tracks: [[Event]]
    /// The tick of each track's end-of-track event.
    public var trackLengths: [Int]

    /// Creates a file.
    public init(format: Int, division: Division, tracks: [[Event]], trackLengths: [Int]? = nil) {
        self.format = format
        self.division = division
        self.tracks = tracks
        self.trackLengths = trackLengths ?? tracks.map { $0.last?.tick ?? 0 }
    }

    /// Ticks per quarter note (for SMPTE divisions: ticks per second / 2, the quarter at 120 bpm).
    public var ticksPerQuarter: Int {
        switch division {
        case .ticksPerQuarter(let t): return t
        case .smpte(let fps, let tpf): return max(1, fps * tpf / 2)
        }
    }

    // MARK: Reading

    /// Reads `bytes` as a Standard MIDI File. Throws `AudioError(.invalidData)` naming the
    /// chunk and byte offset when the file is not one or is cut short.
    public init(bytes: [UInt8]) throws(AudioError) {
        var r = Reader(bytes: bytes)
        guard bytes.count >= 14, r.peekTag() == "MThd" else {
            // RIFF-wrapped MIDI (RMID) holds an SMF in its "data" chunk.
            if bytes.count >= 20, String(decoding: bytes[0..<4], as: UTF8.self) == "RIFF", String(decoding: bytes[8..<12], as: UTF8.self) == "RMID" {
                var o = 12
                while o + 8 <= bytes.count {
                    let tag = String(decoding: bytes[o..<o + 4], as: UTF8.self)
                    let size = Int(bytes[o + 4]) | Int(bytes[o + 5]) << 8 | Int(bytes[o + 6]) << 16 | Int(bytes[o + 7]) << 24
                    if tag == "data", o + 8 + size <= bytes.count {
                        self = try StandardMIDIFile(bytes: Array(bytes[(o + 8)..<(o + 8 + size)]))
                        return
                    }
                    o += 8 + size + (size & 1)
                }
            }
            throw AudioError(.invalidData, component: "StandardMIDIFile", "not a Standard MIDI File: no MThd header at offset 0", offset: 0)
        }
        r.offset = 4
        let headerLength = try r.u32("MThd length")
        guard headerLength >= 6, headerLength <= 1 << 20 else {
            throw AudioError(.invalidData, component: "StandardMIDIFile", "MThd length \(headerLength) is not 6", offset: 4)
        }
        let format = try r.u16("format")
        let trackCount = try r.u16("track count")
        let divisionWord = try r.u16("division")
        guard format <= 2 else {
            throw AudioError(.unsupportedFormat, component: "StandardMIDIFile", "SMF format \(format) (only 0, 1 and 2 exist)", offset: 8)
        }
        let division: Division
        if divisionWord & 0x8000 != 0 {
            let fps = Int(256 - (divisionWord >> 8))
            let tpf = Int(divisionWord & 0xFF)
            guard [24, 25, 29, 30].contains(fps), tpf > 0 else {
                throw AudioError(.invalidData, component: "StandardMIDIFile", "SMPTE division \(fps) fps x \(tpf) ticks is not valid", offset: 12)
            }
            division = .smpte(framesPerSecond: fps, ticksPerFrame: tpf)
        } else {
            guard divisionWord > 0 else {
                throw AudioError(.invalidData, component: "StandardMIDIFile", "division of 0 ticks per quarter note", offset: 12)
            }
            division = .ticksPerQuarter(Int(divisionWord))
        }
        r.offset = 8 + Int(headerLength)
        var tracks: [[Event]] = []
        var lengths: [Int] = []
        while tracks.count < Int(trackCount), r.offset + 8 <= bytes.count {
            let chunkStart = r.offset
            let tag = r.peekTag()
            r.offset += 4
            let length = Int(try r.u32("chunk length"))
            let bodyStart = r.offset
            guard tag == "MTrk" else {
                // Unknown chunks are skipped, as the specification asks.
                r.offset = min(bytes.count, bodyStart + length)
                continue
            }
            guard bodyStart + length <= bytes.count else {
                throw AudioError(.invalidData, component: "StandardMIDIFile",
                                 "track \(tracks.count) (MTrk at offset \(chunkStart)) declares \(length) bytes, the file has \(bytes.count - bodyStart)",
                                 offset: Int64(chunkStart))
            }
            let (events, end) = try Self.parseTrack(bytes, from: bodyStart, to: bodyStart + length, index: tracks.count)
            tracks.append(events)
            lengths.append(end)
            r.offset = bodyStart + length
        }
        guard tracks.count == Int(trackCount) else {
            throw AudioError(.invalidData, component: "StandardMIDIFile",
                             "the header declares \(trackCount) tracks, the file holds \(tracks.count) (cut short at offset \(r.offset))",
                             offset: Int64(r.offset))
        }
        self.format = Int(format)
        self.division = division
        self.tracks = tracks
        self.trackLengths = lengths
    }

    private static func parseTrack(_ b: [UInt8], from start: Int, to end: Int, index: Int) throws(AudioError) -> ([Event], Int) {
        var events: [Event] = []
        var o = start
        var tick = 0
        var running: UInt8 = 0
        func fail(_ what: String, _ at: Int) -> AudioError {
            AudioError(.invalidData, component: "StandardMIDIFile", "track \(index): \(what) at offset \(at)", offset: Int64(at))
        }
        func vlq() throws(AudioError) -> Int {
            var v = 0
            for _ in 0..<4 {
                guard o < end else { throw fail("variable-length number cut short", o) }
                let c = b[o]
                o += 1
                v = v << 7 | Int(c & 0x7F)
                if c & 0x80 == 0 { return v }
            }
            throw fail("variable-length number longer than 4 bytes", o - 4)
        }
        while o < end {
            let delta = try vlq()
            tick += delta
            guard tick <= Int(Int32.max) else { throw fail("time beyond 2^31 ticks", o) }
            guard o < end else { throw fail("event cut short", o) }
            var status = b[o]
            if status < 0x80 {
                guard running != 0 else { throw fail(hex2(status) + " data byte with no running status", o) }
                status = running
            } else {
                o += 1
            }
            switch status {
            case 0xFF:
                guard o < end else { throw fail("meta event cut short", o) }
                let type = b[o]
                o += 1
                let length = try vlq()
                guard o + length <= end else { throw fail("meta event 0x\(hex2(type)) of \(length) bytes runs past the track end", o) }
                let data = Array(b[o..<(o + length)])
                o += length
                if type == 0x2F { return (events, tick) }
                events.append(Event(tick: tick, message: .meta(type: type, data: data)))
                running = 0
            case 0xF0, 0xF7:
                let length = try vlq()
                guard o + length <= end else { throw fail("System Exclusive of \(length) bytes runs past the track end", o) }
                let data = Array(b[o..<(o + length)])
                o += length
                events.append(Event(tick: tick, message: .sysex(status == 0xF0 ? [0xF0] + data : data)))
                running = 0
            case 0x80...0xEF:
                running = status
                let two = !(0xC0...0xDF).contains(status)
                guard o + (two ? 2 : 1) <= end else { throw fail("channel message cut short", o) }
                let d1 = b[o] & 0x7F
                let d2 = two ? b[o + 1] & 0x7F : 0
                o += two ? 2 : 1
                events.append(Event(tick: tick, message: .channel(status: status, data1: d1, data2: d2)))
            default:
                throw fail("status byte 0x\(hex2(status)) is not allowed in a track", o - 1)
            }
        }
        // No end-of-track meta: the track ends at its last event (lenient, as readers are).
        return (events, tick)
    }

    // MARK: Writing

    /// The file's bytes: header and one `MTrk` per track, running status off, each track closed
    /// with end-of-track at its ``trackLengths`` tick (or its last event, if later).
    public func bytes() -> [UInt8] {
        var out: [UInt8] = Array("MThd".utf8)
        Self.append32(&out, 6)
        Self.append16(&out, UInt16(format))
        Self.append16(&out, UInt16(tracks.count))
        switch division {
        case .ticksPerQuarter(let t): Self.append16(&out, UInt16(clamping: t))
        case .smpte(let fps, let tpf): out.append(UInt8(truncatingIfNeeded: 256 - fps)); out.append(UInt8(clamping: tpf))
        }
        for (i, track) in tracks.enumerated() {
            var body: [UInt8] = []
            var last = 0
            for e in track.sorted(by: { $0.tick < $1.tick }) {
                Self.appendVLQ(&body, max(0, e.tick - last))
                last = max(last, e.tick)
                switch e.message {
                case .channel(let s, let d1, let d2):
                    body.append(s)
                    body.append(d1 & 0x7F)
                    if !(0xC0...0xDF).contains(s) { body.append(d2 & 0x7F) }
                case .sysex(let data):
                    if data.first == 0xF0 {
                        body.append(0xF0)
                        Self.appendVLQ(&body, data.count - 1)
                        body += data.dropFirst()
                    } else {
                        body.append(0xF7)
                        Self.appendVLQ(&body, data.count)
                        body += data
                    }
                case .meta(let type, let data):
                    body.append(0xFF)
                    body.append(type)
                    Self.appendVLQ(&body, data.count)
                    body += data
                }
            }
            let end = i < trackLengths.count ? max(trackLengths[i], last) : last
            Self.appendVLQ(&body, end - last)
            body += [0xFF, 0x2F, 0x00]
            out += Array("MTrk".utf8)
            Self.append32(&out, UInt32(body.count))
            out += body
        }
        return out
    }

    static func append16(_ o: inout [UInt8], _ v: UInt16) { o.append(UInt8(v >> 8)); o.append(UInt8(v & 0xFF)) }
    static func append32(_ o: inout [UInt8], _ v: UInt32) { for s in [24, 16, 8, 0] { o.append(UInt8((v >> UInt32(s)) & 0xFF)) } }
    static func appendVLQ(_ o: inout [UInt8], _ value: Int) {
        var v = min(max(0, value), 0x0FFF_FFFF)
        var stack: [UInt8] = [UInt8(v & 0x7F)]
        v >>= 7
        while v > 0 {
            stack.append(UInt8(v & 0x7F) | 0x80)
            v >>= 7
        }
        o += stack.reversed()
    }

    private struct Reader {
        let bytes: [UInt8]
        var offset = 0
        func peekTag() -> String {
            guard offset + 4 <= bytes.count else { return "" }
            return String(decoding: bytes[offset..<(offset + 4)], as: UTF8.self)
        }
        mutating func u16(_ what: String) throws(AudioError) -> UInt16 {
            guard offset + 2 <= bytes.count else {
                throw AudioError(.invalidData, component: "StandardMIDIFile", "\(what) cut short at offset \(offset)", offset: Int64(offset))
            }
            defer { offset += 2 }
            return UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
        }
        mutating func u32(_ what: String) throws(AudioError) -> UInt32 {
            guard offset + 4 <= bytes.count else {
                throw AudioError(.invalidData, component: "StandardMIDIFile", "\(what) cut short at offset \(offset)", offset: Int64(offset))
            }
            defer { offset += 4 }
            return UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
        }
    }
}

/// Two hex digits.
private func hex2(_ byte: UInt8) -> String {
    let digits = Array("0123456789ABCDEF")
    return String([digits[Int(byte >> 4)], digits[Int(byte & 15)]])
}
