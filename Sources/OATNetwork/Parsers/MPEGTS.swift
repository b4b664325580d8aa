import OATCore

/// The audio codec an MPEG-TS program carries, from its PMT stream type.
public enum MPEGTSAudioCodec: String, Sendable, Equatable {
    /// AAC in ADTS (stream type 0x0F).
    case aacADTS
    /// MPEG-1/2 audio layers I-III (stream types 0x03, 0x04).
    case mpegAudio

    /// The MIME type of the elementary stream.
    public var contentType: String { self == .aacADTS ? "audio/aac" : "audio/mpeg" }
}

/// What ``MPEGTSDemuxer`` produced so far. The caller may consume and clear `audio`, `audioPTS`
/// and `id3` between calls; offsets keep counting from the demuxer's start.
public struct MPEGTSOutput: Sendable, Equatable {
    /// Elementary audio bytes (ADTS or MPEG audio frames), appended in stream order.
    public var audio: [UInt8] = []
    /// For each audio PES that had a PTS: the total audio byte count before its first byte, and the PTS.
    public var audioPTS: [PTSMark] = []
    /// Timed ID3 tags (stream type 0x15) in arrival order.
    public var id3: [TimedTag] = []
    /// Creates empty output.
    public init() {}

    /// An audio PES start with its presentation time stamp.
    public struct PTSMark: Sendable, Equatable {
        /// Total audio bytes output before this PES.
        public var audioOffset: Int64
        /// The 33-bit PTS in 90 kHz units.
        public var pts: Int64
    }

    /// One timed ID3 PES.
    public struct TimedTag: Sendable, Equatable {
        /// The PTS of the ID3 PES (90 kHz), if it had one.
        public var pts: Int64?
        /// The total audio bytes output when the tag arrived (a fallback position).
        public var audioOffsetAtArrival: Int64
        /// The tag bytes (an ID3v2 tag).
        public var bytes: [UInt8]
    }

    /// Total audio bytes output so far (not reset when `audio` is cleared).
    public var audioBytesTotal: Int64 = 0

    /// The audio offset a timed tag applies at: the first audio PES whose PTS is at or after the
    /// tag's PTS (33-bit wrap aware); when no audio output so far is that late, the end of the
    /// audio output so far (the tag belongs to what follows).
    public func audioOffset(for tag: TimedTag) -> Int64 {
        guard let p = tag.pts else { return tag.audioOffsetAtArrival }
        for m in audioPTS {
            let d = (m.pts - p) & 0x1_FFFF_FFFF
            if d < 0x1_0000_0000 { return m.audioOffset }   // m.pts >= p modulo 2^33
        }
        return max(tag.audioOffsetAtArrival, audioBytesTotal)
    }
}

extension MPEGTSOutput {
    /// The audio offset a timed tag applies at, to the audio frame: within the last audio PES that
    /// starts at or before the tag's PTS, frames (ADTS or MPEG audio headers in `audio`) are
    /// stepped until the tag's time is reached. Falls back to ``audioOffset(for:)`` when the
    /// frames cannot be walked (unknown codec, `audio` cleared, broken headers).
    public func audioOffset(for tag: TimedTag, codec: MPEGTSAudioCodec?) -> Int64 {
        let coarse = audioOffset(for: tag)
        guard let codec, let p = tag.pts, !audioPTS.isEmpty, audioBytesTotal == Int64(audio.count) else { return coarse }
        // The last PES that starts at or before the tag (modulo 2^33).
        var start: PTSMark?
        var limit = Int64(audio.count)
        for (i, m) in audioPTS.enumerated() {
            let d = (p - m.pts) & 0x1_FFFF_FFFF
            if d < 0x1_0000_0000 {
                start = m
                limit = i + 1 < audioPTS.count ? audioPTS[i + 1].audioOffset : Int64(audio.count)
            }
        }
        guard let mark = start, mark.audioOffset >= 0, limit <= Int64(audio.count) else { return coarse }
        let target = (p - mark.pts) & 0x1_FFFF_FFFF
        var at = Int(mark.audioOffset)
        var elapsed: Int64 = 0
        while at < Int(limit) {
            if elapsed >= target { return Int64(at) }
            guard let f = AudioFrameHeader.parse(audio, at: at, codec: codec), f.length > 0, f.rate > 0 else { return coarse }
            elapsed += Int64(f.samples) * 90_000 / Int64(f.rate)
            at += f.length
        }
        return min(Int64(at), limit)
    }
}

/// The size and duration of one ADTS or MPEG audio frame, from its header.
struct AudioFrameHeader {
    var length: Int
    var samples: Int
    var rate: Int

    static let adtsRates = [96_000, 88_200, 64_000, 48_000, 44_100, 32_000, 24_000, 22_050, 16_000, 12_000, 11_025, 8_000, 7_350]
    static let mpeg1Bitrates: [[Int]] = [
        [0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448],   // layer I
        [0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384],      // layer II
        [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320],       // layer III
    ]
    static let mpeg2Bitrates: [[Int]] = [
        [0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256],
        [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
        [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
    ]

    static func parse(_ b: [UInt8], at i: Int, codec: MPEGTSAudioCodec) -> AudioFrameHeader? {
        guard i >= 0, i + 7 <= b.count, b[i] == 0xFF, b[i + 1] & 0xE0 == 0xE0 else { return nil }
        switch codec {
        case .aacADTS:
            guard b[i + 1] & 0x06 == 0 else { return nil }
            let rateIndex = Int(b[i + 2] >> 2 & 0x0F)
            guard rateIndex < adtsRates.count else { return nil }
            let length = Int(b[i + 3] & 0x03) << 11 | Int(b[i + 4]) << 3 | Int(b[i + 5] >> 5)
            guard length >= 7 else { return nil }
            return AudioFrameHeader(length: length, samples: 1024 * (Int(b[i + 6] & 0x03) + 1), rate: adtsRates[rateIndex])
        case .mpegAudio:
            let version = Int(b[i + 1] >> 3 & 3)      // 3 MPEG-1, 2 MPEG-2, 0 MPEG-2.5
            let layer = Int(b[i + 1] >> 1 & 3)        // 3 I, 2 II, 1 III
            let bitrateIndex = Int(b[i + 2] >> 4)
            let rateIndex = Int(b[i + 2] >> 2 & 3)
            guard version != 1, layer != 0, bitrateIndex != 0, bitrateIndex != 15, rateIndex != 3 else { return nil }
            let l = 3 - layer                          // 0 I, 1 II, 2 III
            let kbps = (version == 3 ? mpeg1Bitrates : mpeg2Bitrates)[l][bitrateIndex]
            let rate = [44_100, 48_000, 32_000][rateIndex] >> (version == 3 ? 0 : version == 2 ? 1 : 2)
            let padding = Int(b[i + 2] >> 1 & 1)
            let samples = l == 0 ? 384 : (l == 2 && version != 3 ? 576 : 1152)
            let length = l == 0 ? (12 * kbps * 1000 / rate + padding) * 4 : samples / 8 * kbps * 1000 / rate + padding
            return AudioFrameHeader(length: length, samples: samples, rate: rate)
        }
    }
}

/// An incremental MPEG transport stream demuxer for audio: finds the program (PAT, PMT), follows
/// its first AAC-ADTS or MPEG-audio stream and its timed-ID3 stream, reassembles PES packets and
/// outputs the elementary audio bytes with their PTS and the ID3 tags.
///
/// Any split of the input gives the same output. Broken sync is recovered by searching for two sync
/// bytes 188 bytes apart; continuity-counter gaps are counted in ``continuityErrors`` (the partial
/// ID3 PES is dropped, audio continues and the audio parser resynchronises); CRC-failing tables are
/// ignored. Memory is bounded: one partial packet, tables up to 4 KiB, ID3 PES up to
/// ``maximumID3Bytes``.
///
/// Thread safety: not thread-safe; one thread at a time.
public final class MPEGTSDemuxer {
    static let component = "MPEG-TS demuxer"
    /// The largest timed-ID3 PES kept; bigger ones are dropped and counted in ``droppedTags``.
    public var maximumID3Bytes = 1 << 20

    /// The audio codec of the selected stream, once the PMT was read.
    public private(set) var audioCodec: MPEGTSAudioCodec?
    /// The PID of the selected audio stream.
    public private(set) var audioPID: Int?
    /// The PID of the timed-ID3 stream, if any.
    public private(set) var id3PID: Int?
    /// Continuity-counter gaps seen on the followed PIDs.
    public private(set) var continuityErrors = 0
    /// Bytes skipped to regain sync.
    public private(set) var bytesSkipped: Int64 = 0
    /// Packets and tables ignored as malformed (bad adaptation field, transport error, CRC).
    public private(set) var malformedPackets = 0
    /// Timed-ID3 tags dropped (too large or cut by a continuity error).
    public private(set) var droppedTags = 0
    /// TS bytes consumed so far.
    public private(set) var inputOffset: Int64 = 0

    private var carry: [UInt8] = []
    private var synced = true
    private var pmtPID: Int?
    private var sections: [Int: [UInt8]] = [:]
    private var lastCC: [Int: UInt8] = [:]
    private var audio = PESState()
    private var meta = PESState()
    private var audioTotal: Int64 = 0

    private struct PESState {
        var active = false
        var header: [UInt8] = []
        var headerDone = false
        var pts: Int64?
        var body: [UInt8] = []
        var overflow = false
    }

    /// Creates a demuxer.
    public init() {}

    /// Feeds TS bytes; output is appended to `output`.
    public func parse(_ bytes: UnsafeRawBufferPointer, into output: inout MPEGTSOutput) {
        var input = bytes
        // Complete a carried partial packet first.
        while !input.isEmpty {
            if carry.isEmpty {
                // Fast path: whole packets straight from the input.
                var i = 0
                while input.count - i >= 189 || (synced && input.count - i >= 188) {
                    if input[i] == 0x47 && (synced || input[i + 188] == 0x47) {
                        synced = true
                        packet(UnsafeRawBufferPointer(rebasing: input[i..<(i + 188)]), into: &output)
                        i += 188
                        inputOffset += 188
                    } else {
                        synced = false
                        i += 1
                        inputOffset += 1
                        bytesSkipped += 1
                    }
                }
                carry.append(contentsOf: input[i...])
                return
            }
            let need = (synced ? 188 : 189) - carry.count
            let take = min(max(need, 0), input.count)
            carry.append(contentsOf: input[..<take])
            input = UnsafeRawBufferPointer(rebasing: input[take...])
            drainCarry(into: &output, final: false)
            if !carry.isEmpty && take == 0 { break }
        }
    }

    /// Processes what the carry buffer holds (whole packets; at the end a last unconfirmed packet).
    private func drainCarry(into output: inout MPEGTSOutput, final: Bool) {
        var i = 0
        while carry.count - i >= 189 || ((synced || final) && carry.count - i >= 188) {
            if carry[i] == 0x47 && (synced || carry.count - i < 189 || carry[i + 188] == 0x47) {
                synced = true
                let p = Array(carry[i..<(i + 188)])
                p.withUnsafeBytes { packet($0, into: &output) }
                i += 188
                inputOffset += 188
            } else {
                synced = false
                i += 1
                inputOffset += 1
                bytesSkipped += 1
            }
        }
        carry.removeFirst(i)
    }

    /// Ends the input: processes a last packet and flushes the open PES packets.
    public func finish(into output: inout MPEGTSOutput) {
        drainCarry(into: &output, final: true)
        inputOffset += Int64(carry.count)
        carry.removeAll()
        flushAudio(into: &output)
        flushMeta(into: &output)
    }

    private func packet(_ p: UnsafeRawBufferPointer, into output: inout MPEGTSOutput) {
        if p[1] & 0x80 != 0 { malformedPackets += 1; return }   // transport error indicator
        let pusi = p[1] & 0x40 != 0
        let pid = Int(p[1] & 0x1F) << 8 | Int(p[2])
        let afc = (p[3] >> 4) & 3
        let cc = p[3] & 0x0F
        var start = 4
        var discontinuityIndicator = false
        if afc & 2 != 0 {
            let len = Int(p[4])
            guard 5 + len <= 188 else { malformedPackets += 1; return }
            if len > 0 { discontinuityIndicator = p[5] & 0x80 != 0 }
            start = 5 + len
        }
        guard afc & 1 != 0, start < 188 else { return }
        let payload = UnsafeRawBufferPointer(rebasing: p[start..<188])
        let followed = pid == audioPID || pid == id3PID || pid == 0 || pid == pmtPID
        if followed {
            if let last = lastCC[pid], !discontinuityIndicator {
                if last == cc { return }   // a duplicate packet
                if (last &+ 1) & 0x0F != cc {
                    continuityErrors += 1
                    if pid == id3PID && meta.active { droppedTags += 1; meta = PESState() }
                    if pid == 0 || pid == pmtPID { sections[pid] = nil }
                }
            }
            lastCC[pid] = cc
        }
        if pid == 0 || pid == pmtPID {
            section(pid: pid, payload: payload, start: pusi)
        } else if pid == audioPID {
            if pusi { flushAudio(into: &output); audio = PESState(); audio.active = true }
            if audio.active { pesBytes(&audio, payload, isAudio: true, into: &output) }
        } else if pid == id3PID {
            if pusi { flushMeta(into: &output); meta = PESState(); meta.active = true }
            if meta.active { pesBytes(&meta, payload, isAudio: false, into: &output) }
        }
    }

    private func pesBytes(_ s: inout PESState, _ payload: UnsafeRawBufferPointer, isAudio: Bool, into output: inout MPEGTSOutput) {
        var data = payload
        if !s.headerDone {
            let before = s.header.count
            s.header.append(contentsOf: data.prefix(max(0, 9 + 255 - before)))
            guard s.header.count >= 6 else { return }
            guard s.header[0] == 0, s.header[1] == 0, s.header[2] == 1 else {
                malformedPackets += 1
                s.active = false
                return
            }
            let sid = s.header[3]
            var headerLength = 6
            let noOptional: Set<UInt8> = [0xBC, 0xBE, 0xBF, 0xF0, 0xF1, 0xF2, 0xF8, 0xFF]
            if !noOptional.contains(sid) {
                guard s.header.count >= 9 else { return }
                headerLength = 9 + Int(s.header[8])
                guard s.header.count >= headerLength else { return }
                if s.header[7] & 0x80 != 0 && headerLength >= 14 {
                    let b = s.header[9..<14].map { Int64($0) }
                    s.pts = (b[0] >> 1 & 7) << 30 | b[1] << 22 | (b[2] >> 1) << 15 | b[3] << 7 | b[4] >> 1
                }
            }
            s.headerDone = true
            // The part of this payload after the header.
            let consumedBefore = before
            let skip = headerLength - consumedBefore
            guard skip >= 0, skip <= data.count else {
                // Header spilled over from earlier packets beyond this payload: nothing left here.
                return
            }
            data = UnsafeRawBufferPointer(rebasing: data[skip...])
            if isAudio, let pts = s.pts {
                output.audioPTS.append(.init(audioOffset: audioTotal, pts: pts))
            }
        }
        guard !data.isEmpty else { return }
        if isAudio {
            output.audio.append(contentsOf: data)
            audioTotal += Int64(data.count)
            output.audioBytesTotal = audioTotal
        } else if !s.overflow {
            if s.body.count + data.count > maximumID3Bytes {
                s.overflow = true
                s.body = []
                droppedTags += 1
            } else {
                s.body.append(contentsOf: data)
            }
        }
    }

    private func flushAudio(into output: inout MPEGTSOutput) {
        audio.active = false
    }

    private func flushMeta(into output: inout MPEGTSOutput) {
        if meta.active && meta.headerDone && !meta.overflow && !meta.body.isEmpty {
            var body = meta.body
            // A metadata access-unit wrapper (ISO 13818-1 2.12.4: 5 bytes) before the ID3 tag.
            if body.count > 8, body[0] != 0x49, body[5] == 0x49, body[6] == 0x44, body[7] == 0x33 { body.removeFirst(5) }
            output.id3.append(.init(pts: meta.pts, audioOffsetAtArrival: audioTotal, bytes: body))
        }
        meta = PESState()
    }

    // MARK: PSI

    private func section(pid: Int, payload: UnsafeRawBufferPointer, start: Bool) {
        var data = payload
        if start {
            guard let pointer = data.first, 1 + Int(pointer) <= data.count else { malformedPackets += 1; sections[pid] = nil; return }
            if var pending = sections[pid] {
                pending.append(contentsOf: data[1..<(1 + Int(pointer))])
                sections[pid] = pending
                completeSections(pid: pid)
            }
            sections[pid] = []
            data = UnsafeRawBufferPointer(rebasing: data[(1 + Int(pointer))...])
        }
        guard var buffer = sections[pid] else { return }
        buffer.append(contentsOf: data)
        if buffer.count > 4096 { sections[pid] = nil; malformedPackets += 1; return }
        sections[pid] = buffer
        completeSections(pid: pid)
    }

    private func completeSections(pid: Int) {
        guard var buffer = sections[pid] else { return }
        while buffer.count >= 3 {
            if buffer[0] == 0xFF { buffer.removeAll(); break }   // stuffing
            let length = Int(buffer[1] & 0x0F) << 8 | Int(buffer[2])
            guard buffer.count >= 3 + length else { break }
            let sec = Array(buffer[0..<(3 + length)])
            buffer.removeFirst(3 + length)
            if length >= 9, MPEGTSDemuxer.crc32(sec) == 0 {
                if pid == 0 && sec[0] == 0x00 { pat(sec) }
                else if pid == pmtPID && sec[0] == 0x02 { pmt(sec) }
            } else {
                malformedPackets += 1
            }
        }
        sections[pid] = buffer
    }

    private func pat(_ s: [UInt8]) {
        var i = 8
        while i + 4 <= s.count - 4 {
            let program = Int(s[i]) << 8 | Int(s[i + 1])
            let pid = Int(s[i + 2] & 0x1F) << 8 | Int(s[i + 3])
            if program != 0 {
                if pmtPID != pid { pmtPID = pid; sections[pid] = nil }
                return
            }
            i += 4
        }
    }

    private func pmt(_ s: [UInt8]) {
        guard s.count >= 16 else { return }
        let programInfoLength = Int(s[10] & 0x0F) << 8 | Int(s[11])
        var i = 12 + programInfoLength
        var newAudio: (Int, MPEGTSAudioCodec)?
        var newID3: Int?
        while i + 5 <= s.count - 4 {
            let type = s[i]
            let pid = Int(s[i + 1] & 0x1F) << 8 | Int(s[i + 2])
            let esInfo = Int(s[i + 3] & 0x0F) << 8 | Int(s[i + 4])
            let descriptors = s[min(i + 5, s.count - 4)..<min(i + 5 + esInfo, s.count - 4)]
            switch type {
            case 0x0F where newAudio == nil: newAudio = (pid, .aacADTS)
            case 0x03, 0x04: if newAudio == nil { newAudio = (pid, .mpegAudio) }
            case 0x15 where newID3 == nil:
                // Metadata stream; ID3 by its metadata descriptor's format identifier (or assumed).
                let bytes = Array(descriptors)
                let id3 = bytes.count < 4 || (0..<(bytes.count - 3)).contains { bytes[$0] == 0x49 && bytes[$0 + 1] == 0x44 && bytes[$0 + 2] == 0x33 && bytes[$0 + 3] == 0x20 }
                if id3 { newID3 = pid }
            default: break
            }
            i += 5 + esInfo
        }
        if let a = newAudio {
            if audioPID != a.0 { audio = PESState() }
            audioPID = a.0
            audioCodec = a.1
        }
        if id3PID != newID3 { meta = PESState() }
        id3PID = newID3
    }

    /// CRC-32/MPEG-2 of `bytes` (0 over a section including its CRC means intact).
    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for b in bytes {
            crc ^= UInt32(b) << 24
            for _ in 0..<8 { crc = crc & 0x8000_0000 != 0 ? (crc << 1) ^ 0x04C1_1DB7 : crc << 1 }
        }
        return crc
    }
}
