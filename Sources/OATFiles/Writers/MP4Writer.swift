import OATCore

/// M4A (AAC in `mp4a`/`esds`, Apple Lossless in `alac`): `ftyp`, an `mdat` with a 64-bit size
/// that grows as packets come, and at close the `moov` after it: sample tables, an edit list
/// (media time = priming, duration = valid frames) and `iTunSMPB`, so the file plays gapless.
///
/// A writer killed before close leaves an `mdat` without a `moov` (not readable as audio): the
/// packet index only exists at close. With ``AudioFileWriterOptions/crashSafe`` the file is
/// written fragmented instead: an initial `moov` with `mvex`, then per checkpoint a `moof`
/// (`tfdt`, `trun` with sizes) and its `mdat`, so a killed writer leaves a fragmented MP4 that
/// readers play up to the last fragment. At close the fragments' `mdat`s become the chunks of a
/// normal `moov` appended at the end (with the edit list and `iTunSMPB`), and the initial `moov`
/// and the `moof`s are renamed `free`: the closed file is an ordinary, gapless M4A.
final class MP4Writer: ContainerWriter {
    private var mdatOffset: Int64 = 0
    private var chunkOffsets: [Int64] = []
    private var chunkSamples: [UInt32] = []
    private var lastPacketEnd: Int64 = -1
    // Fragmented mode.
    private var fragmented = false
    private var initMoovOffset: Int64 = 0
    private var moofOffsets: [Int64] = []
    private var fragData: [UInt8] = []
    private var fragSizes: [UInt32] = []
    private var fragFrames: [UInt32] = []
    private var fragmentedFrames: Int64 = 0

    override func start(_ c: WriterContext) throws(AudioError) {
        guard let cookie = c.cookie, !cookie.isEmpty else {
            throw AudioError(.invalidArgument, component: "AudioFileWriter", "an M4A file needs the magic cookie (AudioSpecificConfig or ALAC atom)")
        }
        if c.format.formatID == .appleLossless && !(cookie.count == 36 || cookie.count == 24) {
            throw AudioError(.invalidArgument, component: "AudioFileWriter", "the ALAC cookie must be the 36-byte 'alac' atom or the 24-byte config")
        }
        var b = ByteBuilder()
        b.u32be(28); b.ascii("ftyp"); b.ascii("M4A "); b.u32be(0); b.ascii("M4A "); b.ascii("mp42"); b.ascii("isom")
        if c.options.crashSafe {
            fragmented = true
            initMoovOffset = Int64(b.count)
            try c.sink.append(b.bytes + movie(c, initial: true))
            return
        }
        mdatOffset = Int64(b.count)
        b.u32be(1); b.ascii("mdat"); b.u64be(16)
        try c.sink.append(b.bytes)
    }

    override func appendPacket(_ c: WriterContext, _ data: UnsafeRawBufferPointer, frames: Int64) throws(AudioError) {
        if fragmented {
            fragData.append(contentsOf: data)
            fragSizes.append(UInt32(data.count))
            fragFrames.append(UInt32(clamping: frames))
            return
        }
        let at = c.sink.end
        if at == lastPacketEnd, let last = chunkSamples.last, last < 4096 {
            chunkSamples[chunkSamples.count - 1] += 1
        } else {
            chunkOffsets.append(at)
            chunkSamples.append(1)
        }
        try c.sink.append(data)
        lastPacketEnd = c.sink.end
    }

    override func checkpoint(_ c: WriterContext) throws(AudioError) {
        if fragmented {
            try writeFragment(c)
            return
        }
        try c.sink.write(.be64(UInt64(c.sink.end - mdatOffset)), at: mdatOffset + 8)
    }

    /// Writes the buffered packets as a `moof` + `mdat` pair (fragmented mode).
    private func writeFragment(_ c: WriterContext) throws(AudioError) {
        guard !fragSizes.isEmpty else { return }
        let variable = c.format.framesPerPacket == 0
        let count = fragSizes.count
        func box(_ type: String, _ body: [UInt8]) -> [UInt8] { .be32(UInt32(body.count + 8)) + Array(type.utf8) + body }
        func full(_ type: String, _ version: UInt8, _ flags: UInt32, _ body: [UInt8]) -> [UInt8] {
            box(type, [version, UInt8(flags >> 16 & 0xFF), UInt8(flags >> 8 & 0xFF), UInt8(flags & 0xFF)] + body)
        }
        let mfhd = full("mfhd", 0, 0, .be32(UInt32(moofOffsets.count + 1)))
        let tfhd = full("tfhd", 0, 0x02_0000, .be32(1)) // default-base-is-moof
        let tfdt = full("tfdt", 1, 0, .be64(UInt64(fragmentedFrames)))
        let trunFlags: UInt32 = 0x001 | 0x200 | (variable ? 0x100 : 0)
        let trunSize = 8 + 4 + 4 + 4 + count * (variable ? 8 : 4)
        let moofSize = 8 + mfhd.count + 8 + tfhd.count + tfdt.count + trunSize
        var trun = ByteBuilder()
        trun.u32be(UInt32(count)); trun.u32be(UInt32(moofSize + 8))
        for i in 0..<count {
            if variable { trun.u32be(fragFrames[i]) }
            trun.u32be(fragSizes[i])
        }
        let moof = box("moof", mfhd + box("traf", tfhd + tfdt + full("trun", 0, trunFlags, trun.bytes)))
        let at = c.sink.end
        var mdat = ByteBuilder()
        mdat.u32be(UInt32(clamping: 8 + fragData.count)); mdat.ascii("mdat")
        try c.sink.append(moof + mdat.bytes + fragData)
        moofOffsets.append(at)
        chunkOffsets.append(at + Int64(moof.count) + 8)
        chunkSamples.append(UInt32(count))
        for f in fragFrames { fragmentedFrames += Int64(f) }
        fragData.removeAll(keepingCapacity: true)
        fragSizes.removeAll(keepingCapacity: true)
        fragFrames.removeAll(keepingCapacity: true)
    }

    override func finish(_ c: WriterContext) throws(AudioError) {
        try checkpoint(c)
        if fragmented {
            // The fragments become ordinary chunks: hide the fragment boxes, add a normal moov.
            for at in [initMoovOffset] + moofOffsets { try c.sink.write(Array("free".utf8), at: at + 4) }
        }
        try c.sink.append(movie(c, initial: false))
    }

    /// The `moov` box: the final one (sample tables, edit list, `iTunSMPB`), or with `initial`
    /// the empty one that starts a fragmented file (no samples, `mvex`/`trex`).
    private func movie(_ c: WriterContext, initial: Bool) -> [UInt8] {
        let f = c.format
        let rate = UInt32(f.sampleRate)
        let total = initial ? 0 : UInt64(c.frameCount)
        let valid = initial ? 0 : UInt64(max(0, c.validFrames))
        let priming = UInt64(max(0, c.primingFrames))
        let packetCount = initial ? 0 : c.packetCount
        let packetFrames = initial ? [] : c.packetFrames
        let packetSizes = initial ? [] : c.packetSizes
        let chunkOffsets = initial ? [] : self.chunkOffsets
        let chunkSamples = initial ? [] : self.chunkSamples

        func box(_ type: String, _ body: [UInt8]) -> [UInt8] { .be32(UInt32(body.count + 8)) + Array(type.utf8) + body }
        func full(_ type: String, _ version: UInt8 = 0, _ flags: UInt32 = 0, _ body: [UInt8]) -> [UInt8] {
            box(type, [version, UInt8(flags >> 16 & 0xFF), UInt8(flags >> 8 & 0xFF), UInt8(flags & 0xFF)] + body)
        }
        let matrix: [UInt32] = [0x10000, 0, 0, 0, 0x10000, 0, 0, 0, 0x4000_0000]

        var mvhd = ByteBuilder()
        mvhd.u64be(0); mvhd.u64be(0); mvhd.u32be(rate); mvhd.u64be(valid)
        mvhd.u32be(0x10000); mvhd.u16be(0x100); mvhd.zeros(10)
        for m in matrix { mvhd.u32be(m) }
        mvhd.zeros(24); mvhd.u32be(2)

        var tkhd = ByteBuilder()
        tkhd.u64be(0); tkhd.u64be(0); tkhd.u32be(1); tkhd.u32be(0); tkhd.u64be(valid)
        tkhd.zeros(8); tkhd.u16be(0); tkhd.u16be(0); tkhd.u16be(0x100); tkhd.u16be(0)
        for m in matrix { tkhd.u32be(m) }
        tkhd.u32be(0); tkhd.u32be(0)

        var elst = ByteBuilder()
        elst.u32be(1); elst.u64be(valid); elst.u64be(priming); elst.u32be(0x10000)
        let edts = box("edts", full("elst", 1, 0, elst.bytes))

        var mdhd = ByteBuilder()
        mdhd.u64be(0); mdhd.u64be(0); mdhd.u32be(rate); mdhd.u64be(total); mdhd.u16be(0x55C4); mdhd.u16be(0)
        var hdlr = ByteBuilder()
        hdlr.u32be(0); hdlr.ascii("soun"); hdlr.zeros(12); hdlr.ascii("SoundHandler"); hdlr.u8(0)

        // Sample description.
        var entry = ByteBuilder()
        entry.zeros(6); entry.u16be(1); entry.zeros(8)
        entry.u16be(UInt16(f.channelsPerFrame))
        let depth: UInt16 = f.formatFlags.rawValue == 3 ? 24 : 16
        entry.u16be(f.formatID == .appleLossless ? depth : 16); entry.u16be(0); entry.u16be(0)
        entry.u32be(rate <= 0xFFFF ? rate << 16 : 0)
        let sampleEntry: [UInt8]
        if f.formatID == .appleLossless {
            var cookie = c.cookie ?? []
            if cookie.count == 24 { cookie = [0, 0, 0, 36] + Array("alac".utf8) + [0, 0, 0, 0] + cookie }
            sampleEntry = box("alac", entry.bytes + cookie)
        } else {
            let seconds = max(1e-9, Double(total) / f.sampleRate)
            let bitRate = clampedUInt32(Double(c.dataBytes) * 8 / seconds)
            sampleEntry = box("mp4a", entry.bytes + full("esds", 0, 0, esdsDescriptor(asc: c.cookie ?? [], bitRate: bitRate)))
        }
        var stsd = ByteBuilder(); stsd.u32be(1); stsd.append(sampleEntry)

        // Durations: runs of equal frame counts.
        var stts = ByteBuilder()
        var runs: [(count: UInt32, delta: UInt32)] = []
        if f.framesPerPacket > 0 {
            if packetCount > 0 { runs = [(UInt32(clamping: packetCount), f.framesPerPacket)] }
        } else {
            for fr in packetFrames {
                if let last = runs.last, last.delta == fr { runs[runs.count - 1].count += 1 } else { runs.append((1, fr)) }
            }
        }
        stts.u32be(UInt32(runs.count)); for r in runs { stts.u32be(r.count); stts.u32be(r.delta) }

        var stsc = ByteBuilder()
        var stscRuns: [(first: UInt32, samples: UInt32)] = []
        for (i, n) in chunkSamples.enumerated() where stscRuns.last?.samples != n { stscRuns.append((UInt32(i + 1), n)) }
        stsc.u32be(UInt32(stscRuns.count)); for r in stscRuns { stsc.u32be(r.first); stsc.u32be(r.samples); stsc.u32be(1) }

        var stsz = ByteBuilder()
        stsz.u32be(0); stsz.u32be(UInt32(packetSizes.count)); for s in packetSizes { stsz.u32be(s) }

        let large = (chunkOffsets.last ?? 0) > 0xFFFF_FFFF
        var stco = ByteBuilder()
        stco.u32be(UInt32(chunkOffsets.count))
        for o in chunkOffsets { if large { stco.u64be(UInt64(o)) } else { stco.u32be(UInt32(o)) } }

        let stbl = box("stbl", full("stsd", 0, 0, stsd.bytes) + full("stts", 0, 0, stts.bytes) + full("stsc", 0, 0, stsc.bytes)
                       + full("stsz", 0, 0, stsz.bytes) + full(large ? "co64" : "stco", 0, 0, stco.bytes))
        let dinf = box("dinf", full("dref", 0, 0, .be32(1) + full("url ", 0, 1, [])))
        let minf = box("minf", full("smhd", 0, 0, [0, 0, 0, 0]) + dinf + stbl)
        let mdia = box("mdia", full("mdhd", 1, 0, mdhd.bytes) + full("hdlr", 0, 0, hdlr.bytes) + minf)
        let trak = box("trak", full("tkhd", 1, 7, tkhd.bytes) + (initial ? [] : edts) + mdia)

        // iTunes metadata: tags and iTunSMPB.
        var items: [UInt8] = []
        func dataBox(_ type: UInt32, _ payload: [UInt8]) -> [UInt8] { box("data", .be32(type) + .be32(0) + payload) }
        let names: [(String, String)] = [("\u{a9}nam", InfoKey.title), ("\u{a9}ART", InfoKey.artist), ("\u{a9}alb", InfoKey.album),
                                         ("\u{a9}day", InfoKey.year), ("\u{a9}gen", InfoKey.genre), ("\u{a9}cmt", InfoKey.comments)]
        for (name, key) in names {
            guard let v = c.tags[key] else { continue }
            let type = [0xA9] + Array(name.unicodeScalars.dropFirst().map { UInt8($0.value) })
            items += .be32(UInt32(8 + 16 + v.utf8.count)) + type + dataBox(1, Array(v.utf8))
        }
        let smpb = " 00000000 " + hex(UInt64(priming), 8) + " " + hex(UInt64(max(0, c.remainderFrames)), 8) + " " + hex(valid, 16)
            + String(repeating: " 00000000", count: 8)
        items += box("----", full("mean", 0, 0, Array("com.apple.iTunes".utf8)) + full("name", 0, 0, Array("iTunSMPB".utf8)) + dataBox(1, Array(smpb.utf8)))
        var metaHdlr = ByteBuilder(); metaHdlr.u32be(0); metaHdlr.ascii("mdir"); metaHdlr.ascii("appl"); metaHdlr.zeros(9)
        let meta = full("meta", 0, 0, full("hdlr", 0, 0, metaHdlr.bytes) + box("ilst", items))
        if initial {
            var trex = ByteBuilder()
            trex.u32be(1); trex.u32be(1); trex.u32be(f.framesPerPacket); trex.u32be(0); trex.u32be(0)
            return box("moov", full("mvhd", 1, 0, mvhd.bytes) + trak + box("mvex", full("trex", 0, 0, trex.bytes)))
        }
        return box("moov", full("mvhd", 1, 0, mvhd.bytes) + trak + box("udta", meta))
    }

    private func hex(_ v: UInt64, _ digits: Int) -> String {
        let s = String(v, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, digits - s.count)) + s
    }
}

