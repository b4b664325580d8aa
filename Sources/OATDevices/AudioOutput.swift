import OATCore

/// Opens outputs from an ``AudioOutputSpec``.
public enum AudioOutput {
    /// An opened output and, when ``AudioOutputSpec/auto`` had to fall back, why.
    public struct Opened: Sendable {
        /// The device.
        public var device: any AudioOutputDevice
        /// A line for the user when the choice was not the obvious one, e.g.
        /// `no audio device found: playing to the null output`.
        public var notice: String?
    }

    /// Knobs for opening; the defaults suit a player.
    public struct Options: Hashable, Sendable {
        /// The PulseAudio server (nil: `PULSE_SERVER` or the default server).
        public var pulseServer: String?
        /// How long ``AudioOutputSpec/auto`` waits for a PulseAudio server to answer.
        public var probeTimeout: Double = 0.5
        /// How long an explicit ``AudioOutputSpec/pulse(sink:)`` waits to connect.
        public var connectTimeout: Double = 2
        /// The PulseAudio target latency in seconds.
        public var pulseLatency: Double = 0.1
        /// The ALSA PCM ``AudioOutputSpec/auto`` tries when no PulseAudio server answers.
        public var alsaDevice: String = "default"
        /// The ALSA period in frames (the buffer is four periods); nil (the default):
        /// ``alsaPeriodSeconds`` at the device's rate.
        public var alsaPeriodFrames: Int?
        /// The ALSA period in seconds when ``alsaPeriodFrames`` is nil: 1024 frames at 44.1 kHz
        /// (23 ms), the same time at every rate (a fixed 1024 frames was a 21 ms buffer at 192 kHz
        /// and a 0.5 s one at 8 kHz).
        public var alsaPeriodSeconds: Double = 1024.0 / 44100

        /// The ALSA period in frames at `sampleRate`.
        public func alsaPeriod(at sampleRate: Double) -> Int {
            alsaPeriodFrames ?? max(32, Int((alsaPeriodSeconds * sampleRate).rounded()))
        }
        /// The period of null and WAV outputs in frames; nil (the default): ``renderPeriod``.
        public var framesPerRender: Int?
        /// The period of null and WAV outputs in seconds when ``framesPerRender`` is nil: 1024
        /// frames at 44.1 kHz (23 ms), the same time at every rate.
        public var renderPeriod: Double = 1024.0 / 44100

        /// ALSA PCMs no sound card paces (``ALSAOutputDevice/isClockless``: `null`, or a chain
        /// ending in it) are paced by the wall clock (``ALSAOutputDevice/pacesClocklessPCM``), so
        /// their frames track real time as on a device. Off by default: `null` and `file` PCMs
        /// then take audio as fast as it comes.
        public var paceClocklessALSA = false

        /// The null and WAV outputs' period in frames at `sampleRate`.
        public func renderFrames(at sampleRate: Double) -> Int {
            framesPerRender ?? NullOutputDevice.frames(renderPeriod, at: sampleRate)
        }

        /// Default options.
        public init(pulseServer: String? = nil, alsaDevice: String = "default") {
            self.pulseServer = pulseServer
            self.alsaDevice = alsaDevice
        }
    }

    /// Opens `spec` at `format`.
    ///
    /// ``AudioOutputSpec/auto`` tries PulseAudio (a quick connection, ``Options/probeTimeout``),
    /// then the ALSA PCM ``Options/alsaDevice``, then the paced null output with a notice.
    /// Explicit specs open exactly that output or throw (``AudioError/Code/deviceUnavailable``).
    public static func open(_ spec: AudioOutputSpec, format: AudioDeviceFormat,
                            options: Options = Options()) throws(AudioError) -> Opened {
        switch spec {
        case .pulse(let sink):
            return Opened(device: try PulseAudioOutputDevice(format: format, sink: sink, server: options.pulseServer,
                                                             targetLatency: options.pulseLatency,
                                                             connectTimeout: options.connectTimeout), notice: nil)
        case .alsa(let device):
            let alsa = try ALSAOutputDevice(device: device, format: format, periodFrames: options.alsaPeriod(at: format.sampleRate))
            alsa.pacesClocklessPCM = options.paceClocklessALSA
            return Opened(device: alsa, notice: nil)
        case .wav(let path, let realTime):
            return Opened(device: try NullOutputDevice.wavFile(path: path, format: format, realTime: realTime,
                                                                framesPerRender: options.renderFrames(at: format.sampleRate)), notice: nil)
        case .null(let realTime):
            return Opened(device: NullOutputDevice(format: format, realTime: realTime, framesPerRender: options.renderFrames(at: format.sampleRate)), notice: nil)
        case .auto:
            var reasons: [String] = []
            do {
                let device = try PulseAudioOutputDevice(format: format, sink: nil, server: options.pulseServer,
                                                        targetLatency: options.pulseLatency,
                                                        connectTimeout: options.probeTimeout)
                return Opened(device: device, notice: nil)
            } catch {
                reasons.append("PulseAudio: \(error.underlying ?? error.message)")
            }
            do {
                let device = try ALSAOutputDevice(device: options.alsaDevice, format: format, periodFrames: options.alsaPeriod(at: format.sampleRate))
                device.pacesClocklessPCM = options.paceClocklessALSA
                return Opened(device: device, notice: "no PulseAudio server: playing to ALSA \(options.alsaDevice)")
            } catch {
                reasons.append("ALSA \(options.alsaDevice): \(error.underlying ?? error.message)")
            }
            let device = NullOutputDevice(format: format, realTime: true, framesPerRender: options.renderFrames(at: format.sampleRate))
            return Opened(device: device,
                          notice: "no audio device found: playing to the null output (\(reasons.joined(separator: "; ")))")
        }
    }
}
