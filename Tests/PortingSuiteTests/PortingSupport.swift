// Runs the porting suite's programs (PortingSuite/, built by `swift build`) and checks their
// audio against ffmpeg's decode of the same files.
import OATTestSupport
import Foundation
import Testing

/// A built porting program.
func portingProgram(_ name: String) throws -> String {
    var dirs: [String] = []
    let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
    dirs.append((exe as NSString).deletingLastPathComponent)
    dirs.append(Corpus.packageRoot + "/.build/debug")
    for d in dirs where FileManager.default.isExecutableFile(atPath: d + "/" + name) { return d + "/" + name }
    throw ProgramMissing(name: name)
}

struct ProgramMissing: Error, CustomStringConvertible {
    let name: String
    var description: String { "\(name) is not built (swift build builds it)" }
}

/// What a program run gave: its exit status and its output (stdout and stderr).
struct ProgramRun {
    var status: Int32
    var output: String
}

/// Runs `program` with `arguments` and extra `environment`, waiting at most `timeout` seconds.
func run(_ program: String, _ arguments: [String], environment: [String: String] = [:], timeout: Double = 120) throws -> ProgramRun {
    let log = NSTemporaryDirectory() + "oat-porting-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).log"
    defer { unlink(log) }
    let p = try ToolProcess(program, arguments, environment: environment, outputPath: log)
    let status = p.wait(timeout: timeout)
    let output = p.output
    if status == nil { p.stop() }
    return ProgramRun(status: status ?? -1, output: output)
}

/// A fresh scratch path.
func scratchPath(_ name: String) -> String {
    NSTemporaryDirectory() + "oat-porting-\(getpid())-\(UInt32.random(in: 0...UInt32.max))-\(name)"
}

/// ffmpeg's decode (interleaved Float32) and channel count of `path`.
func ffmpegDecode(_ path: String) throws -> (samples: [Float], channels: Int) {
    let samples = try #require(decodeWithFFmpeg(path), "ffmpeg cannot decode \(path)")
    let channels = try #require(ffprobeChannels(path), "ffprobe cannot read \(path)")
    return (samples, channels)
}

/// The channel count ffprobe reports.
func ffprobeChannels(_ path: String) -> Int? {
    let out = NSTemporaryDirectory() + "oat-ffprobe-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).txt"
    defer { unlink(out) }
    let command = "ffprobe -v error -select_streams a:0 -show_entries stream=channels -of csv=p=0 '\(path)' > '\(out)' 2>/dev/null"
    guard system(command) == 0, let text = try? String(contentsOfFile: out, encoding: .utf8) else { return nil }
    return Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
}

/// The Float32 samples and channels of a WAV the WAV output wrote.
func readOutputWAV(_ path: String) -> (samples: [Float], channels: Int) {
    guard let data = FileManager.default.contents(atPath: path), data.count >= 12 else { return ([], 0) }
    let bytes = [UInt8](data)
    var at = 12
    var channels = 0
    func u32(_ i: Int) -> Int { Int(bytes[i]) | Int(bytes[i + 1]) << 8 | Int(bytes[i + 2]) << 16 | Int(bytes[i + 3]) << 24 }
    while at + 8 <= bytes.count {
        let id = String(decoding: bytes[at..<at + 4], as: UTF8.self)
        let size = u32(at + 4)
        if id == "fmt " { channels = Int(bytes[at + 10]) | Int(bytes[at + 11]) << 8 }
        if id == "data" {
            let end = min(bytes.count, at + 8 + size)
            return (bytes[(at + 8)..<end].withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }, channels)
        }
        at += 8 + size + (size & 1)
    }
    return ([], channels)
}

/// How a program's audio compares with the reference: the aligned SNR over the whole reference,
/// the worst segment's, the offset and the frame counts.
struct AudioCheck: CustomStringConvertible {
    var snr: Double
    var worstSegmentSNR: Double
    var offset: Int
    var referenceFrames: Int
    var producedFrames: Int
    var description: String {
        "SNR \(dB(snr)) dB (worst segment \(dB(worstSegmentSNR)) dB), offset \(offset) frames, \(producedFrames) frames for \(referenceFrames)"
    }
}

/// Aligns `produced` with `reference` (both interleaved, `channels` channels).
func check(_ produced: [Float], against reference: [Float], channels: Int) -> AudioCheck? {
    guard let m = lossyAlign(recording: produced, reference: reference, channels: channels) else { return nil }
    return AudioCheck(snr: m.snr, worstSegmentSNR: m.worst?.snr ?? m.snr, offset: m.offset,
                      referenceFrames: reference.count / channels, producedFrames: produced.count / channels)
}

/// Runs a porting program against a private PulseAudio null sink at 44.1 kHz stereo
/// (`OAT_OUTPUT=pulse`) while its monitor is recorded; returns the run and the recording
/// (interleaved stereo float), taken 0.3 s after the program ended.
func playAtPulseSink(_ program: String, _ arguments: [String], timeout: Double = 60) throws -> (run: ProgramRun, recorded: [Float]) {
    let daemon = try PulseTestDaemon(sampleRate: 44100, channels: 2)
    defer { daemon.stop() }
    let recording = try daemon.recordMonitor(to: scratchPath("monitor.raw"))
    var env = daemon.environment
    env["OAT_OUTPUT"] = "pulse"
    let result = try run(try portingProgram(program), arguments, environment: env, timeout: timeout)
    usleep(300_000)
    return (result, recording.stop())
}

/// The frames from the first to the last one above -60 dBFS in any channel.
func soundingSpan(_ samples: [Float], channels: Int) -> Range<Int>? {
    let frames = samples.count / channels
    func loud(_ f: Int) -> Bool { (0..<channels).contains { abs(samples[f * channels + $0]) > 0.001 } }
    guard let first = (0..<frames).first(where: loud), let last = (0..<frames).last(where: loud) else { return nil }
    return first..<(last + 1)
}

/// The fundamental of `x` by normalised autocorrelation (60 Hz ... 1.2 kHz): the shortest lag
/// within 3 % of the best one, so a strong harmonic does not win. Unlike OATTestSupport's
/// `fundamentalFrequency(_:sampleRate:near:)` it assumes no expected pitch, so an octave error
/// shows.
func autocorrelationPitch(_ x: [Float], sampleRate: Double) -> Double {
    let minLag = Int(sampleRate / 1200), maxLag = Int(sampleRate / 60)
    guard x.count > maxLag * 2 else { return 0 }
    var scores: [Double] = Array(repeating: 0, count: maxLag + 1)
    let n = x.count - maxLag
    var energy = 0.0
    for i in 0..<n { energy += Double(x[i] * x[i]) }
    guard energy > 0 else { return 0 }
    for lag in minLag...maxLag {
        var s = 0.0, e2 = 0.0
        for i in 0..<n {
            s += Double(x[i] * x[i + lag])
            e2 += Double(x[i + lag] * x[i + lag])
        }
        scores[lag] = s / (energy * e2).squareRoot()
    }
    let best = scores[minLag...maxLag].max() ?? 0
    guard let lag = (minLag...maxLag).first(where: { scores[$0] >= best * 0.97 && ($0 == maxLag || scores[$0] >= scores[$0 + 1]) && scores[$0] >= scores[$0 - 1] })
    else { return 0 }
    // Parabolic refinement.
    let a = scores[lag - 1], b = scores[lag], c = scores[min(maxLag, lag + 1)]
    let shift = (a - c) / (2 * (a - 2 * b + c))
    return sampleRate / (Double(lag) + (shift.isFinite ? shift : 0))
}
