// graph-bench: renders a realistic OATUnits graph — 8 players, each through a 10-band
// graphic EQ and a compressor, into an 8-input mixer, then a limiter, to the output — for
// many quanta after warm-up, counting C-allocator calls on the render thread (MallocCounter)
// and timing every render call. Meanwhile a control thread sweeps parameters (volumes, pans,
// EQ gains, compressor thresholds) and commits a graph edit (a gain node inserted before the
// limiter and removed again) every 100 ms, so plan swaps happen under measurement. The
// players are fed by their own feeder threads (a tone each); the render thread waits until
// every player holds a quantum so the cost measured is that of real audio. Exit status 1 if
// anything was allocated on the render thread. See docs/benchmarks.md.

import OATCore
import OATUnits
import BenchSupport
import Foundation
import MallocCounter
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

struct Options {
    var quanta = 20000
    var frames = 256
    var warmup = 200
    var players = 8
    var input = false
    var inputRate = 48000
    var json = false
    static let usage = """
    usage: graph-bench [--quanta N] [--frames N] [--warmup N] [--players N] [--input] [--input-rate HZ] [--json]
      --quanta N   render calls counted and timed after warm-up (default 20000)
      --frames N   frames per render call (the quantum, default 256 at 48 kHz)
      --warmup N   render calls before counting (default 200)
      --players N  player inputs (default 8)
      --input      one more mixer input: an AUInputNode (the microphone) whose ring a feeder
                   thread fills in 240-frame captures, as an input device's thread would
      --input-rate HZ  the microphone captures at HZ (default 48000, the graph rate; e.g. 16000:
                   the node converts to the graph rate on the render thread); implies --input
    Exit status: 0 when no allocation was counted on the render thread, 1 otherwise, 2 on errors.
    """
    static func parse(_ args: [String]) -> Options {
        var o = Options()
        var i = 0
        func value() -> Int {
            i += 1
            guard i < args.count, let v = Int(args[i]), v > 0 else { note("graph-bench: bad value\n\(usage)"); exit(2) }
            return v
        }
        while i < args.count {
            switch args[i] {
            case "--quanta": o.quanta = value()
            case "--frames": o.frames = value()
            case "--warmup": o.warmup = value()
            case "--players": o.players = value()
            case "--input": o.input = true
            case "--input-rate": o.inputRate = value(); o.input = true
            case "--json": o.json = true
            case "-h", "--help": print(usage); exit(0)
            default: note("graph-bench: unknown argument \(args[i])\n\(usage)"); exit(2)
            }
            i += 1
        }
        return o
    }
}

let options = Options.parse(Array(CommandLine.arguments.dropFirst()))
let rate = 48000.0
/// With --input: the microphone node (see startMicrophoneFeeder).
let microphone: AUInputNode? = options.input ? AUInputNode(channels: 2, capacityFrames: 8192, inputSampleRate: Double(options.inputRate)) : nil

// The shim must be active.
oat_mc_reset()
_ = oat_mc_set_flags(3)
let probe = [Int](repeating: 1, count: Int(getpid() % 5) + 100)
_ = oat_mc_set_flags(0)
guard probe.count > 0, oat_mc_count(1, 0) + oat_mc_count(1, 4) > 0 else {
    note("graph-bench: the allocator shim is not active"); exit(2)
}
oat_mc_reset()

func build() throws(AudioError) -> (AudioGraph, [AUPlayerNode], [AUNBandEQNode], [AUDynamicsNode], AUMixerNode, AUPeakLimiterNode) {
    let g = try AudioGraph(sampleRate: rate, channels: 2, maxFramesPerSlice: max(options.frames, 256))
    let mixer = AUMixerNode(inputs: options.players + (options.input ? 1 : 0), inputChannels: 2, outputChannels: 2)
    let limiter = AUPeakLimiterNode(channels: 2, ceiling: -1)
    try g.add(mixer)
    try g.add(limiter)
    var players: [AUPlayerNode] = [], eqs: [AUNBandEQNode] = [], comps: [AUDynamicsNode] = []
    for i in 0..<options.players {
        let p = AUPlayerNode(channels: 2, bufferFrames: 16384, name: "player \(i)")
        let eq = AUNBandEQNode.graphic(channels: 2, gains: [4, 2, 0, -1, 0, 1, 2, 0, -2, 3], name: "eq \(i)")
        let comp = AUDynamicsNode(channels: 2, threshold: -18, ratio: 3, name: "comp \(i)")
        for n in [p, eq, comp] as [RenderNode] { try g.add(n) }
        try g.connect(p, to: eq)
        try g.connect(eq, to: comp)
        try g.connect(comp, to: mixer, input: i)
        players.append(p); eqs.append(eq); comps.append(comp)
    }
    if let microphone {
        try g.add(microphone)
        try g.connect(microphone, to: mixer, input: options.players)
    }
    try g.connect(mixer, to: limiter)
    try g.connect(limiter, to: g.output)
    try g.commit()
    return (g, players, eqs, comps, mixer, limiter)
}

/// With --input: the microphone node's feeder (a tone in 240-frame captures, topping the ring
/// up to 4096 frames; its own thread, not counted).
let feederRunning = Atomic<Bool>(true)
func startMicrophoneFeeder(_ node: AUInputNode) {
    let t = Thread {
        var capture = [Float](repeating: 0, count: 480)
        var n = 0
        while feederRunning.load(ordering: .relaxed) {
            if node.statistics.fillFrames < 4096 {
                for f in 0..<240 {
                    let v = Float(0.2 * sin(2 * Double.pi * 300 * Double(n + f) / Double(options.inputRate)))
                    capture[2 * f] = v
                    capture[2 * f + 1] = v
                }
                capture.withUnsafeBufferPointer { node.write($0, frames: 240) }
                n += 240
            } else {
                usleep(100)
            }
        }
    }
    t.start()
}

let graph: AudioGraph, players: [AUPlayerNode], eqs: [AUNBandEQNode], comps: [AUDynamicsNode], mixer: AUMixerNode, limiter: AUPeakLimiterNode
do { (graph, players, eqs, comps, mixer, limiter) = try build() } catch { note("graph-bench: \(error)"); exit(2) }

// Feeders: a tone per player (their own threads; not counted). Closures made in global
// functions, not in top-level code (which would tie them to the main actor).
func tone(frequency freq: Double) -> AUPlayerNode.Pull {
    let phase = Mutex(0.0)
    return { buffer in
        phase.withLock { ph in
            let n = buffer.count / 2
            for f in 0..<n {
                let v = Float(0.3 * sin(ph))
                buffer[2 * f] = v
                buffer[2 * f + 1] = v * 0.8
                ph += 2 * Double.pi * freq / rate
            }
            return n
        }
    }
}
for (i, p) in players.enumerated() { p.play(from: tone(frequency: 110.0 * Double(i + 1)), chunkFrames: 2048) }
if let microphone { startMicrophoneFeeder(microphone) }

// Control thread: parameter sweeps and graph edits.
final class Control: @unchecked Sendable {
    let running = Atomic<Bool>(true)
    let finished = Atomic<Bool>(false)
    let edits = Atomic<Int>(0)
    let graph: AudioGraph, players: [AUPlayerNode], eqs: [AUNBandEQNode], comps: [AUDynamicsNode], mixer: AUMixerNode, limiter: AUPeakLimiterNode
    init(_ graph: AudioGraph, _ players: [AUPlayerNode], _ eqs: [AUNBandEQNode], _ comps: [AUDynamicsNode], _ mixer: AUMixerNode, _ limiter: AUPeakLimiterNode) {
        self.graph = graph; self.players = players; self.eqs = eqs; self.comps = comps; self.mixer = mixer; self.limiter = limiter
    }
    func run() {
        var step = 0
        let extra = AUGainNode(channels: 2, gain: 0.9, name: "edit gain")
        while running.load(ordering: .relaxed) {
            step += 1
            for i in players.indices {
                mixer.volume(input: i).value = 0.5 + 0.3 * Float(sin(Double(step + i) * 0.1))
                mixer.pan(input: i).value = Float(sin(Double(step * (i + 1)) * 0.05))
                eqs[i].gain(step % 10).value = Float(step % 7) - 3
                comps[i].threshold.value = -18 - Float(step % 5)
            }
            if step % 10 == 0 {
                do {
                    if (step / 10) % 2 == 1 {
                        try graph.add(extra)
                        graph.disconnect(graph.output)
                        try graph.connect(limiter, to: extra)
                        try graph.connect(extra, to: graph.output)
                    } else {
                        try graph.remove(extra)
                        try graph.connect(limiter, to: graph.output)
                    }
                    try graph.commit()
                    edits.add(1, ordering: .relaxed)
                } catch { note("graph-bench: edit failed: \(error)") }
            }
            usleep(10_000)
        }
        finished.store(true, ordering: .releasing)
    }
}
let controller = Control(graph, players, eqs, comps, mixer, limiter)
func startControl(_ c: Control) {
    let t = Thread { c.run() }
    t.start()
}
startControl(controller)



// Render thread: this one.
let channels = 2
let frames = options.frames
let pointers = UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>.allocate(capacity: channels)
for c in 0..<channels { pointers[c] = .allocate(capacity: frames) }
var times = [Double](repeating: 0, count: options.quanta)
var waited = 0
var peak: Float = 0
for q in 0..<(options.warmup + options.quanta) {
    if q == options.warmup { _ = oat_mc_set_flags(3) }
    // Wait (outside the timing) until every player holds a quantum.
    var ready = false
    while !ready {
        ready = true
        for p in players where p.bufferedFrames < frames { ready = false }
        if let microphone, microphone.statistics.fillFrames < frames * options.inputRate / Int(rate) + microphone.safetyFrames + 244 { ready = false }
        if !ready { waited += 1; _ = oat_mc_set_flags(0); usleep(200); if q >= options.warmup { _ = oat_mc_set_flags(3) } }
    }
    let t0 = HostTime.now()
    graph.render(into: pointers, frames: frames)
    let t1 = HostTime.now()
    if q >= options.warmup {
        times[q - options.warmup] = HostTime.seconds(ticks: t1 - t0)
        for f in 0..<frames { peak = max(peak, abs(pointers[0][f])) }
    }
}
_ = oat_mc_set_flags(0)
controller.running.store(false, ordering: .relaxed)
while !controller.finished.load(ordering: .acquiring) { usleep(1000) }
for p in players { p.stop() }
feederRunning.store(false, ordering: .relaxed)
if let microphone { note("graph-bench: input node: \(microphone.statistics)") }

let names = ["malloc", "calloc", "realloc", "free", "memalign"]
var allocations: [String: Int] = [:]
var total = 0
for (k, name) in names.enumerated() {
    let n = oat_mc_count(1, Int32(k))
    if n > 0 { allocations[name] = n }
    total += n
}
let sorted = times.sorted()
let quantum = Double(frames) / rate
let mean = times.reduce(0, +) / Double(times.count)
let p99 = sorted[min(sorted.count - 1, Int(Double(sorted.count) * 0.99))]
let worst = sorted.last ?? 0
let underruns = players.map(\.underrunCount).reduce(0, +)

struct Result: Codable {
    var quanta: Int, framesPerQuantum: Int, sampleRate: Double, players: Int
    var meanMicroseconds: Double, p99Microseconds: Double, maxMicroseconds: Double
    var meanFractionOfRealTime: Double, p99FractionOfRealTime: Double
    var allocations: Int, allocationKinds: [String: Int], graphEdits: Int, playerUnderruns: Int, outputPeak: Float
}
let result = Result(quanta: options.quanta, framesPerQuantum: frames, sampleRate: rate, players: options.players,
                    meanMicroseconds: mean * 1e6, p99Microseconds: p99 * 1e6, maxMicroseconds: worst * 1e6,
                    meanFractionOfRealTime: mean / quantum, p99FractionOfRealTime: p99 / quantum,
                    allocations: total, allocationKinds: allocations, graphEdits: controller.edits.load(ordering: .relaxed),
                    playerUnderruns: underruns, outputPeak: peak)
if options.json {
    let e = JSONEncoder()
    e.outputFormatting = [.prettyPrinted, .sortedKeys]
    print(String(decoding: try! e.encode(result), as: UTF8.self))
} else {
    print("| graph | quanta | frames/quantum | mean µs | p99 µs | max µs | mean cost (fraction of real time) | p99 cost | render-thread allocations | graph edits during run |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    print("| \(options.players) players → 10-band EQ → compressor → mixer → limiter | \(options.quanta) | \(frames) (\(String(format: "%.2f", quantum * 1000)) ms) | \(String(format: "%.1f", mean * 1e6)) | \(String(format: "%.1f", p99 * 1e6)) | \(String(format: "%.1f", worst * 1e6)) | \(String(format: "%.3f", mean / quantum)) | \(String(format: "%.3f", p99 / quantum)) | \(total) | \(controller.edits.load(ordering: .relaxed)) |")
    if total > 0 {
        var addresses = [UnsafeMutableRawPointer?](repeating: nil, count: 64)
        var kinds = [Int32](repeating: 0, count: 64)
        let n = Int(oat_mc_callers(&addresses, 64, &kinds))
        for i in 0..<min(n, 16) {
            let a = addresses[i]
            print("  \(names[Int(kinds[i])]) from \(a.flatMap { oat_mc_symbol_name($0) }.map { String(cString: $0) } ?? "?")")
        }
    }
    print("\nplayer underruns: \(underruns), output peak \(peak), render-thread allocations: \(total == 0 ? "none" : "FOUND (fail)")")
}
exit(total == 0 ? 0 : 1)
