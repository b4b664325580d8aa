import OATCore
import OATFiles

/// The kind of playlist a resource is.
public enum PlaylistKind: String, Sendable, Equatable, CaseIterable {
    /// SHOUTcast/Winamp PLS (`[playlist]`, `File1=`).
    case pls
    /// M3U or extended M3U (`#EXTM3U`, one URL per line).
    case m3u
    /// An HLS playlist (extended M3U with `#EXT-X-` tags).
    case hls
}

/// What a stream's bytes are.
public enum StreamContentKind: Sendable, Equatable, CustomStringConvertible {
    /// Audio in this container (a type hint for ``OATFiles/AudioFileStream``).
    case audio(AudioFileType)
    /// A playlist of this kind, for the playlist parser.
    case playlist(PlaylistKind)

    /// `audio MPEG Layer 3`, `playlist pls`.
    public var description: String {
        switch self {
        case .audio(let t): "audio \(t.displayName)"
        case .playlist(let p): "playlist \(p.rawValue)"
        }
    }
}

/// The result of ``StreamFormatDetector/detect(contentType:url:prefix:isComplete:)``.
public struct StreamFormatDetection: Sendable, Equatable {
    /// Where the decision came from, most trusted first.
    public enum Evidence: String, Sendable, Equatable {
        /// The content was sniffed.
        case content
        /// The `Content-Type` header.
        case contentType
        /// The URL's extension.
        case urlExtension
    }
    /// The decided kind, nil when the format is unknown (see ``note``).
    public var kind: StreamContentKind?
    /// Which evidence decided.
    public var evidence: Evidence?
    /// What the `Content-Type` claimed (nil: no claim, or a generic type).
    public var declared: StreamContentKind?
    /// What the URL extension suggested.
    public var fromExtension: StreamContentKind?
    /// What the content sniffing found.
    public var sniffed: StreamContentKind?
    /// A human-readable note on mismatches or why the format is unknown (nil when all agree).
    public var note: String?

    /// The container type to hand to `AudioFileStream(fileTypeHint:)`, for audio.
    public var fileTypeHint: AudioFileType? {
        if case .audio(let t) = kind { return t }
        return nil
    }
    /// The playlist kind, when the resource is a playlist.
    public var playlist: PlaylistKind? {
        if case .playlist(let p) = kind { return p }
        return nil
    }
}

/// Decides what a stream is from its `Content-Type`, its URL extension and its first bytes, in
/// that order of trust, with the content overruling both when it is recognisable (a server that
/// says `audio/mpeg` and sends AAC ADTS is detected as ADTS, with a note). Recognises PLS, M3U and
/// HLS playlists by type, extension or content (`[playlist]`, `#EXTM3U`, `#EXT-X-`).
public enum StreamFormatDetector {
    /// How many leading bytes ``detect(contentType:url:prefix:isComplete:)`` wants (less is
    /// fine at the end of a short resource).
    public static let sniffLength = 64 * 1024

    /// The kind a MIME type names (lower-cased, parameters ignored); nil for generic types such as
    /// `application/octet-stream`.
    public static func kind(forContentType contentType: String) -> StreamContentKind? {
        let t = (contentType.split(separator: ";").first.map(String.init) ?? "").trimmingBlanks().lowercased()
        switch t {
        case "audio/mpeg", "audio/mp3", "audio/mpeg3", "audio/x-mpeg", "audio/x-mp3", "audio/mpg", "audio/x-mpeg-3": return .audio(.mp3)
        case "audio/aac", "audio/aacp", "audio/x-aac", "audio/aac-adts", "audio/x-hx-aac-adts", "audio/vnd.dlna.adts": return .audio(.aacADTS)
        case "audio/mp4", "audio/x-m4a", "audio/m4a", "video/mp4", "audio/mp4a-latm": return .audio(.m4a)
        case "audio/ogg", "application/ogg", "audio/opus", "audio/vorbis", "audio/x-ogg", "audio/x-vorbis+ogg", "audio/x-opus+ogg": return .audio(.ogg)
        case "audio/flac", "audio/x-flac": return .audio(.flac)
        case "audio/wav", "audio/x-wav", "audio/wave", "audio/vnd.wave": return .audio(.wave)
        case "audio/aiff", "audio/x-aiff": return .audio(.aiff)
        case "audio/x-caf": return .audio(.caf)
        case "audio/basic", "audio/au": return .audio(.next)
        case "audio/x-scpls", "application/pls+xml", "audio/scpls": return .playlist(.pls)
        case "audio/x-mpegurl", "audio/mpegurl": return .playlist(.m3u)
        case "application/vnd.apple.mpegurl", "application/x-mpegurl", "application/vnd.apple.mpegurl.audio": return .playlist(.hls)
        default: return nil
        }
    }

    /// The kind a URL's extension suggests (query and fragment ignored).
    public static func kind(forURL url: String) -> StreamContentKind? {
        var path = Substring(url)
        if let q = path.firstIndex(where: { $0 == "?" || $0 == "#" }) { path = path[..<q] }
        guard let slash = path.lastIndex(of: "/") ?? path.indices.first else { return nil }
        let name = path[slash...]
        guard let dot = name.lastIndex(of: ".") else { return nil }
        switch name[name.index(after: dot)...].lowercased() {
        case "mp3": return .audio(.mp3)
        case "mp2": return .audio(.mp2)
        case "mp1": return .audio(.mp1)
        case "aac", "adts": return .audio(.aacADTS)
        case "m4a", "mp4", "m4b", "m4r": return .audio(.m4a)
        case "ogg", "oga", "opus", "spx": return .audio(.ogg)
        case "flac": return .audio(.flac)
        case "wav", "wave", "rf64": return .audio(.wave)
        case "aif", "aiff", "aifc": return .audio(.aiff)
        case "caf": return .audio(.caf)
        case "au", "snd": return .audio(.next)
        case "pls": return .playlist(.pls)
        case "m3u": return .playlist(.m3u)
        case "m3u8": return .playlist(.hls)
        default: return nil
        }
    }

    /// What the bytes are: a playlist by its text, else audio by ``OATFiles/AudioFileStream``'s
    /// probing; nil when neither recognises them.
    public static func sniff(_ prefix: [UInt8], isComplete: Bool = false) -> StreamContentKind? {
        if let p = sniffPlaylist(prefix) { return .playlist(p) }
        let stream = AudioFileStream()
        do {
            _ = try stream.parse(Array(prefix.prefix(sniffLength)))
            if isComplete { _ = try stream.finish() }
        } catch {
            return stream.fileFormat.map { .audio($0) }
        }
        return stream.fileFormat.map { .audio($0) }
    }

    static func sniffPlaylist(_ bytes: [UInt8]) -> PlaylistKind? {
        var b = bytes.prefix(4096)
        if b.starts(with: [0xEF, 0xBB, 0xBF]) { b = b.dropFirst(3) }
        while let f = b.first, f == 0x20 || f == 0x09 || f == 0x0A || f == 0x0D { b = b.dropFirst() }
        let head = String(decoding: b.prefix(16), as: UTF8.self).lowercased()
        if head.hasPrefix("[playlist]") { return .pls }
        if head.hasPrefix("#extm3u") {
            let text = String(decoding: b, as: UTF8.self)
            return text.contains("#EXT-X-") ? .hls : .m3u
        }
        // A plain M3U: printable text whose first line is a URL.
        if !b.isEmpty, b.allSatisfy({ $0 >= 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            let firstLine = String(decoding: b.prefix { $0 != 0x0A && $0 != 0x0D }, as: UTF8.self).lowercased()
            for scheme in ["http://", "https://", "icy://"] where firstLine.hasPrefix(scheme) && !firstLine.contains(" ") { return .m3u }
        }
        return nil
    }

    /// Decides from all three kinds of evidence. `prefix` is the resource's first bytes (ideally
    /// ``sniffLength``); `isComplete` tells that `prefix` is the whole resource.
    public static func detect(contentType: String?, url: String, prefix: [UInt8], isComplete: Bool = false) -> StreamFormatDetection {
        let declared = contentType.flatMap { kind(forContentType: $0) }
        let ext = kind(forURL: url)
        let sniffed = sniff(prefix, isComplete: isComplete)
        var d = StreamFormatDetection(kind: nil, evidence: nil, declared: declared, fromExtension: ext, sniffed: sniffed, note: nil)
        if let sniffed {
            d.kind = sniffed
            d.evidence = .content
            if let declared, !compatible(declared, sniffed) {
                d.note = "Content-Type \(contentType ?? "") says \(declared) but the content is \(sniffed); using the content"
            } else if declared == nil, let ext, !compatible(ext, sniffed) {
                d.note = "the URL extension suggests \(ext) but the content is \(sniffed); using the content"
            }
            return d
        }
        // Nothing recognisable in the bytes.
        let what = describe(prefix)
        if prefix.isEmpty && !isComplete, let guess = declared ?? ext {
            d.kind = guess
            d.evidence = declared != nil ? .contentType : .urlExtension
            d.note = "no content to sniff yet; trusting the \(declared != nil ? "Content-Type" : "URL extension")"
            return d
        }
        var claims: [String] = []
        if let declared { claims.append("Content-Type says \(declared)") }
        if let ext { claims.append("extension says \(ext)") }
        d.note = "unknown format: the first \(prefix.count) bytes are \(what)" + (claims.isEmpty ? "" : " (\(claims.joined(separator: ", ")))")
        return d
    }

    /// Same family (MPEG layers, MP4 brands, WAVE variants, M3U and HLS).
    static func compatible(_ a: StreamContentKind, _ b: StreamContentKind) -> Bool {
        func family(_ k: StreamContentKind) -> String {
            switch k {
            case .playlist(let p): return p == .pls ? "pls" : "m3u"
            case .audio(let t):
                switch t {
                case .mp1, .mp2, .mp3: return "mpeg"
                case .m4a, .mpeg4: return "mp4"
                case .wave, .rf64, .bw64: return "wave"
                case .aiff, .aifc: return "aiff"
                default: return t.description
                }
            }
        }
        return family(a) == family(b)
    }

    static func describe(_ b: [UInt8]) -> String {
        if b.isEmpty { return "empty" }
        let head = String(decoding: b.prefix(256), as: UTF8.self).lowercased()
        if head.contains("<html") || head.contains("<!doctype") { return "an HTML page" }
        if b.prefix(512).allSatisfy({ $0 >= 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return "text" }
        let hex = b.prefix(8).map { h in
            let s = String(h, radix: 16)
            return s.count == 1 ? "0" + s : s
        }.joined(separator: " ")
        return "not a known container (starting \(hex))"
    }
}
