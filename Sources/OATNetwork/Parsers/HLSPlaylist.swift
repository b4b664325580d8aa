import OATCore

/// An HLS playlist (RFC 8216): either a master (multivariant) playlist or a media playlist.
public struct HLSPlaylist: Sendable, Equatable {
    /// Set for a master playlist.
    public var master: HLSMasterPlaylist?
    /// Set for a media playlist.
    public var media: HLSMediaPlaylist?

    static let component = "HLS playlist"

    /// Parses HLS playlist bytes (see ``Playlist/parse(bytes:url:contentType:depth:limits:)``,
    /// which calls this for `#EXT-X-` content).
    public static func parse(bytes: [UInt8], url: String, limits: PlaylistLimits = PlaylistLimits()) throws(AudioError) -> HLSPlaylist {
        let playlist = try Playlist.parse(bytes: bytes, url: url, limits: limits)
        guard let hls = playlist.hls else {
            throw AudioError(.invalidData, component: component, "\(url) is a \(playlist.format.rawValue) playlist, not HLS")
        }
        return hls
    }

    static func parse(lines: [Substring], base: PlaylistURL, limits: PlaylistLimits) throws(AudioError) -> HLSPlaylist {
        guard lines.first(where: { !$0.isEmpty })?.hasPrefix("#EXTM3U") ?? false else {
            throw AudioError(.invalidData, component: component, "line 1: an HLS playlist must start with #EXTM3U")
        }
        if lines.contains(where: { $0.hasPrefix("#EXT-X-STREAM-INF") }) {
            return HLSPlaylist(master: try parseMaster(lines, base: base, limits: limits), media: nil)
        }
        return HLSPlaylist(master: nil, media: try parseMedia(lines, base: base, limits: limits))
    }

    /// Splits an attribute list `A=1,B="x,y",C=0x10` into a dictionary (names upper-cased as written).
    static func attributes(_ text: Substring, line: Int) throws(AudioError) -> [String: String] {
        var out: [String: String] = [:]
        var i = text.startIndex
        while i < text.endIndex {
            while i < text.endIndex, text[i] == " " || text[i] == "," { i = text.index(after: i) }
            guard i < text.endIndex else { break }
            guard let eq = text[i...].firstIndex(of: "=") else {
                throw AudioError(.invalidData, component: component, "line \(line): attribute without '=' in '\(text.prefix(80))'")
            }
            let name = String(PlaylistText.trim(text[i..<eq]))
            var j = text.index(after: eq)
            let value: Substring
            if j < text.endIndex, text[j] == "\"" {
                let start = text.index(after: j)
                guard let close = text[start...].firstIndex(of: "\"") else {
                    throw AudioError(.invalidData, component: component, "line \(line): unterminated quoted value for \(name)")
                }
                value = text[start..<close]
                j = text.index(after: close)
            } else {
                let end = text[j...].firstIndex(of: ",") ?? text.endIndex
                value = PlaylistText.trim(text[j..<end])
                j = end
            }
            out[name] = String(value)
            i = j
        }
        return out
    }

    static func tagValue(_ line: Substring, _ tag: String) -> Substring? {
        guard line.hasPrefix(tag) else { return nil }
        let rest = line.dropFirst(tag.count)
        if rest.isEmpty { return rest }
        guard rest.first == ":" else { return nil }
        return rest.dropFirst()
    }

    static func parseMaster(_ lines: [Substring], base: PlaylistURL, limits: PlaylistLimits) throws(AudioError) -> HLSMasterPlaylist {
        var master = HLSMasterPlaylist()
        var pending: (attrs: [String: String], line: Int)?
        for (i, line) in lines.enumerated() {
            let n = i + 1
            if line.isEmpty { continue }
            if let v = tagValue(line, "#EXT-X-STREAM-INF") {
                pending = (try attributes(v, line: n), n)
            } else if let v = tagValue(line, "#EXT-X-MEDIA") {
                let a = try attributes(v, line: n)
                guard let type = a["TYPE"], let group = a["GROUP-ID"], let name = a["NAME"] else {
                    throw AudioError(.invalidData, component: component, "line \(n): #EXT-X-MEDIA needs TYPE, GROUP-ID and NAME")
                }
                guard type == "AUDIO" else { continue }
                let uri: String? = if let u = a["URI"] { try Playlist.resolve(Substring(u), base: base, line: n, kind: "HLS") } else { nil }
                master.audioRenditions.append(HLSRendition(groupID: group, name: name, language: a["LANGUAGE"], uri: uri,
                                                           isDefault: a["DEFAULT"] == "YES", autoselect: a["AUTOSELECT"] == "YES",
                                                           channels: a["CHANNELS"], line: n))
                guard master.audioRenditions.count <= limits.maximumEntries else {
                    throw AudioError(.limitExceeded, component: component, "line \(n): more than \(limits.maximumEntries) renditions")
                }
            } else if line.hasPrefix("#") {
                continue
            } else if let p = pending {
                guard let bw = p.attrs["BANDWIDTH"].flatMap({ Int($0) }), bw >= 0 else {
                    throw AudioError(.invalidData, component: component, "line \(p.line): #EXT-X-STREAM-INF without a valid BANDWIDTH")
                }
                let codecs = (p.attrs["CODECS"] ?? "").split(separator: ",").map { String(PlaylistText.trim($0)) }.filter { !$0.isEmpty }
                master.variants.append(HLSVariant(uri: try Playlist.resolve(line, base: base, line: n, kind: "HLS"), bandwidth: bw,
                                                  averageBandwidth: p.attrs["AVERAGE-BANDWIDTH"].flatMap { Int($0) },
                                                  codecs: codecs, audioGroup: p.attrs["AUDIO"], resolution: p.attrs["RESOLUTION"], line: n))
                guard master.variants.count <= limits.maximumEntries else {
                    throw AudioError(.limitExceeded, component: component, "line \(n): more than \(limits.maximumEntries) variants")
                }
                pending = nil
            } else {
                throw AudioError(.invalidData, component: component, "line \(n): URI '\(line.prefix(60))' without #EXT-X-STREAM-INF")
            }
        }
        guard !master.variants.isEmpty else {
            throw AudioError(.invalidData, component: component, "master playlist has no variants")
        }
        return master
    }

    static func parseMedia(_ lines: [Substring], base: PlaylistURL, limits: PlaylistLimits) throws(AudioError) -> HLSMediaPlaylist {
        var media = HLSMediaPlaylist()
        var sawTarget = false
        var duration: Double?
        var title: String?
        var discontinuity = false
        var byteRange: HLSByteRange?
        var dateTime: String?
        var key = HLSKey(method: .none, uri: nil, iv: nil)
        var map: HLSMap?
        var sequence: Int64 = 0
        var lastRangeEnd: [String: Int64] = [:]
        for (i, line) in lines.enumerated() {
            let n = i + 1
            if line.isEmpty { continue }
            if let v = tagValue(line, "#EXT-X-TARGETDURATION") {
                guard let d = Int(v), d >= 0, d <= 86_400 else {
                    throw AudioError(.invalidData, component: component, "line \(n): bad #EXT-X-TARGETDURATION '\(v.prefix(20))'")
                }
                media.targetDuration = d
                sawTarget = true
            } else if let v = tagValue(line, "#EXT-X-MEDIA-SEQUENCE") {
                guard let s = Int64(v), s >= 0 else {
                    throw AudioError(.invalidData, component: component, "line \(n): bad #EXT-X-MEDIA-SEQUENCE '\(v.prefix(20))'")
                }
                guard media.segments.isEmpty else {
                    throw AudioError(.invalidData, component: component, "line \(n): #EXT-X-MEDIA-SEQUENCE after the first segment")
                }
                media.mediaSequence = s
                sequence = s
            } else if let v = tagValue(line, "#EXT-X-DISCONTINUITY-SEQUENCE") {
                media.discontinuitySequence = Int64(v) ?? 0
            } else if let v = tagValue(line, "#EXT-X-VERSION") {
                media.version = Int(v) ?? 1
            } else if let v = tagValue(line, "#EXT-X-PLAYLIST-TYPE") {
                switch v {
                case "VOD": media.playlistType = .vod
                case "EVENT": media.playlistType = .event
                default: throw AudioError(.invalidData, component: component, "line \(n): unknown #EXT-X-PLAYLIST-TYPE '\(v.prefix(20))'")
                }
            } else if tagValue(line, "#EXT-X-ENDLIST") != nil {
                media.hasEndList = true
            } else if tagValue(line, "#EXT-X-DISCONTINUITY") != nil {
                discontinuity = true
            } else if let v = tagValue(line, "#EXT-X-PROGRAM-DATE-TIME") {
                dateTime = String(v)
            } else if let v = tagValue(line, "#EXT-X-BYTERANGE") {
                let parts = v.split(separator: "@", maxSplits: 1)
                guard let len = parts.first.flatMap({ Int64($0) }), len > 0 else {
                    throw AudioError(.invalidData, component: component, "line \(n): bad #EXT-X-BYTERANGE '\(v.prefix(30))'")
                }
                var off: Int64? = nil
                if parts.count == 2 {
                    guard let o = Int64(parts[1]), o >= 0 else {
                        throw AudioError(.invalidData, component: component, "line \(n): bad #EXT-X-BYTERANGE offset '\(v.prefix(30))'")
                    }
                    off = o
                }
                byteRange = HLSByteRange(length: len, offset: off ?? -1)
            } else if let v = tagValue(line, "#EXT-X-KEY") {
                let a = try attributes(v, line: n)
                switch a["METHOD"] {
                case "NONE": key = HLSKey(method: .none, uri: nil, iv: nil)
                case "AES-128": key = HLSKey(method: .aes128, uri: a["URI"], iv: a["IV"])
                case "SAMPLE-AES", "SAMPLE-AES-CTR": key = HLSKey(method: .sampleAES, uri: a["URI"], iv: a["IV"])
                default: throw AudioError(.invalidData, component: component, "line \(n): #EXT-X-KEY with unknown METHOD '\(a["METHOD"] ?? "")'")
                }
            } else if let v = tagValue(line, "#EXT-X-MAP") {
                let a = try attributes(v, line: n)
                guard let u = a["URI"] else {
                    throw AudioError(.invalidData, component: component, "line \(n): #EXT-X-MAP without URI")
                }
                var range: HLSByteRange?
                if let r = a["BYTERANGE"] {
                    let parts = r.split(separator: "@", maxSplits: 1)
                    guard let len = parts.first.flatMap({ Int64($0) }), len > 0 else {
                        throw AudioError(.invalidData, component: component, "line \(n): bad #EXT-X-MAP BYTERANGE '\(r.prefix(30))'")
                    }
                    range = HLSByteRange(length: len, offset: parts.count == 2 ? max(0, Int64(parts[1]) ?? 0) : 0)
                }
                map = HLSMap(uri: try Playlist.resolve(Substring(u), base: base, line: n, kind: "HLS"), byteRange: range)
            } else if let v = tagValue(line, "#EXTINF") {
                let comma = v.firstIndex(of: ",")
                let d = PlaylistText.trim(comma.map { v[..<$0] } ?? v)
                guard let value = Double(d), value.isFinite, value >= 0 else {
                    throw AudioError(.invalidData, component: component, "line \(n): bad #EXTINF duration '\(d.prefix(30))'")
                }
                duration = value
                let t = comma.map { PlaylistText.trim(v[v.index(after: $0)...]) } ?? ""
                title = t.isEmpty ? nil : String(t)
            } else if line.hasPrefix("#") {
                continue
            } else {
                guard let d = duration else {
                    throw AudioError(.invalidData, component: component, "line \(n): segment URI '\(line.prefix(60))' without #EXTINF")
                }
                let uri = try Playlist.resolve(line, base: base, line: n, kind: "HLS")
                if var r = byteRange {
                    if r.offset < 0 {
                        guard let prev = lastRangeEnd[uri] else {
                            throw AudioError(.invalidData, component: component, "line \(n): #EXT-X-BYTERANGE without offset and no previous range of \(uri)")
                        }
                        r.offset = prev
                    }
                    lastRangeEnd[uri] = try InputArithmetic(component).add(r.offset, r.length, "line \(n): byte range end")
                    byteRange = r
                }
                media.segments.append(HLSSegment(uri: uri, duration: d, title: title, sequence: sequence,
                                                 discontinuity: discontinuity, byteRange: byteRange, key: key,
                                                 map: map, programDateTime: dateTime, line: n))
                guard media.segments.count <= limits.maximumEntries else {
                    throw AudioError(.limitExceeded, component: component, "line \(n): more than \(limits.maximumEntries) segments")
                }
                sequence = try InputArithmetic(component).add(sequence, 1, "line \(n): media sequence")
                duration = nil
                title = nil
                discontinuity = false
                byteRange = nil
                dateTime = nil
            }
        }
        guard sawTarget else {
            throw AudioError(.invalidData, component: component, "media playlist has no #EXT-X-TARGETDURATION")
        }
        return media
    }
}

/// A master playlist: variants and audio renditions.
public struct HLSMasterPlaylist: Sendable, Equatable {
    /// `#EXT-X-STREAM-INF` variants in playlist order.
    public var variants: [HLSVariant] = []
    /// `#EXT-X-MEDIA:TYPE=AUDIO` renditions.
    public var audioRenditions: [HLSRendition] = []
    /// Creates an empty master playlist.
    public init() {}

    /// Chooses a variant: among audio-only variants when there are any (no `avc1`/`hvc1`/... codec
    /// and no RESOLUTION), else among all, the highest BANDWIDTH not above `maximumBandwidth`, or the
    /// lowest when none fits. With no maximum, the highest.
    public func chooseVariant(maximumBandwidth: Int?) -> HLSVariant? {
        let audioOnly = variants.filter(\.isAudioOnly)
        let pool = audioOnly.isEmpty ? variants : audioOnly
        let sorted = pool.sorted { $0.bandwidth < $1.bandwidth }
        guard let limit = maximumBandwidth else { return sorted.last }
        return sorted.last(where: { $0.bandwidth <= limit }) ?? sorted.first
    }

    /// The audio rendition a variant's AUDIO group points at (DEFAULT=YES first, then the first
    /// with a URI), if the group exists and has a URI; nil when the variant carries its own audio.
    public func audioRendition(for variant: HLSVariant) -> HLSRendition? {
        guard let group = variant.audioGroup else { return nil }
        let members = audioRenditions.filter { $0.groupID == group && $0.uri != nil }
        return members.first(where: \.isDefault) ?? members.first
    }
}

/// One `#EXT-X-STREAM-INF` variant.
public struct HLSVariant: Sendable, Equatable {
    /// The media playlist URL.
    public var uri: String
    /// Peak bits per second.
    public var bandwidth: Int
    /// Average bits per second, if given.
    public var averageBandwidth: Int?
    /// RFC 6381 codec strings (`mp4a.40.2`, `mp4a.40.34`, `avc1.4d401e`).
    public var codecs: [String]
    /// The AUDIO group ID, if any.
    public var audioGroup: String?
    /// RESOLUTION, for video variants.
    public var resolution: String?
    /// The 1-based line of the URI.
    public var line: Int

    /// True when the variant carries no video (by CODECS and RESOLUTION).
    public var isAudioOnly: Bool {
        guard resolution == nil else { return false }
        let video = ["avc", "hvc", "hev", "vp0", "vp8", "vp9", "av01", "dvh", "mp4v"]
        return !codecs.contains { c in video.contains { c.lowercased().hasPrefix($0) } }
    }
}

/// One `#EXT-X-MEDIA:TYPE=AUDIO` rendition.
public struct HLSRendition: Sendable, Equatable {
    /// GROUP-ID.
    public var groupID: String
    /// NAME.
    public var name: String
    /// LANGUAGE.
    public var language: String?
    /// The media playlist URL; nil when the rendition is carried in the variant's own stream.
    public var uri: String?
    /// DEFAULT=YES.
    public var isDefault: Bool
    /// AUTOSELECT=YES.
    public var autoselect: Bool
    /// CHANNELS, e.g. "2".
    public var channels: String?
    /// The 1-based line.
    public var line: Int
}

/// A media playlist.
public struct HLSMediaPlaylist: Sendable, Equatable {
    /// `#EXT-X-TARGETDURATION` in seconds.
    public var targetDuration: Int = 0
    /// `#EXT-X-MEDIA-SEQUENCE`: the sequence number of the first segment.
    public var mediaSequence: Int64 = 0
    /// `#EXT-X-DISCONTINUITY-SEQUENCE`.
    public var discontinuitySequence: Int64 = 0
    /// `#EXT-X-VERSION`.
    public var version: Int = 1
    /// `#EXT-X-PLAYLIST-TYPE`.
    public var playlistType: PlaylistType?
    /// `#EXT-X-ENDLIST` seen: no more segments will be added.
    public var hasEndList = false
    /// The segments in order.
    public var segments: [HLSSegment] = []
    /// Creates an empty media playlist.
    public init() {}

    /// `#EXT-X-PLAYLIST-TYPE` values.
    public enum PlaylistType: String, Sendable, Equatable {
        /// The playlist never changes.
        case vod = "VOD"
        /// Segments are only appended.
        case event = "EVENT"
    }

    /// True when the presentation is live (no ENDLIST).
    public var isLive: Bool { !hasEndList }

    /// The sum of the segment durations.
    public var totalDuration: Double { segments.reduce(0) { $0 + $1.duration } }
}

/// A byte range of a resource.
public struct HLSByteRange: Sendable, Equatable {
    /// Bytes.
    public var length: Int64
    /// Start offset.
    public var offset: Int64
    /// Creates a range.
    public init(length: Int64, offset: Int64) {
        self.length = length
        self.offset = offset
    }
}

/// `#EXT-X-KEY`.
public struct HLSKey: Sendable, Equatable {
    /// Encryption methods.
    public enum Method: String, Sendable, Equatable {
        /// Not encrypted.
        case none = "NONE"
        /// Whole-segment AES-128-CBC (not supported yet: segments are refused with a clear error).
        case aes128 = "AES-128"
        /// SAMPLE-AES (not supported).
        case sampleAES = "SAMPLE-AES"
    }
    /// METHOD.
    public var method: Method
    /// The key URI.
    public var uri: String?
    /// The IV attribute text.
    public var iv: String?
}

/// `#EXT-X-MAP`: the fMP4 initialisation section.
public struct HLSMap: Sendable, Equatable {
    /// Its URL.
    public var uri: String
    /// Its byte range, if given.
    public var byteRange: HLSByteRange?
    /// Creates a map.
    public init(uri: String, byteRange: HLSByteRange? = nil) {
        self.uri = uri
        self.byteRange = byteRange
    }
}

/// One media segment.
public struct HLSSegment: Sendable, Equatable {
    /// Its absolute URL.
    public var uri: String
    /// `#EXTINF` duration in seconds.
    public var duration: Double
    /// `#EXTINF` title, if any.
    public var title: String?
    /// Its media sequence number.
    public var sequence: Int64
    /// `#EXT-X-DISCONTINUITY` precedes it.
    public var discontinuity: Bool
    /// `#EXT-X-BYTERANGE` (offset resolved).
    public var byteRange: HLSByteRange?
    /// The key in effect.
    public var key: HLSKey
    /// The `#EXT-X-MAP` in effect (fMP4), if any.
    public var map: HLSMap?
    /// `#EXT-X-PROGRAM-DATE-TIME` text, if given for this segment.
    public var programDateTime: String?
    /// The 1-based line of the URI.
    public var line: Int
}
