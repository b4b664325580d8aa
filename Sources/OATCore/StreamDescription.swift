/// An audio data format identifier, a ``FourCC`` (the Swift type of Apple's `AudioFormatID` scalar; a name of ours, so it never meets Apple's).
public struct AudioFormatCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The packed four-character code.
    public var rawValue: UInt32
    /// Creates an identifier from its packed value.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// Creates an identifier from a four-character string such as `"lpcm"`.
    public init(_ code: String) { rawValue = FourCC(code).rawValue }

    /// The identifier as a ``FourCC``.
    public var fourCC: FourCC { FourCC(rawValue) }
    /// The four-character text, e.g. `lpcm`, `.mp3`, `aac `.
    public var description: String { fourCC.description }

    /// Linear PCM (`'lpcm'`).
    public static let linearPCM = AudioFormatCode("lpcm")
    /// MPEG-1/2 Layer I (`'.mp1'`).
    public static let mpegLayer1 = AudioFormatCode(".mp1")
    /// MPEG-1/2 Layer II (`'.mp2'`).
    public static let mpegLayer2 = AudioFormatCode(".mp2")
    /// MPEG-1/2/2.5 Layer III (`'.mp3'`).
    public static let mpegLayer3 = AudioFormatCode(".mp3")
    /// MPEG-4 AAC, any object type carried with an AudioSpecificConfig cookie (`'aac '`).
    public static let mpeg4AAC = AudioFormatCode("aac ")
    /// MPEG-4 High Efficiency AAC (SBR) (`'aach'`).
    public static let mpeg4AAC_HE = AudioFormatCode("aach")
    /// MPEG-4 High Efficiency AAC v2 (SBR + PS) (`'aacp'`).
    public static let mpeg4AAC_HE_V2 = AudioFormatCode("aacp")
    /// Apple Lossless (`'alac'`).
    public static let appleLossless = AudioFormatCode("alac")
    /// FLAC (`'flac'`).
    public static let flac = AudioFormatCode("flac")
    /// Opus (`'opus'`).
    public static let opus = AudioFormatCode("opus")
    /// Vorbis (`'vorb'`; Audio Toolbox has no constant for it).
    public static let vorbis = AudioFormatCode("vorb")
    /// ITU G.711 mu-law (`'ulaw'`).
    public static let ulaw = AudioFormatCode("ulaw")
    /// ITU G.711 A-law (`'alaw'`).
    public static let alaw = AudioFormatCode("alaw")
    /// Apple IMA 4:1 ADPCM, 64 frames in 34-byte packets per channel (`'ima4'`).
    public static let appleIMA4 = AudioFormatCode("ima4")
    /// Microsoft ADPCM in WAV (Apple's `'ms\0\2'`).
    public static let microsoftADPCM = AudioFormatCode(rawValue: 0x6D73_0002)
    /// IMA/DVI ADPCM in WAV (Apple's `'ms\0\x11'`).
    public static let dviIntelIMA = AudioFormatCode(rawValue: 0x6D73_0011)
    /// AC-3 (`'ac-3'`).
    public static let ac3 = AudioFormatCode("ac-3")
}

/// Format flags of a stream description (the Swift type of Apple's `AudioFormatFlags` scalar, a name of ours).
///
/// For linear PCM these are the `kLinearPCMFormatFlag*` / `kAudioFormatFlag*` bits; for Apple
/// Lossless the low bits carry the source bit depth (``alacSourceBitDepth16`` ...).
public struct AudioFormatFlagSet: OptionSet, Hashable, Sendable {
    /// The packed flag bits.
    public var rawValue: UInt32
    /// Creates flags from their packed value.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Samples are IEEE floating point (`kAudioFormatFlagIsFloat`).
    public static let isFloat = AudioFormatFlagSet(rawValue: 1 << 0)
    /// Samples are big-endian (`kAudioFormatFlagIsBigEndian`).
    public static let isBigEndian = AudioFormatFlagSet(rawValue: 1 << 1)
    /// Integer samples are signed (`kAudioFormatFlagIsSignedInteger`).
    public static let isSignedInteger = AudioFormatFlagSet(rawValue: 1 << 2)
    /// Sample bits fill the bytes of each sample (`kAudioFormatFlagIsPacked`).
    public static let isPacked = AudioFormatFlagSet(rawValue: 1 << 3)
    /// Unpacked samples sit in the high bits (`kAudioFormatFlagIsAlignedHigh`).
    public static let isAlignedHigh = AudioFormatFlagSet(rawValue: 1 << 4)
    /// Each channel has its own buffer (`kAudioFormatFlagIsNonInterleaved`).
    public static let isNonInterleaved = AudioFormatFlagSet(rawValue: 1 << 5)
    /// The stream must not be mixed (`kAudioFormatFlagIsNonMixable`).
    public static let isNonMixable = AudioFormatFlagSet(rawValue: 1 << 6)

    /// The flags of native-endian packed 32-bit float PCM (`kAudioFormatFlagsNativeFloatPacked`).
    public static let nativeFloatPacked: AudioFormatFlagSet = [.isFloat, .isPacked]

    /// Apple Lossless flag: 16-bit source (`kAppleLosslessFormatFlag_16BitSourceData`).
    public static let alacSourceBitDepth16 = AudioFormatFlagSet(rawValue: 1)
    /// Apple Lossless flag: 20-bit source.
    public static let alacSourceBitDepth20 = AudioFormatFlagSet(rawValue: 2)
    /// Apple Lossless flag: 24-bit source.
    public static let alacSourceBitDepth24 = AudioFormatFlagSet(rawValue: 3)
    /// Apple Lossless flag: 32-bit source.
    public static let alacSourceBitDepth32 = AudioFormatFlagSet(rawValue: 4)

    /// MPEG-4 audio object type stored in the flags of `'aac '` descriptions (Apple convention).
    public static func mpeg4ObjectType(_ type: UInt32) -> AudioFormatFlagSet { AudioFormatFlagSet(rawValue: type) }
}

// `AudioStreamBasicDescription` (ASBD) is Apple's C struct, declared in COATCoreAudioTypes with
// Apple's fields (`mSampleRate`, `mFormatID`, ... as `Float64`/`UInt32`) and layout (40 bytes), so
// that C callback types and C code can point at it; the Swift API's names and richer types
// (``AudioFormatCode``, ``AudioFormatFlagSet``) are added here. Fields keep Apple's meaning: a
// *packet* is the smallest indivisible unit of the format (one frame for linear PCM, one MP3
// frame, one AAC access unit); a *frame* is one sample per channel. A zero in `bytesPerPacket`
// means packet sizes vary (VBR, described by packet descriptions); a zero in `framesPerPacket`
// means the frame count varies per packet.
extension AudioStreamBasicDescription: @retroactive Equatable, @retroactive Hashable, @retroactive CustomStringConvertible {
    /// Frames per second of the stream at normal playback rate (`mSampleRate`).
    @inlinable public var sampleRate: Double {
        get { mSampleRate }
        set { mSampleRate = newValue }
    }
    /// The format of the data in the stream (`mFormatID`).
    @inlinable public var formatID: AudioFormatCode {
        get { AudioFormatCode(rawValue: mFormatID) }
        set { mFormatID = newValue.rawValue }
    }
    /// Format-specific flags (`mFormatFlags`).
    @inlinable public var formatFlags: AudioFormatFlagSet {
        get { AudioFormatFlagSet(rawValue: mFormatFlags) }
        set { mFormatFlags = newValue.rawValue }
    }
    /// Bytes in a packet, or 0 when packet sizes vary (`mBytesPerPacket`).
    @inlinable public var bytesPerPacket: UInt32 {
        get { mBytesPerPacket }
        set { mBytesPerPacket = newValue }
    }
    /// Frames in a packet, or 0 when it varies (`mFramesPerPacket`).
    @inlinable public var framesPerPacket: UInt32 {
        get { mFramesPerPacket }
        set { mFramesPerPacket = newValue }
    }
    /// Bytes from the start of one frame to the next in one buffer, 0 for compressed formats
    /// (`mBytesPerFrame`).
    @inlinable public var bytesPerFrame: UInt32 {
        get { mBytesPerFrame }
        set { mBytesPerFrame = newValue }
    }
    /// Channels in each frame (`mChannelsPerFrame`).
    @inlinable public var channelsPerFrame: UInt32 {
        get { mChannelsPerFrame }
        set { mChannelsPerFrame = newValue }
    }
    /// Bits of sample data per channel, 0 for compressed formats (`mBitsPerChannel`).
    @inlinable public var bitsPerChannel: UInt32 {
        get { mBitsPerChannel }
        set { mBitsPerChannel = newValue }
    }
    /// Pads the structure to an even size; always 0 (`mReserved`).
    @inlinable public var reserved: UInt32 {
        get { mReserved }
        set { mReserved = newValue }
    }

    /// Creates a description with every field given (`reserved` is 0).
    @inlinable
    public init(sampleRate: Double, formatID: AudioFormatCode, formatFlags: AudioFormatFlagSet = [],
                bytesPerPacket: UInt32, framesPerPacket: UInt32, bytesPerFrame: UInt32,
                channelsPerFrame: UInt32, bitsPerChannel: UInt32) {
        self.init(mSampleRate: sampleRate, mFormatID: formatID.rawValue, mFormatFlags: formatFlags.rawValue,
                  mBytesPerPacket: bytesPerPacket, mFramesPerPacket: framesPerPacket, mBytesPerFrame: bytesPerFrame,
                  mChannelsPerFrame: channelsPerFrame, mBitsPerChannel: bitsPerChannel, mReserved: 0)
    }

    /// Equal when every field is (the sample rates compare as `Double`s).
    public static func == (lhs: AudioStreamBasicDescription, rhs: AudioStreamBasicDescription) -> Bool {
        lhs.mSampleRate == rhs.mSampleRate && lhs.mFormatID == rhs.mFormatID && lhs.mFormatFlags == rhs.mFormatFlags
            && lhs.mBytesPerPacket == rhs.mBytesPerPacket && lhs.mFramesPerPacket == rhs.mFramesPerPacket
            && lhs.mBytesPerFrame == rhs.mBytesPerFrame && lhs.mChannelsPerFrame == rhs.mChannelsPerFrame
            && lhs.mBitsPerChannel == rhs.mBitsPerChannel && lhs.mReserved == rhs.mReserved
    }
    /// Hashes every field.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(mSampleRate)
        hasher.combine(mFormatID)
        hasher.combine(mFormatFlags)
        hasher.combine(mBytesPerPacket)
        hasher.combine(mFramesPerPacket)
        hasher.combine(mBytesPerFrame)
        hasher.combine(mChannelsPerFrame)
        hasher.combine(mBitsPerChannel)
        hasher.combine(mReserved)
    }

    /// A linear PCM description. Interleaved PCM has one frame per packet of
    /// `channels * bytes` bytes; non-interleaved describes one channel's buffer.
    public static func linearPCM(sampleRate: Double, channels: UInt32, bitsPerChannel: UInt32,
                                 isFloat: Bool = false, isBigEndian: Bool = false,
                                 isSigned: Bool = true, isInterleaved: Bool = true,
                                 bytesPerSample: UInt32? = nil) -> AudioStreamBasicDescription {
        let sampleBytes = bytesPerSample ?? (bitsPerChannel + 7) / 8
        var flags: AudioFormatFlagSet = []
        if isFloat { flags.insert(.isFloat) } else if isSigned { flags.insert(.isSignedInteger) }
        if isBigEndian && sampleBytes > 1 { flags.insert(.isBigEndian) }
        if sampleBytes * 8 == bitsPerChannel { flags.insert(.isPacked) } else { flags.insert(.isAlignedHigh) }
        if !isInterleaved { flags.insert(.isNonInterleaved) }
        let frameBytes = isInterleaved ? sampleBytes * channels : sampleBytes
        return AudioStreamBasicDescription(
            sampleRate: sampleRate, formatID: .linearPCM, formatFlags: flags,
            bytesPerPacket: frameBytes, framesPerPacket: 1, bytesPerFrame: frameBytes,
            channelsPerFrame: channels, bitsPerChannel: bitsPerChannel)
    }

    /// The processing format of OpenAudioToolbox: native 32-bit float, non-interleaved.
    public static func canonicalFloat(sampleRate: Double, channels: UInt32) -> AudioStreamBasicDescription {
        linearPCM(sampleRate: sampleRate, channels: channels, bitsPerChannel: 32, isFloat: true,
                  isInterleaved: false)
    }

    /// A compressed-format description with the given frames per packet (bytes vary).
    public static func compressed(_ formatID: AudioFormatCode, sampleRate: Double, channels: UInt32,
                                  framesPerPacket: UInt32, bytesPerPacket: UInt32 = 0,
                                  flags: AudioFormatFlagSet = []) -> AudioStreamBasicDescription {
        AudioStreamBasicDescription(sampleRate: sampleRate, formatID: formatID, formatFlags: flags,
                                    bytesPerPacket: bytesPerPacket, framesPerPacket: framesPerPacket,
                                    bytesPerFrame: 0, channelsPerFrame: channels, bitsPerChannel: 0)
    }

    /// True for linear PCM.
    public var isPCM: Bool { formatID == .linearPCM }
    /// True unless the non-interleaved flag is set.
    public var isInterleaved: Bool { !formatFlags.contains(.isNonInterleaved) }
    /// True when packets have varying sizes (``bytesPerPacket`` is 0).
    public var hasVariableBytesPerPacket: Bool { bytesPerPacket == 0 }
    /// True when packets have varying frame counts (``framesPerPacket`` is 0).
    public var hasVariableFramesPerPacket: Bool { framesPerPacket == 0 }
    /// True for float PCM.
    public var isFloat: Bool { formatFlags.contains(.isFloat) }
    /// True for big-endian PCM.
    public var isBigEndian: Bool { formatFlags.contains(.isBigEndian) }
    /// True for signed-integer PCM.
    public var isSignedInteger: Bool { formatFlags.contains(.isSignedInteger) }
    /// Buffers needed to hold one packet's worth of audio (channels when non-interleaved, else 1).
    public var bufferCount: Int { isInterleaved ? 1 : Int(channelsPerFrame) }

    /// Checks the description for internal consistency and returns what is wrong, or nil.
    public var validationFailure: String? {
        if !(sampleRate >= 0) || !sampleRate.isFinite { return "sample rate \(sampleRate) is not a finite non-negative number" }
        if channelsPerFrame == 0 { return "channel count is 0" }
        if isPCM {
            if bitsPerChannel == 0 { return "PCM bits per channel is 0" }
            if framesPerPacket != 1 { return "PCM frames per packet is \(framesPerPacket), expected 1" }
            if bytesPerFrame == 0 || bytesPerPacket != bytesPerFrame { return "PCM bytes per packet \(bytesPerPacket) differs from bytes per frame \(bytesPerFrame)" }
            let perSample = isInterleaved ? bytesPerFrame / channelsPerFrame : bytesPerFrame
            if perSample * 8 < bitsPerChannel { return "PCM \(bitsPerChannel) bits do not fit in \(perSample) bytes per sample" }
            if isFloat && bitsPerChannel != 32 && bitsPerChannel != 64 { return "float PCM with \(bitsPerChannel) bits" }
        }
        return nil
    }

    /// Apple-style one-line summary, e.g.
    /// `2 ch,  44100 Hz, Int16` or `2 ch,  44100 Hz, .mp3 (0x00000000) 0 bits/channel, ...`.
    public var description: String {
        let rate = sampleRate.isFinite && abs(sampleRate) < 1e15 && sampleRate == sampleRate.rounded()
            ? String(Int64(sampleRate)) : String(sampleRate)
        var s = "\(channelsPerFrame) ch, \(String(repeating: " ", count: max(0, 6 - rate.count)))\(rate) Hz, "
        if isPCM {
            let order = bitsPerChannel > 8 ? (isBigEndian ? "big-endian " : "little-endian ") : ""
            let kind = isFloat ? "Float\(bitsPerChannel)" : (isSignedInteger || bitsPerChannel > 8 ? "Int\(bitsPerChannel)" : "UInt\(bitsPerChannel)")
            s += "\(kind) \(order)\(isInterleaved ? "interleaved" : "deinterleaved")"
            let sampleBytes = isInterleaved && channelsPerFrame > 0 ? bytesPerFrame / channelsPerFrame : bytesPerFrame
            if sampleBytes * 8 != bitsPerChannel { s += ", packed in \(sampleBytes) bytes" }
        } else {
            let hex = String(formatFlags.rawValue, radix: 16)
            s += "'\(formatID)' (0x\(String(repeating: "0", count: max(0, 8 - hex.count)))\(hex)) "
            s += "\(bitsPerChannel) bits/channel, \(bytesPerPacket) bytes/packet, \(framesPerPacket) frames/packet, \(bytesPerFrame) bytes/frame"
        }
        return s
    }
}

// `AudioStreamPacketDescription` (where one packet lies in a buffer of packets) is Apple's C
// struct, declared in COATCoreAudioTypes with Apple's fields (`mStartOffset`, `mVariableFramesInPacket`,
// `mDataByteSize`) so that C callback types can point at it; the Swift API's names are added here.
@_exported import COATCoreAudioTypes

extension AudioStreamPacketDescription: @retroactive Equatable, @retroactive Hashable {
    /// Creates a packet description.
    public init(startOffset: Int64, variableFramesInPacket: UInt32 = 0, dataByteSize: UInt32) {
        self.init(mStartOffset: startOffset, mVariableFramesInPacket: variableFramesInPacket, mDataByteSize: dataByteSize)
    }
    /// Byte offset of the packet from the start of the buffer (`mStartOffset`).
    public var startOffset: Int64 {
        get { mStartOffset }
        set { mStartOffset = newValue }
    }
    /// Frames in the packet when the format's frames per packet varies, else 0 (`mVariableFramesInPacket`).
    public var variableFramesInPacket: UInt32 {
        get { mVariableFramesInPacket }
        set { mVariableFramesInPacket = newValue }
    }
    /// Size of the packet in bytes (`mDataByteSize`).
    public var dataByteSize: UInt32 {
        get { mDataByteSize }
        set { mDataByteSize = newValue }
    }
    /// Equal when offset, frames and size are.
    public static func == (lhs: AudioStreamPacketDescription, rhs: AudioStreamPacketDescription) -> Bool {
        lhs.mStartOffset == rhs.mStartOffset && lhs.mVariableFramesInPacket == rhs.mVariableFramesInPacket
            && lhs.mDataByteSize == rhs.mDataByteSize
    }
    /// Hashes offset, frames and size.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(mStartOffset)
        hasher.combine(mVariableFramesInPacket)
        hasher.combine(mDataByteSize)
    }
}

// `AudioFilePacketTableInfo` (priming and remainder frames of an encoded stream) is Apple's C
// struct, declared in COATCoreAudioTypes with Apple's fields; the Swift API's names are added here.
// `numberValidFrames + primingFrames + remainderFrames` equals the frames the packets decode to; a
// gapless player drops `primingFrames` at the start and `remainderFrames` at the end.
extension AudioFilePacketTableInfo: @retroactive Equatable, @retroactive Hashable {
    /// Frames of real audio (`mNumberValidFrames`).
    @inlinable public var numberValidFrames: Int64 {
        get { mNumberValidFrames }
        set { mNumberValidFrames = newValue }
    }
    /// Frames of encoder delay at the start to discard (`mPrimingFrames`).
    @inlinable public var primingFrames: Int32 {
        get { mPrimingFrames }
        set { mPrimingFrames = newValue }
    }
    /// Frames of padding at the end to discard (`mRemainderFrames`).
    @inlinable public var remainderFrames: Int32 {
        get { mRemainderFrames }
        set { mRemainderFrames = newValue }
    }

    /// Creates packet-table info.
    @inlinable
    public init(numberValidFrames: Int64, primingFrames: Int32, remainderFrames: Int32) {
        self.init(mNumberValidFrames: numberValidFrames, mPrimingFrames: primingFrames, mRemainderFrames: remainderFrames)
    }
    /// Equal when every field is.
    public static func == (lhs: AudioFilePacketTableInfo, rhs: AudioFilePacketTableInfo) -> Bool {
        lhs.mNumberValidFrames == rhs.mNumberValidFrames && lhs.mPrimingFrames == rhs.mPrimingFrames
            && lhs.mRemainderFrames == rhs.mRemainderFrames
    }
    /// Hashes every field.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(mNumberValidFrames)
        hasher.combine(mPrimingFrames)
        hasher.combine(mRemainderFrames)
    }
}

// `AudioFormatListItem` (one entry of a format list: a stream description with the channel layout
// tag it applies to; layered formats such as HE-AAC list the richest first) is Apple's C struct,
// declared in COATCoreAudioTypes with Apple's fields (`mASBD`, `mChannelLayoutTag`); the Swift API's
// names are added here.
extension AudioFormatListItem: @retroactive Equatable, @retroactive Hashable {
    /// The stream description (`mASBD`).
    public var format: AudioStreamBasicDescription {
        get { mASBD }
        set { mASBD = newValue }
    }
    /// The channel layout tag for this layer (`mChannelLayoutTag`).
    public var channelLayoutTag: ChannelLayoutTag {
        get { ChannelLayoutTag(rawValue: mChannelLayoutTag) }
        set { mChannelLayoutTag = newValue.rawValue }
    }

    /// Creates a format list item.
    public init(format: AudioStreamBasicDescription, channelLayoutTag: ChannelLayoutTag) {
        self.init(mASBD: format, mChannelLayoutTag: channelLayoutTag.rawValue)
    }
    /// Equal when both fields are.
    public static func == (lhs: AudioFormatListItem, rhs: AudioFormatListItem) -> Bool {
        lhs.mASBD == rhs.mASBD && lhs.mChannelLayoutTag == rhs.mChannelLayoutTag
    }
    /// Hashes both fields.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(mASBD)
        hasher.combine(mChannelLayoutTag)
    }
}
