// AVAudioFile: Apple's file object, reading and writing in a PCM processing format through
// the extended audio file underneath (ExtAudioFile).
import Foundation
import OpenAudioToolbox

/// An audio file to read or write (Apple's `AVAudioFile`). Reading converts from the file's
/// format (``fileFormat``) to ``processingFormat`` (deinterleaved 32-bit float unless another
/// common format was asked for); writing converts from ``processingFormat`` to the format the
/// settings name, encoding where the settings name a codec. A written file is finished when
/// ``close()`` is called or the object goes away.
open class AVAudioFile: NSObject, @unchecked Sendable {
    /// The file's location.
    public let url: URL
    /// The format of the audio in the file.
    public let fileFormat: AVAudioFormat
    /// The format of the buffers read and written.
    public let processingFormat: AVAudioFormat
    private var ext: ExtAudioFileRef?
    private let writing: Bool
    private var written: AVAudioFramePosition = 0

    /// Opens `fileURL` for reading, processing in deinterleaved 32-bit float.
    public convenience init(forReading fileURL: URL) throws {
        try self.init(forReading: fileURL, commonFormat: .pcmFormatFloat32, interleaved: false)
    }

    /// Opens `fileURL` for reading, processing in `format` (a PCM common format), interleaved or not.
    public init(forReading fileURL: URL, commonFormat format: AVAudioCommonFormat, interleaved: Bool) throws {
        url = fileURL
        writing = false
        var ref: ExtAudioFileRef?
        try check(ExtAudioFileOpenURL(fileURL, &ref), "AVAudioFile: cannot open \(fileURL.path) for reading")
        guard let ref else { throw avError(kAudio_ParamError, "AVAudioFile: cannot open \(fileURL.path)") }
        var fileDescription = AudioStreamBasicDescription()
        var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
        var status = ExtAudioFileGetProperty(ref, kExtAudioFileProperty_FileDataFormat, &size, &fileDescription)
        let layout = Self.fileLayout(ref)
        guard status == noErr,
              let file = AVAudioFormat(streamDescription: &fileDescription, channelLayout: layout),
              let processing = layout.map({ AVAudioFormat(commonFormat: format == .otherFormat ? .pcmFormatFloat32 : format, sampleRate: fileDescription.mSampleRate,
                                                          interleaved: interleaved, channelLayout: $0) })
                ?? AVAudioFormat(commonFormat: format == .otherFormat ? .pcmFormatFloat32 : format, sampleRate: fileDescription.mSampleRate,
                                 channels: fileDescription.mChannelsPerFrame, interleaved: interleaved) else {
            ExtAudioFileDispose(ref)
            throw avError(status == noErr ? kAudioFileUnsupportedDataFormatError : status, "AVAudioFile: cannot read the format of \(fileURL.path)")
        }
        var client = processing.streamDescription.pointee
        status = ExtAudioFileSetProperty(ref, kExtAudioFileProperty_ClientDataFormat, UInt32(MemoryLayout<AudioStreamBasicDescription>.size), &client)
        if status != noErr {
            ExtAudioFileDispose(ref)
            throw avError(status, "AVAudioFile: cannot decode \(fileURL.path) to \(processing)")
        }
        fileFormat = file
        processingFormat = processing
        ext = ref
        super.init()
    }

    /// Creates `fileURL` for writing (replacing a file there) in the format `settings` name
    /// (`AVFormatIDKey`, `AVSampleRateKey`, `AVNumberOfChannelsKey`, the `AVLinearPCM...` keys;
    /// the file type comes from the extension: wav, aif/aiff, aifc, caf, m4a, mp4, flac, aac, mp3),
    /// processing in deinterleaved 32-bit float.
    public convenience init(forWriting fileURL: URL, settings: [String: Any]) throws {
        try self.init(forWriting: fileURL, settings: settings, commonFormat: .pcmFormatFloat32, interleaved: false)
    }

    /// Creates `fileURL` for writing, processing in `format` (a PCM common format).
    public init(forWriting fileURL: URL, settings: [String: Any], commonFormat format: AVAudioCommonFormat, interleaved: Bool) throws {
        url = fileURL
        writing = true
        guard let type = Self.fileType(forExtension: fileURL.pathExtension) else {
            throw avError(kAudioFileUnsupportedFileTypeError, "AVAudioFile: no audio file type for the extension '.\(fileURL.pathExtension)' of \(fileURL.path)")
        }
        var settings = settings
        if settings[AVFormatIDKey] == nil { settings[AVFormatIDKey] = Int(kAudioFormatLinearPCM) }
        if (settingNumber(settings[AVFormatIDKey]) ?? 0) == Double(kAudioFormatLinearPCM) {
            // AIFF holds big-endian integers, WAVE little-endian: the file decides.
            if type == kAudioFileAIFFType { settings[AVLinearPCMIsBigEndianKey] = true; settings[AVLinearPCMIsFloatKey] = false }
            if type == kAudioFileWAVEType { settings[AVLinearPCMIsBigEndianKey] = false }
            settings[AVLinearPCMIsNonInterleaved] = false
        }
        guard let file = AVAudioFormat(settings: settings) else {
            throw avError(kAudioFileUnsupportedDataFormatError, "AVAudioFile: the settings do not describe a format: \(settings)")
        }
        let layout = file.channelLayout
        guard let processing = layout.map({ AVAudioFormat(commonFormat: format == .otherFormat ? .pcmFormatFloat32 : format, sampleRate: file.sampleRate,
                                                          interleaved: interleaved, channelLayout: $0) })
                ?? AVAudioFormat(commonFormat: format == .otherFormat ? .pcmFormatFloat32 : format, sampleRate: file.sampleRate,
                                 channels: file.channelCount, interleaved: interleaved) else {
            throw avError(kAudio_ParamError, "AVAudioFile: no processing format for \(file)")
        }
        var description = file.streamDescription.pointee
        var ref: ExtAudioFileRef?
        let status: OSStatus
        if let layout {
            status = ExtAudioFileCreateWithURL(fileURL, type, &description, layout.layout, AudioFileFlags.eraseFile.rawValue, &ref)
        } else {
            status = ExtAudioFileCreateWithURL(fileURL, type, &description, nil, AudioFileFlags.eraseFile.rawValue, &ref)
        }
        try check(status, "AVAudioFile: cannot create \(fileURL.path) as \(file)")
        guard let ref else { throw avError(kAudio_ParamError, "AVAudioFile: cannot create \(fileURL.path)") }
        var client = processing.streamDescription.pointee
        let clientStatus = ExtAudioFileSetProperty(ref, kExtAudioFileProperty_ClientDataFormat, UInt32(MemoryLayout<AudioStreamBasicDescription>.size), &client)
        if clientStatus != noErr {
            ExtAudioFileDispose(ref)
            throw avError(clientStatus, "AVAudioFile: cannot encode \(processing) into \(file)")
        }
        // The encoder may have filled in the packet shape: report the file's actual format.
        var actual = AudioStreamBasicDescription()
        var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
        if ExtAudioFileGetProperty(ref, kExtAudioFileProperty_FileDataFormat, &size, &actual) == noErr,
           let f = AVAudioFormat(streamDescription: &actual, channelLayout: layout) {
            fileFormat = f
        } else {
            fileFormat = file
        }
        processingFormat = processing
        ext = ref
        super.init()
    }

    deinit { close() }

    /// True until ``close()``.
    public var isOpen: Bool { ext != nil }

    /// Finishes and closes the file (a written file gets its sizes, packet table and cookie);
    /// later reads and writes throw. Called when the object goes away.
    public func close() {
        if let ext { ExtAudioFileDispose(ext) }
        ext = nil
    }

    /// Frames in the file, in the file's sample rate (for a file being written, the frames
    /// written so far).
    public var length: AVAudioFramePosition {
        guard let ext else { return 0 }
        if writing { return written }
        var frames: Int64 = 0
        var size = UInt32(MemoryLayout<Int64>.size)
        return ExtAudioFileGetProperty(ext, kExtAudioFileProperty_FileLengthFrames, &size, &frames) == noErr ? frames : 0
    }

    /// The frame the next read starts at (setting it seeks); for writing, the frames written.
    public var framePosition: AVAudioFramePosition {
        get {
            guard let ext else { return 0 }
            if writing { return written }
            var position: Int64 = 0
            return ExtAudioFileTell(ext, &position) == noErr ? position : 0
        }
        set {
            guard let ext, !writing else { return }
            ExtAudioFileSeek(ext, max(0, newValue))
        }
    }

    /// Reads up to the buffer's capacity from ``framePosition`` on; the buffer's frame length
    /// becomes the frames read (0 at the end of the file).
    public func read(into buffer: AVAudioPCMBuffer) throws {
        try read(into: buffer, frameCount: buffer.frameCapacity)
    }

    /// Reads up to `frames` frames (at most the buffer's capacity).
    public func read(into buffer: AVAudioPCMBuffer, frameCount frames: AVAudioFrameCount) throws {
        guard let ext, !writing else { throw avError(kExtAudioFileError_InvalidOperationOrder, "AVAudioFile: \(url.path) is not open for reading") }
        guard buffer.format.isEqual(processingFormat) || Self.sameSampleLayout(buffer.format, processingFormat) else {
            throw avError(kAudio_ParamError, "AVAudioFile.read: the buffer's format \(buffer.format) is not the processing format \(processingFormat)")
        }
        var count = min(frames, buffer.frameCapacity)
        let bytes = count * processingFormat.streamDescription.pointee.mBytesPerFrame
        let list = UnsafeMutableAudioBufferListPointer(buffer.mutableAudioBufferList)
        for i in 0..<list.count { list[i].mDataByteSize = bytes }
        let status = ExtAudioFileRead(ext, &count, buffer.mutableAudioBufferList)
        if status != noErr {
            buffer.frameLength = 0
            throw avError(status, "AVAudioFile: cannot read \(url.path) at frame \(framePosition)")
        }
        buffer.frameLength = count
    }

    /// Writes the buffer's valid frames (converted and encoded into the file's format).
    public func write(from buffer: AVAudioPCMBuffer) throws {
        guard let ext, writing else { throw avError(kExtAudioFileError_InvalidOperationOrder, "AVAudioFile: \(url.path) is not open for writing") }
        guard buffer.format.isEqual(processingFormat) || Self.sameSampleLayout(buffer.format, processingFormat) else {
            throw avError(kAudio_ParamError, "AVAudioFile.write: the buffer's format \(buffer.format) is not the processing format \(processingFormat)")
        }
        guard buffer.frameLength > 0 else { return }
        try check(ExtAudioFileWrite(ext, buffer.frameLength, buffer.audioBufferList), "AVAudioFile: cannot write \(buffer.frameLength) frames to \(url.path)")
        written += AVAudioFramePosition(buffer.frameLength)
    }

    // MARK: Helpers

    /// Same rate, channels and sample layout (layouts may differ in how they are named).
    static func sameSampleLayout(_ a: AVAudioFormat, _ b: AVAudioFormat) -> Bool {
        let x = a.streamDescription.pointee, y = b.streamDescription.pointee
        return x.mSampleRate == y.mSampleRate && x.mFormatID == y.mFormatID && x.mFormatFlags == y.mFormatFlags
            && x.mBytesPerFrame == y.mBytesPerFrame && x.mChannelsPerFrame == y.mChannelsPerFrame && x.mBitsPerChannel == y.mBitsPerChannel
    }

    static func fileLayout(_ ref: ExtAudioFileRef) -> AVAudioChannelLayout? {
        var size: UInt32 = 0
        var writable: DarwinBoolean = false
        guard ExtAudioFileGetPropertyInfo(ref, kExtAudioFileProperty_FileChannelLayout, &size, &writable) == noErr,
              size >= UInt32(MemoryLayout<AudioChannelLayout>.size - MemoryLayout<AudioChannelDescription>.size) else { return nil }
        let raw = UnsafeMutableRawPointer.allocate(byteCount: max(Int(size), MemoryLayout<AudioChannelLayout>.size), alignment: 8)
        defer { raw.deallocate() }
        raw.initializeMemory(as: UInt8.self, repeating: 0, count: max(Int(size), MemoryLayout<AudioChannelLayout>.size))
        guard ExtAudioFileGetProperty(ref, kExtAudioFileProperty_FileChannelLayout, &size, raw) == noErr else { return nil }
        let layout = AVAudioChannelLayout(layout: raw.assumingMemoryBound(to: AudioChannelLayout.self))
        return layout.channelCount > 0 ? layout : nil
    }

    static func fileType(forExtension ext: String) -> AudioFileTypeID? {
        switch ext.lowercased() {
        case "wav", "wave": kAudioFileWAVEType
        case "aif", "aiff": kAudioFileAIFFType
        case "aifc": kAudioFileAIFCType
        case "caf": kAudioFileCAFType
        case "m4a", "m4r": kAudioFileM4AType
        case "mp4": kAudioFileMPEG4Type
        case "flac": kAudioFileFLACType
        case "aac", "adts": kAudioFileAAC_ADTSType
        case "mp3": kAudioFileMP3Type
        default: nil
        }
    }
}
