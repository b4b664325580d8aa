import OATCore
import COATMPG123

/// Decodes MPEG audio (MPEG-1/2/2.5 Layer I, II, III) frames through libmpg123 into interleaved
/// Float32 at the stream's own rate and channel count: the decoder mpg123 itself uses, with a
/// handful of small dependencies, so playing an MP3 does not load FFmpeg.
///
/// The caller splits the frames (one whole frame per ``decode(frame:_:)``); libmpg123's own
/// gapless trimming, Xing/Info parsing and parser read-ahead are off, so each frame yields its
/// samples at once and the ``AudioConverter`` applies priming and remainder trimming as it does for
/// libavcodec. A frame the decoder produces fewer samples for than its header promises (a Layer
/// III frame whose bit reservoir was lost by a seek) is completed with silence, as libavcodec
/// does, so frame counts stay exact.
final class MPG123Decoder {
    private var handle: OpaquePointer?
    /// Channels of the output (1 or 2).
    let channels: Int
    /// Output sample rate.
    let sampleRate: Int
    private let component = "AudioConverter (libmpg123)"
    private var freeFormatSize = 0
    private var silence: [Float] = []
    /// The rate libmpg123 decodes the current frames at.
    private var currentRate: Int

    private static let initialized: Int32 = mpg123_init()
    /// Most bytes libmpg123 may hold back undecoded (about five of the largest frames our
    /// parser delivers, 8 KiB free format) before its buffer is dropped.
    static let maximumHeldBytes = 40 << 10

    /// Opens a decoder for a stream of `sampleRate` Hz with `channels` (1 or 2) channels.
    init(sampleRate: Int, channels: Int) throws(AudioError) {
        self.sampleRate = sampleRate
        self.channels = channels
        currentRate = sampleRate
        _ = MPG123Decoder.initialized
        guard channels == 1 || channels == 2, sampleRate > 0 else {
            throw AudioError(.unsupportedFormat, component: component, "MPEG audio has 1 or 2 channels, not \(channels)")
        }
        var error: Int32 = 0
        guard let h = mpg123_new(nil, &error) else {
            throw AudioError(.limitExceeded, component: component, "cannot create a decoder: \(String(cString: mpg123_plain_strerror(error)))")
        }
        handle = h
        let flags = Int(MPG123_QUIET.rawValue | MPG123_NO_READAHEAD.rawValue | MPG123_IGNORE_INFOFRAME.rawValue)
        var status = oat_mpg123_param(h, MPG123_FLAGS, flags)
        if status == MPG123_OK.rawValue { status = mpg123_format_none(h) }
        // Every MPEG rate is allowed (a stream that changes rate must not make libmpg123 fail
        // its format setup, which it reports on stderr); frames at another rate than the
        // stream's are rejected in decode.
        for rate in [8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, sampleRate] where status == MPG123_OK.rawValue {
            status = mpg123_format(h, rate, Int32(channels == 1 ? MPG123_MONO.rawValue : MPG123_STEREO.rawValue), Int32(MPG123_ENC_FLOAT_32.rawValue))
        }
        if status == MPG123_OK.rawValue { status = mpg123_open_feed(h) }
        guard status == MPG123_OK.rawValue else {
            throw AudioError(.unsupportedFormat, component: component, "cannot set up decoding to \(channels) channels of Float32 at \(sampleRate) Hz: \(String(cString: mpg123_strerror(h)))")
        }
    }

    deinit {
        mpg123_delete(handle)
    }

    /// Forgets all decoder state (bit reservoir, synthesis filter), as after a seek.
    func reset() throws(AudioError) {
        guard let handle else { return }
        mpg123_close(handle)
        guard mpg123_open_feed(handle) == MPG123_OK.rawValue else {
            throw AudioError(.invalidState, component: component, "cannot restart the decoder: \(String(cString: mpg123_strerror(handle)))")
        }
    }

    /// Samples per channel a frame with this header carries, or nil when it is no MPEG audio header.
    static func samplesPerFrame(_ frame: UnsafeRawBufferPointer) -> Int? {
        guard frame.count >= 4, frame[0] == 0xFF, frame[1] & 0xE0 == 0xE0 else { return nil }
        let version = (frame[1] >> 3) & 3, layer = (frame[1] >> 1) & 3
        switch layer {
        case 3: return 384
        case 2: return 1152
        case 1: return version == 3 ? 1152 : 576
        default: return nil
        }
    }

    /// Decodes one whole frame; `output` receives the interleaved samples (one or more times).
    /// Returns false when the decoder rejected the frame (corrupt data); nothing was output then.
    func decode(frame: UnsafeRawBufferPointer, _ output: (UnsafeBufferPointer<Float>) throws(AudioError) -> Void) throws(AudioError) -> Bool {
        guard let handle, let base = frame.baseAddress, frame.count >= 4 else { return false }
        guard let expected = MPG123Decoder.samplesPerFrame(frame) else { return false }
        if frame[2] >> 4 == 0 {
            // Free format: without read-ahead the parser needs the frame size (without header and padding).
            let layer = (frame[1] >> 1) & 3
            let padding = (frame[2] >> 1) & 1 == 0 ? 0 : (layer == 3 ? 4 : 1)
            let size = frame.count - 4 - padding
            if size != freeFormatSize, size > 0 {
                freeFormatSize = size
                _ = oat_mpg123_param(handle, MPG123_FREEFORMAT_SIZE, size)
            }
        }
        guard mpg123_feed(handle, base.assumingMemoryBound(to: UInt8.self), frame.count) == MPG123_OK.rawValue else { return false }
        var produced = 0
        var rejected = false
        while true {
            var audio: UnsafeMutablePointer<UInt8>?
            var bytes = 0
            let status = oat_mpg123_decode_frame(handle, &audio, &bytes)
            if status == MPG123_NEW_FORMAT.rawValue {
                var rate = 0, outChannels: Int32 = 0, encoding: Int32 = 0
                if mpg123_getformat(handle, &rate, &outChannels, &encoding) == MPG123_OK.rawValue { currentRate = rate }
            }
            if currentRate != sampleRate {
                // A frame at another rate than the stream's: not decodable into this output.
                rejected = true
            } else if let audio, bytes >= 4 {
                let count = bytes / 4
                try output(UnsafeBufferPointer(start: UnsafeRawPointer(audio).assumingMemoryBound(to: Float.self), count: count))
                produced += count / channels
            }
            if status == MPG123_OK.rawValue || status == MPG123_NEW_FORMAT.rawValue { continue }
            if status != MPG123_NEED_MORE.rawValue && status != MPG123_DONE.rawValue && produced == 0 { rejected = true }
            break
        }
        // libmpg123 keeps bytes it could not make a frame of in its feed buffer and rescans them
        // on every call: fed junk frames (a run of bare headers) made decoding quadratic
        // (256 KiB of `FF FB 00 00`: about 50 s). More than a few frames' worth held back
        // means it is not decoding what it is fed: drop its buffer, so the work per input byte
        // stays bounded.
        if oat_mpg123_buffer_fill(handle) > MPG123Decoder.maximumHeldBytes {
            try reset()
        }
        if rejected && produced == 0 { return false }
        if produced < expected {
            // The frame decoded to nothing (its bit reservoir is missing after a reset): keep the
            // frame count exact with silence, as libavcodec does.
            let missing = (expected - produced) * channels
            if silence.count < missing { silence = Array(repeating: 0, count: missing) }
            try silence.withUnsafeBufferPointer { (p) throws(AudioError) in try output(UnsafeBufferPointer(rebasing: p[0..<missing])) }
        }
        return true
    }
}
