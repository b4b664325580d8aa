import OATCore

extension AudioFormatCode {
    /// MPEG-4 Audio Lossless Coding (object type 36). Audio Toolbox has no constant for it; this
    /// project reports it as `'als '` with the AudioSpecificConfig as magic cookie.
    static let mpeg4ALS = AudioFormatCode("als ")
}

/// An MSB-first bit reader that never traps: reading past the end sets ``overrun`` and yields 0.
struct BitReader {
    let bytes: [UInt8]
    var bitPosition = 0
    var overrun = false

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var bitsLeft: Int { bytes.count * 8 - bitPosition }

    mutating func bits(_ n: Int) -> UInt32 {
        var v: UInt32 = 0
        for _ in 0..<n {
            guard bitPosition < bytes.count * 8 else { overrun = true; return v }
            let bit = (bytes[bitPosition >> 3] >> (7 - UInt8(bitPosition & 7))) & 1
            v = v << 1 | UInt32(bit)
            bitPosition += 1
        }
        return v
    }

    mutating func skip(_ n: Int) {
        if n > bitsLeft { overrun = true; bitPosition = bytes.count * 8 } else { bitPosition += n }
    }

    mutating func alignToByte() { skip((8 - bitPosition & 7) & 7) }
}

/// The facts of an MPEG-4 AudioSpecificConfig (ISO 14496-3 1.6.2.1) that the container needs.
struct AudioSpecificConfig: Equatable {
    static let rates: [Double] = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350]

    var objectType: UInt32 = 0
    var sampleRate: Double = 0
    var channelConfiguration: UInt32 = 0
    /// Channels: from the channel configuration, or counted from a program config element.
    var channels: UInt32 = 0
    /// SBR signalled explicitly (object type 5/29 or a sync extension): output rate.
    var sbrSampleRate: Double?
    var hasPS = false
    var frameLengthFlag = false
    /// For ALS: frame length and channels from the ALSSpecificConfig.
    var alsFrameLength: UInt32?
    var alsResolutionBits: UInt32?

    /// Parses `bytes`; nil when even the object type, rate and channel configuration are absent.
    init?(_ bytes: [UInt8]) {
        var b = BitReader(bytes)
        func readObjectType() -> UInt32 {
            let t = b.bits(5)
            return t == 31 ? 32 + b.bits(6) : t
        }
        func rate() -> Double {
            let index = Int(b.bits(4))
            if index == 15 { return Double(b.bits(24)) }
            return index < Self.rates.count ? Self.rates[index] : 0
        }
        objectType = readObjectType()
        sampleRate = rate()
        channelConfiguration = b.bits(4)
        if b.overrun { return nil }
        var extensionType: UInt32 = 0
        if objectType == 5 || objectType == 29 {
            extensionType = 5
            hasPS = objectType == 29
            sbrSampleRate = rate()
            objectType = readObjectType()
            if objectType == 22 { _ = b.bits(4) }
        }
        channels = Self.channels(forConfiguration: channelConfiguration)
        switch objectType {
        case 1, 2, 3, 4, 6, 7, 17, 19, 20, 21, 22, 23:
            frameLengthFlag = b.bits(1) == 1
            if b.bits(1) == 1 { b.skip(14) } // dependsOnCoreCoder: coreCoderDelay
            let extensionFlag = b.bits(1)
            if channelConfiguration == 0 {
                channels = Self.programConfigChannels(&b)
            }
            if objectType == 6 || objectType == 20 { b.skip(3) }
            if extensionFlag == 1 {
                if objectType == 22 { b.skip(16) }
                if [17, 19, 20, 23].contains(objectType) { b.skip(3) }
                b.skip(1)
            }
            if (17...27).contains(objectType) {
                let ep = b.bits(2)
                if ep == 2 || ep == 3 { b.overrun = true } // error-protection config: stop here
            }
        case 36:
            // ALS: byte-aligned ALSSpecificConfig follows.
            b.alignToByte()
            if b.bits(32) == 0x414C_5300 {
                let rate = b.bits(32)
                _ = b.bits(32) // samples
                let ch = b.bits(16) + 1
                _ = b.bits(3) // file type
                let resolution = b.bits(3)
                _ = b.bits(2) // floating, msb first
                let frame = b.bits(16) + 1
                if !b.overrun {
                    sampleRate = Double(rate)
                    channels = ch
                    alsFrameLength = frame
                    alsResolutionBits = (resolution + 1) * 8
                }
            }
            b.overrun = true
        default:
            b.overrun = true
        }
        // Backward-compatible explicit SBR/PS signalling.
        if !b.overrun && extensionType != 5 && b.bitsLeft >= 16 {
            if b.bits(11) == 0x2B7 {
                let ext = readObjectType()
                if ext == 5 {
                    if b.bits(1) == 1 {
                        let r = rate()
                        if !b.overrun { sbrSampleRate = r }
                        if b.bitsLeft >= 12 && b.bits(11) == 0x548 {
                            hasPS = b.bits(1) == 1 && !b.overrun
                        }
                    }
                }
            }
        }
    }

    static func channels(forConfiguration c: UInt32) -> UInt32 {
        switch c {
        case 1...6: c
        case 7: 8
        case 11: 7
        case 12, 14: 8
        case 13: 24
        default: 0
        }
    }

    /// Counts the channels a program_config_element describes (and reads past it).
    static func programConfigChannels(_ b: inout BitReader) -> UInt32 {
        b.skip(4 + 2 + 4)
        let front = Int(b.bits(4)), side = Int(b.bits(4)), back = Int(b.bits(4))
        let lfe = Int(b.bits(2)), assoc = Int(b.bits(3)), cc = Int(b.bits(4))
        if b.bits(1) == 1 { b.skip(4) }
        if b.bits(1) == 1 { b.skip(4) }
        if b.bits(1) == 1 { b.skip(3) }
        var channels: UInt32 = 0
        for _ in 0..<(front + side + back) {
            channels += b.bits(1) == 1 ? 2 : 1
            b.skip(4)
        }
        channels += UInt32(lfe)
        b.skip(4 * lfe + 4 * assoc + 5 * cc)
        b.alignToByte()
        let comment = Int(b.bits(8))
        b.skip(8 * comment)
        return b.overrun ? 0 : channels
    }

    /// Apple's layout tag for an AAC channel configuration.
    static func layoutTag(forConfiguration c: UInt32) -> ChannelLayoutTag? {
        switch c {
        case 1: .mono
        case 2: .stereo
        case 3: .mpeg_3_0_B
        case 4: .mpeg_4_0_B
        case 5: .mpeg_5_0_D
        case 6: .mpeg_5_1_D
        case 7: .mpeg_7_1_B
        case 11: .aac_6_1
        default: nil
        }
    }
}

/// Frames per packet of an Opus packet from its TOC byte (RFC 6716 3.1), at 48 kHz; 0 when the
/// packet is empty or malformed.
func opusPacketFrames(_ p: UnsafeRawBufferPointer) -> UInt32 {
    guard let toc = p.first else { return 0 }
    let config = toc >> 3
    let frameSize: UInt32
    switch config {
    case 0...11: frameSize = [480, 960, 1920, 2880][Int(config & 3)]
    case 12...15: frameSize = (config & 1) == 0 ? 480 : 960
    default: frameSize = [120, 240, 480, 960][Int(config & 3)]
    }
    switch toc & 3 {
    case 0: return frameSize
    case 1, 2: return 2 * frameSize
    default:
        guard p.count >= 2 else { return 0 }
        return UInt32(p[1] & 0x3F) * frameSize
    }
}
