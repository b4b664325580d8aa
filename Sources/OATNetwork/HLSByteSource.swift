import OATCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Options for ``HLSByteSource``.
public struct HLSOptions: Sendable {
    /// The highest variant BANDWIDTH (bits/s) to choose; nil chooses the highest. When no variant
    /// fits, the lowest is chosen. Audio-only variants are preferred whenever the master has any.
    public var maximumBandwidth: Int?
    /// Extra attempts for a segment or playlist fetch that fails with a network, I/O or time-out
    /// error (default 3). Back-off doubles from ``retryDelay``.
    public var fetchRetries = 3
    /// The first retry delay in seconds (default 0.5).
    public var retryDelay = 0.5
    /// The largest segment, init section or playlist fetched, in bytes (default 32 MiB).
    public var maximumSegmentBytes = 32 << 20
    /// Limits for the playlists.
    public var limits = PlaylistLimits()
    /// Where a live presentation starts: this many segments before the end of the playlist
    /// (default 3, as RFC 8216 recommends).
    public var liveStartSegmentsFromEnd = 3
    /// Options for the HTTP(S) fetches the default source factory makes (TLS, headers, timeouts).
    /// Its own reconnect policy applies inside each fetch; ``fetchRetries`` comes on top.
    public var http = HTTPOptions()
    /// Reloads of a live playlist that bring nothing new before the source gives up with
    /// `.timedOut` (default 12: six target durations at the half-target reload rate).
    public var maximumUnchangedReloads = 12
    /// The longest wait between two reloads of a live playlist, in seconds (default 10). A
    /// live playlist is reloaded after its target duration, as RFC 8216 asks, but never later
    /// than this (a playlist claiming `#EXT-X-TARGETDURATION:86400` was reloaded a day later);
    /// half that when the last reload brought nothing new.
    public var maximumReloadInterval: Double = 10
    /// Segments in a row that bring no audio (empty, without audio packets, or live segments
    /// skipped because their fetch failed) before the source gives up with `.invalidData`
    /// (default 8): a presentation of empty segments never buffers for ever.
    public var maximumSegmentsWithoutAudio = 8
    /// Creates the defaults.
    public init() {}
}

/// Plays an HLS presentation (RFC 8216) as one continuous elementary audio stream.
///
/// `open(at: 0)` fetches the playlist (a master playlist's variant is chosen by
/// ``HLSOptions/maximumBandwidth``; an audio rendition's playlist is followed when the variant
/// names an AUDIO group with a URI), then the first segment, and returns a ``ByteSourceInfo``
/// whose `contentType` says what ``read(into:)`` delivers:
///
/// - `audio/aac`: ADTS frames, from MPEG-TS segments (stream type 0x0F) or packed-audio `.aac` segments;
/// - `audio/mpeg`: MPEG audio frames, from MPEG-TS (0x03/0x04) or packed `.mp3` segments;
/// - `audio/mp4`: the `#EXT-X-MAP` initialisation section followed by the fMP4 media segments
///   (`moof`/`mdat`), which `AudioFileStream` with the MP4 hint parses as one fragmented file.
///
/// Timed ID3 (TS stream type 0x15, or the tags that lead packed-audio segments) becomes
/// ``ByteSourceRead/metadata(_:)`` with the audio byte offset the tag applies at (a repeat of the
/// previous fields is not reported again). An `#EXT-X-DISCONTINUITY`, a skipped live segment or a
/// live window that moved past us is reported as ``ByteSourceRead/reconnected(_:continuous:)``
/// with `continuous: false`: the player starts a new parser at that point (for fMP4 the init
/// section is delivered again before the next media segment).
///
/// Live playlists are reloaded after one target duration (half of it when nothing changed), segments
/// are tracked by media sequence number so none is delivered twice, and `#EXT-X-ENDLIST` ends the
/// stream. On-demand presentations seek with ``seek(toTime:)``.
///
/// Thread safety: `open`, `read`, `seek(toTime:)` and `close` are called from one thread at a
/// time (the player's network thread); ``cancel()`` and ``statistics`` from any thread.
public final class HLSByteSource: ByteSource, @unchecked Sendable {
    /// Makes the byte source that fetches one URL (a playlist, a segment, an init section).
    public typealias SourceFactory = @Sendable (String) throws(AudioError) -> any ByteSource

    static let component = "HLSByteSource"

    /// The URL given at creation.
    public let url: String
    /// The options.
    public let options: HLSOptions
    private let makeSource: SourceFactory

    private struct Shared {
        var cancelled = false
        var current: (any ByteSource)?
        var stats = ByteSourceStatistics()
    }
    private let shared = Locked(Shared())

    // Reader-thread state.
    private var mediaURL = ""
    private var media = HLSMediaPlaylist()
    private var nextSequence: Int64 = 0
    private var pending: [Pending] = []
    private var pendingBytesOffset = 0
    private var delivered: Int64 = 0
    private var currentMap: HLSMap?
    private var deliveredAny = false
    private var lastFields: [String: String]?
    private var lastReload: Double = 0
    private var unchangedReloads = 0
    /// Segments in a row that delivered no audio bytes, and the audio bytes pushed so far.
    private var segmentsWithoutAudio = 0
    private var pushedBytes: Int64 = 0
    private var info = ByteSourceInfo(url: "")
    private var opened = false
    private var openedLive = false

    private enum Pending {
        case bytes([UInt8])
        case event(ByteSourceRead)
    }

    /// The variant chosen from a master playlist, if the URL was one.
    public private(set) var chosenVariant: HLSVariant?
    /// The audio rendition followed, if the chosen variant named one with its own playlist.
    public private(set) var chosenRendition: HLSRendition?
    /// Where ``open(at:)`` positions an on-demand presentation: the segment containing this time
    /// (seconds). The opened info's `mediaStartTime` is that segment's start. Ignored for live
    /// presentations. Set before `open`.
    public var startTime: Double?

    /// Creates a source for the HLS playlist at `url`. `makeSource` creates the byte source for
    /// each fetch; the default reads http(s) with ``HTTPByteSource`` (``HLSOptions/http``) and
    /// local paths or `file:` URLs with ``FileByteSource``.
    public init(url: String, options: HLSOptions = HLSOptions(), makeSource: SourceFactory? = nil) {
        self.url = url
        self.options = options
        if let makeSource {
            self.makeSource = makeSource
        } else {
            self.makeSource = HLSByteSource.standardFactory(http: options.http)
        }
    }

    /// The default factory: ``HTTPByteSource`` for http(s), ``FileByteSource`` for local files.
    public static func standardFactory(http: HTTPOptions) -> SourceFactory {
        let factory: SourceFactory = { (u: String) throws(AudioError) -> any ByteSource in
            if PlaylistURL(u).isRemote { return HTTPByteSource(url: u, options: http) }
            guard PlaylistURL(u).isLocal else {
                throw AudioError(.unsupportedFormat, component: component, "cannot fetch \(u): unsupported scheme")
            }
            return FileByteSource(path: u)
        }
        return factory
    }

    /// The default factory: local paths and `file:` URLs only.
    public static let localFiles: SourceFactory = { (u: String) throws(AudioError) -> any ByteSource in
        guard PlaylistURL(u).isLocal else {
            throw AudioError(.unsupportedFormat, component: component, "no network source given for \(u) (pass makeSource)")
        }
        return FileByteSource(path: u)
    }

    deinit { close() }

    /// The media playlist being played (after ``open(at:)``; updated on each live reload).
    public var mediaPlaylist: HLSMediaPlaylist { media }

    /// The total duration of an on-demand presentation (nil while live).
    public var duration: Double? { media.hasEndList ? media.totalDuration : nil }

    // MARK: ByteSource

    /// Opens the presentation. `offset` must be 0: an HLS stream is positioned with ``seek(toTime:)``.
    public func open(at offset: Int64) throws(AudioError) -> ByteSourceInfo {
        guard offset == 0 else {
            throw AudioError(.invalidArgument, component: Self.component, "HLS streams open at byte 0 only; use seek(toTime:) (asked for \(offset))")
        }
        pending = []
        pendingBytesOffset = 0
        segmentsWithoutAudio = 0
        delivered = 0
        currentMap = nil
        deliveredAny = false
        lastFields = nil
        var target = url
        var depth = 0
        while true {
            let fetched = try fetch(target, range: nil, what: "playlist")
            let playlist = try Playlist.parse(bytes: fetched.bytes, url: fetched.url, contentType: fetched.contentType,
                                              depth: depth, limits: options.limits)
            guard let hls = playlist.hls else {
                throw AudioError(.invalidData, component: Self.component, "\(target) is a \(playlist.format.rawValue) playlist, not HLS")
            }
            if let master = hls.master {
                guard let v = master.chooseVariant(maximumBandwidth: options.maximumBandwidth) else {
                    throw AudioError(.invalidData, component: Self.component, "master playlist \(target) has no variant")
                }
                chosenVariant = v
                chosenRendition = master.audioRendition(for: v)
                target = chosenRendition?.uri ?? v.uri
                depth += 1
                continue
            }
            guard let m = hls.media else {
                throw AudioError(.invalidData, component: Self.component, "\(target) is neither a master nor a media playlist")
            }
            media = m
            mediaURL = target   // reloads ask for the URL as named; references resolve against the final one
            break
        }
        lastReload = Self.now()
        var mediaStart: Double?
        if media.hasEndList || media.playlistType == .vod {
            nextSequence = media.mediaSequence
            if let t = startTime, t.isFinite, t > 0, let found = segment(containing: t) {
                nextSequence = found.sequence
                mediaStart = found.start
            }
        } else {
            let back = min(media.segments.count, max(1, options.liveStartSegmentsFromEnd))
            nextSequence = media.mediaSequence + Int64(media.segments.count - back)
        }
        info = ByteSourceInfo(url: mediaURL, contentType: nil, totalLength: nil, startOffset: 0,
                              isSeekable: false, isLive: !media.hasEndList)
        info.mediaStartTime = mediaStart ?? (media.hasEndList ? 0 : nil)
        openedLive = !media.hasEndList
        opened = true
        // Load the first segment now so the content type is known.
        while pending.isEmpty {
            guard try loadNext() else { break }
        }
        return info
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(AudioError) -> ByteSourceRead {
        guard opened else { throw AudioError(.invalidState, component: Self.component, "read before open of \(url)") }
        guard buffer.count > 0 else { throw AudioError(.invalidArgument, component: Self.component, "empty read buffer") }
        while true {
            try checkCancelled()
            if let first = pending.first {
                switch first {
                case .event(let e):
                    pending.removeFirst()
                    return e
                case .bytes(let b):
                    let n = min(buffer.count, b.count - pendingBytesOffset)
                    b.withUnsafeBytes { src in
                        buffer.baseAddress!.copyMemory(from: src.baseAddress! + pendingBytesOffset, byteCount: n)
                    }
                    pendingBytesOffset += n
                    if pendingBytesOffset >= b.count {
                        pending.removeFirst()
                        pendingBytesOffset = 0
                    }
                    delivered += Int64(n)
                    shared.withLock { $0.stats.bytesDelivered += Int64(n) }
                    return .bytes(n)
                }
            }
            guard try loadNext() else { return .end }
        }
    }

    public func cancel() {
        let current = shared.withLock { s -> (any ByteSource)? in
            s.cancelled = true
            return s.current
        }
        current?.cancel()
    }

    public func close() {
        let current = shared.withLock { s -> (any ByteSource)? in
            let c = s.current
            s.current = nil
            return c
        }
        current?.close()
        pending = []
        opened = false
    }

    public var statistics: ByteSourceStatistics {
        let (stats, current) = shared.withLock { ($0.stats, $0.current) }
        var s = stats
        // A fetch waiting out its own back-off or Retry-After is waiting too.
        if let current, current.statistics.isWaitingToRetry { s.isWaitingToRetry = true }
        return s
    }

    // MARK: Seeking

    /// Positions an on-demand presentation (one with `#EXT-X-ENDLIST`) at the segment containing
    /// `seconds` and returns that segment's start time, which is where the audio the next
    /// ``read(into:)`` delivers begins. Bytes not yet read are dropped. The player discards its
    /// parser and decoder state, parses the following bytes as a new stream (for fMP4 the init
    /// section comes first again) and sets its timeline to the returned time (decoding from there
    /// and dropping audio before `seconds` if it wants a sample-exact position).
    public func seek(toTime seconds: Double) throws(AudioError) -> Double {
        guard opened else { throw AudioError(.invalidState, component: Self.component, "seek before open of \(url)") }
        guard media.hasEndList else {
            throw AudioError(.invalidState, component: Self.component, "cannot seek in a live presentation (\(mediaURL))")
        }
        guard seconds.isFinite else { throw AudioError(.invalidArgument, component: Self.component, "seek to \(seconds) s") }
        guard let found = segment(containing: seconds) else {
            throw AudioError(.invalidState, component: Self.component, "presentation \(mediaURL) has no segments")
        }
        pending = []
        pendingBytesOffset = 0
        currentMap = nil
        lastFields = nil
        deliveredAny = false
        nextSequence = found.sequence
        return found.start
    }

    /// The media sequence number and start time of the segment holding `seconds` (the first for
    /// times before 0, the last for times past the end).
    private func segment(containing seconds: Double) -> (sequence: Int64, start: Double)? {
        guard let last = media.segments.last, let first = media.segments.first else { return nil }
        if seconds <= 0 { return (first.sequence, 0) }
        var start = 0.0
        for s in media.segments {
            if seconds < start + s.duration { return (s.sequence, start) }
            start += s.duration
        }
        return (last.sequence, max(0, media.totalDuration - last.duration))
    }

    // MARK: Loading

    /// Loads the next segment into `pending`; false at the end of the presentation.
    private func loadNext() throws(AudioError) -> Bool {
        while true {
            try checkCancelled()
            if let first = media.segments.first, nextSequence < first.sequence {
                // The live window moved past us: rejoin at its start.
                nextSequence = first.sequence
                if deliveredAny { pending.append(.event(.reconnected(info, continuous: false))) }
            }
            let index = nextSequence - media.mediaSequence
            if index >= 0, index < Int64(media.segments.count) {
                let segment = media.segments[Int(index)]
                nextSequence += 1
                let before = pushedBytes
                try load(segment)
                if pushedBytes > before {
                    segmentsWithoutAudio = 0
                } else {
                    segmentsWithoutAudio += 1
                    if segmentsWithoutAudio >= max(1, options.maximumSegmentsWithoutAudio) {
                        throw AudioError(.invalidData, component: Self.component,
                            "\(segmentsWithoutAudio) segments in a row of \(mediaURL) brought no audio (the last: \(segment.uri), playlist line \(segment.line)); giving up")
                    }
                }
                return true
            }
            if media.hasEndList { return false }
            try reloadLive()
        }
    }

    private func reloadLive() throws(AudioError) {
        let target = Double(max(1, media.targetDuration))
        let full = min(target, max(0.1, options.maximumReloadInterval))
        let interval = unchangedReloads > 0 ? full / 2 : full
        let wait = interval - (Self.now() - lastReload)
        if wait > 0 { try sleep(wait) }
        let fetched = try fetch(mediaURL, range: nil, what: "playlist")
        lastReload = Self.now()
        let playlist = try Playlist.parse(bytes: fetched.bytes, url: fetched.url, contentType: fetched.contentType, depth: 1, limits: options.limits)
        guard let m = playlist.hls?.media else {
            throw AudioError(.invalidData, component: Self.component, "live playlist \(mediaURL) turned into something else on reload")
        }
        let oldEnd = media.mediaSequence + Int64(media.segments.count)
        let newEnd = m.mediaSequence + Int64(m.segments.count)
        if newEnd < oldEnd && !m.segments.isEmpty {
            // The media sequence went backwards: the packager restarted. Rejoin near the new end.
            let back = min(m.segments.count, max(1, options.liveStartSegmentsFromEnd))
            nextSequence = m.mediaSequence + Int64(m.segments.count - back)
            if deliveredAny { pending.append(.event(.reconnected(info, continuous: false))) }
            currentMap = nil
            shared.withLock { $0.stats.reconnects += 1 }
            unchangedReloads = 0
        } else if newEnd > oldEnd || m.hasEndList != media.hasEndList {
            unchangedReloads = 0
        } else {
            unchangedReloads += 1
            if unchangedReloads > options.maximumUnchangedReloads {
                throw AudioError(.timedOut, component: Self.component,
                                 "live playlist \(mediaURL) brought no new segment in \(unchangedReloads) reloads")
            }
        }
        media = m
        info.isLive = !m.hasEndList
    }

    private func load(_ segment: HLSSegment) throws(AudioError) {
        guard segment.key.method == .none else {
            throw AudioError(.unsupportedFormat, component: Self.component,
                             "segment \(segment.uri) (playlist line \(segment.line)) is encrypted with \(segment.key.method.rawValue), which is not supported")
        }
        let body: HLSFetched
        do {
            body = try fetch(segment.uri, range: segment.byteRange, what: "segment")
        } catch {
            if error.code == .cancelled || !openedLive { throw error }
            // Live: skip the segment, report the gap.
            shared.withLock { $0.stats.reconnects += 1 }
            if deliveredAny { pending.append(.event(.reconnected(info, continuous: false))) }
            currentMap = nil
            return
        }
        if segment.discontinuity && deliveredAny {
            pending.append(.event(.reconnected(info, continuous: false)))
            currentMap = nil
        }
        let bytes = body.bytes
        if Self.isTransportStream(bytes) {
            try loadTS(bytes, segment: segment)
        } else if Self.isMP4(bytes) || segment.map != nil {
            if let map = segment.map, map != currentMap {
                let initBytes = try fetch(map.uri, range: map.byteRange, what: "init section").bytes
                setType("audio/mp4", segment: segment)
                push(initBytes)
                currentMap = map
            }
            setType("audio/mp4", segment: segment)
            push(bytes)
        } else {
            try loadPacked(bytes, segment: segment)
        }
        deliveredAny = true
    }

    private func loadTS(_ bytes: [UInt8], segment: HLSSegment) throws(AudioError) {
        let demuxer = MPEGTSDemuxer()
        var out = MPEGTSOutput()
        bytes.withUnsafeBytes { demuxer.parse($0, into: &out) }
        demuxer.finish(into: &out)
        guard let codec = demuxer.audioCodec else {
            throw AudioError(.unsupportedFormat, component: Self.component,
                             "TS segment \(segment.uri) has no AAC or MPEG audio stream")
        }
        setType(codec.contentType, segment: segment)
        let base = delivered + pendingByteCount()
        var events: [(Int64, TimedID3)] = []
        for tag in out.id3 {
            guard let id3 = tag.bytes.withUnsafeBytes({ TimedID3.parse($0) }), !id3.fields.isEmpty else { continue }
            events.append((out.audioOffset(for: tag, codec: codec), id3))
        }
        events.sort { $0.0 < $1.0 }
        var cursor = 0
        for (offset, id3) in events {
            let at = Int(max(0, min(Int64(out.audio.count), offset)))
            if at > cursor { push(Array(out.audio[cursor..<at])); cursor = at }
            metadata(id3, at: base + Int64(at))
        }
        if cursor < out.audio.count { push(Array(out.audio[cursor...])) }
    }

    private func loadPacked(_ bytes: [UInt8], segment: HLSSegment) throws(AudioError) {
        var pos = 0
        let base = delivered + pendingByteCount()
        while pos < bytes.count {
            let tag: (Int, TimedID3?)? = bytes.withUnsafeBytes { raw in
                let rest = UnsafeRawBufferPointer(rebasing: raw[pos...])
                guard let n = TimedID3.tagLength(rest), n <= rest.count else { return nil }
                return (n, TimedID3.parse(UnsafeRawBufferPointer(rebasing: rest[..<n])))
            }
            guard let (n, id3) = tag else { break }
            if let id3, !id3.fields.isEmpty { metadata(id3, at: base) }
            pos += n
        }
        guard pos < bytes.count else { return }
        let b0 = bytes[pos]
        let b1 = pos + 1 < bytes.count ? bytes[pos + 1] : 0
        guard b0 == 0xFF, b1 & 0xE0 == 0xE0 else {
            throw AudioError(.unsupportedFormat, component: Self.component,
                             "segment \(segment.uri) is neither MPEG-TS, fMP4, ADTS nor MPEG audio")
        }
        setType(b1 & 0x06 == 0 ? "audio/aac" : "audio/mpeg", segment: segment)
        push(Array(bytes[pos...]))
    }

    private func setType(_ type: String, segment: HLSSegment) {
        if info.contentType == nil { info.contentType = type }
    }

    private func metadata(_ id3: TimedID3, at offset: Int64) {
        guard id3.fields != lastFields else { return }
        lastFields = id3.fields
        pending.append(.event(.metadata(StreamMetadata(title: id3.title, url: id3.fields["WXXX"], fields: id3.fields, audioByteOffset: offset))))
    }

    private func push(_ bytes: [UInt8]) {
        if !bytes.isEmpty { pending.append(.bytes(bytes)) }
        pushedBytes += Int64(bytes.count)
    }

    private func pendingByteCount() -> Int64 {
        var n: Int64 = 0
        for (i, p) in pending.enumerated() {
            if case .bytes(let b) = p { n += Int64(b.count - (i == 0 ? pendingBytesOffset : 0)) }
        }
        return n
    }

    static func isTransportStream(_ b: [UInt8]) -> Bool {
        guard b.count >= 188, b[0] == 0x47 else { return false }
        return b.count < 376 || b[188] == 0x47
    }

    static func isMP4(_ b: [UInt8]) -> Bool {
        guard b.count >= 8 else { return false }
        let type = String(decoding: b[4..<8], as: UTF8.self)
        return ["ftyp", "styp", "moof", "sidx", "moov", "emsg", "prft"].contains(type)
    }

    // MARK: Fetching

    private struct HLSFetched {
        var bytes: [UInt8]
        var contentType: String?
        var url: String
    }

    /// Fetches a whole resource (or a byte range), retrying transient failures.
    private func fetch(_ target: String, range: HLSByteRange?, what: String) throws(AudioError) -> HLSFetched {
        var attempt = 0
        var delay = options.retryDelay
        while true {
            do {
                return try fetchOnce(target, range: range, what: what)
            } catch {
                guard [.network, .io, .timedOut].contains(error.code), !Self.isPermanent(error),
                      attempt < options.fetchRetries else { throw error }
                attempt += 1
                try sleep(delay)
                delay *= 2
            }
        }
    }

    private func fetchOnce(_ target: String, range: HLSByteRange?, what: String) throws(AudioError) -> HLSFetched {
        try checkCancelled()
        let source = try makeSource(target)
        shared.withLock {
            $0.current = source
            $0.stats.requests += 1
        }
        defer {
            source.close()
            shared.withLock { $0.current = nil }
        }
        if shared.withLock({ $0.cancelled }) { source.cancel() }
        let info = try source.open(at: range?.offset ?? 0)
        if let range, info.startOffset != range.offset {
            throw AudioError(.network, component: Self.component, "\(what) \(target): range from \(range.offset) not honoured")
        }
        let limit = range.map { Int($0.length) } ?? options.maximumSegmentBytes
        guard limit <= options.maximumSegmentBytes else {
            throw AudioError(.limitExceeded, component: Self.component, "\(what) \(target) byte range of \(limit) bytes (limit \(options.maximumSegmentBytes))")
        }
        if let total = info.totalLength, range == nil, total > Int64(options.maximumSegmentBytes) {
            throw AudioError(.limitExceeded, component: Self.component, "\(what) \(target) is \(total) bytes (limit \(options.maximumSegmentBytes))")
        }
        var bytes: [UInt8] = []
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)
        defer { chunk.deallocate() }
        loop: while bytes.count < limit {
            switch try source.read(into: chunk) {
            case .bytes(let n):
                bytes.append(contentsOf: chunk[0..<min(n, limit - bytes.count)])
                shared.withLock { $0.stats.bytesReceived += Int64(n) }
            case .metadata: continue
            case .reconnected(_, let continuous):
                if !continuous {
                    throw AudioError(.network, component: Self.component, "\(what) \(target) restarted mid-transfer")
                }
            case .end: break loop
            }
            if range == nil && bytes.count >= limit {
                throw AudioError(.limitExceeded, component: Self.component, "\(what) \(target) exceeds \(limit) bytes")
            }
        }
        if let range, Int64(bytes.count) < range.length {
            throw AudioError(.network, component: Self.component, "\(what) \(target): \(bytes.count) of \(range.length) bytes in range")
        }
        return HLSFetched(bytes: bytes, contentType: info.contentType, url: info.url)
    }

    /// An HTTP 4xx answer other than 408/429 does not get better by asking again.
    static func isPermanent(_ error: AudioError) -> Bool {
        guard let u = error.underlying, u.hasPrefix("HTTP 4") else { return false }
        return u != "HTTP 408" && u != "HTTP 429"
    }

    private func checkCancelled() throws(AudioError) {
        if shared.withLock({ $0.cancelled }) {
            throw AudioError(.cancelled, component: Self.component, "cancelled reading \(url)")
        }
    }

    /// Sleeps `seconds` in short steps, throwing when cancelled.
    private func sleep(_ seconds: Double) throws(AudioError) {
        let end = Self.now() + seconds
        shared.withLock { $0.stats.isWaitingToRetry = true }
        defer { shared.withLock { $0.stats.isWaitingToRetry = false } }
        while true {
            try checkCancelled()
            let left = end - Self.now()
            if left <= 0 { return }
            usleep(UInt32(min(left, 0.05) * 1_000_000))
        }
    }

    static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}
