import OATCore

/// Limits applied to playlists read from untrusted sources.
public struct PlaylistLimits: Sendable, Equatable {
    /// The largest playlist accepted, in bytes (default 4 MiB: long HLS event playlists are big).
    public var maximumBytes: Int = 4 << 20
    /// The most entries (PLS/M3U items, HLS segments or variants) accepted (default 100 000).
    public var maximumEntries: Int = 100_000
    /// How deep a playlist may point at another playlist (default 4: a PLS naming an M3U naming a
    /// stream is depth 2).
    public var maximumNestingDepth: Int = 4
    /// The longest line accepted, in characters (default 64 KiB).
    public var maximumLineLength: Int = 65_536
    /// Creates the default limits.
    public init() {}
}

/// The kinds of playlist ``Playlist/parse(bytes:url:contentType:depth:limits:)`` recognises.
public enum PlaylistFormat: String, Sendable, Equatable {
    /// `[playlist]` with `FileN=` entries (SHOUTcast/Winamp PLS).
    case pls
    /// A plain list of URLs or paths, one per line.
    case m3u
    /// `#EXTM3U` with `#EXTINF:duration,title` lines.
    case extendedM3U
    /// An HLS master (multivariant) playlist: `#EXT-X-STREAM-INF`.
    case hlsMaster
    /// An HLS media playlist: `#EXTINF` segments with `#EXT-X-TARGETDURATION`.
    case hlsMedia
}

/// One entry of a PLS or M3U playlist.
public struct PlaylistEntry: Sendable, Equatable {
    /// The absolute URL (or absolute local path for a local playlist) the entry names.
    public var url: String
    /// The title (`TitleN=`, or the `#EXTINF` text after the comma), if given.
    public var title: String?
    /// The duration in seconds (`LengthN=`, `#EXTINF`); nil when absent or negative (a live stream).
    public var duration: Double?
    /// The 1-based line of the playlist the entry came from.
    public var line: Int
    /// Creates an entry.
    public init(url: String, title: String? = nil, duration: Double? = nil, line: Int) {
        self.url = url
        self.title = title
        self.duration = duration
        self.line = line
    }

    /// True when the entry's URL looks like another playlist (by extension), so a player resolves
    /// it with ``Playlist/parse(bytes:url:contentType:depth:limits:)`` at `depth + 1`.
    public var looksLikePlaylist: Bool {
        Playlist.formatHint(url: url, contentType: nil) != nil
    }
}

/// A parsed playlist: the entries of a PLS/M3U list, or an HLS playlist.
///
/// Entry point for the player: hand the bytes of anything whose Content-Type, extension or first
/// bytes say "playlist" (see ``isPlaylist(bytes:url:contentType:)``) to
/// ``parse(bytes:url:contentType:depth:limits:)``. For ``PlaylistFormat/pls``, ``PlaylistFormat/m3u``
/// and ``PlaylistFormat/extendedM3U`` play ``entries`` in order (an entry that is itself a playlist
/// is fetched and parsed with `depth + 1`); for HLS formats open the URL with ``HLSByteSource``.
public struct Playlist: Sendable, Equatable {
    /// What kind of playlist this is.
    public var format: PlaylistFormat
    /// PLS/M3U entries with absolute URLs (empty for HLS).
    public var entries: [PlaylistEntry]
    /// The parsed HLS playlist, for the HLS formats.
    public var hls: HLSPlaylist?
    /// The URL the playlist was read from.
    public var url: String

    static let component = "Playlist"

    /// MIME types that name playlists.
    static let plsTypes: Set<String> = ["audio/x-scpls", "audio/scpls", "application/pls+xml", "audio/x-pls"]
    static let m3uTypes: Set<String> = ["audio/x-mpegurl", "audio/mpegurl", "application/x-mpegurl",
                                        "application/vnd.apple.mpegurl", "audio/m3u", "audio/x-m3u"]

    /// The playlist kind suggested by a Content-Type or URL extension (`.pls`, `.m3u`, `.m3u8`), or nil.
    public static func formatHint(url: String, contentType: String?) -> PlaylistFormat? {
        if let t = contentType?.lowercased() {
            if plsTypes.contains(t) { return .pls }
            if m3uTypes.contains(t) { return .m3u }
        }
        let path = PlaylistURL(url).path.lowercased()
        if path.hasSuffix(".pls") { return .pls }
        if path.hasSuffix(".m3u") || path.hasSuffix(".m3u8") { return .m3u }
        return nil
    }

    /// True when the bytes are a playlist: by Content-Type, extension, or content (`[playlist]`,
    /// `#EXTM3U`). A player calls this on the first bytes of a response before treating them as audio.
    public static func isPlaylist(bytes: [UInt8], url: String, contentType: String?) -> Bool {
        if formatHint(url: url, contentType: contentType) != nil { return true }
        return sniff(bytes) != nil
    }

    /// Recognises playlist text by its first non-blank line.
    static func sniff(_ bytes: [UInt8]) -> PlaylistFormat? {
        let head = bytes.prefix(512)
        let text = head.withUnsafeBytes { PlaylistText.decode($0) }
        guard let first = PlaylistText.lines(text).first(where: { !$0.isEmpty }) else { return nil }
        if first.lowercased() == "[playlist]" { return .pls }
        if first.hasPrefix("#EXTM3U") { return .extendedM3U }
        return nil
    }

    /// Parses playlist bytes.
    ///
    /// - Parameters:
    ///   - bytes: the whole playlist (at most `limits.maximumBytes`).
    ///   - url: where it came from; relative entries are resolved against it. When it is remote
    ///     (http/https), entries that name local files (`file:` URLs or absolute paths) are refused.
    ///   - contentType: the declared MIME type, if any (content wins when they disagree).
    ///   - depth: 0 for a playlist the user opened, +1 for each playlist reached through another.
    ///   - limits: size, entry, nesting and line limits.
    /// - Throws: `AudioError` `.limitExceeded` (size, entries, depth), `.invalidData` naming the
    ///   line, `.invalidArgument` for a refused local reference.
    public static func parse(bytes: [UInt8], url: String, contentType: String? = nil, depth: Int = 0,
                             limits: PlaylistLimits = PlaylistLimits()) throws(AudioError) -> Playlist {
        guard depth <= limits.maximumNestingDepth else {
            throw AudioError(.limitExceeded, component: component,
                             "playlist \(url) is nested \(depth) deep (limit \(limits.maximumNestingDepth))")
        }
        guard bytes.count <= limits.maximumBytes else {
            throw AudioError(.limitExceeded, component: component,
                             "playlist \(url) is \(bytes.count) bytes (limit \(limits.maximumBytes))")
        }
        let text = bytes.withUnsafeBytes { PlaylistText.decode($0) }
        let lines = PlaylistText.lines(text)
        if let long = lines.firstIndex(where: { $0.utf8.count > limits.maximumLineLength }) {
            throw AudioError(.limitExceeded, component: component,
                             "playlist \(url) line \(long + 1) is longer than \(limits.maximumLineLength) characters")
        }
        let base = PlaylistURL(url)
        let firstLine = lines.first(where: { !$0.isEmpty })
        if firstLine?.lowercased() == "[playlist]" {
            return Playlist(format: .pls, entries: try parsePLS(lines, base: base, limits: limits), hls: nil, url: url)
        }
        if lines.contains(where: { $0.hasPrefix("#EXT-X-") }) {
            let hls = try HLSPlaylist.parse(lines: lines, base: base, limits: limits)
            return Playlist(format: hls.master != nil ? .hlsMaster : .hlsMedia, entries: [], hls: hls, url: url)
        }
        if firstLine.map({ $0.hasPrefix("#EXTM3U") }) ?? false {
            return Playlist(format: .extendedM3U, entries: try parseM3U(lines, base: base, limits: limits), hls: nil, url: url)
        }
        if firstLine == nil {
            throw AudioError(.invalidData, component: component, "playlist \(url) is empty")
        }
        if let hint = formatHint(url: url, contentType: contentType), hint == .pls {
            throw AudioError(.invalidData, component: component, "PLS playlist \(url) has no [playlist] section")
        }
        // A plain M3U: every non-comment line must be a reference; binary or HTML is refused.
        let entries = try parseM3U(lines, base: base, limits: limits)
        return Playlist(format: .m3u, entries: entries, hls: nil, url: url)
    }

    /// Resolves an entry's reference against the playlist URL and applies the local-file rule.
    static func resolve(_ reference: Substring, base: PlaylistURL, line: Int, kind: String) throws(AudioError) -> String {
        let ref = String(reference)
        guard !ref.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw AudioError(.invalidData, component: component, "\(kind) line \(line): control characters in the reference")
        }
        let target = base.resolving(ref)
        if base.isRemote {
            guard target.isRemote else {
                throw AudioError(.invalidArgument, component: component,
                                 "\(kind) line \(line): a remote playlist may not refer to '\(ref)' (only http/https URLs are allowed)")
            }
        } else if let scheme = target.scheme, !target.isRemote, scheme != "file" {
            throw AudioError(.unsupportedFormat, component: component, "\(kind) line \(line): unsupported URL scheme '\(scheme)' in '\(ref)'")
        }
        if target.isRemote {
            guard let host = target.authority, !host.isEmpty else {
                throw AudioError(.invalidData, component: component, "\(kind) line \(line): no host in '\(ref)'")
            }
            return target.text
        }
        guard !target.path.isEmpty else {
            throw AudioError(.invalidData, component: component, "\(kind) line \(line): empty path in '\(ref)'")
        }
        // A local file: file:///abs, file://localhost/abs or a path; no hosts (UNC-like
        // //host/share), no relative file: URLs. Repeated leading slashes collapse to one.
        guard (target.authority ?? "").isEmpty || target.authority == "localhost",
              target.scheme != "file" || target.path.hasPrefix("/") else {
            throw AudioError(.invalidData, component: component, "\(kind) line \(line): '\(ref)' is not a local file reference")
        }
        var path = Substring(target.path)
        while path.hasPrefix("//") { path = path.dropFirst() }
        if let q = target.query, target.scheme == nil { return String(path) + "?" + q }
        return String(path)
    }

    static func parsePLS(_ lines: [Substring], base: PlaylistURL, limits: PlaylistLimits) throws(AudioError) -> [PlaylistEntry] {
        var files: [Int: (url: String, line: Int)] = [:]
        var titles: [Int: String] = [:]
        var lengths: [Int: Double] = [:]
        var declared: Int?
        var inSection = false
        for (i, line) in lines.enumerated() {
            let n = i + 1
            if line.isEmpty || line.hasPrefix(";") || line.hasPrefix("#") { continue }
            if line.hasPrefix("[") {
                inSection = line.lowercased() == "[playlist]"
                continue
            }
            guard inSection else { continue }
            guard let eq = line.firstIndex(of: "=") else {
                throw AudioError(.invalidData, component: component, "PLS line \(n): expected key=value, found '\(line.prefix(60))'")
            }
            let key = PlaylistText.trim(line[..<eq]).lowercased()
            let value = PlaylistText.trim(line[line.index(after: eq)...])
            func index(_ prefix: String) throws(AudioError) -> Int {
                guard let k = Int(key.dropFirst(prefix.count)), k >= 1, k <= limits.maximumEntries else {
                    throw AudioError(.invalidData, component: component, "PLS line \(n): bad entry number in '\(key)'")
                }
                return k
            }
            if key.hasPrefix("file") {
                let k = try index("file")
                guard !value.isEmpty else { throw AudioError(.invalidData, component: component, "PLS line \(n): empty \(key)") }
                files[k] = (try resolve(value, base: base, line: n, kind: "PLS"), n)
                guard files.count <= limits.maximumEntries else {
                    throw AudioError(.limitExceeded, component: component, "PLS line \(n): more than \(limits.maximumEntries) entries")
                }
            } else if key.hasPrefix("title") {
                titles[try index("title")] = String(value)
            } else if key.hasPrefix("length") {
                let k = try index("length")
                if let d = Double(value), d.isFinite, d >= 0 { lengths[k] = d }
            } else if key == "numberofentries" {
                guard let c = Int(value), c >= 0 else {
                    throw AudioError(.invalidData, component: component, "PLS line \(n): bad NumberOfEntries '\(value)'")
                }
                declared = c
            } else if key == "version" {
                continue
            }
        }
        guard !files.isEmpty else {
            throw AudioError(.invalidData, component: component, "PLS playlist has no FileN entries")
        }
        _ = declared   // informative only: real servers often get it wrong
        return files.sorted { $0.key < $1.key }.map { k, f in
            PlaylistEntry(url: f.url, title: titles[k].flatMap { $0.isEmpty ? nil : $0 }, duration: lengths[k], line: f.line)
        }
    }

    static func parseM3U(_ lines: [Substring], base: PlaylistURL, limits: PlaylistLimits) throws(AudioError) -> [PlaylistEntry] {
        var entries: [PlaylistEntry] = []
        var pendingTitle: String?
        var pendingDuration: Double?
        for (i, line) in lines.enumerated() {
            let n = i + 1
            if line.isEmpty { continue }
            if line.hasPrefix("#") {
                if line.hasPrefix("#EXTINF:") {
                    let body = line.dropFirst(8)
                    let comma = body.firstIndex(of: ",")
                    let durText = PlaylistText.trim(comma.map { body[..<$0] } ?? body)
                    // Attributes (tvg-id="..") may follow the duration before the comma.
                    let first = durText.split(separator: " ").first.map(String.init) ?? ""
                    guard let d = Double(first), d.isFinite else {
                        throw AudioError(.invalidData, component: component, "M3U line \(n): bad #EXTINF duration '\(durText.prefix(40))'")
                    }
                    pendingDuration = d >= 0 ? d : nil
                    let t = comma.map { PlaylistText.trim(body[body.index(after: $0)...]) } ?? ""
                    pendingTitle = t.isEmpty ? nil : String(t)
                }
                continue
            }
            if line.utf8.contains(0) || line.hasPrefix("<") {
                throw AudioError(.invalidData, component: component, "M3U line \(n): not a playlist line ('\(line.prefix(40))')")
            }
            entries.append(PlaylistEntry(url: try resolve(line, base: base, line: n, kind: "M3U"),
                                         title: pendingTitle, duration: pendingDuration, line: n))
            guard entries.count <= limits.maximumEntries else {
                throw AudioError(.limitExceeded, component: component, "M3U line \(n): more than \(limits.maximumEntries) entries")
            }
            pendingTitle = nil
            pendingDuration = nil
        }
        guard !entries.isEmpty else {
            throw AudioError(.invalidData, component: component, "M3U playlist has no entries")
        }
        return entries
    }
}

extension Playlist {
    /// What a fetch of a playlist URL returned, for ``expand(url:limits:fetch:)``.
    public struct Fetched: Sendable {
        /// The body.
        public var bytes: [UInt8]
        /// The declared MIME type.
        public var contentType: String?
        /// The URL after redirects.
        public var url: String
        /// Creates a fetch result.
        public init(bytes: [UInt8], contentType: String? = nil, url: String) {
            self.bytes = bytes
            self.contentType = contentType
            self.url = url
        }
    }

    /// Fetches and parses the playlist at `url` and, depth first, every entry that is itself a
    /// PLS/M3U playlist (by extension), returning the playable entries in order. An HLS playlist,
    /// at the top or nested, is returned as one entry with its URL (play it with ``HLSByteSource``).
    /// Nesting deeper than `limits.maximumNestingDepth` throws `.limitExceeded`; a cycle is
    /// refused by the same limit. At most `limits.maximumEntries` entries come out in all.
    public static func expand(url: String, limits: PlaylistLimits = PlaylistLimits(),
                              fetch: (String) throws(AudioError) -> Fetched) throws(AudioError) -> [PlaylistEntry] {
        var out: [PlaylistEntry] = []
        try expand(url: url, depth: 0, title: nil, limits: limits, fetch: fetch, into: &out)
        return out
    }

    private static func expand(url: String, depth: Int, title: String?, limits: PlaylistLimits,
                               fetch: (String) throws(AudioError) -> Fetched, into out: inout [PlaylistEntry]) throws(AudioError) {
        guard depth <= limits.maximumNestingDepth else {
            throw AudioError(.limitExceeded, component: component,
                             "playlist \(url) is nested \(depth) deep (limit \(limits.maximumNestingDepth))")
        }
        let fetched = try fetch(url)
        let playlist = try parse(bytes: fetched.bytes, url: fetched.url, contentType: fetched.contentType, depth: depth, limits: limits)
        if playlist.hls != nil {
            out.append(PlaylistEntry(url: fetched.url, title: title, duration: playlist.hls?.media.flatMap { $0.hasEndList ? $0.totalDuration : nil }, line: 0))
            return
        }
        for entry in playlist.entries {
            if entry.looksLikePlaylist {
                try expand(url: entry.url, depth: depth + 1, title: entry.title, limits: limits, fetch: fetch, into: &out)
            } else {
                out.append(entry)
            }
            guard out.count <= limits.maximumEntries else {
                throw AudioError(.limitExceeded, component: component, "playlist \(url) expands to more than \(limits.maximumEntries) entries")
            }
        }
    }
}
