// Audio Toolbox–compatible C-style API: the Core Audio base types as Swift sees Apple's headers.
//
// The Core Audio structs (AudioStreamBasicDescription, AudioStreamPacketDescription,
// AudioTimeStamp, ...) are Apple's C structs, declared in C (COATCoreAudioTypes, re-exported by
// OATCore) with Apple's `m`-prefixed fields, C integer types, layout and memberwise
// initialisers; the Swift API shares them and adds its own names in extensions. Scalar type names that
// the Swift API uses for richer types (AudioFormatID, AudioFormatFlags, AudioChannelLayoutTag,
// AudioChannelLabel) are redeclared here as Apple's `UInt32` typealiases; a file that imports only
// `OpenAudioToolbox` sees these (a module's own declarations shadow those of the modules it
// re-exports). The Swift types stay reachable as `OATCore.AudioFormatCode` etc. See docs/PORTING.md.

import OATCore
import OATFiles
import OATConversion
import OATQueueEngine
#if canImport(Glibc)
import Glibc
#endif

// MARK: - Scalars

/// A result code (Apple's `OSStatus`): 0 is success, anything else an error.
public typealias OSStatus = Int32
/// The success result (Apple's `noErr`).
public let noErr: OSStatus = 0
/// A Core Foundation index (Apple's `CFIndex`).
public typealias CFIndex = Int
/// A time interval in seconds (Apple's `CFTimeInterval`).
public typealias CFTimeInterval = Double

/// A C boolean as Swift imports `Boolean *` out-parameters (Apple's `DarwinBoolean`).
public struct DarwinBoolean: ExpressibleByBooleanLiteral, Hashable, Sendable, CustomStringConvertible {
    private var value: UInt8
    /// The value as a Swift `Bool`.
    public var boolValue: Bool { value != 0 }
    /// Creates a value from a `Bool`.
    public init(_ value: Bool) { self.value = value ? 1 : 0 }
    /// Creates a value from a literal.
    public init(booleanLiteral value: Bool) { self.init(value) }
    /// `true` or `false`.
    public var description: String { boolValue.description }
}

/// An audio data format identifier, a four-character code (Apple's `AudioFormatID`). The Swift
/// API's richer type is `OATCore.AudioFormatCode`.
public typealias AudioFormatID = UInt32
/// Format-specific flags (Apple's `AudioFormatFlags`). The Swift API's option set is
/// `OATCore.AudioFormatFlagSet`.
public typealias AudioFormatFlags = UInt32
/// A channel layout tag (Apple's `AudioChannelLayoutTag`).
public typealias AudioChannelLayoutTag = UInt32
/// A channel label (Apple's `AudioChannelLabel`).
public typealias AudioChannelLabel = UInt32
/// A sample time (Apple's `AudioSampleType` family is deprecated; this is `Float64`).
public typealias AudioSampleTime = Float64

/// Packs a four-character code.
@inline(__always)
func fourCC(_ s: StaticString) -> UInt32 {
    precondition(s.utf8CodeUnitCount == 4)
    let p = s.utf8Start
    return UInt32(p[0]) << 24 | UInt32(p[1]) << 16 | UInt32(p[2]) << 8 | UInt32(p[3])
}

// MARK: - General error codes

/// A parameter is invalid (Apple's `kAudio_ParamError`).
public let kAudio_ParamError: OSStatus = -50
/// The function is not implemented (Apple's `kAudio_UnimplementedError`).
public let kAudio_UnimplementedError: OSStatus = -4
/// The file was not found (Apple's `kAudio_FileNotFoundError`).
public let kAudio_FileNotFoundError: OSStatus = -43
/// Permission denied (Apple's `kAudio_FilePermissionError`).
public let kAudio_FilePermissionError: OSStatus = -54
/// Too many files open (Apple's `kAudio_TooManyFilesOpenError`).
public let kAudio_TooManyFilesOpenError: OSStatus = -42
/// Out of memory (Apple's `kAudio_MemFullError`).
public let kAudio_MemFullError: OSStatus = -108
/// A four-character `'what'` error (Apple's `kAudio_BadFilePathError` is `'!pth'`).
public let kAudio_BadFilePathError: OSStatus = OSStatus(bitPattern: fourCC("!pth"))

// MARK: - Format IDs

/// Linear PCM (`'lpcm'`).
public let kAudioFormatLinearPCM: AudioFormatID = fourCC("lpcm")
/// AC-3 (`'ac-3'`).
public let kAudioFormatAC3: AudioFormatID = fourCC("ac-3")
/// AC-3 in 60958 (`'cac3'`).
public let kAudioFormat60958AC3: AudioFormatID = fourCC("cac3")
/// Apple IMA 4:1 ADPCM (`'ima4'`).
public let kAudioFormatAppleIMA4: AudioFormatID = fourCC("ima4")
/// MPEG-4 AAC (`'aac '`).
public let kAudioFormatMPEG4AAC: AudioFormatID = fourCC("aac ")
/// MPEG-4 CELP (`'celp'`).
public let kAudioFormatMPEG4CELP: AudioFormatID = fourCC("celp")
/// MPEG-4 HVXC (`'hvxc'`).
public let kAudioFormatMPEG4HVXC: AudioFormatID = fourCC("hvxc")
/// MPEG-4 TwinVQ (`'twvq'`).
public let kAudioFormatMPEG4TwinVQ: AudioFormatID = fourCC("twvq")
/// MACE 3:1 (`'MAC3'`).
public let kAudioFormatMACE3: AudioFormatID = fourCC("MAC3")
/// MACE 6:1 (`'MAC6'`).
public let kAudioFormatMACE6: AudioFormatID = fourCC("MAC6")
/// G.711 mu-law (`'ulaw'`).
public let kAudioFormatULaw: AudioFormatID = fourCC("ulaw")
/// G.711 A-law (`'alaw'`).
public let kAudioFormatALaw: AudioFormatID = fourCC("alaw")
/// QDesign (`'QDMC'`).
public let kAudioFormatQDesign: AudioFormatID = fourCC("QDMC")
/// QDesign 2 (`'QDM2'`).
public let kAudioFormatQDesign2: AudioFormatID = fourCC("QDM2")
/// QUALCOMM PureVoice (`'Qclp'`).
public let kAudioFormatQUALCOMM: AudioFormatID = fourCC("Qclp")
/// MPEG Layer I (`'.mp1'`).
public let kAudioFormatMPEGLayer1: AudioFormatID = fourCC(".mp1")
/// MPEG Layer II (`'.mp2'`).
public let kAudioFormatMPEGLayer2: AudioFormatID = fourCC(".mp2")
/// MPEG Layer III (`'.mp3'`).
public let kAudioFormatMPEGLayer3: AudioFormatID = fourCC(".mp3")
/// Time code (`'time'`).
public let kAudioFormatTimeCode: AudioFormatID = fourCC("time")
/// MIDI stream (`'midi'`).
public let kAudioFormatMIDIStream: AudioFormatID = fourCC("midi")
/// Parameter value stream (`'apvs'`).
public let kAudioFormatParameterValueStream: AudioFormatID = fourCC("apvs")
/// Apple Lossless (`'alac'`).
public let kAudioFormatAppleLossless: AudioFormatID = fourCC("alac")
/// HE-AAC (`'aach'`).
public let kAudioFormatMPEG4AAC_HE: AudioFormatID = fourCC("aach")
/// AAC-LD (`'aacl'`).
public let kAudioFormatMPEG4AAC_LD: AudioFormatID = fourCC("aacl")
/// AAC-ELD (`'aace'`).
public let kAudioFormatMPEG4AAC_ELD: AudioFormatID = fourCC("aace")
/// AAC-ELD with SBR (`'aacf'`).
public let kAudioFormatMPEG4AAC_ELD_SBR: AudioFormatID = fourCC("aacf")
/// AAC-ELD v2 (`'aacg'`).
public let kAudioFormatMPEG4AAC_ELD_V2: AudioFormatID = fourCC("aacg")
/// HE-AAC v2 (`'aacp'`).
public let kAudioFormatMPEG4AAC_HE_V2: AudioFormatID = fourCC("aacp")
/// AAC spatial (`'aacs'`).
public let kAudioFormatMPEG4AAC_Spatial: AudioFormatID = fourCC("aacs")
/// USAC (`'usac'`).
public let kAudioFormatMPEGD_USAC: AudioFormatID = fourCC("usac")
/// AMR narrow band (`'samr'`).
public let kAudioFormatAMR: AudioFormatID = fourCC("samr")
/// AMR wide band (`'sawb'`).
public let kAudioFormatAMR_WB: AudioFormatID = fourCC("sawb")
/// Audible (`'AUDB'`).
public let kAudioFormatAudible: AudioFormatID = fourCC("AUDB")
/// iLBC (`'ilbc'`).
public let kAudioFormatiLBC: AudioFormatID = fourCC("ilbc")
/// DVI/Intel IMA ADPCM (`0x6D730011`).
public let kAudioFormatDVIIntelIMA: AudioFormatID = 0x6D73_0011
/// Microsoft GSM 6.10 (`0x6D730031`).
public let kAudioFormatMicrosoftGSM: AudioFormatID = 0x6D73_0031
/// AES3 (`'aes3'`).
public let kAudioFormatAES3: AudioFormatID = fourCC("aes3")
/// Enhanced AC-3 (`'ec-3'`).
public let kAudioFormatEnhancedAC3: AudioFormatID = fourCC("ec-3")
/// FLAC (`'flac'`).
public let kAudioFormatFLAC: AudioFormatID = fourCC("flac")
/// Opus (`'opus'`).
public let kAudioFormatOpus: AudioFormatID = fourCC("opus")
/// APAC (`'apac'`).
public let kAudioFormatAPAC: AudioFormatID = fourCC("apac")

// MARK: - Format flags

/// Float samples.
public let kAudioFormatFlagIsFloat: AudioFormatFlags = 1 << 0
/// Big-endian samples.
public let kAudioFormatFlagIsBigEndian: AudioFormatFlags = 1 << 1
/// Signed integer samples.
public let kAudioFormatFlagIsSignedInteger: AudioFormatFlags = 1 << 2
/// Sample bits fill their bytes.
public let kAudioFormatFlagIsPacked: AudioFormatFlags = 1 << 3
/// Unpacked samples are high-aligned.
public let kAudioFormatFlagIsAlignedHigh: AudioFormatFlags = 1 << 4
/// One buffer per channel.
public let kAudioFormatFlagIsNonInterleaved: AudioFormatFlags = 1 << 5
/// Not mixable.
public let kAudioFormatFlagIsNonMixable: AudioFormatFlags = 1 << 6
/// Explicitly no flags.
public let kAudioFormatFlagsAreAllClear: AudioFormatFlags = 0x8000_0000
/// Native endianness (little-endian on every platform this runs on: no flag).
public let kAudioFormatFlagsNativeEndian: AudioFormatFlags = 0
/// Native float, packed.
public let kAudioFormatFlagsNativeFloatPacked: AudioFormatFlags = kAudioFormatFlagIsFloat | kAudioFormatFlagsNativeEndian | kAudioFormatFlagIsPacked
/// Canonical (deprecated by Apple): native float, packed.
public let kAudioFormatFlagsCanonical: AudioFormatFlags = kAudioFormatFlagsNativeFloatPacked
/// Linear PCM: float samples.
public let kLinearPCMFormatFlagIsFloat: AudioFormatFlags = kAudioFormatFlagIsFloat
/// Linear PCM: big-endian.
public let kLinearPCMFormatFlagIsBigEndian: AudioFormatFlags = kAudioFormatFlagIsBigEndian
/// Linear PCM: signed integers.
public let kLinearPCMFormatFlagIsSignedInteger: AudioFormatFlags = kAudioFormatFlagIsSignedInteger
/// Linear PCM: packed.
public let kLinearPCMFormatFlagIsPacked: AudioFormatFlags = kAudioFormatFlagIsPacked
/// Linear PCM: high-aligned.
public let kLinearPCMFormatFlagIsAlignedHigh: AudioFormatFlags = kAudioFormatFlagIsAlignedHigh
/// Linear PCM: non-interleaved.
public let kLinearPCMFormatFlagIsNonInterleaved: AudioFormatFlags = kAudioFormatFlagIsNonInterleaved
/// Linear PCM: non-mixable.
public let kLinearPCMFormatFlagIsNonMixable: AudioFormatFlags = kAudioFormatFlagIsNonMixable
/// Linear PCM: shift of the fixed-point fraction bits field.
public let kLinearPCMFormatFlagsSampleFractionShift: AudioFormatFlags = 7
/// Linear PCM: mask of the fixed-point fraction bits field.
public let kLinearPCMFormatFlagsSampleFractionMask: AudioFormatFlags = 0x3F << 7
/// Linear PCM: no flags.
public let kLinearPCMFormatFlagsAreAllClear: AudioFormatFlags = kAudioFormatFlagsAreAllClear
/// Apple Lossless: 16-bit source.
public let kAppleLosslessFormatFlag_16BitSourceData: AudioFormatFlags = 1
/// Apple Lossless: 20-bit source.
public let kAppleLosslessFormatFlag_20BitSourceData: AudioFormatFlags = 2
/// Apple Lossless: 24-bit source.
public let kAppleLosslessFormatFlag_24BitSourceData: AudioFormatFlags = 3
/// Apple Lossless: 32-bit source.
public let kAppleLosslessFormatFlag_32BitSourceData: AudioFormatFlags = 4

// MARK: - AudioStreamBasicDescription, AudioStreamPacketDescription, AudioFilePacketTableInfo

// Apple's C structs (COATCoreAudioTypes, re-exported by OATCore), with Apple's fields, layout and
// initialisers (`init()` zeroed, and the memberwise one in Apple's field order).

// MARK: - AudioFormatListItem

// Apple's C struct (COATCoreAudioTypes), with Apple's fields and initialisers.

// MARK: - AudioQueueLevelMeterState

// Apple's C struct (COATCoreAudioTypes), with Apple's fields and initialisers.

// MARK: - AudioTimeStamp

// `SMPTETime`, `AudioTimeStampFlags` and `AudioTimeStamp` are Apple's C structs (COATCoreAudioTypes,
// re-exported by OATCore), with Apple's fields and memberwise initialiser.

/// Sample time is valid (Apple's `kAudioTimeStampSampleTimeValid`).
public let kAudioTimeStampSampleTimeValid = AudioTimeStampFlags.sampleTimeValid
/// Host time is valid (Apple's `kAudioTimeStampHostTimeValid`).
public let kAudioTimeStampHostTimeValid = AudioTimeStampFlags.hostTimeValid
/// Rate scalar is valid (Apple's `kAudioTimeStampRateScalarValid`).
public let kAudioTimeStampRateScalarValid = AudioTimeStampFlags.rateScalarValid
/// Sample and host time are valid (Apple's `kAudioTimeStampSampleHostTimeValid`).
public let kAudioTimeStampSampleHostTimeValid = AudioTimeStampFlags.sampleHostTimeValid

// MARK: - AudioBuffer / AudioBufferList

// `AudioBuffer` and `AudioBufferList` are Apple's C structs (COATCoreAudioTypes, re-exported by
// OATCore): a list of more than one buffer is allocated with `AudioBufferList/allocate(maximumBuffers:)`
// and reached through ``UnsafeMutableAudioBufferListPointer``.
extension AudioBufferList {
    /// Bytes needed for a list of `maximumBuffers` buffers.
    public static func sizeInBytes(maximumBuffers: Int) -> Int {
        MemoryLayout<AudioBufferList>.size - MemoryLayout<AudioBuffer>.size + max(1, maximumBuffers) * MemoryLayout<AudioBuffer>.stride
    }
    /// Allocates a zeroed list with room for `maximumBuffers` buffers and `mNumberBuffers` set
    /// to that count; free it with `free(list.unsafeMutablePointer)`.
    public static func allocate(maximumBuffers: Int) -> UnsafeMutableAudioBufferListPointer {
        let raw = calloc(1, sizeInBytes(maximumBuffers: maximumBuffers))!
        let list = raw.bindMemory(to: AudioBufferList.self, capacity: 1)
        list.pointee.mNumberBuffers = UInt32(maximumBuffers)
        return UnsafeMutableAudioBufferListPointer(list)
    }
}

/// A collection view of an `AudioBufferList`'s buffers (Apple's Swift overlay type).
public struct UnsafeMutableAudioBufferListPointer: MutableCollection, RandomAccessCollection {
    /// The list.
    public var unsafeMutablePointer: UnsafeMutablePointer<AudioBufferList>
    /// The list, read-only.
    public var unsafePointer: UnsafePointer<AudioBufferList> { UnsafePointer(unsafeMutablePointer) }
    /// Wraps a list.
    public init(_ p: UnsafeMutablePointer<AudioBufferList>) { unsafeMutablePointer = p }
    /// Wraps a list, or nil.
    public init?(_ p: UnsafeMutablePointer<AudioBufferList>?) {
        guard let p else { return nil }
        unsafeMutablePointer = p
    }
    /// The number of buffers (`mNumberBuffers`).
    public var count: Int {
        get { Int(unsafeMutablePointer.pointee.mNumberBuffers) }
        nonmutating set { unsafeMutablePointer.pointee.mNumberBuffers = UInt32(newValue) }
    }
    /// 0.
    public var startIndex: Int { 0 }
    /// ``count``.
    public var endIndex: Int { count }
    private var buffers: UnsafeMutablePointer<AudioBuffer> {
        UnsafeMutableRawPointer(unsafeMutablePointer).advanced(by: MemoryLayout<AudioBufferList>.offset(of: \AudioBufferList.mBuffers)!)
            .assumingMemoryBound(to: AudioBuffer.self)
    }
    /// The buffer at `index`.
    public subscript(index: Int) -> AudioBuffer {
        get { buffers[index] }
        nonmutating set { buffers[index] = newValue }
    }
}

// MARK: - Typed views of an AudioBuffer (Apple's CoreAudio Swift overlay)

extension UnsafeMutableBufferPointer {
    /// The buffer's bytes as `Element`s (Apple's `init(_:)` over an `AudioBuffer`): `mData` for
    /// `mDataByteSize / stride` elements; empty when `mData` is nil.
    public init(_ audioBuffer: AudioBuffer) {
        let count = Int(audioBuffer.mDataByteSize) / MemoryLayout<Element>.stride
        guard let data = audioBuffer.mData else { self.init(start: nil, count: 0); return }
        self.init(start: data.assumingMemoryBound(to: Element.self), count: count)
    }
}

extension UnsafeBufferPointer {
    /// The buffer's bytes as `Element`s, read only (Apple's `init(_:)` over an `AudioBuffer`);
    /// binds the memory to `Element`, as Apple's does. Empty when `mData` is nil.
    public init(_ audioBuffer: AudioBuffer) {
        let count = Int(audioBuffer.mDataByteSize) / MemoryLayout<Element>.stride
        guard let data = audioBuffer.mData else { self.init(start: nil, count: 0); return }
        self.init(start: data.bindMemory(to: Element.self, capacity: count), count: count)
    }
}

extension UnsafeMutableRawBufferPointer {
    /// The buffer's `mDataByteSize` bytes at `mData` (Apple's `init(_:)` over an `AudioBuffer`).
    public init(_ audioBuffer: AudioBuffer) {
        self.init(start: audioBuffer.mData, count: audioBuffer.mData == nil ? 0 : Int(audioBuffer.mDataByteSize))
    }
}

extension AudioBuffer {
    /// An `AudioBuffer` over a typed buffer (Apple's `init(_:numberOfChannels:)`): its base address,
    /// its size in bytes, and the channels interleaved in it.
    public init<Element>(_ typedBuffer: UnsafeMutableBufferPointer<Element>, numberOfChannels: Int) {
        self.init(mNumberChannels: UInt32(numberOfChannels),
                  mDataByteSize: UInt32(typedBuffer.count * MemoryLayout<Element>.stride),
                  mData: UnsafeMutableRawPointer(typedBuffer.baseAddress))
    }
}

// MARK: - AudioChannelLayout (C shape)

// `AudioChannelFlags`, `AudioChannelDescription` and `AudioChannelLayout` are Apple's C
// declarations (COATAudioToolboxTypes), with Apple's fields, layout and initialisers: a layout with N
// descriptions takes `MemoryLayout<AudioChannelLayout>.size + (N - 1) * MemoryLayout<AudioChannelDescription>.size`
// bytes and its descriptions are reached from `mChannelDescriptions` (e.g. through
// `UnsafeMutableBufferPointer`, as on Apple). The Swift API's type is `OATCore.ChannelLayout`.

/// A channel layout in Apple's variable-length C shape (Apple's `AudioChannelLayout`, the C
/// struct): this name picks it over the Swift API's `OATCore.ChannelLayout` in code that
/// imports `OpenAudioToolbox`.
public typealias AudioChannelLayout = COATAudioToolboxTypes.AudioChannelLayout

extension AudioChannelLayout {
    /// Bytes from the start of a layout to its first description.
    @usableFromInline
    static var descriptionsOffset: Int { MemoryLayout<AudioChannelLayout>.offset(of: \AudioChannelLayout.mChannelDescriptions)! }

    /// A read-only collection view of a layout's `mNumberChannelDescriptions` descriptions (Apple's
    /// `AudioChannelLayout.UnsafePointer`, CoreAudioTypes Swift overlay).
    public struct UnsafePointer: RandomAccessCollection {
        /// The layout.
        public var unsafePointer: Swift.UnsafePointer<AudioChannelLayout>
        /// Wraps a layout.
        public init(_ unsafePointer: Swift.UnsafePointer<AudioChannelLayout>) { self.unsafePointer = unsafePointer }
        /// Wraps a layout, or nil.
        public init?(_ unsafePointer: Swift.UnsafePointer<AudioChannelLayout>?) {
            guard let unsafePointer else { return nil }
            self.unsafePointer = unsafePointer
        }
        /// The number of descriptions (`mNumberChannelDescriptions`).
        public var count: Int { Int(unsafePointer.pointee.mNumberChannelDescriptions) }
        /// 0.
        public var startIndex: Int { 0 }
        /// ``count``.
        public var endIndex: Int { count }
        /// The description at `index` (the descriptions follow `mChannelDescriptions` in memory).
        public subscript(index: Int) -> AudioChannelDescription {
            UnsafeRawPointer(unsafePointer).load(fromByteOffset: AudioChannelLayout.descriptionsOffset + index * MemoryLayout<AudioChannelDescription>.stride,
                                                 as: AudioChannelDescription.self)
        }
    }

    /// A mutable collection view of a layout's `mNumberChannelDescriptions` descriptions (Apple's
    /// `AudioChannelLayout.UnsafeMutablePointer`, CoreAudioTypes Swift overlay). Setting ``count``
    /// changes `mNumberChannelDescriptions`, not the memory allocated for the layout.
    public struct UnsafeMutablePointer: MutableCollection, RandomAccessCollection {
        /// The layout.
        public var unsafeMutablePointer: Swift.UnsafeMutablePointer<AudioChannelLayout>
        /// The layout, read-only.
        public var unsafePointer: Swift.UnsafePointer<AudioChannelLayout> { Swift.UnsafePointer(unsafeMutablePointer) }
        /// Wraps a layout.
        public init(_ unsafeMutablePointer: Swift.UnsafeMutablePointer<AudioChannelLayout>) { self.unsafeMutablePointer = unsafeMutablePointer }
        /// Wraps a layout, or nil.
        public init?(_ unsafeMutablePointer: Swift.UnsafeMutablePointer<AudioChannelLayout>?) {
            guard let unsafeMutablePointer else { return nil }
            self.unsafeMutablePointer = unsafeMutablePointer
        }
        /// The number of descriptions (`mNumberChannelDescriptions`).
        public var count: Int {
            get { Int(unsafeMutablePointer.pointee.mNumberChannelDescriptions) }
            nonmutating set { unsafeMutablePointer.pointee.mNumberChannelDescriptions = UInt32(newValue) }
        }
        /// 0.
        public var startIndex: Int { 0 }
        /// ``count``.
        public var endIndex: Int { count }
        /// The description at `index` (the descriptions follow `mChannelDescriptions` in memory).
        public subscript(index: Int) -> AudioChannelDescription {
            get {
                UnsafeRawPointer(unsafeMutablePointer).load(fromByteOffset: AudioChannelLayout.descriptionsOffset + index * MemoryLayout<AudioChannelDescription>.stride,
                                                            as: AudioChannelDescription.self)
            }
            nonmutating set {
                UnsafeMutableRawPointer(unsafeMutablePointer).storeBytes(of: newValue,
                                                                         toByteOffset: AudioChannelLayout.descriptionsOffset + index * MemoryLayout<AudioChannelDescription>.stride,
                                                                         as: AudioChannelDescription.self)
            }
        }
    }
}

/// The layout is given by channel descriptions.
public let kAudioChannelLayoutTag_UseChannelDescriptions: AudioChannelLayoutTag = 0
/// The layout is given by the bitmap.
public let kAudioChannelLayoutTag_UseChannelBitmap: AudioChannelLayoutTag = 1 << 16
/// Mono.
public let kAudioChannelLayoutTag_Mono: AudioChannelLayoutTag = (100 << 16) | 1
/// Stereo.
public let kAudioChannelLayoutTag_Stereo: AudioChannelLayoutTag = (101 << 16) | 2
/// Unknown layout with the channel count in the low 16 bits.
public let kAudioChannelLayoutTag_Unknown: AudioChannelLayoutTag = 0xFFFF_0000

/// Serialisation of channel layouts and other C shapes into client memory.
enum CLayout {
    /// Bytes of a C `AudioChannelLayout` with `descriptions` descriptions.
    static func size(descriptions: Int) -> Int {
        MemoryLayout<AudioChannelLayout>.size - MemoryLayout<AudioChannelDescription>.size + descriptions * MemoryLayout<AudioChannelDescription>.stride
    }

    /// Apple's C bytes of a Swift channel layout.
    static func bytes(_ layout: OATCore.ChannelLayout) -> [UInt8] {
        let count = layout.tag == .useChannelDescriptions ? layout.channelLabels.count : 0
        var out = [UInt8](repeating: 0, count: max(size(descriptions: count), MemoryLayout<AudioChannelLayout>.size))
        out.withUnsafeMutableBytes { raw in
            let header = raw.baseAddress!.assumingMemoryBound(to: AudioChannelLayout.self)
            header.pointee = AudioChannelLayout()
            header.pointee.mChannelLayoutTag = layout.tag.rawValue
            header.pointee.mChannelBitmap = layout.bitmap
            header.pointee.mNumberChannelDescriptions = UInt32(count)
            let first = MemoryLayout<AudioChannelLayout>.offset(of: \AudioChannelLayout.mChannelDescriptions)!
            for (i, label) in layout.channelLabels.prefix(count).enumerated() {
                let d = (raw.baseAddress! + first + i * MemoryLayout<AudioChannelDescription>.stride).assumingMemoryBound(to: AudioChannelDescription.self)
                d.pointee = AudioChannelDescription(mChannelLabel: label.rawValue, mChannelFlags: [], mCoordinates: (0, 0, 0))
            }
        }
        return out
    }
}

// MARK: - CFURL stand-in

/// Apple's `CFAllocator` stand-in: allocator arguments are accepted and ignored (pass nil).
public typealias CFAllocator = OpaquePointer
/// The default allocator (nil).
public var kCFAllocatorDefault: CFAllocator? { nil }

/// What a callback whose client data Apple's SDK declares non-optional (`AudioFileStream_PacketsProc`,
/// `AudioUnitPropertyListenerProc`, `AudioQueueProcessingTapCallback`...) receives when the client
/// data given at registration was nil: a valid, never-freed 16-byte block, so the callback gets a
/// pointer it can compare but should not read (on Apple it gets a null pointer typed non-optional).
nonisolated(unsafe) let compatNilClientData: UnsafeMutableRawPointer =
    UnsafeMutableRawPointer.allocate(byteCount: 16, alignment: 16)

// MARK: - More CoreAudioTypes constants, structs and helpers

/// Any sample rate (Apple's `kAudioStreamAnyRate`, 0).
public let kAudioStreamAnyRate: Float64 = 0

// `AudioValueTranslation` is Apple's C struct (COATAudioToolboxTypes): non-optional pointers, so no
// zeroed `init()`, as on Apple.

/// Quadraphonic: L R Ls Rs.
public let kAudioChannelLayoutTag_Quadraphonic: AudioChannelLayoutTag = (108 << 16) | 4
/// MPEG 5.1 A: L R C LFE Ls Rs.
public let kAudioChannelLayoutTag_MPEG_5_1_A: AudioChannelLayoutTag = (121 << 16) | 6
/// MPEG 5.1 D: C L R Ls Rs LFE.
public let kAudioChannelLayoutTag_MPEG_5_1_D: AudioChannelLayoutTag = (124 << 16) | 6
/// MPEG 7.1 C: L R C LFE Ls Rs Rls Rrs.
public let kAudioChannelLayoutTag_MPEG_7_1_C: AudioChannelLayoutTag = (128 << 16) | 8
/// AAC 5.1 (the MPEG 5.1 D order).
public let kAudioChannelLayoutTag_AAC_5_1: AudioChannelLayoutTag = kAudioChannelLayoutTag_MPEG_5_1_D
/// N discrete channels in order (OR in the count).
public let kAudioChannelLayoutTag_DiscreteInOrder: AudioChannelLayoutTag = 147 << 16

/// Unknown channel (Apple's `kAudioChannelLabel_Unknown`, 0xFFFFFFFF).
public let kAudioChannelLabel_Unknown: AudioChannelLabel = 0xFFFF_FFFF
/// Unused channel.
public let kAudioChannelLabel_Unused: AudioChannelLabel = 0
/// Left.
public let kAudioChannelLabel_Left: AudioChannelLabel = 1
/// Right.
public let kAudioChannelLabel_Right: AudioChannelLabel = 2
/// Center.
public let kAudioChannelLabel_Center: AudioChannelLabel = 3
/// Low-frequency effects.
public let kAudioChannelLabel_LFEScreen: AudioChannelLabel = 4
/// Left surround.
public let kAudioChannelLabel_LeftSurround: AudioChannelLabel = 5
/// Right surround.
public let kAudioChannelLabel_RightSurround: AudioChannelLabel = 6
/// Left center.
public let kAudioChannelLabel_LeftCenter: AudioChannelLabel = 7
/// Right center.
public let kAudioChannelLabel_RightCenter: AudioChannelLabel = 8
/// Center surround.
public let kAudioChannelLabel_CenterSurround: AudioChannelLabel = 9
/// Mono.
public let kAudioChannelLabel_Mono: AudioChannelLabel = 42

/// The channel count a layout tag carries in its low 16 bits (Apple's
/// `AudioChannelLayoutTag_GetNumberOfChannels`).
public func AudioChannelLayoutTag_GetNumberOfChannels(_ inLayoutTag: AudioChannelLayoutTag) -> UInt32 { inLayoutTag & 0xFFFF }

/// The format flags of linear PCM (Apple's `CalculateLPCMFlags`): float or signed integer,
/// packed when the valid bits fill the sample, else aligned high; big-endian and non-interleaved
/// as asked.
public func CalculateLPCMFlags(_ inValidBitsPerChannel: UInt32, _ inTotalBitsPerChannel: UInt32, _ inIsFloat: Bool,
                               _ inIsBigEndian: Bool, _ inIsNonInterleaved: Bool) -> AudioFormatFlags {
    (inIsFloat ? kAudioFormatFlagIsFloat : kAudioFormatFlagIsSignedInteger)
        | (inIsBigEndian ? kAudioFormatFlagIsBigEndian : 0)
        | (inValidBitsPerChannel == inTotalBitsPerChannel ? kAudioFormatFlagIsPacked : kAudioFormatFlagIsAlignedHigh)
        | (inIsNonInterleaved ? kAudioFormatFlagIsNonInterleaved : 0)
}

/// Fills `outASBD` with a linear PCM format (Apple's `FillOutASBDForLPCM`; call it as
/// `FillOutASBDForLPCM(&asbd, ...)`).
public func FillOutASBDForLPCM(_ outASBD: inout AudioStreamBasicDescription, _ inSampleRate: Float64, _ inChannelsPerFrame: UInt32,
                               _ inValidBitsPerChannel: UInt32, _ inTotalBitsPerChannel: UInt32, _ inIsFloat: Bool, _ inIsBigEndian: Bool,
                               _ inIsNonInterleaved: Bool = false) {
    let bytes = (inIsNonInterleaved ? 1 : inChannelsPerFrame) * (inTotalBitsPerChannel / 8)
    outASBD.mSampleRate = inSampleRate
    outASBD.mFormatID = kAudioFormatLinearPCM
    outASBD.mFormatFlags = CalculateLPCMFlags(inValidBitsPerChannel, inTotalBitsPerChannel, inIsFloat, inIsBigEndian, inIsNonInterleaved)
    outASBD.mBytesPerPacket = bytes
    outASBD.mFramesPerPacket = 1
    outASBD.mBytesPerFrame = bytes
    outASBD.mChannelsPerFrame = inChannelsPerFrame
    outASBD.mBitsPerChannel = inValidBitsPerChannel
    outASBD.mReserved = 0
}

/// Sets `outATS` to a sample time (Apple's `FillOutAudioTimeStampWithSampleTime`).
public func FillOutAudioTimeStampWithSampleTime(_ outATS: inout AudioTimeStamp, _ inSampleTime: Float64) {
    outATS = AudioTimeStamp(sampleTime: inSampleTime, flags: .sampleTimeValid)
}

/// Sets `outATS` to a host time (Apple's `FillOutAudioTimeStampWithHostTime`).
public func FillOutAudioTimeStampWithHostTime(_ outATS: inout AudioTimeStamp, _ inHostTime: UInt64) {
    outATS = AudioTimeStamp(hostTime: inHostTime, flags: .hostTimeValid)
}

/// Sets `outATS` to a sample and a host time (Apple's `FillOutAudioTimeStampWithSampleAndHostTime`).
public func FillOutAudioTimeStampWithSampleAndHostTime(_ outATS: inout AudioTimeStamp, _ inSampleTime: Float64, _ inHostTime: UInt64) {
    outATS = AudioTimeStamp(sampleTime: inSampleTime, hostTime: inHostTime, flags: [.sampleTimeValid, .hostTimeValid])
}

/// Whether a format's samples are in the host's byte order (Apple's `IsAudioFormatNativeEndian`):
/// linear PCM without the big-endian flag (this host is little-endian); true for other formats.
public func IsAudioFormatNativeEndian(_ f: AudioStreamBasicDescription) -> Bool {
    f.mFormatID != kAudioFormatLinearPCM || (f.mFormatFlags & kAudioFormatFlagIsBigEndian) == kAudioFormatFlagsNativeEndian
}
