// libFuzzer entry for the 'mpegts' family: the MPEG-TS audio demuxer and the timed-ID3 reader.
// Compiled with OATCore and Sources/OATNetwork/Parsers (see Fuzz/lib.sh).
// For one input: demux it whole, then again in chunks whose sizes come from a hash of the input;
// the outputs must be equal (split invariance) and bounded by the input; every ID3 tag found,
// and the input itself, go through TimedID3.parse and every tag gets an audio offset.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let raw = UnsafeRawBufferPointer(start: size > 0 ? data : nil, count: size)
    var hash: UInt64 = 0xCBF2_9CE4_8422_2325
    for b in raw { hash = (hash ^ UInt64(b)) &* 0x100_0000_01B3 }
    func demux(split: Bool) -> (MPEGTSOutput, MPEGTSDemuxer) {
        let d = MPEGTSDemuxer()
        d.maximumID3Bytes = 4_096
        var out = MPEGTSOutput()
        var at = 0
        var state = hash
        while at < raw.count {
            var n = raw.count - at
            if split {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                let r = Int(state >> 33)
                switch r % 4 {
                case 0: n = 1
                case 1: n = 1 + r % 16
                case 2: n = 1 + r % 400
                default: n = 1 + r % 5_000
                }
                n = min(n, raw.count - at)
            }
            d.parse(UnsafeRawBufferPointer(rebasing: raw[at..<(at + n)]), into: &out)
            at += n
        }
        d.finish(into: &out)
        return (out, d)
    }
    let (whole, d) = demux(split: false)
    let (split, _) = demux(split: true)
    if whole != split { fatalError("fuzz invariant: split run differs (\(whole.audio.count) vs \(split.audio.count) audio bytes)") }
    if whole.audio.count > raw.count { fatalError("fuzz invariant: more audio than input") }
    if d.inputOffset != Int64(raw.count) { fatalError("fuzz invariant: consumed \(d.inputOffset) of \(raw.count)") }
    for tag in whole.id3 {
        if tag.bytes.count > 4_096 { fatalError("fuzz invariant: ID3 tag over the limit") }
        _ = tag.bytes.withUnsafeBytes { TimedID3.parse($0) }
        for codec in [d.audioCodec, .aacADTS, .mpegAudio] {
            let o = codec == nil ? whole.audioOffset(for: tag) : whole.audioOffset(for: tag, codec: codec)
            if o < 0 || o > Int64(whole.audio.count) { fatalError("fuzz invariant: tag offset \(o) outside the audio") }
        }
    }
    _ = TimedID3.parse(raw)
    return 0
}
