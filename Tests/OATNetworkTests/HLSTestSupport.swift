import OATConversion
import OATCore
import OATFiles
import OATNetwork
import OATTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Test helpers for playlists, MPEG-TS and HLS.
enum HLSFixtures {
    /// An ID3v2.4 tag with a UTF-8 TIT2 frame (and optionally a packed-audio PRIV time stamp).
    static func id3(title: String?, timestamp: Int64? = nil) -> [UInt8] {
        var frames: [UInt8] = []
        func frame(_ id: String, _ body: [UInt8]) {
            frames += Array(id.utf8)
            let n = body.count
            frames += [UInt8(n >> 21 & 0x7F), UInt8(n >> 14 & 0x7F), UInt8(n >> 7 & 0x7F), UInt8(n & 0x7F), 0, 0]
            frames += body
        }
        if let title { frame("TIT2", [3] + Array(title.utf8)) }
        if let timestamp {
            var body = Array("com.apple.streaming.transportStreamTimestamp".utf8) + [0]
            for s in stride(from: 56, through: 0, by: -8) { body.append(UInt8(truncatingIfNeeded: timestamp >> Int64(s))) }
            frame("PRIV", body)
        }
        let n = frames.count
        return Array("ID3".utf8) + [4, 0, 0, UInt8(n >> 21 & 0x7F), UInt8(n >> 14 & 0x7F), UInt8(n >> 7 & 0x7F), UInt8(n & 0x7F)] + frames
    }

    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for b in bytes {
            crc ^= UInt32(b) << 24
            for _ in 0..<8 { crc = crc & 0x8000_0000 != 0 ? (crc << 1) ^ 0x04C1_1DB7 : crc << 1 }
        }
        return crc
    }

    /// A transport stream holding only a timed-ID3 program (stream type 0x15 with an ID3 metadata
    /// descriptor): one TIT2 tag per (seconds, title), PTS = 1.4 s + seconds. ffmpeg reads it as a
    /// `timed_id3` data stream and muxes it next to audio, which is how the tests get ffmpeg-made TS
    /// and HLS with an ID3 stream.
    static func id3OnlyTransportStream(_ titles: [(Double, String)]) -> [UInt8] {
        var cc: [Int: UInt8] = [:]
        func packets(_ pid: Int, _ payload: [UInt8]) -> [UInt8] {
            var out: [UInt8] = []
            var rest = payload[...]
            var first = true
            while first || !rest.isEmpty {
                let chunk = Array(rest.prefix(184))
                rest = rest.dropFirst(chunk.count)
                let c = cc[pid, default: 0]
                cc[pid] = (c + 1) & 0x0F
                var p: [UInt8] = [0x47, (first ? 0x40 : 0) | UInt8(pid >> 8), UInt8(pid & 0xFF)]
                if chunk.count < 184 {
                    let pad = 184 - chunk.count
                    p.append(0x30 | c)
                    p += pad == 1 ? [0] : [UInt8(pad - 1), 0] + [UInt8](repeating: 0xFF, count: pad - 2)
                } else {
                    p.append(0x10 | c)
                }
                out += p + chunk
                first = false
            }
            return out
        }
        func section(_ body: [UInt8]) -> [UInt8] {
            let c = crc32(body)
            return body + [UInt8(c >> 24), UInt8(c >> 16 & 0xFF), UInt8(c >> 8 & 0xFF), UInt8(c & 0xFF)]
        }
        let pat = section([0, 0xB0, 13, 0, 1, 0xC1, 0, 0, 0, 1, 0xF0, 0])
        let descriptor: [UInt8] = [0x26, 13, 0xFF, 0xFF] + Array("ID3 ".utf8) + [0xFF] + Array("ID3 ".utf8) + [0, 0x0F]
        var pmtBody: [UInt8] = [2, 0, 0, 0, 1, 0xC1, 0, 0, 0xE1, 0x02, 0xF0, 0, 0x15, 0xE1, 0x02, 0xF0, UInt8(descriptor.count)] + descriptor
        let length = pmtBody.count - 3 + 4
        pmtBody[1] = 0xB0 | UInt8(length >> 8)
        pmtBody[2] = UInt8(length & 0xFF)
        let pmt = section(pmtBody)
        var out: [UInt8] = []
        for (seconds, title) in titles {
            out += packets(0, [0] + pat)
            out += packets(0x1000, [0] + pmt)
            // ffmpeg's demuxer drops a 5-byte metadata access-unit header (ISO 13818-1 2.12.4)
            // from stream type 0x15 payloads, so the input carries one; its output has bare ID3.
            let bare = id3(title: title)
            let tag: [UInt8] = [0, 0, 0xDF, UInt8(bare.count >> 8), UInt8(bare.count & 0xFF)] + bare
            let pts = Int64(seconds * 90_000) + 126_000
            let ptsBytes: [UInt8] = [UInt8(0x21 | (pts >> 29 & 0x0E)), UInt8(pts >> 22 & 0xFF), UInt8(0x01 | (pts >> 14 & 0xFE)),
                                     UInt8(pts >> 7 & 0xFF), UInt8(0x01 | (pts << 1 & 0xFE))]
            let pesLength = tag.count + 8
            let pes: [UInt8] = [0, 0, 1, 0xBD, UInt8(pesLength >> 8), UInt8(pesLength & 0xFF), 0x84, 0x80, 5] + ptsBytes + tag
            out += packets(0x102, pes)
        }
        return out
    }

    /// Encodes the project's fixture signal (`seconds` long, 44.1 kHz stereo) to WAV at `path`.
    static func source(_ path: String, seconds: Double) -> Bool {
        makeFixture(path, rate: 44_100, channels: 2, seconds: seconds, codec: ["-c:a", "pcm_s16le"])
    }
}

/// Reads a byte source to its end: the audio bytes and the events with the byte count before them.
struct DrainedSource {
    var bytes: [UInt8] = []
    var metadata: [StreamMetadata] = []
    var discontinuities: [Int64] = []

    init(_ source: any ByteSource, limit: Int = 64 << 20) throws {
        var buffer = [UInt8](repeating: 0, count: 7_000)
        loop: while bytes.count < limit {
            let r = try buffer.withUnsafeMutableBytes { try source.read(into: $0) }
            switch r {
            case .bytes(let n): bytes += buffer[0..<n]
            case .metadata(let m): metadata.append(m)
            case .reconnected(_, let continuous): if !continuous { discontinuities.append(Int64(bytes.count)) }
            case .end: break loop
            }
        }
    }
}

/// Decodes an elementary stream (ADTS, MP3, fMP4) with AudioFileStream + AudioConverter to
/// interleaved Float32. `discontinuities` are byte offsets where a new parser starts.
func decodeElementary(_ bytes: [UInt8], hint: AudioFileType?, discontinuities: [Int64] = []) throws -> (samples: [Float], channels: Int, rate: Double) {
    var cuts = [0] + discontinuities.map { Int($0) } + [bytes.count]
    cuts = Array(Set(cuts)).sorted()
    var all: [Float] = []
    var channels = 0
    var rate = 0.0
    for (a, b) in zip(cuts, cuts.dropFirst()) where b > a {
        let stream = AudioFileStream(fileTypeHint: hint)
        var batches: [AudioPacketBatch] = []
        let handler: (AudioFileStreamEvent) -> Void = { if case .packets(let p) = $0 { batches.append(p) } }
        try stream.parse(Array(bytes[a..<b]), handler)
        try stream.finish(handler)
        guard let format = stream.dataFormat else { continue }
        channels = Int(format.channelsPerFrame)
        rate = format.sampleRate
        let out = AudioStreamBasicDescription.linearPCM(sampleRate: format.sampleRate, channels: format.channelsPerFrame, bitsPerChannel: 32, isFloat: true)
        let converter = try AudioConverter(from: format, to: out, magicCookie: stream.magicCookie)
        let buffer = try AudioPCMBuffer(format: out, frameCapacity: 8192)
        var next = 0
        while true {
            let n = try converter.fillComplexBuffer(buffer) { (_: Int) throws(AudioError) -> AudioPacketBatch? in
                guard next < batches.count else { return nil }
                next += 1
                return batches[next - 1]
            }
            if n == 0 { break }
            all.append(contentsOf: buffer.floatChannel(0)![0..<(n * channels)])
        }
    }
    return (all, channels, rate)
}

/// The best SNR of `test` against `reference` over lags in `-maxLag...maxLag` frames (the codecs'
/// priming shifts the start), over `frames` frames from `from`: the lag is found on a 512-frame
/// window, the SNR measured over the whole span.
func alignedSNR(reference: [Float], test: [Float], channels: Int, maxLag: Int = 4096, from: Int = 8192, frames: Int = 44_100) -> (snr: Double, lag: Int) {
    let ch = max(1, channels)
    func snrAt(_ lag: Int, _ count: Int) -> Double? {
        let rStart = from * ch, tStart = (from + lag) * ch
        guard tStart >= 0, rStart + count * ch <= reference.count, tStart + count * ch <= test.count else { return nil }
        var signal = 0.0, noise = 0.0
        for i in 0..<(count * ch) {
            let r = Double(reference[rStart + i]); let d = r - Double(test[tStart + i])
            signal += r * r; noise += d * d
        }
        return noise == 0 ? .infinity : 10 * log10(signal / max(noise, 1e-30))
    }
    var best = (-Double.infinity, 0)
    for lag in -maxLag...maxLag {
        if let s = snrAt(lag, 512), s > best.0 { best = (s, lag) }
    }
    return (snrAt(best.1, frames) ?? -.infinity, best.1)
}
