// Audio Toolbox–compatible AudioFileStream API, built on the Swift ``AudioFileStream``.

import OATCore
import OATFiles
import Synchronization

// MARK: - Types

/// A stream parser (Apple's `AudioFileStreamID`, an opaque pointer).
public typealias AudioFileStreamID = OpaquePointer
/// A stream property identifier (Apple's `AudioFileStreamPropertyID`).
public typealias AudioFileStreamPropertyID = UInt32
/// A file type identifier (Apple's `AudioFileTypeID`); the Swift API's type is `AudioFileType`.
public typealias AudioFileTypeID = UInt32

// `AudioFileStreamPropertyFlags` (`.propertyIsCached`, `.cacheProperty`) is Apple's C option set,
// declared in COATAudioToolboxTypes so that `AudioFileStream_PropertyListenerProc` can be a C function type.

/// Flags of ``AudioFileStreamSeek(_:_:_:_:)`` (Apple's `AudioFileStreamSeekFlags`).
public struct AudioFileStreamSeekFlags: OptionSet, Hashable, Sendable {
    /// The bits.
    public var rawValue: UInt32
    /// Creates flags.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// The returned offset is an estimate.
    public static let offsetIsEstimated = AudioFileStreamSeekFlags(rawValue: 1)
}

/// The value is cached (C name of `AudioFileStreamPropertyFlags/propertyIsCached`).
public let kAudioFileStreamPropertyFlag_PropertyIsCached = AudioFileStreamPropertyFlags.propertyIsCached
/// Cache the value (C name of `AudioFileStreamPropertyFlags/cacheProperty`).
public let kAudioFileStreamPropertyFlag_CacheProperty = AudioFileStreamPropertyFlags.cacheProperty
/// The bytes do not follow the previous ones (C name of `AudioFileStreamParseFlags.discontinuity`).
public let kAudioFileStreamParseFlag_Discontinuity = AudioFileStreamParseFlags.discontinuity
/// The seek offset is estimated (C name of ``AudioFileStreamSeekFlags/offsetIsEstimated``).
public let kAudioFileStreamSeekFlag_OffsetIsEstimated = AudioFileStreamSeekFlags.offsetIsEstimated

/// Called synchronously from ``AudioFileStreamParseBytes(_:_:_:_:)`` when a property is found
/// (Apple's `AudioFileStream_PropertyListenerProc`, a C function type as on Apple: pass a
/// global function or a closure that captures nothing). The client data is non-optional, as in Apple's SDK (the header is
/// inside `CF_ASSUME_NONNULL`); a stream opened with nil client data passes
/// a placeholder block (never read it then).
public typealias AudioFileStream_PropertyListenerProc = @convention(c) (UnsafeMutableRawPointer, AudioFileStreamID, AudioFileStreamPropertyID,
                                                         UnsafeMutablePointer<AudioFileStreamPropertyFlags>) -> Void
/// Called synchronously with parsed packets (Apple's `AudioFileStream_PacketsProc`): client
/// data, byte count, packet count, the bytes, and packet descriptions (nil for constant-size
/// packets such as PCM).
public typealias AudioFileStream_PacketsProc = @convention(c) (UnsafeMutableRawPointer, UInt32, UInt32, UnsafeRawPointer,
                                                UnsafeMutablePointer<AudioStreamPacketDescription>?) -> Void

/// Frame/packet translation (Apple's `AudioFramePacketTranslation`).
public struct AudioFramePacketTranslation: Hashable, Sendable {
    /// Frame.
    public var mFrame: Int64
    /// Packet.
    public var mPacket: Int64
    /// Frame offset in the packet.
    public var mFrameOffsetInPacket: UInt32
    /// A zeroed value.
    public init() { self.init(mFrame: 0, mPacket: 0, mFrameOffsetInPacket: 0) }
    /// Apple's memberwise initialiser.
    public init(mFrame: Int64, mPacket: Int64, mFrameOffsetInPacket: UInt32) {
        self.mFrame = mFrame
        self.mPacket = mPacket
        self.mFrameOffsetInPacket = mFrameOffsetInPacket
    }
}

/// Flags of a byte/packet translation (Apple's `AudioBytePacketTranslationFlags`).
public struct AudioBytePacketTranslationFlags: OptionSet, Hashable, Sendable {
    /// The bits.
    public var rawValue: UInt32
    /// Creates flags.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// The result is an estimate.
    public static let bytePacketTranslationFlag_IsEstimate = AudioBytePacketTranslationFlags(rawValue: 1)
}
/// The result is an estimate (Apple's `kBytePacketTranslationFlag_IsEstimate`).
public let kBytePacketTranslationFlag_IsEstimate = AudioBytePacketTranslationFlags.bytePacketTranslationFlag_IsEstimate

/// Byte/packet translation (Apple's `AudioBytePacketTranslation`).
public struct AudioBytePacketTranslation: Hashable, Sendable {
    /// Byte offset relative to the audio data.
    public var mByte: Int64
    /// Packet.
    public var mPacket: Int64
    /// Byte offset in the packet.
    public var mByteOffsetInPacket: UInt32
    /// Flags.
    public var mFlags: AudioBytePacketTranslationFlags
    /// A zeroed value.
    public init() { self.init(mByte: 0, mPacket: 0, mByteOffsetInPacket: 0, mFlags: []) }
    /// Apple's memberwise initialiser.
    public init(mByte: Int64, mPacket: Int64, mByteOffsetInPacket: UInt32, mFlags: AudioBytePacketTranslationFlags) {
        self.mByte = mByte
        self.mPacket = mPacket
        self.mByteOffsetInPacket = mByteOffsetInPacket
        self.mFlags = mFlags
    }
}

// MARK: - Constants

/// `UInt32` 1 once packets can be produced (`'redy'`).
public let kAudioFileStreamProperty_ReadyToProducePackets: AudioFileStreamPropertyID = fourCC("redy")
/// `AudioFileTypeID` (`'ffmt'`).
public let kAudioFileStreamProperty_FileFormat: AudioFileStreamPropertyID = fourCC("ffmt")
/// `AudioStreamBasicDescription` (`'dfmt'`).
public let kAudioFileStreamProperty_DataFormat: AudioFileStreamPropertyID = fourCC("dfmt")
/// Array of `AudioFormatListItem` (`'flst'`).
public let kAudioFileStreamProperty_FormatList: AudioFileStreamPropertyID = fourCC("flst")
/// Magic cookie bytes (`'mgic'`).
public let kAudioFileStreamProperty_MagicCookieData: AudioFileStreamPropertyID = fourCC("mgic")
/// `UInt64` (`'bcnt'`).
public let kAudioFileStreamProperty_AudioDataByteCount: AudioFileStreamPropertyID = fourCC("bcnt")
/// `UInt64` (`'pcnt'`).
public let kAudioFileStreamProperty_AudioDataPacketCount: AudioFileStreamPropertyID = fourCC("pcnt")
/// `UInt32` (`'psze'`).
public let kAudioFileStreamProperty_MaximumPacketSize: AudioFileStreamPropertyID = fourCC("psze")
/// `Int64` (`'doff'`).
public let kAudioFileStreamProperty_DataOffset: AudioFileStreamPropertyID = fourCC("doff")
/// `AudioChannelLayout`, variable size (`'cmap'`).
public let kAudioFileStreamProperty_ChannelLayout: AudioFileStreamPropertyID = fourCC("cmap")
/// `AudioFramePacketTranslation`, in/out (`'pkfr'`).
public let kAudioFileStreamProperty_PacketToFrame: AudioFileStreamPropertyID = fourCC("pkfr")
/// `AudioFramePacketTranslation`, in/out (`'frpk'`).
public let kAudioFileStreamProperty_FrameToPacket: AudioFileStreamPropertyID = fourCC("frpk")
/// `UInt32` 0/1 (`'rrap'`).
public let kAudioFileStreamProperty_RestrictsRandomAccess: AudioFileStreamPropertyID = fourCC("rrap")
/// `AudioPacketRollDistanceTranslation`, in/out (`'pkrl'`): every packet decodes independently, with the pre-roll this
/// project's decoders need.
public let kAudioFileStreamProperty_PacketToRollDistance: AudioFileStreamPropertyID = fourCC("pkrl")
/// `AudioIndependentPacketTranslation`, in/out (`'pind'`): every packet decodes independently, with the pre-roll this
/// project's decoders need.
public let kAudioFileStreamProperty_PreviousIndependentPacket: AudioFileStreamPropertyID = fourCC("pind")
/// `AudioIndependentPacketTranslation`, in/out (`'nind'`): every packet decodes independently, with the pre-roll this
/// project's decoders need.
public let kAudioFileStreamProperty_NextIndependentPacket: AudioFileStreamPropertyID = fourCC("nind")
/// `AudioPacketDependencyInfoTranslation`, in/out (`'pkdp'`): every packet decodes independently, with the pre-roll this
/// project's decoders need.
public let kAudioFileStreamProperty_PacketToDependencyInfo: AudioFileStreamPropertyID = fourCC("pkdp")
/// `AudioBytePacketTranslation`, in/out (`'pkby'`).
public let kAudioFileStreamProperty_PacketToByte: AudioFileStreamPropertyID = fourCC("pkby")
/// `AudioBytePacketTranslation`, in/out (`'bypk'`).
public let kAudioFileStreamProperty_ByteToPacket: AudioFileStreamPropertyID = fourCC("bypk")
/// `AudioFilePacketTableInfo` (`'pnfo'`).
public let kAudioFileStreamProperty_PacketTableInfo: AudioFileStreamPropertyID = fourCC("pnfo")
/// `UInt32` (`'pkub'`).
public let kAudioFileStreamProperty_PacketSizeUpperBound: AudioFileStreamPropertyID = fourCC("pkub")
/// `Float64` (`'abpp'`).
public let kAudioFileStreamProperty_AverageBytesPerPacket: AudioFileStreamPropertyID = fourCC("abpp")
/// `UInt32` bits per second (`'brat'`).
public let kAudioFileStreamProperty_BitRate: AudioFileStreamPropertyID = fourCC("brat")
/// The tags found so far: a `CFDictionary` (`NSDictionary` here) handed over +1 (`'info'`).
public let kAudioFileStreamProperty_InfoDictionary: AudioFileStreamPropertyID = fourCC("info")

/// The container is not recognised (`'typ?'`).
public let kAudioFileStreamError_UnsupportedFileType = OSStatus(bitPattern: fourCC("typ?"))
/// The data format is not supported (`'fmt?'`).
public let kAudioFileStreamError_UnsupportedDataFormat = OSStatus(bitPattern: fourCC("fmt?"))
/// Unknown property (`'pty?'`).
public let kAudioFileStreamError_UnsupportedProperty = OSStatus(bitPattern: fourCC("pty?"))
/// Wrong property size (`'!siz'`).
public let kAudioFileStreamError_BadPropertySize = OSStatus(bitPattern: fourCC("!siz"))
/// Packets precede their index: seek (`'optm'`).
public let kAudioFileStreamError_NotOptimized = OSStatus(bitPattern: fourCC("optm"))
/// Packet offset out of range (`'pck?'`).
public let kAudioFileStreamError_InvalidPacketOffset = OSStatus(bitPattern: fourCC("pck?"))
/// The data is malformed (`'dta?'`).
public let kAudioFileStreamError_InvalidFile = OSStatus(bitPattern: fourCC("dta?"))
/// The value is not known yet (`'unk?'`).
public let kAudioFileStreamError_ValueUnknown = OSStatus(bitPattern: fourCC("unk?"))
/// More data is needed (`'more'`).
public let kAudioFileStreamError_DataUnavailable = OSStatus(bitPattern: fourCC("more"))
/// Not allowed (`'nope'`).
public let kAudioFileStreamError_IllegalOperation = OSStatus(bitPattern: fourCC("nope"))
/// Something else went wrong (`'wht?'`).
public let kAudioFileStreamError_UnspecifiedError = OSStatus(bitPattern: fourCC("wht?"))
/// The parser cannot recover from a discontinuity (`'dsc!'`).
public let kAudioFileStreamError_DiscontinuityCantRecover = OSStatus(bitPattern: fourCC("dsc!"))

// MARK: - The object behind an AudioFileStreamID

final class CompatFileStream {
    let stream: AudioFileStream
    let clientData: UnsafeMutableRawPointer
    let listener: AudioFileStream_PropertyListenerProc
    let packets: AudioFileStream_PacketsProc
    var descriptions: [AudioStreamPacketDescription] = []

    init(stream: AudioFileStream, clientData: UnsafeMutableRawPointer?,
         listener: AudioFileStream_PropertyListenerProc, packets: AudioFileStream_PacketsProc) {
        self.stream = stream
        self.clientData = clientData ?? compatNilClientData
        self.listener = listener
        self.packets = packets
    }

    /// The handle naming this parser (set when it is opened).
    var id: AudioFileStreamID { slot! }
    var slot: AudioFileStreamID?

    static func from(_ id: AudioFileStreamID?) -> CompatFileStream? { CompatHandles.object(id, as: CompatFileStream.self) }

    func handle(_ event: AudioFileStreamEvent) {
        switch event {
        case .propertyChanged(let p):
            var flags: AudioFileStreamPropertyFlags = []
            listener(clientData, id, p.rawValue, &flags)
        case .packets(let batch):
            guard batch.packetCount > 0 else { return }
            let constant = (stream.dataFormat?.bytesPerPacket ?? 0) > 0
            batch.data.withUnsafeBytes { raw in
                let base = raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!
                if constant || batch.packetDescriptions.isEmpty {
                    packets(clientData, UInt32(raw.count), UInt32(batch.packetCount), base, nil)
                } else {
                    descriptions = batch.packetDescriptions
                    // Apple leaves mVariableFramesInPacket 0 where the format's frames per packet are constant.
                    if (stream.dataFormat?.framesPerPacket ?? 0) != 0 { for i in descriptions.indices { descriptions[i].variableFramesInPacket = 0 } }
                    descriptions.withUnsafeMutableBufferPointer { d in
                        packets(clientData, UInt32(raw.count), UInt32(batch.packetCount), base, d.baseAddress)
                    }
                }
            }
        }
    }
}

// MARK: - Functions

/// Opens a stream parser (Apple's `AudioFileStreamOpen`). `inFileTypeHint` (0 for none) picks
/// the container when the bytes do not say (raw MP3, ADTS).
@discardableResult
public func AudioFileStreamOpen(_ inClientData: UnsafeMutableRawPointer?,
                                _ inPropertyListenerProc: AudioFileStream_PropertyListenerProc,
                                _ inPacketsProc: AudioFileStream_PacketsProc,
                                _ inFileTypeHint: AudioFileTypeID,
                                _ outAudioFileStream: UnsafeMutablePointer<AudioFileStreamID?>) -> OSStatus {
    let stream = AudioFileStream(fileTypeHint: inFileTypeHint == 0 ? nil : AudioFileType(rawValue: inFileTypeHint))
    stream.failsWhenNotOptimized = true // Apple's 'optm' where audio data precedes its index
    let box = CompatFileStream(stream: stream, clientData: inClientData, listener: inPropertyListenerProc, packets: inPacketsProc)
    box.slot = CompatHandles.make(box)
    outAudioFileStream.pointee = box.id
    return noErr
}

/// Parses bytes, calling the listener and packets procs synchronously (Apple's
/// `AudioFileStreamParseBytes`). Different from Apple: a call with 0 bytes marks the end of the
/// input and delivers the last packet of formats whose packets end only where the next begins
/// (Apple keeps it until more bytes come).
@discardableResult
public func AudioFileStreamParseBytes(_ inAudioFileStream: AudioFileStreamID, _ inDataByteSize: UInt32,
                                      _ inData: UnsafeRawPointer?, _ inFlags: AudioFileStreamParseFlags) -> OSStatus {
    guard let box = CompatFileStream.from(inAudioFileStream) else { return kAudio_ParamError }
    do {
        if inDataByteSize == 0 {
            try box.stream.finish { box.handle($0) }
        } else {
            guard let inData else { return kAudio_ParamError }
            try box.stream.parse(UnsafeRawBufferPointer(start: inData, count: Int(inDataByteSize)), flags: inFlags) { box.handle($0) }
        }
        return noErr
    } catch {
        return error.osStatus ?? kAudioFileStreamError_InvalidFile
    }
}

/// Finds the byte offset of packet `inPacketOffset`, relative to the start of the audio data
/// (Apple's `AudioFileStreamSeek`). Feed bytes from `dataOffset + *outDataByteOffset` with
/// `kAudioFileStreamParseFlag_Discontinuity`.
@discardableResult
public func AudioFileStreamSeek(_ inAudioFileStream: AudioFileStreamID, _ inPacketOffset: Int64,
                                _ outDataByteOffset: UnsafeMutablePointer<Int64>,
                                _ ioFlags: UnsafeMutablePointer<AudioFileStreamSeekFlags>) -> OSStatus {
    guard let box = CompatFileStream.from(inAudioFileStream) else { return kAudio_ParamError }
    do {
        let r = try box.stream.seek(toPacket: inPacketOffset)
        outDataByteOffset.pointee = r.dataByteOffset
        ioFlags.pointee = r.isEstimated ? .offsetIsEstimated : []
        return noErr
    } catch {
        return error.osStatus ?? kAudioFileStreamError_InvalidPacketOffset
    }
}

/// A property value in Apple's layout.
enum CPropertyValue {
    case uint32(UInt32)
    case uint64(UInt64)
    case int64(Int64)
    case float64(Float64)
    case asbd(AudioStreamBasicDescription)
    case packetTable(AudioFilePacketTableInfo)
    case formatList([AudioFormatListItem])
    case bytes([UInt8])
    case framePacket(AudioFramePacketTranslation)
    case bytePacket(AudioBytePacketTranslation)
    case packetRange(AudioPacketRangeByteCountTranslation)
    /// A Core Foundation-style object handed over +1 (Apple's "Copy" properties: the caller's
    /// `CFDictionary?` or `Unmanaged<CFDictionary>?` owns it).
    case object(AnyObject)
    /// A variable-length value of this size written by the closure (marker and region lists):
    /// it gets the caller's size (in/out) and buffer.
    case custom(UInt32, (UnsafeMutablePointer<UInt32>, UnsafeMutableRawPointer) -> OSStatus)

    var size: UInt32 {
        switch self {
        case .uint32: 4
        case .uint64, .int64, .float64: 8
        case .asbd: UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
        case .packetTable: UInt32(MemoryLayout<AudioFilePacketTableInfo>.size)
        case .formatList(let l): UInt32(l.count * MemoryLayout<AudioFormatListItem>.stride)
        case .bytes(let b): UInt32(b.count)
        case .framePacket: UInt32(MemoryLayout<AudioFramePacketTranslation>.size)
        case .bytePacket: UInt32(MemoryLayout<AudioBytePacketTranslation>.size)
        case .packetRange: UInt32(MemoryLayout<AudioPacketRangeByteCountTranslation>.size)
        case .object: UInt32(MemoryLayout<UnsafeMutableRawPointer>.size)
        case .custom(let n, _): n
        }
    }

    /// Writes the value as Apple's `GetProperty` does; byte arrays and lists may be truncated to
    /// the caller's size, fixed-size values need room.
    func write(_ ioSize: UnsafeMutablePointer<UInt32>, _ out: UnsafeMutableRawPointer?, sizeError: OSStatus) -> OSStatus {
        switch self {
        case .uint32(let x): return writeProperty(x, ioSize, out, sizeError: sizeError)
        case .uint64(let x): return writeProperty(x, ioSize, out, sizeError: sizeError)
        case .int64(let x): return writeProperty(x, ioSize, out, sizeError: sizeError)
        case .float64(let x): return writeProperty(x, ioSize, out, sizeError: sizeError)
        case .asbd(let x): return writeProperty(x, ioSize, out, sizeError: sizeError)
        case .packetTable(let x): return writeProperty(x, ioSize, out, sizeError: sizeError)
        case .formatList(let l): return writeArray(l, ioSize, out)
        case .bytes(let b): return writeBytes(b, ioSize, out, sizeError: sizeError)
        case .framePacket(let x): return writeProperty(x, ioSize, out, sizeError: sizeError)
        case .bytePacket(let x): return writeProperty(x, ioSize, out, sizeError: sizeError)
        case .packetRange(let x): return writeProperty(x, ioSize, out, sizeError: sizeError)
        case .object(let o):
            guard let out else { ioSize.pointee = size; return noErr }
            guard ioSize.pointee >= size else { return sizeError }
            out.storeBytes(of: Unmanaged.passRetained(o).toOpaque(), as: UnsafeMutableRawPointer.self)
            ioSize.pointee = size
            return noErr
        case .custom(let n, let body):
            guard let out else { ioSize.pointee = n; return noErr }
            return body(ioSize, out)
        }
    }
}

/// The value of a stream property; `input` is the caller's data for in/out translations.
private func streamProperty(_ s: AudioFileStream, _ id: AudioFileStreamPropertyID, input: UnsafeRawPointer?) -> Result<CPropertyValue, OSErr> {
    let unknown = Result<CPropertyValue, OSErr>.failure(OSErr(kAudioFileStreamError_ValueUnknown))
    switch id {
    case kAudioFileStreamProperty_ReadyToProducePackets: return .success(.uint32(s.isReadyToProducePackets ? 1 : 0))
    case kAudioFileStreamProperty_FileFormat: return s.fileFormat.map { .success(.uint32($0.rawValue)) } ?? unknown
    case kAudioFileStreamProperty_DataFormat: return s.dataFormat.map { .success(.asbd($0)) } ?? unknown
    case kAudioFileStreamProperty_FormatList: return s.formatList.isEmpty ? unknown : .success(.formatList(s.formatList))
    case kAudioFileStreamProperty_MagicCookieData: return s.magicCookie.map { .success(.bytes($0)) } ?? unknown
    case kAudioFileStreamProperty_AudioDataByteCount: return s.audioDataByteCount.map { .success(.uint64(UInt64(max(0, $0)))) } ?? unknown
    case kAudioFileStreamProperty_AudioDataPacketCount: return s.audioDataPacketCount.map { .success(.uint64(UInt64(max(0, $0)))) } ?? unknown
    case kAudioFileStreamProperty_MaximumPacketSize: return s.dataFormat == nil ? unknown : .success(.uint32(s.maximumPacketSize))
    case kAudioFileStreamProperty_DataOffset: return s.dataOffset.map { .success(.int64($0)) } ?? unknown
    case kAudioFileStreamProperty_ChannelLayout: return s.channelLayout.map { .success(.bytes(CLayout.bytes($0))) } ?? unknown
    case kAudioFileStreamProperty_PacketTableInfo: return s.packetTableInfo.map { .success(.packetTable($0)) } ?? unknown
    case kAudioFileStreamProperty_PacketSizeUpperBound: return s.dataFormat == nil ? unknown : .success(.uint32(s.packetSizeUpperBound))
    case kAudioFileStreamProperty_AverageBytesPerPacket: return s.dataFormat == nil ? unknown : .success(.float64(s.averageBytesPerPacket))
    case kAudioFileStreamProperty_BitRate: return s.dataFormat == nil ? unknown : .success(.uint32(s.bitRate))
    case kAudioFileStreamProperty_RestrictsRandomAccess: return .success(.uint32(0))
    case kAudioFileStreamProperty_InfoDictionary: return s.fileFormat == nil ? unknown : .success(.object(infoDictionaryObject(s)))
    case kAudioFileStreamProperty_PacketToFrame:
        guard let t = input?.loadUnaligned(as: AudioFramePacketTranslation.self) else { return .success(.framePacket(AudioFramePacketTranslation())) }
        guard let f = s.frame(forPacket: t.mPacket) else { return unknown }
        return .success(.framePacket(AudioFramePacketTranslation(mFrame: f, mPacket: t.mPacket, mFrameOffsetInPacket: 0)))
    case kAudioFileStreamProperty_FrameToPacket:
        guard let t = input?.loadUnaligned(as: AudioFramePacketTranslation.self) else { return .success(.framePacket(AudioFramePacketTranslation())) }
        guard let p = s.packet(forFrame: t.mFrame) else { return unknown }
        return .success(.framePacket(AudioFramePacketTranslation(mFrame: t.mFrame, mPacket: p.packet, mFrameOffsetInPacket: UInt32(clamping: p.frameOffsetInPacket))))
    case kAudioFileStreamProperty_PacketToByte:
        guard let t = input?.loadUnaligned(as: AudioBytePacketTranslation.self) else { return .success(.bytePacket(AudioBytePacketTranslation())) }
        guard let b = s.byteOffset(forPacket: t.mPacket) else { return unknown }
        return .success(.bytePacket(AudioBytePacketTranslation(mByte: b.offset, mPacket: t.mPacket, mByteOffsetInPacket: 0,
                                                               mFlags: b.isEstimated ? .bytePacketTranslationFlag_IsEstimate : [])))
    case kAudioFileStreamProperty_ByteToPacket:
        guard let t = input?.loadUnaligned(as: AudioBytePacketTranslation.self) else { return .success(.bytePacket(AudioBytePacketTranslation())) }
        guard let p = s.packet(forByteOffset: t.mByte) else { return unknown }
        let start = s.byteOffset(forPacket: p.packet)?.offset ?? t.mByte
        return .success(.bytePacket(AudioBytePacketTranslation(mByte: t.mByte, mPacket: p.packet, mByteOffsetInPacket: UInt32(clamping: max(0, t.mByte - start)),
                                                               mFlags: p.isEstimated ? .bytePacketTranslationFlag_IsEstimate : [])))
    case kAudioFileStreamProperty_PacketToRollDistance, kAudioFileStreamProperty_PreviousIndependentPacket,
         kAudioFileStreamProperty_NextIndependentPacket, kAudioFileStreamProperty_PacketToDependencyInfo:
        guard let f = s.dataFormat else { return unknown }
        return packetDependencyProperty(id, format: f, packetCount: s.audioDataPacketCount, input: input,
                                        invalidPacket: kAudioFileStreamError_InvalidPacketOffset) ?? unknown
    default:
        return .failure(OSErr(kAudioFileStreamError_UnsupportedProperty))
    }
}

/// An `OSStatus` carried as an `Error`.
struct OSErr: Error {
    var status: OSStatus
    init(_ status: OSStatus) { self.status = status }
}

/// Size of a property's value and whether it can be set (Apple's
/// `AudioFileStreamGetPropertyInfo`). No stream property is writable.
@discardableResult
public func AudioFileStreamGetPropertyInfo(_ inAudioFileStream: AudioFileStreamID, _ inPropertyID: AudioFileStreamPropertyID,
                                           _ outPropertyDataSize: UnsafeMutablePointer<UInt32>?,
                                           _ outWritable: UnsafeMutablePointer<DarwinBoolean>?) -> OSStatus {
    guard let box = CompatFileStream.from(inAudioFileStream) else { return kAudio_ParamError }
    switch streamProperty(box.stream, inPropertyID, input: nil) {
    case .success(let v):
        outPropertyDataSize?.pointee = v.size
        outWritable?.pointee = false
        return noErr
    case .failure(let e):
        return e.status
    }
}

/// Reads a property in Apple's layout (Apple's `AudioFileStreamGetProperty`): `DataFormat` an
/// `AudioStreamBasicDescription`, counts `UInt64`, `DataOffset` `Int64`, `MagicCookieData`
/// bytes, `FormatList` `AudioFormatListItem`s, `ChannelLayout` a C `AudioChannelLayout`,
/// translations in/out, `InfoDictionary` a `CFDictionary` handed over +1 (the tags found so far).
@discardableResult
public func AudioFileStreamGetProperty(_ inAudioFileStream: AudioFileStreamID, _ inPropertyID: AudioFileStreamPropertyID,
                                       _ ioPropertyDataSize: UnsafeMutablePointer<UInt32>,
                                       _ outPropertyData: UnsafeMutableRawPointer) -> OSStatus {
    guard let box = CompatFileStream.from(inAudioFileStream) else { return kAudio_ParamError }
    switch streamProperty(box.stream, inPropertyID, input: UnsafeRawPointer(outPropertyData)) {
    case .success(let v): return v.write(ioPropertyDataSize, outPropertyData, sizeError: kAudioFileStreamError_BadPropertySize)
    case .failure(let e): return e.status
    }
}

/// Sets a property (Apple's `AudioFileStreamSetProperty`): no stream property is settable here,
/// so this returns `kAudioFileStreamError_UnsupportedProperty` for unknown IDs and
/// `kAudioFileStreamError_IllegalOperation` for known ones.
@discardableResult
public func AudioFileStreamSetProperty(_ inAudioFileStream: AudioFileStreamID, _ inPropertyID: AudioFileStreamPropertyID,
                                       _ inPropertyDataSize: UInt32, _ inPropertyData: UnsafeRawPointer) -> OSStatus {
    guard let box = CompatFileStream.from(inAudioFileStream) else { return kAudio_ParamError }
    if case .failure(let e) = streamProperty(box.stream, inPropertyID, input: nil), e.status == kAudioFileStreamError_UnsupportedProperty {
        return e.status
    }
    return kAudioFileStreamError_IllegalOperation
}

/// Closes a stream parser (Apple's `AudioFileStreamClose`). A parser already closed (a second
/// call, or a stale handle) returns `kAudio_ParamError`.
@discardableResult
public func AudioFileStreamClose(_ inAudioFileStream: AudioFileStreamID) -> OSStatus {
    guard CompatHandles.remove(inAudioFileStream, as: CompatFileStream.self) != nil else { return kAudio_ParamError }
    return noErr
}
