import OATConversion
import OATFiles
#if canImport(Glibc)
import Glibc
#endif

/// Decodes a whole file with OpenAudioToolbox to interleaved Float32 at its own rate and channel
/// count, trimming priming and remainder frames as the file states them.
public func decodeWithToolbox(_ path: String, trim: Bool = true) throws -> (samples: [Float], channels: Int, rate: Double) {
    let file = try AudioFile(path: path)
    let channels = file.dataFormat.channelsPerFrame
    let out = AudioStreamBasicDescription.linearPCM(sampleRate: file.dataFormat.sampleRate, channels: channels, bitsPerChannel: 32, isFloat: true)
    let converter = try AudioConverter(from: file.dataFormat, to: out, magicCookie: file.magicCookie)
    if trim, let info = file.packetTableInfo {
        converter.primeInfo = AudioConverterPrimeInfo(leadingFrames: UInt32(max(0, info.primingFrames)), trailingFrames: UInt32(max(0, info.remainderFrames)))
        converter.validFrameCount = info.numberValidFrames
    }
    let buffer = try AudioPCMBuffer(format: out, frameCapacity: 8192)
    var samples: [Float] = []
    var next: Int64 = 0
    while true {
        let n = try converter.fillComplexBuffer(buffer) { (wanted: Int) throws(AudioError) -> AudioPacketBatch? in
            guard next < file.packetCount else { return nil }
            let batch = try file.readPackets(next..<(next + Int64(max(wanted, 16))))
            next += Int64(batch.packetCount)
            return batch
        }
        if n == 0 { break }
        samples.append(contentsOf: buffer.floatChannel(0)![0..<(n * Int(channels))])
    }
    return (samples, Int(channels), file.dataFormat.sampleRate)
}

/// Decodes a file with the `ffmpeg` command to interleaved Float32 (ffmpeg's own trimming), or
/// nil when ffmpeg is missing or fails.
public func decodeWithFFmpeg(_ path: String) -> [Float]? {
    let out = "/tmp/oat-ffmpeg-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).f32"
    defer { unlink(out) }
    let command = "ffmpeg -v error -nostdin -y -i '\(path.replacingQuote())' -map 0:a:0 -f f32le -c:a pcm_f32le '\(out)' 2>/dev/null"
    guard system(command) == 0, let bytes = Corpus.read(out) else { return nil }
    return bytes.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
}

extension String {
    fileprivate func replacingQuote() -> String {
        var s = ""
        for c in self { if c == "'" { s += "'\\''" } else { s.append(c) } }
        return s
    }
}

/// Signal-to-noise ratio in dB of `test` against `reference` (same length taken), or +inf when
/// they are identical.
public func snr(_ reference: [Float], _ test: [Float]) -> Double {
    let n = min(reference.count, test.count)
    var signal = 0.0, noise = 0.0
    for i in 0..<n {
        let r = Double(reference[i])
        let d = r - Double(test[i])
        signal += r * r
        noise += d * d
    }
    if noise == 0 { return .infinity }
    return 10 * log10(signal / noise)
}
