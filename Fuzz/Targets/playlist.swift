// libFuzzer entry for the 'playlist' family: PLS, M3U, extended M3U and HLS playlists.
// Compiled with OATCore and Sources/OATNetwork/Parsers (see Fuzz/lib.sh).
// For one input: parse it against a base URL picked from the first byte (remote, local, with a
// query), with small limits; check that a remote playlist never yields a local reference, that
// every entry is absolute, and run the variant choice. AudioError is an ordinary outcome.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = size > 0 && data != nil ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    let bases = ["http://radio.example.com/a/b/list.pls", "/home/user/music/list.m3u",
                 "https://cdn.example.com/live/index.m3u8?token=1#frag", "file:///tmp/x/master.m3u8"]
    let base = bases[Int(bytes.first ?? 0) % bases.count]
    var limits = PlaylistLimits()
    limits.maximumEntries = 2_000
    limits.maximumLineLength = 8_192
    _ = Playlist.isPlaylist(bytes: bytes, url: base, contentType: nil)
    let remote = PlaylistURL(base).isRemote
    func check(_ url: String, _ what: String) {
        let u = PlaylistURL(url)
        if remote && !u.isRemote { fatalError("fuzz invariant: remote playlist yielded local \(what) '\(url)'") }
        if u.scheme == nil && !u.path.hasPrefix("/") { fatalError("fuzz invariant: relative \(what) '\(url)'") }
    }
    do {
        let p = try Playlist.parse(bytes: bytes, url: base, contentType: nil, depth: Int(bytes.last ?? 0) % 6, limits: limits)
        for e in p.entries { check(e.url, "entry") }
        if let master = p.hls?.master {
            for v in master.variants { check(v.uri, "variant") }
            for r in master.audioRenditions { if let u = r.uri { check(u, "rendition") } }
            if let v = master.chooseVariant(maximumBandwidth: bytes.count * 100) { _ = master.audioRendition(for: v) }
            if master.chooseVariant(maximumBandwidth: nil) == nil { fatalError("fuzz invariant: variants but no choice") }
        }
        if let media = p.hls?.media {
            var seq = media.mediaSequence
            for s in media.segments {
                check(s.uri, "segment")
                if let m = s.map { check(m.uri, "map") }
                if s.sequence != seq { fatalError("fuzz invariant: sequence \(s.sequence) != \(seq)") }
                if let r = s.byteRange, r.offset < 0 || r.length <= 0 { fatalError("fuzz invariant: byte range \(r)") }
                seq += 1
            }
            _ = media.totalDuration
        }
    } catch {
        _ = error.description
    }
    return 0
}
