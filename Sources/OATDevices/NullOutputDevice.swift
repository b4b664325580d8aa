import OATCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Faults a test can inject into a ``NullOutputDevice``.
public struct AudioDeviceFaults: Hashable, Sendable {
    /// Every this many periods, skip calling the render callback once and play silence instead
    /// (an underrun as the device sees it). 0: never.
    public var underrunEveryPeriods: Int = 0
    /// After this many frames, report the device lost...
    public var loseAfterFrames: Int64?
    /// ...and restored after this many seconds.
    public var restoreAfterSeconds: Double = 0.5
    /// Creates a fault plan (none by default).
    public init() {}
}

/// Receives each period of rendered audio, interleaved, on the device thread (file sinks).
protocol PeriodSink: AnyObject, Sendable {
    func write(_ interleaved: UnsafeBufferPointer<Float>, frames: Int)
    func finish()
}

/// An output that discards audio (or hands it to a sink such as a WAV file), paced in real time
/// by the host clock or running as fast as the render callback allows. Used when no device
/// exists, for offline rendering, and in tests (with ``AudioDeviceFaults``).
public final class NullOutputDevice: AudioOutputDevice {
    /// The device name.
    public let name: String
    /// The device format.
    public let format: AudioDeviceFormat
    /// Frames per render call.
    public let framesPerRender: Int
    /// True when paced by the host clock.
    public let isRealTime: Bool
    /// Latency: one period when paced.
    public var latency: Double { isRealTime ? Double(framesPerRender) / format.sampleRate : 0 }
    private let faults: AudioDeviceFaults
    private let sink: (any PeriodSink)?
    private let rendered = Atomic<Int64>(0)
    private let state = DeviceRun()
    private let events = AudioDeviceEventQueue()
    private let thread = Locked<JoinableThread?>(nil)
    private let buffers: RenderBuffers

    /// Creates a null output rendering `period` seconds at a time (the default is 1024 frames
    /// at 44.1 kHz, 23 ms, the same time at every rate).
    public convenience init(format: AudioDeviceFormat, realTime: Bool = true, period: Double = 1024.0 / 44100,
                            faults: AudioDeviceFaults = AudioDeviceFaults(), name: String? = nil) {
        self.init(format: format, realTime: realTime, framesPerRender: Self.frames(period, at: format.sampleRate),
                  faults: faults, sink: nil, name: name ?? (realTime ? "null" : "null:fast"))
    }

    /// Frames in `period` seconds at `sampleRate` (at least 16).
    static func frames(_ period: Double, at sampleRate: Double) -> Int {
        let frames = period.isFinite && period > 0 && sampleRate.isFinite ? min(1_048_576.0, period * sampleRate) : 0
        return max(16, Int(frames.rounded()))
    }

    /// Creates a null output; `framesPerRender` is the period in frames: a different time at
    /// each rate; prefer ``init(format:realTime:period:faults:name:)``.
    public convenience init(format: AudioDeviceFormat, realTime: Bool = true, framesPerRender: Int,
                faults: AudioDeviceFaults = AudioDeviceFaults(), name: String? = nil) {
        self.init(format: format, realTime: realTime, framesPerRender: framesPerRender, faults: faults, sink: nil, name: name ?? (realTime ? "null" : "null:fast"))
    }

    init(format: AudioDeviceFormat, realTime: Bool, framesPerRender: Int, faults: AudioDeviceFaults, sink: (any PeriodSink)?, name: String) {
        self.format = format
        self.isRealTime = realTime
        self.framesPerRender = max(16, framesPerRender)
        self.faults = faults
        self.sink = sink
        self.name = name
        buffers = RenderBuffers(channels: format.channels, frames: self.framesPerRender)
    }

    deinit { stop(drain: false) }

    /// Frames played: everything rendered (a null device has no buffer).
    public var playedFrames: Int64 { rendered.load(ordering: .acquiring) }
    /// Frames rendered.
    public var renderedFrames: Int64 { rendered.load(ordering: .acquiring) }

    /// Starts the device thread pulling from `render`.
    public func start(_ render: @escaping AudioRenderCallback) throws(AudioError) {
        guard state.move(from: .idle, to: .running) else {
            throw AudioError(.invalidState, component: "NullOutputDevice", "already started")
        }
        let t = try JoinableThread(name: "oat-null-out") { [self] in run(render) }
        thread.withLock { $0 = t }
    }

    private func run(_ render: AudioRenderCallback) {
        events.post(.started)
        let period = framesPerRender
        let periodNanos = UInt64(Double(period) / format.sampleRate * 1e9)
        var deadline = HostTime.now()
        var periods = 0
        var lostUntil: UInt64 = 0
        var lost = false
        var lossDone = false
        while true {
            let s = state.current
            if s.isEnding { break }
            if s == .paused {
                sleepUntil(hostTime: HostTime.now() + 2_000_000)
                deadline = HostTime.now()
                continue
            }
            let done = rendered.load(ordering: .relaxed)
            if let at = faults.loseAfterFrames, !lossDone, done >= at {
                lossDone = true
                lost = true
                lostUntil = HostTime.now() + HostTime.ticks(seconds: faults.restoreAfterSeconds)
                events.post(.lost(reason: "injected fault"))
            }
            if lost {
                if HostTime.now() >= lostUntil {
                    lost = false
                    events.post(.restored)
                    deadline = HostTime.now()
                } else {
                    sleepUntil(hostTime: HostTime.now() + 2_000_000)
                    continue
                }
            }
            periods += 1
            var result: AudioRenderResult
            if faults.underrunEveryPeriods > 0 && periods % faults.underrunEveryPeriods == 0 {
                buffers.silence(from: 0)
                result = AudioRenderResult(frames: 0)
                events.post(.underrun(frames: period))
            } else {
                let time = AudioTimeStamp(sampleTime: Double(done), hostTime: deadline, rateScalar: 1, flags: .sampleHostTimeValid)
                result = render(buffers.pointers, period, time)
                result.frames = max(0, min(result.frames, period))
                buffers.silence(from: result.frames)
            }
            // A paced device always advances a whole period (silence fills a short render); one
            // that is not paced writes only what it got and asks again.
            let frames = result.isEndOfStream || !isRealTime ? result.frames : period
            if frames == 0 && !result.isEndOfStream {
                sleepUntil(hostTime: HostTime.now() + 1_000_000)
                continue
            }
            if let sink, frames > 0 {
                buffers.interleave(frames)
                sink.write(UnsafeBufferPointer(rebasing: buffers.interleaved[0..<(frames * format.channels)]), frames: frames)
            }
            rendered.add(Int64(frames), ordering: .releasing)
            if result.isEndOfStream {
                if isRealTime { sleepUntil(hostTime: deadline + UInt64(Double(frames) / format.sampleRate * 1e9)) }
                events.post(.drained)
                break
            }
            if isRealTime {
                deadline += periodNanos
                sleepUntil(hostTime: deadline)
            }
        }
        sink?.finish()
        state.finish()
    }

    /// Pauses pulling.
    public func pause() throws(AudioError) {
        guard state.move(from: .running, to: .paused) else {
            throw AudioError(.invalidState, component: "NullOutputDevice", "pause while not running")
        }
    }

    /// Resumes after a pause.
    public func resume() throws(AudioError) {
        guard state.move(from: .paused, to: .running) else {
            throw AudioError(.invalidState, component: "NullOutputDevice", "resume while not paused")
        }
    }

    /// Stops the thread (a null device holds nothing, so `drain` has nothing to wait for).
    public func stop(drain: Bool) {
        let s = state.requestStop()
        let t = thread.withLock { t -> JoinableThread? in defer { t = nil }; return t }
        t?.join()
        if s == .idle { sink?.finish() }
    }

    /// Stops and releases.
    public func close() { stop(drain: false) }

    /// Takes pending events.
    public func takeEvents() -> [AudioDeviceEvent] { events.take() }
    /// Events dropped.
    public var droppedEventCount: Int { events.droppedCount }

    /// True once the device thread has ended (end of stream played, or stopped).
    public var hasFinished: Bool { state.current == .finished }
}
