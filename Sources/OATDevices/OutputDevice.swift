import OATCore
import Synchronization

/// The stream format a device runs at: Float32 samples, `channels` per frame, at `sampleRate`.
/// Render callbacks always see non-interleaved Float32 (one buffer per channel); backends
/// convert to what the hardware or server takes.
public struct AudioDeviceFormat: Hashable, Sendable, CustomStringConvertible {
    /// Frames per second.
    public var sampleRate: Double
    /// Channels per frame.
    public var channels: Int
    /// What each channel is (the file's channel layout in the order the channels are
    /// delivered), or nil: the device's usual layout for the count (5.1 for 6, 7.1 for 8).
    public var channelLabels: [ChannelLabel]?

    /// Creates a device format; `channelLabels` (one per channel) say where each channel plays.
    public init(sampleRate: Double, channels: Int, channelLabels: [ChannelLabel]? = nil) {
        self.sampleRate = sampleRate
        self.channels = channels
        self.channelLabels = channelLabels?.count == channels ? channelLabels : nil
    }

    /// `2 ch @ 44100 Hz`.
    public var description: String {
        let rate = sampleRate.isFinite && abs(sampleRate) < 1e15 ? String(Int64(sampleRate)) : String(sampleRate)
        return "\(channels) ch @ \(rate) Hz"
    }

    /// The matching non-interleaved Float32 stream description.
    public var streamDescription: AudioStreamBasicDescription {
        .canonicalFloat(sampleRate: sampleRate, channels: UInt32(channels))
    }
}

/// What a render callback produced.
public struct AudioRenderResult: Hashable, Sendable {
    /// Frames written at the start of the buffers; the device fills the rest with silence.
    public var frames: Int
    /// True when the source has nothing more to play: the device plays what it holds, then
    /// reports ``AudioDeviceEvent/drained`` and stops pulling.
    public var isEndOfStream: Bool

    /// Creates a result.
    public init(frames: Int, isEndOfStream: Bool = false) {
        self.frames = frames
        self.isEndOfStream = isEndOfStream
    }
}

/// Fills `frameCount` frames into `buffers` (one `Float` buffer per channel, each at least
/// `frameCount` long) for output at `time` (sample time on the device timeline, host time when
/// the first frame will be heard).
///
/// Thread safety: called on the device's real-time thread. It must not allocate, lock, log,
/// call user code, touch actors or FFmpeg: copy from preallocated rings and compute only.
public typealias AudioRenderCallback = @Sendable (_ buffers: UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>,
                                                  _ frameCount: Int, _ time: AudioTimeStamp) -> AudioRenderResult

/// Something that happened to a device, reported off the render thread.
public enum AudioDeviceEvent: Hashable, Sendable {
    /// The device began pulling audio.
    case started
    /// The render callback did not deliver in time (frames of silence inserted).
    case underrun(frames: Int)
    /// The end of stream was played out completely.
    case drained
    /// The device or server went away; playback resumes if it returns.
    case lost(reason: String)
    /// The device came back after ``lost(reason:)``.
    case restored
    /// A non-fatal problem (e.g. a write error that was recovered).
    case warning(String)
}

/// An audio output: pulls PCM from a render callback on its own real-time thread.
///
/// Lifecycle: create (opens the device), ``start(_:)``, optionally ``pause()``/``resume()``,
/// ``stop(drain:)``; ``close()`` releases it (also done on deinit).
/// Thread safety: control methods may be called from any one control thread; the counters are
/// atomics readable from anywhere.
public protocol AudioOutputDevice: AnyObject, Sendable {
    /// Human-readable name, e.g. `pulse:oat_test_sink`, `alsa:default`, `null`.
    var name: String { get }
    /// The format the device runs at.
    var format: AudioDeviceFormat { get }
    /// Frames per render call (the device period).
    var framesPerRender: Int { get }
    /// True when a clock paces the device (hardware, a sound server, a paced null output);
    /// false for outputs that run as fast as rendering goes (files, `null:fast`). A source
    /// that runs short should pad with silence on a real-time device, and may simply return
    /// fewer frames (the device waits and calls again) on one that is not.
    var isRealTime: Bool { get }
    /// Estimated output latency in seconds (frames rendered but not yet heard).
    var latency: Double { get }
    /// Frames that have been played (reached the output) since start; the device clock.
    var playedFrames: Int64 { get }
    /// Frames rendered (pulled from the callback) since start.
    var renderedFrames: Int64 { get }
    /// Starts pulling from `render`.
    func start(_ render: @escaping AudioRenderCallback) throws(AudioError)
    /// Stops pulling, keeping what is buffered.
    func pause() throws(AudioError)
    /// Continues after ``pause()``.
    func resume() throws(AudioError)
    /// Stops; with `drain`, first plays what the device still holds.
    func stop(drain: Bool)
    /// Drops what the device (or its sound server) holds but has not played yet, and keeps
    /// running: what the render callback gives after `resume` ran is heard next.
    /// `resume` runs once the held audio is dropped, before the device asks the render
    /// callback for more (PulseAudio: under the main-loop lock, right after the flush request;
    /// a PCM's device thread may render one more period of what the callback gives before it).
    /// ``playedFrames`` stays monotonic and goes on counting frames heard. Control thread only
    /// (never the render callback). Devices without a buffer of their own (files, the null
    /// output) just run `resume`.
    func flush(_ resume: () -> Void)
    /// Releases the device.
    func close()
    /// Takes the events that happened since the last call (bounded; excess events are counted
    /// in ``droppedEventCount``).
    func takeEvents() -> [AudioDeviceEvent]
    /// Events lost because the event queue was full.
    var droppedEventCount: Int { get }
    /// Asks a running device to keep about `seconds` of audio buffered from now on. A larger
    /// buffer means fewer, larger render calls (less CPU) and that a volume change or a flush is
    /// heard that much later. A device with a server-side buffer asks for the difference at
    /// once, so call it only with that much audio ready. Devices without one ignore it.
    func setTargetLatency(_ seconds: Double)
}

extension AudioOutputDevice {
    /// Devices are real time unless they say otherwise.
    public var isRealTime: Bool { true }
    /// Devices hold nothing beyond what they render unless they say otherwise.
    public func flush(_ resume: () -> Void) { resume() }
    /// Ignored unless the device has a buffer it can resize (PulseAudio).
    public func setTargetLatency(_ seconds: Double) {}
}

/// Which output to open.
public enum AudioOutputSpec: Hashable, Sendable, CustomStringConvertible {
    /// PulseAudio if a server answers, else ALSA's default device, else the null sink (saying so).
    case auto
    /// A PulseAudio sink (nil: the server's default).
    case pulse(sink: String?)
    /// An ALSA PCM (`default`, `hw:0`, `plughw:0,0`, `pulse`, `file:...`).
    case alsa(device: String)
    /// A WAV file written with the played audio (Float32), paced in real time or not.
    case wav(path: String, realTime: Bool)
    /// Discards audio, paced in real time or as fast as possible.
    case null(realTime: Bool)

    /// Parses `auto`, `pulse`, `pulse:SINK`, `alsa`, `alsa:DEVICE`, `wav:PATH`, `null`,
    /// `null:fast` (the afplay `--output` syntax). Any of them may end with `,rate=HZ`
    /// (`null:rate=HZ` for the null output), the rate an engine renders at for that output
    /// (``sampleRate(parsing:)``); the spec itself leaves it out.
    public init?(parsing rawText: String) {
        let text = Self.splitRate(rawText).spec
        let (kind, arg): (Substring, String?) = {
            if let colon = text.firstIndex(of: ":") { return (text[..<colon], String(text[text.index(after: colon)...])) }
            return (Substring(text), nil)
        }()
        switch kind {
        case "auto": self = .auto
        case "pulse": self = .pulse(sink: arg.flatMap { $0.isEmpty ? nil : $0 })
        case "alsa": self = .alsa(device: arg.flatMap { $0.isEmpty ? nil : $0 } ?? "default")
        case "wav":
            guard let arg, !arg.isEmpty else { return nil }
            self = .wav(path: arg, realTime: false)
        case "null": self = .null(realTime: arg != "fast")
        default: return nil
        }
    }

    /// The rate asked for with a trailing `,rate=HZ` (`wav:/tmp/out.wav,rate=44100`,
    /// `null:fast,rate=32000`, `null:rate=22050`, `alsa:hw:0,rate=96000`): the rate an engine
    /// renders at for that output instead of its own choice. Nil when the text has none or it
    /// is not a rate (1 Hz to 1,536 kHz).
    public static func sampleRate(parsing text: String) -> Double? { splitRate(text).rate }

    /// `text` without a trailing `,rate=HZ` option (or the `rate=HZ` argument of `null:`), and
    /// that rate.
    private static func splitRate(_ text: String) -> (spec: String, rate: Double?) {
        func rate(_ value: Substring) -> Double? {
            guard !value.isEmpty, value.allSatisfy(\.isNumber), let hz = Double(value), hz >= 1, hz <= 1_536_000 else { return nil }
            return hz
        }
        if text.hasPrefix("null:rate="), let hz = rate(text.dropFirst("null:rate=".count)) { return ("null", hz) }
        guard let comma = text.lastIndex(of: ",") else { return (text, nil) }
        let option = text[text.index(after: comma)...]
        guard option.hasPrefix("rate="), let hz = rate(option.dropFirst("rate=".count)) else { return (text, nil) }
        return (String(text[..<comma]), hz)
    }

    /// The `--output` text for this spec.
    public var description: String {
        switch self {
        case .auto: "auto"
        case .pulse(let sink): sink.map { "pulse:\($0)" } ?? "pulse"
        case .alsa(let device): "alsa:\(device)"
        case .wav(let path, _): "wav:\(path)"
        case .null(let realTime): realTime ? "null" : "null:fast"
        }
    }
}

/// A bounded event queue written from a device thread and read on the control side: drops
/// (and counts) events when full rather than blocking or allocating.
public final class AudioDeviceEventQueue: Sendable {
    private let queue = SPSCQueue<AudioDeviceEvent>(minimumCapacity: 64)
    /// Creates a queue.
    public init() {}
    /// Device side: posts an event (wait-free; may drop). Only one thread may post.
    public func post(_ event: AudioDeviceEvent) { queue.push(event) }
    /// Control side: takes all pending events. Only one thread may take.
    public func take() -> [AudioDeviceEvent] {
        var out: [AudioDeviceEvent] = []
        while let e = queue.pop() { out.append(e) }
        return out
    }
    /// Events dropped because the queue was full.
    public var droppedCount: Int { queue.droppedCount }
}
