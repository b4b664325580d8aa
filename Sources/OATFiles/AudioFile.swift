import OATCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A read-only handle on an open file descriptor, with positioned reads.
final class FileHandleReader {
    let fd: Int32
    let path: String
    let size: Int64

    init(path: String) throws(AudioError) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw AudioError(.io, component: "AudioFile", "cannot open \(path)", underlying: String(cString: strerror(errno)), osStatus: -43)
        }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            let err = String(cString: strerror(errno))
            close(fd)
            throw AudioError(.io, component: "AudioFile", "cannot stat \(path)", underlying: err)
        }
        if (st.st_mode & S_IFMT) == S_IFDIR {
            close(fd)
            throw AudioError(.io, component: "AudioFile", "\(path) is a directory")
        }
        self.fd = fd
        self.path = path
        self.size = Int64(st.st_size)
    }

    deinit { close(fd) }

    /// Reads `count` bytes at `offset`, or nil when the file is shorter.
    func readBytesDirect(at offset: Int64, count: Int) throws(AudioError) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: count)
        let n = try withMutableRawBytes(&out) { (raw) throws(AudioError) -> Int in try read(into: raw, at: offset) }
        return n == count ? out : nil
    }

    /// Reads up to `count` bytes at `offset` into `buffer`; returns bytes read (0 at the end).
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(AudioError) -> Int {
        var done = 0
        while done < buffer.count {
            let n = pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset + Int64(done)))
            if n < 0 {
                if errno == EINTR { continue }
                throw AudioError(.io, component: "AudioFile", "read failed in \(path)", offset: offset + Int64(done), underlying: String(cString: strerror(errno)))
            }
            if n == 0 { break }
            done += n
        }
        return done
    }
}

/// The frame count an ALAC packet states for itself when it is a partial frame (the last packet
/// of a stream), read from its first element header; nil when it is a full frame.
func alacPartialFrameCount(_ packet: [UInt8]) -> UInt32? {
    guard packet.count >= 7 else { return nil }
    // 3 bits element type, 4 bits instance tag, 12 unused, 1 bit "has size", 2 bits shift,
    // 1 bit escape, then the 32-bit frame count.
    guard packet[2] & 0x10 != 0 else { return nil }
    var bits: UInt64 = 0
    for i in 2..<7 { bits = bits << 8 | UInt64(packet[i]) }
    let count = UInt32(truncatingIfNeeded: bits >> 1)
    return count > 0 ? count : nil
}

/// Random-access reading of an audio file on disk: Apple's `AudioFile` for reading.
///
/// Opening scans the file once through ``AudioFileStream`` (the same parsers that stream) and
/// keeps a packet index, so packet counts and durations are exact and any packet range can be
/// read back. Memory: constant for constant-bit-rate data; about 16 bytes per packet otherwise.
///
/// Thread safety: not thread-safe; use from one thread at a time.
public final class AudioFile {
    /// Path the file was opened from.
    public let path: String
    /// Size of the file in bytes.
    public let fileSize: Int64
    /// The container type.
    public let fileFormat: AudioFileType
    /// The stream description of the audio data.
    public let dataFormat: AudioStreamBasicDescription
    /// Layered formats, richest first.
    public let formatList: [AudioFormatListItem]
    /// The decoder's magic cookie, if the format has one.
    public let magicCookie: [UInt8]?
    /// The channel layout, if the file gives one.
    public let channelLayout: ChannelLayout?
    /// Valid, priming and remainder frames as stated by the file (LAME tag, edit list, iTunSMPB,
    /// `pakt`, Opus pre-skip), if it states them.
    public let packetTableInfo: AudioFilePacketTableInfo?
    /// Tags and facts keyed by ``InfoKey`` strings.
    public let infoDictionary: [String: String]
    /// Markers (WAV `cue ` named by `labl`, AIFF `MARK`, CAF `mark` named by `strg`).
    public let markers: [AudioFileMarkerInfo]
    /// Regions (WAV `ltxt` segments, AIFF `INST` sustain/release loops, CAF `regn`).
    public let regions: [AudioFileRegionInfo]
    /// Offset of the audio data in the file.
    public let dataOffset: Int64
    /// Bytes of audio data (sum of packet sizes).
    public let audioDataByteCount: Int64
    /// Number of packets.
    public let packetCount: Int64
    /// Frames the packets decode to, before trimming priming and remainder.
    public let totalFrames: Int64
    /// The largest packet in the file.
    public let maximumPacketSize: UInt32
    /// The largest packet the format allows.
    public let packetSizeUpperBound: UInt32
    /// Bit rate in bits per second (stated, or computed from the data).
    public let bitRate: UInt32
    /// A problem met while scanning that did not stop the file from being read (a truncated
    /// last packet, trailing garbage); nil when the file is clean.
    public let warning: AudioError?

    private let reader: FileHandleReader
    // Constant-bit-rate layout: runs of packets contiguous in the file.
    private var cbrRuns: [(firstPacket: Int64, fileOffset: Int64, count: Int64)] = []
    // Variable-bit-rate index.
    private var offsets: [Int64] = []
    private var sizes: [UInt32] = []
    private var frames: [UInt32] = []
    private var detachedPackets: [Int64: [UInt8]] = [:]

    /// Opens and indexes `path`. Throws an ``AudioError`` saying what is wrong and at which byte
    /// when the file cannot be read as audio.
    public init(path: String, typeHint: AudioFileType? = nil, limits: ParserLimits = .default) throws(AudioError) {
        let reader = try FileHandleReader(path: path)
        self.reader = reader
        self.path = path
        self.fileSize = reader.size
        // Index only: the scan keeps offsets and sizes, so the parser does not copy the packets'
        // bytes (a 1 MB MP3 was copied in full before the first packet could be read).
        let stream = AudioFileStream(fileTypeHint: typeHint, limits: limits, indexOnly: true)
        var cbrRuns: [(Int64, Int64, Int64)] = []
        var offsets: [Int64] = [], sizes: [UInt32] = [], frames: [UInt32] = []
        var detached: [Int64: [UInt8]] = [:]
        var bytes: Int64 = 0
        var largest: UInt32 = 0
        var count: Int64 = 0
        var warning: AudioError?
        let handler: (AudioFileStreamEvent) -> Void = { event in
            guard case .packets(let batch) = event else { return }
            if batch.packetDescriptions.isEmpty {
                let bpp = Int64(batch.packetCount > 0 ? batch.data.count / batch.packetCount : 0)
                if let last = cbrRuns.last, last.0 + last.2 == batch.firstPacketIndex,
                   last.1 + last.2 * bpp == batch.fileOffset {
                    cbrRuns[cbrRuns.count - 1].2 += Int64(batch.packetCount)
                } else {
                    cbrRuns.append((batch.firstPacketIndex, batch.fileOffset, Int64(batch.packetCount)))
                }
                largest = max(largest, UInt32(truncatingIfNeeded: bpp))
                bytes += Int64(batch.data.count)
            } else {
                for (i, d) in batch.packetDescriptions.enumerated() {
                    let fileOffset = i < batch.packetFileOffsets.count ? batch.packetFileOffsets[i] : -1
                    offsets.append(fileOffset)
                    sizes.append(d.dataByteSize)
                    frames.append(d.variableFramesInPacket)
                    largest = max(largest, d.dataByteSize)
                    bytes += Int64(d.dataByteSize)
                    if fileOffset < 0 {
                        let start = Int(d.startOffset)
                        detached[batch.firstPacketIndex + Int64(i)] = Array(batch.data[start..<(start + Int(d.dataByteSize))])
                    }
                }
            }
            count = batch.firstPacketIndex + Int64(batch.packetCount)
        }
        // 64 KB reads: the scan's peak memory is this buffer plus the index (it was 1 MB plus a
        // copy of every packet in it), and the parser is as fast on smaller chunks.
        let chunk = 1 << 16
        var buffer = [UInt8](repeating: 0, count: chunk)
        var offset: Int64 = 0
        do throws(AudioError) {
            while true {
                let n = try withMutableRawBytes(&buffer) { (raw) throws(AudioError) -> Int in try reader.read(into: raw, at: offset) }
                if n == 0 { break }
                try withRawBytes(buffer) { (raw) throws(AudioError) in
                    try stream.parse(UnsafeRawBufferPointer(rebasing: raw[0..<n]), handler)
                }
                offset += Int64(n)
            }
            try stream.finish(handler)
            // Packets stored before their index (MP4 with moov last): seek back and read them.
            if stream.isNotOptimized, let total = stream.audioDataPacketCount, count < total {
                let seek = try stream.seek(toPacket: count)
                var at = seek.byteOffset
                var first = true
                while at < reader.size {
                    let n = try withMutableRawBytes(&buffer) { (raw) throws(AudioError) -> Int in try reader.read(into: raw, at: at) }
                    if n == 0 { break }
                    try withRawBytes(buffer) { (raw) throws(AudioError) in
                        try stream.parse(UnsafeRawBufferPointer(rebasing: raw[0..<n]), flags: first ? .discontinuity : [], handler)
                    }
                    first = false
                    at += Int64(n)
                    if count >= total { break }
                }
            }
        } catch {
            guard stream.dataFormat != nil, count > 0 else { throw error }
            warning = error
        }
        guard let format = stream.dataFormat, let fileFormat = stream.fileFormat else {
            throw AudioError(.invalidData, component: "AudioFile", "no audio format found in \(path)", offset: offset)
        }
        try format.checkPlausible(component: "AudioFile", at: stream.dataOffset)
        self.fileFormat = fileFormat
        self.dataFormat = format
        self.formatList = stream.formatList
        self.magicCookie = stream.magicCookie
        self.channelLayout = stream.channelLayout
        var packetTable = stream.packetTableInfo
        self.infoDictionary = stream.infoDictionary
        self.markers = stream.markers
        self.regions = stream.regions
        self.dataOffset = stream.dataOffset ?? 0
        self.audioDataByteCount = bytes
        self.packetCount = count
        self.cbrRuns = cbrRuns.map { (firstPacket: $0.0, fileOffset: $0.1, count: $0.2) }
        self.offsets = offsets
        self.sizes = sizes
        self.frames = frames
        self.detachedPackets = detached
        self.warning = warning
        self.maximumPacketSize = max(largest, format.bytesPerPacket)
        self.packetSizeUpperBound = max(stream.packetSizeUpperBound, largest)
        if format.framesPerPacket > 0 {
            // A fixed-blocksize FLAC: what its frames hold (the last one is usually short).
            let exact = format.formatID == .flac && count > 0 && frames.count == Int(count) && !frames.contains(0)
            totalFrames = exact ? frames.reduce(0) { $0 + Int64($1) } : count * Int64(format.framesPerPacket)
        } else {
            totalFrames = frames.reduce(0) { $0 + Int64($1) }
        }
        // An ALAC packet that holds fewer frames than the format's says so in its own header;
        // some muxers (FFmpeg's CAF writer) leave the remainder out of the packet table.
        if format.formatID == .appleLossless, count > 0, format.framesPerPacket > 0,
           (packetTable?.remainderFrames ?? 0) == 0, (packetTable?.primingFrames ?? 0) == 0,
           let lastSize = sizes.last, offsets.last ?? -1 >= 0,
           let head = try? reader.readBytesDirect(at: offsets.last!, count: Int(min(lastSize, 8))),
           let partial = alacPartialFrameCount(head), partial < format.framesPerPacket {
            let remainder = Int32(format.framesPerPacket - partial)
            packetTable = AudioFilePacketTableInfo(numberValidFrames: totalFrames - Int64(remainder), primingFrames: 0, remainderFrames: remainder)
        }
        // A fixed-blocksize FLAC's last frame is usually short: its packet table (valid frames from
        // STREAMINFO) gets the remainder, so valid + remainder = packets x frames per packet; the
        // total (above) is what the frames hold (each frame header says).
        if format.formatID == .flac, format.framesPerPacket > 0, count > 0 {
            let nominal = count * Int64(format.framesPerPacket)
            if let table = packetTable, table.primingFrames == 0, table.remainderFrames == 0, table.numberValidFrames > 0,
               table.numberValidFrames < nominal, nominal - table.numberValidFrames < Int64(format.framesPerPacket) {
                packetTable = AudioFilePacketTableInfo(numberValidFrames: table.numberValidFrames, primingFrames: 0,
                                                       remainderFrames: Int32(nominal - table.numberValidFrames))
            }
        }
        self.packetTableInfo = packetTable
        if let stated = stream.infoDictionary["nominal bit rate"].flatMap({ UInt32($0) }) {
            bitRate = stated
        } else if format.sampleRate > 0, totalFrames > 0 {
            let seconds = Double(totalFrames) / format.sampleRate
            bitRate = clampedUInt32(Double(bytes) * 8 / seconds)
        } else {
            bitRate = stream.bitRate
        }
    }

    /// Frames of real audio: the stated valid frames, else all frames.
    public var validFrames: Int64 { packetTableInfo?.numberValidFrames ?? totalFrames }

    /// Duration in seconds of the valid frames.
    public var duration: Double { dataFormat.sampleRate > 0 ? Double(validFrames) / dataFormat.sampleRate : 0 }

    /// Frames in packet `index` (for formats whose frames per packet vary).
    public func framesInPacket(_ index: Int64) -> UInt32 {
        if dataFormat.framesPerPacket > 0 { return dataFormat.framesPerPacket }
        return index >= 0 && index < Int64(frames.count) ? frames[Int(index)] : 0
    }

    /// Bytes of packets `range` (clamped to the file), from the index: exact, as the packets are
    /// indexed when the file is opened (Apple's `kAudioFilePropertyPacketRangeByteCountUpperBound`).
    public func byteCount(ofPackets range: Range<Int64>) -> Int64 {
        let lower = max(0, range.lowerBound), upper = min(packetCount, range.upperBound)
        guard lower < upper else { return 0 }
        if offsets.isEmpty { return (upper - lower) * Int64(dataFormat.bytesPerPacket) }
        var total: Int64 = 0
        for i in Int(lower)..<Int(min(upper, Int64(sizes.count))) { total += Int64(sizes[i]) }
        return total
    }

    /// Reads packets `range` (clamped to the file): their bytes back to back, with packet
    /// descriptions for variable-size formats (Apple's `AudioFileReadPacketData`).
    public func readPackets(_ range: Range<Int64>) throws(AudioError) -> AudioPacketBatch {
        let lower = max(0, range.lowerBound), upper = min(packetCount, range.upperBound)
        var batch = AudioPacketBatch(firstPacketIndex: lower)
        guard lower < upper else { return batch }
        if !cbrRuns.isEmpty && offsets.isEmpty {
            let bpp = Int64(dataFormat.bytesPerPacket)
            var p = lower
            batch.fileOffset = -1
            while p < upper {
                guard let run = cbrRuns.last(where: { $0.firstPacket <= p }), p < run.firstPacket + run.count else {
                    throw AudioError(.invalidState, component: "AudioFile", "packet \(p) is not indexed")
                }
                let n = min(upper, run.firstPacket + run.count) - p
                let at = run.fileOffset + (p - run.firstPacket) * bpp
                if batch.fileOffset < 0 { batch.fileOffset = at }
                batch.data.append(contentsOf: try readBytes(at: at, count: Int(n * bpp)))
                p += n
            }
            batch.packetCount = Int(upper - lower)
            return batch
        }
        // Variable-size packets: read contiguous stretches at once.
        var p = Int(lower)
        batch.fileOffset = offsets[p]
        while p < Int(upper) {
            if offsets[p] < 0 {
                let bytes = detachedPackets[Int64(p)] ?? []
                batch.packetDescriptions.append(AudioStreamPacketDescription(startOffset: Int64(batch.data.count), variableFramesInPacket: frames[p], dataByteSize: UInt32(bytes.count)))
                batch.packetFileOffsets.append(-1)
                batch.data.append(contentsOf: bytes)
                p += 1
                continue
            }
            var q = p + 1
            var length = Int64(sizes[p])
            while q < Int(upper), offsets[q] >= 0, offsets[q] == offsets[q - 1] + Int64(sizes[q - 1]), length < 1 << 22 {
                length += Int64(sizes[q])
                q += 1
            }
            let start = Int64(batch.data.count)
            batch.data.append(contentsOf: try readBytes(at: offsets[p], count: Int(length)))
            var rel = start
            for i in p..<q {
                batch.packetDescriptions.append(AudioStreamPacketDescription(startOffset: rel, variableFramesInPacket: frames[i], dataByteSize: sizes[i]))
                batch.packetFileOffsets.append(offsets[i])
                rel += Int64(sizes[i])
            }
            p = q
        }
        batch.packetCount = Int(upper - lower)
        return batch
    }

    /// Reads `count` bytes at file offset `offset` (Apple's `AudioFileReadBytes`, but absolute).
    public func readBytes(at offset: Int64, count: Int) throws(AudioError) -> [UInt8] {
        guard offset >= 0, count >= 0, offset <= fileSize else {
            throw AudioError(.invalidArgument, component: "AudioFile", "byte range \(offset)+\(count) is outside the file (\(fileSize) bytes)")
        }
        var out = [UInt8](repeating: 0, count: count)
        let n = try withMutableRawBytes(&out) { (raw) throws(AudioError) -> Int in try reader.read(into: raw, at: offset) }
        if n < count {
            throw AudioError(.io, component: "AudioFile", "file ends after \(n) of \(count) bytes", offset: offset + Int64(n))
        }
        return out
    }
}
