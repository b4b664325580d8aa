import OATCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Options for ``AudioFileWriter``.
public struct AudioFileWriterOptions: Sendable {
    /// Tags keyed by ``InfoKey`` strings (title, artist, album, year, genre, comments, track
    /// number), written where the container has them.
    public var tags: [String: String] = [:]
    /// Seconds of audio between header refreshes, so a writer killed mid-way leaves a file
    /// readable up to the last refresh (WAV/AIFF sizes, FLAC STREAMINFO, Ogg pages).
    public var checkpointSeconds: Double = 1
    /// WAV: once the RIFF size would pass this many bytes the file becomes RF64 with a `ds64`
    /// chunk (default: just under 4 GiB; lower it to test the switch). The `.rf64` file type
    /// writes RF64 from the start (threshold 0).
    public var rf64Threshold: Int64 = 0xFFFF_FFFF - (1 << 16)
    /// Write so that a writer killed at any moment leaves a file readers open, holding all but
    /// the last ``checkpointSeconds``: M4A as fragmented MP4 (a `moof`/`mdat` pair per
    /// checkpoint, turned into a normal `moov` layout with edit list and `iTunSMPB` by
    /// ``AudioFileWriter/close()``), and compressed CAF with its `pakt` kept up to date in space
    /// reserved before the data (``packetTableReserveSeconds`` of packets). What a recorder uses.
    public var crashSafe: Bool = false
    /// With ``crashSafe``, how many seconds of packets the reserved CAF packet table holds; a
    /// longer recording still closes correctly, but a kill past this point leaves a file whose
    /// table covers only this much.
    public var packetTableReserveSeconds: Double = 3600
    /// Creates the default options.
    public init() {}
}

/// Writes an audio file from packets: Apple's `AudioFileCreate` + `AudioFileWritePackets` +
/// `AudioFileClose`. Containers: WAVE (RF64 past 4 GiB), AIFF, AIFF-C, CAF, M4A (AAC, ALAC),
/// native FLAC, Ogg Opus, ADTS and MP3. The container is written here in Swift; packets come
/// from an encoder (`AudioEncoder`) or another file.
///
/// Set ``packetTableInfo`` (priming, remainder, valid frames) before ``close()`` so the file
/// plays gapless (CAF `pakt`, MP4 edit list and `iTunSMPB`, MP3 LAME tag, Opus pre-skip and
/// end granule). Headers are refreshed every ``AudioFileWriterOptions/checkpointSeconds`` of
/// audio where the container allows, so a killed writer leaves a readable file; M4A and CAF
/// with compressed data need ``close()`` (their packet index is written there).
///
/// Thread safety: not thread-safe; use from one thread.
public final class AudioFileWriter {
    /// Path of the file.
    public let path: String
    /// Container type.
    public let fileType: AudioFileType
    /// Format of the packets.
    public let dataFormat: AudioStreamBasicDescription
    /// The decoder's magic cookie; may be updated before ``close()`` (FLAC's final STREAMINFO).
    public var magicCookie: [UInt8]? {
        get { context.cookie }
        set { context.cookie = newValue }
    }
    /// Priming, remainder and valid frames; set the priming before writing (Opus pre-skip) and
    /// the rest before ``close()``.
    public var packetTableInfo: AudioFilePacketTableInfo? {
        get { context.packetTableInfo }
        set { context.packetTableInfo = newValue }
    }
    /// Packets written.
    public var packetCount: Int64 { context.packetCount }
    /// Frames the written packets decode to.
    public var frameCount: Int64 { context.frameCount }
    /// Bytes of audio data written.
    public var audioDataByteCount: Int64 { context.dataBytes }

    private let context: WriterContext
    private let container: ContainerWriter
    /// The safe output written through, if any (committed by close(), given up by discard()).
    private let output: SafeOutputFile?
    private var lastCheckpoint: Int64 = 0
    private var closed = false

    /// Creates `path` (replacing it) for `dataFormat` packets in a `fileType` container; throws
    /// when the container cannot hold the format or the file cannot be created. The file is
    /// written in place; the tools write through ``init(output:fileType:dataFormat:magicCookie:options:)``
    /// instead, which never truncates an existing file.
    public convenience init(path: String, fileType: AudioFileType, dataFormat: AudioStreamBasicDescription,
                            magicCookie: [UInt8]? = nil, options: AudioFileWriterOptions = AudioFileWriterOptions()) throws(AudioError) {
        try Self.check(dataFormat, in: fileType)
        try self.init(sink: try FileSink(path: path), output: nil, fileType: fileType, dataFormat: dataFormat,
                      magicCookie: magicCookie, options: options)
    }

    /// Writes into `output` (a ``SafeOutputFile``: a temporary beside the user's path, a file
    /// this run created, or a seekable device) for `dataFormat` packets in a `fileType`
    /// container. ``close()`` finishes the file and commits it (renames it into place);
    /// ``discard()`` gives it up, leaving an existing file at the path untouched. Errors name
    /// the user's path, not the temporary.
    public convenience init(output: SafeOutputFile, fileType: AudioFileType, dataFormat: AudioStreamBasicDescription,
                            magicCookie: [UInt8]? = nil, options: AudioFileWriterOptions = AudioFileWriterOptions()) throws(AudioError) {
        do {
            try Self.check(dataFormat, in: fileType)
        } catch {
            output.discard()
            throw error
        }
        try self.init(sink: FileSink(descriptor: output.descriptor, name: output.path), output: output, fileType: fileType,
                      dataFormat: dataFormat, magicCookie: magicCookie, options: options)
    }

    private init(sink: FileSink, output: SafeOutputFile?, fileType: AudioFileType, dataFormat: AudioStreamBasicDescription,
                 magicCookie: [UInt8]?, options: AudioFileWriterOptions) throws(AudioError) {
        self.path = output?.path ?? sink.path
        self.fileType = fileType
        self.dataFormat = dataFormat
        self.output = output
        var options = options
        if fileType == .rf64 { options.rf64Threshold = 0 } // RF64 asked for: RF64 from the first byte
        context = WriterContext(sink: sink, format: dataFormat, cookie: magicCookie, options: options)
        container = Self.makeContainer(fileType)
        do {
            try container.start(context)
        } catch {
            if let output {
                output.discard()
            } else {
                // Remove only a regular file (never a device or FIFO the path named).
                let regular = sink.isRegularFile
                sink.close()
                if regular { unlink(path) }
            }
            throw error
        }
    }

    /// The container types this writer produces.
    public static let writableTypes: [AudioFileType] = [.wave, .aiff, .aifc, .caf, .m4a, .flac, .ogg, .aacADTS, .mp3]

    /// Throws when `type` cannot hold `format` (say, AAC in WAVE), naming what it can hold.
    public static func check(_ format: AudioStreamBasicDescription, in type: AudioFileType) throws(AudioError) {
        let id = format.formatID
        let bytes = format.isPCM && format.channelsPerFrame > 0 ? Int(format.bytesPerFrame / format.channelsPerFrame) : 0
        let reason: String?
        switch type {
        case .wave, .rf64:
            if id == .ulaw || id == .alaw { reason = nil }
            else if !format.isPCM { reason = "WAVE files hold linear PCM, mu-law or A-law" }
            else if format.isBigEndian && bytes > 1 { reason = "WAVE files hold little-endian PCM" }
            else if bytes == 1 && format.isSignedInteger { reason = "8-bit PCM in WAVE is unsigned (use UI8)" }
            else { reason = nil }
        case .aiff:
            if !format.isPCM || format.isFloat { reason = "AIFF files hold big-endian integer PCM (use AIFC for float, mu-law, A-law)" }
            else if !format.isBigEndian && bytes > 1 { reason = "AIFF files hold big-endian PCM" }
            else if bytes == 1 && !format.isSignedInteger { reason = "8-bit PCM in AIFF is signed" }
            else { reason = nil }
        case .aifc:
            if id == .ulaw || id == .alaw { reason = nil }
            else if !format.isPCM { reason = "AIFF-C files hold linear PCM, mu-law or A-law here" }
            else if format.isFloat && !format.isBigEndian { reason = "AIFF-C float PCM is big-endian (BEF32, BEF64)" }
            else if !format.isBigEndian && bytes != 2 && bytes > 1 { reason = "little-endian AIFF-C ('sowt') holds 16-bit PCM" }
            else if bytes == 1 && !format.isSignedInteger { reason = "8-bit PCM in AIFF-C is signed" }
            else { reason = nil }
        case .caf:
            reason = [.linearPCM, .ulaw, .alaw, .mpeg4AAC, .appleLossless, .mpegLayer3].contains(id) ? nil
                : "CAF files here hold PCM, mu-law, A-law, AAC, ALAC or MP3"
        case .m4a, .mpeg4:
            reason = id == .mpeg4AAC || id == .appleLossless ? nil : "M4A files hold AAC or Apple Lossless"
        case .flac:
            reason = id == .flac ? nil : "FLAC files hold FLAC data"
        case .ogg:
            reason = id == .opus ? nil : "Ogg files are written with Opus data"
        case .aacADTS:
            reason = id == .mpeg4AAC ? nil : "ADTS files hold AAC"
        case .mp3:
            reason = id == .mpegLayer3 ? nil : "MP3 files hold MPEG Layer III"
        default:
            reason = "writing '\(type)' files is not supported"
        }
        if let reason {
            throw AudioError(.unsupportedFormat, component: "AudioFileWriter", "\(type.displayName) cannot hold '\(id)' (\(format)): \(reason)",
                             osStatus: 0x666D_743F)
        }
    }

    private static func makeContainer(_ type: AudioFileType) -> ContainerWriter {
        switch type {
        case .wave, .rf64: WAVWriter()
        case .aiff: AIFFWriter(compressed: false)
        case .aifc: AIFFWriter(compressed: true)
        case .caf: CAFWriter()
        case .m4a, .mpeg4: MP4Writer()
        case .flac: FLACWriter()
        case .ogg: OggOpusWriter()
        case .aacADTS: ADTSWriter()
        default: MP3Writer()
        }
    }

    /// Appends packets (Apple's `AudioFileWritePackets`): `data` holds `count` packets, described
    /// by `descriptions` for variable-size formats (empty for constant-size ones).
    public func writePackets(_ data: UnsafeRawBufferPointer, descriptions: [AudioStreamPacketDescription], count: Int) throws(AudioError) {
        guard !closed else { throw AudioError(.invalidState, component: "AudioFileWriter", "the file is closed") }
        guard count > 0 else { return }
        var packets: [(start: Int, size: Int, frames: Int64)] = []
        packets.reserveCapacity(descriptions.count)
        if descriptions.isEmpty {
            guard dataFormat.bytesPerPacket > 0, data.count == count * Int(dataFormat.bytesPerPacket) else {
                throw AudioError(.invalidArgument, component: "AudioFileWriter", "\(count) packets of \(dataFormat.bytesPerPacket) bytes need packet descriptions or \(count * Int(dataFormat.bytesPerPacket)) bytes, got \(data.count)")
            }
        } else {
            guard descriptions.count == count else {
                throw AudioError(.invalidArgument, component: "AudioFileWriter", "\(count) packets with \(descriptions.count) descriptions")
            }
            for d in descriptions {
                let start = Int(d.startOffset), size = Int(d.dataByteSize)
                guard start >= 0, size > 0, start + size <= data.count else {
                    throw AudioError(.invalidArgument, component: "AudioFileWriter", "packet description \(start)+\(size) is outside the \(data.count)-byte buffer")
                }
                let frames = dataFormat.framesPerPacket > 0 ? Int64(dataFormat.framesPerPacket) : Int64(d.variableFramesInPacket)
                guard frames > 0 else {
                    throw AudioError(.invalidArgument, component: "AudioFileWriter", "a packet of a variable-frames format has no frame count")
                }
                packets.append((start, size, frames))
            }
        }
        do {
            if descriptions.isEmpty {
                try container.appendConstant(context, data, count: count)
                context.packetCount += Int64(count)
                context.frameCount += Int64(count) * Int64(max(1, dataFormat.framesPerPacket))
                context.dataBytes += Int64(data.count)
            } else {
                for p in packets {
                    try container.appendPacket(context, UnsafeRawBufferPointer(rebasing: data[p.start..<(p.start + p.size)]), frames: p.frames)
                    context.packetSizes.append(UInt32(p.size))
                    if dataFormat.framesPerPacket == 0 { context.packetFrames.append(UInt32(p.frames)) }
                    context.packetCount += 1
                    context.frameCount += p.frames
                    context.dataBytes += Int64(p.size)
                }
            }
            if Double(context.frameCount - lastCheckpoint) >= max(0.01, context.options.checkpointSeconds) * dataFormat.sampleRate {
                try container.checkpoint(context)
                lastCheckpoint = context.frameCount
            }
        } catch {
            throw error
        }
    }

    /// Appends the packets of a batch.
    public func writePackets(_ batch: AudioPacketBatch) throws(AudioError) {
        let result: Result<Void, AudioError> = batch.data.withUnsafeBytes { raw in
            Result { () throws(AudioError) in try writePackets(raw, descriptions: batch.packetDescriptions, count: batch.packetCount) }
        }
        try result.get()
    }

    /// Finishes the file: final sizes, packet index, gapless info; closes it. Written through
    /// a ``SafeOutputFile``, the finished file is then committed (renamed into place); when
    /// finishing fails, the output is left uncommitted for the caller to ``discard()`` or keep.
    public func close() throws(AudioError) {
        guard !closed else { return }
        closed = true
        do {
            try container.finish(context)
        } catch {
            context.sink.close()
            throw error
        }
        context.sink.close()
        try output?.commit()
    }

    /// Closes the file descriptor without finishing the file (what a crash leaves; for tests).
    public func abandon() {
        guard !closed else { return }
        closed = true
        context.sink.close()
    }

    /// Gives the file up: closes it unfinished and removes what this writer created (the
    /// temporary, or a file this run created); a file that existed at the path, or a device, is
    /// left as it was. Without a ``SafeOutputFile`` this is ``abandon()``.
    public func discard() {
        abandon()
        output?.discard()
    }

    /// The safe output this writer writes through, if it was made with one.
    public var safeOutput: SafeOutputFile? { output }

    deinit { if !closed { context.sink.close() } }
}

/// State shared by the writer and its container.
final class WriterContext {
    let sink: FileSink
    let format: AudioStreamBasicDescription
    var cookie: [UInt8]?
    let options: AudioFileWriterOptions
    var packetTableInfo: AudioFilePacketTableInfo?
    var packetCount: Int64 = 0
    var frameCount: Int64 = 0
    var dataBytes: Int64 = 0
    var packetSizes: [UInt32] = []
    var packetFrames: [UInt32] = []

    init(sink: FileSink, format: AudioStreamBasicDescription, cookie: [UInt8]?, options: AudioFileWriterOptions) {
        self.sink = sink
        self.format = format
        self.cookie = cookie
        self.options = options
    }

    var tags: [String: String] { options.tags }

    /// Valid frames: as set, else every frame after the priming.
    var validFrames: Int64 {
        if let info = packetTableInfo { return info.numberValidFrames }
        return frameCount
    }
    var primingFrames: Int64 { Int64(packetTableInfo?.primingFrames ?? 0) }
    var remainderFrames: Int64 { max(0, frameCount - primingFrames - validFrames) }
}

/// One container format's writing logic.
class ContainerWriter {
    func start(_ c: WriterContext) throws(AudioError) {}
    func appendConstant(_ c: WriterContext, _ data: UnsafeRawBufferPointer, count: Int) throws(AudioError) {
        try c.sink.append(data)
    }
    func appendPacket(_ c: WriterContext, _ data: UnsafeRawBufferPointer, frames: Int64) throws(AudioError) {
        try c.sink.append(data)
    }
    func checkpoint(_ c: WriterContext) throws(AudioError) {}
    func finish(_ c: WriterContext) throws(AudioError) { try checkpoint(c) }
}

/// A file written with `pwrite`: appends at the end, patches earlier bytes.
final class FileSink {
    /// The name errors give (the user's path, also when the bytes go to a temporary).
    let path: String
    private var fd: Int32
    /// False when the descriptor belongs to a SafeOutputFile (which closes it).
    private let ownsDescriptor: Bool
    private(set) var end: Int64 = 0

    init(path: String) throws(AudioError) {
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw AudioError(.io, component: "AudioFileWriter", "cannot create \(path)", underlying: String(cString: strerror(errno)), osStatus: -54)
        }
        self.path = path
        ownsDescriptor = true
    }

    /// Writes `descriptor` (owned by the caller), naming `name` in errors.
    init(descriptor: Int32, name: String) {
        fd = descriptor
        path = name
        ownsDescriptor = false
    }

    /// True when the descriptor is a regular file.
    var isRegularFile: Bool {
        var st = stat()
        return fd >= 0 && fstat(fd, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG
    }

    func append(_ bytes: [UInt8]) throws(AudioError) {
        try withRawBytes(bytes) { (raw) throws(AudioError) in try append(raw) }
    }

    func append(_ raw: UnsafeRawBufferPointer) throws(AudioError) {
        try write(raw, at: end)
    }

    func write(_ bytes: [UInt8], at offset: Int64) throws(AudioError) {
        try withRawBytes(bytes) { (raw) throws(AudioError) in try write(raw, at: offset) }
    }

    func write(_ raw: UnsafeRawBufferPointer, at offset: Int64) throws(AudioError) {
        var done = 0
        while done < raw.count {
            let n = pwrite(fd, raw.baseAddress! + done, raw.count - done, off_t(offset + Int64(done)))
            if n < 0 {
                if errno == EINTR { continue }
                throw AudioError(.io, component: "AudioFileWriter", "write failed in \(path)", offset: offset + Int64(done), underlying: String(cString: strerror(errno)))
            }
            done += n
        }
        end = max(end, offset + Int64(raw.count))
    }

    func truncate(to size: Int64) {
        _ = ftruncate(fd, off_t(size))
        end = size
    }

    func close() {
        if fd >= 0 && ownsDescriptor { _ = Glibc.close(fd) }
        fd = -1
    }
}

/// Builds binary structures.
struct ByteBuilder {
    var bytes: [UInt8] = []
    var count: Int { bytes.count }
    mutating func u8(_ v: UInt8) { bytes.append(v) }
    mutating func u16be(_ v: UInt16) { bytes += [UInt8(v >> 8), UInt8(v & 0xFF)] }
    mutating func u16le(_ v: UInt16) { bytes += [UInt8(v & 0xFF), UInt8(v >> 8)] }
    mutating func u24be(_ v: UInt32) { bytes += [UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)] }
    mutating func u32be(_ v: UInt32) { for s in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8((v >> UInt32(s)) & 0xFF)) } }
    mutating func u32le(_ v: UInt32) { for s in stride(from: 0, through: 24, by: 8) { bytes.append(UInt8((v >> UInt32(s)) & 0xFF)) } }
    mutating func u64be(_ v: UInt64) { for s in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8((v >> UInt64(s)) & 0xFF)) } }
    mutating func u64le(_ v: UInt64) { for s in stride(from: 0, through: 56, by: 8) { bytes.append(UInt8((v >> UInt64(s)) & 0xFF)) } }
    mutating func ascii(_ s: String) { bytes += Array(s.utf8) }
    mutating func append(_ b: [UInt8]) { bytes += b }
    mutating func zeros(_ n: Int) { bytes += [UInt8](repeating: 0, count: n) }
}

extension Array where Element == UInt8 {
    static func be32(_ v: UInt32) -> [UInt8] { var b = ByteBuilder(); b.u32be(v); return b.bytes }
    static func le32(_ v: UInt32) -> [UInt8] { var b = ByteBuilder(); b.u32le(v); return b.bytes }
    static func be64(_ v: UInt64) -> [UInt8] { var b = ByteBuilder(); b.u64be(v); return b.bytes }
    static func le64(_ v: UInt64) -> [UInt8] { var b = ByteBuilder(); b.u64le(v); return b.bytes }
}

/// Vorbis-comment names of the tags (FLAC, Opus).
func vorbisCommentFields(_ tags: [String: String]) -> [String] {
    let names: [(String, String)] = [(InfoKey.title, "TITLE"), (InfoKey.artist, "ARTIST"), (InfoKey.album, "ALBUM"),
                                     (InfoKey.year, "DATE"), (InfoKey.genre, "GENRE"), (InfoKey.comments, "COMMENT"),
                                     (InfoKey.trackNumber, "TRACKNUMBER"), (InfoKey.composer, "COMPOSER")]
    return names.compactMap { key, name in tags[key].map { "\(name)=\($0)" } }
}

/// A Vorbis comment block body (little-endian lengths), without framing.
func vorbisCommentBody(_ tags: [String: String]) -> [UInt8] {
    var b = ByteBuilder()
    let vendor = "OpenAudioToolbox"
    b.u32le(UInt32(vendor.utf8.count)); b.ascii(vendor)
    let fields = vorbisCommentFields(tags)
    b.u32le(UInt32(fields.count))
    for f in fields { b.u32le(UInt32(f.utf8.count)); b.ascii(f) }
    return b.bytes
}
