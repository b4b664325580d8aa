/// The range of stream parameters OpenAudioToolbox accepts from input (files, streams, the
/// command line). A description outside it is refused with a clear error before anything is
/// sized from it: every container parser's data format goes through `AudioStreamBasicDescription.plausibilityFailure`
/// (in `AudioFileStream`), and so do `AudioConverter`'s and `AudioFile`'s formats.
public enum FormatLimits {
    /// Most channels in a stream (the audio graph, the output queue and ALSA take 64).
    public static let maximumChannels: UInt32 = 64
    /// Lowest and highest sample rate (the output queue takes up to 1.536 MHz).
    public static let sampleRates: ClosedRange<Double> = 1...1_536_000
    /// The rates audio is played and resampled at: 1 kHz to 768 kHz (the audio graph's and the
    /// encoders' range). Files outside it parse (afinfo shows them) and convert at their own
    /// rate, but the converter does not resample from or to such a rate and the players refuse
    /// them: a file at 1 Hz would otherwise play 3 frames in 3 s, or be resampled by 44,100.
    public static let playableSampleRates: ClosedRange<Double> = 1000...768_000

    /// Why a stream at `sampleRate` cannot be played or resampled, or nil
    /// (``playableSampleRates``).
    public static func unplayableRate(_ sampleRate: Double) -> String? {
        guard !(sampleRate.isFinite && playableSampleRates.contains(sampleRate)) else { return nil }
        let hz = sampleRate.isFinite && abs(sampleRate) < 1e15 && sampleRate == sampleRate.rounded() ? String(Int64(sampleRate)) : String(sampleRate)
        return "the sample rate \(hz) Hz is outside the \(Int(playableSampleRates.lowerBound))...\(Int(playableSampleRates.upperBound)) Hz that can be played or resampled"
    }
    /// Most bits per channel (PCM up to 64-bit float).
    public static let maximumBitsPerChannel: UInt32 = 64
    /// Most frames in one packet (FLAC's largest block is 65535; CAF and MP4 can claim 2^32-1).
    public static let maximumFramesPerPacket: UInt32 = 1 << 20
    /// Largest constant packet size (the parsers' default packet size limit).
    public static let maximumBytesPerPacket: UInt32 = 16 << 20
}

extension AudioStreamBasicDescription {
    /// What makes this description implausible as input, or nil: channels 1...64, sample
    /// rate 1 Hz...1.536 MHz, bits per channel at most 64, at most 2^20 frames per packet,
    /// constant packets at most 16 MiB, and for PCM a non-zero frame size that holds the
    /// channels' samples (``validationFailure``).
    public var plausibilityFailure: String? {
        if channelsPerFrame == 0 { return "channel count is 0" }
        if channelsPerFrame > FormatLimits.maximumChannels {
            return "\(channelsPerFrame) channels (at most \(FormatLimits.maximumChannels) are supported)"
        }
        if !sampleRate.isFinite || !FormatLimits.sampleRates.contains(sampleRate) {
            return "sample rate \(sampleRate) Hz is out of range (1 Hz to 1.536 MHz)"
        }
        if bitsPerChannel > FormatLimits.maximumBitsPerChannel {
            return "\(bitsPerChannel) bits per channel (at most \(FormatLimits.maximumBitsPerChannel))"
        }
        if framesPerPacket > FormatLimits.maximumFramesPerPacket {
            return "\(framesPerPacket) frames per packet (at most \(FormatLimits.maximumFramesPerPacket))"
        }
        if bytesPerPacket > FormatLimits.maximumBytesPerPacket {
            return "\(bytesPerPacket) bytes per packet (at most \(FormatLimits.maximumBytesPerPacket))"
        }
        if isPCM {
            if let v = validationFailure { return v }
            if bytesPerFrame > FormatLimits.maximumChannels * 8 { return "PCM \(bytesPerFrame) bytes per frame (at most \(FormatLimits.maximumChannels * 8))" }
        }
        return nil
    }

    /// Throws an ``AudioError`` (`invalidData`) from `component` at `offset` when the
    /// description is implausible (see ``plausibilityFailure``).
    public func checkPlausible(component: String, at offset: Int64? = nil, code: AudioError.Code = .invalidData) throws(AudioError) {
        if let why = plausibilityFailure {
            throw AudioError(code, component: component, "refused: \(why)", offset: offset,
                             osStatus: code == .invalidData ? 0x666D_743F : nil) // 'fmt?'
        }
    }
}
