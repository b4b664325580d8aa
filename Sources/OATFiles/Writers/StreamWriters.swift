import OATCore

/// Native FLAC: `fLaC`, STREAMINFO (the cookie; frame sizes and total samples patched at
/// every checkpoint and at close), VORBIS_COMMENT, then the frames as they come.
final class FLACWriter: ContainerWriter {
    private var minFrame = UInt32.max
    private var maxFrame: UInt32 = 0

    override func start(_ c: WriterContext) throws(AudioError) {
        guard let cookie = c.cookie, cookie.count == 34 else {
            throw AudioError(.invalidArgument, component: "AudioFileWriter", "a FLAC file needs the 34-byte STREAMINFO as magic cookie")
        }
        var b = ByteBuilder()
        b.ascii("fLaC")
        b.u8(0); b.u24be(34); b.append(cookie)
        let comments = vorbisCommentBody(c.tags)
        b.u8(0x84); b.u24be(UInt32(comments.count)); b.append(comments)
        try c.sink.append(b.bytes)
    }

    override func appendPacket(_ c: WriterContext, _ data: UnsafeRawBufferPointer, frames: Int64) throws(AudioError) {
        minFrame = min(minFrame, UInt32(data.count))
        maxFrame = max(maxFrame, UInt32(data.count))
        try c.sink.append(data)
    }

    override func checkpoint(_ c: WriterContext) throws(AudioError) {
        guard var info = c.cookie, info.count == 34 else { return }
        if maxFrame > 0 {
            info[4] = UInt8(minFrame >> 16 & 0xFF); info[5] = UInt8(minFrame >> 8 & 0xFF); info[6] = UInt8(minFrame & 0xFF)
            info[7] = UInt8(maxFrame >> 16 & 0xFF); info[8] = UInt8(maxFrame >> 8 & 0xFF); info[9] = UInt8(maxFrame & 0xFF)
        }
        let total = UInt64(c.frameCount)
        info[13] = info[13] & 0xF0 | UInt8(total >> 32 & 0xF)
        info[14] = UInt8(total >> 24 & 0xFF); info[15] = UInt8(total >> 16 & 0xFF)
        info[16] = UInt8(total >> 8 & 0xFF); info[17] = UInt8(total & 0xFF)
        try c.sink.write(info, at: 8)
    }
}

/// Ogg CRC-32 (polynomial 0x04C11DB7, not reflected, initial value 0).
let oggCRCTable: [UInt32] = (0..<256).map { i in
    var r = UInt32(i) << 24
    for _ in 0..<8 { r = r & 0x8000_0000 != 0 ? (r << 1) ^ 0x04C1_1DB7 : r << 1 }
    return r
}

/// Ogg Opus: an `OpusHead` page, an `OpusTags` page, then audio pages of up to a checkpoint's
/// worth of packets (so a cut file loses at most that much); the last page carries the end
/// granule (pre-skip + valid frames) that trims the padding, and the end-of-stream flag.
final class OggOpusWriter: ContainerWriter {
    private let serial = UInt32.random(in: 1...UInt32.max)
    private var sequence: UInt32 = 0
    private var granule: Int64 = 0
    private var pending: [[UInt8]] = []
    private var pendingFrames: Int64 = 0
    private var pendingSegments = 0

    override func start(_ c: WriterContext) throws(AudioError) {
        var head: [UInt8]
        if let cookie = c.cookie, cookie.count >= 19, cookie.starts(with: Array("OpusHead".utf8)) {
            head = cookie
        } else {
            var b = ByteBuilder()
            b.ascii("OpusHead"); b.u8(1); b.u8(UInt8(c.format.channelsPerFrame)); b.u16le(0); b.u32le(48000); b.u16le(0); b.u8(0)
            head = b.bytes
            guard c.format.channelsPerFrame <= 2 else {
                throw AudioError(.invalidArgument, component: "AudioFileWriter", "Ogg Opus with more than 2 channels needs the encoder's OpusHead cookie")
            }
        }
        if let priming = c.packetTableInfo?.primingFrames {
            head[10] = UInt8(UInt16(clamping: priming) & 0xFF); head[11] = UInt8(UInt16(clamping: priming) >> 8)
        }
        c.cookie = head
        try writePage([head], granule: 0, flags: 2, c)
        try writePage([Array("OpusTags".utf8) + vorbisCommentBody(c.tags)], granule: 0, flags: 0, c)
    }

    override func appendPacket(_ c: WriterContext, _ data: UnsafeRawBufferPointer, frames: Int64) throws(AudioError) {
        let segments = data.count / 255 + 1
        if !pending.isEmpty && (pendingSegments + segments > 255 || Double(pendingFrames) >= c.options.checkpointSeconds * 48000) {
            try flush(c, last: false)
        }
        pending.append(Array(data))
        pendingSegments += segments
        pendingFrames += frames * Int64((48000 / c.format.sampleRate).rounded())
    }

    override func finish(_ c: WriterContext) throws(AudioError) {
        try flush(c, last: true)
    }

    private func flush(_ c: WriterContext, last: Bool) throws(AudioError) {
        granule += pendingFrames
        var g = granule
        if last, let info = c.packetTableInfo {
            g = min(granule, Int64(info.primingFrames) + info.numberValidFrames)
        }
        try writePage(pending, granule: g, flags: last ? 4 : 0, c)
        pending.removeAll()
        pendingFrames = 0
        pendingSegments = 0
    }

    /// Writes one page holding whole packets (at most 255 lacing values).
    private func writePage(_ packets: [[UInt8]], granule: Int64, flags: UInt8, _ c: WriterContext) throws(AudioError) {
        var lacing: [UInt8] = []
        for p in packets {
            lacing += [UInt8](repeating: 255, count: p.count / 255)
            lacing.append(UInt8(p.count % 255))
        }
        var page = ByteBuilder()
        page.ascii("OggS"); page.u8(0); page.u8(flags); page.u64le(UInt64(bitPattern: granule))
        page.u32le(serial); page.u32le(sequence); page.u32le(0); page.u8(UInt8(lacing.count)); page.append(lacing)
        for p in packets { page.append(p) }
        var crc: UInt32 = 0
        for byte in page.bytes { crc = (crc << 8) ^ oggCRCTable[Int((crc >> 24) ^ UInt32(byte))] }
        let crcBytes = [UInt8].le32(crc)
        page.bytes.replaceSubrange(22..<26, with: crcBytes)
        sequence += 1
        try c.sink.append(page.bytes)
    }
}

/// AAC in ADTS: a 7-byte header (no CRC) before every raw access unit.
final class ADTSWriter: ContainerWriter {
    private var profile: UInt8 = 1
    private var rateIndex: UInt8 = 4
    private var channelConfig: UInt8 = 2

    override func start(_ c: WriterContext) throws(AudioError) {
        guard let asc = c.cookie, asc.count >= 2 else {
            throw AudioError(.invalidArgument, component: "AudioFileWriter", "ADTS needs the AudioSpecificConfig as magic cookie")
        }
        let objectType = asc[0] >> 3
        guard objectType >= 1 && objectType <= 4 else {
            throw AudioError(.unsupportedFormat, component: "AudioFileWriter", "ADTS holds AAC Main/LC/SSR/LTP, not object type \(objectType)")
        }
        profile = objectType - 1
        rateIndex = (asc[0] & 7) << 1 | asc[1] >> 7
        channelConfig = (asc[1] >> 3) & 0xF
        guard rateIndex < 13 else {
            throw AudioError(.unsupportedFormat, component: "AudioFileWriter", "ADTS cannot state an explicit sample rate")
        }
    }

    override func appendPacket(_ c: WriterContext, _ data: UnsafeRawBufferPointer, frames: Int64) throws(AudioError) {
        let length = data.count + 7
        guard length < 1 << 13 else {
            throw AudioError(.invalidArgument, component: "AudioFileWriter", "an AAC packet of \(data.count) bytes does not fit an ADTS frame")
        }
        let header: [UInt8] = [
            0xFF, 0xF1,
            profile << 6 | rateIndex << 2 | channelConfig >> 2,
            (channelConfig & 3) << 6 | UInt8(length >> 11),
            UInt8((length >> 3) & 0xFF),
            UInt8((length & 7) << 5) | 0x1F,
            0xFC,
        ]
        try c.sink.append(header)
        try c.sink.append(data)
    }
}

/// MP3: an ID3v2 tag when there are tags, an `Info`/`Xing` frame with a LAME-style extension
/// (frame and byte counts, seek TOC, encoder delay and padding) written at close (a placeholder
/// until then, so a cut file still reads), then the frames as they come.
final class MP3Writer: ContainerWriter {
    private var tagFrameOffset: Int64 = -1
    private var tagFrameLength = 0
    private var header: [UInt8] = []

    override func start(_ c: WriterContext) throws(AudioError) {
        let fields: [(String, String)] = [("TIT2", InfoKey.title), ("TPE1", InfoKey.artist), ("TALB", InfoKey.album),
                                          ("TDRC", InfoKey.year), ("TCON", InfoKey.genre), ("TRCK", InfoKey.trackNumber)]
        var frames = ByteBuilder()
        for (id, key) in fields {
            guard let v = c.tags[key] else { continue }
            let body = [UInt8(3)] + Array(v.utf8)
            frames.ascii(id); frames.append(syncsafe(UInt32(body.count))); frames.u16be(0); frames.append(body)
        }
        if let comment = c.tags[InfoKey.comments] {
            let body = [UInt8(3)] + Array("eng".utf8) + [0] + Array(comment.utf8)
            frames.ascii("COMM"); frames.append(syncsafe(UInt32(body.count))); frames.u16be(0); frames.append(body)
        }
        guard frames.count > 0 else { return }
        var tag = ByteBuilder()
        tag.ascii("ID3"); tag.u8(4); tag.u8(0); tag.u8(0); tag.append(syncsafe(UInt32(frames.count))); tag.append(frames.bytes)
        try c.sink.append(tag.bytes)
    }

    private func syncsafe(_ v: UInt32) -> [UInt8] {
        [UInt8(v >> 21 & 0x7F), UInt8(v >> 14 & 0x7F), UInt8(v >> 7 & 0x7F), UInt8(v & 0x7F)]
    }

    private var isMPEG1: Bool { header[1] >> 3 & 3 == 3 }
    private var isMono: Bool { header[3] >> 6 == 3 }
    private var sideInfo: Int { isMPEG1 ? (isMono ? 17 : 32) : (isMono ? 9 : 17) }

    override func appendPacket(_ c: WriterContext, _ data: UnsafeRawBufferPointer, frames: Int64) throws(AudioError) {
        if tagFrameOffset < 0 {
            guard data.count >= 4, data[0] == 0xFF, data[1] & 0xE0 == 0xE0, data[1] >> 1 & 3 == 1 else {
                throw AudioError(.invalidData, component: "AudioFileWriter", "the first packet is not an MPEG Layer III frame")
            }
            header = [0xFF, data[1] | 1, data[2] & 0xFC, data[3]]
            let rates: [Int] = [44100, 48000, 32000]
            let version = Int(header[1] >> 3 & 3)
            let rate = rates[min(2, Int(header[2] >> 2 & 3))] / (version == 3 ? 1 : version == 2 ? 2 : 4)
            let kbps = isMPEG1 ? [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320]
                : [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160]
            let needed = 4 + sideInfo + 120 + 36
            var index = max(1, Int(header[2] >> 4))
            func length(_ i: Int) -> Int { (isMPEG1 ? 144_000 : 72_000) * kbps[i] / rate }
            while index < 14 && length(index) < needed { index += 1 }
            header[2] = UInt8(index << 4) | (header[2] & 0x0C)
            tagFrameLength = length(index)
            tagFrameOffset = c.sink.end
            var placeholder = header + [UInt8](repeating: 0, count: tagFrameLength - 4)
            placeholder.replaceSubrange((4 + sideInfo)..<(4 + sideInfo + 8), with: Array("Info".utf8) + [0, 0, 0, 0])
            try c.sink.append(placeholder)
        }
        try c.sink.append(data)
    }

    override func finish(_ c: WriterContext) throws(AudioError) {
        guard tagFrameOffset >= 0 else { return }
        let sizes = c.packetSizes
        let cbr = (sizes.max() ?? 0) - (sizes.min() ?? 0) <= 1
        var b = ByteBuilder()
        b.append(header); b.zeros(sideInfo)
        b.ascii(cbr ? "Info" : "Xing"); b.u32be(0xF)
        b.u32be(UInt32(clamping: c.packetCount))
        b.u32be(UInt32(clamping: c.dataBytes + Int64(tagFrameLength)))
        var toc: [UInt8] = []
        var cumulative: [Int64] = [0]
        for s in sizes { cumulative.append(cumulative.last! + Int64(s)) }
        for i in 0..<100 {
            let packet = min(sizes.count, Int(Double(i) / 100 * Double(sizes.count)))
            let fraction = c.dataBytes > 0 ? Double(cumulative[packet]) / Double(c.dataBytes) : 0
            toc.append(UInt8(min(255, Int(fraction * 256))))
        }
        b.append(toc)
        b.u32be(50)
        let lameStart = b.count
        b.ascii("LAME3.100")
        b.u8(cbr ? 1 : 4); b.u8(0); b.zeros(8); b.u8(0)
        b.u8(UInt8(min(255, c.packetCount > 0 ? Int(Double(c.dataBytes) * 8 / (Double(c.frameCount) / c.format.sampleRate) / 1000) : 0)))
        let decoderDelay: Int64 = 529
        let delay = max(0, min(4095, c.primingFrames - decoderDelay))
        let padding = max(0, min(4095, c.frameCount - delay - c.validFrames))
        b.u8(UInt8(delay >> 4)); b.u8(UInt8((delay & 0xF) << 4 | padding >> 8)); b.u8(UInt8(padding & 0xFF))
        b.u8(0); b.u8(0); b.u16be(0)
        b.u32be(UInt32(clamping: c.dataBytes + Int64(tagFrameLength)))
        b.u16be(0)
        precondition(b.count - lameStart == 34)
        var crc: UInt16 = 0
        for byte in b.bytes {
            crc ^= UInt16(byte)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xA001 : crc >> 1 }
        }
        b.u16be(crc)
        if b.count < tagFrameLength { b.zeros(tagFrameLength - b.count) }
        try c.sink.write(Array(b.bytes.prefix(tagFrameLength)), at: tagFrameOffset)
    }
}
