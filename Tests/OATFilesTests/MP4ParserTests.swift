import OATCore
@testable import OATFiles
import OATTestSupport
import Testing

/// Hand-made MP4 files, built box by box.
enum MP4Build {
    static func u16(_ v: Int) -> [UInt8] { [UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)] }
    static func u32(_ v: Int) -> [UInt8] { [UInt8((v >> 24) & 0xFF), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)] }
    static func u64(_ v: Int64) -> [UInt8] { u32(Int(v >> 32)) + u32(Int(v & 0xFFFF_FFFF)) }
    static func type(_ t: String) -> [UInt8] { FourCC(t).bytes }
    static func box(_ t: String, _ payload: [UInt8]) -> [UInt8] { u32(payload.count + 8) + type(t) + payload }
    static func box(_ t: String, _ children: [[UInt8]]) -> [UInt8] { box(t, children.flatMap { $0 }) }
    static func full(_ t: String, version: UInt8 = 0, flags: Int = 0, _ payload: [UInt8]) -> [UInt8] {
        box(t, [version, UInt8((flags >> 16) & 0xFF), UInt8((flags >> 8) & 0xFF), UInt8(flags & 0xFF)] + payload)
    }

    static func ftyp(_ brand: String = "M4A ") -> [UInt8] { box("ftyp", type(brand) + u32(0) + type(brand) + type("isom")) }
    static func mvhd(timescale: Int = 1000) -> [UInt8] { full("mvhd", u32(0) + u32(0) + u32(timescale) + u32(0) + [UInt8](repeating: 0, count: 80)) }
    static func tkhd(id: Int = 1) -> [UInt8] { full("tkhd", flags: 3, u32(0) + u32(0) + u32(id) + [UInt8](repeating: 0, count: 72)) }
    static func mdhd(timescale: Int) -> [UInt8] { full("mdhd", u32(0) + u32(0) + u32(timescale) + u32(0) + u32(0)) }
    static func hdlr(_ h: String) -> [UInt8] { full("hdlr", u32(0) + type(h) + [UInt8](repeating: 0, count: 13)) }
    static func elst(duration: Int, mediaTime: Int) -> [UInt8] {
        box("edts", [full("elst", u32(1) + u32(duration) + u32(mediaTime) + u32(0x10000))])
    }

    /// An audio sample entry with the given children.
    static func sampleEntry(_ t: String, channels: Int, rate: Int, _ children: [[UInt8]]) -> [UInt8] {
        box(t, [UInt8](repeating: 0, count: 6) + u16(1) + [UInt8](repeating: 0, count: 8) + u16(channels) + u16(16) + u32(0) + u32((rate & 0xFFFF) << 16) + children.flatMap { $0 })
    }

    static func esds(oti: UInt8, asc: [UInt8]) -> [UInt8] {
        let dsi: [UInt8] = [5, UInt8(asc.count)] + asc
        let config: [UInt8] = [4, UInt8(13 + dsi.count), oti, 0x15] + [UInt8](repeating: 0, count: 11) + dsi
        let es: [UInt8] = [3, UInt8(3 + config.count + 3)] + [0, 1, 0] + config + [6, 1, 2]
        return full("esds", es)
    }

    static func stbl(entry: [UInt8], sizes: [Int], chunks: [(offset: Int, samples: Int)], durations: [(count: Int, delta: Int)]) -> [UInt8] {
        var stsc: [UInt8] = u32(chunks.count)
        for (i, c) in chunks.enumerated() { stsc += u32(i + 1) + u32(c.samples) + u32(1) }
        var stco: [UInt8] = u32(chunks.count)
        for c in chunks { stco += u32(c.offset) }
        var stts: [UInt8] = u32(durations.count)
        for d in durations { stts += u32(d.count) + u32(d.delta) }
        return box("stbl", [
            full("stsd", u32(1) + entry),
            full("stts", stts),
            full("stsc", stsc),
            full("stsz", u32(0) + u32(sizes.count) + sizes.flatMap { u32($0) }),
            full("stco", stco),
        ])
    }

    static func trak(id: Int = 1, handler: String = "soun", timescale: Int, edit: (Int, Int)? = nil, stbl: [UInt8]) -> [UInt8] {
        var kids = [tkhd(id: id)]
        if let edit { kids.append(elst(duration: edit.0, mediaTime: edit.1)) }
        kids.append(box("mdia", [mdhd(timescale: timescale), hdlr(handler), box("minf", [stbl])]))
        return box("trak", kids)
    }

    static func ilst(_ items: [[UInt8]]) -> [UInt8] {
        box("udta", [full("meta", hdlr("mdir") + box("ilst", items))])
    }

    static func textItem(_ code: UInt32, _ text: String) -> [UInt8] {
        u32(8 + 16 + text.utf8.count) + FourCC(code).bytes + box("data", u32(1) + u32(0) + Array(text.utf8))
    }

    /// AAC LC, 44.1 kHz stereo.
    static let lcASC: [UInt8] = [0x12, 0x10]

    /// A faststart (moov first) or moov-last AAC file with `sizes` samples in one mdat, one
    /// chunk per `perChunk` samples.
    static func aacFile(sizes: [Int], perChunk: Int = 2, moovFirst: Bool = true, edit: (Int, Int)? = (1000, 1024),
                        extraMoov: [[UInt8]] = []) -> [UInt8] {
        let head = ftyp()
        func moov(dataStart: Int) -> [UInt8] {
            var chunks: [(Int, Int)] = []
            var at = dataStart, i = 0
            while i < sizes.count {
                let n = min(perChunk, sizes.count - i)
                chunks.append((at, n))
                at += sizes[i..<(i + n)].reduce(0, +)
                i += n
            }
            let entry = sampleEntry("mp4a", channels: 2, rate: 44100, [esds(oti: 0x40, asc: lcASC)])
            let table = stbl(entry: entry, sizes: sizes, chunks: chunks, durations: [(sizes.count, 1024)])
            return box("moov", [mvhd(), trak(timescale: 44100, edit: edit, stbl: table)] + extraMoov)
        }
        var payload: [UInt8] = []
        for (i, s) in sizes.enumerated() { payload += [UInt8](repeating: UInt8(i & 0xFF), count: s) }
        let mdat = box("mdat", payload)
        if moovFirst {
            let size = moov(dataStart: 0).count
            return head + moov(dataStart: head.count + size + 8) + mdat
        }
        return head + mdat + moov(dataStart: head.count + 8)
    }
}

/// Runs a stream over `bytes` in one call and collects packets and the error.
struct MP4Run {
    var stream = AudioFileStream()
    var sizes: [UInt32] = []
    var offsets: [Int64] = []
    var frames: [UInt32] = []
    var firstIndices: [Int64] = []
    var error: AudioError?

    init(_ bytes: [UInt8], finish: Bool = true) {
        feed(bytes)
        if finish {
            do { try stream.finish { self.collect($0) } } catch { self.error = error }
        }
    }

    mutating func feed(_ bytes: [UInt8], flags: AudioFileStreamParseFlags = []) {
        var events: [AudioFileStreamEvent] = []
        do { try stream.parse(bytes, flags: flags) { events.append($0) } } catch { self.error = error }
        for e in events { collect(e) }
    }

    mutating func collect(_ e: AudioFileStreamEvent) {
        guard case .packets(let b) = e else { return }
        firstIndices.append(b.firstPacketIndex)
        for (i, d) in b.packetDescriptions.enumerated() {
            sizes.append(d.dataByteSize)
            offsets.append(b.packetFileOffsets[i])
            frames.append(d.variableFramesInPacket)
        }
    }
}

@Suite struct MP4ParserTests {
    @Test func faststartAAC() throws {
        let sizes = [10, 20, 30, 40, 50]
        let file = MP4Build.aacFile(sizes: sizes, edit: (50, 1024))
        let run = MP4Run(file)
        #expect(run.error == nil)
        let s = run.stream
        #expect(s.fileFormat == .m4a)
        let f = try #require(s.dataFormat)
        #expect(f.formatID == .mpeg4AAC)
        #expect(f.sampleRate == 44100)
        #expect(f.channelsPerFrame == 2)
        #expect(f.framesPerPacket == 1024)
        #expect(f.formatFlags.rawValue == 2)
        #expect(f.bytesPerPacket == 0 && f.bytesPerFrame == 0 && f.bitsPerChannel == 0)
        #expect(s.magicCookie == MP4Build.lcASC)
        #expect(s.audioDataPacketCount == 5)
        #expect(s.audioDataByteCount == 150)
        #expect(s.maximumPacketSize == 50)
        #expect(s.channelLayout?.tag == .stereo)
        #expect(run.sizes == [10, 20, 30, 40, 50])
        let mdatStart = Int64(file.count - 150)
        #expect(s.dataOffset == mdatStart)
        #expect(run.offsets == [0, 10, 30, 60, 100].map { mdatStart + $0 })
        // 50 ms at 44.1 kHz = 2205 valid frames; 5 x 1024 = 5120 total.
        #expect(s.packetTableInfo == AudioFilePacketTableInfo(numberValidFrames: 2205, primingFrames: 1024, remainderFrames: 1891))
        #expect(!s.isNotOptimized)
    }

    @Test func sameEventsForEverySplit() {
        let file = MP4Build.aacFile(sizes: [5, 0, 7, 300, 1, 2, 3], perChunk: 3)
        let whole = StreamDigest.of(file, split: .whole)
        for split: StreamDigest.Split in [.chunks(1), .chunks(7), .random(seed: 3, maxChunk: 50)] {
            #expect(StreamDigest.of(file, split: split) == whole)
        }
        #expect(whole.packetCount == 7)
        #expect(whole.error == nil)
    }

    @Test func moovLastSeeksBack() throws {
        let sizes = [11, 22, 33, 44]
        let file = MP4Build.aacFile(sizes: sizes, moovFirst: false)
        var run = MP4Run(file)
        #expect(run.error == nil)
        #expect(run.sizes.isEmpty)
        #expect(run.stream.isNotOptimized)
        #expect(run.stream.audioDataPacketCount == 4)
        let dataStart = Int64(MP4Build.ftyp().count + 8)
        #expect(run.stream.dataOffset == dataStart)
        let seek = try run.stream.seek(toPacket: 2)
        #expect(seek == AudioFileStreamSeekResult(byteOffset: dataStart + 33, dataByteOffset: 33, isEstimated: false, packetIndex: 2))
        run.feed(Array(file[Int(seek.byteOffset)...]), flags: .discontinuity)
        #expect(run.sizes == [33, 44])
        #expect(run.offsets == [dataStart + 33, dataStart + 66])
        #expect(run.firstIndices.first == 2)
    }

    @Test func tagsAndSMPB() throws {
        let smpb = " 00000000 00000840 000001CA 0000000000001000 00000000"
        let freeform = MP4Build.box("----", [
            MP4Build.full("mean", Array("com.apple.iTunes".utf8)),
            MP4Build.full("name", Array("iTunSMPB".utf8)),
            MP4Build.box("data", MP4Build.u32(1) + MP4Build.u32(0) + Array(smpb.utf8)),
        ])
        let trkn = MP4Build.box("trkn", [MP4Build.box("data", MP4Build.u32(0) + MP4Build.u32(0) + [0, 0, 0, 3, 0, 9, 0, 0])])
        let udta = MP4Build.ilst([MP4Build.textItem(0xA96E_616D, "Title"), MP4Build.textItem(0xA941_5254, "Artist"), trkn, freeform])
        let file = MP4Build.aacFile(sizes: [100, 100, 100, 100, 100, 100, 100, 100], edit: nil, extraMoov: [udta])
        let run = MP4Run(file)
        #expect(run.error == nil)
        #expect(run.stream.infoDictionary[InfoKey.title] == "Title")
        #expect(run.stream.infoDictionary[InfoKey.artist] == "Artist")
        #expect(run.stream.infoDictionary[InfoKey.trackNumber] == "3/9")
        // iTunSMPB: 0x840 = 2112 priming, 0x1CA = 458 padding, 0x1000 = 4096 valid (of 8192).
        #expect(run.stream.packetTableInfo == AudioFilePacketTableInfo(numberValidFrames: 4096, primingFrames: 2112, remainderFrames: 1984))
    }

    @Test func heAACv1AndV2() throws {
        // Explicit SBR: AOT 5, 22.05 kHz, 2 ch, extension 44.1 kHz, AOT 2.
        let he = try #require(AudioSpecificConfig([0x2B, 0x92, 0x08, 0x00]))
        #expect(he.objectType == 2 && he.sampleRate == 22050 && he.sbrSampleRate == 44100 && !he.hasPS)
        let f = try MP4.aacFormat(he, cookie: [0x2B, 0x92, 0x08, 0x00], entryChannels: 2, at: 0)
        #expect(f.asbd.formatID == .mpeg4AAC_HE && f.asbd.sampleRate == 44100 && f.asbd.framesPerPacket == 2048)
        #expect(f.formatList.map(\.format.formatID) == [.mpeg4AAC_HE, .mpeg4AAC])
        #expect(f.formatList[1].format.sampleRate == 22050 && f.formatList[1].format.framesPerPacket == 1024)
        // AOT 29 (PS), 24 kHz mono core, extension 48 kHz, AOT 2: 11101 0110 0001 0011 00010 ...
        let bits = "11101" + "0110" + "0001" + "0011" + "00010" + "000" + "0000000"
        var bytes: [UInt8] = []
        var i = bits.startIndex
        while i < bits.endIndex {
            let j = bits.index(i, offsetBy: 8, limitedBy: bits.endIndex) ?? bits.endIndex
            bytes.append(UInt8(String(bits[i..<j]).padding(toLength: 8), radix: 2)!)
            i = j
        }
        let v2 = try #require(AudioSpecificConfig(bytes))
        #expect(v2.hasPS && v2.sampleRate == 24000 && v2.sbrSampleRate == 48000 && v2.channels == 1)
        let g = try MP4.aacFormat(v2, cookie: bytes, entryChannels: 2, at: 0)
        #expect(g.asbd.formatID == .mpeg4AAC_HE_V2 && g.asbd.channelsPerFrame == 2 && g.asbd.sampleRate == 48000)
        #expect(g.formatList.map(\.format.formatID) == [.mpeg4AAC_HE_V2, .mpeg4AAC_HE, .mpeg4AAC])
        #expect(g.formatList.map(\.format.channelsPerFrame) == [2, 1, 1])
    }

    @Test func escapedObjectTypeAndExplicitRate() throws {
        // AOT 31 + 6 bits (escape) = 32 + 4 = 36 would be ALS; here test index 15 explicit rate with LC.
        // 00010 1111 <24 bits 0x00AC44 = 44100> 0001 0 0 0
        let bits = "00010" + "1111" + "000000001010110001000100" + "0001" + "000"
        var bytes: [UInt8] = []
        var s = Substring(bits)
        while !s.isEmpty { bytes.append(UInt8(String(s.prefix(8)).padding(toLength: 8), radix: 2)!); s = s.dropFirst(8) }
        let asc = try #require(AudioSpecificConfig(bytes))
        #expect(asc.objectType == 2 && asc.sampleRate == 44100 && asc.channels == 1)
    }

    @Test func alacOpusFlacConfigs() throws {
        let alacConfig: [UInt8] = MP4Build.u32(4096) + [0, 24, 40, 10, 14, 2] + MP4Build.u16(255) + MP4Build.u32(0) + MP4Build.u32(0) + MP4Build.u32(96000)
        let alacEntry = MP4Build.sampleEntry("alac", channels: 2, rate: 0, [MP4Build.full("alac", alacConfig)])
        let alac = try entry(alacEntry, timescale: 96000)
        #expect(alac.asbd.formatID == .appleLossless && alac.asbd.sampleRate == 96000 && alac.asbd.framesPerPacket == 4096)
        #expect(alac.asbd.formatFlags == .alacSourceBitDepth24)
        #expect(alac.cookie == [0, 0, 0, 36] + Array("alac".utf8) + [0, 0, 0, 0] + alacConfig)

        let dops: [UInt8] = [0, 2] + MP4Build.u16(312) + MP4Build.u32(44100) + MP4Build.u16(0) + [0]
        let opusEntry = MP4Build.sampleEntry("Opus", channels: 2, rate: 48000, [MP4Build.box("dOps", dops)])
        let opus = try entry(opusEntry, timescale: 48000)
        #expect(opus.asbd.formatID == .opus && opus.asbd.framesPerPacket == 0 && opus.framesSource == .opusTOC)
        #expect(opus.cookie == Array("OpusHead".utf8) + [1, 2, 0x38, 0x01, 0x44, 0xAC, 0, 0, 0, 0, 0])

        var streaminfo = [UInt8](repeating: 0, count: 34)
        streaminfo[0] = 0x12; streaminfo[2] = 0x12 // 4608-frame blocks
        streaminfo[10] = 0x0A; streaminfo[11] = 0xC4; streaminfo[12] = 0x42; streaminfo[13] = 0xF0 // 44100 Hz, 2 ch, 16 bits
        let dfla = MP4Build.full("dfLa", [0x80, 0, 0, 34] + streaminfo)
        let flac = try entry(MP4Build.sampleEntry("fLaC", channels: 2, rate: 44100, [dfla]), timescale: 44100)
        #expect(flac.asbd.formatID == .flac && flac.asbd.sampleRate == 44100 && flac.asbd.channelsPerFrame == 2 && flac.asbd.framesPerPacket == 4608)
        #expect(flac.cookie == streaminfo)
    }

    @Test func opusTOCFrames() {
        func frames(_ b: [UInt8]) -> UInt32 { b.withUnsafeBytes { opusPacketFrames($0) } }
        #expect(frames([0xFC]) == 960)          // CELT 20 ms, one frame
        #expect(frames([0xFD]) == 1920)         // two frames
        #expect(frames([0x1B, 0x03]) == 8640)   // SILK 60 ms, code 3, 3 frames
        #expect(frames([0x0B, 0x03]) == 2880)   // SILK 20 ms, code 3, 3 frames
        #expect(frames([0x7B]) == 0)            // code 3 without its count byte
        #expect(frames([]) == 0)
    }

    @Test func fragmentedFile() throws {
        // moov with mvex/trex (default size 7), then two moof/mdat pairs.
        let entry = MP4Build.sampleEntry("mp4a", channels: 2, rate: 44100, [MP4Build.esds(oti: 0x40, asc: MP4Build.lcASC)])
        let stbl = MP4Build.stbl(entry: entry, sizes: [], chunks: [], durations: [])
        let trex = MP4Build.full("trex", MP4Build.u32(1) + MP4Build.u32(1) + MP4Build.u32(1024) + MP4Build.u32(7) + MP4Build.u32(0))
        let moov = MP4Build.box("moov", [MP4Build.mvhd(), MP4Build.trak(timescale: 44100, stbl: stbl), MP4Build.box("mvex", [trex])])
        func fragment(sizes: [Int]?, count: Int, flags: Int, tfhdFlags: Int, tfhdSize: Int? = nil) -> [UInt8] {
            var tfhd = MP4Build.u32(1)
            if let tfhdSize { tfhd += MP4Build.u32(tfhdSize) }
            func moof(dataOffset: Int) -> [UInt8] {
                var trun = MP4Build.u32(count)
                if flags & 1 != 0 { trun += MP4Build.u32(dataOffset) }
                if flags & 4 != 0 { trun += MP4Build.u32(0) }
                for i in 0..<count {
                    if flags & 0x100 != 0 { trun += MP4Build.u32(1024) }
                    if flags & 0x200 != 0 { trun += MP4Build.u32(sizes![i]) }
                    if flags & 0x400 != 0 { trun += MP4Build.u32(0) }
                    if flags & 0x800 != 0 { trun += MP4Build.u32(0) }
                }
                return MP4Build.box("moof", [MP4Build.full("mfhd", MP4Build.u32(1)),
                                             MP4Build.box("traf", [MP4Build.full("tfhd", flags: tfhdFlags, tfhd), MP4Build.full("trun", flags: flags, trun)])])
            }
            let size = moof(dataOffset: 0).count
            let total = sizes?.reduce(0, +) ?? count * (tfhdSize ?? 7)
            return moof(dataOffset: size + 8) + MP4Build.box("mdat", [UInt8](repeating: 0xAB, count: total))
        }
        let f1 = fragment(sizes: [3, 4, 5], count: 3, flags: 0x1 | 0x4 | 0x100 | 0x200 | 0x400 | 0x800, tfhdFlags: 0x20000)
        let f2 = fragment(sizes: nil, count: 2, flags: 0x1, tfhdFlags: 0x20000 | 0x10, tfhdSize: 9)
        let f3 = fragment(sizes: nil, count: 2, flags: 0x1, tfhdFlags: 0x20000)
        let head = MP4Build.ftyp("iso5") + moov
        let file = head + f1 + f2 + f3
        let run = MP4Run(file)
        #expect(run.error == nil)
        #expect(run.stream.fileFormat == .mpeg4)
        #expect(run.sizes == [3, 4, 5, 9, 9, 7, 7])
        let f1Data = Int64(head.count + f1.count - 12)
        #expect(run.offsets.first == f1Data)
        #expect(run.stream.dataOffset == f1Data)
        #expect(run.offsets[3] == Int64(head.count + f1.count + f2.count - 18))
        let whole = StreamDigest.of(file, split: .whole)
        #expect(StreamDigest.of(file, split: .chunks(1)) == whole)
        #expect(StreamDigest.of(file, split: .chunks(5)) == whole)

        // Seeking into a fragment already seen is exact; the moofs fed again are not re-added.
        var again = run
        let seek = try again.stream.seek(toPacket: 4)
        #expect(seek.isEstimated == false && seek.packetIndex == 4 && seek.byteOffset == run.offsets[4])
        again.feed(Array(file[Int(seek.byteOffset)...]), flags: .discontinuity)
        #expect(Array(again.sizes.suffix(3)) == [9, 7, 7])
        #expect(Array(again.offsets.suffix(3)) == Array(run.offsets.suffix(3)))
        #expect(again.stream.packetsDelivered == 10)

        // Past the fragments seen: resume at the next unread box, estimated.
        var partial = MP4Run(head + f1, finish: false)
        let ahead = try partial.stream.seek(toPacket: 6)
        #expect(ahead.isEstimated && ahead.packetIndex == 3 && ahead.byteOffset == Int64(head.count + f1.count))
        partial.feed(Array(file[Int(ahead.byteOffset)...]), flags: .discontinuity)
        #expect(partial.sizes == [3, 4, 5, 9, 9, 7, 7])
    }

    @Test func trunsWithoutDataOffsetFollowEachOther() throws {
        // One traf, tfhd with an explicit base data offset and default size 6; the second trun
        // continues where the first one's data ends.
        let entry = MP4Build.sampleEntry("mp4a", channels: 2, rate: 44100, [MP4Build.esds(oti: 0x40, asc: MP4Build.lcASC)])
        let stbl = MP4Build.stbl(entry: entry, sizes: [], chunks: [], durations: [])
        let moov = MP4Build.box("moov", [MP4Build.mvhd(), MP4Build.trak(timescale: 44100, stbl: stbl),
                                         MP4Build.box("mvex", [MP4Build.full("trex", MP4Build.u32(1) + MP4Build.u32(1) + MP4Build.u32(1024) + MP4Build.u32(0) + MP4Build.u32(0))])])
        let head = MP4Build.ftyp() + moov
        func moof(base: Int) -> [UInt8] {
            MP4Build.box("moof", [MP4Build.box("traf", [
                MP4Build.full("tfhd", flags: 0x1 | 0x10, MP4Build.u32(1) + MP4Build.u64(Int64(base)) + MP4Build.u32(6)),
                MP4Build.full("trun", flags: 0, MP4Build.u32(2)),
                MP4Build.full("trun", flags: 0x200, MP4Build.u32(1) + MP4Build.u32(4)),
            ])])
        }
        let size = moof(base: 0).count
        let base = head.count + size + 8
        let file = head + moof(base: base) + MP4Build.box("mdat", [UInt8](repeating: 1, count: 16))
        let run = MP4Run(file)
        #expect(run.error == nil)
        #expect(run.sizes == [6, 6, 4])
        #expect(run.offsets == [Int64(base), Int64(base + 6), Int64(base + 12)])
    }

    @Test func seekExactAndPastEnd() throws {
        let file = MP4Build.aacFile(sizes: [10, 20, 30])
        let run = MP4Run(file)
        let start = try #require(run.stream.dataOffset)
        #expect(try run.stream.seek(toPacket: 1) == AudioFileStreamSeekResult(byteOffset: start + 10, dataByteOffset: 10, isEstimated: false, packetIndex: 1))
        #expect(throws: AudioError.self) { try run.stream.seek(toPacket: 4) }
    }

    // MARK: Malformed input

    @Test func errorsForBrokenFiles() throws {
        // No sound track.
        let noSound = MP4Build.ftyp() + MP4Build.box("moov", [MP4Build.mvhd()])
        #expect(MP4Run(noSound).error?.message.contains("no sound track") == true)
        // Box size smaller than its header.
        let tiny = MP4Build.ftyp() + MP4Build.u32(4) + MP4Build.type("moov")
        let e = try #require(MP4Run(tiny).error)
        #expect(e.offset == Int64(MP4Build.ftyp().count))
        // moov cut off.
        let full = MP4Build.aacFile(sizes: [10, 10])
        let cut = Array(full[0..<60])
        #expect(MP4Run(cut).error?.message.contains("cut off") == true)
        // No moov at all.
        let onlyMdat = MP4Build.ftyp() + MP4Build.box("mdat", [1, 2, 3])
        #expect(MP4Run(onlyMdat).error?.message.contains("without a 'moov'") == true)
        // Table claiming more entries than its bytes.
        var bad = MP4Build.aacFile(sizes: [10, 10])
        let stsz = try #require(find(bad, "stsz"))
        bad.replaceSubrange((stsz + 16)..<(stsz + 20), with: MP4Build.u32(0x4000_0000))
        let err = try #require(MP4Run(bad).error)
        #expect(err.message.contains("stsz"))
        // 64-bit size with a huge value: refused without buffering.
        let huge = MP4Build.ftyp() + MP4Build.u32(1) + MP4Build.type("moov") + MP4Build.u64(1 << 40)
        #expect(MP4Run(huge).error?.code == .limitExceeded)
    }

    @Test func garbageNeverTraps() {
        // Every prefix and single-byte corruption of a small file parses to an error or events.
        let file = MP4Build.aacFile(sizes: [10, 20, 30])
        for n in stride(from: 0, to: file.count, by: 3) { _ = MP4Run(Array(file[0..<n])) }
        var rng = SplitMix(seed: 7)
        for _ in 0..<300 {
            var f = file
            let i = Int(rng.next() % UInt64(f.count))
            f[i] = UInt8(truncatingIfNeeded: rng.next())
            _ = MP4Run(f)
        }
    }

    // MARK: Helpers

    /// Parses a sample entry given as whole box bytes.
    func entry(_ bytes: [UInt8], timescale: UInt32) throws -> MP4Format {
        try bytes.withUnsafeBytes { raw in
            let box = MP4.Box(type: FourCC(bytes[4], bytes[5], bytes[6], bytes[7]), payload: UnsafeRawBufferPointer(rebasing: raw[8...]), payloadOffset: 8, offset: 0)
            return try MP4.parseSampleEntry(box, mediaTimescale: timescale, limits: .default)
        }
    }

    func find(_ bytes: [UInt8], _ t: String) -> Int? {
        let tb = FourCC(t).bytes
        for i in 4..<(bytes.count - 4) where Array(bytes[i..<(i + 4)]) == tb { return i - 4 }
        return nil
    }
}

extension String {
    fileprivate func padding(toLength n: Int) -> String { count >= n ? self : self + String(repeating: "0", count: n - count) }
}
