import OATCore

/// A file or stream container type (Apple's `AudioFileTypeID`).
public struct AudioFileType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The packed four-character code.
    public var rawValue: UInt32
    /// Creates a type from its packed code.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// Creates a type from its four-character code.
    public init(_ code: String) { rawValue = FourCC(code).rawValue }

    /// The code as text, e.g. `WAVE`, `caff`.
    public var description: String { FourCC(rawValue).description }

    /// AIFF (`'AIFF'`).
    public static let aiff = AudioFileType("AIFF")
    /// AIFF-C (`'AIFC'`).
    public static let aifc = AudioFileType("AIFC")
    /// RIFF WAVE, little- or big-endian (`'WAVE'`).
    public static let wave = AudioFileType("WAVE")
    /// RF64 WAVE with a `ds64` chunk (`'RF64'`).
    public static let rf64 = AudioFileType("RF64")
    /// Broadcast-64 WAVE (`'BW64'`).
    public static let bw64 = AudioFileType("BW64")
    /// Core Audio Format (`'caff'`).
    public static let caf = AudioFileType("caff")
    /// NeXT/Sun `.snd`/`.au` (`'NeXT'`).
    public static let next = AudioFileType("NeXT")
    /// MPEG Layer III (`'MPG3'`).
    public static let mp3 = AudioFileType("MPG3")
    /// MPEG Layer II (`'MPG2'`).
    public static let mp2 = AudioFileType("MPG2")
    /// MPEG Layer I (`'MPG1'`).
    public static let mp1 = AudioFileType("MPG1")
    /// AAC in ADTS (`'adts'`).
    public static let aacADTS = AudioFileType("adts")
    /// MPEG-4 (`'mp4f'`).
    public static let mpeg4 = AudioFileType("mp4f")
    /// Apple MPEG-4 audio (`'m4af'`).
    public static let m4a = AudioFileType("m4af")
    /// Native FLAC (`'flac'`).
    public static let flac = AudioFileType("flac")
    /// Ogg (Vorbis, Opus, FLAC) (`'OggS'`; Audio Toolbox has no constant).
    public static let ogg = AudioFileType("OggS")

    /// A display name in the style of afinfo (`WAVE`, `CAFF`, `MPEG Layer 3`...).
    public var displayName: String {
        switch self {
        case .aiff: "AIFF"
        case .aifc: "AIFF-C"
        case .wave: "WAVE"
        case .rf64: "RF64"
        case .bw64: "BW64"
        case .caf: "CAF"
        case .next: "NeXT/Sun"
        case .mp3: "MPEG Layer 3"
        case .mp2: "MPEG Layer 2"
        case .mp1: "MPEG Layer 1"
        case .aacADTS: "AAC ADTS"
        case .mpeg4: "MPEG-4"
        case .m4a: "Apple MPEG-4 Audio"
        case .flac: "FLAC"
        case .ogg: "Ogg"
        default: description
        }
    }
}

/// The properties an ``AudioFileStream`` reports, with Apple's four-character codes
/// (`kAudioFileStreamProperty_*`).
public enum AudioFileStreamProperty: UInt32, Sendable, CaseIterable, CustomStringConvertible {
    /// The parser has read enough to deliver packets (`'redy'`).
    case readyToProducePackets = 0x7265_6479
    /// The container type (`'ffmt'`).
    case fileFormat = 0x6666_6D74
    /// The stream description of the audio data (`'dfmt'`).
    case dataFormat = 0x6466_6D74
    /// Layered formats, richest first (`'flst'`).
    case formatList = 0x666C_7374
    /// The decoder's magic cookie (`'mgic'`).
    case magicCookieData = 0x6D67_6963
    /// Bytes of audio data, when the container states it (`'bcnt'`).
    case audioDataByteCount = 0x6263_6E74
    /// Packets of audio data, when the container states it (`'pcnt'`).
    case audioDataPacketCount = 0x7063_6E74
    /// Largest packet in the data, when known (`'psze'`).
    case maximumPacketSize = 0x7073_7A65
    /// Offset of the first audio byte in the file (`'doff'`).
    case dataOffset = 0x646F_6666
    /// The channel layout (`'cmap'`).
    case channelLayout = 0x636D_6170
    /// Packet index to frame (`'pkfr'`).
    case packetToFrame = 0x706B_6672
    /// Frame to packet index (`'frpk'`).
    case frameToPacket = 0x6672_706B
    /// Packet index to byte offset (`'pkby'`).
    case packetToByte = 0x706B_6279
    /// Byte offset to packet index (`'bypk'`).
    case byteToPacket = 0x6279_706B
    /// Valid, priming and remainder frames (`'pnfo'`).
    case packetTableInfo = 0x706E_666F
    /// Theoretical largest packet of the format (`'pkub'`).
    case packetSizeUpperBound = 0x706B_7562
    /// Average bytes per packet (`'abpp'`).
    case averageBytesPerPacket = 0x6162_7070
    /// Bit rate in bits per second (`'brat'`).
    case bitRate = 0x6272_6174
    /// Tags and facts as a dictionary (`'info'`).
    case infoDictionary = 0x696E_666F

    /// Apple's name without prefix, e.g. `DataFormat`.
    public var description: String {
        switch self {
        case .readyToProducePackets: "ReadyToProducePackets"
        case .fileFormat: "FileFormat"
        case .dataFormat: "DataFormat"
        case .formatList: "FormatList"
        case .magicCookieData: "MagicCookieData"
        case .audioDataByteCount: "AudioDataByteCount"
        case .audioDataPacketCount: "AudioDataPacketCount"
        case .maximumPacketSize: "MaximumPacketSize"
        case .dataOffset: "DataOffset"
        case .channelLayout: "ChannelLayout"
        case .packetToFrame: "PacketToFrame"
        case .frameToPacket: "FrameToPacket"
        case .packetToByte: "PacketToByte"
        case .byteToPacket: "ByteToPacket"
        case .packetTableInfo: "PacketTableInfo"
        case .packetSizeUpperBound: "PacketSizeUpperBound"
        case .averageBytesPerPacket: "AverageBytesPerPacket"
        case .bitRate: "BitRate"
        case .infoDictionary: "InfoDictionary"
        }
    }
}

// `AudioFileStreamParseFlags` (flags for ``AudioFileStream/parse(_:flags:)``) is Apple's C option
// set, declared in COATCoreAudioTypes with Apple's member `discontinuity` (the bytes do not follow
// the previous ones: after a seek, or data was lost).
extension AudioFileStreamParseFlags: @retroactive Hashable {}

/// One thing an ``AudioFileStream`` reports while parsing, in input order.
public enum AudioFileStreamEvent: Hashable, Sendable {
    /// A property got its value or changed (Apple's property listener).
    case propertyChanged(AudioFileStreamProperty)
    /// Packets are ready (Apple's packets callback).
    case packets(AudioPacketBatch)
}

/// Where to continue feeding bytes after ``AudioFileStream/seek(toPacket:)``.
public struct AudioFileStreamSeekResult: Hashable, Sendable {
    /// Absolute byte offset in the file at which to resume feeding bytes.
    public var byteOffset: Int64
    /// Offset relative to the start of the audio data (what Apple's `AudioFileStreamSeek`
    /// returns).
    public var dataByteOffset: Int64
    /// True when the offset is an estimate (no exact table in the file).
    public var isEstimated: Bool
    /// The packet the bytes at ``byteOffset`` begin with (may precede the requested one when
    /// the container can only restart at certain points).
    public var packetIndex: Int64
}

/// Limits on what untrusted input can make a parser hold.
public struct ParserLimits: Hashable, Sendable {
    /// Largest header structure (chunk, box, tag) the parser buffers whole. Default 64 MiB.
    public var maximumBufferedBytes: Int = 64 << 20
    /// Largest single packet accepted. Default 16 MiB.
    public var maximumPacketSize: Int = 16 << 20
    /// Largest tag text or metadata block kept for the info dictionary. Default 1 MiB.
    public var maximumTagBytes: Int = 1 << 20
    /// Largest number of entries in a seek or sample table. Default 64 Mi entries.
    public var maximumTableEntries: Int = 64 << 20

    /// The defaults.
    public static let `default` = ParserLimits()
    /// Creates limits (defaults as documented on each field).
    public init() {}
}

/// Keys of the info dictionary (Apple's `kAFInfoDictionary_*` strings).
public enum InfoKey {
    /// Artist.
    public static let artist = "artist"
    /// Album.
    public static let album = "album"
    /// Title.
    public static let title = "title"
    /// Track number.
    public static let trackNumber = "track number"
    /// Year.
    public static let year = "year"
    /// Recorded date.
    public static let recordedDate = "recorded date"
    /// Genre.
    public static let genre = "genre"
    /// Comments.
    public static let comments = "comments"
    /// Composer.
    public static let composer = "composer"
    /// Copyright.
    public static let copyright = "copyright"
    /// Encoding application.
    public static let encodingApplication = "encoding application"
    /// Approximate duration in seconds.
    public static let approximateDurationInSeconds = "approximate duration in seconds"
    /// Source bit depth.
    public static let sourceBitDepth = "source bit depth"
    /// Lyricist.
    public static let lyricist = "lyricist"
    /// Album artist (not an Apple key; written as ID3 `TPE2`, Vorbis `ALBUMARTIST`).
    public static let albumArtist = "album artist"
    /// Disc number.
    public static let discNumber = "disc number"
}
