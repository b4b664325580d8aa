// render-alloc-bench: counts C-allocator calls (malloc, calloc, realloc, free, memalign family)
// made on the render thread of an AudioOutputQueue after warm-up, through the real render entry
// points: QueueRenderer.render as each device calls it, and each device's own render loop.
//
// The MallocCounter target interposes the allocator for the whole process; only threads that
// opt in are counted. Each device's render callback is wrapped (ProbedDevice): after a few
// warm-up calls on that device thread the wrapper opens a counting window on the thread which
// stays open between calls (so the device loop's own code counts too) until the render returns
// end of stream. Inside the queue's callback a second flag is set, so allocations made by
// QueueRenderer.render itself are counted apart. The control side meanwhile ramps volume,
// sweeps pan, reads meters, starves the queue (underruns), resets it, delays the start and ends
// the stream. Exit status 1 if anything was allocated on the render path. See docs/benchmarks.md.

import OATCore
import OATDevices
import OATQueueEngine
import BenchSupport
import Foundation
import MallocCounter
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Keeps the self-test's allocation from being optimised away.
let leakSink = Atomic<Int>(0)
let windowFlag: Int32 = 1
let callbackFlag: Int32 = 2

// MARK: Probing a device's render thread

/// Per device: wraps its render callback and opens/closes the counting window on its thread.
/// Its counters are touched only by that device thread (read after the device stopped).
final class Probe: @unchecked Sendable {
    let warmupCalls: Int
    let counting: Bool
    var calls = 0
    var measuredCalls = 0
    var measuredFrames = 0
    var requestedFrames = 0
    var endOfStream = 0
    var firstCall: UInt64 = 0
    var lastCall: UInt64 = 0
    var trace = [UInt64](repeating: 0, count: 64)
    /// Self-test: allocate inside the render callback, which the counters must catch.
    var leak = false
    private var open = false
    private var closed = false

    init(warmupCalls: Int, counting: Bool) {
        self.warmupCalls = warmupCalls
        self.counting = counting
    }

    func wrap(_ render: @escaping AudioRenderCallback) -> AudioRenderCallback {
        { [self] buffers, frames, time in
            calls += 1
            if calls == 1 { firstCall = HostTime.now() }
            if calls < 64 { trace[calls] = (HostTime.now() - firstCall) / 1_000_000 }
            lastCall = HostTime.now()
            if counting && !open && !closed && calls > warmupCalls {
                open = true
                _ = oat_mc_set_flags(windowFlag)
            }
            if open { _ = oat_mc_set_flags(windowFlag | callbackFlag) }
            let result = render(buffers, frames, time)
            if leak { leakSink.store(ContiguousArray<Int>(repeating: calls, count: 4 + calls % 3).count, ordering: .relaxed) }
            if open {
                _ = oat_mc_set_flags(windowFlag)
                measuredCalls += 1
                measuredFrames += result.frames
                requestedFrames += frames
                if result.isEndOfStream {
                    endOfStream += 1
                    _ = oat_mc_set_flags(0)
                    open = false
                    closed = true
                }
            }
            return result
        }
    }
}

/// A device that forwards everything to `inner`, wrapping the render callback with a probe.
final class ProbedDevice: AudioOutputDevice {
    let inner: any AudioOutputDevice
    let probe: Probe
    init(_ inner: any AudioOutputDevice, _ probe: Probe) {
        self.inner = inner
        self.probe = probe
    }
    var name: String { inner.name }
    var format: AudioDeviceFormat { inner.format }
    var framesPerRender: Int { inner.framesPerRender }
    var isRealTime: Bool { inner.isRealTime }
    var latency: Double { inner.latency }
    var playedFrames: Int64 { inner.playedFrames }
    var renderedFrames: Int64 { inner.renderedFrames }
    func start(_ render: @escaping AudioRenderCallback) throws(AudioError) { try inner.start(probe.wrap(render)) }
    func pause() throws(AudioError) { try inner.pause() }
    func resume() throws(AudioError) { try inner.resume() }
    func stop(drain: Bool) { inner.stop(drain: drain) }
    func close() { inner.close() }
    func takeEvents() -> [AudioDeviceEvent] { inner.takeEvents() }
    var droppedEventCount: Int { inner.droppedEventCount }
}

/// A device of our own whose thread asks for irregular frame counts (1 to 9000, beyond the
/// renderer's 8192-frame limit), paced by the host clock, so partial reads of the ring and
/// odd sizes are exercised in a way no real backend does.
final class IrregularDevice: AudioOutputDevice, @unchecked Sendable {
    let name = "irregular"
    let format: AudioDeviceFormat
    let framesPerRender = 9000
    var latency: Double { 0 }
    private let rendered = Atomic<Int64>(0)
    private let running = Atomic<Bool>(false)
    private let events = AudioDeviceEventQueue()
    private let pointers: UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>
    private var thread: pthread_t?
    private var render: AudioRenderCallback?
    static let sizes = [1024, 441, 4096, 64, 9000, 1, 2048, 333, 8192, 17]

    init(format: AudioDeviceFormat) {
        self.format = format
        pointers = .allocate(capacity: format.channels)
        for c in 0..<format.channels {
            pointers[c] = .allocate(capacity: 9000)
            pointers[c].initialize(repeating: 0, count: 9000)
        }
    }

    deinit {
        stop(drain: false)
        for p in pointers { p.deallocate() }
        pointers.deallocate()
    }

    var playedFrames: Int64 { rendered.load(ordering: .acquiring) }
    var renderedFrames: Int64 { rendered.load(ordering: .acquiring) }

    func start(_ render: @escaping AudioRenderCallback) throws(AudioError) {
        self.render = render
        running.store(true, ordering: .releasing)
        var t = pthread_t()
        let box = Unmanaged.passRetained(self)
        guard pthread_create(&t, nil, { raw in
            let device = Unmanaged<IrregularDevice>.fromOpaque(raw!).takeRetainedValue()
            device.run()
            return nil
        }, box.toOpaque()) == 0 else {
            box.release()
            throw AudioError(.deviceUnavailable, component: "IrregularDevice", "pthread_create failed")
        }
        thread = t
    }

    private func run() {
        guard let render else { return }
        events.post(.started)
        var deadline = HostTime.now()
        var i = 0
        while running.load(ordering: .acquiring) {
            let frames = IrregularDevice.sizes[i % IrregularDevice.sizes.count]
            i += 1
            let done = rendered.load(ordering: .relaxed)
            let time = AudioTimeStamp(sampleTime: Double(done), hostTime: deadline, rateScalar: 1, flags: .sampleHostTimeValid)
            let result = render(pointers, frames, time)
            rendered.add(Int64(result.isEndOfStream ? result.frames : frames), ordering: .releasing)
            if result.isEndOfStream {
                events.post(.drained)
                break
            }
            deadline += UInt64(Double(frames) / format.sampleRate * 1e9)
            var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
            while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
        }
    }

    func pause() throws(AudioError) { throw AudioError(.invalidState, component: "IrregularDevice", "no pause") }
    func resume() throws(AudioError) { throw AudioError(.invalidState, component: "IrregularDevice", "no pause") }
    func stop(drain: Bool) {
        running.store(false, ordering: .releasing)
        if let t = thread, pthread_equal(t, pthread_self()) == 0 { pthread_join(t, nil) }
        thread = nil
    }
    func close() { stop(drain: false) }
    func takeEvents() -> [AudioDeviceEvent] { events.take() }
    var droppedEventCount: Int { events.droppedCount }
}

// MARK: Options

struct Options {
    var cycles = 3
    var seconds = 2.0
    var warmupCalls = 8
    var kinds = ["self-test", "irregular", "null", "alsa", "pulse", "avengine-null", "avengine-alsa", "avengine-pulse", "players-null"]
    var json = false

    static let usage = """
    usage: render-alloc-bench [--cycles N] [--seconds S] [--warmup-calls N] [--json] [KIND...]
      KIND: self-test irregular null alsa pulse avengine-null avengine-alsa avengine-pulse players-null
            (default: all; pulse and avengine-pulse start a private daemon). avengine-* play an
            AVAudioEngine graph (player -> EQ -> reverb -> main mixer, plus a 44.1 kHz source
            node resampled by the mixer) on that device for cycles x seconds. players-null plays
            a C API AUGraph (ScheduledSoundPlayer and AudioFilePlayer -> mixer) on the null
            device while slices are rescheduled, the slice player is reset and file regions
            are set after the file player ran dry.
            self-test is irregular with an array allocated in every render callback: the
            counters must report it (it fails when they do not)
      --cycles N        play cycles per device kind; the first is warm-up, not counted (default 3)
      --seconds S       length of each cycle (default 2)
      --warmup-calls N  render calls on each new device thread before counting (default 8)
    Exit status: 0 when no allocation made by Swift code was counted on any render path (and the
    self-test's were), 1 otherwise, 2 on errors. Allocations libpulse makes on its own main-loop
    thread (reading server messages) are listed but are not ours.
    """

    static func parse(_ args: [String]) -> Options {
        var o = Options()
        var i = 0
        var kinds: [String] = []
        func value() -> String {
            i += 1
            guard i < args.count else { fatal("missing value for \(args[i - 1])") }
            return args[i]
        }
        while i < args.count {
            switch args[i] {
            case "--cycles": o.cycles = max(2, Int(value()) ?? 3)
            case "--seconds": o.seconds = max(0.5, Double(value()) ?? 2)
            case "--warmup-calls": o.warmupCalls = max(0, Int(value()) ?? 8)
            case "--json": o.json = true
            case "-h", "--help": print(usage); exit(0)
            case let a where a.hasPrefix("-"): fatal("unknown option \(a)\n\(usage)")
            case let a: kinds.append(a)
            }
            i += 1
        }
        if !kinds.isEmpty { o.kinds = kinds }
        return o
    }
}

func fatal(_ message: String) -> Never {
    note("render-alloc-bench: \(message)")
    exit(2)
}

// MARK: Scenario

struct KindResult: Codable {
    var kind: String
    var device: String
    var skipped: String?
    var measuredCalls = 0
    var measuredFrames = 0
    var requestedFrames = 0
    var underruns = 0
    var endOfStream = 0
    var callbackAllocations = 0
    var windowAllocations: [String: Int] = [:]
    var windowTotal = 0
    var oursInWindow = 0
    var callers: [String] = []
    var stacks: [String] = []
}

let sampleRate = 48000.0
let pulseLatency = Double(ProcessInfo.processInfo.environment["OAT_BENCH_PULSE_LATENCY"] ?? "0.1") ?? 0.1
let channels = 2

/// Fills `buffer` with `frames` frames of a stereo tone (interleaved float32).
func fillTone(_ buffer: QueueBuffer, frames: Int, phase: inout Double) {
    let p = buffer.audioData.bindMemory(to: Float.self)
    for i in 0..<frames {
        let v = Float(sin(phase) * 0.5)
        p[i * 2] = v
        p[i * 2 + 1] = -v
        phase += 2 * Double.pi * 440 / sampleRate
    }
    buffer.audioDataByteSize = frames * 8
}

let exePath = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""

/// True when the allocation's caller is Swift code: our executable (the package is linked in
/// statically) or the Swift runtime / Foundation / Dispatch libraries called on our behalf.
/// Adds the allocation counters of the measured renders and the window around them to `result`,
/// with the eight most frequent callers (shared by every scenario); returns how many callers
/// the shim recorded.
@discardableResult
func collectAllocations(into result: inout KindResult) -> Int {
    let names = ["malloc", "calloc", "realloc", "free", "memalign"]
    for (k, name) in names.enumerated() {
        result.callbackAllocations += oat_mc_count(callbackFlag, Int32(k))
        let w = oat_mc_count(windowFlag, Int32(k))
        if w > 0 { result.windowAllocations[name] = w }
        result.windowTotal += w
    }
    var addresses = [UnsafeMutableRawPointer?](repeating: nil, count: 512)
    var kinds = [Int32](repeating: 0, count: 512)
    let n = Int(oat_mc_callers(&addresses, 512, &kinds))
    var byCaller: [String: Int] = [:]
    for i in 0..<n {
        guard let a = addresses[i] else { continue }
        let object = oat_mc_object_name(a).map { String(cString: $0) } ?? "?"
        let symbol = oat_mc_symbol_name(a).map { String(cString: $0) } ?? "?"
        if isOurs(object) { result.oursInWindow += 1 }
        byCaller["\(names[Int(kinds[i])]) from \(symbol) (\((object as NSString).lastPathComponent))", default: 0] += 1
    }
    result.callers = byCaller.sorted { $0.value > $1.value }.prefix(8).map { "\($0.value)× \($0.key)" }
    return n
}

func isOurs(_ object: String) -> Bool {
    object == exePath || object.contains("libswift") || object.contains("libFoundation") || object.contains("libdispatch")
}

func runKind(_ kind: String, options: Options, pulse: PrivatePulse?) -> KindResult {
    var result = KindResult(kind: kind, device: kind)
    let probes = Mutex<[Probe]>([])
    let counting = Atomic<Bool>(false)
    let warmup = options.warmupCalls
    let factory: AudioOutputDeviceFactory = { (format: AudioDeviceFormat) throws(AudioError) -> any AudioOutputDevice in
        let inner: any AudioOutputDevice
        switch kind {
        case "irregular", "self-test": inner = IrregularDevice(format: format)
        case "null":
            var faults = AudioDeviceFaults()
            faults.underrunEveryPeriods = 13
            inner = NullOutputDevice(format: format, realTime: true, framesPerRender: 256, faults: faults)
        case "alsa": inner = try ALSAOutputDevice(device: "null", format: format, periodFrames: 256)
        case "pulse": inner = try PulseAudioOutputDevice(format: format, sink: pulse?.sinkName, server: pulse?.server, targetLatency: pulseLatency)
        default: throw AudioError(.invalidArgument, component: "render-alloc-bench", "unknown device kind \(kind)")
        }
        let probe = Probe(warmupCalls: warmup, counting: counting.load(ordering: .acquiring))
        probe.leak = kind == "self-test"
        probes.withLock { $0.append(probe) }
        return ProbedDevice(inner, probe)
    }
    let free = Mutex<[QueueBuffer]>([])
    let queue: AudioOutputQueue
    do {
        queue = try AudioOutputQueue(format: .linearPCM(sampleRate: sampleRate, channels: UInt32(channels), bitsPerChannel: 32, isFloat: true),
                                     output: factory) { _, buffer in free.withLock { $0.append(buffer) } }
        for _ in 0..<12 { free.withLock { $0.append(try! queue.allocateBuffer(byteCapacity: 2400 * 8)) } }
    } catch {
        result.skipped = "\(error)"
        return result
    }
    defer { queue.dispose(immediately: true) }
    queue.isLevelMeteringEnabled = true
    var phase = 0.0
    var sizeIndex = 0
    let bufferSizes = [1500, 700, 2400, 333, 1999]
    oat_mc_reset()
    var underrunsAtStart = 0
    for cycle in 0..<options.cycles {
        counting.store(cycle > 0, ordering: .releasing)
        if cycle == 1 {
            oat_mc_reset()
            underrunsAtStart = queue.underrunCount
        }
        try? queue.setParameter(.volumeRampTime, 0.03)
        // Prime with what the free list holds, then start (the second cycle starts 50 ms late).
        for b in free.withLock({ l -> [QueueBuffer] in defer { l.removeAll() }; return l }) {
            fillTone(b, frames: bufferSizes[sizeIndex % bufferSizes.count], phase: &phase)
            sizeIndex += 1
            try? queue.enqueue(b)
        }
        do {
            if cycle == 2 {
                try queue.start(at: .host(HostTime.now() + 50_000_000))
            } else {
                try queue.start()
            }
        } catch {
            result.skipped = "\(error)"
            return result
        }
        if result.device == kind, let d = queue.currentDevice { result.device = kind == "self-test" ? "self-test (\(d), allocating)" : d }
        let t0 = monotonicSeconds()
        var didReset = false
        var lastVolumeFlip = t0
        var loud = true
        while true {
            let t = monotonicSeconds() - t0
            if t >= options.seconds { break }
            // Volume steps (ramped), a pan sweep, meter reads.
            if monotonicSeconds() - lastVolumeFlip > 0.07 {
                loud.toggle()
                lastVolumeFlip = monotonicSeconds()
                try? queue.setParameter(.volume, loud ? 1 : 0.25)
            }
            try? queue.setParameter(.pan, Float(sin(t * 3)))
            _ = queue.currentLevels()
            if cycle == 1 && !didReset && t > options.seconds / 2 {
                didReset = true
                queue.reset()
            }
            // Starve the queue 150 ms out of every 600 ms: the ring runs dry (underruns).
            // Otherwise keep about 0.2 s decoded ahead (the ring could take 2 s, but a short
            // backlog makes the end of each cycle quick).
            let starving = t.truncatingRemainder(dividingBy: 0.6) > 0.45
            if !starving && queue.bufferedFrames < Int64(0.2 * sampleRate) {
                for b in free.withLock({ l -> [QueueBuffer] in defer { l.removeAll() }; return l }) {
                    fillTone(b, frames: bufferSizes[sizeIndex % bufferSizes.count], phase: &phase)
                    sizeIndex += 1
                    try? queue.enqueue(b)
                }
            }
            usleep(3_000)
        }
        // End of stream: what is queued plays out, then the queue stops by itself.
        let tEnd = monotonicSeconds()
        queue.stop(immediately: false)
        let deadline = monotonicSeconds() + 10
        while queue.isRunning && monotonicSeconds() < deadline { usleep(5_000) }
        note("render-alloc-bench: \(kind): cycle \(cycle) ended in \(fmt(monotonicSeconds() - tEnd)) s")
        if queue.isRunning {
            note("render-alloc-bench: \(kind): the queue did not end by itself; stopping it")
            queue.stop(immediately: true)
        }
    }
    result.underruns = queue.underrunCount - underrunsAtStart
    for p in probes.withLock({ $0 }) {
        note("render-alloc-bench: \(kind): device thread: \(p.calls) render calls in \(fmt(HostTime.seconds(ticks: p.lastCall - p.firstCall))) s, \(p.measuredCalls) counted\(p.counting ? "" : " (warm-up cycle)")")
        if ProcessInfo.processInfo.environment["OAT_BENCH_TRACE"] != nil { note("  call ms: \(p.trace.prefix(min(64, p.calls + 1)).map(String.init).joined(separator: " "))") }
    }
    for p in probes.withLock({ $0 }) where p.counting {
        result.measuredCalls += p.measuredCalls
        result.measuredFrames += p.measuredFrames
        result.requestedFrames += p.requestedFrames
        result.endOfStream += p.endOfStream
    }
    let n = collectAllocations(into: &result)
    // The distinct call stacks of the first allocations (symbol names, innermost first).
    var stacks: [String: Int] = [:]
    for i in 0..<min(n, 64) {
        var frames = [UnsafeMutableRawPointer?](repeating: nil, count: 10)
        let depth = Int(oat_mc_stack(Int32(i), &frames, 10))
        let names = frames.prefix(depth).dropFirst(2).compactMap { $0 }.map { a -> String in
            oat_mc_symbol_name(a).map { String(cString: $0) } ?? ((oat_mc_object_name(a).map { String(cString: $0) } ?? "?") as NSString).lastPathComponent
        }
        stacks[names.joined(separator: " < "), default: 0] += 1
    }
    result.stacks = stacks.sorted { $0.value > $1.value }.prefix(4).map { "\($0.value)× \($0.key)" }
    return result
}

// MARK: Main

let options = Options.parse(Array(CommandLine.arguments.dropFirst()))

// The shim must be in use: an allocation on a counting thread has to show up.
oat_mc_reset()
_ = oat_mc_set_flags(windowFlag | callbackFlag)
let probeArray = [Int](repeating: 7, count: Int(getpid() % 5) + 100)
_ = oat_mc_set_flags(0)
guard probeArray.count > 0, oat_mc_count(windowFlag, 0) + oat_mc_count(windowFlag, 4) > 0 else {
    fatal("the allocator shim is not active (malloc is not interposed); counts would be meaningless")
}
oat_mc_reset()

var pulse: PrivatePulse?
if options.kinds.contains("pulse") || options.kinds.contains("avengine-pulse") {
    do { pulse = try PrivatePulse(sampleRate: Int(sampleRate), channels: channels) } catch { note("render-alloc-bench: pulse: \(error)") }
}

var results: [KindResult] = []
for kind in options.kinds {
    note("render-alloc-bench: \(kind): \(options.cycles) cycles of \(options.seconds) s (first one warm-up)")
    if kind == "players-null" {
        results.append(runPlayers(kind, spec: "null", options: options))
        continue
    }
    if kind.hasPrefix("avengine-") {
        let device = String(kind.dropFirst("avengine-".count))
        switch device {
        case "null": results.append(runAVEngine(kind, spec: "null", options: options))
        case "alsa": results.append(runAVEngine(kind, spec: "alsa:null", options: options))
        case "pulse":
            guard let pulse else {
                results.append(KindResult(kind: kind, device: kind, skipped: "no private PulseAudio daemon"))
                continue
            }
            setenv("PULSE_SERVER", pulse.server, 1)
            results.append(runAVEngine(kind, spec: "pulse:\(pulse.sinkName)", options: options))
        default: fatal("unknown kind \(kind)")
        }
        continue
    }
    if (kind == "pulse" || kind == "avengine-pulse") && pulse == nil {
        results.append(KindResult(kind: kind, device: kind, skipped: "no private PulseAudio daemon"))
        continue
    }
    results.append(runKind(kind, options: options, pulse: pulse))
}
pulse?.stop()

var failed = false
for r in results where r.skipped == nil {
    if r.kind == "self-test" {
        // The deliberate allocation must be seen, or the counters are not working.
        if r.callbackAllocations == 0 { note("render-alloc-bench: self-test: the deliberate allocations were not counted"); failed = true }
    } else if r.callbackAllocations > 0 || r.oursInWindow > 0 || r.measuredCalls == 0 {
        failed = true
    }
}

if options.json {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    print(String(decoding: try! encoder.encode(results), as: UTF8.self))
} else {
    printTable(["device", "render calls counted", "frames", "underruns", "ends", "allocs in QueueRenderer.render", "allocs on device thread", "of which from Swift code"],
               results.map { r in
                   if let s = r.skipped { return [r.device, "skipped: \(s)", "", "", "", "", "", ""] }
                   let window = r.windowTotal == 0 ? "0" : "\(r.windowTotal) (" + r.windowAllocations.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") + ")"
                   return [r.device, "\(r.measuredCalls)", "\(r.measuredFrames)", "\(r.underruns)", "\(r.endOfStream)",
                           "\(r.callbackAllocations)", window, "\(r.oursInWindow)"]
               })
    for r in results where !r.callers.isEmpty {
        print("\n\(r.device): allocation callers on the device thread")
        for c in r.callers { print("  \(c)") }
        print("  stacks of the first \(min(64, r.windowTotal)) (innermost first):")
        for c in r.stacks { print("    \(c)") }
    }
    print("\nrender path allocations by Swift code (self-test excluded): \(failed ? "FOUND (fail)" : "none")")
}
exit(failed ? 1 : 0)
