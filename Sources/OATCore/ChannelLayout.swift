/// A channel layout tag (Apple's `AudioChannelLayoutTag`, as a Swift type of ours): the high 16 bits name the layout,
/// the low 16 bits give its channel count.
public struct ChannelLayoutTag: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The packed tag value.
    public var rawValue: UInt32
    /// Creates a tag from its packed value.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    private init(_ index: UInt32, _ channels: UInt32) { rawValue = index << 16 | channels }

    /// The number of channels the tag implies (its low 16 bits).
    public var channelCount: UInt32 { rawValue & 0xFFFF }

    /// Layout given by per-channel descriptions.
    public static let useChannelDescriptions = ChannelLayoutTag(rawValue: 0)
    /// Layout given by a channel bitmap.
    public static let useChannelBitmap = ChannelLayoutTag(rawValue: 1 << 16)
    /// One channel.
    public static let mono = ChannelLayoutTag(100, 1)
    /// Left, right.
    public static let stereo = ChannelLayoutTag(101, 2)
    /// Left, right for headphones.
    public static let stereoHeadphones = ChannelLayoutTag(102, 2)
    /// Matrix-encoded stereo.
    public static let matrixStereo = ChannelLayoutTag(103, 2)
    /// Mid, side.
    public static let midSide = ChannelLayoutTag(104, 2)
    /// Coincident mic pair.
    public static let xy = ChannelLayoutTag(105, 2)
    /// Binaural.
    public static let binaural = ChannelLayoutTag(106, 2)
    /// W, X, Y, Z.
    public static let ambisonicBFormat = ChannelLayoutTag(107, 4)
    /// Front left, front right, back left, back right.
    public static let quadraphonic = ChannelLayoutTag(108, 4)
    /// L R Ls Rs C.
    public static let pentagonal = ChannelLayoutTag(109, 5)
    /// L R Ls Rs C Cs.
    public static let hexagonal = ChannelLayoutTag(110, 6)
    /// L R Ls Rs C Cs Lw Rw.
    public static let octagonal = ChannelLayoutTag(111, 8)
    /// L R C.
    public static let mpeg_3_0_A = ChannelLayoutTag(113, 3)
    /// C L R.
    public static let mpeg_3_0_B = ChannelLayoutTag(114, 3)
    /// L R C Cs.
    public static let mpeg_4_0_A = ChannelLayoutTag(115, 4)
    /// C L R Cs.
    public static let mpeg_4_0_B = ChannelLayoutTag(116, 4)
    /// L R C Ls Rs.
    public static let mpeg_5_0_A = ChannelLayoutTag(117, 5)
    /// L R Ls Rs C.
    public static let mpeg_5_0_B = ChannelLayoutTag(118, 5)
    /// L C R Ls Rs.
    public static let mpeg_5_0_C = ChannelLayoutTag(119, 5)
    /// C L R Ls Rs.
    public static let mpeg_5_0_D = ChannelLayoutTag(120, 5)
    /// L R C LFE Ls Rs (WAV/SMPTE order).
    public static let mpeg_5_1_A = ChannelLayoutTag(121, 6)
    /// L R Ls Rs C LFE.
    public static let mpeg_5_1_B = ChannelLayoutTag(122, 6)
    /// L C R Ls Rs LFE (AIFF, Vorbis order).
    public static let mpeg_5_1_C = ChannelLayoutTag(123, 6)
    /// C L R Ls Rs LFE (AAC order).
    public static let mpeg_5_1_D = ChannelLayoutTag(124, 6)
    /// L R C LFE Ls Rs Cs.
    public static let mpeg_6_1_A = ChannelLayoutTag(125, 7)
    /// L R C LFE Ls Rs Lc Rc.
    public static let mpeg_7_1_A = ChannelLayoutTag(126, 8)
    /// C Lc Rc L R Ls Rs LFE.
    public static let mpeg_7_1_B = ChannelLayoutTag(127, 8)
    /// L R C LFE Ls Rs Rls Rrs.
    public static let mpeg_7_1_C = ChannelLayoutTag(128, 8)
    /// L R LFE (ITU 2.1 as Apple names it).
    public static let itu_2_1 = ChannelLayoutTag(131, 3)
    /// L R Ls Rs.
    public static let itu_2_2 = ChannelLayoutTag(132, 4)
    /// C L R Ls Rs Cs (AAC 6.0).
    public static let aac_6_0 = ChannelLayoutTag(141, 6)
    /// C L R Ls Rs Cs LFE (AAC 6.1).
    public static let aac_6_1 = ChannelLayoutTag(142, 7)
    /// C L R Ls Rs Rls Rrs (AAC 7.0).
    public static let aac_7_0 = ChannelLayoutTag(143, 7)
    /// Channels in order with no further meaning; the low bits give the count.
    public static func discreteInOrder(_ channels: UInt32) -> ChannelLayoutTag { ChannelLayoutTag(147, channels) }
    /// Unknown layout; the low bits give the count.
    public static func unknown(_ channels: UInt32) -> ChannelLayoutTag { ChannelLayoutTag(rawValue: 0xFFFF_0000 | channels) }

    /// The layout an ordinary file with this many channels and no layout information implies
    /// (mono, stereo, else WAV/SMPTE order up to 8 channels, else discrete).
    public static func `default`(channels: UInt32) -> ChannelLayoutTag {
        switch channels {
        case 1: .mono
        case 2: .stereo
        case 3: .mpeg_3_0_A
        case 4: .quadraphonic
        case 5: .mpeg_5_0_A
        case 6: .mpeg_5_1_A
        case 7: .mpeg_6_1_A
        case 8: .mpeg_7_1_C
        default: .discreteInOrder(channels)
        }
    }

    /// The channel labels of the layout in order, where the tag defines them.
    public var labels: [ChannelLabel]? {
        typealias L = ChannelLabel
        switch self {
        case .mono: return [.mono]
        case .stereo, .stereoHeadphones: return [.left, .right]
        case .matrixStereo: return [.leftTotal, .rightTotal]
        case .midSide: return [.mid, .side]
        case .quadraphonic: return [.left, .right, .leftSurround, .rightSurround]
        case .mpeg_3_0_A: return [.left, .right, .center]
        case .mpeg_3_0_B: return [.center, .left, .right]
        case .mpeg_4_0_A: return [.left, .right, .center, .centerSurround]
        case .mpeg_4_0_B: return [.center, .left, .right, .centerSurround]
        case .mpeg_5_0_A: return [.left, .right, .center, .leftSurround, .rightSurround]
        case .mpeg_5_0_B: return [.left, .right, .leftSurround, .rightSurround, .center]
        case .mpeg_5_0_C: return [.left, .center, .right, .leftSurround, .rightSurround]
        case .mpeg_5_0_D: return [.center, .left, .right, .leftSurround, .rightSurround]
        case .mpeg_5_1_A: return [.left, .right, .center, .lfeScreen, .leftSurround, .rightSurround]
        case .mpeg_5_1_B: return [.left, .right, .leftSurround, .rightSurround, .center, .lfeScreen]
        case .mpeg_5_1_C: return [.left, .center, .right, .leftSurround, .rightSurround, .lfeScreen]
        case .mpeg_5_1_D: return [.center, .left, .right, .leftSurround, .rightSurround, .lfeScreen]
        case .mpeg_6_1_A: return [.left, .right, .center, .lfeScreen, .leftSurround, .rightSurround, .centerSurround]
        case .mpeg_7_1_A: return [.left, .right, .center, .lfeScreen, .leftSurround, .rightSurround, .leftCenter, .rightCenter]
        case .mpeg_7_1_C: return [.left, .right, .center, .lfeScreen, .leftSurround, .rightSurround, .rearSurroundLeft, .rearSurroundRight]
        case .itu_2_1: return [.left, .right, .lfeScreen]
        case .itu_2_2: return [.left, .right, .leftSurround, .rightSurround]
        case .aac_6_0: return [.center, .left, .right, .leftSurround, .rightSurround, .centerSurround]
        case .aac_6_1: return [.center, .left, .right, .leftSurround, .rightSurround, .centerSurround, .lfeScreen]
        case .aac_7_0: return [.center, .left, .right, .leftSurround, .rightSurround, .rearSurroundLeft, .rearSurroundRight]
        default: return nil
        }
    }

    /// A name in the style of macOS afinfo, e.g. `Stereo`, `5.1 (L R C LFE Ls Rs)`.
    public var description: String {
        switch self {
        case .mono: return "Mono"
        case .stereo: return "Stereo (L R)"
        case .stereoHeadphones: return "Stereo Headphones (L R)"
        case .useChannelDescriptions: return "Use Channel Descriptions"
        case .useChannelBitmap: return "Use Channel Bitmap"
        default:
            if rawValue >> 16 == 147 { return "\(channelCount) channels, discrete in order" }
            if rawValue >> 16 == 0xFFFF { return "\(channelCount) channels, unknown layout" }
            if let labels {
                let names = labels.map(\.abbreviation).joined(separator: " ")
                let lfe = labels.contains(.lfeScreen) ? 1 : 0
                return "\(labels.count - lfe).\(lfe) (\(names))"
            }
            return "layout tag 0x\(String(rawValue, radix: 16))"
        }
    }
}

/// The role of one channel (Apple's `AudioChannelLabel`, as a Swift type of ours).
public struct ChannelLabel: RawRepresentable, Hashable, Sendable {
    /// The packed label value.
    public var rawValue: UInt32
    /// Creates a label from its value.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Unknown role.
    public static let unknown = ChannelLabel(rawValue: 0xFFFF_FFFF)
    /// Unused channel.
    public static let unused = ChannelLabel(rawValue: 0)
    /// Front left.
    public static let left = ChannelLabel(rawValue: 1)
    /// Front right.
    public static let right = ChannelLabel(rawValue: 2)
    /// Front center.
    public static let center = ChannelLabel(rawValue: 3)
    /// Low-frequency effects.
    public static let lfeScreen = ChannelLabel(rawValue: 4)
    /// Left surround (WAV "back left").
    public static let leftSurround = ChannelLabel(rawValue: 5)
    /// Right surround (WAV "back right").
    public static let rightSurround = ChannelLabel(rawValue: 6)
    /// Left of center.
    public static let leftCenter = ChannelLabel(rawValue: 7)
    /// Right of center.
    public static let rightCenter = ChannelLabel(rawValue: 8)
    /// Center surround (WAV "back center").
    public static let centerSurround = ChannelLabel(rawValue: 9)
    /// Left surround direct (WAV "side left").
    public static let leftSurroundDirect = ChannelLabel(rawValue: 10)
    /// Right surround direct (WAV "side right").
    public static let rightSurroundDirect = ChannelLabel(rawValue: 11)
    /// Top center.
    public static let topCenterSurround = ChannelLabel(rawValue: 12)
    /// Top front left.
    public static let verticalHeightLeft = ChannelLabel(rawValue: 13)
    /// Top front center.
    public static let verticalHeightCenter = ChannelLabel(rawValue: 14)
    /// Top front right.
    public static let verticalHeightRight = ChannelLabel(rawValue: 15)
    /// Top back left.
    public static let topBackLeft = ChannelLabel(rawValue: 16)
    /// Top back center.
    public static let topBackCenter = ChannelLabel(rawValue: 17)
    /// Top back right.
    public static let topBackRight = ChannelLabel(rawValue: 18)
    /// Rear surround left.
    public static let rearSurroundLeft = ChannelLabel(rawValue: 33)
    /// Rear surround right.
    public static let rearSurroundRight = ChannelLabel(rawValue: 34)
    /// Left total (matrix encoded).
    public static let leftTotal = ChannelLabel(rawValue: 38)
    /// Right total (matrix encoded).
    public static let rightTotal = ChannelLabel(rawValue: 39)
    /// The only channel of a mono stream.
    public static let mono = ChannelLabel(rawValue: 42)
    /// Mid of a mid/side pair.
    public static let mid = ChannelLabel(rawValue: 204)
    /// Side of a mid/side pair.
    public static let side = ChannelLabel(rawValue: 205)

    /// The labels of the bits of a WAVE channel mask / Core Audio channel bitmap, in bit order.
    public static let bitmapOrder: [ChannelLabel] = [
        .left, .right, .center, .lfeScreen, .leftSurround, .rightSurround, .leftCenter, .rightCenter,
        .centerSurround, .leftSurroundDirect, .rightSurroundDirect, .topCenterSurround,
        .verticalHeightLeft, .verticalHeightCenter, .verticalHeightRight, .topBackLeft,
        .topBackCenter, .topBackRight,
    ]

    /// Short name as afinfo prints it (`L`, `R`, `C`, `LFE`, `Ls`, ...).
    public var abbreviation: String {
        switch self {
        case .left: "L"
        case .right: "R"
        case .center: "C"
        case .lfeScreen: "LFE"
        case .leftSurround: "Ls"
        case .rightSurround: "Rs"
        case .leftCenter: "Lc"
        case .rightCenter: "Rc"
        case .centerSurround: "Cs"
        case .leftSurroundDirect: "Lsd"
        case .rightSurroundDirect: "Rsd"
        case .topCenterSurround: "Ts"
        case .verticalHeightLeft: "Vhl"
        case .verticalHeightCenter: "Vhc"
        case .verticalHeightRight: "Vhr"
        case .topBackLeft: "Ltr"
        case .topBackCenter: "Ctr"
        case .topBackRight: "Rtr"
        case .rearSurroundLeft: "Rls"
        case .rearSurroundRight: "Rrs"
        case .leftTotal: "Lt"
        case .rightTotal: "Rt"
        case .mono: "M"
        case .mid: "Mid"
        case .side: "Side"
        case .unused: "-"
        default: "?"
        }
    }
}

// `AudioChannelBitmap` (the channel bitmap of a layout, the same bits as a WAVE `dwChannelMask`)
// is Apple's C option set, declared in COATCoreAudioTypes with Apple's members (`bit_Left`, ...).
extension AudioChannelBitmap: @retroactive Hashable {
    /// The labels of the set bits, in bit order.
    public var labels: [ChannelLabel] {
        ChannelLabel.bitmapOrder.enumerated().compactMap { i, label in
            rawValue & (1 << UInt32(i)) != 0 ? label : nil
        }
    }
}

/// A channel layout (Apple's `AudioChannelLayout`, as a Swift type of ours): a tag, or a bitmap, or one description per
/// channel.
public struct ChannelLayout: Hashable, Sendable, CustomStringConvertible {
    /// The layout tag; ``ChannelLayoutTag/useChannelBitmap`` or
    /// ``ChannelLayoutTag/useChannelDescriptions`` defer to the other fields.
    public var tag: ChannelLayoutTag
    /// The bitmap, meaningful when ``tag`` is `useChannelBitmap`.
    public var bitmap: AudioChannelBitmap
    /// Per-channel labels, meaningful when ``tag`` is `useChannelDescriptions`.
    public var channelLabels: [ChannelLabel]

    /// Creates a layout.
    public init(tag: ChannelLayoutTag, bitmap: AudioChannelBitmap = [], channelLabels: [ChannelLabel] = []) {
        self.tag = tag
        self.bitmap = bitmap
        self.channelLabels = channelLabels
    }

    /// The labels in channel order, whichever way the layout is given.
    public var labels: [ChannelLabel]? {
        switch tag {
        case .useChannelBitmap: bitmap.labels
        case .useChannelDescriptions: channelLabels
        default: tag.labels
        }
    }

    /// Number of channels the layout describes.
    public var channelCount: UInt32 {
        switch tag {
        case .useChannelBitmap: UInt32(bitmap.rawValue.nonzeroBitCount)
        case .useChannelDescriptions: UInt32(channelLabels.count)
        default: tag.channelCount
        }
    }

    /// A name in the style of macOS afinfo.
    public var description: String {
        switch tag {
        case .useChannelBitmap, .useChannelDescriptions:
            let l = labels ?? []
            if l == [.mono] || l == [.center] { return "Mono" }
            if l == [.left, .right] { return "Stereo (L R)" }
            return "\(l.count) channels (\(l.map(\.abbreviation).joined(separator: " ")))"
        default:
            return tag.description
        }
    }
}

extension ChannelLayout {
    /// The labels of the channels as they come out of decoding `format`: the layout's own order
    /// for linear PCM (and other sample formats stored as they play), FFmpeg's native order (the
    /// WAVE channel-mask bit order) for codecs, whose decoders (AAC, Opus, Vorbis, FLAC, ALAC,
    /// AC-3) reorder to it. Nil when the layout gives no label for a channel, names one twice, or
    /// does not have `format`'s channel count.
    public func decodedLabels(for format: AudioStreamBasicDescription) -> [ChannelLabel]? {
        guard let labels, labels.count == Int(format.channelsPerFrame), labels.count > 0,
              Set(labels).count == labels.count, !labels.contains(.unknown), !labels.contains(.unused) else { return nil }
        let stored: Set<AudioFormatCode> = [.linearPCM, .ulaw, .alaw]
        if stored.contains(format.formatID) { return labels }
        func rank(_ l: ChannelLabel) -> Int {
            switch l {
            case .rearSurroundLeft: return 4
            case .rearSurroundRight: return 5
            case .mono: return 2
            default: return ChannelLabel.bitmapOrder.firstIndex(of: l) ?? 100 + Int(l.rawValue & 0xFFFF)
            }
        }
        return labels.sorted { rank($0) < rank($1) }
    }
}
