// Audio Toolbox–compatible AudioFile API (reading), built on the Swift ``AudioFile``.

import OATCore
import OATFiles
import FoundationEssentials
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// MARK: - Types

/// Apple's `CFURL` stand-in: Foundation's `URL`, so `URL(fileURLWithPath: path) as CFURL`
/// compiles unchanged. Only file URLs can be opened.
public typealias CFURL = URL

/// Creates a file URL from a path's bytes (Apple's `CFURLCreateFromFileSystemRepresentation`).
public func CFURLCreateFromFileSystemRepresentation(_ allocator: CFAllocator?, _ buffer: UnsafePointer<UInt8>,
                                                    _ bufLen: CFIndex, _ isDirectory: Bool) -> CFURL! {
    let path = String(decoding: UnsafeBufferPointer(start: buffer, count: max(0, bufLen)), as: UTF8.self)
    return URL(fileURLWithPath: path, isDirectory: isDirectory)
}

/// An open audio file (Apple's `AudioFileID`, an opaque pointer).
public typealias AudioFileID = OpaquePointer
/// A file property identifier (Apple's `AudioFilePropertyID`).
public typealias AudioFilePropertyID = UInt32

/// How a file is opened (Apple's `AudioFilePermissions`). Only reading is supported.
public enum AudioFilePermissions: Int8, Sendable {
    /// Read only.
    case readPermission = 1
    /// Write only (not supported).
    case writePermission = 2
    /// Read and write (not supported).
    case readWritePermission = 3
}

/// Flags for creating files (Apple's `AudioFileFlags`).
public struct AudioFileFlags: OptionSet, Hashable, Sendable {
    /// The bits.
    public var rawValue: UInt32
    /// Creates flags.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// Replace an existing file.
    public static let eraseFile = AudioFileFlags(rawValue: 1)
    /// Do not page-align the audio data.
    public static let dontPageAlignAudioData = AudioFileFlags(rawValue: 2)
}

// MARK: - Constants

/// AIFF (`'AIFF'`).
public let kAudioFileAIFFType: AudioFileTypeID = fourCC("AIFF")
/// AIFF-C (`'AIFC'`).
public let kAudioFileAIFCType: AudioFileTypeID = fourCC("AIFC")
/// WAVE (`'WAVE'`).
public let kAudioFileWAVEType: AudioFileTypeID = fourCC("WAVE")
/// RF64 (`'RF64'`).
public let kAudioFileRF64Type: AudioFileTypeID = fourCC("RF64")
/// BW64 (`'BW64'`).
public let kAudioFileBW64Type: AudioFileTypeID = fourCC("BW64")
/// Sony Wave64 (`'W64f'`): not readable here.
public let kAudioFileWave64Type: AudioFileTypeID = fourCC("W64f")
/// Sound Designer II (`'Sd2f'`): not readable here.
public let kAudioFileSoundDesigner2Type: AudioFileTypeID = fourCC("Sd2f")
/// NeXT/Sun (`'NeXT'`).
public let kAudioFileNextType: AudioFileTypeID = fourCC("NeXT")
/// MPEG Layer III (`'MPG3'`).
public let kAudioFileMP3Type: AudioFileTypeID = fourCC("MPG3")
/// MPEG Layer II (`'MPG2'`).
public let kAudioFileMP2Type: AudioFileTypeID = fourCC("MPG2")
/// MPEG Layer I (`'MPG1'`).
public let kAudioFileMP1Type: AudioFileTypeID = fourCC("MPG1")
/// AC-3 (`'ac-3'`): not readable here.
public let kAudioFileAC3Type: AudioFileTypeID = fourCC("ac-3")
/// AAC ADTS (`'adts'`).
public let kAudioFileAAC_ADTSType: AudioFileTypeID = fourCC("adts")
/// MPEG-4 (`'mp4f'`).
public let kAudioFileMPEG4Type: AudioFileTypeID = fourCC("mp4f")
/// Apple MPEG-4 audio (`'m4af'`).
public let kAudioFileM4AType: AudioFileTypeID = fourCC("m4af")
/// Apple MPEG-4 audiobook (`'m4bf'`).
public let kAudioFileM4BType: AudioFileTypeID = fourCC("m4bf")
/// CAF (`'caff'`).
public let kAudioFileCAFType: AudioFileTypeID = fourCC("caff")
/// 3GPP (`'3gpp'`): not readable here.
public let kAudioFile3GPType: AudioFileTypeID = fourCC("3gpp")
/// 3GPP2 (`'3gp2'`): not readable here.
public let kAudioFile3GP2Type: AudioFileTypeID = fourCC("3gp2")
/// AMR (`'amrf'`): not readable here.
public let kAudioFileAMRType: AudioFileTypeID = fourCC("amrf")
/// FLAC (`'flac'`).
public let kAudioFileFLACType: AudioFileTypeID = fourCC("flac")
/// LATM in LOAS (`'loas'`): not readable here.
public let kAudioFileLATMInLOASType: AudioFileTypeID = fourCC("loas")

/// `AudioFileTypeID` (`'ffmt'`).
public let kAudioFilePropertyFileFormat: AudioFilePropertyID = fourCC("ffmt")
/// `AudioStreamBasicDescription` (`'dfmt'`).
public let kAudioFilePropertyDataFormat: AudioFilePropertyID = fourCC("dfmt")
/// `UInt32` 1 (`'optm'`).
public let kAudioFilePropertyIsOptimized: AudioFilePropertyID = fourCC("optm")
/// Magic cookie bytes (`'mgic'`).
public let kAudioFilePropertyMagicCookieData: AudioFilePropertyID = fourCC("mgic")
/// `UInt64` (`'bcnt'`).
public let kAudioFilePropertyAudioDataByteCount: AudioFilePropertyID = fourCC("bcnt")
/// `UInt64` (`'pcnt'`).
public let kAudioFilePropertyAudioDataPacketCount: AudioFilePropertyID = fourCC("pcnt")
/// `UInt32` (`'psze'`).
public let kAudioFilePropertyMaximumPacketSize: AudioFilePropertyID = fourCC("psze")
/// `Int64` (`'doff'`).
public let kAudioFilePropertyDataOffset: AudioFilePropertyID = fourCC("doff")
/// `AudioChannelLayout` (`'cmap'`).
public let kAudioFilePropertyChannelLayout: AudioFilePropertyID = fourCC("cmap")
/// Tags and the approximate duration: a `CFDictionary` (`NSDictionary` here) handed over +1,
/// keyed by the `kAFInfoDictionary_*` strings (`'info'`).
public let kAudioFilePropertyInfoDictionary: AudioFilePropertyID = fourCC("info")
/// `AudioFilePacketTableInfo` (`'pnfo'`).
public let kAudioFilePropertyPacketTableInfo: AudioFilePropertyID = fourCC("pnfo")
/// Array of `AudioFormatListItem` (`'flst'`).
public let kAudioFilePropertyFormatList: AudioFilePropertyID = fourCC("flst")
/// `UInt32` (`'pkub'`).
public let kAudioFilePropertyPacketSizeUpperBound: AudioFilePropertyID = fourCC("pkub")
/// `Float64` seconds (`'edur'`).
public let kAudioFilePropertyEstimatedDuration: AudioFilePropertyID = fourCC("edur")
/// `UInt32` bits per second (`'brat'`).
public let kAudioFilePropertyBitRate: AudioFilePropertyID = fourCC("brat")
/// `Float64` (`'abpp'`).
public let kAudioFilePropertyAverageBytesPerPacket: AudioFilePropertyID = fourCC("abpp")
/// `UInt32` (`'atct'`).
public let kAudioFilePropertyAudioTrackCount: AudioFilePropertyID = fourCC("atct")
/// `AudioFramePacketTranslation`, in/out (`'pkfr'`).
public let kAudioFilePropertyPacketToFrame: AudioFilePropertyID = fourCC("pkfr")
/// `AudioFramePacketTranslation`, in/out (`'frpk'`).
public let kAudioFilePropertyFrameToPacket: AudioFilePropertyID = fourCC("frpk")
/// `AudioBytePacketTranslation`, in/out (`'pkby'`).
public let kAudioFilePropertyPacketToByte: AudioFilePropertyID = fourCC("pkby")
/// `AudioBytePacketTranslation`, in/out (`'bypk'`).
public let kAudioFilePropertyByteToPacket: AudioFilePropertyID = fourCC("bypk")
/// `UInt32` (`'sbtd'`): not supported.
public let kAudioFilePropertySourceBitDepth: AudioFilePropertyID = fourCC("sbtd")
/// Deferred size updates (`'dszu'`): not supported (no writers).
public let kAudioFilePropertyDeferSizeUpdates: AudioFilePropertyID = fourCC("dszu")

/// Readable file types: array of `AudioFileTypeID` (`'afrf'`).
public let kAudioFileGlobalInfo_ReadableTypes: AudioFilePropertyID = fourCC("afrf")
/// Writable file types: array of `AudioFileTypeID`, empty here (`'afwf'`).
public let kAudioFileGlobalInfo_WritableTypes: AudioFilePropertyID = fourCC("afwf")

/// Unspecified error (`'wht?'`).
public let kAudioFileUnspecifiedError = OSStatus(bitPattern: fourCC("wht?"))
/// Unsupported file type (`'typ?'`).
public let kAudioFileUnsupportedFileTypeError = OSStatus(bitPattern: fourCC("typ?"))
/// Unsupported data format (`'fmt?'`).
public let kAudioFileUnsupportedDataFormatError = OSStatus(bitPattern: fourCC("fmt?"))
/// Unsupported property (`'pty?'`).
public let kAudioFileUnsupportedPropertyError = OSStatus(bitPattern: fourCC("pty?"))
/// Bad property size (`'!siz'`).
public let kAudioFileBadPropertySizeError = OSStatus(bitPattern: fourCC("!siz"))
/// Permission error (`'prm?'`).
public let kAudioFilePermissionsError = OSStatus(bitPattern: fourCC("prm?"))
/// Not optimized (`'optm'`).
public let kAudioFileNotOptimizedError = OSStatus(bitPattern: fourCC("optm"))
/// Invalid chunk (`'chk?'`).
public let kAudioFileInvalidChunkError = OSStatus(bitPattern: fourCC("chk?"))
/// 64-bit data size not allowed (`'off?'`).
public let kAudioFileDoesNotAllow64BitDataSizeError = OSStatus(bitPattern: fourCC("off?"))
/// Invalid packet offset (`'pck?'`).
public let kAudioFileInvalidPacketOffsetError = OSStatus(bitPattern: fourCC("pck?"))
/// Invalid packet dependency (`'dep?'`).
public let kAudioFileInvalidPacketDependencyError = OSStatus(bitPattern: fourCC("dep?"))
/// Invalid file (`'dta?'`).
public let kAudioFileInvalidFileError = OSStatus(bitPattern: fourCC("dta?"))
/// Operation not supported (`'op??'`).
public let kAudioFileOperationNotSupportedError: OSStatus = 0x6F70_3F3F
/// The file is not open.
public let kAudioFileNotOpenError: OSStatus = -38
/// End of file.
public let kAudioFileEndOfFileError: OSStatus = -39
/// Position error.
public let kAudioFilePositionError: OSStatus = -40
/// File not found.
public let kAudioFileFileNotFoundError: OSStatus = -43

// MARK: - The object behind an AudioFileID

final class CompatAudioFile: @unchecked Sendable {
    let lock = Locked(())
    let file: AudioFile
    init(_ file: AudioFile) { self.file = file }

    static func from(_ id: AudioFileID?) -> CompatAudioFile? {
        CompatHandles.object(id, as: CompatAudioFile.self)
    }

    func withFile<R>(_ body: (AudioFile) -> R) -> R { lock.withLock { _ in body(file) } }
}

// MARK: - Opening and closing

/// Opens a file for reading (Apple's `AudioFileOpenURL`). `inFileTypeHint` (0 for none) picks
/// the container when the bytes do not say. Write permissions return `kAudioFilePermissionsError`.
@discardableResult
public func AudioFileOpenURL(_ inFileRef: CFURL, _ inPermissions: AudioFilePermissions, _ inFileTypeHint: AudioFileTypeID,
                             _ outAudioFile: UnsafeMutablePointer<AudioFileID?>) -> OSStatus {
    guard inPermissions == .readPermission else { return kAudioFilePermissionsError }
    guard inFileRef.isFileURL else { return kAudioFileUnspecifiedError }
    let path = inFileRef.path(percentEncoded: false)
    do {
        let file = try AudioFile(path: path, typeHint: inFileTypeHint == 0 ? nil : AudioFileType(rawValue: inFileTypeHint))
        outAudioFile.pointee = CompatHandles.make(CompatAudioFile(file))
        return noErr
    } catch {
        if error.code == .io, access(path, R_OK) != 0 { return kAudioFileFileNotFoundError }
        return error.osStatus ?? kAudioFileUnspecifiedError
    }
}

/// Closes a file (Apple's `AudioFileClose`). A file already closed (a second call, or a stale
/// handle) returns `kAudioFileNotOpenError`.
@discardableResult
public func AudioFileClose(_ inAudioFile: AudioFileID) -> OSStatus {
    if CompatFileWriter.isWriter(inAudioFile) { return CompatFileWriter.close(inAudioFile) }
    guard CompatHandles.remove(inAudioFile, as: CompatAudioFile.self) != nil else { return kAudioFileNotOpenError }
    return noErr
}

/// Creates `inFileRef` for writing packets of `inFormat` in an `inFileType` container (Apple's
/// `AudioFileCreateWithURL`): WAVE, AIFF, AIFC, CAF, M4A, FLAC, Ogg (Opus), ADTS, MP3, through
/// `AudioFileWriter`. The file is created (replaced) at once; the container is written with the
/// first ``AudioFileWritePackets(_:_:_:_:_:_:_:)``, so the magic cookie can be set in between as
/// Apple's recording code does. Formats a container cannot hold give
/// `kAudioFileUnsupportedDataFormatError`. Packets are appended in order (`inStartingPacket` is
/// not used for positioning).
@discardableResult
public func AudioFileCreateWithURL(_ inFileRef: CFURL, _ inFileType: AudioFileTypeID, _ inFormat: UnsafePointer<AudioStreamBasicDescription>,
                                   _ inFlags: AudioFileFlags, _ outAudioFile: UnsafeMutablePointer<AudioFileID?>) -> OSStatus {
    guard inFileRef.isFileURL else { return kAudioFileUnspecifiedError }
    let type = AudioFileType(rawValue: inFileType)
    guard AudioFileWriter.writableTypes.contains(type) else { return kAudioFileUnsupportedFileTypeError }
    do throws(AudioError) {
        try AudioFileWriter.check(inFormat.pointee, in: type)
    } catch {
        return kAudioFileUnsupportedDataFormatError
    }
    let path = inFileRef.path(percentEncoded: false)
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard fd >= 0 else { return errno == ENOENT ? kAudioFileFileNotFoundError : kAudioFilePermissionsError }
    close(fd)
    let w = CompatFileWriter(path: path, type: type, format: inFormat.pointee)
    outAudioFile.pointee = CompatFileWriter.register(w)
    return noErr
}

/// Appends packets (Apple's `AudioFileWritePackets`): `*ioNumPackets` packets in `inBuffer`
/// (`inNumBytes` bytes), described by `inPacketDescriptions` for variable-size formats.
@discardableResult
public func AudioFileWritePackets(_ inAudioFile: AudioFileID, _ inUseCache: Bool, _ inNumBytes: UInt32,
                                  _ inPacketDescriptions: UnsafePointer<AudioStreamPacketDescription>?, _ inStartingPacket: Int64,
                                  _ ioNumPackets: UnsafeMutablePointer<UInt32>, _ inBuffer: UnsafeRawPointer) -> OSStatus {
    guard let w = CompatFileWriter.from(inAudioFile) else {
        ioNumPackets.pointee = 0
        return CompatAudioFile.from(inAudioFile) != nil ? kAudioFilePermissionsError : kAudio_ParamError
    }
    let count = Int(ioNumPackets.pointee)
    let descriptions = inPacketDescriptions.map { Array(UnsafeBufferPointer(start: $0, count: count)) } ?? []
    let result = w.lock.withLock { _ -> OSStatus in
        do throws(AudioError) {
            let writer = try w.openWriter()
            try writer.writePackets(UnsafeRawBufferPointer(start: inBuffer, count: Int(inNumBytes)), descriptions: descriptions, count: count)
            return noErr
        } catch {
            return error.osStatus ?? kAudioFileUnspecifiedError
        }
    }
    if result != noErr { ioNumPackets.pointee = 0 }
    return result
}

/// Sets a property of a file being written (Apple's `AudioFileSetProperty`):
/// `MagicCookieData` (before the first packets; afterwards only FLAC's STREAMINFO update is
/// taken), `PacketTableInfo` (priming before the first packets, valid frames before closing).
/// Files opened for reading return `kAudioFilePermissionsError`.
@discardableResult
public func AudioFileSetProperty(_ inAudioFile: AudioFileID, _ inPropertyID: AudioFilePropertyID, _ inDataSize: UInt32,
                                 _ inPropertyData: UnsafeRawPointer) -> OSStatus {
    guard let w = CompatFileWriter.from(inAudioFile) else {
        return CompatAudioFile.from(inAudioFile) != nil ? kAudioFilePermissionsError : kAudio_ParamError
    }
    return w.lock.withLock { _ -> OSStatus in
        switch inPropertyID {
        case kAudioFilePropertyMagicCookieData:
            let cookie = Array(UnsafeRawBufferPointer(start: inPropertyData, count: Int(inDataSize)))
            if let writer = w.writer {
                if w.format.formatID == .flac, cookie.count == 34 { writer.magicCookie = cookie }
            } else {
                w.cookie = cookie.isEmpty ? nil : cookie
            }
            return noErr
        case kAudioFilePropertyPacketTableInfo:
            guard inDataSize >= UInt32(MemoryLayout<AudioFilePacketTableInfo>.size) else { return kAudioFileBadPropertySizeError }
            let info = inPropertyData.loadUnaligned(as: AudioFilePacketTableInfo.self)
            if let writer = w.writer { writer.packetTableInfo = info } else { w.packetTableInfo = info }
            return noErr
        default:
            return kAudioFileUnsupportedPropertyError
        }
    }
}

/// A file being written through the C-style API: the writer is created with the first packets.
final class CompatFileWriter: @unchecked Sendable {
    let lock = Locked(())
    let path: String
    let type: AudioFileType
    let format: AudioStreamBasicDescription
    var cookie: [UInt8]?
    var packetTableInfo: AudioFilePacketTableInfo?
    var writer: AudioFileWriter?
    /// Called with the finished file's path after closing (AudioFileInitializeWithCallbacks).
    var finish: ((String) -> OSStatus)?

    init(path: String, type: AudioFileType, format: AudioStreamBasicDescription) {
        self.path = path
        self.type = type
        self.format = format
    }

    /// A new handle for `writer`.
    static func register(_ writer: CompatFileWriter) -> AudioFileID { CompatHandles.make(writer) }
    static func isWriter(_ id: AudioFileID) -> Bool { from(id) != nil }

    static func from(_ id: AudioFileID?) -> CompatFileWriter? { CompatHandles.object(id, as: CompatFileWriter.self) }

    /// The writer, created on first use (lock held).
    func openWriter() throws(AudioError) -> AudioFileWriter {
        if let writer { return writer }
        let w = try AudioFileWriter(path: path, fileType: type, dataFormat: format, magicCookie: cookie)
        if let packetTableInfo { w.packetTableInfo = packetTableInfo }
        writer = w
        return w
    }

    /// A property of the file being written: FileFormat, DataFormat, MagicCookieData,
    /// AudioDataPacketCount, AudioDataByteCount, PacketTableInfo, IsOptimized.
    func property(_ id: AudioFilePropertyID) -> CPropertyValue? {
        lock.withLock { _ -> CPropertyValue? in
            switch id {
            case kAudioFilePropertyFileFormat: return .uint32(type.rawValue)
            case kAudioFilePropertyDataFormat: return .asbd(format)
            case kAudioFilePropertyMagicCookieData: return (writer?.magicCookie ?? cookie).map { .bytes($0) }
            case kAudioFilePropertyAudioDataPacketCount: return .uint64(UInt64(max(0, writer?.packetCount ?? 0)))
            case kAudioFilePropertyAudioDataByteCount: return .uint64(UInt64(max(0, writer?.audioDataByteCount ?? 0)))
            case kAudioFilePropertyPacketTableInfo: return (writer?.packetTableInfo ?? packetTableInfo).map { .packetTable($0) }
            case kAudioFilePropertyIsOptimized: return .uint32(0)
            default: return emptyListProperty(id)
            }
        }
    }

    /// Forgets a handle whose file was never written (the file stays as created, empty).
    static func discard(_ id: AudioFileID) {
        _ = CompatHandles.remove(id, as: CompatFileWriter.self)
    }

    /// Finishes the file and forgets the handle (Apple's `AudioFileClose` on a created file).
    static func close(_ id: AudioFileID) -> OSStatus {
        guard let w = CompatHandles.remove(id, as: CompatFileWriter.self) else { return kAudioFileNotOpenError }
        let result = w.lock.withLock { _ -> OSStatus in
            do throws(AudioError) {
                try w.openWriter().close()
                return w.finish?(w.path) ?? noErr
            } catch {
                return error.osStatus ?? kAudioFileUnspecifiedError
            }
        }
        return result
    }
}

// MARK: - Reading

/// Reads whole packets starting at `inStartingPacket`, as many as `*ioNumPackets` and fit in
/// `*ioNumBytes` (Apple's `AudioFileReadPacketData`). Packet descriptions are written for
/// variable-size formats. Past the end: 0 packets, `noErr`.
@discardableResult
public func AudioFileReadPacketData(_ inAudioFile: AudioFileID, _ inUseCache: Bool, _ ioNumBytes: UnsafeMutablePointer<UInt32>,
                                    _ outPacketDescriptions: UnsafeMutablePointer<AudioStreamPacketDescription>?,
                                    _ inStartingPacket: Int64, _ ioNumPackets: UnsafeMutablePointer<UInt32>,
                                    _ outBuffer: UnsafeMutableRawPointer?) -> OSStatus {
    guard let box = CompatAudioFile.from(inAudioFile) else { return kAudio_ParamError }
    return box.withFile { file in
        guard inStartingPacket >= 0 else { return kAudioFileInvalidPacketOffsetError }
        let wanted = Int64(ioNumPackets.pointee)
        guard wanted > 0, inStartingPacket < file.packetCount else {
            ioNumPackets.pointee = 0
            ioNumBytes.pointee = 0
            return inStartingPacket > file.packetCount ? kAudioFileInvalidPacketOffsetError : noErr
        }
        let batch: AudioPacketBatch
        do throws(AudioError) {
            batch = try file.readPackets(inStartingPacket..<(inStartingPacket + wanted))
        } catch {
            return error.osStatus ?? kAudioFileInvalidFileError
        }
        // Keep the packets that fit.
        let budget = Int(ioNumBytes.pointee)
        var count = 0, bytes = 0
        if batch.packetDescriptions.isEmpty {
            let size = batch.packetCount > 0 ? batch.data.count / batch.packetCount : 0
            count = size > 0 ? min(batch.packetCount, budget / size) : 0
            bytes = count * size
        } else {
            for d in batch.packetDescriptions {
                let end = Int(d.startOffset) + Int(d.dataByteSize)
                if end > budget { break }
                count += 1
                bytes = end
            }
        }
        if count == 0 && batch.packetCount > 0 {
            ioNumPackets.pointee = 0
            ioNumBytes.pointee = 0
            return kAudio_ParamError // the buffer cannot hold one packet
        }
        if let outBuffer, bytes > 0 {
            batch.data.withUnsafeBytes { outBuffer.copyMemory(from: $0.baseAddress!, byteCount: bytes) }
        }
        if let outPacketDescriptions, !batch.packetDescriptions.isEmpty {
            for i in 0..<count {
                var d = batch.packetDescriptions[i]
                if file.dataFormat.framesPerPacket != 0 { d.variableFramesInPacket = 0 }
                outPacketDescriptions[i] = d
            }
        }
        ioNumPackets.pointee = UInt32(count)
        ioNumBytes.pointee = UInt32(bytes)
        return noErr
    }
}

/// Reads `*ioNumPackets` packets (Apple's deprecated `AudioFileReadPackets`): the buffer must
/// hold them (`packets * PacketSizeUpperBound` bytes); `outNumBytes` gets the bytes read.
@discardableResult
public func AudioFileReadPackets(_ inAudioFile: AudioFileID, _ inUseCache: Bool, _ outNumBytes: UnsafeMutablePointer<UInt32>,
                                 _ outPacketDescriptions: UnsafeMutablePointer<AudioStreamPacketDescription>?,
                                 _ inStartingPacket: Int64, _ ioNumPackets: UnsafeMutablePointer<UInt32>,
                                 _ outBuffer: UnsafeMutableRawPointer?) -> OSStatus {
    outNumBytes.pointee = UInt32.max
    return AudioFileReadPacketData(inAudioFile, inUseCache, outNumBytes, outPacketDescriptions, inStartingPacket, ioNumPackets, outBuffer)
}

/// Reads audio data bytes; `inStartingByte` is relative to the start of the audio data
/// (Apple's `AudioFileReadBytes`). A read that reaches the end returns the bytes there are and
/// `kAudioFileEndOfFileError`.
@discardableResult
public func AudioFileReadBytes(_ inAudioFile: AudioFileID, _ inUseCache: Bool, _ inStartingByte: Int64,
                               _ ioNumBytes: UnsafeMutablePointer<UInt32>, _ outBuffer: UnsafeMutableRawPointer) -> OSStatus {
    guard let box = CompatAudioFile.from(inAudioFile) else { return kAudio_ParamError }
    return box.withFile { file in
        guard inStartingByte >= 0 else { return kAudioFilePositionError }
        let available = max(0, file.audioDataByteCount - inStartingByte)
        let n = Int(min(Int64(ioNumBytes.pointee), available))
        if n > 0 {
            do throws(AudioError) {
                let bytes = try file.readBytes(at: file.dataOffset + inStartingByte, count: n)
                bytes.withUnsafeBytes { outBuffer.copyMemory(from: $0.baseAddress!, byteCount: n) }
            } catch {
                ioNumBytes.pointee = 0
                return error.osStatus ?? kAudioFileInvalidFileError
            }
        }
        let short = n < Int(ioNumBytes.pointee)
        ioNumBytes.pointee = UInt32(n)
        return short ? kAudioFileEndOfFileError : noErr
    }
}

// MARK: - Properties

private func fileProperty(_ f: AudioFile, _ id: AudioFilePropertyID, input: UnsafeRawPointer?) -> Result<CPropertyValue, OSErr> {
    let unsupported = Result<CPropertyValue, OSErr>.failure(OSErr(kAudioFileUnsupportedPropertyError))
    switch id {
    case kAudioFilePropertyFileFormat: return .success(.uint32(f.fileFormat.rawValue))
    case kAudioFilePropertyDataFormat: return .success(.asbd(f.dataFormat))
    case kAudioFilePropertyIsOptimized: return .success(.uint32(1))
    case kAudioFilePropertyMagicCookieData: return f.magicCookie.map { .success(.bytes($0)) } ?? unsupported
    case kAudioFilePropertyAudioDataByteCount: return .success(.uint64(UInt64(max(0, f.audioDataByteCount))))
    case kAudioFilePropertyAudioDataPacketCount: return .success(.uint64(UInt64(max(0, f.packetCount))))
    case kAudioFilePropertyMaximumPacketSize: return .success(.uint32(f.maximumPacketSize))
    case kAudioFilePropertyDataOffset: return .success(.int64(f.dataOffset))
    case kAudioFilePropertyChannelLayout: return f.channelLayout.map { .success(.bytes(CLayout.bytes($0))) } ?? unsupported
    case kAudioFilePropertyPacketTableInfo: return f.packetTableInfo.map { .success(.packetTable($0)) } ?? unsupported
    case kAudioFilePropertyFormatList:
        return .success(.formatList(f.formatList.isEmpty ? [AudioFormatListItem(format: f.dataFormat, channelLayoutTag: f.channelLayout?.tag ?? .default(channels: f.dataFormat.channelsPerFrame))] : f.formatList))
    case kAudioFilePropertyPacketSizeUpperBound: return .success(.uint32(f.packetSizeUpperBound))
    case kAudioFilePropertyEstimatedDuration: return .success(.float64(f.duration))
    case kAudioFilePropertyBitRate: return .success(.uint32(f.bitRate))
    case kAudioFilePropertyAverageBytesPerPacket:
        return .success(.float64(f.packetCount > 0 ? Double(f.audioDataByteCount) / Double(f.packetCount) : 0))
    case kAudioFilePropertyAudioTrackCount: return .success(.uint32(1))
    case kAudioFilePropertyInfoDictionary: return .success(.object(infoDictionaryObject(f)))
    case kAudioFilePropertyMarkerList: return .success(markerListProperty(f.markers))
    case kAudioFilePropertyRegionList: return .success(regionListProperty(f.regions))
    case kAudioFilePropertyRestrictsRandomAccess: return .success(.uint32(0))
    case kAudioFilePropertyPacketRangeByteCountUpperBound:
        guard let t = input?.loadUnaligned(as: AudioPacketRangeByteCountTranslation.self) else {
            return .success(.packetRange(AudioPacketRangeByteCountTranslation()))
        }
        guard t.mPacket >= 0, t.mPacketCount >= 0, t.mPacket <= f.packetCount else { return .failure(OSErr(kAudioFileInvalidPacketOffsetError)) }
        let end = t.mPacket.addingReportingOverflow(t.mPacketCount)
        let range = t.mPacket..<(end.overflow ? Int64.max : end.partialValue)
        return .success(.packetRange(AudioPacketRangeByteCountTranslation(mPacket: t.mPacket, mPacketCount: t.mPacketCount,
                                                                          mByteCountUpperBound: f.byteCount(ofPackets: range))))
    case kAudioFilePropertyID3TagOffset: return id3TagOffset(f).map { .success(.int64($0)) } ?? unsupported
    case kAudioFilePropertyPacketToFrame:
        guard let t = input?.loadUnaligned(as: AudioFramePacketTranslation.self) else { return .success(.framePacket(AudioFramePacketTranslation())) }
        guard t.mPacket >= 0, t.mPacket <= f.packetCount else { return .failure(OSErr(kAudioFileInvalidPacketOffsetError)) }
        var frame: Int64 = 0
        if f.dataFormat.framesPerPacket > 0 { frame = t.mPacket * Int64(f.dataFormat.framesPerPacket) } else {
            for p in 0..<t.mPacket { frame += Int64(f.framesInPacket(p)) }
        }
        return .success(.framePacket(AudioFramePacketTranslation(mFrame: frame, mPacket: t.mPacket, mFrameOffsetInPacket: 0)))
    case kAudioFilePropertyFrameToPacket:
        guard let t = input?.loadUnaligned(as: AudioFramePacketTranslation.self) else { return .success(.framePacket(AudioFramePacketTranslation())) }
        guard t.mFrame >= 0 else { return .failure(OSErr(kAudioFileInvalidPacketOffsetError)) }
        var packet: Int64 = 0, first: Int64 = 0
        if f.dataFormat.framesPerPacket > 0 {
            packet = t.mFrame / Int64(f.dataFormat.framesPerPacket)
            first = packet * Int64(f.dataFormat.framesPerPacket)
        } else {
            while packet < f.packetCount, first + Int64(f.framesInPacket(packet)) <= t.mFrame {
                first += Int64(f.framesInPacket(packet))
                packet += 1
            }
        }
        return .success(.framePacket(AudioFramePacketTranslation(mFrame: t.mFrame, mPacket: packet, mFrameOffsetInPacket: UInt32(clamping: t.mFrame - first))))
    case kAudioFilePropertyPacketToRollDistance, kAudioFilePropertyPreviousIndependentPacket,
         kAudioFilePropertyNextIndependentPacket, kAudioFilePropertyPacketToDependencyInfo:
        return packetDependencyProperty(id, format: f.dataFormat, packetCount: f.packetCount, input: input,
                                        invalidPacket: kAudioFileInvalidPacketOffsetError) ?? unsupported
    default:
        return emptyListProperty(id).map { .success($0) } ?? unsupported
    }
}

/// Size of a property's value and whether it is writable (Apple's `AudioFileGetPropertyInfo`;
/// nothing is writable here).
@discardableResult
public func AudioFileGetPropertyInfo(_ inAudioFile: AudioFileID, _ inPropertyID: AudioFilePropertyID,
                                     _ outDataSize: UnsafeMutablePointer<UInt32>?, _ isWritable: UnsafeMutablePointer<UInt32>?) -> OSStatus {
    if let w = CompatFileWriter.from(inAudioFile) {
        guard let v = w.property(inPropertyID) else { return kAudioFileUnsupportedPropertyError }
        outDataSize?.pointee = v.size
        isWritable?.pointee = inPropertyID == kAudioFilePropertyMagicCookieData || inPropertyID == kAudioFilePropertyPacketTableInfo ? 1 : 0
        return noErr
    }
    guard let box = CompatAudioFile.from(inAudioFile) else { return kAudio_ParamError }
    return box.withFile { file in
        switch fileProperty(file, inPropertyID, input: nil) {
        case .success(let v):
            outDataSize?.pointee = v.size
            isWritable?.pointee = 0
            return noErr
        case .failure(let e):
            return e.status
        }
    }
}

/// Reads a property in Apple's layout (Apple's `AudioFileGetProperty`). `InfoDictionary` is a
/// `CFDictionary` (`NSDictionary` here) handed over +1: read it into `CFDictionary?` or
/// `Unmanaged<CFDictionary>?` and `takeRetainedValue()`, as on Apple.
@discardableResult
public func AudioFileGetProperty(_ inAudioFile: AudioFileID, _ inPropertyID: AudioFilePropertyID,
                                 _ ioDataSize: UnsafeMutablePointer<UInt32>, _ outPropertyData: UnsafeMutableRawPointer) -> OSStatus {
    if let w = CompatFileWriter.from(inAudioFile) {
        guard let v = w.property(inPropertyID) else { return kAudioFileUnsupportedPropertyError }
        return v.write(ioDataSize, outPropertyData, sizeError: kAudioFileBadPropertySizeError)
    }
    guard let box = CompatAudioFile.from(inAudioFile) else { return kAudio_ParamError }
    return box.withFile { file in
        switch fileProperty(file, inPropertyID, input: UnsafeRawPointer(outPropertyData)) {
        case .success(let v): return v.write(ioDataSize, outPropertyData, sizeError: kAudioFileBadPropertySizeError)
        case .failure(let e): return e.status
        }
    }
}

/// The container types ``AudioFileCreateWithURL(_:_:_:_:_:)`` writes.
private let writableTypeIDs: [AudioFileTypeID] = AudioFileWriter.writableTypes.map(\.rawValue)

private let readableTypes: [AudioFileTypeID] = [
    kAudioFileAIFFType, kAudioFileAIFCType, kAudioFileWAVEType, kAudioFileRF64Type, kAudioFileBW64Type, kAudioFileNextType,
    kAudioFileMP3Type, kAudioFileMP2Type, kAudioFileMP1Type, kAudioFileAAC_ADTSType, kAudioFileMPEG4Type, kAudioFileM4AType,
    kAudioFileCAFType, kAudioFileFLACType,
]

/// Size of a global property (Apple's `AudioFileGetGlobalInfoSize`): `ReadableTypes`,
/// `WritableTypes`.
@discardableResult @_disfavoredOverload
public func AudioFileGetGlobalInfoSize(_ inPropertyID: AudioFilePropertyID, _ inSpecifierSize: UInt32, _ inSpecifier: UnsafeMutableRawPointer?,
                                       _ outDataSize: UnsafeMutablePointer<UInt32>) -> OSStatus {
    switch inPropertyID {
    case kAudioFileGlobalInfo_ReadableTypes: outDataSize.pointee = UInt32(readableTypes.count * 4)
    case kAudioFileGlobalInfo_WritableTypes: outDataSize.pointee = UInt32(writableTypeIDs.count * 4)
    default: return extraGlobalInfoSize(inPropertyID, inSpecifierSize, inSpecifier, outDataSize) ?? kAudioFileUnsupportedPropertyError
    }
    return noErr
}

/// Reads a global property (Apple's `AudioFileGetGlobalInfo`).
@discardableResult @_disfavoredOverload
public func AudioFileGetGlobalInfo(_ inPropertyID: AudioFilePropertyID, _ inSpecifierSize: UInt32, _ inSpecifier: UnsafeMutableRawPointer?,
                                   _ ioDataSize: UnsafeMutablePointer<UInt32>, _ outPropertyData: UnsafeMutableRawPointer) -> OSStatus {
    switch inPropertyID {
    case kAudioFileGlobalInfo_ReadableTypes: return writeArray(readableTypes, ioDataSize, outPropertyData)
    case kAudioFileGlobalInfo_WritableTypes: return writeArray(writableTypeIDs, ioDataSize, outPropertyData)
    default: return extraGlobalInfo(inPropertyID, inSpecifierSize, inSpecifier, ioDataSize, outPropertyData) ?? kAudioFileUnsupportedPropertyError
    }
}
