import OATCore
import COATDSPLazy
import COATSpeexDSP
import Synchronization

/// Settings of a ``VoiceProcessor``.
public struct VoiceProcessingSettings: Sendable, Hashable {
    /// Sample rate of the microphone and reference signals.
    public var sampleRate: Int = 16000
    /// Frame (block) length in seconds; SpeexDSP works on 10-20 ms frames. Output lags input by
    /// one frame.
    public var frameSeconds: Double = 0.01
    /// Echo tail the canceller models, in seconds (the room's echo path plus any device delay
    /// between the reference and the microphone). 0 turns echo cancellation off.
    public var echoTailSeconds: Double = 0.128
    /// Suppresses stationary noise (SpeexDSP's spectral noise suppressor).
    public var noiseSuppression: Bool = true
    /// The most the noise suppressor attenuates noise, in dB (negative).
    public var noiseSuppressionDB: Int = -30
    /// Suppresses residual echo after the adaptive filter (needs echo cancellation).
    public var residualEchoSuppression: Bool = true
    /// Automatic gain control of the processed voice.
    public var automaticGainControl: Bool = false
    /// Creates the defaults: 16 kHz, 10 ms frames, 128 ms tail, noise and residual echo suppression.
    public init() {}
}

/// Voice processing for a microphone signal: acoustic echo cancellation against the far-end
/// (played) reference, residual echo and stationary noise suppression, optional AGC, through
/// SpeexDSP (`speex_echo_*`, `speex_preprocess_*`). Mono, Float32 in -1...1.
///
/// ``process(microphone:reference:output:frames:)`` takes any number of frames; it works in
/// frames of ``frameSize`` internally, so the output lags the microphone by exactly
/// ``latencyFrames``. The reference must be the signal that was played, aligned as closely as the
/// caller can to the time it reached the speaker (the canceller tracks up to its tail length of
/// delay).
///
/// Thread safety: one processing thread; ``process(microphone:reference:output:frames:)`` does
/// not allocate or lock. ``bypass`` may be set from any thread.
public final class VoiceProcessor: @unchecked Sendable {
    /// The settings it was made with.
    public let settings: VoiceProcessingSettings
    /// Frames per internal block.
    public let frameSize: Int
    /// Echo filter length in frames.
    public let filterLength: Int
    private let echo: OpaquePointer?
    private let pre: OpaquePointer?
    private let mic: UnsafeMutablePointer<Int16>
    private let ref: UnsafeMutablePointer<Int16>
    private let cleaned: UnsafeMutablePointer<Int16>
    private let ready: UnsafeMutablePointer<Float>
    private let micFloat: UnsafeMutablePointer<Float>
    private var position = 0
    private let bypassFlag = Atomic<Bool>(false)

    /// Creates a processor.
    public init(settings: VoiceProcessingSettings = VoiceProcessingSettings()) throws(AudioError) {
        guard settings.sampleRate >= 8000, settings.sampleRate <= 96000 else {
            throw AudioError(.invalidArgument, component: "VoiceProcessor", "sample rate \(settings.sampleRate) is outside 8000...96000", osStatus: -50)
        }
        guard settings.frameSeconds >= 0.0025, settings.frameSeconds <= 0.064 else {
            throw AudioError(.invalidArgument, component: "VoiceProcessor", "frame length \(settings.frameSeconds) s is outside 2.5...64 ms", osStatus: -50)
        }
        guard settings.echoTailSeconds >= 0, settings.echoTailSeconds <= 1 else {
            throw AudioError(.invalidArgument, component: "VoiceProcessor", "echo tail \(settings.echoTailSeconds) s is outside 0...1", osStatus: -50)
        }
        self.settings = settings
        frameSize = max(16, Int(Double(settings.sampleRate) * settings.frameSeconds))
        filterLength = Int(Double(settings.sampleRate) * settings.echoTailSeconds)
        // SpeexDSP is loaded on first use (COATDSPLazy); a missing library is an error here.
        if let why = oat_speexdsp_load() {
            throw AudioError(.unsupportedFormat, component: "VoiceProcessor", String(cString: why))
        }
        if filterLength > 0 {
            guard let e = speex_echo_state_init(Int32(frameSize), Int32(filterLength)) else {
                throw AudioError(.unsupportedFormat, component: "VoiceProcessor", "SpeexDSP echo canceller could not start")
            }
            var rate = Int32(settings.sampleRate)
            speex_echo_ctl(e, SPEEX_ECHO_SET_SAMPLING_RATE, &rate)
            echo = e
        } else {
            echo = nil
        }
        if settings.noiseSuppression || settings.automaticGainControl || (echo != nil && settings.residualEchoSuppression) {
            guard let p = speex_preprocess_state_init(Int32(frameSize), Int32(settings.sampleRate)) else {
                throw AudioError(.unsupportedFormat, component: "VoiceProcessor", "SpeexDSP preprocessor could not start")
            }
            var on: Int32 = settings.noiseSuppression ? 1 : 0
            speex_preprocess_ctl(p, SPEEX_PREPROCESS_SET_DENOISE, &on)
            var level = Int32(min(0, max(-90, settings.noiseSuppressionDB)))
            speex_preprocess_ctl(p, SPEEX_PREPROCESS_SET_NOISE_SUPPRESS, &level)
            var agc: Int32 = settings.automaticGainControl ? 1 : 0
            speex_preprocess_ctl(p, SPEEX_PREPROCESS_SET_AGC, &agc)
            if let echo, settings.residualEchoSuppression {
                speex_preprocess_ctl(p, SPEEX_PREPROCESS_SET_ECHO_STATE, UnsafeMutableRawPointer(echo))
            }
            pre = p
        } else {
            pre = nil
        }
        mic = .allocate(capacity: frameSize)
        mic.initialize(repeating: 0, count: frameSize)
        ref = .allocate(capacity: frameSize)
        ref.initialize(repeating: 0, count: frameSize)
        cleaned = .allocate(capacity: frameSize)
        cleaned.initialize(repeating: 0, count: frameSize)
        ready = .allocate(capacity: frameSize)
        ready.initialize(repeating: 0, count: frameSize)
        micFloat = .allocate(capacity: frameSize)
        micFloat.initialize(repeating: 0, count: frameSize)
    }

    deinit {
        if let pre { speex_preprocess_state_destroy(pre) }
        if let echo { speex_echo_state_destroy(echo) }
        mic.deallocate()
        ref.deallocate()
        cleaned.deallocate()
        ready.deallocate()
        micFloat.deallocate()
    }

    /// Frames the output lags the microphone input.
    public var latencyFrames: Int { frameSize }

    /// While true, the (delayed) microphone signal passes through unprocessed; the canceller
    /// keeps adapting. Thread safety: any thread.
    public var bypass: Bool {
        get { bypassFlag.load(ordering: .relaxed) }
        set { bypassFlag.store(newValue, ordering: .relaxed) }
    }

    /// Forgets the adapted echo path and noise estimate. Thread safety: processing thread only.
    public func reset() {
        if let echo { speex_echo_state_reset(echo) }
        position = 0
        ready.update(repeating: 0, count: frameSize)
    }

    /// Processes `frames` of microphone signal against the far-end `reference` (what was played,
    /// same length; nil: silence), writing the cleaned voice to `output` (may be the microphone
    /// buffer), ``latencyFrames`` late.
    /// Thread safety: processing thread only; no allocation, no locks.
    public func process(microphone: UnsafePointer<Float>, reference: UnsafePointer<Float>?,
                        output: UnsafeMutablePointer<Float>, frames: Int) {
        for i in 0..<max(0, frames) {
            let m = microphone[i]
            let r = reference?[i] ?? 0
            output[i] = ready[position]
            mic[position] = Self.toInt16(m)
            micFloat[position] = m
            ref[position] = Self.toInt16(r)
            position += 1
            if position == frameSize {
                position = 0
                runBlock()
            }
        }
    }

    private func runBlock() {
        let source: UnsafeMutablePointer<Int16>
        if let echo {
            speex_echo_cancellation(echo, mic, ref, cleaned)
            source = cleaned
        } else {
            cleaned.update(from: mic, count: frameSize)
            source = cleaned
        }
        if let pre { speex_preprocess_run(pre, source) }
        if bypassFlag.load(ordering: .relaxed) {
            ready.update(from: micFloat, count: frameSize)
        } else {
            for i in 0..<frameSize { ready[i] = Float(source[i]) / 32768 }
        }
    }

    @inline(__always)
    private static func toInt16(_ x: Float) -> Int16 {
        let v = (x * 32768).rounded()
        return Int16(max(-32768, min(32767, v.isNaN ? 0 : v)))
    }
}
