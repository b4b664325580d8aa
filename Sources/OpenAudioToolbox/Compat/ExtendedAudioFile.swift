// Audio Toolbox–compatible Extended Audio File API (ExtAudioFile*), built on the Swift
// ``ExtendedAudioFile`` (reading), `AudioEncoder` and `AudioFileWriter` (writing).

import OATConversion
import OATCore
import OATDevices
import OATFiles
import FoundationEssentials
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// MARK: - Types and constants

/// An open extended audio file (Apple's `ExtAudioFileRef`, an opaque pointer).
public typealias ExtAudioFileRef = OpaquePointer
/// An extended audio file property identifier (Apple's `ExtAudioFilePropertyID`).
public typealias ExtAudioFilePropertyID = UInt32

/// The file's data format, `AudioStreamBasicDescription` (`'ffmt'`); settable on a new file
/// before the first write.
public let kExtAudioFileProperty_FileDataFormat: ExtAudioFilePropertyID = fourCC("ffmt")
/// The file's channel layout, `AudioChannelLayout` (`'fclo'`); settable on a new file before the
/// first write.
public let kExtAudioFileProperty_FileChannelLayout: ExtAudioFilePropertyID = fourCC("fclo")
/// The PCM format reads deliver and writes take, `AudioStreamBasicDescription` (`'cfmt'`).
public let kExtAudioFileProperty_ClientDataFormat: ExtAudioFilePropertyID = fourCC("cfmt")
/// The client's channel layout, `AudioChannelLayout` (`'cclo'`): accepted when its channel count
/// matches the client format (no remapping).
public let kExtAudioFileProperty_ClientChannelLayout: ExtAudioFilePropertyID = fourCC("cclo")
/// The codec manufacturer, `UInt32` (`'cman'`): accepted, one implementation per format here.
public let kExtAudioFileProperty_CodecManufacturer: ExtAudioFilePropertyID = fourCC("cman")
/// The converter between file and client formats, `AudioConverterRef` (`'acnv'`): set its
/// properties (bit rate, quality), then set ``kExtAudioFileProperty_ConverterConfig`` to apply.
public let kExtAudioFileProperty_AudioConverter: ExtAudioFilePropertyID = fourCC("acnv")
/// The underlying `AudioFileID` (`'afil'`).
public let kExtAudioFileProperty_AudioFile: ExtAudioFilePropertyID = fourCC("afil")
/// The file format's largest packet, `UInt32` (`'fmps'`).
public let kExtAudioFileProperty_FileMaxPacketSize: ExtAudioFilePropertyID = fourCC("fmps")
/// The client format's packet size, `UInt32` (`'cmps'`).
public let kExtAudioFileProperty_ClientMaxPacketSize: ExtAudioFilePropertyID = fourCC("cmps")
/// The file's length in frames of the file's format, `Int64` (`'#frm'`).
public let kExtAudioFileProperty_FileLengthFrames: ExtAudioFilePropertyID = fourCC("#frm")
/// The converter's configuration, a `CFArray?` (`'accf'`): setting it (any value, also nil)
/// applies the settings made on ``kExtAudioFileProperty_AudioConverter``'s converter.
public let kExtAudioFileProperty_ConverterConfig: ExtAudioFilePropertyID = fourCC("accf")
/// The I/O buffer size in bytes, `UInt32` (`'iobs'`): kept, not used.
public let kExtAudioFileProperty_IOBufferSizeBytes: ExtAudioFilePropertyID = fourCC("iobs")
/// The I/O buffer, a pointer (`'iobf'`): not supported here.
public let kExtAudioFileProperty_IOBuffer: ExtAudioFilePropertyID = fourCC("iobf")
/// The packet table, `AudioFilePacketTableInfo` (`'xpti'`).
public let kExtAudioFileProperty_PacketTable: ExtAudioFilePropertyID = fourCC("xpti")

/// Unknown or unsupported property.
public let kExtAudioFileError_InvalidProperty: OSStatus = -66561
/// Wrong property size.
public let kExtAudioFileError_InvalidPropertySize: OSStatus = -66562
/// The client format must be linear PCM.
public let kExtAudioFileError_NonPCMClientFormat: OSStatus = -66563
/// The channel layout does not match the format's channel count.
public let kExtAudioFileError_InvalidChannelMap: OSStatus = -66564
/// The call is not allowed now (e.g. reading a file opened for writing).
public let kExtAudioFileError_InvalidOperationOrder: OSStatus = -66565
/// The data format cannot be used.
public let kExtAudioFileError_InvalidDataFormat: OSStatus = -66566
/// The largest packet size is not known.
public let kExtAudioFileError_MaxPacketSizeUnknown: OSStatus = -66567
/// The seek position is outside the file.
public let kExtAudioFileError_InvalidSeek: OSStatus = -66568
/// An asynchronous write is larger than the buffer.
public let kExtAudioFileError_AsyncWriteTooLarge: OSStatus = -66569
/// An asynchronous write could not be completed in time.
public let kExtAudioFileError_AsyncWriteBufferOverflow: OSStatus = -66570
/// A write was interrupted after its buffer was written (iOS).
public let kExtAudioFileError_CodecUnavailableInputConsumed: OSStatus = -66559
/// A write was interrupted before its buffer was written (iOS).
public let kExtAudioFileError_CodecUnavailableInputNotConsumed: OSStatus = -66560

/// The status an `AudioError` maps to in this API.
func extStatus(_ error: AudioError, _ fallback: OSStatus) -> OSStatus {
    if let s = error.osStatus { return s }
    switch error.code {
    case .unsupportedFormat: return kExtAudioFileError_InvalidDataFormat
    default: return fallback
    }
}

// MARK: - Opening, creating, disposing

/// Opens a file for reading (Apple's `ExtAudioFileOpenURL`). The client data format starts as
/// the file's; set ``kExtAudioFileProperty_ClientDataFormat`` to a PCM format before reading an
/// encoded file.
@discardableResult
public func ExtAudioFileOpenURL(_ inURL: CFURL, _ outExtAudioFile: UnsafeMutablePointer<ExtAudioFileRef?>) -> OSStatus {
    var id: AudioFileID?
    let status = AudioFileOpenURL(inURL, .readPermission, 0, &id)
    guard status == noErr, let id, let box = CompatAudioFile.from(id) else { return status == noErr ? kAudioFileUnspecifiedError : status }
    let ext = CompatExtAudioFile(reading: box.file, id: id, owns: true)
    outExtAudioFile.pointee = CompatHandles.make(ext)
    return noErr
}

/// Wraps an open `AudioFileID` (Apple's `ExtAudioFileWrapAudioFileID`): one opened with
/// `AudioFileOpenURL` for reading (`inForWriting` false), or one created with
/// `AudioFileCreateWithURL` for writing (`inForWriting` true). Disposing of the extended file
/// does not close the `AudioFileID`: close it afterwards (that finishes a written file).
@discardableResult
public func ExtAudioFileWrapAudioFileID(_ inFileID: AudioFileID, _ inForWriting: Bool,
                                        _ outExtAudioFile: UnsafeMutablePointer<ExtAudioFileRef?>) -> OSStatus {
    if inForWriting {
        guard let w = CompatFileWriter.from(inFileID) else {
            return CompatAudioFile.from(inFileID) != nil ? kAudioFilePermissionsError : kAudio_ParamError
        }
        let ext = CompatExtAudioFile(writing: inFileID, format: w.format, owns: false)
        outExtAudioFile.pointee = CompatHandles.make(ext)
        return noErr
    }
    guard let box = CompatAudioFile.from(inFileID) else {
        return CompatFileWriter.isWriter(inFileID) ? kExtAudioFileError_InvalidOperationOrder : kAudio_ParamError
    }
    let ext = CompatExtAudioFile(reading: box.file, id: inFileID, owns: false)
    outExtAudioFile.pointee = CompatHandles.make(ext)
    return noErr
}

/// Creates a file to write (Apple's `ExtAudioFileCreateWithURL`): `inFileType` and the file's
/// data format `inStreamDesc` as ``AudioFileCreateWithURL(_:_:_:_:_:)`` takes them (WAVE, AIFF,
/// AIFC, CAF, M4A, FLAC, Ogg Opus, ADTS, MP3). `inFlags` takes `AudioFileFlags` raw values
/// (`eraseFile`). The client format starts as the file's; set
/// ``kExtAudioFileProperty_ClientDataFormat`` to write PCM into an encoded file.
@discardableResult
public func ExtAudioFileCreateWithURL(_ inURL: CFURL, _ inFileType: AudioFileTypeID, _ inStreamDesc: UnsafePointer<AudioStreamBasicDescription>,
                                      _ inChannelLayout: UnsafePointer<AudioChannelLayout>?, _ inFlags: UInt32,
                                      _ outExtAudioFile: UnsafeMutablePointer<ExtAudioFileRef?>) -> OSStatus {
    var format = inStreamDesc.pointee
    if !format.isPCM && format.framesPerPacket == 0 {
        // Apple fills in the codec's packet size; ours comes from the encoder.
        if let e = try? AudioEncoder(to: format) { format.framesPerPacket = e.outputFormat.framesPerPacket }
    }
    if let inChannelLayout, inChannelLayout.pointee.mChannelLayoutTag != kAudioChannelLayoutTag_UseChannelDescriptions,
       inChannelLayout.pointee.mChannelLayoutTag & 0xFFFF != 0,
       inChannelLayout.pointee.mChannelLayoutTag & 0xFFFF != format.mChannelsPerFrame {
        return kExtAudioFileError_InvalidChannelMap
    }
    var id: AudioFileID?
    let status = AudioFileCreateWithURL(inURL, inFileType, &format, AudioFileFlags(rawValue: inFlags), &id)
    guard status == noErr, let id else { return status }
    let ext = CompatExtAudioFile(writing: id, format: format, owns: true)
    if let inChannelLayout {
        ext.fileLayout = OATCore.ChannelLayout(tag: OATCore.ChannelLayoutTag(rawValue: inChannelLayout.pointee.mChannelLayoutTag))
    }
    outExtAudioFile.pointee = CompatHandles.make(ext)
    return noErr
}

/// Closes the extended file (Apple's `ExtAudioFileDispose`): a file being written is flushed
/// (encoder drained, packet table and cookie written) and, when this API created it, finished.
/// A file already disposed of (a second call, or a stale handle) returns `kAudio_ParamError`.
@discardableResult
public func ExtAudioFileDispose(_ inExtAudioFile: ExtAudioFileRef) -> OSStatus {
    guard let ext = CompatHandles.remove(inExtAudioFile, as: CompatExtAudioFile.self) else { return kAudio_ParamError }
    var status = ext.finishAsync()
    if ext.isWriter {
        do throws(AudioError) {
            try ext.finishWriting()
        } catch {
            status = extStatus(error, kAudioFileUnspecifiedError)
        }
    }
    if let c = ext.converterRef { AudioConverterDispose(c) }
    if ext.ownsFileID, let id = ext.fileID {
        let closed = AudioFileClose(id)
        if status == noErr { status = closed }
    }
    return status
}

// MARK: - Reading, writing, seeking

/// Reads up to `*ioNumberFrames` frames in the client format into `ioData` (Apple's
/// `ExtAudioFileRead`), limited by the buffers' `mDataByteSize`; on return
/// `*ioNumberFrames` holds the frames read (0 at the end of the file) and each buffer's
/// `mDataByteSize` the bytes.
@discardableResult
public func ExtAudioFileRead(_ inExtAudioFile: ExtAudioFileRef, _ ioNumberFrames: UnsafeMutablePointer<UInt32>,
                             _ ioData: UnsafeMutablePointer<AudioBufferList>) -> OSStatus {
    guard let ext = CompatExtAudioFile.from(inExtAudioFile) else { return kAudio_ParamError }
    guard !ext.isWriter else { ioNumberFrames.pointee = 0; return kExtAudioFileError_InvalidOperationOrder }
    let client = ext.clientFormat
    guard client.isPCM else { ioNumberFrames.pointee = 0; return kExtAudioFileError_NonPCMClientFormat }
    let list = UnsafeMutableAudioBufferListPointer(ioData)
    let planes = client.isInterleaved ? 1 : Int(client.channelsPerFrame)
    guard list.count >= planes, client.bytesPerFrame > 0 else { ioNumberFrames.pointee = 0; return kAudio_ParamError }
    let frameBytes = Int(client.bytesPerFrame)
    var wanted = Int(ioNumberFrames.pointee)
    for i in 0..<planes { wanted = min(wanted, Int(list[i].mDataByteSize) / frameBytes) }
    var done = 0
    if let file = ext.file, file.dataFormat.isPCM, client == file.dataFormat, client.isInterleaved, file.packetTableInfo == nil {
        // The client reads the file's own PCM: copy the bytes (exact for every sample layout,
        // including those the converter does not produce, such as packed 24-bit).
        let start = ext.seekBase + ext.readSinceSeek
        let n = Int(max(0, min(Int64(wanted), file.packetCount - start)))
        if n > 0, let dst = list[0].mData {
            do throws(AudioError) {
                let batch = try file.readPackets(start..<(start + Int64(n)))
                let bytes = min(batch.data.count, n * frameBytes)
                batch.data.withUnsafeBytes { dst.copyMemory(from: $0.baseAddress!, byteCount: bytes) }
                done = bytes / frameBytes
            } catch {
                ioNumberFrames.pointee = 0
                return extStatus(error, kAudioFileInvalidFileError)
            }
        }
        ext.readSinceSeek += Int64(done)
        var b = list[0]
        b.mDataByteSize = UInt32(done * frameBytes)
        list[0] = b
        ioNumberFrames.pointee = UInt32(done)
        return noErr
    }
    do throws(AudioError) {
        let reader = try ext.makeReader()
        let swap = nativePCM(client).swap
        while done < wanted {
            let chunk = min(wanted - done, 8192)
            let buffer: AudioPCMBuffer
            if let b = ext.readBuffer, b.frameCapacity == chunk { buffer = b } else {
                buffer = try AudioPCMBuffer(format: reader.clientFormat, frameCapacity: chunk)
                ext.readBuffer = buffer
            }
            let n = try reader.read(into: buffer)
            if n == 0 { break }
            for i in 0..<planes {
                guard let dst = list[i].mData else { continue }
                let target = dst + done * frameBytes
                target.copyMemory(from: buffer.mutableBytes(i).baseAddress!, byteCount: n * frameBytes)
                if swap { reverseSamples(target, bytes: n * frameBytes, width: sampleWidth(client)) }
            }
            done += n
        }
    } catch {
        ioNumberFrames.pointee = UInt32(done)
        return extStatus(error, kAudioFileInvalidFileError)
    }
    ext.readSinceSeek += Int64(done)
    for i in 0..<planes {
        var b = list[i]
        b.mDataByteSize = UInt32(done * frameBytes)
        list[i] = b
    }
    ioNumberFrames.pointee = UInt32(done)
    return noErr
}

/// Writes `inNumberFrames` frames of the client format from `ioData` (Apple's
/// `ExtAudioFileWrite`): converted to the file's format (encoded when it is compressed) and
/// appended.
@discardableResult
public func ExtAudioFileWrite(_ inExtAudioFile: ExtAudioFileRef, _ inNumberFrames: UInt32, _ ioData: UnsafePointer<AudioBufferList>) -> OSStatus {
    guard let ext = CompatExtAudioFile.from(inExtAudioFile) else { return kAudio_ParamError }
    guard ext.isWriter else { return kExtAudioFileError_InvalidOperationOrder }
    // Frames queued by ExtAudioFileWriteAsync go first.
    let pending = ext.finishAsync()
    if pending != noErr { return pending }
    let list = UnsafeMutableAudioBufferListPointer(UnsafeMutablePointer(mutating: ioData))
    let planes = ext.clientFormat.isInterleaved ? 1 : Int(ext.clientFormat.channelsPerFrame)
    guard list.count >= planes else { return kAudio_ParamError }
    do throws(AudioError) {
        try ext.write(frames: Int(inNumberFrames), list: list)
        return noErr
    } catch {
        return extStatus(error, kAudioFileUnspecifiedError)
    }
}

/// Writes without blocking (Apple's `ExtAudioFileWriteAsync`): the frames are copied into a
/// lock-free buffer (no allocation or locks: callable from a render callback) and a writer
/// thread encodes and writes them. The first call (0 frames or nil data, as Apple's set-up call)
/// starts the thread; the buffer holds `kExtAudioFileProperty_IOBufferSizeBytes` bytes (at
/// least 4096 frames). A write that does not fit returns
/// `kExtAudioFileError_AsyncWriteBufferOverflow`, one larger than the buffer
/// `kExtAudioFileError_AsyncWriteTooLarge`; the thread's own errors come back from a later call
/// or from ``ExtAudioFileDispose(_:)``.
@discardableResult
public func ExtAudioFileWriteAsync(_ inExtAudioFile: ExtAudioFileRef, _ inNumberFrames: UInt32, _ ioData: UnsafePointer<AudioBufferList>?) -> OSStatus {
    guard let ext = CompatExtAudioFile.from(inExtAudioFile) else { return kAudio_ParamError }
    guard ext.isWriter else { return kExtAudioFileError_InvalidOperationOrder }
    if ext.async == nil {
        do throws(AudioError) {
            _ = try ext.makeEncoder()
            ext.started = true
            ext.async = try CompatAsyncWriter(ext, capacityBytes: Int(ext.ioBufferSize))
        } catch {
            return extStatus(error, kAudioFileUnspecifiedError)
        }
    }
    guard let ioData, inNumberFrames > 0, let writer = ext.async else { return noErr }
    let list = UnsafeMutableAudioBufferListPointer(UnsafeMutablePointer(mutating: ioData))
    return writer.push(frames: Int(inNumberFrames), list: list)
}

/// Moves the read position to file frame `inFrameOffset` (in the file's sample rate, as Apple;
/// Apple's `ExtAudioFileSeek`): the next read starts exactly there. Writers return
/// `kExtAudioFileError_InvalidSeek` (writing is append-only here).
@discardableResult
public func ExtAudioFileSeek(_ inExtAudioFile: ExtAudioFileRef, _ inFrameOffset: Int64) -> OSStatus {
    guard let ext = CompatExtAudioFile.from(inExtAudioFile) else { return kAudio_ParamError }
    if ext.isWriter { return inFrameOffset == ext.framesWritten ? noErr : kExtAudioFileError_InvalidSeek }
    guard let file = ext.file, inFrameOffset >= 0, inFrameOffset <= file.validFrames else { return kExtAudioFileError_InvalidSeek }
    if let reader = ext.reader {
        do throws(AudioError) {
            try reader.seek(toFrame: inFrameOffset)
        } catch {
            return kExtAudioFileError_InvalidSeek
        }
    }
    ext.seekBase = inFrameOffset
    ext.readSinceSeek = 0
    return noErr
}

/// The current position in file frames (Apple's `ExtAudioFileTell`): where the next read starts,
/// or the frames written so far.
@discardableResult
public func ExtAudioFileTell(_ inExtAudioFile: ExtAudioFileRef, _ outFrameOffset: UnsafeMutablePointer<Int64>) -> OSStatus {
    guard let ext = CompatExtAudioFile.from(inExtAudioFile) else { return kAudio_ParamError }
    if ext.isWriter {
        outFrameOffset.pointee = Int64((Double(ext.framesWritten) * ext.rateRatio).rounded())
    } else {
        outFrameOffset.pointee = ext.seekBase + Int64((Double(ext.readSinceSeek) * ext.rateRatio).rounded())
    }
    return noErr
}

// MARK: - Properties

/// The current value of a property in Apple's layout.
private func extProperty(_ ext: CompatExtAudioFile, _ id: ExtAudioFilePropertyID) -> Result<CPropertyValue, OSErr> {
    switch id {
    case kExtAudioFileProperty_FileDataFormat: return .success(.asbd(ext.fileFormat))
    case kExtAudioFileProperty_ClientDataFormat: return .success(.asbd(ext.clientFormat))
    case kExtAudioFileProperty_FileChannelLayout:
        let layout = ext.fileLayout ?? OATCore.ChannelLayout(tag: .default(channels: ext.fileFormat.channelsPerFrame))
        return .success(.bytes(CLayout.bytes(layout)))
    case kExtAudioFileProperty_ClientChannelLayout:
        if let l = ext.clientLayout { return .success(.bytes(l)) }
        return .success(.bytes(CLayout.bytes(OATCore.ChannelLayout(tag: .default(channels: ext.clientFormat.channelsPerFrame)))))
    case kExtAudioFileProperty_CodecManufacturer: return .success(.uint32(kAppleSoftwareAudioCodecManufacturer))
    case kExtAudioFileProperty_AudioConverter:
        if ext.converterRef == nil {
            let (src, dst) = ext.isWriter ? (ext.clientFormat, ext.fileFormat) : (ext.fileFormat, ext.clientFormat)
            let box = CompatConverter(source: src, destination: dst)
            box.quality = ext.quality
            box.encodeBitRate = ext.encodeBitRate
            box.cookie = ext.file?.magicCookie
            ext.converterRef = box.register()
        }
        return .success(.uint64(UInt64(UInt(bitPattern: ext.converterRef.map { UnsafeRawPointer($0) }))))
    case kExtAudioFileProperty_AudioFile:
        return .success(.uint64(UInt64(UInt(bitPattern: ext.fileID.map { UnsafeRawPointer($0) }))))
    case kExtAudioFileProperty_FileMaxPacketSize:
        if let file = ext.file { return .success(.uint32(file.maximumPacketSize)) }
        if ext.fileFormat.bytesPerPacket > 0 { return .success(.uint32(ext.fileFormat.bytesPerPacket)) }
        return .success(.uint32(maximumPacketSize(ext.fileFormat)))
    case kExtAudioFileProperty_ClientMaxPacketSize: return .success(.uint32(ext.clientFormat.bytesPerPacket))
    case kExtAudioFileProperty_FileLengthFrames:
        if let file = ext.file { return .success(.int64(file.validFrames)) }
        return .success(.int64(Int64((Double(ext.framesWritten) * ext.rateRatio).rounded())))
    case kExtAudioFileProperty_IOBufferSizeBytes: return .success(.uint32(ext.ioBufferSize))
    case kExtAudioFileProperty_ConverterConfig: return .success(.uint64(0))
    case kExtAudioFileProperty_PacketTable:
        if let file = ext.file {
            return .success(.packetTable(file.packetTableInfo ?? AudioFilePacketTableInfo(numberValidFrames: file.validFrames, primingFrames: 0, remainderFrames: 0)))
        }
        if let e = ext.encoder { return .success(.packetTable(e.packetTableInfo)) }
        return .failure(OSErr(kExtAudioFileError_InvalidProperty))
    default: return .failure(OSErr(kExtAudioFileError_InvalidProperty))
    }
}

/// Size of a property and whether it can be set now (Apple's `ExtAudioFileGetPropertyInfo`).
@discardableResult
public func ExtAudioFileGetPropertyInfo(_ inExtAudioFile: ExtAudioFileRef, _ inPropertyID: ExtAudioFilePropertyID,
                                        _ outSize: UnsafeMutablePointer<UInt32>?, _ outWritable: UnsafeMutablePointer<DarwinBoolean>?) -> OSStatus {
    guard let ext = CompatExtAudioFile.from(inExtAudioFile) else { return kAudio_ParamError }
    switch extProperty(ext, inPropertyID) {
    case .success(let v):
        outSize?.pointee = v.size
        let always: Set<ExtAudioFilePropertyID> = [kExtAudioFileProperty_ClientDataFormat, kExtAudioFileProperty_ClientChannelLayout,
                                                   kExtAudioFileProperty_CodecManufacturer, kExtAudioFileProperty_ConverterConfig,
                                                   kExtAudioFileProperty_IOBufferSizeBytes]
        let beforeWriting: Set<ExtAudioFilePropertyID> = [kExtAudioFileProperty_FileDataFormat, kExtAudioFileProperty_FileChannelLayout]
        let pcmLength = inPropertyID == kExtAudioFileProperty_FileLengthFrames && ext.isWriter && ext.fileFormat.isPCM
        outWritable?.pointee = DarwinBoolean(always.contains(inPropertyID) || pcmLength || (ext.isWriter && !ext.started && beforeWriting.contains(inPropertyID)))
        return noErr
    case .failure(let e):
        return e.status
    }
}

/// Reads a property (Apple's `ExtAudioFileGetProperty`): file and client formats and layouts,
/// the converter and `AudioFileID` (pointers), packet sizes, length in frames, packet table.
@discardableResult
public func ExtAudioFileGetProperty(_ inExtAudioFile: ExtAudioFileRef, _ inPropertyID: ExtAudioFilePropertyID,
                                    _ ioPropertyDataSize: UnsafeMutablePointer<UInt32>, _ outPropertyData: UnsafeMutableRawPointer) -> OSStatus {
    guard let ext = CompatExtAudioFile.from(inExtAudioFile) else { return kAudio_ParamError }
    switch extProperty(ext, inPropertyID) {
    case .success(let v): return v.write(ioPropertyDataSize, outPropertyData, sizeError: kExtAudioFileError_InvalidPropertySize)
    case .failure(let e): return e.status
    }
}

/// Sets a property (Apple's `ExtAudioFileSetProperty`): `ClientDataFormat` (PCM; reading
/// continues at the same position), `ClientChannelLayout` (channel count must match),
/// `FileDataFormat`/`FileChannelLayout` on a new file before the first write, `ConverterConfig`
/// (applies the settings made on the `AudioConverter` property's converter: encode bit rate,
/// sample-rate converter quality), `CodecManufacturer` and `IOBufferSizeBytes` (accepted),
/// `PacketTable` on a file being written.
@discardableResult
public func ExtAudioFileSetProperty(_ inExtAudioFile: ExtAudioFileRef, _ inPropertyID: ExtAudioFilePropertyID,
                                    _ inPropertyDataSize: UInt32, _ inPropertyData: UnsafeRawPointer) -> OSStatus {
    guard let ext = CompatExtAudioFile.from(inExtAudioFile) else { return kAudio_ParamError }
    let asbdSize = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
    switch inPropertyID {
    case kExtAudioFileProperty_ClientDataFormat:
        guard inPropertyDataSize >= asbdSize else { return kExtAudioFileError_InvalidPropertySize }
        let format = inPropertyData.loadUnaligned(as: AudioStreamBasicDescription.self)
        guard format.isPCM else { return kExtAudioFileError_NonPCMClientFormat }
        guard format.channelsPerFrame > 0, format.bytesPerFrame > 0, format.sampleRate > 0 else { return kExtAudioFileError_InvalidDataFormat }
        let old = ext.clientFormat
        if ext.isWriter {
            guard !ext.started else { return kExtAudioFileError_InvalidOperationOrder }
            ext.clientFormat = format
            ext.encoder = nil
            do throws(AudioError) {
                _ = try ext.makeEncoder()
            } catch {
                ext.clientFormat = old
                ext.encoder = nil
                return extStatus(error, kExtAudioFileError_InvalidDataFormat)
            }
        } else {
            // Keep the position: frames read so far are counted in the old client rate.
            if let r = ext.reader {
                ext.seekBase += Int64((Double(ext.readSinceSeek) * ext.rateRatio).rounded())
                ext.readSinceSeek = 0
                _ = r
            }
            ext.clientFormat = format
            ext.reader = nil
            ext.readBuffer = nil
            do throws(AudioError) {
                _ = try ext.makeReader()
            } catch {
                ext.clientFormat = old
                ext.reader = nil
                return extStatus(error, kExtAudioFileError_InvalidDataFormat)
            }
        }
        if let c = ext.converterRef { AudioConverterDispose(c); ext.converterRef = nil }
        return noErr
    case kExtAudioFileProperty_ClientChannelLayout:
        let header = UInt32(CLayout.size(descriptions: 0))
        guard inPropertyDataSize >= header else { return kExtAudioFileError_InvalidPropertySize }
        let tag = inPropertyData.loadUnaligned(as: UInt32.self)
        let count = inPropertyData.loadUnaligned(fromByteOffset: 8, as: UInt32.self)
        let channels = tag == kAudioChannelLayoutTag_UseChannelDescriptions ? count : (tag == kAudioChannelLayoutTag_UseChannelBitmap ? ext.clientFormat.channelsPerFrame : tag & 0xFFFF)
        guard channels == ext.clientFormat.channelsPerFrame else { return kExtAudioFileError_InvalidChannelMap }
        ext.clientLayout = Array(UnsafeRawBufferPointer(start: inPropertyData, count: Int(inPropertyDataSize)))
        return noErr
    case kExtAudioFileProperty_FileDataFormat:
        guard ext.isWriter, !ext.started, let sink = ext.sink, let w = CompatFileWriter.from(sink) else { return kExtAudioFileError_InvalidOperationOrder }
        guard inPropertyDataSize >= asbdSize else { return kExtAudioFileError_InvalidPropertySize }
        var format = inPropertyData.loadUnaligned(as: AudioStreamBasicDescription.self)
        if !format.isPCM && format.framesPerPacket == 0, let e = try? AudioEncoder(to: format) { format.framesPerPacket = e.outputFormat.framesPerPacket }
        do throws(AudioError) {
            try AudioFileWriter.check(format, in: w.type)
        } catch {
            return kAudioFileUnsupportedDataFormatError
        }
        let replacement = CompatFileWriter(path: w.path, type: w.type, format: format)
        let id = CompatFileWriter.register(replacement)
        if ext.ownsFileID { CompatFileWriter.discard(sink) }
        ext.sink = id
        ext.fileID = id
        ext.ownsFileID = true
        ext.fileFormat = format
        if ext.clientFormat == w.format { ext.clientFormat = format }
        ext.encoder = nil
        return noErr
    case kExtAudioFileProperty_FileChannelLayout:
        guard ext.isWriter, !ext.started else { return kExtAudioFileError_InvalidOperationOrder }
        guard inPropertyDataSize >= 4 else { return kExtAudioFileError_InvalidPropertySize }
        let tag = inPropertyData.loadUnaligned(as: UInt32.self)
        if tag & 0xFFFF != 0, tag != kAudioChannelLayoutTag_UseChannelBitmap, tag & 0xFFFF != ext.fileFormat.channelsPerFrame {
            return kExtAudioFileError_InvalidChannelMap
        }
        ext.fileLayout = OATCore.ChannelLayout(tag: OATCore.ChannelLayoutTag(rawValue: tag))
        return noErr
    case kExtAudioFileProperty_ConverterConfig:
        // Apply what the client set on the converter it got from the AudioConverter property.
        guard let ref = ext.converterRef, let box = CompatConverter.from(ref) else { return noErr }
        ext.quality = box.quality
        if ext.isWriter {
            guard !ext.started else { return kExtAudioFileError_InvalidOperationOrder }
            ext.encodeBitRate = box.encodeBitRate
            ext.encoder = nil
            do throws(AudioError) {
                _ = try ext.makeEncoder()
            } catch {
                return extStatus(error, kExtAudioFileError_InvalidDataFormat)
            }
        } else {
            ext.reader?.sampleRateConverterQuality = box.quality
        }
        return noErr
    case kExtAudioFileProperty_CodecManufacturer, kExtAudioFileProperty_IOBufferSizeBytes:
        guard inPropertyDataSize >= 4 else { return kExtAudioFileError_InvalidPropertySize }
        if inPropertyID == kExtAudioFileProperty_IOBufferSizeBytes { ext.ioBufferSize = inPropertyData.loadUnaligned(as: UInt32.self) }
        return noErr
    case kExtAudioFileProperty_PacketTable:
        guard ext.isWriter, let sink = ext.sink else { return kExtAudioFileError_InvalidOperationOrder }
        return AudioFileSetProperty(sink, kAudioFilePropertyPacketTableInfo, inPropertyDataSize, inPropertyData)
    case kExtAudioFileProperty_FileLengthFrames:
        // PCM files being written: lengthen with silence (shortening what is written is not
        // possible here). Files read and encoded files: read-only.
        guard ext.isWriter, ext.fileFormat.isPCM else { return kExtAudioFileError_InvalidOperationOrder }
        guard inPropertyDataSize >= 8 else { return kExtAudioFileError_InvalidPropertySize }
        let target = inPropertyData.loadUnaligned(as: Int64.self)
        let current = Int64((Double(ext.framesWritten) * ext.rateRatio).rounded())
        guard target >= current else { return kExtAudioFileError_InvalidOperationOrder }
        let frames = Int((Double(target - current) / ext.rateRatio).rounded())
        guard frames > 0 else { return noErr }
        let planes = ext.clientFormat.isInterleaved ? 1 : Int(ext.clientFormat.channelsPerFrame)
        let bytes = frames * Int(ext.clientFormat.bytesPerFrame)
        let list = AudioBufferList.allocate(maximumBuffers: planes)
        defer { free(list.unsafeMutablePointer) }
        let zeros = UnsafeMutableRawPointer.allocate(byteCount: max(1, bytes), alignment: 16)
        defer { zeros.deallocate() }
        zeros.initializeMemory(as: UInt8.self, repeating: ext.clientFormat.isFloat || ext.clientFormat.formatFlags.contains(.isSignedInteger) ? 0 : 0x80,
                               count: max(1, bytes))
        for i in 0..<planes { list[i] = AudioBuffer(mNumberChannels: 1, mDataByteSize: UInt32(bytes), mData: zeros) }
        do throws(AudioError) {
            try ext.write(frames: frames, list: list)
            return noErr
        } catch {
            return extStatus(error, kAudioFileUnspecifiedError)
        }
    default:
        return kExtAudioFileError_InvalidProperty
    }
}
