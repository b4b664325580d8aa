import OATCore
import COATALSA
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// An open ALSA PCM and the private configuration it was opened with: the one open, configure,
/// recover and reopen path of ``ALSAOutputDevice`` (playback) and ``ALSAInputDevice`` (capture).
/// Reopened in place by the device thread after a loss; closed once.
final class PCMHandle: @unchecked Sendable {
    struct Setup {
        var rate: Int
        var period: Int
        var buffer: Int
        var sampleFormat: ALSASampleFormat
    }

    private(set) var pcm: OpaquePointer?
    private var config: OpaquePointer?
    private(set) var canPause = false
    private let closed = Atomic<Bool>(false)
    /// Playback or capture.
    let stream: snd_pcm_stream_t
    /// `ALSA output` / `ALSA input`, for errors.
    let component: String

    private init(pcm: OpaquePointer, config: OpaquePointer?, stream: snd_pcm_stream_t) {
        self.pcm = pcm
        self.config = config
        self.stream = stream
        component = Self.componentName(stream)
    }

    private static func componentName(_ stream: snd_pcm_stream_t) -> String {
        stream == SND_PCM_STREAM_CAPTURE ? "ALSA input" : "ALSA output"
    }

    static func open(_ name: String, stream: snd_pcm_stream_t = SND_PCM_STREAM_PLAYBACK, configText: String?) throws(AudioError) -> PCMHandle {
        let (pcm, config) = try openRaw(name, stream: stream, configText: configText)
        return PCMHandle(pcm: pcm, config: config, stream: stream)
    }

    /// Opens `name` and configures it (``configure(format:preferred:period:buffer:)``), closing
    /// it again when the PCM refuses the setup.
    static func open(_ name: String, stream: snd_pcm_stream_t, configText: String?, format: AudioDeviceFormat,
                     preferred: ALSASampleFormat, period: Int, buffer: Int) throws(AudioError) -> (PCMHandle, Setup) {
        let handle = try open(name, stream: stream, configText: configText)
        do {
            return (handle, try handle.configure(format: format, preferred: preferred, period: period, buffer: buffer))
        } catch {
            handle.close()
            throw error
        }
    }

    /// The rate `name` runs at without resampling nearest `preferred` (what
    /// `snd_pcm_hw_params_set_rate_near` picks from the PCM's own rates): the PCM is opened with
    /// `SND_PCM_NO_AUTO_RESAMPLE`, so a `plug` PCM (`default`, `plughw:`) offers its slave's
    /// rates instead of converting any rate; PCMs that take any rate (`null`, `file:`, `pulse`)
    /// give `preferred`. Opened non-blocking and closed again; throws when the PCM cannot be
    /// opened (busy, missing) or refuses every rate.
    static func nativeRate(_ name: String, stream: snd_pcm_stream_t = SND_PCM_STREAM_PLAYBACK, configText: String?,
                           near preferred: Int) throws(AudioError) -> Int {
        let (pcm, config) = try openRaw(name, stream: stream, configText: configText,
                                        mode: Int32(SND_PCM_NO_AUTO_RESAMPLE) | Int32(SND_PCM_NONBLOCK))
        defer {
            snd_pcm_close(pcm)
            if let config { snd_config_delete(config) }
        }
        let component = componentName(stream)
        var hw: OpaquePointer?
        guard snd_pcm_hw_params_malloc(&hw) >= 0 else {
            throw AudioError(.deviceUnavailable, component: component, "cannot allocate hardware parameters")
        }
        defer { snd_pcm_hw_params_free(hw) }
        var err = snd_pcm_hw_params_any(pcm, hw)
        var rate = UInt32(max(1, preferred))
        var dir: Int32 = 0
        if err >= 0 { err = snd_pcm_hw_params_set_rate_near(pcm, hw, &rate, &dir) }
        guard err >= 0, rate > 0 else {
            throw AudioError(.unsupportedFormat, component: component, "\(name) offers no sample rate", underlying: String(cString: snd_strerror(err)))
        }
        return Int(rate)
    }

    private static func openRaw(_ name: String, stream: snd_pcm_stream_t, configText: String?, mode: Int32 = 0) throws(AudioError) -> (OpaquePointer, OpaquePointer?) {
        let component = componentName(stream)
        try DeviceLibraries.requireALSA(component: component)
        let what = stream == SND_PCM_STREAM_CAPTURE ? "capture PCM" : "PCM"
        // ALSA prints open failures to stderr; they become AudioErrors here, so keep this
        // thread's ALSA messages quiet while opening.
        let previousHandler = snd_lib_error_set_local { _, _, _, _, _, _ in }
        defer { snd_lib_error_set_local(previousHandler) }
        var pcm: OpaquePointer?
        guard let configText else {
            let err = snd_pcm_open(&pcm, name, stream, mode)
            guard err >= 0, let pcm else {
                throw AudioError(.deviceUnavailable, component: component, "cannot open \(what) \(name)", underlying: String(cString: snd_strerror(err)))
            }
            return (pcm, nil)
        }
        var top: OpaquePointer?
        var update: OpaquePointer?
        var err = snd_config_update_r(&top, &update, nil)
        if update != nil { snd_config_update_free(update) }
        guard err >= 0, let top else {
            throw AudioError(.deviceUnavailable, component: component, "cannot read the ALSA configuration", underlying: String(cString: snd_strerror(err)))
        }
        var input: OpaquePointer?
        err = snd_input_buffer_open(&input, configText, configText.utf8.count)
        if err >= 0, let input {
            err = snd_config_load(top, input)
            snd_input_close(input)
        }
        guard err >= 0 else {
            snd_config_delete(top)
            throw AudioError(.invalidArgument, component: component, "bad ALSA configuration text", underlying: String(cString: snd_strerror(err)))
        }
        err = snd_pcm_open_lconf(&pcm, name, stream, mode, top)
        guard err >= 0, let pcm else {
            snd_config_delete(top)
            throw AudioError(.deviceUnavailable, component: component, "cannot open \(what) \(name)", underlying: String(cString: snd_strerror(err)))
        }
        return (pcm, top)
    }

    func configure(format: AudioDeviceFormat, preferred: ALSASampleFormat, period: Int, buffer: Int) throws(AudioError) -> Setup {
        guard let pcm else { throw AudioError(.invalidState, component: component, "PCM is closed") }
        func check(_ err: Int32, _ what: String) throws(AudioError) {
            if err < 0 {
                throw AudioError(.unsupportedFormat, component: component, "cannot set \(what)", underlying: String(cString: snd_strerror(err)))
            }
        }
        var hw: OpaquePointer?
        try check(snd_pcm_hw_params_malloc(&hw), "hardware parameters")
        defer { snd_pcm_hw_params_free(hw) }
        try check(snd_pcm_hw_params_any(pcm, hw), "hardware parameters")
        try check(snd_pcm_hw_params_set_access(pcm, hw, SND_PCM_ACCESS_RW_INTERLEAVED), "interleaved access")
        var sampleFormat = preferred
        let formats: [ALSASampleFormat] = preferred == .float32 ? [.float32, .int16] : [.int16, .float32]
        var formatErr: Int32 = -EINVAL
        for f in formats {
            formatErr = snd_pcm_hw_params_set_format(pcm, hw, f == .float32 ? SND_PCM_FORMAT_FLOAT_LE : SND_PCM_FORMAT_S16_LE)
            if formatErr >= 0 { sampleFormat = f; break }
        }
        try check(formatErr, "a float32 or int16 sample format")
        try check(snd_pcm_hw_params_set_channels(pcm, hw, UInt32(format.channels)), "\(format.channels) channels")
        var rate = UInt32(format.sampleRate)
        var dir: Int32 = 0
        try check(snd_pcm_hw_params_set_rate_near(pcm, hw, &rate, &dir), "rate \(Int(format.sampleRate))")
        var periodSize = snd_pcm_uframes_t(period)
        dir = 0
        try check(snd_pcm_hw_params_set_period_size_near(pcm, hw, &periodSize, &dir), "period size \(period)")
        var bufferSize = snd_pcm_uframes_t(max(buffer, Int(periodSize) * 2))
        try check(snd_pcm_hw_params_set_buffer_size_near(pcm, hw, &bufferSize), "buffer size \(buffer)")
        try check(snd_pcm_hw_params(pcm, hw), "hardware parameters")
        dir = 0
        snd_pcm_hw_params_get_period_size(hw, &periodSize, &dir)
        snd_pcm_hw_params_get_buffer_size(hw, &bufferSize)
        canPause = snd_pcm_hw_params_can_pause(hw) != 0

        // Playback starts once the buffer is nearly full; capture is started by the device.
        var sw: OpaquePointer?
        if stream == SND_PCM_STREAM_PLAYBACK, snd_pcm_sw_params_malloc(&sw) >= 0 {
            defer { snd_pcm_sw_params_free(sw) }
            if snd_pcm_sw_params_current(pcm, sw) >= 0 {
                snd_pcm_sw_params_set_start_threshold(pcm, sw, bufferSize - periodSize)
                snd_pcm_sw_params_set_avail_min(pcm, sw, periodSize)
                snd_pcm_sw_params(pcm, sw)
            }
        }
        return Setup(rate: Int(rate), period: Int(periodSize), buffer: Int(bufferSize), sampleFormat: sampleFormat)
    }

    /// Closes and reopens the PCM with the same setup (device thread only, while lost).
    func reopen(_ name: String, configText: String?, format: AudioDeviceFormat, preferred: ALSASampleFormat,
                period: Int, buffer: Int) throws(AudioError) {
        let (newPCM, newConfig) = try Self.openRaw(name, stream: stream, configText: configText)
        let oldPCM = pcm, oldConfig = config
        pcm = newPCM
        config = newConfig
        if let oldPCM { snd_pcm_close(oldPCM) }
        if let oldConfig { snd_config_delete(oldConfig) }
        let setup = try configure(format: format, preferred: preferred, period: period, buffer: buffer)
        guard setup.sampleFormat == preferred, setup.rate == Int(format.sampleRate) else {
            throw AudioError(.unsupportedFormat, component: component, "the reopened PCM changed format")
        }
    }

    /// Device thread: recovers from an xrun (`-EPIPE`), a suspend (`-ESTRPIPE`) or an
    /// interrupted call in place; false when the PCM cannot be recovered (it went away).
    func recover(_ err: Int32) -> Bool {
        guard err == -EPIPE || err == -ESTRPIPE || err == -EINTR else { return false }
        return snd_pcm_recover(pcm, err, 1) == 0
    }

    /// The PCMs ALSA's configuration and cards offer for `direction` (`Output` or `Input`;
    /// PCMs that do both are listed too), as `snd_device_name_hint` names and describes them.
    static func nameHints(direction: String) -> [(name: String, description: String)] {
        // Without libasound there are no ALSA devices to list.
        guard DeviceLibraries.alsaLoadError == nil else { return [] }
        var hints: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
        guard snd_device_name_hint(-1, "pcm", &hints) == 0, let hints else { return [] }
        defer { snd_device_name_free_hint(hints) }
        func take(_ p: UnsafeMutablePointer<CChar>?) -> String? {
            guard let p else { return nil }
            defer { free(p) }
            return String(cString: p)
        }
        var out: [(name: String, description: String)] = []
        var i = 0
        while let hint = hints[i] {
            i += 1
            let ioid = take(snd_device_name_get_hint(hint, "IOID"))
            guard ioid == nil || ioid == direction, let name = take(snd_device_name_get_hint(hint, "NAME")) else { continue }
            out.append((name, take(snd_device_name_get_hint(hint, "DESC")) ?? ""))
        }
        return out
    }

    func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        if let pcm { snd_pcm_close(pcm) }
        if let config { snd_config_delete(config) }
        pcm = nil
        config = nil
    }

    deinit { close() }
}
