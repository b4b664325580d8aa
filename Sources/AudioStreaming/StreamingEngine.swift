import AudioConversion
import AudioCore
import AudioDevices
import AudioFiles
import AudioQueueEngine
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Set `OAT_STREAM_DEBUG=1` to trace the decoder thread's decisions on stderr.
let debugEnabled = getenv("OAT_STREAM_DEBUG") != nil

func format3(_ v: Double) -> String { String((v * 1000).rounded() / 1000) }

/// A request from the control plane to the decoder thread.
enum EngineCommand: Sendable {
    case seek(Double)
    case skip
    case jumpToLive
}

/// The threads behind a ``StreamingPlayer``: a network thread per item (``SourceReader``) and
/// one decoder thread that parses, decodes, feeds the ``AudioOutputQueue``, keeps the timeline
/// and reports events. The decoder thread is the only one touching the parser, the converter
/// and the queue's transport; the control plane talks to it through ``Control``.
final class StreamingEngine: @unchecked Sendable {
    let policy: BufferingPolicy
    let output: AudioOutputDeviceFactory
    let makeSource: ByteSourceFactory
    let continuation: AsyncStream<StreamingPlayerEvent>.Continuation
    let wake = DispatchSemaphore(value: 0)
    /// Set by the queue's thread when the queue played out after the end was marked.
    let queueEnded = Atomic<Bool>(false)
    /// Set by the queue's thread while the output device is lost: when, and why.
    let deviceLost = Locked<(since: UInt64, reason: String)?>(nil)
    private let done = DispatchSemaphore(value: 0)
    private let startTime = HostTime.now()

    struct Control {
        var items: [String] = []
        var commands: [EngineCommand] = []
        var stopRequested = false
        var paused = false
        var volume: Float = 1
        var fade: Float = 0
        var volumeChanged = false
        var state: StreamingPlayerState = .idle
        var stats = StreamingPlayerStatistics()
        var playingIndex = 0
        var position: Double = 0
        var currentInfo: ByteSourceInfo?
        var duration: Double?
        var finished = false
        var bytesFromClosedReaders: Int64 = 0
        var reconnectsFromClosedReaders = 0
        var requestsFromClosedReaders = 0
    }
    let control = Locked(Control())

    let onEvent: (@Sendable (StreamingPlayerEvent) -> Void)?

    init(items: [String], policy: BufferingPolicy, output: @escaping AudioOutputDeviceFactory, makeSource: @escaping ByteSourceFactory,
         continuation: AsyncStream<StreamingPlayerEvent>.Continuation, onEvent: (@Sendable (StreamingPlayerEvent) -> Void)?, volume: Float) {
        self.onEvent = onEvent
        self.policy = policy
        self.output = output
        self.makeSource = makeSource
        self.continuation = continuation
        control.withLock {
            $0.items = items
            $0.volume = volume
            $0.volumeChanged = true
        }
        DispatchQueue(label: "oat.stream.decoder").async { [self] in
            let decoder = DecoderThread(engine: self)
            decoder.run()
            done.signal()
        }
    }

    func send(_ command: EngineCommand) {
        control.withLock { $0.commands.append(command) }
        wake.signal()
    }

    func requestStop() {
        control.withLock { $0.stopRequested = true }
        wake.signal()
    }

    /// Waits for the decoder thread to end (blocking: call off the cooperative pool).
    func join() {
        done.wait()
        done.signal()
    }

    func emit(_ event: StreamingPlayerEvent) {
        onEvent?(event)
        continuation.yield(event)
    }

    func setState(_ new: StreamingPlayerState) {
        let changed = control.withLock { c -> Bool in
            guard c.state != new else { return false }
            if case .stopped = c.state { return false }
            c.state = new
            return true
        }
        if changed { emit(.state(new)) }
    }

    var elapsed: Double { HostTime.seconds(ticks: HostTime.now() - startTime) }
}

/// The output device stayed lost longer than ``BufferingPolicy/deviceLostTimeout``.
struct DeviceGone: Error {
    var error: AudioError
}

/// Per-item decoding state (decoder thread only).
final class ItemDecoder {
    let index: Int
    let url: String
    var reader: SourceReader
    var info: ByteSourceInfo?
    var parser: AudioFileStream?
    var converter: AudioConverter?
    var sourceFormat: AudioStreamBasicDescription?
    var sourceCookie: [UInt8]?
    /// The format or cookie was reported again: compared before the next packets.
    var formatCheckPending = false
    /// A magic cookie was reported while a decoder ran: in Ogg, a new link of a chain.
    var cookieReported = false
    /// The data format and cookie as of the parser event being handled.
    var eventFormat: AudioStreamBasicDescription?
    var eventCookie: [UInt8]?
    /// Audio byte offset of the next byte to parse.
    var fedOffset: Int64 = 0
    /// Bytes already parsed, from `retainedStart`, kept for seeks inside them.
    var retained: [UInt8] = []
    var retainedStart: Int64 = 0
    var pendingMetadata: [StreamMetadata] = []
    var discontinuityNext = false
    /// Device-rate frames taken from the converter since the item began or was seeked.
    var outputFrames: Int64 = 0
    /// The item position (seconds) of output frame 0.
    var baseSeconds: Double = 0
    /// A seek to carry out once the parser is ready.
    var pendingSeek: Double?
    var inputEnded = false
    var drained = false
    var startedMarked = false
    var finishMarked = false
    /// Rejoins of a live stream since audio last came (bounded).
    var liveRejoins = 0
    /// Bytes parsed or skipped since the last decoded frame (bounded by
    /// ``BufferingPolicy/maximumBytesWithoutAudio``), and skip requests meanwhile.
    var bytesWithoutAudio: Int64 = 0
    var skipRequestsWithoutAudio = 0
    /// Bumped by every seek: bytes of a chunk being fed when a seek happens are stale.
    var seekGeneration = 0
    /// The rest of the chunk being fed (after the part being parsed), if any.
    var unfed: (bytes: [UInt8], offset: Int64)?
    var notOptimizedHandled = false
    /// True when the source is an ``HLSByteSource`` (seeks reopen it at a time, not a byte).
    var isHLS = false
    /// An HLS seek's target while its new source opens; then the audio to drop (seconds) from
    /// the start of the segment it opened at, applied when the new decoder is made.
    var hlsSeekTarget: Double?
    var hlsDiscardSeconds: Double?

    init(index: Int, url: String, reader: SourceReader) {
        self.index = index
        self.url = url
        self.reader = reader
        fedOffset = reader.startOffset
        retainedStart = reader.startOffset
    }

    var isLive: Bool { info?.isLive ?? false }
}

/// Raised inside the decoder thread to abandon the work in hand (stop, seek, skip).
struct Interrupted: Error {}

/// The decoder thread's loop and state.
final class DecoderThread {
    let engine: StreamingEngine
    var policy: BufferingPolicy { engine.policy }
    var queue: AudioOutputQueue?
    var queueFormat = AudioStreamBasicDescription.linearPCM(sampleRate: 44100, channels: 2, bitsPerChannel: 32, isFloat: true)
    var deviceRate: Double = 44100
    var channels = 2
    final class Pool: Sendable {
        let buffers = Locked<[AudioQueueBuffer]>([])
        /// The decoder is waiting for a free buffer: only then does a returned buffer wake it
        /// (otherwise a steady stream woke it for every buffer the queue handed back).
        let waiting = Atomic<Bool>(false)
    }
    let pool = Pool()
    /// Frames per queue buffer: about 46 ms at the device rate (set with the queue), so that the
    /// ten buffers hold the same time at every rate (2048 frames were 0.46 s at 44.1 kHz, 0.11 s
    /// at 192 kHz).
    var framesPerBuffer = 2048
    var pcm: AudioPCMBuffer?

    /// Timeline: frames enqueued since the queue was created or last reset.
    var enqueuedFrames: Int64 = 0
    enum MarkKind {
        case itemStarted(Int, String, AudioStreamBasicDescription)
        case itemFinished(Int, String)
        case metadata(StreamMetadata, Int, Double)
        case segment(Int, Double)
    }
    var marks: [(frame: Int64, kind: MarkKind)] = []
    var segment: (frame: Int64, index: Int, seconds: Double) = (0, 0, 0)
    /// The most frames the queue has reported played since it was last reset.
    var playedHighWater: Int64 = 0

    enum Phase { case starting, playing, rebuffering, ending }
    var phase = Phase.starting
    var queueStarted = false
    var queuePaused = false
    var startTarget: Double
    var rebufferTarget: Double
    var underruns = 0
    var lastUnderrunCount = 0
    var firstAudioReported = false
    /// ``BufferingPolicy/steadyOutputLatency`` was applied to the device.
    var steadyLatencySet = false
    var lastHealth: UInt64 = 0
    var lastError: AudioError?

    /// Crossfade: the newest decoded frames of the item being decoded, held back (interleaved)
    /// so that they can overlap the next item; and the previous item's held tail, being mixed
    /// into the start of the current one (`fadeMixed` of its frames done).
    var fadeHold: [Float] = []
    var fadeTail: [Float] = []
    var fadeMixed = 0
    var crossfadeFrames: Int { Int(min(30, max(0, policy.crossfadeSeconds)) * deviceRate) }

    var current: ItemDecoder?
    var prefetched: ItemDecoder?
    /// Queue entries in a row that failed without audio, the count already paced for, and
    /// whether the player gave up on the rest of the queue.
    var consecutiveFailures = 0
    var pacedFailures = 0
    var gaveUp = false
    /// Frames the device played before the queue's count was last reset (seek, skip).
    var playedBeforeReset: Int64 = 0

    init(engine: StreamingEngine) {
        self.engine = engine
        startTarget = engine.policy.startSeconds
        rebufferTarget = engine.policy.rebufferSeconds
    }

    // MARK: Main loop

    /// The queue entry to open when the current item is done.
    var next = 0

    func run() {
        defer { shutdown() }
        while true {
            if engine.control.withLock({ $0.stopRequested }) { break }
            if current == nil {
                if !paceAfterFailures() { break }
                let url = engine.control.withLock { c -> String? in next < c.items.count && !gaveUp ? c.items[next] : nil }
                guard let url else {
                    if finishPlayback() { break }
                    continue
                }
                if let p = prefetched, p.index == next {
                    current = p
                    prefetched = nil
                } else {
                    prefetched?.reader.cancel()
                    prefetched = nil
                    if expandPlaylist(at: next, url: url) { continue }
                    guard let item = openItem(index: next, url: url, at: 0) else { next += 1; continue }
                    current = item
                }
                if !queueStarted { engine.setState(.connecting) }
            }
            guard let item = current else { continue }
            do {
                if item.drained {
                    if !item.finishMarked {
                        item.finishMarked = true
                        marks.append((enqueuedFrames, .itemFinished(item.index, item.url)))
                        // The session's stop reason follows the last item: one that played to
                        // its end clears the error of an earlier one.
                        lastError = nil
                    }
                    let hasNext = engine.control.withLock { item.index + 1 < $0.items.count }
                    if hasNext {
                        if !item.isLive { handOverFadeTail() }
                        retire(item)
                        current = nil
                        next = item.index + 1
                        if phase == .ending, let queue {
                            // An item was appended while the end played out: take the end back.
                            try? queue.start()
                            phase = .playing
                        }
                    } else if finishPlayback() {
                        break
                    }
                    continue
                }
                try step(item)
            } catch is Interrupted {
                if let target = handleInterrupt() { next = target }
            } catch let gone as DeviceGone {
                // No device to play to: the whole session ends with the error.
                fail(item, gone.error)
                engine.setState(.stopped(reason: .error(gone.error)))
                break
            } catch let error as AudioError {
                fail(item, error)
                retire(item)
                current = nil
                next = item.index + 1
            } catch {
                fail(item, AudioError(.invalidState, component: "StreamingPlayer", "\(error)"))
                retire(item)
                current = nil
                next = item.index + 1
            }
        }
    }

    /// URLs already expanded from playlists (their entries replaced them in the queue) or known
    /// to be HLS presentations.
    var hlsURLs: Set<String> = []
    /// URLs found to be PLS/M3U playlists by their Content-Type or content (no playlist
    /// extension), and how many such expansions this player has made (bounded: playlists that
    /// list each other would otherwise expand for ever).
    var contentPlaylists: Set<String> = []
    var contentExpansions = 0

    /// A PLS/M3U playlist at queue entry `index` (by extension): fetches and parses it (nested
    /// playlists too) and replaces the entry with what it lists; an HLS playlist stays and plays
    /// through ``HLSByteSource``. True when the queue changed (or the entry failed and was
    /// skipped), so the caller looks at the queue again.
    func expandPlaylist(at index: Int, url: String) -> Bool {
        guard !hlsURLs.contains(url), Playlist.formatHint(url: url, contentType: nil) != nil || contentPlaylists.contains(url) else { return false }
        let makeSource = engine.makeSource
        do throws(AudioError) {
            if Playlist.formatHint(url: url, contentType: nil) == nil {
                contentExpansions += 1
                guard contentExpansions <= 16 else {
                    throw AudioError(.limitExceeded, component: "StreamingPlayer",
                                     "\(url) is a playlist, and more than 16 playlists without a playlist extension were followed (do they list each other?)")
                }
            }
            let expanded = try Playlist.expand(url: url) { (u: String) throws(AudioError) -> Playlist.Fetched in
                let source = try makeSource(u)
                defer { source.close() }
                let info = try source.open(at: 0)
                var bytes: [UInt8] = []
                let limit = PlaylistLimits().maximumBytes
                let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 << 10, alignment: 16)
                defer { scratch.deallocate() }
                reading: while bytes.count <= limit {
                    switch try source.read(into: scratch) {
                    case .bytes(let n): bytes += UnsafeRawBufferPointer(rebasing: scratch[0..<n])
                    case .end: break reading
                    case .metadata, .reconnected: continue
                    }
                }
                return Playlist.Fetched(bytes: bytes, contentType: info.contentType, url: info.url)
            }
            for e in expanded where e.looksLikePlaylist { hlsURLs.insert(e.url) }
            if expanded.count == 1, expanded[0].url == url {
                // An HLS presentation (recognised by its tags): it plays as one item.
                hlsURLs.insert(url)
                return false
            }
            // A playlist naming itself would expand for ever.
            let entries = expanded.filter { $0.url != url }
            debug("playlist \(url): \(entries.count) entries")
            engine.control.withLock { c in
                guard c.items.indices.contains(index) else { return }
                c.items.replaceSubrange(index...index, with: entries.map(\.url))
            }
            if entries.isEmpty {
                fail(nil, AudioError(.invalidData, component: "StreamingPlayer", "playlist \(url) lists nothing to play"), index: index)
            }
            return true
        } catch {
            fail(nil, error, index: index)
            engine.control.withLock { c in if c.items.indices.contains(index) { c.items.remove(at: index) } }
            return true
        }
    }

    /// The byte source for `url`: an ``HLSByteSource`` for an HLS playlist (fetching through the
    /// player's source factory), else the factory's source.
    func makeSource(for url: String, startTime: Double? = nil) throws(AudioError) -> any ByteSource {
        let path = PlaylistURL(url).path.lowercased()
        if hlsURLs.contains(url) || path.hasSuffix(".m3u8") {
            let source = HLSByteSource(url: url, makeSource: engine.makeSource)
            source.startTime = startTime
            return source
        }
        return try engine.makeSource(url)
    }

    /// Opens `url` at `offset`: starts its network thread. Nil (and an error event) when no
    /// source can be made for it.
    func openItem(index: Int, url: String, at offset: Int64) -> ItemDecoder? {
        do {
            let source = try makeSource(for: url)
            let reader = SourceReader(url: url, source: source, at: offset, maximumBytes: policy.maximumBufferedBytes, timeshiftBytes: policy.timeshiftBytes, data: engine.wake)
            let item = ItemDecoder(index: index, url: url, reader: reader)
            item.isHLS = source is HLSByteSource
            return item
        } catch {
            fail(nil, error, index: index)
            return nil
        }
    }

    func retire(_ item: ItemDecoder) {
        item.reader.cancel()
        let s = item.reader.statistics
        engine.control.withLock { c in
            c.bytesFromClosedReaders += s.bytesReceived
            c.reconnectsFromClosedReaders += s.reconnects
            c.requestsFromClosedReaders += s.requests
        }
    }

    func fail(_ item: ItemDecoder?, _ error: AudioError, index: Int? = nil) {
        let i = item?.index ?? index ?? 0
        lastError = error
        consecutiveFailures += 1
        engine.emit(.error(index: i, error))
    }

    /// Before opening the next entry after failed ones: waits ``BufferingPolicy/failureBackoff``
    /// (doubled per failure in a row, at most 1 s), and after
    /// ``BufferingPolicy/maximumConsecutiveFailures`` gives up on the rest of the queue. False
    /// when a stop came meanwhile.
    func paceAfterFailures() -> Bool {
        guard consecutiveFailures > pacedFailures, !gaveUp else { return true }
        pacedFailures = consecutiveFailures
        let more = engine.control.withLock { next < $0.items.count }
        guard more else { return true }
        if consecutiveFailures >= max(1, policy.maximumConsecutiveFailures) {
            gaveUp = true
            let e = AudioError(.limitExceeded, component: "StreamingPlayer",
                "\(consecutiveFailures) queue entries in a row failed without playing (the last: \(lastError?.message ?? "unknown")); giving up on the rest of the queue")
            lastError = e
            engine.emit(.error(index: next, e))
            return true
        }
        let delay = min(1, max(0, policy.failureBackoff) * Double(1 << min(consecutiveFailures - 1, 16)))
        let deadline = HostTime.now() + HostTime.ticks(seconds: delay)
        while HostTime.now() < deadline {
            if engine.control.withLock({ $0.stopRequested }) { return false }
            _ = engine.wake.wait(timeout: .now() + .milliseconds(20))
        }
        return true
    }

    /// After the last item: lets the queue play out and reports the end. True when the loop
    /// should end.
    /// The device stayed lost: the session stops with the error. True (end the loop).
    func deviceGone(_ gone: DeviceGone) -> Bool {
        fail(nil, gone.error, index: engine.control.withLock { $0.playingIndex })
        engine.setState(.stopped(reason: .error(gone.error)))
        return true
    }

    func finishPlayback() -> Bool {
        guard let queue, enqueuedFrames > 0 || !fadeHold.isEmpty || !fadeTail.isEmpty else {
            engine.setState(.stopped(reason: lastError.map { .error($0) } ?? .ended))
            return true
        }
        if phase != .ending {
            if engine.control.withLock({ $0.paused }) {
                // Paused before the end was reached: wait for resume.
                do { try waitTick(milliseconds: 20) } catch let gone as DeviceGone {
                    return deviceGone(gone)
                } catch {
                    if let target = handleInterrupt() { next = target }
                }
                return false
            }
            do { try flushFade() } catch {
                if let target = handleInterrupt() { next = target }
                return false
            }
            if !queueStarted || queuePaused {
                if !startQueue() { return true }
            }
            queue.stop(immediately: false)
            phase = .ending
            engine.setState(.playing)
        }
        do {
            try waitTick(milliseconds: 10)
        } catch let gone as DeviceGone {
            return deviceGone(gone)
        } catch {
            // A seek or skip came while the end played out.
            if let target = handleInterrupt() { next = target }
            return false
        }
        let ended = engine.queueEnded.load(ordering: .acquiring)
        if ended || !queue.isRunning {
            if ended {
                // Everything enqueued has played: the position is the end, whether or not a
                // tick sampled the queue between its last render and its stop (its count is
                // back at 0 once stopped, and that window can be shorter than a tick).
                playedHighWater = max(playedHighWater, enqueuedFrames)
                processMarks(played: playedHighWater)
            }
            processMarks(played: Int64.max)
            // An item that failed mid-way still plays what it had decoded; the session then
            // stops with its error (nil when the last item played to its end).
            engine.setState(.stopped(reason: lastError.map { .error($0) } ?? .ended))
            return true
        }
        return false
    }

    func shutdown() {
        current.map(retire)
        prefetched.map(retire)
        queue?.dispose(immediately: true)
        engine.setState(.stopped(reason: .stopped))
        engine.control.withLock { $0.finished = true }
    }

    // MARK: Commands

    var pendingCommand: EngineCommand?

    /// Carries out the command that interrupted the work; returns the item index to open next
    /// when the current item was dropped.
    func handleInterrupt() -> Int? {
        if engine.control.withLock({ $0.stopRequested }) { return nil }
        guard let command = pendingCommand else { return nil }
        pendingCommand = nil
        let playing = engine.control.withLock { $0.playingIndex }
        switch command {
        case .skip:
            resetQueue()
            current.map(retire)
            current = nil
            prefetched.map(retire)
            prefetched = nil
            phase = .starting
            return playing + 1
        case .seek(let seconds):
            if let item = current, item.index == playing {
                do {
                    try seek(item, to: seconds)
                } catch {
                    let e = (error as? AudioError) ?? AudioError(.invalidState, component: "StreamingPlayer", "\(error)")
                    engine.emit(.error(index: item.index, e))
                }
                return nil
            }
            // The item playing is no longer the one being decoded (the next one was prefetched
            // for a gapless join): reopen it and seek once its header is parsed.
            current.map(retire)
            prefetched.map(retire)
            prefetched = nil
            let url = engine.control.withLock { c in playing < c.items.count ? c.items[playing] : nil }
            resetQueue()
            phase = .starting
            guard let url, let item = openItem(index: playing, url: url, at: 0) else { current = nil; return playing + 1 }
            item.pendingSeek = seconds
            current = item
            return nil
        case .jumpToLive:
            guard let item = current, item.isLive else { return nil }
            if let range = item.reader.pendingByteRange { item.reader.drop(before: range.end) }
            item.discontinuityNext = true
            item.converter?.reset()
            item.pendingMetadata.removeAll()
            resetQueue()
            item.outputFrames = 0
            segment = (0, item.index, positionSeconds())
            marks.append((0, .segment(item.index, segment.seconds)))
            phase = .starting
            return nil
        }
    }

    /// Drops everything queued; the timeline restarts at 0.
    func resetQueue() {
        guard let queue else { return }
        if phase == .ending && queue.isRunning {
            // The end of the stream was marked: starting the running queue takes it back, so
            // the reset below is not followed by the queue stopping itself.
            try? queue.start()
            if queuePaused { try? queue.pause() }
        }
        // The queue keeps running through the reset (its device plays silence until new audio
        // comes): a paused device would keep the stale frames in the play ring, leaving no
        // room for the new ones.
        playedBeforeReset += min(enqueuedFrames, max(playedHighWater, queue.playedStreamFrames))
        queue.reset()
        enqueuedFrames = 0
        playedHighWater = 0
        marks.removeAll()
        clearFade()
        engine.queueEnded.store(false, ordering: .releasing)
    }

    // MARK: Decoding

    /// Takes the next thing from the item's network thread and handles it.
    func step(_ item: ItemDecoder) throws {
        if item.inputEnded {
            if !item.drained { try drainEnd(item) }
            return
        }
        // Open the next item's source while this one's last bytes are decoded (gapless join).
        if item.reader.isFinished && prefetched == nil {
            let nextIndex = item.index + 1
            if let url = engine.control.withLock({ c in nextIndex < c.items.count ? c.items[nextIndex] : nil }) {
                prefetched = openItem(index: nextIndex, url: url, at: 0)
            }
        }
        guard let r = item.reader.next() else {
            if item.reader.isDrained {
                throw AudioError(.invalidState, component: "StreamingPlayer", "the source of \(item.url) stopped without an end")
            }
            if !queueStarted || phase == .rebuffering, item.reader.secondsSinceActivity > policy.stallTimeout {
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
            if let target = item.hlsSeekTarget {
                item.hlsSeekTarget = nil
                item.hlsDiscardSeconds = max(0, target - (info.mediaStartTime ?? target))
            }
            engine.control.withLock { c in
                if c.playingIndex == item.index || !queueStarted { c.currentInfo = info }
            }
        case .bytes(let bytes, let offset):
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
                    if kind == .hls { hlsURLs.insert(item.url) } else { contentPlaylists.insert(item.url) }
                    current = nil
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
                item.discontinuityNext = true
                item.fedOffset = info.startOffset
                item.retained.removeAll()
                item.retainedStart = info.startOffset
                item.pendingMetadata.removeAll()
                if let converter = item.converter {
                    // Let the audio decoded so far play, then restart the decoder.
                    try drainConverter(item, converter)
                    converter.reset()
                    converter.limitRemainingFrames(nil)
                }
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

    /// A live stream that ended (the server closed the connection) is joined again: a new
    /// request, and the parser and decoder resynchronise (a discontinuity).
    func rejoin(_ item: ItemDecoder) throws {
        item.liveRejoins += 1
        debug("live stream \(item.url) ended: rejoining (\(item.liveRejoins))")
        if let converter = item.converter {
            try drainConverter(item, converter)
            converter.reset()
            converter.limitRemainingFrames(nil)
        }
        retire(item)
        let source = try makeSource(for: item.url)
        item.reader = SourceReader(url: item.url, source: source, at: 0, maximumBytes: policy.maximumBufferedBytes, timeshiftBytes: policy.timeshiftBytes, data: engine.wake)
        item.discontinuityNext = true
        item.fedOffset = 0
        item.retained.removeAll()
        item.retainedStart = 0
        item.pendingMetadata.removeAll()
        engine.control.withLock { $0.reconnectsFromClosedReaders += 1 }
        engine.emit(.reconnected(index: item.index, continuous: false))
    }

    /// Parses `bytes` (at audio byte `offset`), decodes the packets and enqueues the PCM,
    /// applying pending metadata at the packet where it begins.
    func feed(_ item: ItemDecoder, _ bytes: [UInt8], at offset: Int64) throws {
        var bytes = bytes
        var offset = offset
        while !bytes.isEmpty {
            // Split at the next metadata boundary inside this chunk.
            var cut = bytes.count
            if let m = item.pendingMetadata.first, m.audioByteOffset > offset, m.audioByteOffset < offset + Int64(bytes.count) {
                cut = Int(m.audioByteOffset - offset)
            }
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
        guard policy.maximumRetainedBytes > 0, !item.isLive else { return }
        if item.retainedStart + Int64(item.retained.count) != item.fedOffset {
            item.retained.removeAll()
            item.retainedStart = item.fedOffset
        }
        item.retained.append(contentsOf: bytes)
        let excess = item.retained.count - policy.maximumRetainedBytes
        if excess > 1 << 20 {
            item.retained.removeFirst(excess)
            item.retainedStart += Int64(excess)
        }
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
        let limit = max(64 << 10, policy.maximumBytesWithoutAudio)
        guard item.bytesWithoutAudio > limit || item.skipRequestsWithoutAudio > 16 else { return }
        let what = parser.isReadyToProducePackets ? "its packets decoded to nothing" : "no audio data was found (the parser skipped them)"
        let start = item.fedOffset - min(item.fedOffset, item.bytesWithoutAudio)
        throw AudioError(.invalidData, component: "StreamingPlayer",
            "\(item.url): \(item.bytesWithoutAudio) bytes from byte \(start) and \(item.skipRequestsWithoutAudio) skip requests produced no audio: \(what); giving up (limit \(limit) bytes)")
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
        item.retained.removeAll()
        item.retainedStart = target
        item.seekGeneration += 1
    }

    /// A parser event with the data format and cookie as of that event (one parse call can hold
    /// two links of a chained stream: the parser's own properties are already the newest).
    typealias ParsedEvent = (event: AudioFileStreamEvent, format: AudioStreamBasicDescription?, cookie: [UInt8]?)

    func handle(_ item: ItemDecoder, _ events: [ParsedEvent]) throws {
        guard let parser = item.parser else { return }
        for parsed in events {
            item.eventFormat = parsed.format
            item.eventCookie = parsed.cookie
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
        let changedShape = item.sourceFormat.map {
            $0.formatID != format.formatID || $0.sampleRate != format.sampleRate || $0.channelsPerFrame != format.channelsPerFrame
        } ?? false
        let newSetup = !(item.sourceCookie ?? []).isEmpty && !(cookie ?? []).isEmpty && cookie != item.sourceCookie
        // A new link of a chained Ogg stream, even with the same setup: a new encoder's stream,
        // decoded afresh with its own priming trimmed (Opus's pre-skip).
        let oggLink = item.cookieReported && parser.fileFormat == .ogg
        item.cookieReported = false
        guard changedShape || newSetup || oggLink else { return }
        debug("format change to \(format)")
        try old.endOfInput()
        try drainConverter(item, old)
        let converter = try AudioConverter(from: format, to: queueFormat, magicCookie: cookie)
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
        try ensureQueue(for: format)
        let converter = try AudioConverter(from: format, to: queueFormat, magicCookie: cookie)
        item.sourceCookie = cookie
        // A live stream's header (a looping file's LAME tag) says nothing about where it ends.
        // Nor does the packet table of a later link of a chained stream parsed in the same call.
        let movedOn = item.eventFormat != nil && (parser.dataFormat != format || parser.magicCookie != cookie)
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
            marks.append((enqueuedFrames, .itemStarted(item.index, item.url, format)))
            marks.append((enqueuedFrames, .segment(item.index, item.baseSeconds)))
        }
        let duration: Double? = {
            guard !item.isLive else { return nil }
            if let info = parser.packetTableInfo { return Double(info.numberValidFrames) / format.sampleRate }
            if let packets = parser.audioDataPacketCount, format.framesPerPacket > 0 {
                return Double(packets) * Double(format.framesPerPacket) / format.sampleRate
            }
            if let total = item.info?.totalLength, parser.bitRate > 0 {
                return Double(total - (parser.dataOffset ?? 0)) * 8 / Double(parser.bitRate)
            }
            return nil
        }()
        engine.control.withLock { c in if c.playingIndex == item.index || !queueStarted { c.duration = duration } }
    }

    func ensureQueue(for format: AudioStreamBasicDescription) throws {
        guard queue == nil else { return }
        deviceRate = format.sampleRate
        channels = Int(min(8, max(1, format.channelsPerFrame)))
        queueFormat = .linearPCM(sampleRate: deviceRate, channels: UInt32(channels), bitsPerChannel: 32, isFloat: true)
        framesPerBuffer = max(64, Int((deviceRate * 2048 / 44100).rounded(.up)))
        let pool = self.pool
        let wake = engine.wake
        let q = try AudioOutputQueue(format: queueFormat, bufferReturn: .whenCopied, output: engine.output) { _, buffer in
            pool.buffers.withLock { $0.append(buffer) }
            if pool.waiting.load(ordering: .sequentiallyConsistent) { wake.signal() }
        }
        for _ in 0..<10 {
            let b = try q.allocateBuffer(byteCapacity: framesPerBuffer * channels * 4)
            pool.buffers.withLock { $0.append(b) }
        }
        let engine = self.engine
        q.eventHandler = { event in
            switch event {
            case .ended:
                engine.queueEnded.store(true, ordering: .releasing)
                wake.signal()
            case .underrun:
                wake.signal()
            case .device(.lost(let reason)):
                engine.deviceLost.withLock { if $0 == nil { $0 = (HostTime.now(), reason) } }
                wake.signal()
            case .device(.restored):
                engine.deviceLost.withLock { $0 = nil }
            default:
                break
            }
        }
        pcm = try AudioPCMBuffer(format: queueFormat, frameCapacity: framesPerBuffer)
        queue = q
        applyVolume()
    }

    /// Moves decoded PCM from the converter into queue buffers (blocking while the queue is full).
    func drainConverter(_ item: ItemDecoder, _ converter: AudioConverter) throws {
        guard let pcm, let queue else { return }
        if crossfadeFrames > 0 && !item.isLive {
            try drainWithCrossfade(item, converter, pcm)
            return
        }
        while true {
            let n = converter.read(into: pcm)
            if n == 0 { break }
            item.bytesWithoutAudio = 0
            item.skipRequestsWithoutAudio = 0
            consecutiveFailures = 0
            pacedFailures = 0
            let buffer = try takeBuffer()
            buffer.fill(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(pcm.mutableBytes(0))[0..<(n * channels * 4)]))
            do {
                try queue.enqueue(buffer)
            } catch {
                pool.buffers.withLock { $0.append(buffer) }
                throw error
            }
            enqueuedFrames += Int64(n)
            item.outputFrames += Int64(n)
            checkStart()
        }
    }

    /// Crossfade path of ``drainConverter(_:_:)``: mixes the previous item's tail into the first
    /// frames, holds back the newest ``crossfadeFrames`` and enqueues what is older.
    func drainWithCrossfade(_ item: ItemDecoder, _ converter: AudioConverter, _ pcm: AudioPCMBuffer) throws {
        while true {
            let n = converter.read(into: pcm)
            if n == 0 { break }
            item.bytesWithoutAudio = 0
            item.skipRequestsWithoutAudio = 0
            consecutiveFailures = 0
            pacedFailures = 0
            let fresh = UnsafeRawBufferPointer(pcm.mutableBytes(0)).bindMemory(to: Float.self)
            let start = fadeHold.count
            fadeHold.append(contentsOf: fresh[0..<(n * channels)])
            mixFadeTail(into: start / channels, frames: n)
            let excess = fadeHold.count / channels - crossfadeFrames
            if excess > 0 { try enqueueHeld(item, frames: excess) }
        }
    }

    /// Equal-power gains at frame `k` of an `n`-frame fade: sin and cos of (k + 0.5)/n · 90°.
    func fadeGains(_ k: Int, of n: Int) -> (incoming: Float, outgoing: Float) {
        let x = (Double(k) + 0.5) / Double(n) * Double.pi / 2
        return (Float(sin(x)), Float(cos(x)))
    }

    /// Mixes the held tail of the previous item into `frames` held frames from `at` (equal power).
    func mixFadeTail(into at: Int, frames: Int) {
        guard !fadeTail.isEmpty else { return }
        let tailFrames = fadeTail.count / channels
        let m = min(frames, tailFrames - fadeMixed)
        for i in 0..<m {
            let (gIn, gOut) = fadeGains(fadeMixed + i, of: tailFrames)
            for c in 0..<channels {
                let h = (at + i) * channels + c
                fadeHold[h] = fadeHold[h] * gIn + fadeTail[(fadeMixed + i) * channels + c] * gOut
            }
        }
        fadeMixed += m
        if fadeMixed >= tailFrames {
            fadeTail.removeAll()
            fadeMixed = 0
        }
    }

    /// Enqueues the oldest `frames` held frames (a queue buffer at a time, so an interruption
    /// leaves the rest held).
    func enqueueHeld(_ item: ItemDecoder?, frames: Int) throws {
        guard let queue else { return }
        var left = frames
        while left > 0 {
            let n = min(left, framesPerBuffer)
            let buffer = try takeBuffer()
            _ = fadeHold.withUnsafeBytes { buffer.fill(UnsafeRawBufferPointer(rebasing: $0[0..<(n * channels * 4)])) }
            do {
                try queue.enqueue(buffer)
            } catch {
                pool.buffers.withLock { $0.append(buffer) }
                throw error
            }
            fadeHold.removeFirst(n * channels)
            enqueuedFrames += Int64(n)
            item?.outputFrames += Int64(n)
            left -= n
            checkStart()
        }
    }

    /// An item has ended and another follows: its held frames become the tail the next item
    /// fades in over. A tail still being mixed (the item was shorter than the fade) is mixed
    /// into the held frames first, its rest appended faded out.
    func handOverFadeTail() {
        guard crossfadeFrames > 0 else { return }
        if !fadeTail.isEmpty {
            let tailFrames = fadeTail.count / channels
            for k in fadeMixed..<tailFrames {
                let gOut = fadeGains(k, of: tailFrames).outgoing
                for c in 0..<channels { fadeHold.append(fadeTail[k * channels + c] * gOut) }
            }
            fadeTail.removeAll()
            fadeMixed = 0
        }
        fadeTail = fadeHold
        fadeHold.removeAll()
    }

    /// Plays out whatever crossfade state is held (the end of the queue, or a next item that
    /// could not be opened).
    func flushFade() throws {
        if !fadeTail.isEmpty {
            handOverFadeTail()
            fadeHold = fadeTail
            fadeTail.removeAll()
        }
        guard !fadeHold.isEmpty else { return }
        try enqueueHeld(current, frames: fadeHold.count / channels)
    }

    /// Forgets the crossfade state (seek, skip, jump to live).
    func clearFade() {
        fadeHold.removeAll()
        fadeTail.removeAll()
        fadeMixed = 0
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

    /// The metadata applies from the audio decoded next: a mark at the current output position.
    func markMetadata(_ item: ItemDecoder, _ m: StreamMetadata) {
        let pending = Int64(item.converter?.bufferedFrameCount ?? 0) + Int64(fadeHold.count / max(1, channels))
        let frame = enqueuedFrames + pending
        let seconds = item.baseSeconds + Double(item.outputFrames + pending) / deviceRate
        // Titles less than 0.25 s of audio apart (a server spamming titles): the newer replaces
        // the one not yet played, so the app gets at most a few a second.
        if let last = marks.last, case .metadata(_, let index, _) = last.kind, index == item.index,
           frame - last.frame < Int64(0.25 * deviceRate) {
            marks[marks.count - 1] = (frame, .metadata(m, item.index, seconds))
            return
        }
        marks.append((frame, .metadata(m, item.index, seconds)))
    }

    // MARK: Seeking

    func seek(_ item: ItemDecoder, to seconds: Double, reportEvent: Bool = true) throws {
        guard let parser = item.parser, let format = parser.dataFormat, parser.isReadyToProducePackets else {
            item.pendingSeek = seconds
            return
        }
        if item.isLive {
            throw AudioError(.invalidState, component: "StreamingPlayer", "\(item.url) is a live stream: it cannot seek (pause keeps a timeshift buffer instead)")
        }
        if item.isHLS {
            try seekHLS(item, to: seconds, reportEvent: reportEvent)
            return
        }
        if item.converter == nil { try prepareDecoder(item, parser) }
        guard let converter = item.converter else { return }
        let rate = format.sampleRate
        let priming = Int64(max(0, parser.packetTableInfo?.primingFrames ?? 0))
        var target = Int64(max(0, seconds) * rate)
        if let valid = parser.packetTableInfo?.numberValidFrames { target = min(target, max(0, valid - 1)) }
        let withPriming = target + priming
        let fpp = Int64(format.framesPerPacket)
        let averageFrames: Double = fpp > 0 ? Double(fpp)
            : (parser.packetsDelivered > 0 ? Double(parser.framesDelivered) / Double(parser.packetsDelivered) : 1024)
        var packet = Int64(Double(withPriming) / max(1, averageFrames))
        // Start early enough for the decoder to settle (MP3's bit reservoir, overlapped transforms).
        switch format.formatID {
        case .linearPCM, .ulaw, .alaw, .flac, .appleLossless: break
        case .opus: packet -= Int64((0.08 * rate / max(1, averageFrames)).rounded(.up))
        default: packet -= 2
        }
        packet = max(0, packet)
        let result = try parser.seek(toPacket: packet)
        let startFrame = parser.frame(forPacket: result.packetIndex) ?? Int64(Double(result.packetIndex) * averageFrames)
        let discard = max(0, withPriming - startFrame)
        // Where do the bytes come from?
        var newRequest = false
        let retainedEnd = item.retainedStart + Int64(item.retained.count)
        var replay: [UInt8] = []
        // A seek while a chunk is being parsed: its unparsed rest is still ours.
        let unfed = item.unfed.flatMap { $0.offset == retainedEnd ? $0.bytes : nil } ?? []
        if result.byteOffset >= item.retainedStart && result.byteOffset < retainedEnd + Int64(unfed.count) {
            replay = Array((item.retained + unfed)[Int(result.byteOffset - item.retainedStart)...])
        } else if let range = item.reader.pendingByteRange, result.byteOffset >= range.start, result.byteOffset < range.end,
                  result.byteOffset >= item.fedOffset {
            item.reader.drop(before: result.byteOffset)
            item.fedOffset = result.byteOffset
        } else {
            guard item.info?.isSeekable ?? false else {
                throw AudioError(.invalidState, component: "StreamingPlayer",
                                 "\(item.url) cannot seek to \(seconds) s: the server does not accept range requests and the audio is not buffered")
            }
            retire(item)
            let source = try makeSource(for: item.url)
            item.reader = SourceReader(url: item.url, source: source, at: result.byteOffset, maximumBytes: policy.maximumBufferedBytes, data: engine.wake)
            item.fedOffset = result.byteOffset
            item.retained.removeAll()
            item.retainedStart = result.byteOffset
            newRequest = true
        }
        // The reader's end was already taken: replayed bytes are followed by it again.
        let endTaken = item.inputEnded && !newRequest
        item.inputEnded = false
        item.drained = false
        item.finishMarked = false
        item.pendingMetadata.removeAll()
        converter.reset(discardingFrames: discard)
        converter.limitRemainingFrames(parser.packetTableInfo.map { $0.numberValidFrames - target })
        let landed = Double(target) / rate
        restartTimeline(item, at: landed)
        if reportEvent {
            engine.emit(.seeked(index: item.index, seconds: landed, isEstimated: result.isEstimated, newRequest: newRequest))
        }
        item.discontinuityNext = true
        item.seekGeneration += 1
        if !replay.isEmpty {
            // Parse the retained bytes again: they go back to the front of the network
            // thread's buffer, which continues after them.
            item.fedOffset = result.byteOffset
            item.retained.removeAll()
            item.retainedStart = result.byteOffset
            if endTaken { item.reader.pushBack(.end) }
            item.reader.pushBack(.bytes(replay, offset: result.byteOffset))
        }
    }

    /// Seeks in an on-demand HLS presentation: a new ``HLSByteSource`` opens at the segment
    /// holding `seconds` (its playlist fetched again: one playlist and one segment request), a
    /// new parser and decoder start there, and the audio before `seconds` is decoded and dropped,
    /// so the position is exact to the frame within the segment timeline the playlist gives.
    func seekHLS(_ item: ItemDecoder, to seconds: Double, reportEvent: Bool) throws {
        var target = max(0, seconds)
        if let duration = engine.control.withLock({ $0.duration }) { target = min(target, duration) }
        retire(item)
        let source = try makeSource(for: item.url, startTime: target)
        item.reader = SourceReader(url: item.url, source: source, at: 0, maximumBytes: policy.maximumBufferedBytes, data: engine.wake)
        item.parser = nil
        item.converter = nil
        item.hlsSeekTarget = target
        item.hlsDiscardSeconds = nil
        item.fedOffset = 0
        item.retained.removeAll()
        item.retainedStart = 0
        item.inputEnded = false
        item.drained = false
        item.finishMarked = false
        item.discontinuityNext = false
        item.pendingMetadata.removeAll()
        restartTimeline(item, at: target)
        if reportEvent {
            engine.emit(.seeked(index: item.index, seconds: target, isEstimated: false, newRequest: true))
        }
        item.seekGeneration += 1
    }

    /// After a seek: drops the queued audio and starts the timeline again with output frame 0
    /// at `seconds` of the item.
    func restartTimeline(_ item: ItemDecoder, at seconds: Double) {
        resetQueue()
        item.outputFrames = 0
        item.bytesWithoutAudio = 0
        item.skipRequestsWithoutAudio = 0
        item.baseSeconds = seconds
        segment = (0, item.index, seconds)
        marks.append((0, .segment(item.index, seconds)))
        phase = .starting
        engine.control.withLock { $0.position = seconds }
    }

    // MARK: Waiting, the timeline and transport

    /// Takes a free queue buffer, ticking while none is free.
    func takeBuffer() throws -> AudioQueueBuffer {
        while true {
            if let b = pool.buffers.withLock({ $0.popLast() }) { return b }
            // Announce the wait, then look again: a buffer returned in between is either seen
            // here or signals the wake-up.
            pool.waiting.store(true, ordering: .sequentiallyConsistent)
            defer { pool.waiting.store(false, ordering: .sequentiallyConsistent) }
            if let b = pool.buffers.withLock({ $0.popLast() }) { return b }
            try waitTick(milliseconds: 20)
        }
    }

    /// Waits for a wake-up (data, a returned buffer, a command) or the timeout, then does the
    /// periodic work; throws ``Interrupted`` for a stop or a command.
    func waitTick(milliseconds: Int) throws {
        let fast = queueStarted && !firstAudioReported
        _ = engine.wake.wait(timeout: .now() + .milliseconds(fast ? 2 : idleMilliseconds(milliseconds)))
        try tick()
    }

    /// How long a steady decoder may sleep without a wake-up: new bytes, a returned queue
    /// buffer, a command, an underrun and the queue's end all signal `wake`, so while playing
    /// only the timeline needs the clock: the next mark (item start, metadata) is waited for
    /// until it is due, the position is refreshed at least every 100 ms. Before playback and
    /// while buffering or ending, `milliseconds` (the stall and start checks tick).
    func idleMilliseconds(_ milliseconds: Int) -> Int {
        guard phase == .playing, queueStarted, !queuePaused, let queue else { return milliseconds }
        var wait = 100
        if let mark = marks.first {
            let due = Double(mark.frame - max(playedHighWater, queue.playedStreamFrames)) / deviceRate
            wait = min(wait, max(2, Int(due * 1000) + 1))
        }
        return wait
    }

    func debug(_ text: @autoclosure () -> String) {
        guard debugEnabled else { return }
        let line = "[stream \(String(format3(engine.elapsed)))] \(text())\n"
        _ = line.withCString { write(2, $0, strlen($0)) }
    }

    func tick() throws {
        let (stop, command, paused, volumeChanged) = engine.control.withLock { c -> (Bool, EngineCommand?, Bool, Bool) in
            let command = c.commands.isEmpty ? nil : c.commands.removeFirst()
            let v = c.volumeChanged
            c.volumeChanged = false
            return (c.stopRequested, command, c.paused, v)
        }
        if stop { throw Interrupted() }
        if let lost = engine.deviceLost.withLock({ $0 }), HostTime.now() > lost.since,
           HostTime.seconds(ticks: HostTime.now() - lost.since) > policy.deviceLostTimeout {
            throw DeviceGone(error: AudioError(.deviceUnavailable, component: "StreamingPlayer",
                "the output device \(queue?.currentDevice ?? "") has been gone for \(Int(policy.deviceLostTimeout)) s: \(lost.reason)"))
        }
        if volumeChanged { applyVolume() }
        if let command {
            pendingCommand = command
            throw Interrupted()
        }
        guard let queue else { return }
        // Pause and resume.
        debug("tick phase \(phase) started \(queueStarted) paused \(queuePaused)/\(paused) enq \(enqueuedFrames) played \(queue.playedStreamFrames) ring \(queue.bufferedFrames) running \(queue.isRunning) underruns \(queue.underrunCount)")
        if paused && queueStarted && !queuePaused {
            try? queue.pause()
            queuePaused = true
            engine.setState(.paused)
        } else if !paused && queuePaused && (phase == .playing || phase == .ending) {
            do { try queue.start() } catch { debug("resume failed: \(error)") }
            queuePaused = false
            engine.setState(.playing)
        } else if paused && !queueStarted {
            engine.setState(.paused)
        }
        // The queue's count goes back to 0 once a drained queue has stopped at the end: the
        // position stays where the last frame left it.
        playedHighWater = max(playedHighWater, queue.playedStreamFrames)
        let played = playedHighWater
        if queueStarted { processMarks(played: played) }
        if queueStarted && !firstAudioReported && played > 0 {
            firstAudioReported = true
            let t = engine.elapsed
            engine.control.withLock { $0.stats.timeToFirstAudio = t }
            engine.emit(.firstAudio(seconds: t))
        }
        // Not before the first audio has been heard: with PulseAudio's latency adjustment a
        // larger buffer also delays the start of a stream the server has not started yet.
        if let steady = policy.steadyOutputLatency, !steadyLatencySet, firstAudioReported, phase == .playing, !queuePaused,
           Double(played) / deviceRate >= steady + 0.5, Double(queue.bufferedFrames) / deviceRate >= steady + 0.5 {
            steadyLatencySet = true
            queue.setDeviceLatency(steady)
            debug("output buffer set to \(steady) s")
        }
        // Underrun: the ring ran dry mid-stream. Pause, rebuffer with a larger target.
        let count = queue.underrunCount
        if phase == .playing && !queuePaused && count > lastUnderrunCount {
            lastUnderrunCount = count
            let inputDone = current?.inputEnded ?? true
            if !inputDone && enqueuedFrames - played < Int64(0.05 * deviceRate) {
                underruns += 1
                try? queue.pause()
                queuePaused = true
                phase = .rebuffering
                startTarget = min(policy.maximumTargetSeconds, startTarget * policy.growthAfterUnderrun)
                rebufferTarget = min(policy.maximumTargetSeconds, rebufferTarget * policy.growthAfterUnderrun)
                engine.setState(.buffering(progress: 0))
            }
        }
        checkStart()
        // Plenty decoded ahead and playing: the network thread may read in larger, rarer pieces.
        if let item = current {
            item.reader.setRelaxed(phase == .playing && !queuePaused && !item.inputEnded && bufferedSeconds() >= 2)
        }
        let now = HostTime.now()
        if queueStarted && HostTime.seconds(ticks: now - lastHealth) >= 1 {
            lastHealth = now
            let health = BufferHealth(bufferedSeconds: bufferedSeconds(), bufferedBytes: current?.reader.bufferedBytes ?? 0, underruns: underruns)
            engine.emit(.bufferHealth(health))
        }
        updateStatistics(played: played)
    }

    /// Decoded seconds waiting, plus an estimate for the undecoded bytes.
    func bufferedSeconds() -> Double {
        let played = queue?.playedStreamFrames ?? 0
        var seconds = Double(max(0, enqueuedFrames - played)) / deviceRate
        if let item = current, let parser = item.parser, parser.bitRate > 0 {
            seconds += Double(item.reader.bufferedBytes) * 8 / Double(parser.bitRate)
        }
        return seconds
    }

    /// Starts (or resumes) the queue once enough is buffered.
    func checkStart() {
        guard let queue, phase == .starting || phase == .rebuffering else { return }
        let target = phase == .starting ? startTarget : rebufferTarget
        let buffered = bufferedSeconds()
        let decoded = Double(max(0, enqueuedFrames - queue.playedStreamFrames)) / deviceRate
        // The play ring holds about 2 s: never wait for more decoded audio than fits.
        let inputDone = (current?.inputEnded ?? true) || (current?.reader.isFinished ?? true)
        // Every queue buffer is in use: nothing more can be buffered before playback starts.
        let full = pool.buffers.withLock { $0.isEmpty } && decoded > 0
        // Decoded audio, not received bytes, decides: the bytes of a burst arrive before the
        // decoder has been through them, and a queue started on bytes alone began with one
        // frame in its ring and underran at once (silence padded into the first request).
        // `buffered` (bytes included) only drives the progress shown while buffering.
        if decoded >= target || full || (inputDone && decoded > 0) {
            if engine.control.withLock({ $0.paused }) {
                phase = .playing
                engine.setState(.paused)
                return
            }
            if startQueue() { phase = .playing }
        } else {
            let progress = min(1, buffered / max(0.001, target))
            engine.setState(.buffering(progress: (progress * 100).rounded() / 100))
        }
    }

    @discardableResult
    func startQueue() -> Bool {
        guard let queue else { return false }
        do {
            try queue.start()
            debug("queue started")
        } catch {
            debug("queue start failed: \(error)")
            lastError = error
            engine.emit(.error(index: current?.index ?? 0, error))
            engine.requestStop()
            return false
        }
        queueStarted = true
        queuePaused = false
        lastUnderrunCount = queue.underrunCount
        engine.setState(.playing)
        return true
    }

    func processMarks(played: Int64) {
        var i = 0
        while i < marks.count, marks[i].frame <= played {
            let mark = marks[i]
            i += 1
            switch mark.kind {
            case .itemStarted(let index, let url, let format):
                engine.control.withLock { $0.playingIndex = index }
                engine.emit(.itemStarted(index: index, url: url, format: format))
            case .itemFinished(let index, let url):
                engine.emit(.itemFinished(index: index, url: url))
            case .metadata(let m, let index, let seconds):
                engine.emit(.metadata(m, index: index, playbackTime: seconds))
            case .segment(let index, let seconds):
                segment = (mark.frame, index, seconds)
                engine.control.withLock { c in
                    c.playingIndex = index
                    if let item = current, item.index == index {
                        c.currentInfo = item.info
                    }
                }
            }
        }
        if i > 0 { marks.removeFirst(i) }
        if played != Int64.max {
            engine.control.withLock { $0.position = positionSeconds(played: played) }
        }
    }

    func positionSeconds(played: Int64? = nil) -> Double {
        let p = played ?? queue?.playedStreamFrames ?? 0
        return segment.seconds + Double(max(0, p - segment.frame)) / deviceRate
    }

    func updateStatistics(played: Int64) {
        let live = [current, prefetched].compactMap { $0?.reader.statistics }
        let buffered = bufferedSeconds()
        let bytes = current?.reader.bufferedBytes ?? 0
        let elapsed = engine.elapsed
        let underruns = self.underruns
        let outputUnderruns = queueStarted ? (queue?.underrunCount ?? 0) : 0
        let playedSeconds = Double(playedBeforeReset + played) / deviceRate
        engine.control.withLock { c in
            c.stats.bytesReceived = c.bytesFromClosedReaders + live.reduce(0) { $0 + $1.bytesReceived }
            c.stats.reconnects = c.reconnectsFromClosedReaders + live.reduce(0) { $0 + $1.reconnects }
            c.stats.requests = c.requestsFromClosedReaders + live.reduce(0) { $0 + $1.requests }
            c.stats.throughput = elapsed > 0 ? Double(c.stats.bytesReceived) / elapsed : 0
            c.stats.bufferedSeconds = buffered
            c.stats.bufferedBytes = bytes
            c.stats.underruns = underruns
            c.stats.outputUnderruns = outputUnderruns
            c.stats.playedSeconds = playedSeconds
        }
    }

    func applyVolume() {
        guard let queue else { return }
        let (volume, fade) = engine.control.withLock { ($0.volume, $0.fade) }
        try? queue.setParameter(.volumeRampTime, max(0, min(60, fade)))
        try? queue.setParameter(.volume, max(0, min(1, volume)))
    }
}

