import OATConversion
import OATCore
import OATNetwork
import OATDevices
import OATFiles
import OATQueueEngine
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The parse-and-decode pump's state and rules: the item being decoded and the one opened ahead
/// of it for a gapless join (each ``ItemDecoder`` holds its parser, converter and offsets), the
/// limits from the ``BufferingPolicy``, and the decisions that need no thread, parser or queue
/// (where a chunk is cut for metadata, when a new decoder is needed, an item's duration, when
/// bytes without audio fail an item).
///
/// A value the decoder thread owns; the decoder thread moves bytes through it (``step(_:)``).
struct DecodePump {
    /// The item being decoded.
    var current: ItemDecoder?
    /// The next item, opened while the current one's last bytes are decoded (gapless join).
    var prefetched: ItemDecoder?
    /// ``BufferingPolicy/maximumRetainedBytes``: parsed bytes kept for seeks inside them.
    let maximumRetainedBytes: Int
    /// Bytes parsed without a decoded frame before an item fails (at least 64 KiB).
    let maximumBytesWithoutAudio: Int64
    /// Skip requests without a decoded frame before an item fails.
    static let maximumSkipRequestsWithoutAudio = 16

    init(policy: BufferingPolicy) {
        maximumRetainedBytes = policy.maximumRetainedBytes
        maximumBytesWithoutAudio = max(64 << 10, Int64(policy.maximumBytesWithoutAudio))
    }

    /// The most bytes parsed (and their packets decoded) at a time. The decoded PCM waits in
    /// the converter's FIFO until the queue takes it, so the FIFO grows to one parse call's
    /// worth: a 32 KiB chunk of a 128 kbps MP3 (a server's burst) is 2 s of audio, 700 KB of
    /// Float32 stereo and a 1 MiB FIFO; 4 KiB (a quarter of a second) keeps it at 128 KiB
    /// (docs/PERFORMANCE.md, "The stream's footprint").
    static let maximumParseBytes = 4 << 10

    /// The bytes of a `count`-byte chunk at audio byte `offset` to parse before `metadata`
    /// applies: all of them unless the metadata begins inside the chunk, and at most `limit`.
    static func cut(_ count: Int, at offset: Int64, before metadata: StreamMetadata?, limit: Int = maximumParseBytes) -> Int {
        let count = min(count, max(1, limit))
        guard let m = metadata, m.audioByteOffset > offset, m.audioByteOffset < offset + Int64(count) else { return count }
        return Int(m.audioByteOffset - offset)
    }

    /// Whether the stream's format changed enough mid-item to need a new decoder: another codec,
    /// rate or channel count, a new codec setup (cookie) replacing one, or a new `oggLink` of a
    /// chain. Refinements of the same stream (a cookie arriving late) keep the decoder.
    static func needsNewDecoder(from old: AudioStreamBasicDescription?, cookie oldCookie: [UInt8]?,
                                to format: AudioStreamBasicDescription, cookie: [UInt8]?, oggLink: Bool) -> Bool {
        let changedShape = old.map {
            $0.formatID != format.formatID || $0.sampleRate != format.sampleRate || $0.channelsPerFrame != format.channelsPerFrame
        } ?? false
        let newSetup = !(oldCookie ?? []).isEmpty && !(cookie ?? []).isEmpty && cookie != oldCookie
        return changedShape || newSetup || oggLink
    }

    /// An on-demand item's duration in seconds: from its packet table's valid frames, else its
    /// packet count, else its size and bit rate; nil when none is known.
    static func duration(format: AudioStreamBasicDescription, validFrames: Int64?, packets: Int64?,
                         totalBytes: Int64?, dataOffset: Int64?, bitRate: UInt32) -> Double? {
        if let validFrames { return Double(validFrames) / format.sampleRate }
        if let packets, format.framesPerPacket > 0 {
            return Double(packets) * Double(format.framesPerPacket) / format.sampleRate
        }
        if let totalBytes, bitRate > 0 {
            return Double(totalBytes - (dataOffset ?? 0)) * 8 / Double(bitRate)
        }
        return nil
    }

    /// The error that fails an item when ``maximumBytesWithoutAudio`` bytes (or 16 skip
    /// requests) went by without a decoded frame; nil while within the limits.
    func noAudioError(url: String, bytes: Int64, skipRequests: Int, fedOffset: Int64, parserReady: Bool) -> AudioError? {
        guard bytes > maximumBytesWithoutAudio || skipRequests > Self.maximumSkipRequestsWithoutAudio else { return nil }
        let what = parserReady ? "its packets decoded to nothing" : "no audio data was found (the parser skipped them)"
        let start = fedOffset - min(fedOffset, bytes)
        return AudioError(.invalidData, component: "StreamingPlayer",
            "\(url): \(bytes) bytes from byte \(start) and \(skipRequests) skip requests produced no audio: \(what); giving up (limit \(maximumBytesWithoutAudio) bytes)")
    }
}

/// Bytes of an item already parsed, kept for seeks inside them: a seek that lands in them
/// parses them again instead of asking the source.
struct RetainedBytes {
    private(set) var bytes: [UInt8] = []
    /// The audio byte offset of the first byte kept.
    private(set) var start: Int64

    init(at offset: Int64) { start = offset }

    /// The offset after the last byte kept.
    var end: Int64 { start + Int64(bytes.count) }

    /// Forgets what is kept; what comes next starts at `offset`.
    mutating func reset(at offset: Int64) {
        bytes.removeAll()
        start = offset
    }

    /// Keeps `new`, parsed at `offset` (what is kept is forgotten when `new` does not follow
    /// it), dropping the oldest once more than 1 MiB beyond `limit` bytes are kept (0: keeps
    /// nothing).
    mutating func append(_ new: [UInt8], at offset: Int64, limit: Int) {
        guard limit > 0 else { return }
        if end != offset { reset(at: offset) }
        bytes.append(contentsOf: new)
        let excess = bytes.count - limit
        if excess > 1 << 20 {
            bytes.removeFirst(excess)
            start += Int64(excess)
        }
    }

    /// The bytes from `offset` on, followed by `unfed` (the unparsed rest of the chunk being
    /// fed) when it continues them; nil when `offset` lies outside both.
    func replay(from offset: Int64, unfed: (bytes: [UInt8], offset: Int64)?) -> [UInt8]? {
        let more = unfed.flatMap { $0.offset == end ? $0.bytes : nil } ?? []
        guard offset >= start && offset < end + Int64(more.count) else { return nil }
        return Array((bytes + more)[Int(offset - start)...])
    }
}

/// The parse-and-decode pump: bytes from an item's network thread through ``AudioFileStream``
/// and ``AudioConverter`` to PCM for the output feeder.
extension DecoderThread {
    /// Buffering (before the start or after an underrun) for longer than
    /// ``BufferingPolicy/slowBufferingTimeout`` while bytes trickle in: gives up, with the rate.
    func checkSlowBuffering(_ item: ItemDecoder) throws {
        let buffering = !queueStarted || self.buffering.phase == .rebuffering
        guard buffering, policy.slowBufferingTimeout > 0 else {
            bufferingSince = nil
            bytesWhileBuffering = 0
            return
        }
        let now = engine.clock.now()
        guard let since = bufferingSince else {
            bufferingSince = now
            bytesWhileBuffering = 0
            return
        }
        let seconds = HostTime.seconds(ticks: now &- since)
        guard seconds > policy.slowBufferingTimeout else { return }
        let rate = Double(bytesWhileBuffering) / max(0.001, seconds)
        throw AudioError(.timedOut, component: "StreamingPlayer",
                         "\(item.url) stalled: buffering for \(Int(seconds)) s, \(bytesWhileBuffering) bytes received (\(Int(rate.rounded())) bytes/s), too slow to play; giving up")
    }

    /// Takes the next thing from the item's network thread and handles it.
    func step(_ item: ItemDecoder) throws {
        if item.inputEnded {
            if !item.drained { try drainEnd(item) }
            return
        }
        // Open the next item's source while this one's last bytes are decoded (gapless join).
        if item.reader.isFinished && pump.prefetched == nil {
            let nextIndex = item.index + 1
            if let url = engine.control.withLock({ c in nextIndex < c.items.count ? c.items[nextIndex] : nil }) {
                pump.prefetched = openItem(index: nextIndex, url: url, at: 0)
            }
        }
        try checkSlowBuffering(item)
        guard let r = item.reader.next() else {
            if item.reader.isDrained {
                throw AudioError(.invalidState, component: "StreamingPlayer", "the source of \(item.url) stopped without an end")
            }
            if buffering.stalled(queueStarted: queueStarted, secondsSinceActivity: item.reader.secondsSinceActivity, timeout: policy.stallTimeout) {
                throw AudioError(.timedOut, component: "StreamingPlayer",
                                 "no data from \(item.url) for \(Int(policy.stallTimeout)) s while buffering")
            }
            try waitTick(milliseconds: 20)
            return
        }
        switch r {
        case .opened(let info):
            debug("opened \(info.url) type \(info.contentType ?? "-") live \(info.isLive)")
            item.info = info
            if queue == nil { openOutputEarly() }
            if let target = item.hlsSeekTarget {
                item.hlsSeekTarget = nil
                item.hlsDiscardSeconds = max(0, target - (info.mediaStartTime ?? target))
            }
            engine.control.withLock { c in
                if c.playingIndex == item.index || !queueStarted { c.currentInfo = info }
            }
        case .bytes(let bytes, let offset):
            if bufferingSince != nil { bytesWhileBuffering += Int64(bytes.count) }
            if item.parser == nil {
                // Content type, extension and the first bytes decide the container (a server
                // that says audio/mpeg and sends ADTS still plays).
                let detection = StreamFormatDetector.detect(contentType: item.info?.contentType, url: item.info?.url ?? item.url, prefix: bytes)
                if let note = detection.note { debug("format: \(note)") }
                if let kind = detection.playlist {
                    // A playlist without a playlist extension, known by its Content-Type or its
                    // content: reopen the entry as a playlist (fetched again, within the limits).
                    debug("\(item.url) is a \(kind.rawValue) playlist by \(detection.evidence?.rawValue ?? "content"): following it")
                    retire(item)
                    entries.found(kind, at: item.url)
                    pump.current = nil
                    next = item.index
                    return
                }
                item.parser = AudioFileStream(fileTypeHint: detection.fileTypeHint ?? fileTypeHint(contentType: item.info?.contentType, url: item.url))
            }
            if item.liveRejoins > 0 && item.outputFrames > 0 { item.liveRejoins = 0 }
            try feed(item, bytes, at: offset)
        case .metadata(let m):
            if m.audioByteOffset <= item.fedOffset {
                markMetadata(item, m)
            } else {
                item.pendingMetadata.append(m)
            }
        case .reconnected(let info, let continuous):
            item.info = info
            engine.emit(.reconnected(index: item.index, continuous: continuous))
            if !continuous {
                item.restartInput(at: info.startOffset)
                try restartDecoder(item)
            }
        case .discontinuity(let offset):
            // The timeshift buffer dropped its oldest audio: resynchronise after the gap.
            debug("timeshift buffer overflow: audio before byte \(offset) dropped")
            if let converter = item.converter {
                try drainConverter(item, converter)
                converter.reset()
            }
            item.discontinuityNext = true
            item.fedOffset = offset
            item.pendingMetadata.removeAll { $0.audioByteOffset < offset }
            // Constant-size packets (PCM) have no sync word to find again: restart at the next
            // whole packet after the gap.
            if let parser = item.parser, let format = parser.dataFormat, format.bytesPerPacket > 0, let dataOffset = parser.dataOffset {
                let bpp = Int64(format.bytesPerPacket)
                let packet = max(0, (offset - dataOffset + bpp - 1) / bpp)
                let result = try parser.seek(toPacket: packet)
                item.reader.drop(before: result.byteOffset)
                item.fedOffset = result.byteOffset
            }
        case .end:
            if item.isLive && policy.rejoinsLiveStreamAtEnd && item.liveRejoins < 5 && !(engine.control.withLock { $0.stopRequested }) {
                try rejoin(item)
                return
            }
            item.inputEnded = true
            try drainEnd(item)
        case .failed(let error):
            throw error
        }
    }

    /// Lets the audio decoded so far play, then restarts the item's decoder (no end limit) for
    /// input that does not continue the old (a reconnect that lost bytes, a rejoined live stream).
    func restartDecoder(_ item: ItemDecoder) throws {
        guard let converter = item.converter else { return }
        try drainConverter(item, converter)
        converter.reset()
        converter.limitRemainingFrames(nil)
    }

    /// Parses `bytes` (at audio byte `offset`), decodes the packets and enqueues the PCM,
    /// applying pending metadata at the packet where it begins.
    func feed(_ item: ItemDecoder, _ bytes: [UInt8], at offset: Int64) throws {
        var bytes = bytes
        var offset = offset
        while !bytes.isEmpty {
            // Split at the next metadata boundary inside this chunk, and into slices of at most
            // `maximumParseBytes`.
            let cut = DecodePump.cut(bytes.count, at: offset, before: item.pendingMetadata.first)
            let generation = item.seekGeneration
            item.unfed = (Array(bytes[cut...]), offset + Int64(cut))
            defer { item.unfed = nil }
            try parse(item, Array(bytes[0..<cut]))
            if item.seekGeneration != generation { return }
            offset += Int64(cut)
            item.fedOffset = offset
            bytes.removeFirst(cut)
            while let m = item.pendingMetadata.first, m.audioByteOffset <= item.fedOffset {
                item.pendingMetadata.removeFirst()
                markMetadata(item, m)
            }
        }
    }

    /// Remembers parsed bytes for seeks inside them (bounded).
    func retain(_ item: ItemDecoder, _ bytes: [UInt8]) {
        guard !item.isLive else { return }
        item.retained.append(bytes, at: item.fedOffset, limit: pump.maximumRetainedBytes)
    }

    func parse(_ item: ItemDecoder, _ bytes: [UInt8]) throws {
        guard let parser = item.parser else {
            throw AudioError(.invalidState, component: "StreamingPlayer", "bytes before the source of \(item.url) opened")
        }
        retain(item, bytes)
        item.bytesWithoutAudio += Int64(bytes.count)
        let flags: AudioFileStreamParseFlags = item.discontinuityNext ? .discontinuity : []
        item.discontinuityNext = false
        var events: [ParsedEvent] = []
        try parser.parse(bytes, flags: flags) { events.append(($0, parser.currentEventDataFormat, parser.currentEventMagicCookie)) }
        try handle(item, events)
        try jumpOverSkippedBytes(item, parser, parsedEnd: item.fedOffset + Int64(bytes.count))
        try checkBytesWithoutAudio(item, parser)
        if parser.isNotOptimized && parser.isReadyToProducePackets && !item.notOptimizedHandled {
            // MP4 with the index after the data: the data was skipped; go back to it.
            item.notOptimizedHandled = true
            try seek(item, to: item.pendingSeek ?? 0, reportEvent: false)
            item.pendingSeek = nil
        }
    }

    /// Fails the item when ``BufferingPolicy/maximumBytesWithoutAudio`` bytes (or 16 skip
    /// requests) went by without a decoded frame.
    func checkBytesWithoutAudio(_ item: ItemDecoder, _ parser: AudioFileStream) throws {
        if let error = pump.noAudioError(url: item.url, bytes: item.bytesWithoutAudio, skipRequests: item.skipRequestsWithoutAudio,
                                         fedOffset: item.fedOffset, parserReady: parser.isReadyToProducePackets) {
            throw error
        }
    }

    /// A skip shorter than this is read through; a longer one (an MP4 `mdat` before the `moov`)
    /// is jumped over with a new request at the target when the source can seek.
    static let skipRequestThreshold: Int64 = 256 << 10

    /// When the parser is skipping bytes it does not need and they have not arrived yet, drops
    /// them from the network thread's buffer or, when they lie beyond it, reopens the source at
    /// the skip's end (one HTTP Range request) instead of downloading them.
    func jumpOverSkippedBytes(_ item: ItemDecoder, _ parser: AudioFileStream, parsedEnd: Int64) throws {
        guard let target = parser.skipTarget, !item.isLive, !item.isHLS else { return }
        // Bytes in hand: the rest of the chunk being fed.
        let inHand = item.unfed.map { $0.offset + Int64($0.bytes.count) } ?? parsedEnd
        if target <= inHand { return }
        if let range = item.reader.pendingByteRange, target >= range.start, target <= range.end {
            guard parser.skipToTarget() else { return }
            item.reader.drop(before: target)
            item.bytesWithoutAudio += target - inHand
        } else {
            guard target - inHand >= Self.skipRequestThreshold, item.info?.isSeekable ?? false else { return }
            guard parser.skipToTarget() else { return }
            debug("skipping \(target - inHand) bytes of \(item.url) with a request at \(target)")
            item.skipRequestsWithoutAudio += 1
            retire(item)
            let source = try makeSource(for: item.url)
            item.reader = SourceReader(url: item.url, source: source, at: target, maximumBytes: policy.maximumBufferedBytes, data: engine.wake)
        }
        // The rest of the chunk being fed lies inside the skipped bytes: drop it.
        item.fedOffset = target
        item.retained.reset(at: target)
        item.seekGeneration += 1
    }

    /// A parser event with the data format and cookie as of that event (one parse call can hold
    /// two links of a chained stream: the parser's own properties are already the newest).
    typealias ParsedEvent = (event: AudioFileStreamEvent, format: AudioStreamBasicDescription?, cookie: [UInt8]?)

    func handle(_ item: ItemDecoder, _ events: [ParsedEvent]) throws {
        guard let parser = item.parser else { return }
        // The last report of a format or cookie in this call: in a chained Ogg stream, a link
        // after the one an earlier event belongs to (even with the same setup, which is reported
        // as a cookie all the same).
        let lastSetupEvent = events.lastIndex {
            $0.event == .propertyChanged(.dataFormat) || $0.event == .propertyChanged(.magicCookieData)
        }
        for (index, parsed) in events.enumerated() {
            item.eventFormat = parsed.format
            item.eventCookie = parsed.cookie
            item.laterLinkInCall = lastSetupEvent.map { $0 > index } ?? false
            switch parsed.event {
            case .propertyChanged(.readyToProducePackets):
                try prepareDecoder(item, parser)
                if let seconds = item.pendingSeek, !parser.isNotOptimized {
                    item.pendingSeek = nil
                    try seek(item, to: seconds)
                    return
                }
            case .propertyChanged(.dataFormat), .propertyChanged(.magicCookieData):
                item.formatCheckPending = item.converter != nil
                if parsed.event == .propertyChanged(.magicCookieData) && item.converter != nil { item.cookieReported = true }
            case .propertyChanged:
                break
            case .packets(let batch):
                if item.formatCheckPending {
                    item.formatCheckPending = false
                    try formatChanged(item, parser)
                }
                if item.converter == nil { try prepareDecoder(item, parser) }
                guard let converter = item.converter else { continue }
                if item.pendingSeek != nil { continue }
                try converter.decode(batch)
                try drainConverter(item, converter)
            }
        }
    }

    /// The stream's format changed mid-item (a chained Ogg link with another rate, channel count
    /// or codec setup): the audio of the old format plays out of its decoder, and a new decoder
    /// takes the packets that follow (resampled to the queue's format, like a gapless next item).
    func formatChanged(_ item: ItemDecoder, _ parser: AudioFileStream) throws {
        guard let old = item.converter, let (format, cookie) = eventSetup(item, parser), parser.isReadyToProducePackets else { return }
        // Only a real change: another codec, rate or channel count, or a new codec setup (cookie)
        // replacing one; refinements of the same stream (a cookie arriving late) keep the decoder.
        // A new link of a chained Ogg stream, even with the same setup: a new encoder's stream,
        // decoded afresh with its own priming trimmed (Opus's pre-skip).
        let oggLink = item.cookieReported && parser.fileFormat == .ogg
        item.cookieReported = false
        guard DecodePump.needsNewDecoder(from: item.sourceFormat, cookie: item.sourceCookie, to: format, cookie: cookie, oggLink: oggLink) else { return }
        debug("format change to \(format)")
        try old.endOfInput()
        try drainConverter(item, old)
        let converter = try AudioConverter(from: format, to: feeder.format, magicCookie: cookie)
        if parser.fileFormat == .ogg { converter.primeInfo = oggLinkPrimeInfo(format, cookie) }
        item.converter = converter
        item.sourceFormat = format
        item.sourceCookie = cookie
    }

    /// The data format and cookie of the parser event being handled (the parser's own are
    /// already the newest when one parse call held two links of a chain); nil before a format.
    func eventSetup(_ item: ItemDecoder, _ parser: AudioFileStream) -> (AudioStreamBasicDescription, [UInt8]?)? {
        guard let format = item.eventFormat ?? parser.currentEventDataFormat else { return nil }
        return (format, item.eventFormat != nil ? item.eventCookie : parser.currentEventMagicCookie)
    }

    /// A chained Ogg link's own priming (Opus's pre-skip), trimmed from its decoder's start.
    func oggLinkPrimeInfo(_ format: AudioStreamBasicDescription, _ cookie: [UInt8]?) -> AudioConverterPrimeInfo {
        let priming = AudioFileStream.primingFrames(ofOggLink: format, magicCookie: cookie)
        return AudioConverterPrimeInfo(leadingFrames: UInt32(clamping: priming), trailingFrames: 0)
    }

    /// Creates the converter (and the output queue for the first item).
    func prepareDecoder(_ item: ItemDecoder, _ parser: AudioFileStream) throws {
        guard item.converter == nil, let (format, cookie) = eventSetup(item, parser) else { return }
        debug("decoder for \(format)")
        try ensureQueue(for: format, layout: parser.channelLayout)
        let converter = try AudioConverter(from: format, to: feeder.format, magicCookie: cookie)
        item.sourceCookie = cookie
        // A live stream's header (a looping file's LAME tag) says nothing about where it ends.
        // Nor does the packet table of a later link of a chained stream parsed in the same call:
        // one with another setup, or (Ogg reports each link's table at its end, and the parser
        // keeps the newest) any link that began after this event, whatever its setup. Such a
        // link's decoder then trims its own priming only, as when its bytes come in pieces.
        let movedOn = item.eventFormat != nil && (parser.dataFormat != format || parser.magicCookie != cookie)
            || (parser.fileFormat == .ogg && item.laterLinkInCall)
        if let info = parser.packetTableInfo, !item.isLive, !movedOn {
            converter.primeInfo = AudioConverterPrimeInfo(leadingFrames: UInt32(clamping: max(0, Int64(info.primingFrames))),
                                                          trailingFrames: UInt32(clamping: max(0, Int64(info.remainderFrames))))
            converter.validFrameCount = info.numberValidFrames
        } else if parser.fileFormat == .ogg {
            // No packet table (a live stream, or not known yet): the link's own priming.
            converter.primeInfo = oggLinkPrimeInfo(format, cookie)
        }
        if let seconds = item.hlsDiscardSeconds {
            // After an HLS seek: decode from the segment's start, drop what precedes the target.
            item.hlsDiscardSeconds = nil
            converter.reset(discardingFrames: Int64((seconds * format.sampleRate).rounded()))
            converter.limitRemainingFrames(nil)
        }
        item.converter = converter
        item.sourceFormat = format
        if !item.startedMarked {
            item.startedMarked = true
            timeline.add(.itemStarted(item.index, item.url, format), at: enqueuedFrames)
            timeline.add(.segment(item.index, item.baseSeconds), at: enqueuedFrames)
        }
        let duration = item.isLive ? nil : DecodePump.duration(format: format, validFrames: parser.packetTableInfo?.numberValidFrames,
                                                               packets: parser.audioDataPacketCount, totalBytes: item.info?.totalLength,
                                                               dataOffset: parser.dataOffset, bitRate: parser.bitRate)
        engine.control.withLock { c in if c.playingIndex == item.index || !queueStarted { c.duration = duration } }
    }

    /// The end of an item's input: flushes the parser and the decoder.
    func drainEnd(_ item: ItemDecoder) throws {
        if let parser = item.parser, item.converter == nil || !item.drained {
            var events: [ParsedEvent] = []
            do {
                try parser.finish { events.append(($0, parser.currentEventDataFormat, parser.currentEventMagicCookie)) }
            } catch {
                if item.converter == nil { throw error }
                events = []
            }
            try handle(item, events)
        }
        guard let converter = item.converter else {
            throw AudioError(.invalidData, component: "StreamingPlayer", "\(item.url) ended before any audio was found")
        }
        try converter.endOfInput()
        try drainConverter(item, converter)
        item.drained = true
    }
}
