import OATCore

/// A parsed 4-byte MPEG-1/2/2.5 Layer I/II/III frame header.
struct MPEGFrameHeader: Equatable {
    /// The header bits.
    let raw: UInt32
    /// 0 for MPEG-1, 1 for MPEG-2 (LSF), 2 for MPEG-2.5.
    let version: Int
    /// 1, 2 or 3.
    let layer: Int
    /// Bits per second; 0 for free format.
    let bitRate: Int
    let sampleRate: Int
    /// 1 when the padding bit is set.
    let padding: Int
    /// Channel mode 3 (single channel).
    let isMono: Bool
    /// A 16-bit CRC follows the header.
    let hasCRC: Bool

    private static let bitRates: [[Int]] = [
        [0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448], // MPEG-1 Layer I
        [0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384],    // MPEG-1 Layer II
        [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320],     // MPEG-1 Layer III
        [0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256],    // MPEG-2/2.5 Layer I
        [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],         // MPEG-2/2.5 Layer II/III
    ]
    private static let sampleRates = [44100, 48000, 32000]

    /// Parses `raw` (big-endian header bytes); nil unless it is a valid MPEG audio header
    /// (11-bit sync, no reserved version, layer, bit rate or sample rate; the emphasis is not checked:
    /// an ISO compliance stream uses the reserved value).
    init?(_ raw: UInt32) {
        guard raw & 0xFFE0_0000 == 0xFFE0_0000 else { return nil }
        let versionBits = Int(raw >> 19 & 3)
        let layerBits = Int(raw >> 17 & 3)
        let rateIndex = Int(raw >> 12 & 0xF)
        let srIndex = Int(raw >> 10 & 3)
        guard versionBits != 1, layerBits != 0, rateIndex != 15, srIndex != 3 else { return nil }
        self.raw = raw
        version = versionBits == 3 ? 0 : (versionBits == 2 ? 1 : 2)
        layer = 4 - layerBits
        let table = version == 0 ? layer - 1 : (layer == 1 ? 3 : 4)
        bitRate = Self.bitRates[table][rateIndex] * 1000
        sampleRate = Self.sampleRates[srIndex] >> version
        padding = Int(raw >> 9 & 1)
        isMono = raw >> 6 & 3 == 3
        hasCRC = raw >> 16 & 1 == 0
    }

    /// Reads a header from 4 bytes at `i` (the caller checks bounds).
    init?(_ b: UnsafeRawBufferPointer, _ i: Int) {
        self.init(UInt32(b[i]) << 24 | UInt32(b[i + 1]) << 16 | UInt32(b[i + 2]) << 8 | UInt32(b[i + 3]))
    }

    /// Sample frames per MPEG frame (384, 1152 or 576).
    var samplesPerFrame: Int { layer == 1 ? 384 : (layer == 3 && version != 0 ? 576 : 1152) }
    /// Bytes per slot (4 for Layer I, else 1).
    var slotSize: Int { layer == 1 ? 4 : 1 }
    var channels: UInt32 { isMono ? 1 : 2 }
    var isFreeFormat: Bool { bitRate == 0 }

    /// Frame length in bytes for `bitRate` (the header's when nil); nil for free format.
    func frameLength(bitRate rate: Int? = nil) -> Int? {
        let br = rate ?? bitRate
        guard br > 0 else { return nil }
        switch layer {
        case 1: return (12 * br / sampleRate + padding) * 4
        case 3 where version != 0: return 72 * br / sampleRate + padding
        default: return 144 * br / sampleRate + padding
        }
    }

    /// The smallest frame that can hold this header's fixed parts: the header, the CRC and the
    /// side information (Layer III: 17 or 32 bytes for MPEG-1, 9 or 17 for MPEG-2/2.5) or the
    /// least bit allocation (Layers I and II). A shorter free-format "frame" (a run of bare
    /// headers such as `FF FB 00 00`) holds no audio; accepting it would let a few bytes stand
    /// for 1152 decoded frames each.
    var minimumLength: Int {
        let crc = hasCRC ? 2 : 0
        switch layer {
        case 3: return 4 + crc + (version == 0 ? (isMono ? 17 : 32) : (isMono ? 9 : 17))
        case 1: return 4 + crc + 16
        default: return 4 + crc + 4
        }
    }

    /// Frame length without padding for a free-format frame whose total length is `length`.
    func freeFormatBase(length: Int) -> Int { length - padding * slotSize }

    /// The largest frame this version, layer and rate allow (highest bit rate, padded).
    var largestFrame: Int {
        let table = version == 0 ? layer - 1 : (layer == 1 ? 3 : 4)
        let br = Self.bitRates[table][14] * 1000
        switch layer {
        case 1: return (12 * br / sampleRate + 1) * 4
        case 3 where version != 0: return 72 * br / sampleRate + 1
        default: return 144 * br / sampleRate + 1
        }
    }

    /// Same version, layer and sample rate: frames of one stream.
    func sameStream(_ o: MPEGFrameHeader) -> Bool {
        version == o.version && layer == o.layer && sampleRate == o.sampleRate
    }

    /// Same stream, mono-ness and free-format-ness: what a resynchronising frame and the one
    /// after it must share.
    func sameFamily(_ o: MPEGFrameHeader) -> Bool {
        sameStream(o) && isMono == o.isMono && isFreeFormat == o.isFreeFormat
    }

    var formatID: AudioFormatCode { layer == 1 ? .mpegLayer1 : (layer == 2 ? .mpegLayer2 : .mpegLayer3) }
    var fileType: AudioFileType { layer == 1 ? .mp1 : (layer == 2 ? .mp2 : .mp3) }
}

/// A parsed 7-byte AAC ADTS header.
struct ADTSHeader: Equatable {
    /// The MPEG-2 ID bit (set for MPEG-2 AAC, clear for MPEG-4).
    let isMPEG2: Bool
    let hasCRC: Bool
    /// The 2-bit profile (object type - 1).
    let profile: Int
    let sampleRateIndex: Int
    let channelConfiguration: Int
    /// Whole frame length including the header.
    let frameLength: Int
    /// Raw data blocks in the frame minus one.
    let extraBlocks: Int

    static let sampleRates = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350]

    /// Parses 7 bytes at `i` (the caller checks bounds); nil unless a valid ADTS header.
    init?(_ b: UnsafeRawBufferPointer, _ i: Int) {
        guard b[i] == 0xFF, b[i + 1] & 0xF6 == 0xF0 else { return nil }
        isMPEG2 = b[i + 1] & 0x08 != 0
        hasCRC = b[i + 1] & 1 == 0
        profile = Int(b[i + 2] >> 6)
        sampleRateIndex = Int(b[i + 2] >> 2 & 0xF)
        channelConfiguration = Int(b[i + 2] & 1) << 2 | Int(b[i + 3] >> 6)
        frameLength = Int(b[i + 3] & 3) << 11 | Int(b[i + 4]) << 3 | Int(b[i + 5] >> 5)
        extraBlocks = Int(b[i + 6] & 3)
        guard sampleRateIndex < Self.sampleRates.count, frameLength >= headerLength else { return nil }
    }

    var headerLength: Int { hasCRC ? 9 : 7 }
    var sampleRate: Int { Self.sampleRates[sampleRateIndex] }
    var channels: UInt32 { channelConfiguration == 7 ? 8 : UInt32(channelConfiguration) }
    /// MPEG-4 audio object type (profile + 1: 2 = AAC LC).
    var objectType: Int { profile + 1 }

    /// Frames of one stream: same profile, rate and channel configuration.
    func sameStream(_ o: ADTSHeader) -> Bool {
        profile == o.profile && sampleRateIndex == o.sampleRateIndex && channelConfiguration == o.channelConfiguration
    }

    /// The 2-byte AudioSpecificConfig (object type, rate index, channel configuration, and a
    /// GASpecificConfig of three zero bits): this project's AAC magic cookie.
    var audioSpecificConfig: [UInt8] {
        let bits = objectType << 11 | sampleRateIndex << 7 | channelConfiguration << 3
        return [UInt8(bits >> 8), UInt8(bits & 0xFF)]
    }
}

/// Reads bits MSB first from bytes; reads past the end return nil.
struct BitCursor {
    let bytes: UnsafeRawBufferPointer
    var bit = 0

    mutating func read(_ n: Int) -> Int? {
        guard n >= 0, n <= 32, bit + n <= bytes.count * 8 else { return nil }
        var v = 0
        for _ in 0..<n {
            v = v << 1 | Int(bytes[bit >> 3] >> (7 - UInt8(bit & 7)) & 1)
            bit += 1
        }
        return v
    }
}

/// Writes bits MSB first.
struct BitWriter {
    var bytes: [UInt8] = []
    var bit = 0

    mutating func write(_ value: Int, _ n: Int) {
        for k in stride(from: n - 1, through: 0, by: -1) {
            if bit & 7 == 0 { bytes.append(0) }
            if value >> k & 1 != 0 { bytes[bytes.count - 1] |= 0x80 >> UInt8(bit & 7) }
            bit += 1
        }
    }

    mutating func alignToByte() { bit = (bit + 7) & ~7 }
}

/// An AudioSpecificConfig with channel configuration 0 for an ADTS stream whose first raw data
/// block starts with a program config element; nil when it does not. Returns the cookie and the
/// channel count (front, side, back and LFE channels).
func adtsConfigFromPCE(_ payload: UnsafeRawBufferPointer, objectType: Int, sampleRateIndex: Int) -> (cookie: [UInt8], channels: UInt32)? {
    var r = BitCursor(bytes: payload)
    guard r.read(3) == 5 else { return nil } // ID_PCE
    var w = BitWriter()
    w.write(objectType, 5)
    w.write(sampleRateIndex, 4)
    w.write(0, 4) // channel configuration 0: the PCE follows
    w.write(0, 3) // frameLengthFlag, dependsOnCoreCoder, extensionFlag
    func copy(_ n: Int) -> Int? {
        guard let v = r.read(n) else { return nil }
        w.write(v, n)
        return v
    }
    guard copy(4) != nil, copy(2) != nil, copy(4) != nil,
          let front = copy(4), let side = copy(4), let back = copy(4), let lfe = copy(2),
          let assoc = copy(3), let cc = copy(4) else { return nil }
    for bits in [4, 4, 3] { // mono mixdown, stereo mixdown, matrix mixdown (index + surround)
        guard let present = copy(1) else { return nil }
        if present == 1 { guard copy(bits) != nil else { return nil } }
    }
    var channels = 0
    for _ in 0..<(front + side + back) {
        guard let isPair = copy(1), copy(4) != nil else { return nil }
        channels += isPair == 1 ? 2 : 1
    }
    for _ in 0..<lfe { guard copy(4) != nil else { return nil }; channels += 1 }
    for _ in 0..<assoc { guard copy(4) != nil else { return nil } }
    for _ in 0..<cc { guard copy(5) != nil else { return nil } }
    // byte_alignment() is relative to the start of each container: re-align for the cookie.
    r.bit = (r.bit + 7) & ~7
    w.alignToByte()
    guard let commentBytes = copy(8) else { return nil }
    for _ in 0..<commentBytes { guard copy(8) != nil else { return nil } }
    guard channels > 0 else { return nil }
    return (w.bytes, UInt32(channels))
}
