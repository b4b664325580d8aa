import OATConversion
import OATCore
import OATNetwork
import OATDevices
import OATFiles
import OATQueueEngine
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Set `OAT_STREAM_DEBUG=1` to trace the decoder thread's decisions on stderr.
let debugEnabled = getenv("OAT_STREAM_DEBUG") != nil

func format3(_ v: Double) -> String { String((v * 1000).rounded() / 1000) }

/// A request from the control plane to the decoder thread.
enum EngineCommand: Sendable {
    case seek(Double)
    case skip
    case jumpToLive
}

/// The threads behind a ``StreamingPlayer``: a network thread per item (``SourceReader``) and
/// one decoder thread that parses, decodes, feeds the ``AudioOutputQueue``, keeps the timeline
/// and reports events. The decoder thread is the only one touching the parser, the converter
/// and the queue's transport; the control plane talks to it through ``Control``.
final class StreamingEngine: @unchecked Sendable {
    let policy: BufferingPolicy
    let output: AudioOutputDeviceFactory
    let makeSource: ByteSourceFactory
    let continuation: AsyncStream<StreamingPlayerEvent>.Continuation
    let wake = DispatchSemaphore(value: 0)
    /// Set by the queue's thread when the queue played out after the end was marked.
    let queueEnded = Atomic<Bool>(false)
    /// Set by the queue's thread while the output device is lost: when, and why.
    let deviceLost = Locked<(since: UInt64, reason: String)?>(nil)
    private let done = DispatchSemaphore(value: 0)
    /// The clock the engine's timers read (the monotonic clock unless a test gives another).
    let clock: any EngineClock
    private let startTime: UInt64

    struct Control {
        var items: [String] = []
        var commands: [EngineCommand] = []
        var stopRequested = false
        var paused = false
        var volume: Float = 1
        var fade: Float = 0
        var volumeChanged = false
        var state: StreamingPlayerState = .idle
        var stats = StreamingPlayerStatistics()
        var playingIndex = 0
        var position: Double = 0
        var currentInfo: ByteSourceInfo?
        var duration: Double?
        var finished = false
        var bytesFromClosedReaders: Int64 = 0
        var reconnectsFromClosedReaders = 0
        var requestsFromClosedReaders = 0
    }
    let control = Locked(Control())

    let onEvent: (@Sendable (StreamingPlayerEvent) -> Void)?

    init(items: [String], policy: BufferingPolicy, output: @escaping AudioOutputDeviceFactory, makeSource: @escaping ByteSourceFactory,
         continuation: AsyncStream<StreamingPlayerEvent>.Continuation, onEvent: (@Sendable (StreamingPlayerEvent) -> Void)?, volume: Float,
         clock: any EngineClock = MonotonicClock()) {
        self.clock = clock
        startTime = clock.now()
        self.onEvent = onEvent
        self.policy = policy
        self.output = output
        self.makeSource = makeSource
        self.continuation = continuation
        control.withLock {
            $0.items = items
            $0.volume = volume
            $0.volumeChanged = true
        }
        DispatchQueue(label: "oat.stream.decoder").async { [self] in
            let decoder = DecoderThread(engine: self)
            decoder.run()
            done.signal()
        }
    }

    func send(_ command: EngineCommand) {
        control.withLock { $0.commands.append(command) }
        wake.signal()
    }

    func requestStop() {
        control.withLock { $0.stopRequested = true }
        wake.signal()
    }

    /// Waits for the decoder thread to end (blocking: call off the cooperative pool).
    func join() {
        done.wait()
        done.signal()
    }

    func emit(_ event: StreamingPlayerEvent) {
        onEvent?(event)
        continuation.yield(event)
    }

    func setState(_ new: StreamingPlayerState) {
        let changed = control.withLock { c -> Bool in
            guard c.state != new else { return false }
            if case .stopped = c.state { return false }
            c.state = new
            return true
        }
        if changed { emit(.state(new)) }
    }

    var elapsed: Double { clock.seconds(since: startTime) }
}

/// The output device stayed lost longer than ``BufferingPolicy/deviceLostTimeout``.
struct DeviceGone: Error {
    var error: AudioError
}
