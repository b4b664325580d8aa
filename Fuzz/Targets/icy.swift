// libFuzzer entry for the 'icy' family: the ICY metadata demuxer and the HTTP response-head
// parsing of OATNetwork (Sources/OATNetwork/ICYDemuxer.swift, HTTPHead.swift), compiled
// into this module by Fuzz/build.sh. It does not use FuzzHarness.run (no AudioFileStream here).
//
// For one input: byte 0 and 1 pick a small metadata interval (so blocks occur often); the rest
// is demuxed whole and again split at hash-derived points, and the two runs must agree (audio
// bytes, metadata, counters). The same bytes are then parsed as response-head lines,
// Content-Range values and metadata text in every charset.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    ICYFuzz.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

enum ICYFuzz {
    struct Output: Equatable {
        var audio: [UInt8] = []
        var metadata: [StreamMetadata] = []
        var blocks = 0
        var invalid = 0
    }

    static func demux(_ body: UnsafeRawBufferPointer, metaint: Int, charset: ICYCharset, split: inout FuzzRandom?) -> Output? {
        guard var d = try? ICYDemuxer(metaInterval: metaint, charset: charset) else { return nil }
        var out = Output()
        var i = 0
        while i < body.count {
            let n = split.map { _ in min(body.count - i, split!.chunkSize()) } ?? body.count
            d.feed(UnsafeRawBufferPointer(rebasing: body[i..<(i + n)]), audio: { out.audio += $0 }, metadata: { out.metadata.append($0) })
            i += n
        }
        out.blocks = d.blockCount
        out.invalid = d.invalidBlockCount
        if d.audioOffset != Int64(out.audio.count) { fuzzFail("ICY audio offset \(d.audioOffset) != \(out.audio.count) bytes out") }
        return out
    }

    static func run(_ data: UnsafeRawBufferPointer) {
        guard data.count >= 2 else { return }
        let metaint = 1 + Int(data[0]) * 4 + Int(data[1] & 3)
        let charset = ICYCharset.allCases[Int(data[1] >> 2) % ICYCharset.allCases.count]
        let body = UnsafeRawBufferPointer(rebasing: data[2...])
        var none: FuzzRandom? = nil
        var split: FuzzRandom? = FuzzRandom(seed: fuzzHash(data))
        guard let whole = demux(body, metaint: metaint, charset: charset, split: &none),
              let pieces = demux(body, metaint: metaint, charset: charset, split: &split) else {
            fuzzFail("ICY demuxer refused interval \(metaint)")
        }
        if whole != pieces { fuzzFail("fuzz invariant: ICY demuxing depends on the split (interval \(metaint))") }
        if whole.audio.count > body.count { fuzzFail("ICY demuxer produced more audio than input") }
        for m in whole.metadata where m.audioByteOffset > Int64(whole.audio.count) {
            fuzzFail("ICY metadata offset \(m.audioByteOffset) beyond the audio (\(whole.audio.count))")
        }

        // The same bytes as metadata text and as response-head lines.
        let bytes = Array(body.prefix(255 * 16))
        for c in ICYCharset.allCases { _ = ICYDemuxer.parse(bytes, charset: c) }
        var head = HTTPResponseHead()
        var start = 0
        let all = Array(body)
        for (i, b) in all.enumerated() where b == 0x0A {
            all[start...i].withUnsafeBytes { _ = head.consume($0) }
            start = i + 1
        }
        if start < all.count { all[start...].withUnsafeBytes { _ = head.consume($0) } }
        if !(0...999).contains(head.status) { fuzzFail("status \(head.status) out of range") }
        for h in head.headers {
            if let r = parseContentRange(h.value) {
                if r.first < 0 || r.last < r.first { fuzzFail("bad Content-Range accepted: \(h.value)") }
                if let t = r.total, r.last >= t { fuzzFail("Content-Range past its total accepted: \(h.value)") }
            }
        }
        _ = parseContentRange(String(decoding: bytes, as: UTF8.self))
    }
}
