// Analysis helpers for the seed translations: this file uses the Swift API (OATTestSupport),
// the seed files use only the C API through `import OpenAudioToolbox`.
import OATTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Why the corpus tests cannot run, or nil (for `.requires(corpusMissing)` in files that use
/// only the C API).
let corpusMissing: String? = TestResource.corpusMissing

/// Resolves a corpus file, or fails naming what is missing (the tests that use it carry
/// `.requires(TestResource.corpusMissing)`, so without the corpus they are skipped, visibly).
func corpusFile(_ relative: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
    try TestResource.corpusFile(relative, sourceLocation: sourceLocation)
}

/// A fresh temporary WAV path.
func temporaryWAV(_ tag: String) -> String { "/tmp/oat-compat-\(tag)-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).wav" }

/// Removes a file.
func remove(_ path: String) { unlink(path) }

/// Reads the Float32 samples of a WAV written by the WAV output (finds the `data` chunk).
func readFloatWAV(_ path: String) -> (samples: [Float], channels: Int) {
    guard let bytes = Corpus.read(path), bytes.count >= 12 else { return ([], 0) }
    var at = 12
    var channels = 0
    func u32(_ i: Int) -> Int { Int(bytes[i]) | Int(bytes[i + 1]) << 8 | Int(bytes[i + 2]) << 16 | Int(bytes[i + 3]) << 24 }
    while at + 8 <= bytes.count {
        let id = String(decoding: bytes[at..<at + 4], as: UTF8.self)
        let size = u32(at + 4)
        if id == "fmt " { channels = Int(bytes[at + 10]) | Int(bytes[at + 11]) << 8 }
        if id == "data" {
            let end = min(bytes.count, at + 8 + size)
            let samples = bytes[(at + 8)..<end].withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
            return (samples, channels)
        }
        at += 8 + size + (size & 1)
    }
    return ([], channels)
}

/// What playing a file gave, compared with our own decode of it.
struct PlaybackComparison: CustomStringConvertible {
    var referenceFrames: Int
    var playedFrames: Int
    var lag: Int
    var snr: Double
    var description: String { "reference \(referenceFrames) frames, played \(playedFrames), lag \(lag), SNR \(snr.isInfinite ? "inf" : String(Int(snr))) dB" }
}

/// Decodes `path` with the Swift API (no trimming: queues play what they are given) and aligns
/// the recording against it (best lag within +-`search` frames over the first seconds).
func compare(recording: [Float], channels: Int, with path: String, search: Int = 4096) throws -> PlaybackComparison {
    let ref = try decodeWithToolbox(path, trim: false)
    let c = max(1, ref.channels)
    precondition(channels == c, "recorded \(channels) channels, file has \(c)")
    let refFrames = ref.samples.count / c, recFrames = recording.count / c
    // Align on channel 0: the lag (smallest first) with the least squared difference over 8192
    // frames from a third into the file.
    let from = refFrames / 3
    let window = min(8192, refFrames - from - search, recFrames - from - search)
    func error(_ lag: Int) -> Double {
        var e = 0.0
        var i = from
        while i < from + window {
            let j = i + lag
            let r = j >= 0 && j < recFrames ? Double(recording[j * c]) : 0
            let d = Double(ref.samples[i * c]) - r
            e += d * d
            i += 2
        }
        return e
    }
    var bestLag = 0
    if window > 256 {
        var best = error(0)
        for k in 1...search where best > 0 {
            for lag in [-k, k] {
                let e = error(lag)
                if e < best * 0.5 { best = e; bestLag = lag }
            }
        }
    }
    let start = max(0, -bestLag)
    let n = min(refFrames - start, recFrames - start - bestLag)
    let a = Array(ref.samples[(start * c)..<((start + n) * c)])
    let b = Array(recording[((start + bestLag) * c)..<((start + bestLag + n) * c)])
    return PlaybackComparison(referenceFrames: refFrames, playedFrames: recFrames, lag: bestLag, snr: snr(a, b))
}

/// Frames of `path` as the Swift API decodes it without trimming (what a converter emits).
func untrimmedFrameCount(_ path: String) throws -> Int {
    let ref = try decodeWithToolbox(path, trim: false)
    return ref.samples.count / max(1, ref.channels)
}

/// ffmpeg's interleaved Float32 decode of a file, or nil when ffmpeg is missing.
func ffmpegFloat(_ path: String) -> [Float]? { decodeWithFFmpeg(path) }

/// SNR in dB of `test` against `reference`.
func snrDB(_ reference: [Float], _ test: [Float]) -> Double { snr(reference, test) }
