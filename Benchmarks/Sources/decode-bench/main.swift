// decode-bench: decode throughput of ExtendedAudioFile (AudioFile parsing + AudioConverter
// decoding to Float32) next to the decoders users would reach for instead: `mpg123 -t` for MP3
// and `ffmpeg ... -f null -` for MP3, AAC, FLAC, Opus and Vorbis, on the same files.
//
// The inputs are made at run time with ffmpeg (into /tmp, reused): a 7-second music excerpt of
// the shared corpus (FLAC test bench, CC0) looped to S seconds, or a synthetic chord with noise
// when the corpus is absent, encoded as MP3 128k, AAC 128k (M4A), FLAC, Opus 96k and Vorbis q4.
// See docs/benchmarks.md.

import OATCore
import BenchSupport
import Foundation
import OpenAudioToolbox
#if canImport(Glibc)
import Glibc
#endif

struct Options {
    var runs = 5
    var seconds = 60
    var workDir = "/tmp/oat-decode-bench"
    var corpus: String?
    var json = false
    var only: Set<String> = []

    static let usage = """
    usage: decode-bench [--runs N] [--seconds S] [--work DIR] [--corpus DIR] [--json] [CODEC...]
      CODEC: mp3 aac flac opus vorbis (default: all)
      --runs N      decodes per file and tool; the median is reported (default 5)
      --seconds S   length of the generated files (default 60)
      --work DIR    where generated files go (default /tmp/oat-decode-bench; reused)
      --corpus DIR  the shared corpus (default ../shared/corpus from the package root)
    """

    static func parse(_ args: [String]) -> Options {
        var o = Options()
        var i = 0
        func value() -> String {
            i += 1
            guard i < args.count else { fatal("missing value for \(args[i - 1])") }
            return args[i]
        }
        while i < args.count {
            switch args[i] {
            case "--runs": o.runs = max(1, Int(value()) ?? 5)
            case "--seconds": o.seconds = max(1, Int(value()) ?? 60)
            case "--work": o.workDir = value()
            case "--corpus": o.corpus = value()
            case "--json": o.json = true
            case "-h", "--help": print(usage); exit(0)
            case let a where a.hasPrefix("-"): fatal("unknown option \(a)\n\(usage)")
            case let a: o.only.insert(a)
            }
            i += 1
        }
        return o
    }
}

func fatal(_ message: String) -> Never {
    note("decode-bench: \(message)")
    exit(2)
}

struct Codec {
    var name: String
    var label: String
    var file: String
    var ffmpegArgs: [String]
}

let codecs: [Codec] = [
    Codec(name: "mp3", label: "MP3 CBR 128k", file: "music.mp3", ffmpegArgs: ["-c:a", "libmp3lame", "-b:a", "128k"]),
    Codec(name: "aac", label: "AAC-LC 128k (M4A)", file: "music.m4a", ffmpegArgs: ["-c:a", "aac", "-b:a", "128k", "-movflags", "+faststart"]),
    Codec(name: "flac", label: "FLAC 16-bit", file: "music.flac", ffmpegArgs: ["-c:a", "flac"]),
    Codec(name: "opus", label: "Opus 96k (Ogg)", file: "music.opus", ffmpegArgs: ["-c:a", "libopus", "-b:a", "96k"]),
    Codec(name: "vorbis", label: "Vorbis q4 (Ogg)", file: "music.ogg", ffmpegArgs: ["-c:a", "libvorbis", "-q:a", "4"]),
]

struct Row: Codable {
    var codec: String
    var label: String
    var bytes: Int
    var audioSeconds: Double
    var frames: Int64
    var oursSeconds: Double?
    var oursCPUSeconds: Double?
    var oursParseSeconds: Double?
    var oursError: String?
    var peers: [Peer]
    struct Peer: Codable {
        var tool: String
        var seconds: Double?
        var cpuSeconds: Double?
        var timing: String
        var ratio: Double?
    }
}

/// CPU seconds used by the calling thread.
func threadCPUSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// Decodes the whole file once to Float32 through ExtendedAudioFile; returns frames, wall and
/// CPU seconds.
func decodeOnce(_ path: String) throws -> (frames: Int64, seconds: Double, cpu: Double) {
    let start = monotonicSeconds()
    let cpuStart = threadCPUSeconds()
    let file = try ExtendedAudioFile(path: path)
    let buffer = try AudioPCMBuffer(format: file.clientFormat, frameCapacity: 4096)
    var frames: Int64 = 0
    while true {
        let n = try file.read(into: buffer)
        if n == 0 { break }
        frames += Int64(n)
    }
    return (frames, monotonicSeconds() - start, threadCPUSeconds() - cpuStart)
}

/// Opens the file and reads every packet (no decoding): the parsing share of ``decodeOnce``.
func parseOnce(_ path: String) throws -> Double {
    let start = monotonicSeconds()
    let file = try AudioFile(path: path)
    var next: Int64 = 0
    while next < file.packetCount {
        let batch = try file.readPackets(next..<min(file.packetCount, next + 64))
        if batch.packetCount == 0 { break }
        next += Int64(batch.packetCount)
    }
    return monotonicSeconds() - start
}

/// `ffmpeg -benchmark` prints `bench: utime=...s stime=...s rtime=...s`: its own decode time
/// (after probing, without process start-up). One decoder thread, as AudioConverter and mpg123
/// use: libavcodec's FLAC decoder would otherwise decode frames on both cores.
func ffmpegSeconds(_ ffmpeg: String, _ path: String) -> (wall: Double, cpu: Double)? {
    guard let out = captureOutput(ffmpeg, ["-nostdin", "-hide_banner", "-benchmark", "-threads", "1", "-i", path, "-map", "0:a:0",
                                           "-c:a", "pcm_f32le", "-f", "null", "-"]) else { return nil }
    func value(_ key: String) -> Double? {
        guard let r = out.range(of: key) else { return nil }
        return Double(out[r.upperBound...].prefix { $0.isNumber || $0 == "." })
    }
    guard let rtime = value("rtime="), let utime = value("utime="), let stime = value("stime=") else { return nil }
    return (rtime, utime + stime)
}

let options = Options.parse(Array(CommandLine.arguments.dropFirst()))
guard let ffmpeg = findTool("ffmpeg") else { fatal("ffmpeg is needed to make the inputs") }
let mpg123 = findTool("mpg123")
if mpg123 == nil { note("decode-bench: mpg123 not found (Benchmarks/run.sh installs it); its column stays empty") }

// Inputs.
let dir = "\(options.workDir)/\(options.seconds)s"
try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
let corpus = options.corpus ?? "\(packageRoot)/../shared/corpus"
let excerpt = "\(corpus)/flac-test-files/subset/01 - blocksize 4096.flac"
let source = "\(dir)/source.wav"
var sourceLabel = "corpus excerpt `flac-test-files/subset/01 - blocksize 4096.flac` (7 s, 44.1 kHz stereo) looped"
if FileManager.default.fileExists(atPath: excerpt) {
    if !ffmpegGenerate(source, ["-stream_loop", "-1", "-i", excerpt, "-t", "\(options.seconds)", "-c:a", "pcm_s16le"]) { fatal("cannot make \(source)") }
} else {
    sourceLabel = "synthetic chord with noise (aevalsrc), 44.1 kHz stereo"
    let expr = "aevalsrc=exprs=0.2*sin(2*PI*262*t)+0.15*sin(2*PI*330*t)*(1+sin(2*PI*0.5*t))/2+0.1*sin(2*PI*392*t)+0.05*(random(0)-0.5)|0.2*sin(2*PI*196*t)+0.15*sin(2*PI*494*t)+0.05*(random(1)-0.5):s=44100:d=\(options.seconds)"
    if !ffmpegGenerate(source, ["-f", "lavfi", "-i", expr, "-c:a", "pcm_s16le"]) { fatal("cannot make \(source)") }
}
note("decode-bench: source: \(sourceLabel)")

var rows: [Row] = []
for codec in codecs where options.only.isEmpty || options.only.contains(codec.name) {
    let path = "\(dir)/\(codec.file)"
    guard ffmpegGenerate(path, ["-i", source] + codec.ffmpegArgs) else {
        note("decode-bench: ffmpeg could not make \(path)")
        continue
    }
    let bytes = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    note("decode-bench: \(codec.label): \(options.runs) runs each")
    var row = Row(codec: codec.name, label: codec.label, bytes: bytes, audioSeconds: Double(options.seconds), frames: 0, peers: [])
    do {
        var times: [Double] = []
        var cpuTimes: [Double] = []
        _ = try decodeOnce(path) // warm the page cache and the decoder tables
        for _ in 0..<options.runs {
            let r = try decodeOnce(path)
            times.append(r.seconds)
            cpuTimes.append(r.cpu)
            row.frames = r.frames
        }
        row.oursSeconds = median(times)
        row.oursCPUSeconds = median(cpuTimes)
        var parseTimes: [Double] = []
        for _ in 0..<options.runs { parseTimes.append(try parseOnce(path)) }
        row.oursParseSeconds = median(parseTimes)
        let file = try ExtendedAudioFile(path: path)
        row.audioSeconds = Double(row.frames) / file.clientFormat.sampleRate
    } catch {
        row.oursError = "\(error)"
    }
    var ffTimes: [Double] = []
    var ffCPU: [Double] = []
    _ = ffmpegSeconds(ffmpeg, path)
    for _ in 0..<options.runs {
        if let t = ffmpegSeconds(ffmpeg, path) {
            ffTimes.append(t.wall)
            ffCPU.append(t.cpu)
        }
    }
    let ff = ffTimes.isEmpty ? nil : median(ffTimes)
    let ffc = ffCPU.isEmpty ? nil : median(ffCPU)
    row.peers.append(.init(tool: "ffmpeg", seconds: ff, cpuSeconds: ffc, timing: "rtime", ratio: ffc.flatMap { f in row.oursCPUSeconds.map { f / $0 } }))
    if codec.name == "mp3", let mpg123 {
        var mTimes: [Double] = []
        var mCPU: [Double] = []
        _ = runChild(mpg123, ["-q", "-t", "-e", "f32", path])
        for _ in 0..<options.runs {
            let u = runChild(mpg123, ["-q", "-t", "-e", "f32", path])
            if u.status == 0 {
                mTimes.append(u.wallSeconds)
                mCPU.append(u.cpuSeconds)
            }
        }
        let m = mTimes.isEmpty ? nil : median(mTimes)
        let mc = mCPU.isEmpty ? nil : median(mCPU)
        row.peers.append(.init(tool: "mpg123", seconds: m, cpuSeconds: mc, timing: "wall", ratio: mc.flatMap { x in row.oursCPUSeconds.map { x / $0 } }))
    }
    rows.append(row)
}

if options.json {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    print(String(decoding: try! encoder.encode(rows), as: UTF8.self))
} else {
    print("Source: \(sourceLabel), \(options.seconds) s; median of \(options.runs) runs.\n")
    var table: [[String]] = []
    for r in rows {
        let oursX = r.oursCPUSeconds.map { r.audioSeconds / $0 }
        for (i, p) in r.peers.enumerated() {
            table.append([i == 0 ? r.label : "", i == 0 ? "\(r.bytes)" : "",
                          i == 0 ? (r.oursError.map { "error: \($0)" } ?? fmt(r.oursSeconds, 3)) : "",
                          i == 0 ? fmt(r.oursCPUSeconds, 3) : "", i == 0 ? fmt(oursX, 0) : "", i == 0 ? fmt(r.oursParseSeconds, 3) : "",
                          p.tool == "ffmpeg" ? "ffmpeg -threads 1" : "mpg123 -t", fmt(p.seconds, 3), fmt(p.cpuSeconds, 3),
                          fmt(p.cpuSeconds.map { r.audioSeconds / $0 }, 0), fmt(p.ratio, 2)])
        }
    }
    printTable(["input", "bytes", "ours wall s", "ours CPU s", "ours × realtime", "parsing wall s", "peer", "peer wall s", "peer CPU s", "peer × realtime", "ratio"], table)
    print("""

    ours = ExtendedAudioFile open + read to Float32 (in process; CPU = the decoding thread's CPU time).
    ffmpeg = its -benchmark rtime (wall) and utime+stime (CPU), after probing, no process start-up.
    mpg123 = the whole process (wait4), start-up included. × realtime = audio seconds / CPU seconds.
    ratio = peer CPU s / ours CPU s: above 1, ExtendedAudioFile decodes faster than the peer.
    """)
}
