// play-bench: CPU time and peak RSS of afplay playing S seconds of 128 kbps MP3 next to mpg123
// and mpv playing the same file, all three to the same private PulseAudio daemon's null sink
// (in real time: the sink's clock paces every player alike). Each player is a child process;
// wait4 gives its user and system CPU time and its peak resident set size. See docs/benchmarks.md.

import BenchSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif

struct Options {
    var seconds = 60
    var runs = 1
    var workDir = "/tmp/oat-play-bench"
    var afplay: String?
    var corpus: String?
    var json = false
    var players: [String] = ["afplay", "mpg123", "mpv"]

    static let usage = """
    usage: play-bench [--quick] [--seconds S] [--runs N] [--afplay PATH] [--work DIR] [--corpus DIR] [--json] [PLAYER...]
      PLAYER: afplay mpg123 mpv (default: all three)
      --seconds S   length of the MP3 played (default 60); --quick is --seconds 10
      --runs N      plays per player; the median of each figure is reported (default 1)
      --afplay PATH the afplay to measure (default: .build/release/afplay of the main package)
    """

    static func parse(_ args: [String]) -> Options {
        var o = Options()
        var i = 0
        var players: [String] = []
        func value() -> String {
            i += 1
            guard i < args.count else { fatal("missing value for \(args[i - 1])") }
            return args[i]
        }
        while i < args.count {
            switch args[i] {
            case "--quick": o.seconds = 10
            case "--seconds": o.seconds = max(1, Int(value()) ?? 60)
            case "--runs": o.runs = max(1, Int(value()) ?? 1)
            case "--afplay": o.afplay = value()
            case "--work": o.workDir = value()
            case "--corpus": o.corpus = value()
            case "--json": o.json = true
            case "-h", "--help": print(usage); exit(0)
            case let a where a.hasPrefix("-"): fatal("unknown option \(a)\n\(usage)")
            case let a: players.append(a)
            }
            i += 1
        }
        if !players.isEmpty { o.players = players }
        return o
    }
}

func fatal(_ message: String) -> Never {
    note("play-bench: \(message)")
    exit(2)
}

struct Row: Codable {
    var player: String
    var command: String
    var runs: Int
    var failed: String?
    var wallSeconds: Double = 0
    var userSeconds: Double = 0
    var systemSeconds: Double = 0
    var maxRSSKiB: Int = 0
    var cpuSeconds: Double { userSeconds + systemSeconds }
}

let options = Options.parse(Array(CommandLine.arguments.dropFirst()))
let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
guard findTool("ffmpeg") != nil else { fatal("ffmpeg is needed to make the input") }

// The input: the corpus music excerpt looped (or a synthetic chord), MP3 CBR 128k, 44.1 kHz stereo.
let dir = "\(options.workDir)/\(options.seconds)s"
try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
let corpus = options.corpus ?? "\(packageRoot)/../shared/corpus"
let excerpt = "\(corpus)/flac-test-files/subset/01 - blocksize 4096.flac"
let mp3 = "\(dir)/music-128k.mp3"
let made: Bool
if FileManager.default.fileExists(atPath: excerpt) {
    made = ffmpegGenerate(mp3, ["-stream_loop", "-1", "-i", excerpt, "-t", "\(options.seconds)", "-c:a", "libmp3lame", "-b:a", "128k"])
} else {
    let expr = "aevalsrc=exprs=0.2*sin(2*PI*262*t)+0.1*sin(2*PI*392*t)+0.05*(random(0)-0.5)|0.2*sin(2*PI*196*t)+0.1*sin(2*PI*494*t)+0.05*(random(1)-0.5):s=44100:d=\(options.seconds)"
    made = ffmpegGenerate(mp3, ["-f", "lavfi", "-i", expr, "-c:a", "libmp3lame", "-b:a", "128k"])
}
guard made else { fatal("cannot make \(mp3)") }

let pulse: PrivatePulse
do { pulse = try PrivatePulse(sampleRate: 44100, channels: 2) } catch { fatal("\(error)") }
defer { pulse.stop() }

let afplay = options.afplay ?? "\(packageRoot)/.build/release/afplay"
var rows: [Row] = []
for player in options.players {
    let command: (String, [String])?
    switch player {
    case "afplay":
        command = findTool(afplay).map { ($0, ["--output", "pulse:\(pulse.sinkName)", "--no-ui", mp3]) }
    case "mpg123":
        command = findTool("mpg123").map { ($0, ["-q", "-o", "pulse", mp3]) }
    case "mpv":
        command = findTool("mpv").map { ($0, ["--no-config", "--really-quiet", "--no-video", "--ao=pulse", mp3]) }
    default:
        fatal("unknown player \(player)")
    }
    guard let (path, args) = command else {
        rows.append(Row(player: player, command: "", runs: 0, failed: "not installed (run Benchmarks/run.sh, or build afplay)"))
        continue
    }
    let shown = ([(path as NSString).lastPathComponent] + args.map { $0 == mp3 ? "FILE" : $0 }).joined(separator: " ")
    var usages: [ChildUsage] = []
    var failure: String?
    for run in 0..<options.runs {
        note("play-bench: \(player) run \(run + 1)/\(options.runs): \(shown) (\(options.seconds) s)")
        let log = "\(dir)/\(player).log"
        let u = runChild(path, args, environment: pulse.environment, outputPath: log, timeout: Double(options.seconds) * 3 + 30)
        if u.status != 0 {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            failure = "exit \(u.status): \(text.suffix(300))"
            break
        }
        usages.append(u)
    }
    var row = Row(player: player, command: shown, runs: usages.count, failed: failure)
    if failure == nil {
        row.wallSeconds = median(usages.map(\.wallSeconds))
        row.userSeconds = median(usages.map(\.userSeconds))
        row.systemSeconds = median(usages.map(\.systemSeconds))
        row.maxRSSKiB = Int(median(usages.map { Double($0.maxRSSKiB) }))
    }
    rows.append(row)
}

if options.json {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    print(String(decoding: try! encoder.encode(rows), as: UTF8.self))
} else {
    print("Input: \(options.seconds) s MP3 CBR 128 kbps, 44.1 kHz stereo; output: private PulseAudio null sink; \(options.runs) run(s) per player (median).\n")
    let ours = rows.first { $0.player == "afplay" && $0.failed == nil }
    printTable(["player", "wall s", "user s", "sys s", "CPU s", "CPU % of playback", "peak RSS MiB", "afplay CPU / this", "afplay RSS / this"],
               rows.map { r in
                   if let f = r.failed { return [r.player, "failed: \(f)", "", "", "", "", "", "", ""] }
                   return [r.player, fmt(r.wallSeconds, 2), fmt(r.userSeconds, 3), fmt(r.systemSeconds, 3), fmt(r.cpuSeconds, 3),
                           fmt(r.cpuSeconds / Double(options.seconds) * 100, 2), fmt(Double(r.maxRSSKiB) / 1024, 1),
                           fmt(ours.map { $0.cpuSeconds / r.cpuSeconds }, 2), fmt(ours.map { Double($0.maxRSSKiB) / Double(r.maxRSSKiB) }, 2)]
               })
    print("\nCommands: " + rows.filter { !$0.command.isEmpty }.map { "`\($0.command)`" }.joined(separator: ", "))
    print("Ratios below 1: afplay uses less than that player.")
}
