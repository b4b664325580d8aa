import OATCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A disk cache of byte ranges of remote resources, with a size limit.
///
/// Layout: one directory; per resource `<hash>.data` (a sparse file: byte N of the resource at
/// offset N) and `<hash>.map` (text: the URL, the total length, the content type, the last use,
/// and the cached ranges). `<hash>` is 32 hex digits of a 128-bit hash of the URL, so names never
/// leave the directory; the URL stored in the map guards against collisions. Data is written before
/// the map that claims it, and maps are replaced atomically (write, then rename), so a killed
/// process leaves at worst unclaimed bytes, never claimed garbage. When the total of cached bytes
/// passes the limit, whole resources are evicted, least recently used first.
///
/// Thread safety: all methods may be called from any thread (one lock).
public final class ByteRangeCache: Sendable {
    /// The cache directory.
    public let directory: String
    /// The most bytes kept (sum of cached ranges over all resources).
    public let sizeLimit: Int64

    /// What the cache knows about one resource.
    public struct Entry: Sendable, Equatable {
        /// The resource URL.
        public var url: String
        /// Its total length, when known.
        public var totalLength: Int64?
        /// Its content type, when known.
        public var contentType: String?
        /// Cached byte ranges, sorted and disjoint.
        public var ranges: [Range<Int64>] = []
        /// Last use (seconds since the epoch).
        public var lastUsed: Int64 = 0
        /// Bytes cached.
        public var cachedBytes: Int64 { ranges.reduce(0) { $0 + Int64($1.count) } }
    }

    private struct State {
        var entries: [String: Entry] = [:]   // by hash
        var dirty: [String: Int64] = [:]     // hash -> bytes written since the map was saved
        var pinned: [String: Int] = [:]
    }
    private let state = Locked(State())

    /// The standard place for the cache: `$XDG_CACHE_HOME/openaudiotoolbox/http` when
    /// `XDG_CACHE_HOME` is an absolute path (the XDG base directory rule), else
    /// `$HOME/.cache/openaudiotoolbox/http`, else a directory under `$TMPDIR` (or `/tmp`) named
    /// after the user id. `environment` defaults to the process's. The directory is not created
    /// (``init(directory:sizeLimit:)`` creates the last component; ``createDirectories(_:)`` all).
    public static func defaultDirectory(environment: [String: String]? = nil) -> String {
        func value(_ name: String) -> String? {
            if let environment { return environment[name] }
            return getenv(name).map { String(cString: $0) }
        }
        func trimmed(_ p: String) -> String {
            var d = p
            while d.count > 1 && d.hasSuffix("/") { d.removeLast() }
            return d
        }
        if let x = value("XDG_CACHE_HOME"), x.hasPrefix("/") { return trimmed(x) + "/openaudiotoolbox/http" }
        if let h = value("HOME"), h.hasPrefix("/") { return trimmed(h) + "/.cache/openaudiotoolbox/http" }
        let tmp = value("TMPDIR").flatMap { $0.hasPrefix("/") ? trimmed($0) : nil } ?? "/tmp"
        return tmp + "/openaudiotoolbox-\(getuid())-cache"
    }

    /// Creates `path` and its missing parents (mode 0700), as `mkdir -p` does.
    public static func createDirectories(_ path: String) throws(AudioError) {
        var built = ""
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            built += "/" + part
            if mkdir(built, 0o700) != 0 && errno != EEXIST {
                throw AudioError(.io, component: "ByteRangeCache", "cannot create the cache directory \(built)", underlying: String(cString: strerror(errno)))
            }
        }
    }

    /// Opens (creating if needed) a cache in `directory` with a size limit in bytes, loading the
    /// maps found there (invalid ones are discarded with their data).
    public init(directory: String, sizeLimit: Int64) throws(AudioError) {
        self.directory = directory
        self.sizeLimit = max(0, sizeLimit)
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            throw AudioError(.io, component: "ByteRangeCache", "cannot create the cache directory \(directory)", underlying: String(cString: strerror(errno)))
        }
        guard let dir = opendir(directory) else {
            throw AudioError(.io, component: "ByteRangeCache", "cannot read the cache directory \(directory)", underlying: String(cString: strerror(errno)))
        }
        var names: [String] = []
        while let e = readdir(dir) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            names.append(name)
        }
        closedir(dir)
        var loaded: [String: Entry] = [:]
        for name in names where name.hasSuffix(".map") {
            let hash = String(name.dropLast(4))
            guard ByteRangeCache.isHash(hash) else { continue }
            if let entry = loadMap(hash) {
                loaded[hash] = entry
            } else {
                unlink(path(hash, "map"))
                unlink(path(hash, "data"))
            }
        }
        for name in names where name.hasSuffix(".tmp") { unlink(directory + "/" + name) }
        state.withLock { $0.entries = loaded }
    }

    /// The 32-hex-digit name of `url`'s files.
    public static func key(for url: String) -> String {
        var a: UInt64 = 0xcbf2_9ce4_8422_2325
        var b: UInt64 = 0x6c62_272e_07bb_0142
        for byte in url.utf8 {
            a = (a ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
            b = (b &+ UInt64(byte)) &* 0x9E37_79B9_7F4A_7C15
            b ^= b >> 29
        }
        func hex(_ v: UInt64) -> String {
            let s = String(v, radix: 16)
            return String(repeating: "0", count: 16 - s.count) + s
        }
        return hex(a) + hex(b)
    }

    static func isHash(_ s: String) -> Bool {
        s.utf8.count == 32 && s.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }

    func path(_ hash: String, _ ext: String) -> String { directory + "/" + hash + "." + ext }

    /// What is cached for `url` (nil if nothing).
    public func entry(for url: String) -> Entry? {
        let h = Self.key(for: url)
        return state.withLock { s in s.entries[h].flatMap { $0.url == url ? $0 : nil } }
    }

    /// Bytes cached over all resources.
    public var totalCachedBytes: Int64 { state.withLock { $0.entries.values.reduce(0) { $0 + $1.cachedBytes } } }

    /// Records what is known of `url` (length, type), creating its entry; a changed length drops
    /// the old bytes (the resource changed).
    public func describe(url: String, totalLength: Int64?, contentType: String?) {
        let h = Self.key(for: url)
        let reset = state.withLock { s -> Bool in
            var e = s.entries[h] ?? Entry(url: url)
            var reset = false
            if e.url != url || (e.totalLength != nil && totalLength != nil && e.totalLength != totalLength) {
                e = Entry(url: url)
                reset = true
            }
            if let totalLength { e.totalLength = totalLength }
            if let contentType { e.contentType = contentType }
            e.lastUsed = Int64(time(nil))
            s.entries[h] = e
            return reset
        }
        if reset { unlink(path(h, "data")) }
        saveMap(h)
    }

    /// Copies cached bytes of `url` at `offset` into `buffer`; returns how many (0 when `offset`
    /// is not cached).
    public func read(url: String, at offset: Int64, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        let h = Self.key(for: url)
        let available = state.withLock { s -> Int64 in
            guard var e = s.entries[h], e.url == url, let r = e.ranges.first(where: { $0.contains(offset) }) else { return 0 }
            e.lastUsed = Int64(time(nil))
            s.entries[h] = e
            return r.upperBound - offset
        }
        guard available > 0, let base = buffer.baseAddress else { return 0 }
        let want = Int(min(Int64(buffer.count), available))
        let fd = Glibc.open(path(h, "data"), O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return 0 }
        defer { Glibc.close(fd) }
        var done = 0
        while done < want {
            let n = pread(fd, base + done, want - done, off_t(offset) + off_t(done))
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            done += n
        }
        return done
    }

    /// Stores bytes of `url` at `offset` (data first; the map follows every 256 KiB and on
    /// ``flush(url:)``). Evicts other resources when over the limit.
    public func write(url: String, at offset: Int64, _ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty, let base = bytes.baseAddress, offset >= 0 else { return }
        let h = Self.key(for: url)
        let fd = Glibc.open(path(h, "data"), O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        var done = 0
        while done < bytes.count {
            let n = pwrite(fd, base + done, bytes.count - done, off_t(offset) + off_t(done))
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            done += n
        }
        Glibc.close(fd)
        guard done > 0 else { return }
        let save = state.withLock { s -> Bool in
            var e = s.entries[h] ?? Entry(url: url)
            guard e.url == url else { return false }
            e.ranges = Self.insert(offset..<(offset + Int64(done)), into: e.ranges)
            e.lastUsed = Int64(time(nil))
            s.entries[h] = e
            s.dirty[h, default: 0] += Int64(done)
            return s.dirty[h, default: 0] >= 256 * 1024
        }
        if save { saveMap(h) }
        evictIfNeeded(keeping: h)
    }

    /// Saves the range map of `url` now.
    public func flush(url: String) { saveMap(Self.key(for: url)) }

    /// Removes `url` from the cache.
    public func remove(url: String) {
        let h = Self.key(for: url)
        state.withLock { s in
            s.entries[h] = nil
            s.dirty[h] = nil
        }
        unlink(path(h, "map"))
        unlink(path(h, "data"))
    }

    /// Evicts least recently used resources (not `keeping`) until the total is within the limit.
    public func evictIfNeeded(keeping: String? = nil) {
        let victims = state.withLock { s -> [String] in
            var total = s.entries.values.reduce(0) { $0 + $1.cachedBytes }
            var out: [String] = []
            let order = s.entries.sorted { $0.value.lastUsed < $1.value.lastUsed || ($0.value.lastUsed == $1.value.lastUsed && $0.key < $1.key) }
            for (h, e) in order where total > sizeLimit {
                if h == keeping || s.pinned[h, default: 0] > 0 { continue }
                total -= e.cachedBytes
                s.entries[h] = nil
                s.dirty[h] = nil
                out.append(h)
            }
            return out
        }
        for h in victims {
            unlink(path(h, "map"))
            unlink(path(h, "data"))
        }
    }

    func pin(_ url: String, _ delta: Int) {
        let h = Self.key(for: url)
        state.withLock { $0.pinned[h, default: 0] += delta }
    }

    static func insert(_ r: Range<Int64>, into ranges: [Range<Int64>]) -> [Range<Int64>] {
        var out: [Range<Int64>] = []
        var cur = r
        var placed = false
        for x in ranges {
            if x.upperBound < cur.lowerBound {
                out.append(x)
            } else if x.lowerBound > cur.upperBound {
                if !placed { out.append(cur); placed = true }
                out.append(x)
            } else {
                cur = min(x.lowerBound, cur.lowerBound)..<max(x.upperBound, cur.upperBound)
            }
        }
        if !placed { out.append(cur) }
        return out
    }

    private func saveMap(_ h: String) {
        guard let e = state.withLock({ s -> Entry? in
            s.dirty[h] = 0
            return s.entries[h]
        }) else { return }
        var text = "OATCACHE 1\nurl \(e.url)\nlength \(e.totalLength.map(String.init) ?? "-")\n"
        text += "type \(e.contentType ?? "-")\nused \(e.lastUsed)\n"
        for r in e.ranges { text += "range \(r.lowerBound) \(r.upperBound)\n" }
        let tmp = path(h, "\(getpid()).tmp")
        let fd = Glibc.open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        let bytes = Array(text.utf8)
        let ok = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) } == bytes.count
        Glibc.close(fd)
        if ok { rename(tmp, path(h, "map")) } else { unlink(tmp) }
    }

    /// Reads and validates a map; nil if it is not one of ours or is inconsistent.
    private func loadMap(_ h: String) -> Entry? {
        let fd = Glibc.open(path(h, "map"), O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        var bytes: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65536)
        while bytes.count < 4 << 20 {
            let n = buf.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            bytes += buf[0..<n]
        }
        Glibc.close(fd)
        var st = stat()
        let dataSize: Int64 = stat(path(h, "data"), &st) == 0 ? Int64(st.st_size) : 0
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.first == "OATCACHE 1" else { return nil }
        var e = Entry(url: "")
        for line in lines.dropFirst() where !line.isEmpty {
            guard let space = line.firstIndex(of: " ") else { return nil }
            let key = line[..<space]
            let value = String(line[line.index(after: space)...])
            switch key {
            case "url": e.url = value
            case "length": e.totalLength = value == "-" ? nil : Int64(value)
            case "type": e.contentType = value == "-" ? nil : value
            case "used": e.lastUsed = Int64(value) ?? 0
            case "range":
                let p = value.split(separator: " ")
                guard p.count == 2, let a = Int64(p[0]), let b = Int64(p[1]), a >= 0, b > a else { return nil }
                let end = min(b, dataSize, e.totalLength ?? Int64.max)
                if end > a { e.ranges = Self.insert(a..<end, into: e.ranges) }
            default: return nil
            }
        }
        guard !e.url.isEmpty, Self.key(for: e.url) == h else { return nil }
        return e
    }
}

/// Serves a seekable resource through a ``ByteRangeCache``: cached ranges are read from disk
/// without the network; a read in a gap opens the upstream source at the gap (one
/// `Range: bytes=N-` request) and stores what arrives. Non-seekable (live) resources pass through
/// uncached. ``statistics`` adds the upstream's requests and reconnects and counts
/// ``ByteSourceStatistics/bytesFromCache``.
///
/// Thread safety: like any ``ByteSource``: open/read/close from one thread, cancel from any.
public final class CachingByteSource: ByteSource {
    /// The wrapped source.
    public let upstream: any ByteSource
    /// The cache key (the resource URL).
    public let url: String
    /// The cache.
    public let cache: ByteRangeCache

    private struct State {
        var position: Int64 = 0
        var upstreamPosition: Int64? = nil   // where the open upstream connection is
        var info: ByteSourceInfo?
        var passThrough = false
        var cancelled = false
        var stats = ByteSourceStatistics()
        var pinned = false
    }
    private let state = Locked(State())

    /// Wraps `upstream` (usually an ``HTTPByteSource``) for `url`.
    public init(upstream: any ByteSource, url: String, cache: ByteRangeCache) {
        self.upstream = upstream
        self.url = url
        self.cache = cache
    }

    deinit { close() }

    public func open(at offset: Int64) throws(AudioError) -> ByteSourceInfo {
        if state.withLock({ $0.cancelled }) { throw AudioError(.cancelled, component: "CachingByteSource", "cancelled opening \(url)") }
        if !state.withLock({ s in defer { s.pinned = true }; return s.pinned }) { cache.pin(url, 1) }
        // A resource whose length is known and whose first byte here is cached opens offline.
        if let e = cache.entry(for: url), let total = e.totalLength, offset == total || e.ranges.contains(where: { $0.contains(offset) }) {
            let info = ByteSourceInfo(url: url, contentType: e.contentType, totalLength: total, startOffset: offset, isSeekable: true, isLive: false)
            state.withLock { s in
                s.position = offset
                s.info = info
                s.passThrough = false
            }
            return info
        }
        let info = try upstream.open(at: offset)
        let cacheable = info.isSeekable && info.totalLength != nil
        if cacheable { cache.describe(url: url, totalLength: info.totalLength, contentType: info.contentType) }
        state.withLock { s in
            s.position = offset
            s.upstreamPosition = offset
            s.info = info
            s.passThrough = !cacheable
        }
        return info
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(AudioError) -> ByteSourceRead {
        let (cancelled, passThrough, position, upstreamPosition, info) = state.withLock { s in
            (s.cancelled, s.passThrough, s.position, s.upstreamPosition, s.info)
        }
        if cancelled { throw AudioError(.cancelled, component: "CachingByteSource", "cancelled reading \(url)") }
        guard let info else { throw AudioError(.invalidState, component: "CachingByteSource", "read before open of \(url)") }
        if passThrough {
            let r = try upstream.read(into: buffer)
            if case .bytes(let n) = r { state.withLock { $0.stats.bytesDelivered += Int64(n) } }
            return r
        }
        if let total = info.totalLength, position >= total {
            cache.flush(url: url)
            return .end
        }
        let hit = cache.read(url: url, at: position, into: buffer)
        if hit > 0 {
            state.withLock { s in
                s.position += Int64(hit)
                s.stats.bytesDelivered += Int64(hit)
                s.stats.bytesFromCache += Int64(hit)
            }
            return .bytes(hit)
        }
        // A gap: read upstream from exactly here, no further than the next cached range.
        if upstreamPosition != position {
            _ = try upstream.open(at: position)
            state.withLock { $0.upstreamPosition = position }
        }
        let nextCached = cache.entry(for: url)?.ranges.first { $0.lowerBound > position }?.lowerBound
        let limit = nextCached.map { Int(min(Int64(buffer.count), $0 - position)) } ?? buffer.count
        let slice = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<max(1, limit)])
        let r = try upstream.read(into: slice)
        switch r {
        case .bytes(let n):
            cache.write(url: url, at: position, UnsafeRawBufferPointer(rebasing: slice[0..<n]))
            state.withLock { s in
                s.position += Int64(n)
                s.upstreamPosition = s.position
                s.stats.bytesDelivered += Int64(n)
            }
            return .bytes(n)
        case .end:
            cache.flush(url: url)
            state.withLock { $0.upstreamPosition = nil }
            return .end
        default:
            return r
        }
    }

    public func cancel() {
        state.withLock { $0.cancelled = true }
        upstream.cancel()
    }

    public func close() {
        upstream.close()
        cache.flush(url: url)
        let wasPinned = state.withLock { s -> Bool in
            defer { s.pinned = false; s.upstreamPosition = nil }
            return s.pinned
        }
        if wasPinned { cache.pin(url, -1) }
    }

    public var statistics: ByteSourceStatistics {
        let up = upstream.statistics
        var s = state.withLock { $0.stats }
        s.requests = up.requests
        s.reconnects = up.reconnects
        s.bytesReceived = up.bytesReceived
        s.isWaitingToRetry = up.isWaitingToRetry
        return s
    }
}
