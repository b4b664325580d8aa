// timepitch-bench: the cost of TimePitchProcessor (Rubber Band R3 "spectral", R2 "time domain",
// varispeed) and VoiceProcessor (SpeexDSP) per render quantum, as a fraction of the quantum's
// real-time duration, and the allocations they make in their processing calls after warm-up
// (counted by the MallocCounter allocator shim on the calling thread; must be 0).
//
// Each case renders `--quanta` quanta of 512 frames (stereo 48 kHz; voice: mono) after 200
// warm-up quanta, in pull mode as a render-graph node drives it, changing the rate and pitch
// every 100 quanta (the lock-free parameter pick-up is part of what is measured).
// Usage: timepitch-bench [--quanta N] [--json]. Exit status 1 if anything allocated.

import OATProcessing
import BenchSupport
import MallocCounter
#if canImport(Glibc)
import Glibc
#endif

var quanta = 1000
var json = false
var args = CommandLine.arguments.dropFirst()
while let a = args.popFirst() {
    switch a {
    case "--quanta": quanta = Int(args.popFirst() ?? "") ?? quanta
    case "--json": json = true
    case "-h", "--help": print("usage: timepitch-bench [--quanta N] [--json]"); exit(0)
    default: print("timepitch-bench: unknown option \(a)"); exit(2)
    }
}

let window: Int32 = 1
// Check that the shim counts at all.
oat_mc_reset()
_ = oat_mc_set_flags(window)
let probe = [Int](repeating: 1, count: Int(getpid() % 3) + 64)
_ = oat_mc_set_flags(0)
guard probe.count > 0, oat_mc_count(window, 0) + oat_mc_count(window, 4) > 0 else {
    print("timepitch-bench: the allocator shim is not active; counts would be meaningless")
    exit(2)
}

/// CPU time of the calling thread, in seconds (robust against other processes on the machine).
func threadCPUSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

struct Row {
    var name: String
    var cpuFraction: Double = 0
    var microsecondsPerQuantum: Double
    var fractionOfRealTime: Double
    var allocations: Int
}

func allocationCount() -> Int {
    var n = 0
    // Every kind but free (kind 3).
    for k in Int32(0)..<5 where k != 3 { n += oat_mc_count(window, k) }
    return n
}

func timePitchCase(_ algorithm: TimePitchAlgorithm, rates: [Double], pitches: [Double], quanta: Int) throws -> Row {
    let frames = 512
    let channels = 2
    let rate = 48000.0
    let p = try TimePitchProcessor(sampleRate: rate, channels: channels, algorithm: algorithm, maximumFramesPerCall: 1024)
    let out = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: channels)
    for c in 0..<channels { out[c] = .allocate(capacity: frames) }
    var phase = 0.0
    func quantum() -> Int {
        p.render(into: UnsafePointer(out), frames: frames) { dest, want in
            for i in 0..<want {
                let v = Float(0.3 * sin(phase) + 0.1 * sin(phase * 2.7))
                phase += 2 * Double.pi * 220 / rate
                for c in 0..<channels { dest[c][i] = v }
            }
            return want
        }
    }
    try p.setRate(rates[0])
    try p.setPitch(cents: pitches[0])
    for _ in 0..<200 { _ = quantum() }
    oat_mc_reset()
    var elapsed = 0.0
    let cpu0 = threadCPUSeconds()
    for q in 0..<quanta {
        if q % 100 == 0 {
            try p.setRate(rates[(q / 100) % rates.count])
            try p.setPitch(cents: pitches[(q / 100) % pitches.count])
        }
        let t0 = monotonicSeconds()
        _ = oat_mc_set_flags(window)
        let n = quantum()
        _ = oat_mc_set_flags(0)
        elapsed += monotonicSeconds() - t0
        if n != frames { print("timepitch-bench: short quantum (\(n))"); exit(2) }
    }
    let cpu = threadCPUSeconds() - cpu0
    let allocations = allocationCount()
    for c in 0..<channels { out[c].deallocate() }
    out.deallocate()
    let per = elapsed / Double(quanta)
    let name = "time-pitch \(algorithm.rawValue), rates \(rates), pitch \(pitches) cents"
    return Row(name: name, cpuFraction: cpu / Double(quanta) / (Double(frames) / rate), microsecondsPerQuantum: per * 1e6,
               fractionOfRealTime: per / (Double(frames) / rate), allocations: allocations)
}

func voiceCase(sampleRate: Int, quanta: Int) throws -> Row {
    var s = VoiceProcessingSettings()
    s.sampleRate = sampleRate
    let vp = try VoiceProcessor(settings: s)
    let frames = 512
    let mic = UnsafeMutablePointer<Float>.allocate(capacity: frames)
    let ref = UnsafeMutablePointer<Float>.allocate(capacity: frames)
    let out = UnsafeMutablePointer<Float>.allocate(capacity: frames)
    defer { mic.deallocate(); ref.deallocate(); out.deallocate() }
    var seed: UInt32 = 1
    func fill() {
        for i in 0..<frames {
            seed = seed &* 1_664_525 &+ 1_013_904_223
            ref[i] = Float(Int32(bitPattern: seed)) / Float(Int32.max) * 0.3
            mic[i] = i >= 8 ? ref[i - 8] * 0.5 : 0
        }
    }
    for _ in 0..<200 { fill(); vp.process(microphone: mic, reference: ref, output: out, frames: frames) }
    oat_mc_reset()
    var elapsed = 0.0
    let cpu0 = threadCPUSeconds()
    for _ in 0..<quanta {
        fill()
        let t0 = monotonicSeconds()
        _ = oat_mc_set_flags(window)
        vp.process(microphone: mic, reference: ref, output: out, frames: frames)
        _ = oat_mc_set_flags(0)
        elapsed += monotonicSeconds() - t0
    }
    let per = elapsed / Double(quanta)
    let cpu = threadCPUSeconds() - cpu0
    return Row(name: "voice processing \(sampleRate) Hz mono (AEC 128 ms tail + noise/echo suppression)",
               cpuFraction: cpu / Double(quanta) / (Double(frames) / Double(sampleRate)),
               microsecondsPerQuantum: per * 1e6, fractionOfRealTime: per / (Double(frames) / Double(sampleRate)), allocations: allocationCount())
}

var rows: [Row] = []
do {
    rows.append(try timePitchCase(.spectral, rates: [0.75, 1.5], pitches: [0, 300], quanta: quanta))
    rows.append(try timePitchCase(.timeDomain, rates: [0.75, 1.5], pitches: [0, 300], quanta: quanta))
    rows.append(try timePitchCase(.varispeed, rates: [0.75, 1.5], pitches: [0, 300], quanta: quanta))
    rows.append(try timePitchCase(.spectral, rates: [1], pitches: [0], quanta: quanta))
    rows.append(try timePitchCase(.spectral, rates: [1.5], pitches: [0], quanta: quanta))
    rows.append(try timePitchCase(.timeDomain, rates: [1.5], pitches: [0], quanta: quanta))
    rows.append(try voiceCase(sampleRate: 16000, quanta: quanta))
    rows.append(try voiceCase(sampleRate: 48000, quanta: quanta))
} catch {
    print("timepitch-bench: \(error)")
    exit(2)
}
if json {
    let items = rows.map { "{\"case\": \"\($0.name)\", \"us_per_quantum\": \($0.microsecondsPerQuantum), \"fraction_of_real_time\": \($0.fractionOfRealTime), \"cpu_fraction_of_real_time\": \($0.cpuFraction), \"allocations\": \($0.allocations)}" }
    print("[" + items.joined(separator: ", ") + "]")
} else {
    print("| case (512-frame quanta, \(quanta) after warm-up) | wall µs per quantum | wall / real time | thread CPU / real time | allocations |")
    print("|---|---:|---:|---:|---:|")
    for r in rows {
        print("| \(r.name) | \(String(format1(r.microsecondsPerQuantum))) | \(String(format3(r.fractionOfRealTime))) | \(String(format3(r.cpuFraction))) | \(r.allocations) |")
    }
}
func format1(_ v: Double) -> String { String((v * 10).rounded() / 10) }
func format3(_ v: Double) -> String { String((v * 1000).rounded() / 1000) }
exit(rows.contains { $0.allocations > 0 } ? 1 : 0)
