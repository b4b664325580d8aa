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

/// The item timeline: the queue of entries (playlists expanded in place), opening, prefetching
/// for gapless joins and retiring items.
extension DecoderThread {
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
        failures.failed()
        engine.emit(.error(index: i, error))
    }
}
