import OATCore

/// A push parser for audio files and streams: Apple's `AudioFileStream`.
///
/// Feed it bytes as they arrive, in chunks of any size; it reports properties (format, magic
/// cookie, packet counts...) and packets through events, and the same input gives the same
/// events however it is split. Call ``finish(_:)`` at the end of the input so that the last
/// packet of a format whose packets end only where the next begins can be delivered.
///
/// ```swift
/// let stream = AudioFileStream()
/// try stream.parse(chunk) { event in ... }
/// try stream.finish { event in ... }
/// ```
///
/// Thread safety: not thread-safe; use it from one thread (the feeder) at a time.
public final class AudioFileStream {
    private var parser: any ContainerParser
    private var out: ParseOutput
    private var buffer: [UInt8] = []
    private var readIndex = 0
    /// Absolute offset of the next unread byte.
    private var position: Int64 = 0
    private var pendingSkip: Int64 = 0
    private var needed = 1
    private var isFinished = false
    private var failure: AudioError?
    private var pendingSeek: AudioFileStreamSeekResult?
    /// The limits on what input can make the parser hold.
    public let limits: ParserLimits

    /// Apple's `AudioFileStream` cannot deliver audio data that comes before its index or format
    /// (an MP4 `mdat` before its `moov`, a CAF `data` chunk before its `pakt`, an AIFF `SSND`
    /// before `COMM`): `AudioFileStreamParseBytes` returns `kAudioFileStreamError_NotOptimized`
    /// when it reaches that data. When true, ``parse(_:flags:_:)`` throws that error ('optm') at
    /// the same place. When false (the default), the data is skipped, the index read, and
    /// ``isNotOptimized`` tells the caller to seek back (``skipTarget``, ``seek(toPacket:)``).
    public var failsWhenNotOptimized: Bool {
        get { out.failsWhenNotOptimized }
        set { out.failsWhenNotOptimized = newValue }
    }

    /// Creates a stream parser. `fileTypeHint` picks the container when the bytes do not say
    /// (raw MPEG audio and ADTS have no magic number); otherwise the content decides.
    public init(fileTypeHint: AudioFileType? = nil, limits: ParserLimits = .default) {
        self.limits = limits
        self.parser = ProbeParser(hint: fileTypeHint)
        self.out = ParseOutput(limits: limits)
    }

    /// An index-only stream (``AudioFile``'s scan): variable-size packets contiguous in the file
    /// come without their bytes (see `ParseOutput.indexOnly`).
    convenience init(fileTypeHint: AudioFileType?, limits: ParserLimits, indexOnly: Bool) {
        self.init(fileTypeHint: fileTypeHint, limits: limits)
        out.indexOnly = indexOnly
    }

    // MARK: Parsing

    /// Parses the next bytes of the stream and calls `handler` for each event, in order.
    ///
    /// Pass `.discontinuity` for bytes that do not follow the previous ones (after
    /// ``seek(toPacket:)``, or when data was lost). Throws an ``AudioError`` naming the
    /// problem and its byte offset; events before the error have been delivered, and later calls
    /// throw the same error.
    public func parse(_ bytes: UnsafeRawBufferPointer, flags: AudioFileStreamParseFlags = [],
                      _ handler: (AudioFileStreamEvent) -> Void) throws(AudioError) {
        if let failure { throw failure }
        if flags.contains(.discontinuity) { discontinuity() }
        if isFinished { return }
        do {
            try run(bytes, isEOF: false, handler)
        } catch {
            deliver(handler)
            failure = error
            throw error
        }
        deliver(handler)
    }

    /// Parses the next bytes; see ``parse(_:flags:_:)``.
    public func parse(_ bytes: [UInt8], flags: AudioFileStreamParseFlags = [],
                      _ handler: (AudioFileStreamEvent) -> Void) throws(AudioError) {
        try withRawBytes(bytes) { (raw) throws(AudioError) in try parse(raw, flags: flags, handler) }
    }

    /// Parses the next bytes and returns the events they produced.
    public func parse(_ bytes: [UInt8], flags: AudioFileStreamParseFlags = []) throws(AudioError) -> [AudioFileStreamEvent] {
        var events: [AudioFileStreamEvent] = []
        try parse(bytes, flags: flags) { events.append($0) }
        return events
    }

    /// Tells the parser the input has ended: delivers what is pending and reports a stream cut
    /// off inside a header as an error. Further input is ignored.
    public func finish(_ handler: (AudioFileStreamEvent) -> Void) throws(AudioError) {
        if let failure { throw failure }
        if isFinished { deliver(handler); return }
        do throws(AudioError) {
            try run(UnsafeRawBufferPointer(start: nil, count: 0), isEOF: true, handler)
            if out.info.dataFormat == nil {
                let empty = position == 0 && buffer.isEmpty
                throw AudioError(.invalidData, component: "AudioFileStream",
                                 empty ? "the input is empty" : "the input ended before an audio format was found",
                                 offset: position, osStatus: 0x7479_703F) // 'typ?'
            }
        } catch {
            isFinished = true
            deliver(handler)
            failure = error
            throw error
        }
        isFinished = true
        out.flushBatch()
        deliver(handler)
    }

    /// The absolute byte offset the parser is skipping to, while it is dropping bytes it does not
    /// need (an MP4 `mdat` before its `moov`, a large unneeded box or chunk); nil otherwise.
    /// A caller that can fetch from an offset (an HTTP Range request) may jump there instead of
    /// reading the skipped bytes: see ``skipToTarget()``.
    public var skipTarget: Int64? {
        pendingSkip > 0 && buffer.count - readIndex == 0 ? position + pendingSkip : nil
    }

    /// Tells the parser that the next bytes given to it start at ``skipTarget`` (the skipped
    /// bytes will not come). False, and nothing changes, when no skip is in progress.
    @discardableResult
    public func skipToTarget() -> Bool {
        guard pendingSkip > 0, buffer.count - readIndex == 0 else { return false }
        position += pendingSkip
        pendingSkip = 0
        return true
    }

    /// Tells the parser the input has ended and returns the last events.
    public func finish() throws(AudioError) -> [AudioFileStreamEvent] {
        var events: [AudioFileStreamEvent] = []
        try finish { events.append($0) }
        return events
    }

    private func deliver(_ handler: (AudioFileStreamEvent) -> Void) {
        out.flushBatch()
        handOut(handler)
    }

    /// Hands the pending events to `handler`, with ``currentEventDataFormat`` and
    /// ``currentEventMagicCookie`` as of each event.
    private func handOut(_ handler: (AudioFileStreamEvent) -> Void) {
        let events = out.events
        let snapshots = out.formatSnapshots
        out.events.removeAll(keepingCapacity: true)
        out.formatSnapshots.removeAll(keepingCapacity: true)
        var next = 0
        for (i, e) in events.enumerated() {
            while next < snapshots.count, snapshots[next].event <= i {
                deliveredFormat = (snapshots[next].format, snapshots[next].cookie)
                next += 1
            }
            handler(e)
        }
        while next < snapshots.count { deliveredFormat = (snapshots[next].format, snapshots[next].cookie); next += 1 }
    }

    private func discontinuity() {
        buffer.removeAll(keepingCapacity: true)
        readIndex = 0
        pendingSkip = 0
        needed = 1
        isFinished = false
        out.flushBatch()
        out.pendingDiscontinuity = true
        if let seek = pendingSeek {
            position = seek.byteOffset
            out.nextPacketIndex = seek.packetIndex
            parser.resume(at: seek.byteOffset, packetIndex: seek.packetIndex, &out)
            pendingSeek = nil
        } else {
            parser.resume(at: position, packetIndex: nil, &out)
        }
    }

    /// The parse loop: runs steps over the buffered bytes plus `input`, buffering what is left.
    private func run(_ input: UnsafeRawBufferPointer, isEOF: Bool, _ handler: (AudioFileStreamEvent) -> Void) throws(AudioError) {
        var input = input
        // Bytes to skip are dropped from the incoming data without buffering.
        if pendingSkip > 0 {
            let bufferedUnread = buffer.count - readIndex
            let fromBuffer = Int(min(Int64(bufferedUnread), pendingSkip))
            readIndex += fromBuffer
            pendingSkip -= Int64(fromBuffer)
            position += Int64(fromBuffer)
            let fromInput = Int(min(Int64(input.count), pendingSkip))
            input = UnsafeRawBufferPointer(rebasing: input[fromInput...])
            pendingSkip -= Int64(fromInput)
            position += Int64(fromInput)
            if pendingSkip > 0 && !isEOF { return }
            if pendingSkip > 0 { pendingSkip = 0 }
        }
        if buffer.count - readIndex == 0 && input.count >= needed {
            // Fast path: parse straight from the caller's bytes, buffer only the tail.
            buffer.removeAll(keepingCapacity: true)
            readIndex = 0
            let used = try steps(input, isEOF: isEOF, handler)
            if used < input.count && !isFinished {
                let rest = UnsafeRawBufferPointer(rebasing: input[used...])
                if pendingSkip > 0 {
                    let n = Int(min(Int64(rest.count), pendingSkip))
                    pendingSkip -= Int64(n)
                    position += Int64(n)
                    buffer.append(contentsOf: rest[n...])
                } else {
                    buffer.append(contentsOf: rest)
                }
            }
            try checkBufferLimit()
            return
        }
        buffer.append(contentsOf: input)
        try checkBufferLimit()
        if buffer.count - readIndex < needed && !isEOF { return }
        let used = try withRawBytes(buffer) { (raw) throws(AudioError) -> Int in
            try steps(UnsafeRawBufferPointer(rebasing: raw[readIndex...]), isEOF: isEOF, handler)
        }
        readIndex += used
        if readIndex >= buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= 1 << 20)
            readIndex = 0
        } else if readIndex > 1 << 16 && readIndex * 2 > buffer.count {
            buffer.removeSubrange(0..<readIndex)
            readIndex = 0
        }
    }

    private func checkBufferLimit() throws(AudioError) {
        if buffer.count - readIndex > limits.maximumBufferedBytes + (1 << 20) {
            throw limitExceeded("AudioFileStream", "more than \(limits.maximumBufferedBytes) bytes buffered without progress", at: position)
        }
    }

    /// Runs parse steps over `bytes` (starting at `position`); returns bytes consumed or skipped
    /// within `bytes`. Sets `needed` when it stops for lack of data.
    private func steps(_ bytes: UnsafeRawBufferPointer, isEOF: Bool, _ handler: (AudioFileStreamEvent) -> Void) throws(AudioError) -> Int {
        var used = 0
        needed = 1
        while !isFinished {
            let avail = bytes.count - used
            if avail < needed && !isEOF { return used }
            let view = UnsafeRawBufferPointer(rebasing: bytes[used...])
            let mark = out.mark()
            let status: ParseStatus
            do {
                status = try parser.parse(view, at: position, isEOF: isEOF, &out)
            } catch let need as NeedMoreData {
                out.rollback(to: mark)
                status = .needMore(need.needed)
            } catch let error as AudioError {
                throw error
            } catch {
                throw AudioError(.invalidData, component: "AudioFileStream", "\(error)", offset: position)
            }
            if let format = out.info.dataFormat, format != mark.info.dataFormat {
                // One check for every parser: a format with absurd parameters (65535 channels,
                // a 0 Hz or 1e300 Hz rate, 2^32-1 frames per packet) is refused before anything
                // downstream sizes buffers from it.
                do throws(AudioError) {
                    try format.checkPlausible(component: "\(out.info.fileFormat.map { "\($0)" } ?? "AudioFileStream") data format", at: position)
                } catch {
                    out.rollback(to: mark) // nothing of the refused step is reported or kept
                    throw error
                }
            }
            if !out.events.isEmpty {
                // Report committed property changes as they happen (packets are batched).
                handOut(handler)
            }
            switch status {
            case .consumed(let n):
                guard n > 0, n <= avail else {
                    throw AudioError(.invalidState, component: "AudioFileStream", "parser consumed \(n) of \(avail) bytes", offset: position)
                }
                used += n
                position += Int64(n)
                needed = 1
            case .needMore(let n):
                if n > limits.maximumBufferedBytes {
                    throw limitExceeded("AudioFileStream", "a structure of \(n) bytes exceeds the \(limits.maximumBufferedBytes)-byte limit", at: position)
                }
                if isEOF {
                    if n <= avail {
                        throw AudioError(.invalidState, component: "AudioFileStream", "parser asked for \(n) bytes with \(avail) buffered at end of input", offset: position)
                    }
                    throw AudioError(.invalidData, component: "AudioFileStream",
                                     "the input ends \(n - avail) bytes short of a complete structure", offset: position + Int64(avail))
                }
                if n <= avail {
                    throw AudioError(.invalidState, component: "AudioFileStream", "parser asked for \(n) bytes with \(avail) buffered", offset: position)
                }
                needed = n
                return used
            case .skip(let n):
                guard n > 0 else {
                    throw AudioError(.invalidState, component: "AudioFileStream", "parser skipped \(n) bytes", offset: position)
                }
                let here = Int(min(Int64(avail), n))
                used += here
                position += Int64(here)
                pendingSkip = n - Int64(here)
                needed = 1
                if pendingSkip > 0 { return used }
            case .finished:
                isFinished = true
                return used
            }
        }
        return used
    }

    // MARK: Seeking

    /// Finds where packet `packet` begins: returns the byte offset to feed from and whether it
    /// is exact (from a table in the file: Xing TOC, FLAC seektable, MP4 sample table, CAF
    /// packet table, or constant bit rate) or estimated. Feed the bytes from that offset with the
    /// `.discontinuity` flag; packets delivered then start at ``AudioFileStreamSeekResult/packetIndex``.
    public func seek(toPacket packet: Int64) throws(AudioError) -> AudioFileStreamSeekResult {
        let result = try parser.seek(toPacket: packet, &out)
        pendingSeek = result
        return result
    }

    // MARK: Properties

    /// True once the parser can deliver packets (`ReadyToProducePackets`).
    public var isReadyToProducePackets: Bool { out.info.readyToProducePackets }
    /// The container type (`FileFormat`).
    public var fileFormat: AudioFileType? { out.info.fileFormat }
    /// The stream description of the audio data (`DataFormat`).
    public var dataFormat: AudioStreamBasicDescription? { out.info.dataFormat }
    /// The data format as of the event being handled: while a handler runs, the format the
    /// packets being delivered have (``dataFormat`` is already the newest one when a chained
    /// stream changed format later in the same parse call). Outside a handler, the format of the
    /// last event delivered.
    public var currentEventDataFormat: AudioStreamBasicDescription? { deliveredFormat?.format ?? out.info.dataFormat }
    /// The magic cookie as of the event being handled (see ``currentEventDataFormat``).
    public var currentEventMagicCookie: [UInt8]? { deliveredFormat.map { $0.cookie } ?? out.info.magicCookie }
    private var deliveredFormat: (format: AudioStreamBasicDescription?, cookie: [UInt8]?)?
    /// The layers of the format, richest first (`FormatList`); the data format when not layered.
    public var formatList: [AudioFormatListItem] {
        if !out.info.formatList.isEmpty { return out.info.formatList }
        guard let f = out.info.dataFormat else { return [] }
        return [AudioFormatListItem(format: f, channelLayoutTag: channelLayout?.tag ?? .default(channels: f.channelsPerFrame))]
    }
    /// The decoder's magic cookie (`MagicCookieData`), if the format has one.
    public var magicCookie: [UInt8]? { out.info.magicCookie }
    /// Bytes of audio data, when known (`AudioDataByteCount`).
    public var audioDataByteCount: Int64? { out.info.audioDataByteCount }
    /// Packets of audio data, when known (`AudioDataPacketCount`).
    public var audioDataPacketCount: Int64? { out.info.audioDataPacketCount }
    /// Offset of the first byte of audio data (`DataOffset`).
    public var dataOffset: Int64? { out.info.dataOffset }
    /// The channel layout (`ChannelLayout`), if the file gives one.
    public var channelLayout: ChannelLayout? { out.info.channelLayout }
    /// Valid, priming and remainder frames (`PacketTableInfo`), if the file gives them.
    public var packetTableInfo: AudioFilePacketTableInfo? { out.info.packetTableInfo }
    /// Tags and facts (`InfoDictionary`), keyed by ``InfoKey`` strings.
    public var infoDictionary: [String: String] { out.info.infoDictionary }
    /// Markers the container gives (WAV `cue `, AIFF `MARK`, CAF `mark`), as read so far.
    public var markers: [AudioFileMarkerInfo] { out.info.markers }
    /// Regions the container gives (WAV `ltxt`, AIFF `INST` loops, CAF `regn`), as read so far.
    public var regions: [AudioFileRegionInfo] { out.info.regions }
    /// True when the packets precede the index describing them (MP4 with `moov` at the end):
    /// seek to deliver packets (Apple's `kAudioFileStreamError_NotOptimized` case).
    public var isNotOptimized: Bool { out.info.isNotOptimized }
    /// Packets delivered so far.
    public var packetsDelivered: Int64 { out.packetsSeen }
    /// Frames in the packets delivered so far.
    public var framesDelivered: Int64 { out.framesSeen }

    /// The largest packet: stated by the file, else the largest seen (`MaximumPacketSize`).
    public var maximumPacketSize: UInt32 {
        max(out.info.maximumPacketSize ?? 0, out.largestPacketSeen, dataFormat?.bytesPerPacket ?? 0)
    }

    /// The largest packet the format allows (`PacketSizeUpperBound`).
    public var packetSizeUpperBound: UInt32 {
        if let b = out.info.packetSizeUpperBound { return b }
        if let f = dataFormat, f.bytesPerPacket > 0 { return f.bytesPerPacket }
        return maximumPacketSize
    }

    /// Average bytes per packet (`AverageBytesPerPacket`): stated, else from the data counts,
    /// else from the packets seen.
    public var averageBytesPerPacket: Double {
        if let a = out.info.averageBytesPerPacket { return a }
        if let f = dataFormat, f.bytesPerPacket > 0 { return Double(f.bytesPerPacket) }
        if let b = audioDataByteCount, let p = audioDataPacketCount, p > 0 { return Double(b) / Double(p) }
        if out.packetsSeen > 0 { return Double(out.packetBytesSeen) / Double(out.packetsSeen) }
        return 0
    }

    /// Bit rate in bits per second (`BitRate`): stated, else derived from packet sizes.
    public var bitRate: UInt32 {
        if let b = out.info.bitRate { return b }
        guard let f = dataFormat, f.sampleRate > 0 else { return 0 }
        if f.isPCM { return clampedUInt32(f.sampleRate * Double(f.bytesPerFrame) * 8) }
        let fpp = f.framesPerPacket > 0 ? Double(f.framesPerPacket)
            : (out.packetsSeen > 0 ? Double(out.framesSeen) / Double(out.packetsSeen) : 0)
        guard fpp > 0 else { return 0 }
        let bits = averageBytesPerPacket * 8 * f.sampleRate / fpp
        return clampedUInt32(bits)
    }

    /// The first frame of `packet` (`PacketToFrame`).
    public func frame(forPacket packet: Int64) -> Int64? {
        if let f = parser.frame(forPacket: packet) { return f }
        guard let fpp = dataFormat?.framesPerPacket, fpp > 0 else { return nil }
        return packet.multipliedReportingOverflow(by: Int64(fpp)).overflow ? nil : packet * Int64(fpp)
    }

    /// The packet containing `frame` and the frame's offset in it (`FrameToPacket`).
    public func packet(forFrame frame: Int64) -> (packet: Int64, frameOffsetInPacket: Int64)? {
        guard let fpp = dataFormat?.framesPerPacket, fpp > 0, frame >= 0 else { return nil }
        return (frame / Int64(fpp), frame % Int64(fpp))
    }

    /// The byte offset (relative to the audio data) of `packet` and whether it is estimated
    /// (`PacketToByte`).
    public func byteOffset(forPacket packet: Int64) -> (offset: Int64, isEstimated: Bool)? {
        guard let f = dataFormat, packet >= 0 else { return nil }
        if f.bytesPerPacket > 0 {
            let (offset, overflow) = packet.multipliedReportingOverflow(by: Int64(f.bytesPerPacket))
            return overflow ? nil : (offset, false)
        }
        let estimate = Double(packet) * averageBytesPerPacket
        return estimate > 0 && estimate < 9e18 ? (Int64(estimate), true) : (packet == 0 ? (0, true) : nil)
    }

    /// The packet at byte offset `byte` (relative to the audio data) and whether it is estimated
    /// (`ByteToPacket`).
    public func packet(forByteOffset byte: Int64) -> (packet: Int64, isEstimated: Bool)? {
        guard let f = dataFormat, byte >= 0 else { return nil }
        if f.bytesPerPacket > 0 { return (byte / Int64(f.bytesPerPacket), false) }
        let avg = averageBytesPerPacket
        guard avg > 0 else { return nil }
        let estimate = Double(byte) / avg
        return estimate < 9e18 ? (Int64(estimate), true) : nil
    }
}
