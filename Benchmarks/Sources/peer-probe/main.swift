// peer-probe: runs one player command and measures, from a PulseAudio sink's monitor, the time from
// launch to the first non-silent sample at the sink, dropouts (silences inside the played audio),
// and from wait4 the player's CPU time; its peak RSS from /proc/PID/status VmHWM, sampled every
// 10 ms while it runs (wait4's ru_maxrss is not used: for a spawned child it starts at the
// spawning process's own RSS, about 19 MB for this Swift program, whatever the player uses). Prints one JSON object. Used by
// Scripts/bench-peers.sh; see docs/PERFORMANCE.md.
//
// usage: peer-probe --source NAME [--rate R] [--channels C] [--threshold T] [--duration S]
//                   [--gap-ms MS] [--label L] -- COMMAND ARGS...
// The PulseAudio server is taken from PULSE_SERVER. The monitor is recorded in 2 ms fragments;
// the capture time of each sample is estimated as (read return time - stream latency - frames
// after it / rate), so the figure has about +-2 ms of resolution.

import CPulseSimple
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("peer-probe: \(message)\n".utf8))
    exit(2)
}

func monotonicSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

struct Options {
    var source = ""
    var rate = 44100
    var channels = 2
    var threshold: Float = 0.001
    var duration: Double?
    var gapMs = 10.0
    var label = ""
    var command: [String] = []
}

func parse() -> Options {
    var o = Options()
    var args = Array(CommandLine.arguments.dropFirst())
    while let a = args.first {
        args.removeFirst()
        func value() -> String {
            guard let v = args.first else { fail("missing value for \(a)") }
            args.removeFirst()
            return v
        }
        switch a {
        case "--source": o.source = value()
        case "--rate": o.rate = Int(value()) ?? 44100
        case "--channels": o.channels = Int(value()) ?? 2
        case "--threshold": o.threshold = Float(value()) ?? 0.001
        case "--duration": o.duration = Double(value())
        case "--gap-ms": o.gapMs = Double(value()) ?? 10
        case "--label": o.label = value()
        case "--": o.command = args; args = []
        default: fail("unknown option \(a)")
        }
    }
    if o.source.isEmpty || o.command.isEmpty { fail("usage: peer-probe --source NAME [options] -- COMMAND ARGS...") }
    return o
}

/// What the monitor reader found; written by the reader thread, read after it stops.
struct Analysis {
    var frames: Int64 = 0
    var firstAudioFrame: Int64?
    var firstAudioTime: Double?
    var lastAudioFrame: Int64 = 0
    var silentRun: Int64 = 0
    var dropouts = 0
    var droppedFrames: Int64 = 0
    var sumSquares: Double = 0
    var audioFrames: Int64 = 0
}

final class Monitor: @unchecked Sendable {
    let handle: OpaquePointer
    let options: Options
    let stop = Atomic<Bool>(false)
    let result = Mutex(Analysis())
    var thread = pthread_t()

    init(options: Options) {
        self.options = options
        var spec = pa_sample_spec(format: PA_SAMPLE_FLOAT32LE, rate: UInt32(options.rate), channels: UInt8(options.channels))
        let fragment = UInt32(options.rate * options.channels * 4 * 2 / 1000)
        var attr = pa_buffer_attr(maxlength: UInt32.max, tlength: UInt32.max, prebuf: UInt32.max, minreq: UInt32.max, fragsize: fragment)
        var error: Int32 = 0
        guard let h = pa_simple_new(nil, "peer-probe", PA_STREAM_RECORD, options.source, "monitor", &spec, nil, &attr, &error) else {
            fail("cannot record \(options.source): \(String(cString: pa_strerror(error)))")
        }
        handle = h
    }

    func run() {
        let channels = options.channels
        let framesPerRead = max(1, options.rate * 2 / 1000)
        var buffer = [Float](repeating: 0, count: framesPerRead * channels)
        let gapFrames = Int64(options.gapMs / 1000 * Double(options.rate))
        let rate = Double(options.rate)
        let threshold = options.threshold
        while !stop.load(ordering: .relaxed) {
            var error: Int32 = 0
            let ok = buffer.withUnsafeMutableBytes { pa_simple_read(handle, $0.baseAddress, $0.count, &error) }
            if ok < 0 { break }
            let now = monotonicSeconds()
            let latency = Double(pa_simple_get_latency(handle, &error)) / 1e6
            result.withLock { a in
                let endTime = now - latency
                let base = a.frames
                for f in 0..<framesPerRead {
                    var peak: Float = 0
                    for c in 0..<channels { peak = max(peak, abs(buffer[f * channels + c])) }
                    let index = base + Int64(f)
                    if peak > threshold {
                        if a.firstAudioFrame == nil {
                            a.firstAudioFrame = index
                            a.firstAudioTime = endTime - Double(Int64(framesPerRead) - Int64(f)) / rate
                        } else if a.silentRun >= gapFrames {
                            a.dropouts += 1
                            a.droppedFrames += a.silentRun
                        }
                        a.silentRun = 0
                        a.lastAudioFrame = index
                    } else if a.firstAudioFrame != nil {
                        a.silentRun += 1
                    }
                    if a.firstAudioFrame != nil {
                        a.audioFrames += 1
                        for c in 0..<channels { a.sumSquares += Double(buffer[f * channels + c] * buffer[f * channels + c]) }
                    }
                }
                a.frames += Int64(framesPerRead)
            }
        }
    }
}

let options = parse()
let monitor = Monitor(options: options)
let box = Unmanaged.passRetained(monitor)
pthread_create(&monitor.thread, nil, { arg in
    Unmanaged<Monitor>.fromOpaque(arg!).takeUnretainedValue().run()
    return nil
}, box.toOpaque())
// Let the recording settle, then launch.
usleep(400_000)
let before = monitor.result.withLock { $0.firstAudioFrame }
if before != nil { fail("the sink was not silent before the player started") }

var pid: pid_t = 0
var fileActions = posix_spawn_file_actions_t()
posix_spawn_file_actions_init(&fileActions)
posix_spawn_file_actions_addopen(&fileActions, 0, "/dev/null", O_RDONLY, 0)
posix_spawn_file_actions_addopen(&fileActions, 1, "/dev/null", O_WRONLY, 0)
posix_spawn_file_actions_addopen(&fileActions, 2, "/dev/null", O_WRONLY, 0)
let argv: [UnsafeMutablePointer<CChar>?] = options.command.map { strdup($0) } + [nil]
let launch = monotonicSeconds()
let spawned = posix_spawnp(&pid, options.command[0], &fileActions, nil, argv, environ)
if spawned != 0 { fail("cannot start \(options.command[0]): \(String(cString: strerror(spawned)))") }
/// The player's peak resident set (kB) so far, from its mm's high-water mark.
func highWaterKB(_ pid: pid_t) -> Int? {
    let fd = open("/proc/\(pid)/status", O_RDONLY)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var buffer = [UInt8](repeating: 0, count: 4096)
    let n = read(fd, &buffer, buffer.count)
    guard n > 0 else { return nil }
    let text = String(decoding: buffer[0..<n], as: UTF8.self)
    guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }) else { return nil }
    return Int(line.dropFirst(6).filter { $0.isNumber })
}
let peakRSS = Atomic<Int>(0)
let sampling = Atomic<Bool>(true)
do {
    let target = pid
    DispatchQueue.global().async {
        while sampling.load(ordering: .relaxed) {
            if let kb = highWaterKB(target), kb > peakRSS.load(ordering: .relaxed) { peakRSS.store(kb, ordering: .relaxed) }
            usleep(10_000)
        }
    }
}
if let d = options.duration {
    let target = pid
    DispatchQueue.global().asyncAfter(deadline: .now() + d) {
        if let kb = highWaterKB(target), kb > peakRSS.load(ordering: .relaxed) { peakRSS.store(kb, ordering: .relaxed) }
        kill(target, SIGTERM)
    }
    DispatchQueue.global().asyncAfter(deadline: .now() + d + 5) { kill(target, SIGKILL) }
}
var status: Int32 = 0
var usage = rusage()
while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
sampling.store(false, ordering: .relaxed)
let exited = monotonicSeconds()
usleep(300_000)
monitor.stop.store(true, ordering: .relaxed)
pthread_join(monitor.thread, nil)
pa_simple_free(monitor.handle)

let a = monitor.result.withLock { $0 }
let cpu = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
let played = a.firstAudioFrame.map { Double(a.lastAudioFrame - $0 + 1) / Double(options.rate) } ?? 0
let ttfa = a.firstAudioTime.map { ($0 - launch) * 1000 }
let exitCode: Int32 = (status & 0x7f) == 0 ? (status >> 8) & 0xff : -(status & 0x7f)
let rms = a.audioFrames > 0 ? (a.sumSquares / Double(a.audioFrames * Int64(options.channels))).squareRoot() : 0
func num(_ v: Double?) -> String { v.map { String(format: "%.3f", $0) } ?? "null" }
print("""
{"label":"\(options.label)","ttfa_ms":\(num(ttfa)),"cpu_s":\(num(cpu)),"wall_s":\(num(exited - launch)),\
"played_s":\(num(played)),"maxrss_kb":\(peakRSS.load(ordering: .relaxed)),"dropouts":\(a.dropouts),\
"dropped_ms":\(num(Double(a.droppedFrames) / Double(options.rate) * 1000)),"rms":\(num(rms)),"exit":\(exitCode)}
""")
