// Audio Toolbox–compatible AudioFile extras: callbacks instead of URLs, AudioFileWriteBytes,
// AudioFileOptimize, user data, and the common global info keys.

import OATCore
import OATFiles
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

// MARK: - Callbacks

/// Reads `requestCount` bytes at `inPosition` into `buffer`, setting `*actualCount` (Apple's
/// `AudioFile_ReadProc`, a C function type as on Apple).
public typealias AudioFile_ReadProc = @convention(c) (_ inClientData: UnsafeMutableRawPointer, _ inPosition: Int64, _ requestCount: UInt32,
                                       _ buffer: UnsafeMutableRawPointer, _ actualCount: UnsafeMutablePointer<UInt32>) -> OSStatus
/// Writes `requestCount` bytes at `inPosition` (Apple's `AudioFile_WriteProc`).
public typealias AudioFile_WriteProc = @convention(c) (_ inClientData: UnsafeMutableRawPointer, _ inPosition: Int64, _ requestCount: UInt32,
                                        _ buffer: UnsafeRawPointer, _ actualCount: UnsafeMutablePointer<UInt32>) -> OSStatus
/// The data's size in bytes (Apple's `AudioFile_GetSizeProc`).
public typealias AudioFile_GetSizeProc = @convention(c) (_ inClientData: UnsafeMutableRawPointer) -> Int64
/// Sets the data's size (Apple's `AudioFile_SetSizeProc`).
public typealias AudioFile_SetSizeProc = @convention(c) (_ inClientData: UnsafeMutableRawPointer, _ inSize: Int64) -> OSStatus

/// A temporary file for the callback variants.
private func temporaryPath() -> String { "/tmp/oat-afcb-\(getpid())-\(UInt64.random(in: 0...UInt64.max))" }

/// Opens audio data that `inReadFunc` reads (Apple's `AudioFileOpenWithCallbacks`). Different:
/// the whole data (`inGetSizeFunc` bytes) is read through the callback once, at open, into an
/// unlinked temporary file; reads then come from there. Writing (`inWriteFunc`) is not
/// supported on opened data, as with `AudioFileOpenURL`.
@discardableResult
public func AudioFileOpenWithCallbacks(_ inClientData: UnsafeMutableRawPointer, _ inReadFunc: AudioFile_ReadProc,
                                       _ inWriteFunc: AudioFile_WriteProc?, _ inGetSizeFunc: AudioFile_GetSizeProc,
                                       _ inSetSizeFunc: AudioFile_SetSizeProc?, _ inFileTypeHint: AudioFileTypeID,
                                       _ outAudioFile: UnsafeMutablePointer<AudioFileID?>) -> OSStatus {
    let size = inGetSizeFunc(inClientData)
    guard size > 0 else { return kAudioFileInvalidFileError }
    let path = temporaryPath()
    let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
    guard fd >= 0 else { return kAudioFilePermissionsError }
    defer { unlink(path) }
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    var position: Int64 = 0
    while position < size {
        var got: UInt32 = 0
        let want = UInt32(min(Int64(chunk.count), size - position))
        let status = chunk.withUnsafeMutableBytes { inReadFunc(inClientData, position, want, $0.baseAddress!, &got) }
        guard status == noErr || status == kAudioFileEndOfFileError else { close(fd); return status }
        if got == 0 { break }
        let wrote = chunk.withUnsafeBytes { write(fd, $0.baseAddress!, Int(got)) }
        guard wrote == Int(got) else { close(fd); return kAudioFilePermissionsError }
        position += Int64(got)
    }
    close(fd)
    return AudioFileOpenURL(URL(fileURLWithPath: path), .readPermission, inFileTypeHint, outAudioFile)
}

/// Creates audio data written through `inWriteFunc` (Apple's `AudioFileInitializeWithCallbacks`):
/// packets and properties as with ``AudioFileCreateWithURL(_:_:_:_:_:)``. Different: the file is
/// built in a temporary file and handed to `inSetSizeFunc` and `inWriteFunc` (from position 0)
/// when it is closed with ``AudioFileClose(_:)``.
@discardableResult
public func AudioFileInitializeWithCallbacks(_ inClientData: UnsafeMutableRawPointer, _ inReadFunc: AudioFile_ReadProc,
                                             _ inWriteFunc: AudioFile_WriteProc, _ inGetSizeFunc: AudioFile_GetSizeProc,
                                             _ inSetSizeFunc: AudioFile_SetSizeProc, _ inFileType: AudioFileTypeID,
                                             _ inFormat: UnsafePointer<AudioStreamBasicDescription>, _ inFlags: AudioFileFlags,
                                             _ outAudioFile: UnsafeMutablePointer<AudioFileID?>) -> OSStatus {
    let path = temporaryPath()
    let status = AudioFileCreateWithURL(URL(fileURLWithPath: path), inFileType, inFormat, inFlags, outAudioFile)
    guard status == noErr, let id = outAudioFile.pointee, let w = CompatFileWriter.from(id) else { unlink(path); return status }
    let client = UncheckedSendable(inClientData)
    w.finish = { path in
        defer { unlink(path) }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return kAudioFileUnspecifiedError }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return kAudioFileUnspecifiedError }
        let s = inSetSizeFunc(client.value, Int64(st.st_size))
        guard s == noErr else { return s }
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        var position: Int64 = 0
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if n <= 0 { break }
            var wrote: UInt32 = 0
            let status = chunk.withUnsafeBytes { inWriteFunc(client.value, position, UInt32(n), $0.baseAddress!, &wrote) }
            guard status == noErr, wrote == UInt32(n) else { return status == noErr ? kAudioFileUnspecifiedError : status }
            position += Int64(n)
        }
        return noErr
    }
    _ = inReadFunc
    _ = inGetSizeFunc
    return noErr
}

// MARK: - Writing bytes, optimizing

/// Writes audio data bytes of a PCM file being created (Apple's `AudioFileWriteBytes`): the
/// bytes are in the file's data format and `inStartingByte` is relative to the audio data.
/// Different: data is appended (`inStartingByte` must be the current audio data size, else
/// `kAudioFilePositionError`) and only whole frames are written (`*ioNumBytes` says how many
/// bytes were). Encoded formats need packets: `kAudioFileOperationNotSupportedError`; files
/// opened for reading: `kAudioFilePermissionsError`.
@discardableResult
public func AudioFileWriteBytes(_ inAudioFile: AudioFileID, _ inUseCache: Bool, _ inStartingByte: Int64,
                                _ ioNumBytes: UnsafeMutablePointer<UInt32>, _ inBuffer: UnsafeRawPointer) -> OSStatus {
    guard let w = CompatFileWriter.from(inAudioFile) else {
        ioNumBytes.pointee = 0
        return CompatAudioFile.from(inAudioFile) != nil ? kAudioFilePermissionsError : kAudio_ParamError
    }
    guard w.format.isPCM, w.format.bytesPerPacket > 0 else { ioNumBytes.pointee = 0; return kAudioFileOperationNotSupportedError }
    let written = w.lock.withLock { _ in w.writer?.audioDataByteCount ?? 0 }
    guard inStartingByte == written else { ioNumBytes.pointee = 0; return kAudioFilePositionError }
    var packets = ioNumBytes.pointee / w.format.bytesPerPacket
    let bytes = packets * w.format.bytesPerPacket
    guard packets > 0 else { ioNumBytes.pointee = 0; return noErr }
    let status = AudioFileWritePackets(inAudioFile, inUseCache, bytes, nil, inStartingByte / Int64(w.format.bytesPerPacket), &packets, inBuffer)
    ioNumBytes.pointee = status == noErr ? packets * w.format.bytesPerPacket : 0
    return status
}

/// Moves the audio data to its final place (Apple's `AudioFileOptimize`). Different: files are
/// written in their final layout when closed and files read are not changed, so there is
/// nothing to do: `noErr`.
@discardableResult
public func AudioFileOptimize(_ inAudioFile: AudioFileID) -> OSStatus {
    CompatFileWriter.from(inAudioFile) != nil || CompatAudioFile.from(inAudioFile) != nil ? noErr : kAudio_ParamError
}

// MARK: - User data

/// The number of user data chunks of type `inUserDataID` (Apple's `AudioFileCountUserData`).
/// Different: chunks are not exposed here: always 0.
@discardableResult
public func AudioFileCountUserData(_ inAudioFile: AudioFileID, _ inUserDataID: UInt32, _ outNumberItems: UnsafeMutablePointer<UInt32>) -> OSStatus {
    outNumberItems.pointee = 0
    return noErr
}

/// The size of a user data chunk (Apple's `AudioFileGetUserDataSize`): there are none here,
/// `kAudioFileInvalidChunkError`.
@discardableResult
public func AudioFileGetUserDataSize(_ inAudioFile: AudioFileID, _ inUserDataID: UInt32, _ inIndex: UInt32,
                                     _ outUserDataSize: UnsafeMutablePointer<UInt32>) -> OSStatus {
    outUserDataSize.pointee = 0
    return kAudioFileInvalidChunkError
}

/// The size of a user data chunk, 64-bit (Apple's `AudioFileGetUserDataSize64`):
/// `kAudioFileInvalidChunkError`.
@discardableResult
public func AudioFileGetUserDataSize64(_ inAudioFile: AudioFileID, _ inUserDataID: UInt32, _ inIndex: UInt32,
                                       _ outUserDataSize: UnsafeMutablePointer<UInt64>) -> OSStatus {
    outUserDataSize.pointee = 0
    return kAudioFileInvalidChunkError
}

/// Reads a user data chunk (Apple's `AudioFileGetUserData`): `kAudioFileInvalidChunkError`.
@discardableResult
public func AudioFileGetUserData(_ inAudioFile: AudioFileID, _ inUserDataID: UInt32, _ inIndex: UInt32,
                                 _ ioUserDataSize: UnsafeMutablePointer<UInt32>, _ outUserData: UnsafeMutableRawPointer) -> OSStatus {
    ioUserDataSize.pointee = 0
    return kAudioFileInvalidChunkError
}

/// Reads part of a user data chunk (Apple's `AudioFileGetUserDataAtOffset`):
/// `kAudioFileInvalidChunkError`.
@discardableResult
public func AudioFileGetUserDataAtOffset(_ inAudioFile: AudioFileID, _ inUserDataID: UInt32, _ inIndex: UInt32, _ inOffset: Int64,
                                         _ ioUserDataSize: UnsafeMutablePointer<UInt32>, _ outUserData: UnsafeMutableRawPointer) -> OSStatus {
    ioUserDataSize.pointee = 0
    return kAudioFileInvalidChunkError
}

/// Adds or replaces a user data chunk (Apple's `AudioFileSetUserData`). Different: the writers
/// here write only their own chunks: `kAudioFileOperationNotSupportedError`.
@discardableResult
public func AudioFileSetUserData(_ inAudioFile: AudioFileID, _ inUserDataID: UInt32, _ inIndex: UInt32, _ inUserDataSize: UInt32,
                                 _ inUserData: UnsafeRawPointer) -> OSStatus {
    CompatAudioFile.from(inAudioFile) != nil ? kAudioFilePermissionsError : kAudioFileOperationNotSupportedError
}

/// Removes a user data chunk (Apple's `AudioFileRemoveUserData`): `kAudioFileOperationNotSupportedError`.
@discardableResult
public func AudioFileRemoveUserData(_ inAudioFile: AudioFileID, _ inUserDataID: UInt32, _ inIndex: UInt32) -> OSStatus {
    CompatAudioFile.from(inAudioFile) != nil ? kAudioFilePermissionsError : kAudioFileOperationNotSupportedError
}

/// Whether reading needs to go in order (`'rrap'`, `UInt32`): 0 for files, which are read
/// at any packet.
public let kAudioFilePropertyRestrictsRandomAccess: AudioFilePropertyID = fourCC("rrap")
/// Bytes of a range of packets (`'prub'`, an ``AudioPacketRangeByteCountTranslation`` in/out):
/// exact here, from the packet index.
public let kAudioFilePropertyPacketRangeByteCountUpperBound: AudioFilePropertyID = fourCC("prub")
/// Offset of the file's ID3 tag (`'id3o'`, `Int64`).
public let kAudioFilePropertyID3TagOffset: AudioFilePropertyID = fourCC("id3o")

/// Where the file's ID3 tag starts: 0 for an ID3v2 tag at the start of the file, else the
/// ID3v1 tag in its last 128 bytes; nil when the file has neither.
func id3TagOffset(_ f: AudioFile) -> Int64? {
    if let head = try? f.readBytes(at: 0, count: 3), head == Array("ID3".utf8) { return 0 }
    if f.fileSize >= 128, let tail = try? f.readBytes(at: f.fileSize - 128, count: 3), tail == Array("TAG".utf8) { return f.fileSize - 128 }
    return nil
}

/// A packet range and the most bytes it may take (Apple's `AudioPacketRangeByteCountTranslation`).
public struct AudioPacketRangeByteCountTranslation: Hashable, Sendable {
    /// First packet.
    public var mPacket: Int64
    /// Number of packets.
    public var mPacketCount: Int64
    /// The bytes they take at most (out).
    public var mByteCountUpperBound: Int64
    /// A zeroed value.
    public init() { self.init(mPacket: 0, mPacketCount: 0, mByteCountUpperBound: 0) }
    /// Apple's memberwise initialiser.
    public init(mPacket: Int64, mPacketCount: Int64, mByteCountUpperBound: Int64) {
        self.mPacket = mPacket
        self.mPacketCount = mPacketCount
        self.mByteCountUpperBound = mByteCountUpperBound
    }
}

/// Chunk IDs (`'chid'`): not available here.
public let kAudioFilePropertyChunkIDs: AudioFilePropertyID = fourCC("chid")
/// The ID3 tag bytes (`'id3 '`): not available here (Swift API: `infoDictionary`).
public let kAudioFilePropertyID3Tag: AudioFilePropertyID = fourCC("id3 ")
/// The data format's name (`'fnme'`): not available here.
public let kAudioFilePropertyDataFormatName: AudioFilePropertyID = fourCC("fnme")
/// Reserve duration (`'rsrv'`): not available here.
public let kAudioFilePropertyReserveDuration: AudioFilePropertyID = fourCC("rsrv")
/// Album artwork (`'aart'`): not available here.
public let kAudioFilePropertyAlbumArtwork: AudioFilePropertyID = fourCC("aart")
/// The audio track to use (`'uatk'`): not available here (the first track is used).
public let kAudioFilePropertyUseAudioTrack: AudioFilePropertyID = fourCC("uatk")

/// The empty marker or region list's header bytes (time type 0, count 0): what a file being
/// written answers for MarkerList and RegionList. Nil for other properties.
func emptyListProperty(_ id: AudioFilePropertyID) -> CPropertyValue? {
    id == kAudioFilePropertyMarkerList || id == kAudioFilePropertyRegionList ? .bytes([UInt8](repeating: 0, count: 8)) : nil
}

// MARK: - Global info

/// Name of a file type (`'ftnm'`; specifier `AudioFileTypeID`; a `CFString`).
public let kAudioFileGlobalInfo_FileTypeName: AudioFilePropertyID = fourCC("ftnm")
/// Stream descriptions a file type can hold for a format (`'sdid'`; specifier
/// `AudioFileTypeAndFormatID`; array of `AudioStreamBasicDescription`).
public let kAudioFileGlobalInfo_AvailableStreamDescriptionsForFormat: AudioFilePropertyID = fourCC("sdid")
/// Formats a file type can hold (`'fmid'`; specifier `AudioFileTypeID`; array of `AudioFormatID`).
public let kAudioFileGlobalInfo_AvailableFormatIDs: AudioFilePropertyID = fourCC("fmid")
/// Every extension (`'alxt'`; a `CFArray` of `CFString`).
public let kAudioFileGlobalInfo_AllExtensions: AudioFilePropertyID = fourCC("alxt")
/// Every UTI (`'auti'`; a `CFArray` of `CFString`).
public let kAudioFileGlobalInfo_AllUTIs: AudioFilePropertyID = fourCC("auti")
/// Every MIME type (`'amim'`; a `CFArray` of `CFString`).
public let kAudioFileGlobalInfo_AllMIMETypes: AudioFilePropertyID = fourCC("amim")
/// Extensions of a file type (`'fext'`; specifier `AudioFileTypeID`; a `CFArray` of `CFString`).
public let kAudioFileGlobalInfo_ExtensionsForType: AudioFilePropertyID = fourCC("fext")
/// UTIs of a file type (`'futi'`; specifier `AudioFileTypeID`; a `CFArray` of `CFString`).
public let kAudioFileGlobalInfo_UTIsForType: AudioFilePropertyID = fourCC("futi")
/// MIME types of a file type (`'fmim'`; specifier `AudioFileTypeID`; a `CFArray` of `CFString`).
public let kAudioFileGlobalInfo_MIMETypesForType: AudioFilePropertyID = fourCC("fmim")
/// File types for an extension (`'text'`; specifier `CFString`; array of `AudioFileTypeID`).
public let kAudioFileGlobalInfo_TypesForExtension: AudioFilePropertyID = fourCC("text")
/// File types for a MIME type (`'tmim'`; specifier `CFString`; array of `AudioFileTypeID`).
public let kAudioFileGlobalInfo_TypesForMIMEType: AudioFilePropertyID = fourCC("tmim")
/// All HFS type codes (`'ahfs'`; array of `OSType`). Empty here: Linux files carry no HFS
/// type codes.
public let kAudioFileGlobalInfo_AllHFSTypeCodes: AudioFilePropertyID = fourCC("ahfs")
/// HFS type codes of a file type (`'fhfs'`; specifier `AudioFileTypeID`; array of `OSType`).
/// Empty here (no HFS type codes on Linux).
public let kAudioFileGlobalInfo_HFSTypeCodesForType: AudioFilePropertyID = fourCC("fhfs")
/// File types of an HFS type code (`'thfs'`; specifier `OSType`; array of `AudioFileTypeID`).
/// Empty here (no HFS type codes on Linux).
public let kAudioFileGlobalInfo_TypesForHFSTypeCode: AudioFilePropertyID = fourCC("thfs")
/// File types for a UTI (`'tuti'`; specifier `CFString`; array of `AudioFileTypeID`).
public let kAudioFileGlobalInfo_TypesForUTI: AudioFilePropertyID = fourCC("tuti")

/// A file type and a format (Apple's `AudioFileTypeAndFormatID`), the specifier of
/// ``kAudioFileGlobalInfo_AvailableStreamDescriptionsForFormat``.
public struct AudioFileTypeAndFormatID: Hashable, Sendable {
    /// The file type.
    public var mFileType: AudioFileTypeID
    /// The format.
    public var mFormatID: AudioFormatID
    /// A zeroed value.
    public init() { self.init(mFileType: 0, mFormatID: 0) }
    /// Apple's memberwise initialiser.
    public init(mFileType: AudioFileTypeID, mFormatID: AudioFormatID) {
        self.mFileType = mFileType
        self.mFormatID = mFormatID
    }
}

/// Apple's `CFArray` stand-in for the global info keys that answer lists of strings: an array
/// of `CFString` (`String`). Pass `&array` (of type `CFArray?`) and
/// `UInt32(MemoryLayout<CFArray>.size)`.
public typealias CFArray = [CFString]

private struct FileTypeInfo {
    let type: AudioFileTypeID
    let name: String
    let extensions: [String]
    let mimeTypes: [String]
    let utis: [String]
}

private let fileTypeInfo: [FileTypeInfo] = [
    FileTypeInfo(type: kAudioFileAIFFType, name: "AIFF", extensions: ["aif", "aiff"], mimeTypes: ["audio/aiff", "audio/x-aiff"], utis: ["public.aiff-audio"]),
    FileTypeInfo(type: kAudioFileAIFCType, name: "AIFC", extensions: ["aifc", "aiff", "aif"], mimeTypes: ["audio/aiff", "audio/x-aiff"], utis: ["public.aifc-audio"]),
    FileTypeInfo(type: kAudioFileWAVEType, name: "WAVE", extensions: ["wav", "wave"], mimeTypes: ["audio/wav", "audio/x-wav", "audio/vnd.wave"],
                 utis: ["com.microsoft.waveform-audio"]),
    FileTypeInfo(type: kAudioFileRF64Type, name: "RF64", extensions: ["wav", "rf64"], mimeTypes: ["audio/wav"], utis: ["com.microsoft.waveform-audio"]),
    FileTypeInfo(type: kAudioFileCAFType, name: "CAF", extensions: ["caf"], mimeTypes: ["audio/x-caf"], utis: ["com.apple.coreaudio-format"]),
    FileTypeInfo(type: kAudioFileM4AType, name: "Apple MPEG-4 Audio", extensions: ["m4a", "m4r"], mimeTypes: ["audio/mp4", "audio/x-m4a"],
                 utis: ["com.apple.m4a-audio"]),
    FileTypeInfo(type: kAudioFileMPEG4Type, name: "MPEG-4 Audio", extensions: ["mp4"], mimeTypes: ["audio/mp4"], utis: ["public.mpeg-4-audio"]),
    FileTypeInfo(type: kAudioFileAAC_ADTSType, name: "AAC ADTS", extensions: ["aac", "adts"], mimeTypes: ["audio/aac", "audio/x-aac"],
                 utis: ["public.aac-audio"]),
    FileTypeInfo(type: kAudioFileMP3Type, name: "MPEG Layer 3", extensions: ["mp3"], mimeTypes: ["audio/mpeg", "audio/mpeg3", "audio/mp3"], utis: ["public.mp3"]),
    FileTypeInfo(type: kAudioFileMP2Type, name: "MPEG Layer 2", extensions: ["mp2"], mimeTypes: ["audio/mpeg"], utis: ["public.mp2"]),
    FileTypeInfo(type: kAudioFileMP1Type, name: "MPEG Layer 1", extensions: ["mp1"], mimeTypes: ["audio/mpeg"], utis: ["public.mp1"]),
    FileTypeInfo(type: kAudioFileFLACType, name: "FLAC", extensions: ["flac"], mimeTypes: ["audio/flac"], utis: ["org.xiph.flac"]),
    FileTypeInfo(type: kAudioFileNextType, name: "NeXT/Sun", extensions: ["snd", "au"], mimeTypes: ["audio/basic"], utis: ["public.ulaw-audio"]),
    FileTypeInfo(type: AudioFileType.ogg.rawValue, name: "Ogg", extensions: ["ogg", "opus"], mimeTypes: ["audio/ogg"], utis: ["org.xiph.ogg-audio"]),
]

/// A representative stream description of `format` (stereo 44.1 kHz; 48 kHz for Opus) and,
/// for PCM, every sample layout a container may hold.
private func candidateDescriptions(_ format: AudioFormatID) -> [AudioStreamBasicDescription] {
    func compressed(_ rate: Double, _ fpp: UInt32) -> AudioStreamBasicDescription {
        AudioStreamBasicDescription(mSampleRate: rate, mFormatID: format, mFormatFlags: 0, mBytesPerPacket: 0, mFramesPerPacket: fpp,
                                    mBytesPerFrame: 0, mChannelsPerFrame: 2, mBitsPerChannel: 0, mReserved: 0)
    }
    switch format {
    case kAudioFormatLinearPCM:
        var out: [AudioStreamBasicDescription] = []
        for (bits, float) in [(8, false), (16, false), (24, false), (32, false), (32, true), (64, true)] {
            for bigEndian in [false, true] {
                let bytes = UInt32(bits / 8)
                var flags = float ? kAudioFormatFlagIsFloat : kAudioFormatFlagIsSignedInteger
                flags |= kAudioFormatFlagIsPacked | (bigEndian && bits > 8 ? kAudioFormatFlagIsBigEndian : 0)
                out.append(AudioStreamBasicDescription(mSampleRate: 44100, mFormatID: format, mFormatFlags: flags, mBytesPerPacket: bytes * 2,
                                                       mFramesPerPacket: 1, mBytesPerFrame: bytes * 2, mChannelsPerFrame: 2, mBitsPerChannel: UInt32(bits), mReserved: 0))
                if bits == 8 {
                    out.append(AudioStreamBasicDescription(mSampleRate: 44100, mFormatID: format, mFormatFlags: kAudioFormatFlagIsPacked, mBytesPerPacket: 2,
                                                           mFramesPerPacket: 1, mBytesPerFrame: 2, mChannelsPerFrame: 2, mBitsPerChannel: 8, mReserved: 0))
                    break
                }
            }
        }
        return out
    case kAudioFormatULaw, kAudioFormatALaw:
        return [AudioStreamBasicDescription(mSampleRate: 8000, mFormatID: format, mFormatFlags: 0, mBytesPerPacket: 2, mFramesPerPacket: 1,
                                            mBytesPerFrame: 2, mChannelsPerFrame: 2, mBitsPerChannel: 8, mReserved: 0)]
    case kAudioFormatMPEG4AAC: return [compressed(44100, 1024)]
    case kAudioFormatAppleLossless: return [compressed(44100, 4096)]
    case kAudioFormatFLAC: return [compressed(44100, 4096)]
    case kAudioFormatOpus: return [compressed(48000, 960)]
    case kAudioFormatMPEGLayer3: return [compressed(44100, 1152)]
    default: return []
    }
}

private let candidateFormats: [AudioFormatID] = [kAudioFormatLinearPCM, kAudioFormatMPEG4AAC, kAudioFormatAppleLossless, kAudioFormatFLAC,
                                                 kAudioFormatOpus, kAudioFormatMPEGLayer3, kAudioFormatULaw, kAudioFormatALaw]

/// The stream descriptions a writable file type holds for `format` (checked with the writer).
private func writableDescriptions(_ type: AudioFileTypeID, _ format: AudioFormatID) -> [AudioStreamBasicDescription] {
    let t = AudioFileType(rawValue: type)
    guard AudioFileWriter.writableTypes.contains(t) else { return [] }
    return candidateDescriptions(format).filter { d in
        do throws(AudioError) { try AudioFileWriter.check(d, in: t); return true } catch { return false }
    }
}

/// The value of a global info key beyond ReadableTypes/WritableTypes, or nil when unknown.
private enum GlobalValue {
    case ids([UInt32])
    case descriptions([AudioStreamBasicDescription])
    case string(String)
    case strings([String])
}

private func unique(_ list: [String]) -> [String] {
    var seen = Set<String>()
    return list.filter { seen.insert($0).inserted }
}

private func globalInfo(_ id: AudioFilePropertyID, _ size: UInt32, _ specifier: UnsafeMutableRawPointer?) -> Result<GlobalValue, OSErr>? {
    func typeSpecifier() -> FileTypeInfo? {
        guard let specifier, size >= 4 else { return nil }
        let t = specifier.loadUnaligned(as: UInt32.self)
        return fileTypeInfo.first { $0.type == t }
    }
    func stringSpecifier() -> String? {
        guard let specifier, Int(size) >= MemoryLayout<CFString>.size else { return nil }
        return specifier.assumingMemoryBound(to: CFString.self).pointee
    }
    let badType = Result<GlobalValue, OSErr>.failure(OSErr(kAudioFileUnsupportedFileTypeError))
    switch id {
    case kAudioFileGlobalInfo_FileTypeName: return typeSpecifier().map { .success(.string($0.name)) } ?? badType
    case kAudioFileGlobalInfo_ExtensionsForType: return typeSpecifier().map { .success(.strings($0.extensions)) } ?? badType
    case kAudioFileGlobalInfo_MIMETypesForType: return typeSpecifier().map { .success(.strings($0.mimeTypes)) } ?? badType
    case kAudioFileGlobalInfo_UTIsForType: return typeSpecifier().map { .success(.strings($0.utis)) } ?? badType
    case kAudioFileGlobalInfo_AllExtensions: return .success(.strings(unique(fileTypeInfo.flatMap(\.extensions))))
    case kAudioFileGlobalInfo_AllMIMETypes: return .success(.strings(unique(fileTypeInfo.flatMap(\.mimeTypes))))
    case kAudioFileGlobalInfo_AllUTIs: return .success(.strings(unique(fileTypeInfo.flatMap(\.utis))))
    case kAudioFileGlobalInfo_AllHFSTypeCodes: return .success(.ids([]))
    case kAudioFileGlobalInfo_HFSTypeCodesForType: return typeSpecifier().map { _ in .success(.ids([])) } ?? badType
    case kAudioFileGlobalInfo_TypesForHFSTypeCode:
        guard specifier != nil, size >= 4 else { return .failure(OSErr(kAudioFileBadPropertySizeError)) }
        return .success(.ids([]))
    case kAudioFileGlobalInfo_TypesForExtension, kAudioFileGlobalInfo_TypesForMIMEType, kAudioFileGlobalInfo_TypesForUTI:
        guard let s = stringSpecifier()?.lowercased() else { return .failure(OSErr(kAudioFileBadPropertySizeError)) }
        let types = fileTypeInfo.filter { info in
            switch id {
            case kAudioFileGlobalInfo_TypesForExtension: info.extensions.contains(s)
            case kAudioFileGlobalInfo_TypesForMIMEType: info.mimeTypes.contains(s)
            default: info.utis.contains(s)
            }
        }.map(\.type)
        return .success(.ids(types))
    case kAudioFileGlobalInfo_AvailableFormatIDs:
        guard let info = typeSpecifier() else { return badType }
        let formats = candidateFormats.filter { !writableDescriptions(info.type, $0).isEmpty }
        return formats.isEmpty ? badType : .success(.ids(formats))
    case kAudioFileGlobalInfo_AvailableStreamDescriptionsForFormat:
        guard let specifier, Int(size) >= MemoryLayout<AudioFileTypeAndFormatID>.size else { return .failure(OSErr(kAudioFileBadPropertySizeError)) }
        let pair = specifier.loadUnaligned(as: AudioFileTypeAndFormatID.self)
        guard fileTypeInfo.contains(where: { $0.type == pair.mFileType }) else { return badType }
        let list = writableDescriptions(pair.mFileType, pair.mFormatID)
        return list.isEmpty ? .failure(OSErr(kAudioFileUnsupportedDataFormatError)) : .success(.descriptions(list))
    default:
        return nil
    }
}

/// Size of the common global info keys (``AudioFileGetGlobalInfoSize(_:_:_:_:)``); nil for
/// keys not handled here.
func extraGlobalInfoSize(_ id: AudioFilePropertyID, _ size: UInt32, _ specifier: UnsafeMutableRawPointer?,
                         _ outSize: UnsafeMutablePointer<UInt32>) -> OSStatus? {
    guard let r = globalInfo(id, size, specifier) else { return nil }
    switch r {
    case .failure(let e): return e.status
    case .success(.ids(let l)): outSize.pointee = UInt32(l.count * 4)
    case .success(.descriptions(let l)): outSize.pointee = UInt32(l.count * MemoryLayout<AudioStreamBasicDescription>.stride)
    case .success(.string): outSize.pointee = UInt32(MemoryLayout<CFString>.size)
    case .success(.strings): outSize.pointee = UInt32(MemoryLayout<CFArray>.size)
    }
    return noErr
}

/// Reads the common global info keys (``AudioFileGetGlobalInfo(_:_:_:_:_:)``); nil for keys
/// not handled here. Strings and string lists are stored as `CFString?` / `CFArray?` (Swift
/// `String` / `[String]`) into the caller's variable.
func extraGlobalInfo(_ id: AudioFilePropertyID, _ size: UInt32, _ specifier: UnsafeMutableRawPointer?,
                     _ ioSize: UnsafeMutablePointer<UInt32>, _ out: UnsafeMutableRawPointer) -> OSStatus? {
    guard let r = globalInfo(id, size, specifier) else { return nil }
    switch r {
    case .failure(let e): return e.status
    case .success(.ids(let l)): return writeArray(l, ioSize, out)
    case .success(.descriptions(let l)): return writeArray(l, ioSize, out)
    case .success(.string(let s)):
        guard Int(ioSize.pointee) >= MemoryLayout<CFString>.size else { return kAudioFileBadPropertySizeError }
        out.assumingMemoryBound(to: CFString?.self).pointee = s
        ioSize.pointee = UInt32(MemoryLayout<CFString>.size)
        return noErr
    case .success(.strings(let l)):
        guard Int(ioSize.pointee) >= MemoryLayout<CFArray>.size else { return kAudioFileBadPropertySizeError }
        out.assumingMemoryBound(to: CFArray?.self).pointee = l
        ioSize.pointee = UInt32(MemoryLayout<CFArray>.size)
        return noErr
    }
}

// MARK: - Typed overloads for the string keys

/// ``AudioFileGetGlobalInfo(_:_:_:_:_:)`` into a `CFArray?` (the string-list keys): `&array`
/// picks this overload, as a Swift array may not be passed as raw memory.
@discardableResult
public func AudioFileGetGlobalInfo(_ inPropertyID: AudioFilePropertyID, _ inSpecifierSize: UInt32, _ inSpecifier: UnsafeMutableRawPointer?,
                                   _ ioDataSize: UnsafeMutablePointer<UInt32>, _ outPropertyData: UnsafeMutablePointer<CFArray?>) -> OSStatus {
    AudioFileGetGlobalInfo(inPropertyID, inSpecifierSize, inSpecifier, ioDataSize, UnsafeMutableRawPointer(outPropertyData))
}

/// ``AudioFileGetGlobalInfo(_:_:_:_:_:)`` into a `CFString?` (`FileTypeName`).
@discardableResult
public func AudioFileGetGlobalInfo(_ inPropertyID: AudioFilePropertyID, _ inSpecifierSize: UInt32, _ inSpecifier: UnsafeMutableRawPointer?,
                                   _ ioDataSize: UnsafeMutablePointer<UInt32>, _ outPropertyData: UnsafeMutablePointer<CFString?>) -> OSStatus {
    AudioFileGetGlobalInfo(inPropertyID, inSpecifierSize, inSpecifier, ioDataSize, UnsafeMutableRawPointer(outPropertyData))
}

/// ``AudioFileGetGlobalInfo(_:_:_:_:_:)`` with a `CFString` specifier (`TypesForExtension`,
/// `TypesForMIMEType`, `TypesForUTI`).
@discardableResult
public func AudioFileGetGlobalInfo(_ inPropertyID: AudioFilePropertyID, _ inSpecifierSize: UInt32, _ inSpecifier: UnsafeMutablePointer<CFString>,
                                   _ ioDataSize: UnsafeMutablePointer<UInt32>, _ outPropertyData: UnsafeMutableRawPointer) -> OSStatus {
    AudioFileGetGlobalInfo(inPropertyID, inSpecifierSize, UnsafeMutableRawPointer(inSpecifier), ioDataSize, outPropertyData)
}

/// ``AudioFileGetGlobalInfoSize(_:_:_:_:)`` with a `CFString` specifier.
@discardableResult
public func AudioFileGetGlobalInfoSize(_ inPropertyID: AudioFilePropertyID, _ inSpecifierSize: UInt32, _ inSpecifier: UnsafeMutablePointer<CFString>,
                                       _ outDataSize: UnsafeMutablePointer<UInt32>) -> OSStatus {
    AudioFileGetGlobalInfoSize(inPropertyID, inSpecifierSize, UnsafeMutableRawPointer(inSpecifier), outDataSize)
}
