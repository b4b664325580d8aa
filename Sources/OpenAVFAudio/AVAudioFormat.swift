// AVAudioFormat and AVAudioChannelLayout: Apple's wrappers of AudioStreamBasicDescription and
// AudioChannelLayout, with the common formats and settings dictionaries.
import Foundation
import OpenAudioToolbox
#if canImport(Glibc)
import Glibc
#endif

/// A channel layout (Apple's `AVAudioChannelLayout`): an `AudioChannelLayout` held by an object.
open class AVAudioChannelLayout: NSObject, @unchecked Sendable {
    private let storage: UnsafeMutablePointer<AudioChannelLayout>
    private let channels: AVAudioChannelCount

    /// A layout of a tag (`kAudioChannelLayoutTag_Stereo`, `_MPEG_5_1_A`, ...); nil for
    /// `kAudioChannelLayoutTag_UseChannelDescriptions` and `_UseChannelBitmap`, which need the
    /// whole structure (``init(layout:)``).
    public init?(layoutTag: AudioChannelLayoutTag) {
        if layoutTag == kAudioChannelLayoutTag_UseChannelDescriptions || layoutTag == kAudioChannelLayoutTag_UseChannelBitmap {
            return nil
        }
        storage = UnsafeMutablePointer<AudioChannelLayout>.allocate(capacity: 1)
        storage.initialize(to: AudioChannelLayout())
        storage.pointee.mChannelLayoutTag = layoutTag
        channels = AVAudioChannelCount(layoutTag & 0xFFFF)
        super.init()
    }

    /// A copy of an `AudioChannelLayout` (with its channel descriptions, when the tag says they
    /// are used).
    public init(layout: UnsafePointer<AudioChannelLayout>) {
        let count = Int(layout.pointee.mNumberChannelDescriptions)
        let bytes = MemoryLayout<AudioChannelLayout>.size - MemoryLayout<AudioChannelDescription>.size
            + max(1, count) * MemoryLayout<AudioChannelDescription>.stride
        let raw = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: MemoryLayout<AudioChannelLayout>.alignment)
        raw.initializeMemory(as: UInt8.self, repeating: 0, count: bytes)
        raw.copyMemory(from: layout, byteCount: min(bytes, MemoryLayout<AudioChannelLayout>.size - MemoryLayout<AudioChannelDescription>.size
                                                      + count * MemoryLayout<AudioChannelDescription>.stride))
        storage = raw.bindMemory(to: AudioChannelLayout.self, capacity: 1)
        let tag = layout.pointee.mChannelLayoutTag
        if tag == kAudioChannelLayoutTag_UseChannelDescriptions {
            channels = AVAudioChannelCount(count)
        } else if tag == kAudioChannelLayoutTag_UseChannelBitmap {
            channels = AVAudioChannelCount(layout.pointee.mChannelBitmap.rawValue.nonzeroBitCount)
        } else {
            channels = AVAudioChannelCount(tag & 0xFFFF)
        }
        super.init()
    }

    deinit { UnsafeMutableRawPointer(storage).deallocate() }

    /// The layout's tag.
    public var layoutTag: AudioChannelLayoutTag { storage.pointee.mChannelLayoutTag }
    /// The whole `AudioChannelLayout`.
    public var layout: UnsafePointer<AudioChannelLayout> { UnsafePointer(storage) }
    /// The number of channels the layout describes.
    public var channelCount: AVAudioChannelCount { channels }

    /// Equal when the tags (and, for description or bitmap layouts, those) are equal.
    open override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? AVAudioChannelLayout else { return false }
        guard layoutTag == other.layoutTag, channelCount == other.channelCount else { return false }
        if layoutTag == kAudioChannelLayoutTag_UseChannelBitmap {
            return storage.pointee.mChannelBitmap == other.storage.pointee.mChannelBitmap
        }
        return true
    }

    open override var hash: Int { Int(layoutTag) }
}

/// An audio format (Apple's `AVAudioFormat`): an `AudioStreamBasicDescription` with an optional
/// channel layout and, for compressed formats, a magic cookie. Immutable.
open class AVAudioFormat: NSObject, @unchecked Sendable {
    private let asbd: UnsafeMutablePointer<AudioStreamBasicDescription>
    /// The channel layout (always present for more than two channels created with one).
    public let channelLayout: AVAudioChannelLayout?
    /// The codec's magic cookie (AAC's AudioSpecificConfig, ALAC's config...), when there is one.
    open var magicCookie: Data?

    /// NSObject's plain initialiser, as Apple's class has it: a format whose fields are all zero
    /// (sample rate 0, no channels, ``AVAudioCommonFormat/otherFormat``). Nothing plays in it;
    /// code that makes one before assigning a real format gets an object, not a trap.
    public override init() {
        asbd = .allocate(capacity: 1)
        asbd.initialize(to: AudioStreamBasicDescription())
        channelLayout = nil
        super.init()
    }

    /// The format of an `AudioStreamBasicDescription`. (Apple's header says more than two
    /// channels without a layout fails; Apple's implementation and code in the field create such
    /// formats, so this does too and leaves ``channelLayout`` nil.)
    public convenience init?(streamDescription asbd: UnsafePointer<AudioStreamBasicDescription>) {
        self.init(streamDescription: asbd, channelLayout: nil)
    }

    /// The format of an `AudioStreamBasicDescription` and a layout; the layout's channel count
    /// must equal the description's.
    public init?(streamDescription asbd: UnsafePointer<AudioStreamBasicDescription>, channelLayout layout: AVAudioChannelLayout?) {
        let d = asbd.pointee
        guard d.mSampleRate >= 0, d.mSampleRate.isFinite, d.mChannelsPerFrame > 0 else { return nil }
        if let layout, layout.channelCount != d.mChannelsPerFrame { return nil }
        self.asbd = .allocate(capacity: 1)
        self.asbd.initialize(to: d)
        channelLayout = layout ?? Self.defaultLayout(channels: d.mChannelsPerFrame)
        super.init()
    }

    /// Deinterleaved 32-bit float at `sampleRate` with `channels` channels.
    public convenience init?(standardFormatWithSampleRate sampleRate: Double, channels: AVAudioChannelCount) {
        self.init(commonFormat: .pcmFormatFloat32, sampleRate: sampleRate, channels: channels, interleaved: false)
    }

    /// Deinterleaved 32-bit float at `sampleRate` with `layout`'s channels.
    public convenience init(standardFormatWithSampleRate sampleRate: Double, channelLayout layout: AVAudioChannelLayout) {
        self.init(commonFormat: .pcmFormatFloat32, sampleRate: sampleRate, interleaved: false, channelLayout: layout)
    }

    /// A PCM format of one of the common sample types; nil for ``AVAudioCommonFormat/otherFormat``
    /// or no channels.
    public convenience init?(commonFormat format: AVAudioCommonFormat, sampleRate: Double, channels: AVAudioChannelCount, interleaved: Bool) {
        guard let d = Self.pcmDescription(format, sampleRate: sampleRate, channels: channels, interleaved: interleaved) else { return nil }
        var copy = d
        self.init(streamDescription: &copy, channelLayout: nil)
    }

    /// A PCM format of one of the common sample types with `layout`'s channels.
    public convenience init(commonFormat format: AVAudioCommonFormat, sampleRate: Double, interleaved: Bool, channelLayout layout: AVAudioChannelLayout) {
        var d = Self.pcmDescription(format == .otherFormat ? .pcmFormatFloat32 : format, sampleRate: sampleRate,
                                    channels: max(1, layout.channelCount), interleaved: interleaved)!
        self.init(streamDescription: &d, channelLayout: layout.channelCount > 0 ? layout : nil)!
    }

    /// A format from a settings dictionary (`AVFormatIDKey`, `AVSampleRateKey`,
    /// `AVNumberOfChannelsKey`, the `AVLinearPCM...` keys, `AVChannelLayoutKey`); nil when the
    /// keys do not describe a format.
    public convenience init?(settings: [String: Any]) {
        guard var d = Self.description(settings: settings) else { return nil }
        var layout: AVAudioChannelLayout? = nil
        if let data = settings[AVChannelLayoutKey] as? Data, data.count >= MemoryLayout<AudioChannelLayout>.size - MemoryLayout<AudioChannelDescription>.size {
            layout = data.withUnsafeBytes { raw in
                let copy = UnsafeMutableRawPointer.allocate(byteCount: max(raw.count, MemoryLayout<AudioChannelLayout>.size), alignment: 8)
                defer { copy.deallocate() }
                copy.initializeMemory(as: UInt8.self, repeating: 0, count: max(raw.count, MemoryLayout<AudioChannelLayout>.size))
                copy.copyMemory(from: raw.baseAddress!, byteCount: raw.count)
                return AVAudioChannelLayout(layout: copy.assumingMemoryBound(to: AudioChannelLayout.self))
            }
            if layout?.channelCount != d.mChannelsPerFrame { layout = nil }
        }
        self.init(streamDescription: &d, channelLayout: layout)
    }

    deinit { asbd.deallocate() }

    /// The `AudioStreamBasicDescription`.
    public var streamDescription: UnsafePointer<AudioStreamBasicDescription> { UnsafePointer(asbd) }
    /// Frames per second.
    public var sampleRate: Double { asbd.pointee.mSampleRate }
    /// Channels.
    public var channelCount: AVAudioChannelCount { asbd.pointee.mChannelsPerFrame }
    /// True when the channels are interleaved in one buffer (always for compressed formats and
    /// for one channel).
    public var isInterleaved: Bool { asbd.pointee.mFormatFlags & kAudioFormatFlagIsNonInterleaved == 0 }
    /// The common format of this one, or ``AVAudioCommonFormat/otherFormat``.
    public var commonFormat: AVAudioCommonFormat { Self.commonFormat(of: asbd.pointee) }
    /// True for deinterleaved native 32-bit float (the format nodes process in).
    public var isStandard: Bool { commonFormat == .pcmFormatFloat32 && !isInterleaved }

    /// The format as a settings dictionary (the keys ``init(settings:)`` reads).
    public var settings: [String: Any] {
        let d = asbd.pointee
        var s: [String: Any] = [AVFormatIDKey: Int(d.mFormatID), AVSampleRateKey: d.mSampleRate, AVNumberOfChannelsKey: Int(d.mChannelsPerFrame)]
        if d.mFormatID == kAudioFormatLinearPCM {
            s[AVLinearPCMBitDepthKey] = Int(d.mBitsPerChannel)
            s[AVLinearPCMIsFloatKey] = d.mFormatFlags & kAudioFormatFlagIsFloat != 0
            s[AVLinearPCMIsBigEndianKey] = d.mFormatFlags & kAudioFormatFlagIsBigEndian != 0
            s[AVLinearPCMIsNonInterleaved] = d.mFormatFlags & kAudioFormatFlagIsNonInterleaved != 0
        }
        if let channelLayout, channelCount > 2 {
            let count = Int(channelLayout.layout.pointee.mNumberChannelDescriptions)
            let bytes = MemoryLayout<AudioChannelLayout>.size - MemoryLayout<AudioChannelDescription>.size
                + max(1, count) * MemoryLayout<AudioChannelDescription>.stride
            s[AVChannelLayoutKey] = Data(bytes: channelLayout.layout, count: bytes)
        }
        return s
    }

    /// Equal formats: the same description fields and layout.
    open override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? AVAudioFormat else { return false }
        let a = asbd.pointee, b = other.asbd.pointee
        guard a.mSampleRate == b.mSampleRate, a.mFormatID == b.mFormatID, a.mFormatFlags == b.mFormatFlags,
              a.mBytesPerPacket == b.mBytesPerPacket, a.mFramesPerPacket == b.mFramesPerPacket,
              a.mBytesPerFrame == b.mBytesPerFrame, a.mChannelsPerFrame == b.mChannelsPerFrame,
              a.mBitsPerChannel == b.mBitsPerChannel else { return false }
        switch (channelLayout, other.channelLayout) {
        case (nil, nil): return true
        case let (x?, y?): return x.isEqual(y)
        default: return channelCount <= 2
        }
    }

    open override var hash: Int { Int(asbd.pointee.mSampleRate) ^ Int(asbd.pointee.mChannelsPerFrame) ^ Int(asbd.pointee.mFormatID) }

    open override var description: String {
        let d = asbd.pointee
        var name = ""
        switch commonFormat {
        case .pcmFormatFloat32: name = "Float32"
        case .pcmFormatFloat64: name = "Float64"
        case .pcmFormatInt16: name = "Int16"
        case .pcmFormatInt32: name = "Int32"
        case .otherFormat:
            name = String(bytes: withUnsafeBytes(of: d.mFormatID.bigEndian) { Array($0) }, encoding: .ascii) ?? "\(d.mFormatID)"
        }
        return "<AVAudioFormat: \(d.mChannelsPerFrame) ch, \(Int(d.mSampleRate)) Hz, \(name)\(d.mFormatID == kAudioFormatLinearPCM ? (isInterleaved ? ", interleaved" : ", deinterleaved") : "")>"
    }

    // MARK: Helpers

    static func defaultLayout(channels: UInt32) -> AVAudioChannelLayout? {
        switch channels {
        case 1: AVAudioChannelLayout(layoutTag: kAudioChannelLayoutTag_Mono)
        case 2: AVAudioChannelLayout(layoutTag: kAudioChannelLayoutTag_Stereo)
        default: nil
        }
    }

    static func pcmDescription(_ format: AVAudioCommonFormat, sampleRate: Double, channels: AVAudioChannelCount, interleaved: Bool) -> AudioStreamBasicDescription? {
        guard channels > 0, sampleRate >= 0, sampleRate.isFinite else { return nil }
        let bits: UInt32
        var flags: AudioFormatFlags = kAudioFormatFlagIsPacked
        switch format {
        case .otherFormat: return nil
        case .pcmFormatFloat32: bits = 32; flags |= kAudioFormatFlagIsFloat
        case .pcmFormatFloat64: bits = 64; flags |= kAudioFormatFlagIsFloat
        case .pcmFormatInt16: bits = 16; flags |= kAudioFormatFlagIsSignedInteger
        case .pcmFormatInt32: bits = 32; flags |= kAudioFormatFlagIsSignedInteger
        }
        let deinterleaved = !interleaved && channels > 1
        if deinterleaved { flags |= kAudioFormatFlagIsNonInterleaved }
        let bytesPerFrame = bits / 8 * (deinterleaved ? 1 : channels)
        return AudioStreamBasicDescription(mSampleRate: sampleRate, mFormatID: kAudioFormatLinearPCM, mFormatFlags: flags,
                                           mBytesPerPacket: bytesPerFrame, mFramesPerPacket: 1, mBytesPerFrame: bytesPerFrame,
                                           mChannelsPerFrame: channels, mBitsPerChannel: bits, mReserved: 0)
    }

    static func commonFormat(of d: AudioStreamBasicDescription) -> AVAudioCommonFormat {
        guard d.mFormatID == kAudioFormatLinearPCM, d.mFormatFlags & kAudioFormatFlagIsBigEndian == 0,
              d.mFormatFlags & kAudioFormatFlagIsPacked != 0 || d.mBitsPerChannel % 8 == 0 else { return .otherFormat }
        let channelsPerBuffer = d.mFormatFlags & kAudioFormatFlagIsNonInterleaved != 0 ? 1 : d.mChannelsPerFrame
        guard d.mBytesPerFrame == d.mBitsPerChannel / 8 * channelsPerBuffer else { return .otherFormat }
        let float = d.mFormatFlags & kAudioFormatFlagIsFloat != 0
        switch (float, d.mBitsPerChannel) {
        case (true, 32): return .pcmFormatFloat32
        case (true, 64): return .pcmFormatFloat64
        case (false, 16) where d.mFormatFlags & kAudioFormatFlagIsSignedInteger != 0: return .pcmFormatInt16
        case (false, 32) where d.mFormatFlags & kAudioFormatFlagIsSignedInteger != 0: return .pcmFormatInt32
        default: return .otherFormat
        }
    }

    /// The description a settings dictionary stands for: PCM filled in from the `AVLinearPCM`
    /// keys; compressed formats with the codec's packet shape (`AudioFormatGetProperty`'s
    /// FormatInfo).
    static func description(settings: [String: Any]) -> AudioStreamBasicDescription? {
        guard let id = settingNumber(settings[AVFormatIDKey]).map({ AudioFormatID(UInt32(truncatingIfNeeded: Int64($0))) }),
              let rate = settingNumber(settings[AVSampleRateKey]), rate > 0, rate.isFinite,
              let channels = settingNumber(settings[AVNumberOfChannelsKey]), channels >= 1, channels <= 64 else { return nil }
        if id == kAudioFormatLinearPCM {
            let bits = UInt32(settingNumber(settings[AVLinearPCMBitDepthKey]) ?? 16)
            let float = (settingNumber(settings[AVLinearPCMIsFloatKey]) ?? 0) != 0
            let big = (settingNumber(settings[AVLinearPCMIsBigEndianKey]) ?? 0) != 0
            let nonInterleaved = (settingNumber(settings[AVLinearPCMIsNonInterleaved]) ?? 0) != 0 && channels > 1
            guard [8, 16, 24, 32, 64].contains(bits), !float || bits == 32 || bits == 64 else { return nil }
            var flags: AudioFormatFlags = kAudioFormatFlagIsPacked
            flags |= float ? kAudioFormatFlagIsFloat : (bits > 8 ? kAudioFormatFlagIsSignedInteger : 0)
            if big { flags |= kAudioFormatFlagIsBigEndian }
            if nonInterleaved { flags |= kAudioFormatFlagIsNonInterleaved }
            let bytesPerFrame = bits / 8 * (nonInterleaved ? 1 : UInt32(channels))
            return AudioStreamBasicDescription(mSampleRate: rate, mFormatID: id, mFormatFlags: flags, mBytesPerPacket: bytesPerFrame,
                                               mFramesPerPacket: 1, mBytesPerFrame: bytesPerFrame, mChannelsPerFrame: UInt32(channels),
                                               mBitsPerChannel: bits, mReserved: 0)
        }
        var d = AudioStreamBasicDescription()
        d.mFormatID = id
        d.mSampleRate = rate
        d.mChannelsPerFrame = UInt32(channels)
        var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
        _ = AudioFormatGetProperty(kAudioFormatProperty_FormatInfo, 0, nil, &size, &d)
        d.mSampleRate = rate
        d.mChannelsPerFrame = UInt32(channels)
        return d
    }
}
