import OATCore

/// How the parser learns each packet's frame count when the format's frames per packet vary.
enum MP4FramesSource: Equatable {
    /// `framesPerPacket` of the format holds for every packet.
    case fixed
    /// From the Opus TOC byte of each packet.
    case opusTOC
    /// From the sample durations (`stts` / `trun`).
    case durations
}

/// The audio format of a track's sample entry, in Core Audio terms.
struct MP4Format: Equatable {
    var asbd: AudioStreamBasicDescription
    var formatList: [AudioFormatListItem] = []
    var cookie: [UInt8]?
    var layout: ChannelLayout?
    var framesSource: MP4FramesSource = .fixed
    var sourceBitDepth: UInt32?
    /// QuickTime PCM (`sowt`, `twos`, `in24`, `lpcm`, `ulaw`, ...): each sample of the table is
    /// one frame of `asbd.bytesPerFrame` bytes, whatever size `stsz` states (as FFmpeg reads it).
    var isFramePCM = false
}

/// The fields of a QuickTime sound sample description that PCM needs (version 0, 1 or 2).
struct MP4SoundDescription {
    var version: UInt16 = 0
    var channels: UInt32 = 0
    var sampleSize: UInt32 = 0
    var rate: Double = 0
    /// Version 2 only: constBitsPerChannel, formatSpecificFlags, constBytesPerAudioPacket,
    /// constLPCMFramesPerAudioPacket.
    var v2Bits: UInt32 = 0
    var v2Flags: UInt32 = 0
    var v2BytesPerPacket: UInt32 = 0
    var v2FramesPerPacket: UInt32 = 0
}

extension MP4 {
    /// Reads an audio sample entry (`mp4a`, `alac`, `fLaC`, `Opus`, ...) from `stsd`.
    static func parseSampleEntry(_ entry: Box, mediaTimescale: UInt32, limits: ParserLimits) throws -> MP4Format {
        var r = entry.reader
        var channels: UInt32 = 0
        var rate: Double = 0
        var sampleSize: UInt32 = 0
        var sound = MP4SoundDescription()
        let childStart: Int
        do {
            try r.skip(8) // reserved, data reference index
            let version = try r.u16be()
            try r.skip(6) // revision, vendor
            channels = UInt32(try r.u16be())
            sampleSize = UInt32(try r.u16be())
            try r.skip(4) // compression id, packet size
            rate = Double(try r.u32be() >> 16)
            switch version {
            case 1: try r.skip(16)
            case 2:
                try r.skip(4)
                let bits = try r.u64be()
                let v2rate = Double(bitPattern: bits)
                channels = try r.u32be()
                try r.skip(4)
                sound.v2Bits = try r.u32be()
                sound.v2Flags = try r.u32be()
                sound.v2BytesPerPacket = try r.u32be()
                sound.v2FramesPerPacket = try r.u32be()
                if v2rate.isFinite && v2rate > 0 && v2rate < 1e7 { rate = v2rate }
            default: break
            }
            sound.version = version
            childStart = r.position
        } catch {
            throw invalidData(component, "sample entry '\(entry.type)' is too short", at: entry.offset)
        }
        if rate == 0 && mediaTimescale > 0 { rate = Double(mediaTimescale) }
        let childBytes = UnsafeRawBufferPointer(rebasing: entry.payload[childStart...])
        let childBase = entry.payloadOffset + Int64(childStart)
        var kids = (try? children(childBytes, base: childBase)) ?? []
        // QuickTime nests the codec boxes in a 'wave' box.
        if let wave = kids.first(where: { $0.type == "wave" }) {
            kids += (try? children(wave.payload, base: wave.payloadOffset)) ?? []
        }
        var format: MP4Format
        switch entry.type {
        case "mp4a":
            guard let esds = kids.first(where: { $0.type == "esds" }) else {
                throw unsupported(component, "'mp4a' sample entry has no 'esds' box: the codec is not known", at: entry.offset)
            }
            format = try parseESDS(esds, channels: channels, rate: rate, limits: limits)
        case "alac":
            guard let config = kids.first(where: { $0.type == "alac" }) else {
                throw invalidData(component, "'alac' sample entry has no 'alac' configuration box", at: entry.offset)
            }
            format = try parseALAC(config)
        case "fLaC":
            guard let dfla = kids.first(where: { $0.type == "dfLa" }) else {
                throw invalidData(component, "'fLaC' sample entry has no 'dfLa' box", at: entry.offset)
            }
            format = try parseDFLA(dfla)
        case "Opus":
            guard let dops = kids.first(where: { $0.type == "dOps" }) else {
                throw invalidData(component, "'Opus' sample entry has no 'dOps' box", at: entry.offset)
            }
            format = try parseDOPS(dops)
        case ".mp3":
            format = MP4Format(asbd: .compressed(.mpegLayer3, sampleRate: rate, channels: channels, framesPerPacket: rate < 32000 ? 576 : 1152))
        case "sowt", "twos", "NONE", "raw ", "in24", "in32", "fl32", "fl64", "ulaw", "alaw", "lpcm":
            sound.channels = channels
            sound.sampleSize = sampleSize
            sound.rate = rate
            let enda = kids.first(where: { $0.type == "enda" }).flatMap { box in try? read(box) { r in try r.u16be() } }
            format = try pcmFormat(entry, sound, littleEndian: (enda ?? 0) & 0xFF != 0)
        default:
            throw unsupported(component, "audio sample entry '\(entry.type)' is not supported", at: entry.offset)
        }
        if let chan = kids.first(where: { $0.type == "chan" }), let layout = try? parseChan(chan) {
            format.layout = layout
        }
        if format.asbd.channelsPerFrame == 0 {
            throw invalidData(component, "sample entry '\(entry.type)' gives no channel count", at: entry.offset)
        }
        if !(format.asbd.sampleRate > 0) {
            throw invalidData(component, "sample entry '\(entry.type)' gives no sample rate", at: entry.offset)
        }
        _ = sampleSize
        return format
    }

    /// The format of a QuickTime PCM sample entry. The sample width comes from the entry's type
    /// (`in24`, `fl64`, ...), from the version 0/1 sample size (`twos`, `sowt`, `raw `) or from the
    /// version 2 fields (`lpcm`); `in24`/`in32`/`fl32`/`fl64` are big-endian unless an `enda` box
    /// says little-endian.
    static func pcmFormat(_ entry: Box, _ d: MP4SoundDescription, littleEndian: Bool) throws -> MP4Format {
        let type = entry.type
        let channels = d.channels
        guard channels > 0, channels <= 1024 else {
            throw invalidData(component, "PCM sample entry '\(type)' gives \(channels) channels", at: entry.offset)
        }
        func pcm(_ bits: UInt32, float: Bool = false, bigEndian: Bool, signed: Bool = true) throws -> AudioStreamBasicDescription {
            guard [8, 16, 24, 32, 64].contains(bits), !(float && bits < 32), !(bits == 64 && !float) else {
                throw unsupported(component, "PCM sample entry '\(type)' with \(bits) bits per sample is not supported", at: entry.offset)
            }
            return .linearPCM(sampleRate: d.rate, channels: channels, bitsPerChannel: bits, isFloat: float, isBigEndian: bigEndian, isSigned: signed)
        }
        let asbd: AudioStreamBasicDescription
        switch type {
        case "twos", "NONE": asbd = try pcm(d.sampleSize, bigEndian: true)
        case "sowt": asbd = try pcm(d.sampleSize, bigEndian: false)
        case "raw ": asbd = try pcm(8, bigEndian: false, signed: false)
        case "in24": asbd = try pcm(24, bigEndian: !littleEndian)
        case "in32": asbd = try pcm(32, bigEndian: !littleEndian)
        case "fl32": asbd = try pcm(32, float: true, bigEndian: !littleEndian)
        case "fl64": asbd = try pcm(64, float: true, bigEndian: !littleEndian)
        case "ulaw", "alaw":
            asbd = AudioStreamBasicDescription(sampleRate: d.rate, formatID: type == "ulaw" ? .ulaw : .alaw, bytesPerPacket: channels,
                                               framesPerPacket: 1, bytesPerFrame: channels, channelsPerFrame: channels, bitsPerChannel: 8)
        default: // "lpcm": version 2 states everything (flags as Core Audio's linear PCM flags)
            guard d.version == 2 else {
                throw invalidData(component, "'lpcm' sample entry is version \(d.version), expected 2", at: entry.offset)
            }
            let flags = AudioFormatFlagSet(rawValue: d.v2Flags)
            let bits = d.v2Bits
            guard bits > 0, bits % 8 == 0, d.v2FramesPerPacket == 1, d.v2BytesPerPacket == bits / 8 * channels else {
                throw unsupported(component, "'lpcm' with \(bits) bits, \(d.v2BytesPerPacket) bytes and \(d.v2FramesPerPacket) frames per packet is not supported", at: entry.offset)
            }
            asbd = try pcm(bits, float: flags.contains(.isFloat), bigEndian: flags.contains(.isBigEndian),
                           signed: flags.contains(.isSignedInteger))
        }
        var f = MP4Format(asbd: asbd)
        f.isFramePCM = true
        return f
    }

    /// Reads a descriptor length (1-4 bytes of 7 bits).
    static func descriptorLength(_ r: inout ByteReader) throws -> Int {
        var n = 0
        for _ in 0..<4 {
            let b = try r.u8()
            n = n << 7 | Int(b & 0x7F)
            if b & 0x80 == 0 { break }
        }
        return n
    }

    /// `esds`: ES_Descriptor > DecoderConfigDescriptor (object type) > DecoderSpecificInfo.
    static func parseESDS(_ esds: Box, channels: UInt32, rate: Double, limits: ParserLimits) throws -> MP4Format {
        let (oti, dsi): (UInt8, [UInt8]?) = try read(esds) { r in
            try r.skip(4)
            guard try r.u8() == 3 else { throw invalidData(component, "'esds' does not start with an ES descriptor", at: esds.payloadOffset + 4) }
            _ = try descriptorLength(&r)
            try r.skip(2)
            let flags = try r.u8()
            if flags & 0x80 != 0 { try r.skip(2) }
            if flags & 0x40 != 0 { try r.skip(Int(try r.u8())) }
            if flags & 0x20 != 0 { try r.skip(2) }
            guard try r.u8() == 4 else { throw invalidData(component, "'esds' has no decoder config descriptor", at: r.absoluteOffset - 1) }
            let configLength = try descriptorLength(&r)
            let configEnd = r.position + configLength
            let oti = try r.u8()
            try r.skip(12)
            var dsi: [UInt8]?
            if r.position < configEnd, r.remaining >= 2, try r.peekU8() == 5 {
                try r.skip(1)
                let n = try descriptorLength(&r)
                guard n <= limits.maximumTagBytes else {
                    throw limitExceeded(component, "decoder specific info of \(n) bytes", at: r.absoluteOffset)
                }
                dsi = try r.array(min(n, r.remaining))
            }
            return (oti, dsi)
        }
        switch oti {
        case 0x40, 0x66, 0x67, 0x68:
            guard let dsi, let asc = AudioSpecificConfig(dsi) else {
                throw invalidData(component, "AAC track has no readable AudioSpecificConfig", at: esds.offset)
            }
            return try aacFormat(asc, cookie: dsi, entryChannels: channels, at: esds.offset)
        case 0x69, 0x6B:
            let fpp: UInt32 = rate < 32000 ? 576 : 1152
            return MP4Format(asbd: .compressed(.mpegLayer3, sampleRate: rate, channels: channels, framesPerPacket: fpp))
        default:
            throw unsupported(component, "MPEG-4 object type indication 0x\(String(oti, radix: 16)) is not supported", at: esds.offset)
        }
    }

    /// The Core Audio format of an AAC (or ALS) AudioSpecificConfig.
    static func aacFormat(_ asc: AudioSpecificConfig, cookie: [UInt8], entryChannels: UInt32, at offset: Int64) throws -> MP4Format {
        let channels = asc.channels > 0 ? asc.channels : entryChannels
        guard asc.sampleRate > 0 else {
            throw invalidData(component, "AudioSpecificConfig has sampling frequency index with no rate", at: offset)
        }
        if asc.objectType == 36 {
            var f = MP4Format(asbd: .compressed(.mpeg4ALS, sampleRate: asc.sampleRate, channels: channels, framesPerPacket: 0))
            f.cookie = cookie
            f.framesSource = .durations
            f.sourceBitDepth = asc.alsResolutionBits
            return f
        }
        switch asc.objectType {
        case 1, 2, 3, 4, 5, 6, 7, 17, 19, 20, 21, 22, 23, 29, 39: break
        default:
            throw unsupported(component, "MPEG-4 audio object type \(asc.objectType) is not supported", at: offset)
        }
        let fpp: UInt32 = asc.frameLengthFlag ? 960 : 1024
        let lc = AudioStreamBasicDescription.compressed(.mpeg4AAC, sampleRate: asc.sampleRate, channels: channels,
                                                        framesPerPacket: fpp, flags: .mpeg4ObjectType(asc.objectType))
        var format = MP4Format(asbd: lc, cookie: cookie)
        if let tag = AudioSpecificConfig.layoutTag(forConfiguration: asc.channelConfiguration) {
            format.layout = ChannelLayout(tag: tag)
        }
        if let sbrRate = asc.sbrSampleRate, sbrRate > 0 {
            let he = AudioStreamBasicDescription.compressed(.mpeg4AAC_HE, sampleRate: sbrRate, channels: channels, framesPerPacket: 2 * fpp)
            var list = [AudioFormatListItem(format: he, channelLayoutTag: .default(channels: channels)),
                        AudioFormatListItem(format: lc, channelLayoutTag: .default(channels: channels))]
            format.asbd = he
            if asc.hasPS && channels == 1 {
                let v2 = AudioStreamBasicDescription.compressed(.mpeg4AAC_HE_V2, sampleRate: sbrRate, channels: 2, framesPerPacket: 2 * fpp)
                list.insert(AudioFormatListItem(format: v2, channelLayoutTag: .stereo), at: 0)
                format.asbd = v2
                format.layout = ChannelLayout(tag: .stereo)
            }
            format.formatList = list
        }
        return format
    }

    /// `alac` configuration box: cookie is the whole 36-byte box, format from ALACSpecificConfig.
    static func parseALAC(_ box: Box) throws -> MP4Format {
        guard box.payload.count >= 28 else {
            throw invalidData(component, "'alac' configuration box is \(box.payload.count + 8) bytes, expected 36", at: box.offset)
        }
        return try read(box) { r in
            try r.skip(4)
            let frameLength = try r.u32be()
            try r.skip(1)
            let bitDepth = UInt32(try r.u8())
            try r.skip(3)
            let channels = UInt32(try r.u8())
            try r.skip(10)
            let rate = try r.u32be()
            guard frameLength > 0, frameLength <= 1 << 20 else {
                throw invalidData(component, "ALAC frame length \(frameLength) is out of range", at: box.payloadOffset + 4)
            }
            let flags: AudioFormatFlagSet = switch bitDepth {
            case 16: .alacSourceBitDepth16
            case 20: .alacSourceBitDepth20
            case 24: .alacSourceBitDepth24
            case 32: .alacSourceBitDepth32
            default: []
            }
            var f = MP4Format(asbd: .compressed(.appleLossless, sampleRate: Double(rate), channels: channels, framesPerPacket: frameLength, flags: flags))
            var cookie: [UInt8] = [0, 0, 0, 36, 0x61, 0x6C, 0x61, 0x63, 0, 0, 0, 0]
            cookie += UnsafeRawBufferPointer(rebasing: box.payload[4..<28])
            f.cookie = cookie
            f.sourceBitDepth = bitDepth
            return f
        }
    }

    /// `dfLa`: FLAC metadata blocks; the cookie is the 34-byte STREAMINFO body.
    static func parseDFLA(_ box: Box) throws -> MP4Format {
        try read(box) { r in
            try r.skip(4)
            let header = try r.u8()
            let length = Int(try r.u24be())
            guard header & 0x7F == 0, length >= 34 else {
                throw invalidData(component, "'dfLa' does not start with a STREAMINFO block", at: box.payloadOffset + 4)
            }
            let info = try r.array(34)
            let minBlock = UInt32(info[0]) << 8 | UInt32(info[1])
            let maxBlock = UInt32(info[2]) << 8 | UInt32(info[3])
            let rate = UInt32(info[10]) << 12 | UInt32(info[11]) << 4 | UInt32(info[12]) >> 4
            let channels = UInt32((info[12] >> 1) & 7) + 1
            let bits = (UInt32(info[12] & 1) << 4 | UInt32(info[13] >> 4)) + 1
            let fixed = minBlock == maxBlock && minBlock > 0
            var f = MP4Format(asbd: .compressed(.flac, sampleRate: Double(rate), channels: channels, framesPerPacket: fixed ? maxBlock : 0))
            f.asbd.formatFlags = AudioFormatFlagSet(rawValue: bits == 16 ? 1 : bits == 20 ? 2 : bits == 24 ? 3 : bits == 32 ? 4 : 0)
            f.cookie = info
            f.framesSource = fixed ? .fixed : .durations
            f.sourceBitDepth = bits
            return f
        }
    }

    /// `dOps`: builds an Ogg-style little-endian OpusHead cookie.
    static func parseDOPS(_ box: Box) throws -> MP4Format {
        try read(box) { r in
            _ = try r.u8() // version 0
            let channels = try r.u8()
            let preSkip = try r.u16be()
            let inputRate = try r.u32be()
            let gain = try r.u16be()
            let family = try r.u8()
            guard channels > 0 else { throw invalidData(component, "'dOps' gives 0 channels", at: box.payloadOffset + 1) }
            var head: [UInt8] = Array("OpusHead".utf8) + [1, channels, UInt8(preSkip & 0xFF), UInt8(preSkip >> 8)]
            head += [UInt8(inputRate & 0xFF), UInt8((inputRate >> 8) & 0xFF), UInt8((inputRate >> 16) & 0xFF), UInt8(inputRate >> 24)]
            head += [UInt8(gain & 0xFF), UInt8(gain >> 8), family]
            if family != 0 {
                head += try r.array(2 + Int(channels))
            }
            var f = MP4Format(asbd: .compressed(.opus, sampleRate: 48000, channels: UInt32(channels), framesPerPacket: 0))
            f.cookie = head
            f.framesSource = .opusTOC
            if family == 0 {
                f.layout = ChannelLayout(tag: channels == 1 ? .mono : .stereo)
            }
            return f
        }
    }

    /// `chan`: a QuickTime channel layout (full box + big-endian ChannelLayout).
    static func parseChan(_ box: Box) throws -> ChannelLayout {
        try read(box) { r in
            try r.skip(4)
            let tag = try r.u32be()
            let bitmap = try r.u32be()
            let count = try r.u32be()
            var labels: [ChannelLabel] = []
            if tag == 0 {
                guard count <= 256 else { throw invalidData(component, "'chan' has \(count) channel descriptions", at: box.offset) }
                for _ in 0..<count {
                    labels.append(ChannelLabel(rawValue: try r.u32be()))
                    try r.skip(16)
                }
            }
            return ChannelLayout(tag: ChannelLayoutTag(rawValue: tag), bitmap: AudioChannelBitmap(rawValue: bitmap), channelLabels: labels)
        }
    }
}
