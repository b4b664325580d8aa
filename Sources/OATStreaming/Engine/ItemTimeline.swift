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

/// How a queue entry plays: a PLS/M3U playlist is expanded in place (by its extension, or once
/// its Content-Type or content showed it is one), an HLS presentation plays through
/// ``HLSByteSource``, anything else through the player's source factory. Remembers what was
/// found per URL, and bounds the expansions of playlists without a playlist extension
/// (playlists that list each other would otherwise expand for ever).
struct EntryClassifier {
    /// URLs known to be HLS presentations (or listed as playlists inside an expanded one).
    private(set) var hlsURLs: Set<String> = []
    /// URLs found to be PLS/M3U playlists by their Content-Type or content.
    private(set) var contentPlaylists: Set<String> = []
    /// Expansions of playlists without a playlist extension so far.
    private(set) var contentExpansions = 0
    static let maximumContentExpansions = 16

    /// Whether `url` is a PLS/M3U playlist to fetch and expand (HLS is not expanded).
    func isPlaylist(_ url: String) -> Bool {
        !hlsURLs.contains(url) && (Playlist.formatHint(url: url, contentType: nil) != nil || contentPlaylists.contains(url))
    }

    /// Whether `url` plays through ``HLSByteSource``.
    func isHLS(_ url: String) -> Bool {
        hlsURLs.contains(url) || PlaylistURL(url).path.lowercased().hasSuffix(".m3u8")
    }

    /// Counts the expansion of `url` (when it has no playlist extension); throws past
    /// ``maximumContentExpansions``.
    mutating func countExpansion(of url: String) throws(AudioError) {
        guard Playlist.formatHint(url: url, contentType: nil) == nil else { return }
        contentExpansions += 1
        guard contentExpansions <= Self.maximumContentExpansions else {
            throw AudioError(.limitExceeded, component: "StreamingPlayer",
                             "\(url) is a playlist, and more than \(Self.maximumContentExpansions) playlists without a playlist extension were followed (do they list each other?)")
        }
    }

    /// `url` turned out to be a playlist of `kind` (by its Content-Type or content).
    mutating func found(_ kind: PlaylistKind, at url: String) {
        if kind == .hls { hlsURLs.insert(url) } else { contentPlaylists.insert(url) }
    }

    /// `url` is an HLS presentation (its tags said so, or a playlist listed it as a playlist).
    mutating func markHLS(_ url: String) {
        hlsURLs.insert(url)
    }
}

/// The item timeline: the queue of entries (playlists expanded in place), opening, prefetching
/// for gapless joins and retiring items.
extension DecoderThread {
    /// A PLS/M3U playlist at queue entry `index` (by extension): fetches and parses it (nested
    /// playlists too) and replaces the entry with what it lists; an HLS playlist stays and plays
    /// through ``HLSByteSource``. True when the queue changed (or the entry failed and was
    /// skipped), so the caller looks at the queue again.
    func expandPlaylist(at index: Int, url: String) -> Bool {
        guard entries.isPlaylist(url) else { return false }
        let makeSource = engine.makeSource
        do throws(AudioError) {
            try entries.countExpansion(of: url)
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
            for e in expanded where e.looksLikePlaylist { entries.markHLS(e.url) }
            if expanded.count == 1, expanded[0].url == url {
                // An HLS presentation (recognised by its tags): it plays as one item.
                entries.markHLS(url)
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
        if entries.isHLS(url) {
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
        failures.failed()
        engine.emit(.error(index: i, error))
    }
}
