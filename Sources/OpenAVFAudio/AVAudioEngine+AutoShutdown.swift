// AVAudioEngine's auto shutdown (Apple's isAutoShutdownEnabled): while the engine runs on a
// device with nothing to play, it releases the device (the PulseAudio stream or ALSA PCM is
// closed) and opens it again as soon as a player has something to play. The engine stays
// running throughout (isRunning, the nodes' state, the players' timelines).
import Foundation
import OpenAudioToolbox
internal import OATUnits
internal import OATDevices
internal import OATCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Watches a running engine for idleness on a thread of its own (not the render thread): after
/// ``idleSeconds`` with no source wanting to render, the engine releases its device; when one
/// wants to again, the device is opened again. It never waits for the engine's lock (it tries
/// it and comes back at the next tick), so the engine may stop it while holding its lock.
final class AutoShutdownMonitor: @unchecked Sendable {
    /// How long the engine stays idle before its device is released.
    static let idleSeconds = 1.0
    /// The polling period.
    static let tick: useconds_t = 20_000

    private let stopping = Atomic<Bool>(false)
    private var thread: JoinableThread?

    init(engine: AVAudioEngine) {
        let flag = UncheckedBox(self)
        thread = try? JoinableThread(name: "AVAudioEngine auto shutdown") { [weak engine] in
            var idleSince: UInt64?
            while !flag.value.stopping.load(ordering: .acquiring) {
                usleep(Self.tick)
                guard let engine, engine.lock.try() else { continue }
                defer { engine.lock.unlock() }
                guard engine.running else { continue }
                let idle = engine.hasNothingToPlay
                if engine.deviceReleased {
                    idleSince = nil
                    if !idle { engine.reopenReleasedDevice() }
                } else if idle {
                    let now = HostTime.now()
                    if let since = idleSince {
                        if HostTime.seconds(ticks: now - since) >= Self.idleSeconds { engine.releaseIdleDevice(); idleSince = nil }
                    } else {
                        idleSince = now
                    }
                } else {
                    idleSince = nil
                }
            }
        }
    }

    /// Stops and joins the thread (safe while holding the engine's lock).
    func stop() {
        stopping.store(true, ordering: .releasing)
        thread?.join()
        thread = nil
    }
}

extension AVAudioEngine {
    /// True when nothing the engine renders has anything to give (lock held): every player's
    /// unit says so (``AUPlayerNode/wantsRender``: not playing, paused, or nothing scheduled
    /// and its tail rendered), and there is no source node, sink node, connected input or tap
    /// (those are always live).
    var hasNothingToPlay: Bool {
        for node in attached {
            if node is AVAudioSourceNode || node is AVAudioSinkNode || !node.taps.isEmpty { return false }
            if node is AVAudioInputNode && hasOutput(from: node) { return false }
            if let player = node as? AVAudioPlayerNode {
                if let unit = player.unit as? AUPlayerNode, unit.wantsRender { return false }
                if player.isPlaying && player.unit == nil { return false }
            }
        }
        return true
    }

    /// Starts or stops the monitor to match ``isAutoShutdownEnabled`` and the device state (lock held).
    func updateAutoShutdown() {
        if autoShutdownEnabled && running && manualMode == nil {
            if autoShutdown == nil { autoShutdown = AutoShutdownMonitor(engine: self) }
        } else {
            autoShutdown?.stop()
            autoShutdown = nil
            if deviceReleased && running { reopenReleasedDevice() }
        }
    }

    /// Releases the device while the engine stays running (lock held).
    func releaseIdleDevice() {
        guard running, !deviceReleased else { return }
        stopWatchingDevice()
        graph?.stop()
        deviceReleased = true
    }

    /// Opens the device again for the running engine (lock held); on failure it stays released
    /// and the monitor tries again.
    func reopenReleasedDevice() {
        guard running, deviceReleased, let graph else { return }
        let spec = deviceSpec
        let sources = gateSources
        let gate: @Sendable () -> Bool = { sources.wantRender }
        do {
            _ = try graph.start(spec, options: sessionOutputOptions, isReady: gate)
        } catch {
            return
        }
        deviceReleased = false
        startWatchingDevice()
    }
}
