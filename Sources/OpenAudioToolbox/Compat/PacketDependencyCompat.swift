// Audio Toolbox–compatible packet dependency properties (roll distance, independent packets),
// shared by AudioFileStream and AudioFile.
//
// Every format this project reads has independently decodable packets; some need earlier
// packets decoded first to sound right from a given packet (pre-roll: MP3's bit reservoir,
// AAC's overlapped transform, Opus's 80 ms). The values are the pre-roll this project's own
// seeking uses (``ExtendedAudioFile``).

import OATCore

/// Pre-roll of a packet (Apple's `AudioPacketRollDistanceTranslation`): in `mPacket`, out
/// `mRollDistance`, the packets before it to decode first.
public struct AudioPacketRollDistanceTranslation: Hashable, Sendable {
    /// The packet asked about.
    public var mPacket: Int64
    /// Packets before `mPacket` to decode first.
    public var mRollDistance: Int64
    /// A zeroed value.
    public init() { self.init(mPacket: 0, mRollDistance: 0) }
    /// Apple's memberwise initialiser.
    public init(mPacket: Int64, mRollDistance: Int64) {
        self.mPacket = mPacket
        self.mRollDistance = mRollDistance
    }
}

/// The nearest independently decodable packet (Apple's `AudioIndependentPacketTranslation`):
/// in `mPacket`, out `mIndependentlyDecodablePacket`.
public struct AudioIndependentPacketTranslation: Hashable, Sendable {
    /// The packet asked about.
    public var mPacket: Int64
    /// The independently decodable packet before (or after) it.
    public var mIndependentlyDecodablePacket: Int64
    /// A zeroed value.
    public init() { self.init(mPacket: 0, mIndependentlyDecodablePacket: 0) }
    /// Apple's memberwise initialiser.
    public init(mPacket: Int64, mIndependentlyDecodablePacket: Int64) {
        self.mPacket = mPacket
        self.mIndependentlyDecodablePacket = mIndependentlyDecodablePacket
    }
}

/// A packet's dependency information (Apple's `AudioPacketDependencyInfoTranslation`): in
/// `mPacket`, out whether it decodes independently and its pre-roll in packets.
public struct AudioPacketDependencyInfoTranslation: Hashable, Sendable {
    /// The packet asked about.
    public var mPacket: Int64
    /// 1 when the packet decodes without earlier packets.
    public var mIsIndependentlyDecodable: UInt32
    /// Packets to decode before it for correct output.
    public var mNumberPrerollPackets: UInt32
    /// A zeroed value.
    public init() { self.init(mPacket: 0, mIsIndependentlyDecodable: 0, mNumberPrerollPackets: 0) }
    /// Apple's memberwise initialiser.
    public init(mPacket: Int64, mIsIndependentlyDecodable: UInt32, mNumberPrerollPackets: UInt32) {
        self.mPacket = mPacket
        self.mIsIndependentlyDecodable = mIsIndependentlyDecodable
        self.mNumberPrerollPackets = mNumberPrerollPackets
    }
}

/// `AudioPacketRollDistanceTranslation`, in/out (`'pkrl'`).
public let kAudioFilePropertyPacketToRollDistance: AudioFilePropertyID = fourCC("pkrl")
/// `AudioIndependentPacketTranslation`, in/out (`'pind'`).
public let kAudioFilePropertyPreviousIndependentPacket: AudioFilePropertyID = fourCC("pind")
/// `AudioIndependentPacketTranslation`, in/out (`'nind'`).
public let kAudioFilePropertyNextIndependentPacket: AudioFilePropertyID = fourCC("nind")
/// `AudioPacketDependencyInfoTranslation`, in/out (`'pkdp'`).
public let kAudioFilePropertyPacketToDependencyInfo: AudioFilePropertyID = fourCC("pkdp")

/// Packets of pre-roll a format's decoder needs here.
func rollDistance(_ f: AudioStreamBasicDescription) -> Int64 {
    switch f.formatID {
    case .linearPCM, .ulaw, .alaw, .flac, .appleLossless, .appleIMA4: return 0
    case .opus:
        let fpp = Double(f.framesPerPacket > 0 ? f.framesPerPacket : 960)
        return Int64((0.08 * f.sampleRate / fpp).rounded(.up))
    case .mpegLayer1, .mpegLayer2: return 1
    default: return 2
    }
}

/// The value of a packet dependency property (`pkrl`, `pind`, `nind`, `pkdp`) for packet
/// translations read from `input`, or nil for other IDs. `packetCount` bounds `nind` when known.
func packetDependencyProperty(_ id: UInt32, format: AudioStreamBasicDescription, packetCount: Int64?,
                              input: UnsafeRawPointer?, invalidPacket: OSStatus) -> Result<CPropertyValue, OSErr>? {
    func bytes<T>(_ v: T) -> CPropertyValue { .bytes(withUnsafeBytes(of: v) { Array($0) }) }
    switch id {
    case kAudioFilePropertyPacketToRollDistance:
        var t = input?.loadUnaligned(as: AudioPacketRollDistanceTranslation.self) ?? AudioPacketRollDistanceTranslation()
        guard t.mPacket >= 0 else { return .failure(OSErr(invalidPacket)) }
        t.mRollDistance = min(t.mPacket, rollDistance(format))
        return .success(bytes(t))
    case kAudioFilePropertyPreviousIndependentPacket, kAudioFilePropertyNextIndependentPacket:
        var t = input?.loadUnaligned(as: AudioIndependentPacketTranslation.self) ?? AudioIndependentPacketTranslation()
        guard t.mPacket >= 0 else { return .failure(OSErr(invalidPacket)) }
        // Every packet decodes independently: the neighbour is the adjacent packet.
        let next = id == kAudioFilePropertyNextIndependentPacket
        let other = next ? t.mPacket + 1 : t.mPacket - 1
        guard other >= 0, !(next && packetCount.map { other >= $0 } ?? false) else { return .failure(OSErr(invalidPacket)) }
        t.mIndependentlyDecodablePacket = other
        return .success(bytes(t))
    case kAudioFilePropertyPacketToDependencyInfo:
        var t = input?.loadUnaligned(as: AudioPacketDependencyInfoTranslation.self) ?? AudioPacketDependencyInfoTranslation()
        guard t.mPacket >= 0 else { return .failure(OSErr(invalidPacket)) }
        t.mIsIndependentlyDecodable = 1
        t.mNumberPrerollPackets = UInt32(min(t.mPacket, rollDistance(format)))
        return .success(bytes(t))
    default:
        return nil
    }
}
