import OATCore

/// Receives `frameCount` captured frames, interleaved Float32 (`samples.count` is
/// `frameCount * channels`), captured at `time` (sample time: frames captured before these since
/// start; host time: when the first of them reached the device, estimated from its latency).
///
/// Thread safety: called on the device's real-time thread. It must not allocate, lock, log,
/// call user code, touch actors or FFmpeg: copy into a preallocated ring (``SPSCRingBuffer``)
/// and return.
public typealias AudioCaptureCallback = @Sendable (_ samples: UnsafeBufferPointer<Float>, _ frameCount: Int,
                                                   _ time: AudioTimeStamp) -> Void

/// An audio input: pushes captured PCM to a callback from its own real-time thread (the push
/// model, the mirror of ``AudioOutputDevice``).
///
/// Lifecycle: create (opens the device), ``start(_:)``, optionally ``pause()``/``resume()``,
/// ``stop()``; ``close()`` releases it (also done on deinit). Events (started, overruns as
/// ``AudioDeviceEvent/underrun(frames:)``, device loss as ``AudioDeviceEvent/lost(reason:)``)
/// are taken with ``takeEvents()``.
/// Thread safety: control methods may be called from any one control thread; the counters are
/// atomics readable from anywhere.
public protocol AudioInputDevice: AnyObject, Sendable {
    /// Human-readable name, e.g. `pulse:oat_test.monitor`, `alsa:default`.
    var name: String { get }
    /// The format frames are delivered in (interleaved Float32 at this rate and channel count).
    var format: AudioDeviceFormat { get }
    /// Frames per callback at most.
    var framesPerCapture: Int { get }
    /// Estimated capture latency in seconds (from the sound reaching the device to the callback).
    var latency: Double { get }
    /// Frames delivered to the callback since start.
    var capturedFrames: Int64 { get }
    /// Starts capturing into `capture`.
    func start(_ capture: @escaping AudioCaptureCallback) throws(AudioError)
    /// Stops delivering frames (the device may discard what it captures meanwhile).
    func pause() throws(AudioError)
    /// Continues after ``pause()``.
    func resume() throws(AudioError)
    /// Stops capturing; after it returns the callback is not called again.
    func stop()
    /// Releases the device.
    func close()
    /// Takes the events that happened since the last call (bounded; excess events are counted
    /// in ``droppedEventCount``).
    func takeEvents() -> [AudioDeviceEvent]
    /// Events lost because the event queue was full.
    var droppedEventCount: Int { get }
}

/// Which input to open.
public enum AudioInputSpec: Hashable, Sendable, CustomStringConvertible {
    /// PulseAudio's default source if a server answers, else ALSA's default capture device.
    case auto
    /// A PulseAudio source (nil: the server's default), e.g. `alsa_input.usb-...` or a sink's
    /// monitor `SINK.monitor`.
    case pulse(source: String?)
    /// An ALSA capture PCM (`default`, `hw:0`, `plughw:1,0`, `pulse`).
    case alsa(device: String)

    /// Parses `auto`, `pulse`, `pulse:SOURCE`, `alsa`, `alsa:DEVICE` (the afrecord `--input`
    /// syntax); nil for anything else.
    public init?(parsing text: String) {
        let (kind, arg): (Substring, String?) = {
            if let colon = text.firstIndex(of: ":") { return (text[..<colon], String(text[text.index(after: colon)...])) }
            return (Substring(text), nil)
        }()
        switch kind {
        case "auto" where arg == nil: self = .auto
        case "pulse": self = .pulse(source: arg.flatMap { $0.isEmpty ? nil : $0 })
        case "alsa": self = .alsa(device: arg.flatMap { $0.isEmpty ? nil : $0 } ?? "default")
        default: return nil
        }
    }

    /// The `--input` text for this spec.
    public var description: String {
        switch self {
        case .auto: "auto"
        case .pulse(let source): source.map { "pulse:\($0)" } ?? "pulse"
        case .alsa(let device): "alsa:\(device)"
        }
    }
}

/// An input device as listed by ``AudioInput/listDevices(options:)``.
public struct AudioInputDeviceInfo: Hashable, Sendable {
    /// What `--input` takes to open it, e.g. `pulse:oat_test.monitor`, `alsa:hw:CARD=PCH,DEV=0`.
    public var spec: AudioInputSpec
    /// The human-readable description.
    public var description: String
    /// The native sample rate and channel count, when the backend reports them.
    public var nativeFormat: AudioDeviceFormat?
    /// True for PulseAudio's default source.
    public var isDefault: Bool
    /// True for a sink's monitor (it records what plays on that sink).
    public var isMonitor: Bool

    /// Creates a device description.
    public init(spec: AudioInputSpec, description: String, nativeFormat: AudioDeviceFormat? = nil,
                isDefault: Bool = false, isMonitor: Bool = false) {
        self.spec = spec
        self.description = description
        self.nativeFormat = nativeFormat
        self.isDefault = isDefault
        self.isMonitor = isMonitor
    }
}

/// Opens inputs from an ``AudioInputSpec``.
public enum AudioInput {
    /// An opened input and, when ``AudioInputSpec/auto`` had to fall back, why.
    public struct Opened: Sendable {
        /// The device.
        public var device: any AudioInputDevice
        /// A line for the user when the choice was not the obvious one.
        public var notice: String?
    }

    /// Knobs for opening; the defaults suit a recorder.
    public struct Options: Hashable, Sendable {
        /// The PulseAudio server (nil: `PULSE_SERVER` or the default server).
        public var pulseServer: String?
        /// How long ``AudioInputSpec/auto`` waits for a PulseAudio server to answer.
        public var probeTimeout: Double = 0.5
        /// How long an explicit ``AudioInputSpec/pulse(source:)`` waits to connect.
        public var connectTimeout: Double = 2
        /// The PulseAudio fragment size in seconds (how often the server delivers).
        public var pulseFragment: Double = 0.02
        /// The ALSA PCM ``AudioInputSpec/auto`` tries when no PulseAudio server answers.
        public var alsaDevice: String = "default"
        /// The ALSA period in frames (the buffer is eight periods).
        public var alsaPeriodFrames: Int = 512

        /// Default options.
        public init(pulseServer: String? = nil, alsaDevice: String = "default") {
            self.pulseServer = pulseServer
            self.alsaDevice = alsaDevice
        }
    }

    /// Opens `spec` delivering `format`.
    ///
    /// ``AudioInputSpec/auto`` tries PulseAudio's default source (a quick connection,
    /// ``Options/probeTimeout``), then the ALSA PCM ``Options/alsaDevice``; with neither it
    /// throws ``AudioError/Code/deviceUnavailable`` naming both failures. Explicit specs open
    /// exactly that input or throw.
    public static func open(_ spec: AudioInputSpec, format: AudioDeviceFormat,
                            options: Options = Options()) throws(AudioError) -> Opened {
        switch spec {
        case .pulse(let source):
            return Opened(device: try PulseAudioInputDevice(format: format, source: source, server: options.pulseServer,
                                                            fragment: options.pulseFragment,
                                                            connectTimeout: options.connectTimeout), notice: nil)
        case .alsa(let device):
            return Opened(device: try ALSAInputDevice(device: device, format: format, periodFrames: options.alsaPeriodFrames), notice: nil)
        case .auto:
            var reasons: [String] = []
            do {
                let device = try PulseAudioInputDevice(format: format, source: nil, server: options.pulseServer,
                                                       fragment: options.pulseFragment, connectTimeout: options.probeTimeout)
                return Opened(device: device, notice: nil)
            } catch {
                reasons.append("PulseAudio: \(error.underlying ?? error.message)")
            }
            do {
                let device = try ALSAInputDevice(device: options.alsaDevice, format: format, periodFrames: options.alsaPeriodFrames)
                return Opened(device: device, notice: "no PulseAudio server: recording from ALSA \(options.alsaDevice)")
            } catch {
                reasons.append("ALSA \(options.alsaDevice): \(error.underlying ?? error.message)")
            }
            throw AudioError(.deviceUnavailable, component: "AudioInput", "no input device found (\(reasons.joined(separator: "; ")))")
        }
    }

    /// Lists PulseAudio sources (with descriptions; monitors included) when a server answers,
    /// then ALSA's capture PCMs.
    public static func listDevices(options: Options = Options()) -> [AudioInputDeviceInfo] {
        var out: [AudioInputDeviceInfo] = []
        if let sources = try? PulseQuery.listSources(server: options.pulseServer, timeout: max(options.probeTimeout, 1)) {
            out += sources
        }
        out += ALSAInputDevice.listDevices()
        return out
    }
}
