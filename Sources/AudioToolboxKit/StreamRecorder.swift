import OATConversion
import OATCore
import OATFiles
import OATStreaming
import Synchronization

/// Records the audio bytes of a stream to a file while it plays (`afplay --record FILE URL`).
///
/// The bytes (metadata already removed by the source) are parsed with an `AudioFileStream`;
/// when the output container can hold the stream's packets they are written as they are, without
/// re-encoding (an MP3 stream to `.mp3`, an AAC stream to `.aac`, `.m4a` or `.caf`, Opus to
/// `.ogg`/`.opus`); otherwise they are decoded and encoded to the container's default format
/// (e.g. MP3 to `.m4a` becomes AAC). The file is written crash-safe (headers made valid about once
/// a second), so a killed player leaves a readable recording. It is a `SafeOutputFile`
/// recording: nothing is created before the first packet; a new path is written in place, an
/// existing file is replaced only by ``finish()`` (until then the recording goes to a temporary
/// beside it), and a path that is not a regular file or seekable device is refused.
///
/// Thread safety: `append`, `discontinuity` and `finish` may be called from any thread; they are
/// serialised internally.
public final class StreamRecorder: @unchecked Sendable {
    /// The file written.
    public let path: String
    /// The container written.
    public let fileType: AudioFileType
    /// Guards `s`; every access to it is inside `lock.withLock`.
    private let lock = Locked<Void>(())
    private var s = State()

    private struct State {
        var parser: AudioFileStream?
        var writer: AudioFileWriter?
        var decoder: AudioConverter?
        var encoder: AudioEncoder?
        var pcm: AudioPCMBuffer?
        var reencoding = false
        var failure: AudioError?
        var finished = false
        var hint: AudioFileType?
    }

    /// Creates a recorder writing `path`; the container comes from `fileType` or the extension.
    /// `streamTypeHint` is the stream's container if known (from Content-Type).
    public init(path: String, fileType: AudioFileType? = nil, streamTypeHint: AudioFileType? = nil) throws(AudioError) {
        guard let type = fileType ?? AudioFileConversion.fileType(forExtension: path) else {
            throw AudioError(.invalidArgument, component: "StreamRecorder", "cannot tell the file type of \(path) from its extension; use .mp3, .aac, .m4a, .caf, .wav, .flac or .ogg")
        }
        guard AudioFileWriter.writableTypes.contains(type) else {
            throw AudioError(.unsupportedFormat, component: "StreamRecorder", "cannot write \(type) files (\(path))")
        }
        self.path = path
        self.fileType = type
        s.hint = streamTypeHint
        s.parser = AudioFileStream(fileTypeHint: streamTypeHint)
    }

    /// The first error that stopped the recording, if any (playback goes on regardless).
    public var error: AudioError? { lock.withLock { _ in s.failure } }

    /// Frames written to the file so far (as the packets decode).
    public var framesWritten: Int64 { lock.withLock { _ in s.writer?.frameCount ?? 0 } }

    /// True when packets are re-encoded rather than copied.
    public var isReencoding: Bool { lock.withLock { _ in s.reencoding } }

    /// Feeds received audio bytes.
    public func append(_ bytes: UnsafeRawBufferPointer) {
        lock.withLock { _ in
            guard !s.finished, s.failure == nil, let parser = s.parser else { return }
            do throws(AudioError) {
                var batches: [AudioPacketBatch] = []
                try parser.parse(bytes) { event in
                    if case .packets(let b) = event { batches.append(b) }
                }
                for b in batches { try Self.write(b, parser: parser, path: path, fileType: fileType, &self.s) }
            } catch {
                s.failure = error
            }
        }
    }

    /// The stream restarted (a live rejoin): the parser resynchronises on the new bytes.
    public func discontinuity() {
        lock.withLock { _ in
            guard !s.finished else { return }
            s.parser = AudioFileStream(fileTypeHint: s.hint)
            s.decoder?.reset()
        }
    }

    /// Finishes the file (trailers, final header sizes). Idempotent.
    public func finish() throws(AudioError) {
        try lock.withLock { (_: inout Void) throws(AudioError) in
            guard !s.finished else { return }
            s.finished = true
            if let e = s.failure {
                // Keep what was recorded before the error (finished where possible).
                if let writer = s.writer {
                    do { try writer.close() } catch { _ = writer.safeOutput?.keepUnfinished() }
                }
                throw e
            }
            if let parser = s.parser, s.writer != nil || parser.isReadyToProducePackets {
                var batches: [AudioPacketBatch] = []
                try? parser.finish { event in
                    if case .packets(let b) = event { batches.append(b) }
                }
                for b in batches { try Self.write(b, parser: parser, path: path, fileType: fileType, &self.s) }
            }
            if let decoder = s.decoder, let encoder = s.encoder, let pcm = s.pcm, let writer = s.writer {
                try decoder.endOfInput()
                while true {
                    let n = decoder.read(into: pcm, maxFrames: pcm.frameCapacity)
                    if n == 0 { break }
                    try writer.writePackets(try encoder.encode(pcm))
                }
                try writer.writePackets(try encoder.finish())
                writer.packetTableInfo = encoder.packetTableInfo
                if let cookie = encoder.magicCookie { writer.magicCookie = cookie }
            }
            guard let writer = s.writer else {
                throw AudioError(.invalidState, component: "StreamRecorder", "nothing was recorded to \(path): no audio packets arrived")
            }
            // Copied packets keep the stream's gapless info when it had some (an on-demand file).
            if !s.reencoding, let table = s.parser?.packetTableInfo, table.numberValidFrames > 0,
               table.numberValidFrames + Int64(table.primingFrames) + Int64(table.remainderFrames) == writer.frameCount {
                writer.packetTableInfo = table
            }
            try writer.close()
        }
    }

    private static func write(_ batch: AudioPacketBatch, parser: AudioFileStream, path: String, fileType: AudioFileType,
                              _ s: inout State) throws(AudioError) {
        if s.writer == nil {
            guard let format = parser.dataFormat else { return }
            var options = AudioFileWriterOptions()
            options.crashSafe = true
            if (try? AudioFileWriter.check(format, in: fileType)) != nil {
                s.writer = try AudioFileWriter(output: try SafeOutputFile(path: path, mode: .recording), fileType: fileType, dataFormat: format,
                                               magicCookie: parser.magicCookie, options: options)
            } else {
                // Re-encode to the container's usual format at the stream's rate and channels.
                var target = AudioFileConversion.defaultFormat(for: fileType, sourceBits: 16, sourceFloat: false)
                if target.isPCM {
                    target = .linearPCM(sampleRate: format.sampleRate, channels: format.channelsPerFrame, bitsPerChannel: target.bitsPerChannel,
                                        isFloat: target.isFloat, isBigEndian: target.formatFlags.contains(.isBigEndian))
                } else {
                    target.sampleRate = target.formatID == .opus ? 48000 : format.sampleRate
                    target.channelsPerFrame = format.channelsPerFrame
                }
                let encoder = try AudioEncoder(to: target)
                let decoder = try AudioConverter(from: format, to: encoder.inputFormat, magicCookie: parser.magicCookie)
                // An on-demand file's gapless info (LAME/iTunSMPB) trims the decoder's priming and padding.
                if let table = parser.packetTableInfo, table.numberValidFrames > 0 {
                    decoder.primeInfo = AudioConverterPrimeInfo(leadingFrames: UInt32(clamping: table.primingFrames),
                                                                trailingFrames: UInt32(clamping: table.remainderFrames))
                    decoder.validFrameCount = table.numberValidFrames
                }
                s.pcm = try AudioPCMBuffer(format: encoder.inputFormat, frameCapacity: 8192)
                s.writer = try AudioFileWriter(output: try SafeOutputFile(path: path, mode: .recording), fileType: fileType,
                                               dataFormat: encoder.outputFormat, magicCookie: encoder.magicCookie, options: options)
                s.encoder = encoder
                s.decoder = decoder
                s.reencoding = true
            }
        }
        guard let writer = s.writer else { return }
        if let decoder = s.decoder, let encoder = s.encoder, let pcm = s.pcm {
            try decoder.decode(batch)
            while true {
                let n = decoder.read(into: pcm, maxFrames: pcm.frameCapacity)
                if n == 0 { break }
                try writer.writePackets(try encoder.encode(pcm))
            }
        } else {
            try writer.writePackets(batch)
        }
    }
}

/// A byte source that hands every audio byte it delivers to a ``StreamRecorder`` as well.
public final class RecordingByteSource: ByteSource {
    private let upstream: any ByteSource
    /// The recorder fed.
    public let recorder: StreamRecorder

    /// Wraps `upstream`, recording what it delivers.
    public init(_ upstream: any ByteSource, recorder: StreamRecorder) {
        self.upstream = upstream
        self.recorder = recorder
    }

    public func open(at offset: Int64) throws(AudioError) -> ByteSourceInfo {
        let info = try upstream.open(at: offset)
        // A reopen somewhere else (a seek) breaks the byte run: the recorder resynchronises.
        if offset > 0 { recorder.discontinuity() }
        return info
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(AudioError) -> ByteSourceRead {
        let r = try upstream.read(into: buffer)
        switch r {
        case .bytes(let n): recorder.append(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(buffer)[0..<n]))
        case .reconnected(_, let continuous): if !continuous { recorder.discontinuity() }
        default: break
        }
        return r
    }

    public func cancel() { upstream.cancel() }
    public func close() { upstream.close() }
    public var statistics: ByteSourceStatistics { upstream.statistics }
}
