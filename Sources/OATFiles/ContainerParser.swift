import OATCore

/// Everything a container parser has learnt about the stream; the stream's properties.
struct StreamInfo: Equatable {
    var readyToProducePackets = false
    var fileFormat: AudioFileType?
    var dataFormat: AudioStreamBasicDescription?
    var formatList: [AudioFormatListItem] = []
    var magicCookie: [UInt8]?
    var audioDataByteCount: Int64?
    var audioDataPacketCount: Int64?
    var maximumPacketSize: UInt32?
    var packetSizeUpperBound: UInt32?
    var dataOffset: Int64?
    var channelLayout: ChannelLayout?
    var packetTableInfo: AudioFilePacketTableInfo?
    var bitRate: UInt32?
    var averageBytesPerPacket: Double?
    var infoDictionary: [String: String] = [:]
    /// Markers the container gives (WAV `cue `, AIFF `MARK`, CAF `mark`), in file order.
    var markers: [AudioFileMarkerInfo] = []
    /// Regions the container gives (WAV `ltxt`, AIFF `INST` loops, CAF `regn`).
    var regions: [AudioFileRegionInfo] = []
    /// Packets come before the index that describes them (MP4 with `moov` after `mdat`): a
    /// streaming reader must seek (see ``AudioFileStream/seek(toPacket:)``).
    var isNotOptimized = false
}

/// What a parse step did.
enum ParseStatus: Equatable {
    /// The step consumed this many bytes (> 0); call again.
    case consumed(Int)
    /// Call again once at least this many bytes are available from the same position.
    case needMore(Int)
    /// Discard this many bytes (may reach past what is buffered), then call again.
    case skip(Int64)
    /// Nothing more to parse: ignore the rest of the input.
    case finished
}

/// A container parser: a resumable state machine fed by ``AudioFileStream``.
///
/// Contract: each call sees the unread bytes from the current position (`input[0]` is at
/// absolute offset `offset`). A step either commits (returns `consumed`/`skip`/`finished`) or
/// asks for more bytes (returns `needMore` or lets a ``ByteReader`` throw ``NeedMoreData``);
/// when it asks for more, any state it changed must be left as it was, and the stream rolls
/// back what the step reported to `out`. Decisions may depend on the bytes only, never on how
/// many happen to be buffered, so that every split of the input gives the same events. At end of
/// input (`isEOF`), a step that cannot complete should emit what it can and return `finished`
/// or throw an ``AudioError`` saying what was cut off.
protocol ContainerParser {
    mutating func parse(_ input: UnsafeRawBufferPointer, at offset: Int64, isEOF: Bool,
                        _ out: inout ParseOutput) throws -> ParseStatus

    /// Where to resume to reach `packet`; the parser prepares to receive bytes from there.
    mutating func seek(toPacket packet: Int64, _ out: inout ParseOutput) throws(AudioError) -> AudioFileStreamSeekResult

    /// The next bytes begin at `offset` and do not follow the previous ones; resynchronise.
    /// Called after ``seek(toPacket:_:)`` (with the packet it chose) and on a discontinuity
    /// flag without a seek (packet nil).
    mutating func resume(at offset: Int64, packetIndex: Int64?, _ out: inout ParseOutput)

    /// Frame at which `packet` starts, when the parser knows it exactly (variable frames).
    func frame(forPacket packet: Int64) -> Int64?
}

extension ContainerParser {
    /// Default seek for contiguous audio data: exact for constant bit rate, else estimated from
    /// the average packet size.
    mutating func seek(toPacket packet: Int64, _ out: inout ParseOutput) throws(AudioError) -> AudioFileStreamSeekResult {
        try defaultSeek(toPacket: packet, out.info, component: "AudioFileStream")
    }

    func frame(forPacket packet: Int64) -> Int64? { nil }
}

/// Shared arithmetic seek: exact for CBR data, estimated from the average packet size otherwise.
func defaultSeek(toPacket packet: Int64, _ info: StreamInfo, component: String) throws(AudioError) -> AudioFileStreamSeekResult {
    guard packet >= 0 else {
        throw AudioError(.invalidArgument, component: component, "packet \(packet) is negative")
    }
    guard let format = info.dataFormat, let dataOffset = info.dataOffset else {
        throw AudioError(.invalidState, component: component, "cannot seek before the data format and data offset are known", osStatus: 0x6473_6F6E)
    }
    if let count = info.audioDataPacketCount, packet > count {
        throw AudioError(.invalidArgument, component: component, "packet \(packet) is past the last packet (\(count))")
    }
    if format.bytesPerPacket > 0 {
        let (rel, overflow) = packet.multipliedReportingOverflow(by: Int64(format.bytesPerPacket))
        if overflow { throw AudioError(.invalidArgument, component: component, "packet \(packet) is out of range") }
        return AudioFileStreamSeekResult(byteOffset: try InputArithmetic(component, code: .invalidArgument).add(dataOffset, rel, "offset of packet \(packet)"),
                                         dataByteOffset: rel, isEstimated: false, packetIndex: packet)
    }
    var average = info.averageBytesPerPacket ?? 0
    if average <= 0, let bytes = info.audioDataByteCount, let packets = info.audioDataPacketCount, packets > 0 {
        average = Double(bytes) / Double(packets)
    }
    guard average > 0 else {
        throw AudioError(.valueUnknown, component: component, "no packet size known yet to estimate a seek offset")
    }
    // A packet far past the data (no packet count known) must not trap in the conversion.
    let c = InputArithmetic(component, code: .invalidArgument)
    let rel = try c.convert((Double(packet) * average).rounded(.down), to: Int64.self, "estimated offset of packet \(packet)")
    return AudioFileStreamSeekResult(byteOffset: try c.add(dataOffset, rel, "offset of packet \(packet)"), dataByteOffset: rel, isEstimated: true, packetIndex: packet)
}

/// What parse steps report: property changes and packets, in order.
struct ParseOutput {
    var info = StreamInfo()
    var events: [AudioFileStreamEvent] = []
    var batch: AudioPacketBatch?
    var nextPacketIndex: Int64 = 0
    var pendingDiscontinuity = false
    let limits: ParserLimits
    /// The format and cookie as of each `.dataFormat`/`.magicCookieData` event in ``events``
    /// (event index), so a reader handed the events later sees the values of their time (a
    /// chained Ogg stream changes format within one parse call).
    var formatSnapshots: [(event: Int, format: AudioStreamBasicDescription?, cookie: [UInt8]?)] = []

    // Observed over the packets delivered so far.
    var packetsSeen: Int64 = 0
    var packetBytesSeen: Int64 = 0
    var framesSeen: Int64 = 0
    var largestPacketSeen: UInt32 = 0
    /// Index-only parsing (``AudioFile``'s scan): a variable-size packet that is contiguous in
    /// the file is delivered as its description and file offset only, without copying its bytes
    /// into the batch's data (`dataByteSize` holds its size, `startOffset` is 0).
    var indexOnly = false
    /// Apple's behaviour for audio data met before what is needed to deliver it (see
    /// ``AudioFileStream/failsWhenNotOptimized``): parsers throw ``notOptimized(_:_:at:)`` there.
    var failsWhenNotOptimized = false

    init(limits: ParserLimits) { self.limits = limits }

    /// Sets a property and reports it when the value changes.
    mutating func set<T: Equatable>(_ keyPath: WritableKeyPath<StreamInfo, T>, _ value: T, _ property: AudioFileStreamProperty) {
        guard info[keyPath: keyPath] != value else { return }
        info[keyPath: keyPath] = value
        report(property)
    }

    /// Reports a property (after changing `info` directly).
    mutating func report(_ property: AudioFileStreamProperty) {
        flushBatch()
        events.append(.propertyChanged(property))
        if property == .dataFormat || property == .magicCookieData {
            formatSnapshots.append((events.count - 1, info.dataFormat, info.magicCookie))
        }
    }

    /// Adds a key to the info dictionary (reported as one change per call).
    mutating func setTags(_ tags: [String: String]) {
        var merged = info.infoDictionary
        for (k, v) in tags where !v.isEmpty { merged[k] = v }
        set(\.infoDictionary, merged, .infoDictionary)
    }

    /// Marks the stream ready to produce packets (once).
    mutating func ready() { set(\.readyToProducePackets, true, .readyToProducePackets) }

    mutating func flushBatch() {
        if let b = batch, b.packetCount > 0 { events.append(.packets(b)) }
        batch = nil
    }

    private mutating func startBatch(cbr: Bool, fileOffset: Int64) {
        if let b = batch, b.packetDescriptions.isEmpty == cbr { return }
        flushBatch()
        batch = AudioPacketBatch(firstPacketIndex: nextPacketIndex, fileOffset: fileOffset, isDiscontinuous: pendingDiscontinuity)
        pendingDiscontinuity = false
    }

    /// Emits one variable-size packet. `fileOffset` is -1 when its bytes are not contiguous in
    /// the file. `frames` is the packet's frame count when the format's frames vary, else 0.
    mutating func emitPacket(_ bytes: UnsafeRawBufferPointer, fileOffset: Int64, frames: UInt32 = 0) {
        startBatch(cbr: false, fileOffset: fileOffset)
        let size = UInt32(truncatingIfNeeded: bytes.count)
        batch!.packetDescriptions.append(AudioStreamPacketDescription(
            startOffset: Int64(batch!.data.count), variableFramesInPacket: frames, dataByteSize: size))
        batch!.packetFileOffsets.append(fileOffset)
        if !indexOnly || fileOffset < 0 { batch!.data.append(contentsOf: bytes) }
        batch!.packetCount += 1
        nextPacketIndex += 1
        packetsSeen += 1
        packetBytesSeen += Int64(bytes.count)
        largestPacketSeen = max(largestPacketSeen, size)
        if frames > 0 { framesSeen += Int64(frames) }
        else if let fpp = info.dataFormat?.framesPerPacket { framesSeen += Int64(fpp) }
    }

    /// Emits `count` constant-size packets stored back to back in `bytes`, contiguous in the
    /// file from `fileOffset`.
    mutating func emitConstantPackets(_ bytes: UnsafeRawBufferPointer, count: Int, fileOffset: Int64) {
        guard count > 0 else { return }
        if let b = batch, b.packetDescriptions.isEmpty, b.packetCount > 0,
           b.fileOffset + Int64(b.data.count) != fileOffset {
            flushBatch()
        }
        startBatch(cbr: true, fileOffset: fileOffset)
        batch!.data.append(contentsOf: bytes)
        batch!.packetCount += count
        nextPacketIndex += Int64(count)
        packetsSeen += Int64(count)
        packetBytesSeen += Int64(bytes.count)
        largestPacketSeen = max(largestPacketSeen, UInt32(truncatingIfNeeded: bytes.count / count))
        framesSeen += Int64(count) * Int64(info.dataFormat?.framesPerPacket ?? 1)
    }

    struct Mark {
        var info: StreamInfo
        var eventCount: Int
        var batchFirst: Int64?
        var batchPackets: Int
        var batchBytes: Int
        var nextPacketIndex: Int64
        var pendingDiscontinuity: Bool
        var stats: (Int64, Int64, Int64, UInt32)
    }

    func mark() -> Mark {
        Mark(info: info, eventCount: events.count, batchFirst: batch?.firstPacketIndex,
             batchPackets: batch?.packetCount ?? 0, batchBytes: batch?.data.count ?? 0,
             nextPacketIndex: nextPacketIndex, pendingDiscontinuity: pendingDiscontinuity,
             stats: (packetsSeen, packetBytesSeen, framesSeen, largestPacketSeen))
    }

    /// Undoes everything reported since `m` (a step that asked for more bytes).
    mutating func rollback(to m: Mark) {
        var restored: AudioPacketBatch?
        if let first = m.batchFirst {
            if let b = batch, b.firstPacketIndex == first { restored = b }
            else {
                for e in events[m.eventCount...] {
                    if case .packets(let b) = e, b.firstPacketIndex == first { restored = b; break }
                }
            }
            if var b = restored {
                b.data.removeSubrange(m.batchBytes...)
                if !b.packetDescriptions.isEmpty {
                    b.packetDescriptions.removeSubrange(m.batchPackets...)
                    b.packetFileOffsets.removeSubrange(m.batchPackets...)
                }
                b.packetCount = m.batchPackets
                restored = b
            }
        }
        events.removeSubrange(m.eventCount...)
        formatSnapshots.removeAll { $0.event >= m.eventCount }
        batch = restored
        info = m.info
        nextPacketIndex = m.nextPacketIndex
        pendingDiscontinuity = m.pendingDiscontinuity
        (packetsSeen, packetBytesSeen, framesSeen, largestPacketSeen) = m.stats
    }
}

/// Reads a container's fixed-size leading header (`size` bytes) with `read`. Input too short for
/// it asks for more bytes (``NeedMoreData``), except at the end of the file, where it is invalid
/// data naming the header (`what`), its size and how many bytes there were.
func readLeadingHeader<T>(_ input: UnsafeRawBufferPointer, at offset: Int64, isEOF: Bool, component: String, what: String, size: Int,
                          _ read: (inout ByteReader) throws(NeedMoreData) -> T) throws -> T {
    var r = ByteReader(input, baseOffset: offset)
    do {
        return try read(&r)
    } catch {
        if isEOF { throw invalidData(component, "the file ends inside the \(what) (\(input.count) of \(size) bytes)", at: offset + Int64(input.count)) }
        throw error
    }
}

/// An invalid-data error naming the component and the absolute offset.
func invalidData(_ component: String, _ message: String, at offset: Int64) -> AudioError {
    AudioError(.invalidData, component: component, message, offset: offset, osStatus: 0x6474_613F) // 'dta?'
}

/// An unsupported-format error naming the component and the absolute offset.
func unsupported(_ component: String, _ message: String, at offset: Int64) -> AudioError {
    AudioError(.unsupportedFormat, component: component, message, offset: offset, osStatus: 0x666D_743F) // 'fmt?'
}

/// Audio data comes before the index or format that describes it, and the stream was asked to
/// fail there as Apple's does (`kAudioFileStreamError_NotOptimized`, 'optm').
func notOptimized(_ component: String, _ message: String, at offset: Int64) -> AudioError {
    AudioError(.unsupportedFormat, component: component, message, offset: offset, osStatus: 0x6F70_746D) // 'optm'
}

/// A limit-exceeded error naming the component and the absolute offset.
func limitExceeded(_ component: String, _ message: String, at offset: Int64) -> AudioError {
    AudioError(.limitExceeded, component: component, message, offset: offset)
}
