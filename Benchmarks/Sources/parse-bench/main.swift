// parse-bench: AudioFileStream parse throughput per container family, next to FFmpeg's demuxer.
//
// For each container it generates a 60-second file with ffmpeg (into a temp folder, reused
// between runs) and also takes the matching files of the shared corpus, reads them into memory,
// and times AudioFileStream over the whole buffer and over 4 KiB chunks (median of several
// runs). The peer is FFmpeg's demuxer: `ffmpeg -benchmark -i FILE -c copy -f null -`, whose own
// rtime covers reading every packet and discarding it (no decoding, no process start-up).
// `ffprobe -count_packets` wall time is shown for reference. See docs/benchmarks.md.

import OATCore
import OATFiles
import Foundation
#if canImport(Glibc)
import Glibc
#endif

// MARK: Options

struct Options {
    var json = false
    var runs = 7
    var peerRuns = 3
    var seconds = 60
    var corpus: String? = nil
    var useCorpus = true
    var useGenerated = true
    var workDir = "/tmp/oat-parse-bench"
    var only: Set<String> = []

    static let usage = """
    usage: parse-bench [--json] [--runs N] [--peer-runs N] [--seconds S] [--work DIR]
                       [--corpus DIR | --no-corpus] [--no-generated] [FAMILY...]
      FAMILY: au wav aiff caf flac ogg mpeg mp4 (default: all)
      --runs N        timed parses per file and feed mode; the median is reported (default 7)
      --peer-runs N   ffmpeg and ffprobe runs per file; the median is reported (default 3)
      --seconds S     length of the generated files (default 60)
      --work DIR      where generated files go (default /tmp/oat-parse-bench; reused)
      --corpus DIR    the shared corpus (default ../shared/corpus from the package root)
    """

    static func parse(_ args: [String]) -> Options {
        var o = Options()
        var i = 0
        func value() -> String {
            i += 1
            guard i < args.count else { fail("missing value for \(args[i - 1])") }
            return args[i]
        }
        while i < args.count {
            switch args[i] {
            case "--json": o.json = true
            case "--runs": o.runs = max(1, Int(value()) ?? 7)
            case "--peer-runs": o.peerRuns = max(1, Int(value()) ?? 3)
            case "--seconds": o.seconds = max(1, Int(value()) ?? 60)
            case "--work": o.workDir = value()
            case "--corpus": o.corpus = value()
            case "--no-corpus": o.useCorpus = false
            case "--no-generated": o.useGenerated = false
            case "-h", "--help": print(usage); exit(0)
            case let a where a.hasPrefix("-"): fail("unknown option \(a)\n\(usage)")
            case let a: o.only.insert(a)
            }
            i += 1
        }
        return o
    }
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("parse-bench: \(message)\n".utf8))
    exit(2)
}

func note(_ message: String) {
    FileHandle.standardError.write(Data("\(message)\n".utf8))
}

// MARK: Clock

func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}

func median(_ xs: [Double]) -> Double {
    let s = xs.sorted()
    guard !s.isEmpty else { return .nan }
    return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
}

// MARK: Inputs

/// A file to generate with ffmpeg from the synthetic source.
struct GeneratedSpec {
    var family: String
    var label: String
    var file: String
    var hint: AudioFileType?
    var ffmpegArgs: [String]
}

let generatedSpecs: [GeneratedSpec] = [
    .init(family: "au", label: "AU pcm16", file: "pcm16.au", hint: .next, ffmpegArgs: ["-c:a", "pcm_s16be"]),
    .init(family: "wav", label: "WAV pcm16", file: "pcm16.wav", hint: .wave, ffmpegArgs: ["-c:a", "pcm_s16le"]),
    .init(family: "aiff", label: "AIFF pcm16", file: "pcm16.aiff", hint: .aiff, ffmpegArgs: ["-c:a", "pcm_s16be"]),
    .init(family: "caf", label: "CAF pcm16", file: "pcm16.caf", hint: .caf, ffmpegArgs: ["-c:a", "pcm_s16le"]),
    .init(family: "caf", label: "CAF ALAC", file: "alac.caf", hint: .caf, ffmpegArgs: ["-c:a", "alac"]),
    .init(family: "flac", label: "FLAC", file: "audio.flac", hint: .flac, ffmpegArgs: ["-c:a", "flac"]),
    .init(family: "ogg", label: "Ogg Vorbis", file: "vorbis.ogg", hint: .ogg, ffmpegArgs: ["-c:a", "libvorbis", "-q:a", "4"]),
    .init(family: "ogg", label: "Ogg Opus", file: "opus.opus", hint: .ogg, ffmpegArgs: ["-c:a", "libopus", "-b:a", "96k"]),
    .init(family: "mpeg", label: "MP3 CBR 128k", file: "cbr.mp3", hint: .mp3, ffmpegArgs: ["-c:a", "libmp3lame", "-b:a", "128k"]),
    .init(family: "mpeg", label: "MP3 VBR V2", file: "vbr.mp3", hint: .mp3, ffmpegArgs: ["-c:a", "libmp3lame", "-q:a", "2"]),
    .init(family: "mpeg", label: "ADTS AAC", file: "audio.aac", hint: .aacADTS, ffmpegArgs: ["-c:a", "aac", "-b:a", "128k", "-f", "adts"]),
    .init(family: "mp4", label: "M4A AAC", file: "audio.m4a", hint: .m4a, ffmpegArgs: ["-c:a", "aac", "-b:a", "128k", "-movflags", "+faststart"]),
    .init(family: "mp4", label: "M4A AAC fragmented", file: "frag.m4a", hint: .m4a,
          ffmpegArgs: ["-c:a", "aac", "-b:a", "128k", "-movflags", "+empty_moov+default_base_moof", "-frag_duration", "1000000", "-f", "mp4"]),
]

let familyOrder = ["au", "wav", "aiff", "caf", "flac", "ogg", "mpeg", "mp4"]

/// The family of a corpus file by its extension (nil: not an audio container we benchmark).
func corpusFamily(_ path: String) -> (family: String, hint: AudioFileType?)? {
    switch (path as NSString).pathExtension.lowercased() {
    case "au", "snd": ("au", .next)
    case "wav": ("wav", .wave)
    case "aif", "aiff", "aifc", "afc": ("aiff", .aiff)
    case "caf": ("caf", .caf)
    case "flac": ("flac", .flac)
    case "ogg", "oga", "opus", "spx": ("ogg", .ogg)
    case "mp3": ("mpeg", .mp3)
    case "mp2": ("mpeg", .mp2)
    case "mp1": ("mpeg", .mp1)
    case "aac": ("mpeg", .aacADTS)
    case "m4a", "mp4": ("mp4", .m4a)
    default: nil
    }
}

// MARK: Processes

/// Runs a program, returning its exit status and wall time (stdout/stderr discarded).
@discardableResult
func runProcess(_ path: String, _ args: [String]) -> (status: Int32, seconds: Double) {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: path)
    p.arguments = args
    p.standardOutput = FileHandle.nullDevice
    p.standardError = FileHandle.nullDevice
    p.standardInput = FileHandle.nullDevice
    let t0 = now()
    do { try p.run() } catch { return (-1, 0) }
    p.waitUntilExit()
    return (p.terminationStatus, now() - t0)
}

/// Runs a program and returns its standard error (stdout discarded), or nil if it failed.
func runCapturingStderr(_ path: String, _ args: [String]) -> String? {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: path)
    p.arguments = args
    let pipe = Pipe()
    p.standardOutput = FileHandle.nullDevice
    p.standardError = pipe
    p.standardInput = FileHandle.nullDevice
    do { try p.run() } catch { return nil }
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return p.terminationStatus == 0 ? String(decoding: data, as: UTF8.self) : nil
}

func findTool(_ name: String) -> String? {
    for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":") {
        let path = "\(dir)/\(name)"
        if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    return nil
}

// MARK: Our parser

struct ParseOutcome {
    var packets: Int64 = 0
    var bytes = 0
    var error: AudioError?
}

/// One parse of `bytes` through a new AudioFileStream, whole or in `chunk`-byte pieces.
func parseOnce(_ bytes: [UInt8], hint: AudioFileType?, chunk: Int?) -> ParseOutcome {
    var outcome = ParseOutcome()
    let stream = AudioFileStream(fileTypeHint: hint)
    let handler: (AudioFileStreamEvent) -> Void = { event in
        if case .packets(let batch) = event {
            outcome.packets += Int64(batch.packetCount)
            outcome.bytes += batch.data.count
        }
    }
    bytes.withUnsafeBytes { (raw: UnsafeRawBufferPointer) in
        do throws(AudioError) {
            let step = chunk ?? max(1, raw.count)
            var at = 0
            while at < raw.count {
                let end = min(raw.count, at + step)
                try stream.parse(UnsafeRawBufferPointer(rebasing: raw[at..<end]), handler)
                at = end
            }
            try stream.finish(handler)
        } catch {
            outcome.error = error
        }
    }
    return outcome
}

/// Median seconds of `runs` parses (at least `runs`, more for tiny inputs, up to 0.3 s).
func timeParse(_ bytes: [UInt8], hint: AudioFileType?, chunk: Int?, runs: Int) -> Double {
    var times: [Double] = []
    let start = now()
    while times.count < runs || (now() - start < 0.3 && times.count < 500) {
        let t0 = now()
        let outcome = parseOnce(bytes, hint: hint, chunk: chunk)
        times.append(now() - t0)
        if outcome.packets < 0 { print("") } // keep the result observable
    }
    return median(times)
}

// MARK: Rows

struct Row: Codable {
    var family: String
    var input: String
    var files: Int
    var bytes: Int
    var packets: Int64?
    /// "ok", "not implemented", "error" or "skipped".
    var status: String
    var detail: String?
    var oursWholeMBps: Double?
    var oursChunkedMBps: Double?
    /// ffmpeg's demux loop time (rtime), summed over the files.
    var peerMs: Double?
    var peerMBps: Double?
    /// ours (whole-buffer) / peer.
    var ratio: Double?
    /// True when ffmpeg's time is under 5 ms per file (its rtime has 1 ms resolution): peer MB/s
    /// and ratio are then only indicative (in parentheses in the table).
    var peerCoarse: Bool?
    /// `ffprobe -count_packets` wall time, process start-up included (reference only).
    var ffprobeWallMs: Double?
}

struct InputFile {
    var path: String
    var hint: AudioFileType?
}

final class Bench {
    let options: Options
    let ffprobe: String?
    let ffmpeg: String?

    init(options: Options) {
        self.options = options
        ffprobe = findTool("ffprobe")
        ffmpeg = findTool("ffmpeg")
    }

    /// The peer: `ffmpeg -benchmark -i FILE -map 0:a -c copy -f null -`, median of its own
    /// `rtime` (the demux-and-discard loop after the input is opened and probed; no decoding,
    /// no process start-up). nil when ffmpeg is missing or fails on the file.
    func peerSeconds(_ path: String) -> Double? {
        guard let ffmpeg else { return nil }
        var times: [Double] = []
        for _ in 0..<options.peerRuns {
            guard let err = runCapturingStderr(ffmpeg, ["-hide_banner", "-nostdin", "-nostats", "-benchmark", "-i", path,
                                                        "-map", "0:a:0", "-c", "copy", "-f", "null", "-"]),
                  let range = err.range(of: "rtime="),
                  let t = Double(err[range.upperBound...].prefix { $0.isNumber || $0 == "." }) else { return nil }
            times.append(t)
        }
        return median(times)
    }

    /// ffprobe -count_packets as a process, wall time (start-up included; reference only).
    func ffprobeSeconds(_ path: String) -> Double? {
        guard let ffprobe else { return nil }
        var times: [Double] = []
        for _ in 0..<options.peerRuns {
            let r = runProcess(ffprobe, ["-v", "error", "-count_packets", "-show_entries", "stream=nb_read_packets", "-of", "csv=p=0", path])
            guard r.status == 0 else { return nil }
            times.append(r.seconds)
        }
        return median(times)
    }

    /// Measures a set of files as one row: our parse over each (summed medians) and ffprobe.
    func measure(family: String, label: String, files: [InputFile]) -> Row {
        var row = Row(family: family, input: label, files: files.count, bytes: 0, status: "ok")
        var whole = 0.0, chunked = 0.0, peer = 0.0, probeWall = 0.0
        var okBytes = 0, packets: Int64 = 0, okFiles = 0
        var firstError: AudioError?
        var unsupportedCount = 0, errorCount = 0
        var peerOK = ffmpeg != nil, probeOK = ffprobe != nil
        for file in files {
            guard let data = FileManager.default.contents(atPath: file.path) else { continue }
            let bytes = [UInt8](data)
            row.bytes += bytes.count
            let probe = parseOnce(bytes, hint: file.hint, chunk: nil)
            if let e = probe.error {
                if e.code == .unsupportedFormat { unsupportedCount += 1 } else { errorCount += 1 }
                // Report "not implemented" first: it explains the row better than a bad file.
                if firstError == nil || (firstError!.code != .unsupportedFormat && e.code == .unsupportedFormat) { firstError = e }
                continue
            }
            okFiles += 1
            okBytes += bytes.count
            packets += probe.packets
            whole += timeParse(bytes, hint: file.hint, chunk: nil, runs: options.runs)
            chunked += timeParse(bytes, hint: file.hint, chunk: 4096, runs: options.runs)
            if peerOK, let p = peerSeconds(file.path) { peer += p } else { peerOK = false }
            if probeOK, let p = ffprobeSeconds(file.path) { probeWall += p } else { probeOK = false }
        }
        if okFiles == 0 {
            if let e = firstError {
                row.status = e.code == .unsupportedFormat ? "not implemented" : "error"
                row.detail = e.description
                if files.count > 1 { row.detail! += " [\(unsupportedCount) unsupported, \(errorCount) other errors]" }
            } else {
                row.status = "skipped"
                row.detail = "no readable files"
            }
            return row
        }
        if okFiles < files.count, let e = firstError {
            row.detail = "\(files.count - okFiles) of \(files.count) files not parsed (\(e.code.rawValue): \(e.description))"
        }
        let mb = Double(okBytes) / 1e6
        row.packets = packets
        row.oursWholeMBps = mb / whole
        row.oursChunkedMBps = mb / chunked
        if probeOK { row.ffprobeWallMs = probeWall * 1000 }
        if peerOK {
            row.peerMs = peer * 1000
            // ffmpeg prints rtime in milliseconds resolution: below 5 ms the figure is coarse.
            row.peerCoarse = peer < 0.005 * Double(okFiles)
            row.peerMBps = mb / max(peer, 0.0005)
            row.ratio = row.oursWholeMBps! / row.peerMBps!
        }
        if okBytes != row.bytes { row.bytes = okBytes }
        return row
    }

    // MARK: Generation

    func generate() -> [(GeneratedSpec, String)] {
        guard let ffmpeg = findTool("ffmpeg") else {
            note("parse-bench: ffmpeg not found; generated files skipped")
            return []
        }
        let dir = "\(options.workDir)/\(options.seconds)s"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        // A synthetic source: two tones plus noise, distinct per channel, 44.1 kHz stereo.
        let expr = "aevalsrc=exprs=0.3*sin(2*PI*440*t)+0.1*(random(0)-0.5)|0.3*sin(2*PI*659*t)+0.1*(random(1)-0.5):s=44100"
        let source = "\(dir)/source.wav"
        if !FileManager.default.fileExists(atPath: source) {
            let r = runProcess(ffmpeg, ["-y", "-v", "error", "-f", "lavfi", "-i", "\(expr):d=\(options.seconds)", "-c:a", "pcm_s16le", source])
            if r.status != 0 { note("parse-bench: ffmpeg could not make \(source)"); return [] }
        }
        var made: [(GeneratedSpec, String)] = []
        for spec in generatedSpecs where options.only.isEmpty || options.only.contains(spec.family) {
            let out = "\(dir)/\(spec.file)"
            if !FileManager.default.fileExists(atPath: out) {
                let tmp = out + ".part"
                let r = runProcess(ffmpeg, ["-y", "-v", "error", "-i", source] + spec.ffmpegArgs
                                   + (spec.ffmpegArgs.contains("-f") ? [] : ["-f", formatName(spec.file)]) + [tmp])
                if r.status != 0 || rename(tmp, out) != 0 {
                    note("parse-bench: ffmpeg could not make \(out)")
                    continue
                }
            }
            made.append((spec, out))
        }
        return made
    }

    func formatName(_ file: String) -> String {
        switch (file as NSString).pathExtension {
        case "au": "au"
        case "wav": "wav"
        case "aiff": "aiff"
        case "caf": "caf"
        case "flac": "flac"
        case "ogg": "ogg"
        case "opus": "opus"
        case "mp3": "mp3"
        case "m4a": "ipod"
        default: "null"
        }
    }

    func corpusFiles() -> [String: [InputFile]] {
        let root = options.corpus ?? corpusDefault()
        guard let walker = FileManager.default.enumerator(atPath: root) else {
            note("parse-bench: corpus \(root) not found; corpus rows skipped")
            return [:]
        }
        var byFamily: [String: [InputFile]] = [:]
        while let rel = walker.nextObject() as? String {
            guard let (family, hint) = corpusFamily(rel) else { continue }
            if !options.only.isEmpty && !options.only.contains(family) { continue }
            byFamily[family, default: []].append(InputFile(path: "\(root)/\(rel)", hint: hint))
        }
        return byFamily.mapValues { $0.sorted { $0.path < $1.path } }
    }

    /// ../shared/corpus next to the main package (the parent of this package).
    func corpusDefault() -> String {
        let here = URL(fileURLWithPath: #filePath)   // Benchmarks/Sources/parse-bench/main.swift
        return here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("shared/corpus").path
    }

    func run() -> [Row] {
        var rows: [Row] = []
        if options.useGenerated {
            for (spec, path) in generate() {
                note("parse-bench: \(spec.label)")
                rows.append(measure(family: spec.family, label: spec.label + " (\(options.seconds) s)",
                                    files: [InputFile(path: path, hint: spec.hint)]))
            }
        }
        if options.useCorpus {
            let corpus = corpusFiles()
            for family in familyOrder {
                guard let files = corpus[family], !files.isEmpty else { continue }
                note("parse-bench: corpus \(family) (\(files.count) files)")
                rows.append(measure(family: family, label: "corpus \(family)", files: files))
            }
        }
        return rows.sorted { (familyOrder.firstIndex(of: $0.family) ?? 99) < (familyOrder.firstIndex(of: $1.family) ?? 99) }
    }
}

// MARK: Output

func fmt(_ x: Double?, _ digits: Int = 1) -> String {
    guard let x, x.isFinite else { return "-" }
    return String(format: "%.\(digits)f", x)
}

func paren(_ s: String, _ flag: Bool?) -> String { flag == true ? "(\(s))" : s }

func printTable(_ rows: [Row]) {
    let header = ["container", "input", "files", "bytes", "ours MB/s whole", "ours MB/s 4K", "peer ms", "peer MB/s", "ratio", "ffprobe ms", "note"]
    var lines = [header]
    for r in rows {
        lines.append([r.family, r.input, "\(r.files)", "\(r.bytes)", fmt(r.oursWholeMBps), fmt(r.oursChunkedMBps),
                      fmt(r.peerMs), paren(fmt(r.peerMBps), r.peerCoarse), paren(fmt(r.ratio, 2), r.peerCoarse), fmt(r.ffprobeWallMs),
                      r.status == "ok" ? (r.detail ?? "") : "\(r.status): \(r.detail ?? "")"])
    }
    let widths = (0..<header.count - 1).map { c in lines.map { $0[c].count }.max() ?? 0 }
    for l in lines {
        var s = ""
        for c in 0..<header.count - 1 {
            let cell = l[c]
            let pad = String(repeating: " ", count: widths[c] - cell.count)
            s += (c <= 1 ? cell + pad : pad + cell) + "  "
        }
        print(s + l[header.count - 1])
    }
}

let options = Options.parse(Array(CommandLine.arguments.dropFirst()))
let rows = Bench(options: options).run()
if options.json {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    if let data = try? encoder.encode(rows) { print(String(decoding: data, as: UTF8.self)) }
} else {
    printTable(rows)
    print("ratio = ours (whole buffer) / peer; peer = ffmpeg -benchmark -c copy -f null rtime (demux loop, in process)")
    print("(parenthesised: under 5 ms per file, where ffmpeg's 1 ms rtime resolution makes it indicative only)")
    print("ffprobe ms = ffprobe -count_packets wall time per process, start-up included (reference)")
}
