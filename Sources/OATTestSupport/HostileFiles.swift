#if canImport(Glibc)
import Glibc
#endif

/// Small hand-made malformed files with boundary values in their size, count, channel and
/// rate fields (0, 1, 2^31-1, 2^32-1, 2^63-1 and near it): each once trapped, aborted on a huge
/// allocation or ran super-linearly in a parser, a decoder or a tool (issue 16 §2-3, issue 19 §3).
/// Built here so that tests write them themselves; `Fuzz/regressions` holds copies for the fuzz
/// replay.
public enum HostileFiles {
    /// One crafted input: a file name (its extension picks the container), the bytes, and a
    /// fragment the error message must contain (nil: the file may also be accepted).
    public struct Case: Sendable, CustomStringConvertible {
        /// File name, e.g. `rf64-ds64-huge.wav`.
        public let name: String
        /// The bytes.
        public let bytes: [UInt8]
        /// Part of the message expected when the file is refused; nil when it may be accepted.
        public let message: String?
        /// `name`.
        public var description: String { name }
    }

    // MARK: Byte helpers

    static func le16(_ v: UInt64) -> [UInt8] { (0..<2).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
    static func le32(_ v: UInt64) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
    static func le64(_ v: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
    static func be16(_ v: UInt64) -> [UInt8] { le16(v).reversed() }
    static func be32(_ v: UInt64) -> [UInt8] { le32(v).reversed() }
    static func be64(_ v: UInt64) -> [UInt8] { le64(v).reversed() }
    static func cc(_ s: String) -> [UInt8] { Array(s.utf8) }

    // MARK: WAV

    static func riffChunk(_ id: String, _ body: [UInt8]) -> [UInt8] {
        cc(id) + le32(UInt64(body.count)) + body + (body.count & 1 == 1 ? [0] : [])
    }

    static func fmt(channels: UInt64, rate: UInt64, bits: UInt64) -> [UInt8] {
        let align = (channels * bits / 8) & 0xFFFF
        return riffChunk("fmt ", le16(1) + le16(channels) + le32(rate) + le32(rate * align) + le16(align) + le16(bits))
    }

    /// RF64 whose `ds64` gives the data chunk `dataSize` bytes (2^63-16 overflowed the end offset).
    public static func rf64(dataSize: UInt64) -> [UInt8] {
        let ds64 = riffChunk("ds64", le64(0xFFFF_FFFF) + le64(dataSize) + le64(0) + le32(0))
        return cc("RF64") + le32(0xFFFF_FFFF) + cc("WAVE") + ds64 + fmt(channels: 2, rate: 44100, bits: 16)
            + cc("data") + le32(0xFFFF_FFFF) + [UInt8](repeating: 0, count: 4000)
    }

    /// A PCM WAV whose `fmt ` claims `channels` (and `rate`), with `dataBytes` of zeros.
    public static func wav(channels: UInt64, rate: UInt64 = 44100, bits: UInt64 = 16, dataBytes: Int = 88200) -> [UInt8] {
        let body = cc("WAVE") + fmt(channels: channels, rate: rate, bits: bits) + riffChunk("data", [UInt8](repeating: 0, count: dataBytes))
        return cc("RIFF") + le32(UInt64(body.count)) + body
    }

    /// A valid 16-bit stereo WAV of `seconds` of a 440 Hz tone at 44.1 kHz.
    public static func toneWAV(seconds: Double = 1) -> [UInt8] {
        let frames = Int(seconds * 44100)
        var pcm: [UInt8] = []
        pcm.reserveCapacity(frames * 4)
        for i in 0..<frames {
            let v = UInt64(UInt16(bitPattern: Int16(10000 * sin(2 * Double.pi * 440 * Double(i) / 44100))))
            pcm += le16(v) + le16(v)
        }
        let body = cc("WAVE") + fmt(channels: 2, rate: 44100, bits: 16) + riffChunk("data", pcm)
        return cc("RIFF") + le32(UInt64(body.count)) + body
    }

    // MARK: CAF

    static func cafChunk(_ type: String, _ body: [UInt8]) -> [UInt8] { cc(type) + be64(UInt64(body.count)) + body }

    /// A CAF whose `desc` claims `channels` (2^32-1 aborted on a 32 GB allocation).
    public static func caf(format: String, channels: UInt64, rate: Double = 44100) -> [UInt8] {
        let desc: [UInt8]
        if format == "lpcm" {
            // Consistent PCM fields: one byte per sample, so bytes per packet = channels.
            desc = be64(rate.bitPattern) + cc("lpcm") + be32(0) + be32(channels) + be32(1) + be32(channels) + be32(8)
        } else {
            desc = be64(rate.bitPattern) + cc(format) + be32(1) + be32(0) + be32(4096) + be32(channels) + be32(0)
        }
        return cc("caff") + be16(1) + be16(0) + cafChunk("desc", desc) + cafChunk("data", be32(0) + [UInt8](repeating: 0, count: 4096))
    }

    // MARK: MP4

    static func box(_ t: String, _ p: [UInt8]) -> [UInt8] { be32(UInt64(p.count + 8)) + cc(t) + p }
    static func full(_ t: String, flags: UInt64 = 0, _ p: [UInt8]) -> [UInt8] { box(t, [0] + Array(be32(flags).suffix(3)) + p) }

    static func moov(stts: [(UInt64, UInt64)], stsz: [UInt8], samplesPerChunk: UInt64, dataOffset: UInt64, mvex: Bool) -> [UInt8] {
        func descriptor(_ tag: UInt8, _ p: [UInt8]) -> [UInt8] { [tag, UInt8(p.count)] + p }
        let dec = descriptor(4, [0x40, 0x15] + [0, 0, 0] + be32(0) + be32(0) + descriptor(5, [0x12, 0x10]))
        let esds = full("esds", descriptor(3, be16(1) + [0] + dec + descriptor(6, [2])))
        let mp4a = box("mp4a", [UInt8](repeating: 0, count: 6) + be16(1) + [UInt8](repeating: 0, count: 8) + be16(2) + be16(16)
                       + [0, 0, 0, 0] + be32(44100 << 16) + esds)
        var sttsBody = be32(UInt64(stts.count))
        for (count, delta) in stts { sttsBody += be32(count) + be32(delta) }
        let stbl = box("stbl", full("stsd", be32(1) + mp4a) + full("stts", sttsBody) + stsz
                       + full("stsc", be32(1) + be32(1) + be32(samplesPerChunk) + be32(1)) + full("stco", be32(1) + be32(dataOffset)))
        let minf = box("minf", box("smhd", [UInt8](repeating: 0, count: 8)) + stbl)
        let mdia = box("mdia", full("mdhd", be32(0) + be32(0) + be32(44100) + be32(0) + be32(0))
                       + full("hdlr", be32(0) + cc("soun") + [UInt8](repeating: 0, count: 13)) + minf)
        let trak = box("trak", full("tkhd", flags: 3, be32(0) + be32(0) + be32(1) + [UInt8](repeating: 0, count: 72)) + mdia)
        let extends = mvex ? box("mvex", full("trex", be32(1) + be32(1) + be32(1024) + be32(6) + be32(0))) : []
        return box("moov", full("mvhd", be32(0) + be32(0) + be32(1000) + be32(0) + [UInt8](repeating: 0, count: 80)) + trak + extends)
    }

    static let ftyp = box("ftyp", cc("M4A ") + be32(0) + cc("M4A isom"))
    /// One AAC LC frame of silence (stereo).
    static let aacFrame: [UInt8] = [0x21, 0x10, 0x04, 0x60, 0x8C, 0x1C]

    /// An AAC M4A of four samples whose `stts` holds `entries` ((2^32-1, 2^32-1) trapped).
    public static func mp4(stts entries: [(UInt64, UInt64)]) -> [UInt8] {
        let stsz = full("stsz", be32(0) + be32(4) + be32(6) + be32(6) + be32(6) + be32(6))
        let probe = moov(stts: entries, stsz: stsz, samplesPerChunk: 4, dataOffset: 0, mvex: false)
        let m = moov(stts: entries, stsz: stsz, samplesPerChunk: 4, dataOffset: UInt64(ftyp.count + probe.count + 8), mvex: false)
        return ftyp + m + box("mdat", Array([[UInt8]](repeating: aacFrame, count: 4).joined()))
    }

    /// An M4A whose `stsz` gives one constant size to `count` samples, followed by a fragment
    /// (`moof` + `mdat`): the constant table was expanded into a `count`-entry array (64 Mi
    /// entries: 256 MiB) once the fragment arrived.
    public static func mp4ConstantSizesThenFragment(count: UInt64) -> [UInt8] {
        let stsz = full("stsz", be32(6) + be32(count))
        let stts: [(UInt64, UInt64)] = [(count, 1024)]
        let probe = moov(stts: stts, stsz: stsz, samplesPerChunk: count, dataOffset: 0, mvex: true)
        let m = moov(stts: stts, stsz: stsz, samplesPerChunk: count, dataOffset: UInt64(ftyp.count + probe.count + 8), mvex: true)
        let tfhd = full("tfhd", flags: 0x02_0000, be32(1))
        func moof(dataOffset: UInt64) -> [UInt8] {
            let trun = full("trun", flags: 0x201, be32(1) + be32(dataOffset) + be32(6))
            return box("moof", full("mfhd", be32(1)) + box("traf", tfhd + full("tfdt", be32(0)) + trun))
        }
        // The run's data starts right after the moof, in the following mdat (after its header).
        let moof = moof(dataOffset: UInt64(moof(dataOffset: 0).count + 8))
        return ftyp + m + box("mdat", Array([[UInt8]](repeating: aacFrame, count: 4).joined())) + moof + box("mdat", aacFrame)
    }

    // MARK: MPEG

    /// `bytes` of repeated `FF FB 00 00`: free-format MPEG-1 Layer III headers with nothing
    /// between them (super-linear in libmpg123, and 1152 output frames per 16 input bytes).
    public static func mpegBareHeaders(bytes: Int) -> [UInt8] {
        Array([[UInt8]](repeating: [0xFF, 0xFB, 0x00, 0x00], count: bytes / 4).joined())
    }

    // MARK: The set

    /// Every crafted case, with what its refusal must say.
    public static let all: [Case] = [
        Case(name: "rf64-ds64-huge.wav", bytes: rf64(dataSize: (1 << 63) - 16), message: "end of the data chunk"),
        Case(name: "rf64-ds64-max.wav", bytes: rf64(dataSize: UInt64(Int64.max)), message: "data chunk"),
        Case(name: "wav-65535-channels.wav", bytes: wav(channels: 65535), message: "65535 channels"),
        Case(name: "wav-rate-max.wav", bytes: wav(channels: 2, rate: 0xFFFF_FFFF), message: "sample rate"),
        Case(name: "wav-rate-2g.wav", bytes: wav(channels: 2, rate: 0x7FFF_FFFF), message: "sample rate"),
        Case(name: "caf-lpcm-channels-max.caf", bytes: caf(format: "lpcm", channels: 0xFFFF_FFFF), message: "4294967295 channels"),
        Case(name: "caf-alac-channels-max.caf", bytes: caf(format: "alac", channels: 0xFFFF_FFFF), message: "4294967295 channels"),
        Case(name: "caf-alac-channels-2g.caf", bytes: caf(format: "alac", channels: 0x7FFF_FFFF), message: "2147483647 channels"),
        Case(name: "caf-rate-huge.caf", bytes: caf(format: "alac", channels: 2, rate: 1e308), message: "sample rate"),
        Case(name: "mp4-stts-max.m4a", bytes: mp4(stts: [(0xFFFF_FFFF, 0xFFFF_FFFF)]), message: "duration"),
        Case(name: "mp4-stts-counts-max.m4a", bytes: mp4(stts: [(0xFFFF_FFFF, 1), (0xFFFF_FFFF, 1), (0xFFFF_FFFF, 1)]), message: nil),
    ]
}
