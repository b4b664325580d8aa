import AudioCore

/// Opens outputs by ``AudioOutputSpec``.
public enum AudioOutput {
    /// An opened output, with a notice when `auto` had to fall back.
    public struct Opened: Sendable {
        /// The device.
        public var device: any AudioOutputDevice
        /// Why the device is not what was asked for (e.g. no sound device found), if so.
        public var notice: String?
    }

    /// Opens the output `spec` names for `format`.
    public static func open(_ spec: AudioOutputSpec, format: AudioDeviceFormat) throws(AudioError) -> Opened {
        switch spec {
        case .null(let realTime):
            return Opened(device: NullOutputDevice(format: format, realTime: realTime))
        case .wav(let path, let realTime):
            return Opened(device: try NullOutputDevice.wavFile(path: path, format: format, realTime: realTime))
        case .auto:
            return Opened(device: NullOutputDevice(format: format, realTime: true),
                          notice: "no audio device found (PulseAudio and ALSA backends not available): playing to the null output")
        case .pulse, .alsa:
            throw AudioError(.deviceUnavailable, component: "AudioOutput", "the \(spec) backend is not available in this build")
        }
    }
}
