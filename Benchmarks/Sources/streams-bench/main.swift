// streams-bench: how many 128 kbps MP3 streams one core can decode and mix in real time.
//
// N streams play at once, offline (no device: the "null sink" is a mix buffer that is discarded).
// Each stream has its own AudioFileStream parser and AudioConverter (libavcodec MP3 decoder, to
// Float32 stereo at 44.1 kHz), fed from an in-memory copy of the same MP3 that each stream starts at
// a different offset, exactly as a player would feed them from the network. Every quantum of 1024
// frames, each stream parses as many bytes as it needs, decodes, and is summed with a per-stream
// gain into the master buffer. All on one thread: the CPU time of that thread
// (CLOCK_THREAD_CPUTIME_ID) for S seconds of audio gives the real-time factor, and
// streams-in-real-time = N x (S / CPU seconds). See docs/PERFORMANCE.md.
//
// usage: streams-bench [--streams N] [--seconds S] [--json]

import OATConversion
import OATCore
import OATFiles
import Foundation
#if canImport(Glibc)
import Glibc
#endif

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("streams-bench: \(message)\n".utf8))
    exit(2)
}

var streamCount = 500
var seconds = 20.0
var json = false
var args = Array(CommandLine.arguments.dropFirst())
while let a = args.first {
    args.removeFirst()
    switch a {
    case "--streams": streamCount = Int(args.removeFirst()) ?? 500
    case "--seconds": seconds = Double(args.removeFirst()) ?? 20
    case "--json": json = true
    case "-h", "--help":
        print("usage: streams-bench [--streams N] [--seconds S] [--json]")
        exit(0)
    default: fail("unknown option \(a)")
    }
}

// The input: 60 s of a two-tone signal with noise, 128 kbps CBR MP3, made with ffmpeg once.
let input = "/tmp/oat-streams-bench/signal-128k.mp3"
if access(input, R_OK) != 0 {
    mkdir("/tmp/oat-streams-bench", 0o755)
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
    p.arguments = ["-hide_banner", "-loglevel", "error", "-nostdin", "-y", "-f", "lavfi", "-i",
                   "aevalsrc=0.2*sin(2*PI*440*t)+0.05*sin(2*PI*3000*t)|0.2*sin(2*PI*660*t)+0.05*sin(2*PI*5000*t):s=44100:d=60",
                   "-c:a", "libmp3lame", "-b:a", "128k", input]
    do { try p.run() } catch { fail("cannot run ffmpeg: \(error)") }
    p.waitUntilExit()
    if p.terminationStatus != 0 { fail("ffmpeg failed making \(input)") }
}
guard let data = FileManager.default.contents(atPath: input) else { fail("cannot read \(input)") }
let bytes = [UInt8](data)

let quantum = 1024
let out = AudioStreamBasicDescription.linearPCM(sampleRate: 44100, channels: 2, bitsPerChannel: 32, isFloat: true)

final class Stream {
    let parser = AudioFileStream(fileTypeHint: nil)
    var converter: AudioConverter?
    var position: Int
    let buffer: AudioPCMBuffer
    let gain: Float
    var pending: [AudioPacketBatch] = []

    init(start: Int, gain: Float) throws(AudioError) {
        position = start
        self.gain = gain
        buffer = try AudioPCMBuffer(format: out, frameCapacity: quantum)
    }

    /// Parses and decodes until `quantum` frames are available; returns the frames read into `buffer`.
    func render(_ source: [UInt8]) throws -> Int {
        while true {
            if let c = converter, c.bufferedFrameCount >= quantum { break }
            if position >= source.count { position = 0 }
            let n = min(4096, source.count - position)
            var batches: [AudioPacketBatch] = []
            try source.withUnsafeBytes { raw in
                try parser.parse(UnsafeRawBufferPointer(rebasing: raw[position..<position + n])) { event in
                    if case .packets(let b) = event { batches.append(b) }
                }
            }
            position += n
            if converter == nil, let format = parser.dataFormat, parser.isReadyToProducePackets {
                converter = try AudioConverter(from: format, to: out, magicCookie: parser.magicCookie)
            }
            if let c = converter {
                for b in batches { try c.decode(b) }
            }
        }
        return converter!.read(into: buffer, maxFrames: quantum)
    }
}

var streams: [Stream] = []
do {
    for i in 0..<streamCount {
        // Start each stream at a different point of the file (the parser resynchronises).
        let start = (bytes.count / max(1, streamCount)) * i
        streams.append(try Stream(start: start, gain: 1 / Float(streamCount)))
    }
} catch { fail("\(error)") }

var master = [Float](repeating: 0, count: quantum * 2)
func threadCPU() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

@MainActor func renderQuanta(_ count: Int) {
    for _ in 0..<count {
        for i in 0..<master.count { master[i] = 0 }
        for s in streams {
            let frames: Int
            do { frames = try s.render(bytes) } catch { fail("stream failed: \(error)") }
            let pcm = s.buffer.mutableBytes(0).bindMemory(to: Float.self)
            let g = s.gain
            master.withUnsafeMutableBufferPointer { m in
                for i in 0..<(frames * 2) { m[i] += pcm[i] * g }
            }
        }
    }
}

// Warm-up: one second (every stream opens its decoder and fills its converter).
renderQuanta(Int(44100 / Double(quantum)))
let quanta = Int(seconds * 44100 / Double(quantum))
let audioSeconds = Double(quanta * quantum) / 44100
let cpuStart = threadCPU()
let wallStart = Date()
renderQuanta(quanta)
let cpu = threadCPU() - cpuStart
let wall = Date().timeIntervalSince(wallStart)
var peak: Float = 0
for v in master { peak = max(peak, abs(v)) }
let factor = audioSeconds / cpu
let realTimeStreams = Double(streamCount) * factor
let resident = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8))?
    .split(separator: "\n").first { $0.hasPrefix("VmHWM") }.map(String.init) ?? "?"
if json {
    print("{\"streams\":\(streamCount),\"audio_s\":\(audioSeconds),\"cpu_s\":\(cpu),\"wall_s\":\(wall),\"realtime_factor\":\(factor),\"streams_in_realtime_one_core\":\(Int(realTimeStreams)),\"master_peak\":\(peak)}")
} else {
    print("| streams | audio, s | CPU, s (one thread) | x real time | streams in real time on one core | per-stream cost, % of one core | peak RSS |")
    print("|---|---|---|---|---|---|---|")
    print(String(format: "| %d | %.1f | %.2f | %.2f | %d | %.3f | %@ |", streamCount, audioSeconds, cpu, factor, Int(realTimeStreams),
                 100 * cpu / audioSeconds / Double(streamCount), resident.replacingOccurrences(of: "VmHWM:", with: "").trimmingCharacters(in: .whitespaces)))
}
if peak == 0 { fail("the mix is silent: nothing was decoded") }
