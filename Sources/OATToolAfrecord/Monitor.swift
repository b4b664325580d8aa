// afrecord --monitor and --measure-latency: the input through an OATUnits graph to the output.
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
                writeStandardError("afrecord: input \(monitor.input.statistics); output latency \(fixed(opened.output.device.latency * 1000, 1)) ms")
            }
        }
        let stats = monitor.input.statistics
        monitor.stop()
        writeStandardError("afrecord: monitor stopped: \(stats)")
        return 0
    }
}
