#if canImport(Glibc)
import Glibc
#endif
import OATCore
import OATTestSupport
import Synchronization
@testable import OATDevices

/// A deterministic stereo test signal: a logarithmic chirp (100 Hz to 8 kHz) on even channels and
/// a 441 Hz tone on odd ones, `total` frames, then end of stream. No frame is exactly silent.
final class ChirpSource: Sendable {
    let total: Int
    let sampleRate: Double
    let produced = Atomic<Int>(0)
    let calls = Atomic<Int>(0)

    init(total: Int, sampleRate: Double) {
        self.total = total
        self.sampleRate = sampleRate
    }

    func sample(_ frame: Int, _ channel: Int) -> Float {
        let t = Double(frame) / sampleRate
        let duration = Double(total) / sampleRate
        if channel % 2 == 0 {
            let k = log(8000.0 / 100.0) / duration
            let phase = 2 * Double.pi * 100 * (exp(k * t) - 1) / k
            return Float(0.5 * sin(phase + 0.3))
        }
        return Float(0.4 * sin(2 * Double.pi * 441 * t + 1.0))
    }

    var render: AudioRenderCallback {
        { [self] buffers, frames, _ in
            calls.add(1, ordering: .relaxed)
            let start = produced.load(ordering: .relaxed)
            let n = min(frames, total - start)
            for c in 0..<buffers.count {
                for i in 0..<n { buffers[c][i] = sample(start + i, c) }
            }
            produced.store(start + n, ordering: .relaxed)
            return AudioRenderResult(frames: n, isEndOfStream: start + n >= total)
        }
    }
}

/// Result of comparing a recording with the signal.
struct Comparison: CustomStringConvertible {
    var offset: Int
    var frames: Int
    var snr: Double
    var longestZeroRun: Int
    var description: String {
        "offset \(offset), \(frames) frames, SNR \(snr.isInfinite ? "inf (bit-exact)" : String(snr)) dB, longest zero run \(longestZeroRun)"
    }
}

/// Finds `source`'s signal in the interleaved `recording`: the first non-silent frame is taken as
/// frame `firstFrame` of the signal (searching it exactly if not 0); compares up to `maxFrames`.
func compare(_ recording: [Float], channels: Int, with source: ChirpSource, dropSilentFrames: Bool = false,
             firstFrame: Int? = 0, maxFrames: Int? = nil) -> Comparison? {
    var frames: [[Float]] = []
    var i = 0
    var started = false
    var longestZeroRun = 0, run = 0
    while (i + 1) * channels <= recording.count {
        let f = Array(recording[(i * channels)..<((i + 1) * channels)])
        i += 1
        let silent = f.allSatisfy { $0 == 0 }
        if !started {
            if silent { continue }
            started = true
        }
        if silent {
            run += 1
            if dropSilentFrames { continue }
        } else {
            longestZeroRun = max(longestZeroRun, run)
            run = 0
        }
        frames.append(f)
    }
    // Trailing silence is not a dropout.
    while let last = frames.last, last.allSatisfy({ $0 == 0 }) { frames.removeLast() }
    guard let first = frames.first else { return nil }
    var offset = firstFrame ?? -1
    if firstFrame == nil {
        for k in 0..<source.total where (0..<channels).allSatisfy({ source.sample(k, $0) == first[$0] }) {
            offset = k
            break
        }
        if offset < 0 { return nil }
    }
    let count = min(frames.count, maxFrames ?? frames.count, source.total - offset)
    var signal = 0.0, noise = 0.0
    for k in 0..<count {
        for c in 0..<channels {
            let s = Double(source.sample(offset + k, c))
            let d = Double(frames[k][c]) - s
            signal += s * s
            noise += d * d
        }
    }
    let snr = noise == 0 ? Double.infinity : 10 * log10(signal / noise)
    return Comparison(offset: offset, frames: frames.count, snr: snr, longestZeroRun: longestZeroRun)
}

/// Collects events from a device while waiting for a condition.
final class EventLog {
    private(set) var events: [AudioDeviceEvent] = []
    let device: any AudioOutputDevice
    init(_ device: any AudioOutputDevice) { self.device = device }
    func poll() { events += device.takeEvents() }
    func waitFor(_ seconds: Double, _ condition: ([AudioDeviceEvent]) -> Bool) -> Bool {
        waitUntil(seconds) { poll(); return condition(events) }
    }
    func contains(_ e: AudioDeviceEvent) -> Bool { poll(); return events.contains(e) }
}


func uniqueTempPath(_ stem: String, _ ext: String) -> String {
    "/tmp/oat-\(stem)-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).\(ext)"
}
