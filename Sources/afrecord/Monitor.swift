// afrecord --monitor and --measure-latency: the input through an AudioUnits graph to the output.
import AudioToolboxKit
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Set by SIGINT/SIGTERM in monitor mode.
let monitorInterrupted = Atomic<Bool>(false)

/// The monitor-mode options and their run.
struct MonitorCommand {
    var monitor = false
    var measureLatency = false
    var output = AudioOutputSpec.auto
    var options = AULiveMonitor.Options()

    static let presets: [String: [Float]] = [
        "flat": [0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        "rock": [5, 4, 2, -1, -2, -1, 2, 3, 4, 4],
        "pop": [-1, 1, 3, 4, 3, 0, -1, -1, 1, 2],
        "jazz": [3, 2, 1, 2, -1, -1, 0, 1, 2, 3],
        "classical": [4, 3, 2, 1, 0, 0, 0, 1, 2, 3],
        "bass": [7, 6, 4, 2, 0, 0, 0, 0, 0, 0],
        "vocal": [-2, -2, -1, 1, 3, 4, 3, 1, 0, -1],
        "treble": [0, 0, 0, 0, 0, 0, 2, 4, 6, 7],
    ]

    /// The --eq syntax of afplay: a preset, 10 graphic-band gains, or named bands.
    static func parseEQ(_ text: String) -> [AUEQBand]? {
        let graphic = AUNBandEQNode.graphicFrequencies
        if let gains = presets[text.lowercased()] {
            return graphic.indices.map { AUEQBand(.parametric, frequency: graphic[$0], gain: gains[$0], bandwidth: 1) }
        }
        let parts = text.split(separator: ",").map { String($0).filter { $0 != " " } }
        let numbers = parts.compactMap { Float($0) }
        if parts.count == 10, numbers.count == 10 {
            guard numbers.allSatisfy({ abs($0) <= 24 }) else { return nil }
            return graphic.indices.map { AUEQBand(.parametric, frequency: graphic[$0], gain: numbers[$0], bandwidth: 1) }
        }
        var bands: [AUEQBand] = []
        for p in parts {
            guard let sign = p.firstIndex(where: { $0 == "+" || $0 == "-" }) else { return nil }
            let number = p[sign...].first == "+" ? String(p[p.index(after: sign)...]) : String(p[sign...])
            guard let gain = Float(number), abs(gain) <= 24 else { return nil }
            switch p[..<sign].lowercased() {
            case "bass", "low": bands.append(AUEQBand(.lowShelf, frequency: 120, gain: gain))
            case "mid", "middle": bands.append(AUEQBand(.parametric, frequency: 1000, gain: gain, bandwidth: 1.5))
            case "treble", "high": bands.append(AUEQBand(.highShelf, frequency: 6000, gain: gain))
            default: return nil
            }
        }
        return bands.isEmpty ? nil : bands
    }

    /// Runs the monitor (until Ctrl-C or `seconds`) or the latency measurement; the exit status.
    func run(input: AudioInputSpec, seconds: Double?, verbose: Bool) -> Int32 {
        signal(SIGINT) { _ in monitorInterrupted.store(true, ordering: .relaxed) }
        signal(SIGTERM) { _ in monitorInterrupted.store(true, ordering: .relaxed) }
        if measureLatency {
            do {
                let m = try AULiveMonitor.measureLatency(input: input, output: output, options: options)
                print(m)
                if verbose { writeStandardError("afrecord: input: \(m.statistics); per-click lags \(m.perClick)") }
                return 0
            } catch {
                writeStandardError("afrecord: latency measurement failed: \(error)")
                return 1
            }
        }
        let monitor: AULiveMonitor
        let opened: (input: AudioInput.Opened, output: AudioOutput.Opened)
        do {
            monitor = try AULiveMonitor(options: options)
            opened = try monitor.start(input: input, output: output)
        } catch {
            writeStandardError("afrecord: \(error)")
            return 1
        }
        for notice in [opened.input.notice, opened.output.notice].compactMap({ $0 }) { writeStandardError("afrecord: \(notice)") }
        let chain = monitor.graph.nodes.dropFirst().map(\.name).joined(separator: ", ")
        writeStandardError("afrecord: monitoring \(opened.input.device.name) -> \(opened.output.device.name) at \(Int(options.sampleRate)) Hz (\(chain)); Ctrl-C stops")
        let started = HostTime.now()
        var lastReport = started
        while !monitorInterrupted.load(ordering: .relaxed) {
            usleep(20_000)
            let now = HostTime.now()
            if let seconds, HostTime.seconds(ticks: now - started) >= seconds { break }
            if verbose && HostTime.seconds(ticks: now - lastReport) >= 1 {
                lastReport = now
                writeStandardError("afrecord: input \(monitor.input.statistics); output latency \(String(format: "%.1f", opened.output.device.latency * 1000)) ms")
            }
        }
        let stats = monitor.input.statistics
        monitor.stop()
        writeStandardError("afrecord: monitor stopped: \(stats)")
        return 0
    }
}
