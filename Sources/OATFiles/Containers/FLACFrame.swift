import OATCore

/// The 34-byte FLAC STREAMINFO metadata block.
struct FLACStreamInfo: Equatable {
    var minBlockSize: UInt32
    var maxBlockSize: UInt32
    var minFrameSize: UInt32
    var maxFrameSize: UInt32
    var sampleRate: UInt32
    var channels: UInt32
    var bitsPerSample: UInt32
    var totalSamples: UInt64
    /// The block body as stored (the magic cookie).
    var body: [UInt8]

    /// Parses and validates a STREAMINFO body; `at` is its absolute offset (for errors).
    init(_ b: UnsafeRawBufferPointer, at offset: Int64) throws(AudioError) {
        let component = "FLAC STREAMINFO"
        guard b.count >= 34 else {
            throw invalidData(component, "STREAMINFO is \(b.count) bytes, expected 34", at: offset)
        }
        func u(_ i: Int) -> UInt64 { UInt64(b[i]) }
        minBlockSize = UInt32(u(0) << 8 | u(1))
        maxBlockSize = UInt32(u(2) << 8 | u(3))
        minFrameSize = UInt32(u(4) << 16 | u(5) << 8 | u(6))
        maxFrameSize = UInt32(u(7) << 16 | u(8) << 8 | u(9))
        var packed: UInt64 = 0
        for i in 10..<18 { packed = packed << 8 | u(i) }
        sampleRate = UInt32(packed >> 44)
        channels = UInt32((packed >> 41) & 7) + 1
        bitsPerSample = UInt32((packed >> 36) & 31) + 1
        totalSamples = packed & 0xF_FFFF_FFFF
        body = Array(UnsafeRawBufferPointer(rebasing: b[0..<34]))
        guard minBlockSize >= 16, maxBlockSize >= minBlockSize else {
            throw invalidData(component, "block sizes \(minBlockSize)...\(maxBlockSize) are invalid (minimum 16, min <= max)", at: offset)
        }
        guard sampleRate > 0 else { throw invalidData(component, "sample rate is 0", at: offset + 10) }
        guard bitsPerSample >= 4 else { throw invalidData(component, "\(bitsPerSample) bits per sample is below 4", at: offset + 12) }
        guard maxFrameSize == 0 || minFrameSize == 0 || minFrameSize <= maxFrameSize else {
            throw invalidData(component, "frame sizes \(minFrameSize)...\(maxFrameSize) are invalid", at: offset + 4)
        }
    }

    /// The stream description. A fixed-blocksize stream (STREAMINFO's minimum and maximum block
    /// sizes equal) has that block size as its frames per packet, as Apple reports it (the last
    /// frame may be shorter: the packet table's remainder says by how much); a variable-blocksize
    /// stream has 0 and gives each packet's frames in its packet description.
    var format: AudioStreamBasicDescription {
        let flags: AudioFormatFlagSet = switch bitsPerSample {
        case 16: .alacSourceBitDepth16
        case 20: .alacSourceBitDepth20
        case 24: .alacSourceBitDepth24
        case 32: .alacSourceBitDepth32
        default: []
        }
        return .compressed(.flac, sampleRate: Double(sampleRate), channels: channels,
                           framesPerPacket: isFixedBlockSize ? maxBlockSize : 0, flags: flags)
    }

    /// True when every frame but the last has the same block size.
    var isFixedBlockSize: Bool { minBlockSize == maxBlockSize }
}

/// A validated FLAC frame header.
struct FLACFrameHeader: Equatable {
    /// Header length in bytes, CRC-8 included.
    var length: Int
    /// Samples per channel in the frame.
    var blockSize: UInt32
    /// Variable-blocksize stream: `number` is a sample number, else a frame number.
    var isVariable: Bool
    var number: UInt64
    /// Channels (1...8).
    var channels: UInt32
    /// Bits per sample, or 0 for "as in STREAMINFO".
    var bitsPerSample: UInt32

    /// The first sample of the frame, given the stream's fixed block size for frame numbers.
    func firstSample(fixedBlockSize: UInt32) -> UInt64 {
        isVariable ? number : number &* UInt64(fixedBlockSize == 0 ? blockSize : fixedBlockSize)
    }

    /// Largest size a frame with this header can reasonably have (verbatim subframes, plus slack).
    func sizeBound(streamBitsPerSample: UInt32) -> Int {
        let bps = Int(bitsPerSample > 0 ? bitsPerSample : max(streamBitsPerSample, 8)) + 1
        return Int(blockSize) * Int(channels) * bps / 8 + 1024 + length
    }

    /// Parses the header at `b[at...]`: nil when the bytes are not a valid header (sync,
    /// reserved values, CRC-8); throws ``NeedMoreData`` (counted from the start of `b`) when
    /// the header runs past the bytes at hand.
    static func parse(_ b: UnsafeRawBufferPointer, at start: Int) throws(NeedMoreData) -> FLACFrameHeader? {
        let r = ByteReader(b, position: start)
        try r.require(5)
        guard b[start] == 0xFF, b[start + 1] & 0xFE == 0xF8 else { return nil }
        let isVariable = b[start + 1] & 1 != 0
        let blockCode = b[start + 2] >> 4
        let rateCode = b[start + 2] & 0x0F
        let channelCode = b[start + 3] >> 4
        let sizeCode = (b[start + 3] >> 1) & 7
        guard blockCode != 0, rateCode != 15, channelCode < 11, sizeCode != 3, b[start + 3] & 1 == 0 else { return nil }
        // UTF-8-style coded frame or sample number.
        let first = b[start + 4]
        var extra: Int
        var number: UInt64
        switch first {
        case 0x00..<0x80: extra = 0; number = UInt64(first)
        case 0xC0..<0xE0: extra = 1; number = UInt64(first & 0x1F)
        case 0xE0..<0xF0: extra = 2; number = UInt64(first & 0x0F)
        case 0xF0..<0xF8: extra = 3; number = UInt64(first & 0x07)
        case 0xF8..<0xFC: extra = 4; number = UInt64(first & 0x03)
        case 0xFC..<0xFE: extra = 5; number = UInt64(first & 0x01)
        case 0xFE: extra = 6; number = 0
        default: return nil
        }
        if extra == 6 && !isVariable { return nil }
        var pos = start + 5
        try r.require(5 + extra)
        for _ in 0..<extra {
            let c = b[pos]
            guard c & 0xC0 == 0x80 else { return nil }
            number = number << 6 | UInt64(c & 0x3F)
            pos += 1
        }
        var blockSize: UInt32
        switch blockCode {
        case 1: blockSize = 192
        case 2...5: blockSize = 576 << UInt32(blockCode - 2)
        case 6:
            try r.require(pos - start + 1)
            blockSize = UInt32(b[pos]) + 1; pos += 1
        case 7:
            try r.require(pos - start + 2)
            blockSize = (UInt32(b[pos]) << 8 | UInt32(b[pos + 1])) + 1; pos += 2
        default: blockSize = 256 << UInt32(blockCode - 8)
        }
        switch rateCode {
        case 12: pos += 1
        case 13, 14: pos += 2
        default: break
        }
        try r.require(pos - start + 1)
        guard flacCRC8(UnsafeRawBufferPointer(rebasing: b[start..<pos])) == b[pos] else { return nil }
        let channels: UInt32 = channelCode < 8 ? UInt32(channelCode) + 1 : 2
        let bits: UInt32 = switch sizeCode {
        case 1: 8
        case 2: 12
        case 4: 16
        case 5: 20
        case 6: 24
        case 7: 32
        default: 0
        }
        return FLACFrameHeader(length: pos - start + 1, blockSize: blockSize, isVariable: isVariable,
                               number: number, channels: channels, bitsPerSample: bits)
    }
}
