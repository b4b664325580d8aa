#if canImport(Glibc)
import Glibc
#endif
import OATCore
import OATTestSupport
import Synchronization
import Testing
@testable import OATDevices

/// A flag set from another thread.
private final class Flag: Sendable {
    let value = Atomic<Int>(-1)
}

/// Device threads run real-time (`SCHED_RR`, PulseAudio's own priority) where the system allows
/// it: root or `CAP_SYS_NICE`, as in CI. Before, every thread of the package ran at the normal
/// policy beside a PulseAudio whose sink thread was real-time: under CPU load the client's render
/// missed periods (the dropouts of the real-time tests that failed only under load, issue 19).
@Suite struct DeviceThreadPriorityTests {
    /// Whether this process may put a thread under `SCHED_RR` (tried on a scratch thread).
    static let realTimeAllowed: Bool = {
        let flag = Flag()
        let thread = try? JoinableThread(name: "oat-rt-probe") {
            flag.value.store(ThreadPriority.makeCurrentThreadRealTime() ? 1 : 0, ordering: .releasing)
        }
        thread?.join()
        return flag.value.load(ordering: .acquiring) == 1
    }()

    /// CI runs as root: there the real-time policy must be granted, or the tests below would
    /// pass on a machine that never exercises it.
    @Test func realTimeIsAllowedInCI() {
        if getenv("CI").map({ String(cString: $0) }) == "true" {
            #expect(Self.realTimeAllowed, "CI runs as root: SCHED_RR must be allowed")
        }
        print("thread priority: SCHED_RR \(Self.realTimeAllowed ? "allowed" : "refused") here")
    }

    /// A render callback that records whether its thread runs real-time.
    fileprivate func observing(_ flag: Flag, _ source: ChirpSource) -> AudioRenderCallback {
        let render = source.render
        return { buffers, frames, time in
            if flag.value.load(ordering: .relaxed) < 0 {
                flag.value.store(ThreadPriority.currentThreadIsRealTime ? 1 : 0, ordering: .releasing)
            }
            return render(buffers, frames, time)
        }
    }

    @Test(.requires(TestResource.first(TestResource.pulseAudioMissing, TestResource.alsaPulsePluginMissing)))
    func alsaRenderThreadIsRealTime() throws {
        let daemon = try PulseTestDaemon(sampleRate: 48000, channels: 2)
        defer { daemon.stop() }
        let config = "pcm.oatrt { type pulse server \"\(daemon.server)\" device \"\(daemon.sinkName)\" }\n"
        let device = try ALSAOutputDevice(device: "oatrt", format: AudioDeviceFormat(sampleRate: 48000, channels: 2),
                                          periodFrames: 480, configText: config)
        defer { device.close() }
        #expect(device.isRealTime)
        let flag = Flag()
        try device.start(observing(flag, ChirpSource(total: 9600, sampleRate: 48000)))
        #expect(waitUntil(10) { device.hasFinished })
        #expect(flag.value.load(ordering: .acquiring) == (Self.realTimeAllowed ? 1 : 0))
    }

    /// A `file` PCM is not paced (its thread renders as fast as it can): it stays at the normal
    /// policy, where a real-time thread would take a whole core from everything else.
    @Test func alsaFilePCMThreadIsNotRealTime() throws {
        let path = uniqueTempPath("alsa-rt", "raw")
        defer { removeFile(path) }
        let config = "pcm.oatnort { type file slave.pcm null file \"\(path)\" format raw }\n"
        let device = try ALSAOutputDevice(device: "oatnort", format: AudioDeviceFormat(sampleRate: 48000, channels: 2),
                                          periodFrames: 480, configText: config)
        #expect(!device.isRealTime)
        let flag = Flag()
        try device.start(observing(flag, ChirpSource(total: 4800, sampleRate: 48000)))
        #expect(waitUntil(10) { device.hasFinished })
        device.close()
        #expect(flag.value.load(ordering: .acquiring) == 0)
    }

    @Test(.requires(TestResource.pulseAudioMissing))
    func pulseRenderThreadIsRealTime() throws {
        let daemon = try PulseTestDaemon(sampleRate: 48000, channels: 2)
        defer { daemon.stop() }
        let device = try PulseAudioOutputDevice(format: AudioDeviceFormat(sampleRate: 48000, channels: 2), sink: daemon.sinkName,
                                                server: daemon.server)
        defer { device.close() }
        let flag = Flag()
        let log = EventLog(device)
        try device.start(observing(flag, ChirpSource(total: 9600, sampleRate: 48000)))
        #expect(log.waitFor(10) { $0.contains(.drained) })
        #expect(flag.value.load(ordering: .acquiring) == (Self.realTimeAllowed ? 1 : 0))
    }

    /// Feeder threads raise their own nice value only: the thread that asks, not the process.
    @Test func feederPriorityIsPerThread() throws {
        let before = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        let flag = Flag()
        let thread = try JoinableThread(name: "oat-nice-probe") {
            let granted = ThreadPriority.raiseCurrentThread()
            flag.value.store(granted ? Int(getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)) : 100, ordering: .releasing)
        }
        thread.join()
        let inThread = flag.value.load(ordering: .acquiring)
        if Self.realTimeAllowed {
            #expect(inThread == Int(ThreadPriority.feederNice))
        }
        #expect(getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0) == before, "the caller's own nice value changed")
    }
}
