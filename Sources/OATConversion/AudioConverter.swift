import OATCore
import COATFFmpeg
import COATFFmpegLazy

/// Sample-rate converter quality (Apple's `kAudioConverterQuality_*` values).
public enum SampleRateConverterQuality: UInt32, Sendable, CaseIterable {
    /// Fastest, lowest quality.
    case min = 0
    /// Low quality.
    case low = 0x20
    /// Medium quality (default).
    case medium = 0x40
    /// High quality.
    case high = 0x60
    /// Best quality, slowest.
    case max = 0x7F

    /// libswresample filter length for the quality.
    var filterSize: Int64 {
        switch self {
        case .min: 8
        case .low: 16
        case .medium: 32
        case .high: 64
        case .max: 128
        }
    }
}

/// The resampler's algorithm (Apple's `kAudioConverterSampleRateConverterComplexity_*` values,
/// and through them `AVSampleRateConverterAlgorithm_*`), each a set of libswresample options on
/// top of the filter length ``SampleRateConverterQuality`` picks (see docs/avfaudio.md for the
/// measured alias rejection of each):
/// - ``linear``: the shortest filter (2 taps), cubic interpolation of the coefficients.
/// - ``normal``: libswresample's Kaiser-windowed sinc, cutoff 0.97 of the lower Nyquist.
/// - ``mastering``: four times the filter length, a Kaiser window of beta 12, finer phase steps
///   (2^12) with interpolation between them: slower, about 100 dB less alias just above the
///   output's Nyquist frequency than ``normal`` at the same quality.
/// - ``minimumPhase``: libswresample has no minimum-phase filter (its filters are linear phase,
///   their delay compensated): resamples as ``normal``.
public enum SampleRateConverterComplexity: UInt32, Sendable, CaseIterable {
    /// Linear-ish: the cheapest filter (`'line'`).
    case linear = 0x6C69_6E65
    /// The default (`'norm'`).
    case normal = 0x6E6F_726D
    /// Mastering quality, slower (`'bats'`).
    case mastering = 0x6261_7473
    /// Minimum phase (`'minp'`); resamples as ``normal`` here.
    case minimumPhase = 0x6D69_6E70
}

/// Dither for reductions of bit depth (Apple's `kDitherAlgorithm_*` values), libswresample's
/// dither methods.
public enum DitherAlgorithm: UInt32, Sendable, CaseIterable {
    /// No dither: rounding.
    case none = 0
    /// Triangular-PDF white noise of 2 LSB peak to peak (libswresample's `triangular`).
    case triangular = 1
    /// Noise-shaped dither (libswresample's `shibata`): the noise pushed above the ear's most
    /// sensitive band.
    case noiseShaping = 2
}

// `AudioConverterPrimeInfo` (frames an encoder added at the start and end) is Apple's C struct,
// declared in COATCoreAudioTypes with Apple's fields (`leadingFrames`, `trailingFrames`) and
// initialisers (`init()`, `init(leadingFrames:trailingFrames:)`).
extension AudioConverterPrimeInfo: @retroactive Equatable, @retroactive Hashable {
    /// Equal when both fields are.
    public static func == (lhs: AudioConverterPrimeInfo, rhs: AudioConverterPrimeInfo) -> Bool {
        lhs.leadingFrames == rhs.leadingFrames && lhs.trailingFrames == rhs.trailingFrames
    }
    /// Hashes both fields.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(leadingFrames)
        hasher.combine(trailingFrames)
    }
}

/// Converts audio between formats: decodes packets of any format the parsers deliver (MP3,
/// AAC, ALAC, FLAC, Opus, Vorbis, PCM, mu-law, A-law, ADPCM) through libavcodec, and converts
/// sample format, rate and channel count through libswresample: Apple's `AudioConverter`.
///
/// Two cases never load FFmpeg (it is loaded on first use, see COATFFmpegLazy): MPEG audio
/// (Layer I, II, III) decoded to Float32 at its own rate and channel count goes through
/// libmpg123, and native-endian 16/32-bit integer or Float32 PCM to Float32 at the same rate and
/// channel count is converted here. Both trim like the libavcodec path; a channel map sends them
/// back to libavcodec.
///
/// Use the pull model of `AudioConverterFillComplexBuffer`: ``fillComplexBuffer(_:maxFrames:_:)``
/// asks its input closure for packets until it has enough PCM. Priming and remainder frames
/// (``primeInfo``, ``validFrameCount``) are trimmed so gapless material plays gapless.
///
/// Thread safety: not thread-safe; use from the feeder thread. Never call it on the render thread
/// (it allocates and calls FFmpeg).
public final class AudioConverter {
    /// The format of the input packets.
    public let sourceFormat: AudioStreamBasicDescription
    /// The PCM format of the output.
    public let destinationFormat: AudioStreamBasicDescription
    /// Frames to drop at the start and end of the decoded stream, at the source rate. Set it
    /// before the first conversion (from the file's packet-table info).
    public var primeInfo = AudioConverterPrimeInfo()
    /// Frames of real audio after the leading frames; when set, everything after is dropped
    /// (more exact than ``primeInfo``'s trailing frames, which it overrides).
    public var validFrameCount: Int64?
    /// Which source channel feeds each destination channel (Apple's
    /// `kAudioConverterChannelMap`): `channelMap[i]` is the source channel for output channel
    /// `i`, or -1 for silence. nil: the default (same channels in order, or a standard
    /// up/downmix when the counts differ). Set it before converting.
    public var channelMap: [Int]?
    /// Resampling quality; takes effect for the next stream or after ``reset()``.
    public var sampleRateConverterQuality: SampleRateConverterQuality = .medium
    /// Resampling algorithm; takes effect for the next stream or after ``reset()``.
    public var sampleRateConverterComplexity: SampleRateConverterComplexity = .normal
    /// Dither when the destination has fewer bits than the decoded samples (float or 24/32-bit
    /// to 16-bit or 8-bit integer); takes effect for the next stream or after ``reset()``.
    public var dither: DitherAlgorithm = .none
    /// Frames decoded so far after trimming, at the source rate.
    public internal(set) var decodedFrameCount: Int64 = 0
    /// The last decoder error that was skipped over (a corrupt packet), if any.
    public internal(set) var lastDecodeError: AudioError?
    /// Number of packets the decoder rejected and skipped.
    public internal(set) var skippedPacketCount = 0

    /// Who decodes: libavcodec (and libswresample), libmpg123, or a plain copy.
    enum Backend { case ffmpeg, mpg123, copy }
    var backend: Backend
    var mpg123: MPG123Decoder?
    var backendChecked = false
    /// For the copy backend: bytes per source sample and whether they are Float32.
    var copySampleBytes = 4
    var copyIsFloat = true
    var copyScratch: [Float] = []
    let magicCookie: [UInt8]?
    var codec: UnsafeMutablePointer<AVCodecContext>?
    var frame: UnsafeMutablePointer<AVFrame>?
    var packet: UnsafeMutablePointer<AVPacket>?
    var swr: OpaquePointer?
    /// Source channels the resampler keeps when a channel map picks from them.
    var mapSourceChannels: Int?
    var swrInput: (format: Int32, rate: Int32, channels: Int32)?
    let outFormat: AVSampleFormat
    let outPlanes: Int
    let outBytesPerFrame: Int // per plane
    var scratch: [UnsafeMutablePointer<UInt8>?] = []
    var scratchFrames = 0
    let fifo: [PlaneFIFO]
    var fifoReadFrames = 0
    /// While ``fillComplexBuffer(_:maxFrames:_:)`` decodes into an interleaved caller's buffer:
    /// where the decoded frames go straight to (frames up to `capacity`; the FIFO takes the rest),
    /// one copy where the FIFO needed two (its write and ``read(into:maxFrames:)``'s copy out).
    var direct: (base: UnsafeMutableRawPointer, capacity: Int, filled: Int)?
    /// Packets pulled by ``fillComplexBuffer(_:maxFrames:_:)`` and the frames they gave (for
    /// the average packet length of variable-length formats).
    var pulledPackets = 0
    var pulledFrames = 0
    var leadingLeft: Int64 = 0
    var started = false
    var inputEnded = false
    var drained = false
    let component = "AudioConverter"

    /// Creates a converter from `source` (any decodable format, with its magic cookie) to
    /// `destination` (native-endian linear PCM, interleaved or not, any rate and channel count).
    public init(from source: AudioStreamBasicDescription, to destination: AudioStreamBasicDescription,
                magicCookie: [UInt8]? = nil) throws(AudioError) {
        sourceFormat = source
        destinationFormat = destination
        AudioConverter.quietFFmpegLogging
        // The one plausibility check parsers use too: nothing below sizes buffers from a
        // channel count or rate outside FormatLimits.
        try source.checkPlausible(component: "AudioConverter: source", code: .invalidArgument)
        try destination.checkPlausible(component: "AudioConverter: destination", code: .invalidArgument)
        guard let fmt = CodecMapping.sampleFormat(for: destination), destination.validationFailure == nil,
              destination.sampleRate > 0 else {
            throw AudioError(.unsupportedFormat, component: "AudioConverter",
                             "destination must be native-endian packed PCM (8-bit unsigned, 16/32/64-bit integer, 32/64-bit float): \(destination)",
                             osStatus: 0x666D_743F)
        }
        // Resampling takes rates in FormatLimits.playableSampleRates (Apple's converter refuses
        // the rates it cannot resample: 'insr' / 'ousr'); the same rate in and out is no resampling.
        if destination.sampleRate != source.sampleRate {
            if let why = FormatLimits.unplayableRate(source.sampleRate) {
                throw AudioError(.unsupportedFormat, component: "AudioConverter", "cannot resample the source to \(Int64(destination.sampleRate)) Hz: \(why)",
                                 osStatus: 0x696E_7372)
            }
            if let why = FormatLimits.unplayableRate(destination.sampleRate) {
                throw AudioError(.unsupportedFormat, component: "AudioConverter", "cannot resample \(Int64(source.sampleRate)) Hz audio to the destination: \(why)", osStatus: 0x6F75_7372)
            }
        }
        outFormat = fmt
        outPlanes = destination.isInterleaved ? 1 : Int(destination.channelsPerFrame)
        outBytesPerFrame = Int(destination.bytesPerFrame)
        fifo = (0..<outPlanes).map { _ in PlaneFIFO() }
        self.magicCookie = magicCookie
        // Float32 out at the source's own rate and channel count: no resampling or remixing.
        let sameShape = (fmt == AV_SAMPLE_FMT_FLT || fmt == AV_SAMPLE_FMT_FLTP) && destination.sampleRate == source.sampleRate
            && destination.channelsPerFrame == source.channelsPerFrame
        let mpeg: Set<AudioFormatCode> = [.mpegLayer1, .mpegLayer2, .mpegLayer3]
        if sameShape && mpeg.contains(source.formatID) && (source.channelsPerFrame == 1 || source.channelsPerFrame == 2),
           let decoder = try? MPG123Decoder(sampleRate: Int(source.sampleRate), channels: Int(source.channelsPerFrame)) {
            backend = .mpg123
            mpg123 = decoder
        } else if sameShape && source.isPCM && source.isInterleaved, let pcm = CodecMapping.sampleFormat(for: source),
                  pcm == AV_SAMPLE_FMT_FLT || pcm == AV_SAMPLE_FMT_S16 || pcm == AV_SAMPLE_FMT_S32 {
            // Native-endian 16/32-bit integer or Float32 PCM: scaled to Float32 here (by 2^-15 or
            // 2^-31, as libswresample does) without loading FFmpeg.
            backend = .copy
            copySampleBytes = pcm == AV_SAMPLE_FMT_S16 ? 2 : 4
            copyIsFloat = pcm == AV_SAMPLE_FMT_FLT
        } else {
            backend = .ffmpeg
            try openFFmpegDecoder()
        }
    }

    /// Loads the codec libraries now (FFmpeg's libavcodec, libavutil, libswresample), which
    /// converters otherwise load on first use, so that creating the first converter later does
    /// not wait for them (Apple's `AudioConverterPrepare`). Returns nil once they are loaded, or
    /// what could not be loaded. Loading happens once per process; later calls return at once.
    public static func prepareCodecs() -> String? {
        oat_ffmpeg_load().map { String(cString: $0) }
    }

    /// True when the codec libraries are loaded in this process (by ``prepareCodecs()`` or a
    /// converter).
    public static var codecsLoaded: Bool { oat_ffmpeg_is_loaded() != 0 }

    /// Opens the libavcodec decoder for ``sourceFormat`` (loading FFmpeg if needed).
    func openFFmpegDecoder() throws(AudioError) {
        let source = sourceFormat
        if let failure = oat_ffmpeg_load() {
            throw AudioError(.unsupportedFormat, component: component, "cannot decode '\(source.formatID)': \(String(cString: failure))", osStatus: 0x666D_743F)
        }
        guard let choice = CodecMapping.decoder(for: source) else {
            throw AudioError(.unsupportedFormat, component: component, "no decoder for format '\(source.formatID)' (\(source))", osStatus: 0x666D_743F)
        }
        guard let decoder = avcodec_find_decoder(choice.id) else {
            throw AudioError(.unsupportedFormat, component: component, "this libavcodec has no decoder for '\(source.formatID)'", osStatus: 0x666D_743F)
        }
        codec = avcodec_alloc_context3(decoder)
        frame = av_frame_alloc()
        packet = av_packet_alloc()
        guard let codec, frame != nil, packet != nil else {
            throw AudioError(.limitExceeded, component: component, "out of memory creating the decoder")
        }
        codec.pointee.sample_rate = Int32(source.sampleRate)
        av_channel_layout_default(&codec.pointee.ch_layout, Int32(source.channelsPerFrame))
        codec.pointee.block_align = choice.blockAlign
        codec.pointee.bits_per_coded_sample = choice.bitsPerCodedSample
        var cookie = self.magicCookie ?? []
        if choice.id == AV_CODEC_ID_OPUS && cookie.count >= 12 && cookie.starts(with: Array("OpusHead".utf8)) {
            // Give libavcodec a pre-skip of 0: it would drop the pre-skip itself, again after
            // every flush, which breaks exact seeking. Priming is trimmed here instead.
            cookie[10] = 0
            cookie[11] = 0
        }
        if !cookie.isEmpty {
            let padded = Int(AV_INPUT_BUFFER_PADDING_SIZE)
            guard let extradata = av_mallocz(cookie.count + padded)?.assumingMemoryBound(to: UInt8.self) else {
                throw AudioError(.limitExceeded, component: component, "out of memory for the magic cookie")
            }
            cookie.withUnsafeBufferPointer { extradata.update(from: $0.baseAddress!, count: cookie.count) }
            codec.pointee.extradata = extradata
            codec.pointee.extradata_size = Int32(cookie.count)
        }
        let status = avcodec_open2(codec, decoder, nil)
        if status < 0 {
            throw AudioError(.unsupportedFormat, component: component, "cannot open the '\(source.formatID)' decoder (magic cookie \(cookie.count) bytes)",
                             underlying: CodecMapping.errorText(status), osStatus: 0x21646174)
        }
    }

    /// libavcodec logs to stderr by default; problems reach callers as errors instead.
    static let quietFFmpegLogging: Void = { av_log_set_level(AV_LOG_QUIET) }()

    deinit {
        avcodec_free_context(&codec)
        av_frame_free(&frame)
        av_packet_free(&packet)
        swr_free(&swr)
        for p in scratch { av_free(p) }
    }

    /// Frames buffered in the converter and ready to be read.
    public var bufferedFrameCount: Int { (fifo[0].count / outBytesPerFrame) - fifoReadFrames }

    /// Forgets buffered audio and decoder state (after a seek). Priming is not applied again;
    /// instead the first `discardingFrames` decoded frames (source rate) are dropped, which lets
    /// a seek decode from an earlier packet and land on an exact frame.
    public func reset(discardingFrames: Int64 = 0) {
        if let codec { avcodec_flush_buffers(codec) }
        try? mpg123?.reset()
        swr_free(&swr)
        swrInput = nil
        for plane in fifo { plane.removeAll() }
        fifoReadFrames = 0
        inputEnded = false
        drained = false
        leadingLeft = max(0, discardingFrames)
        started = true
    }

    /// Sets how many more frames may come out (at the source rate) before the rest is dropped;
    /// used after a seek to keep the end trimming exact.
    public func limitRemainingFrames(_ frames: Int64?) {
        validFrameCount = frames.map { decodedFrameCount + max(0, $0) }
    }

    // MARK: Push side

    /// Decodes one packet's bytes into the converter's buffer.
    public func decode(packet bytes: UnsafeRawBufferPointer) throws(AudioError) {
        start()
        try checkBackend()
        guard bytes.count > 0 else { return }
        switch backend {
        case .ffmpeg: break
        case .mpg123:
            guard let mpg123 else { return }
            let channels = mpg123.channels
            let ok = try mpg123.decode(frame: bytes) { (samples) throws(AudioError) in
                appendInterleavedFloat(samples, channels: channels)
            }
            if !ok {
                skippedPacketCount += 1
                lastDecodeError = AudioError(.invalidData, component: component, "libmpg123 rejected a \(bytes.count)-byte packet")
            }
            return
        case .copy:
            let channels = Int(sourceFormat.channelsPerFrame)
            let usable = bytes.count / (channels * copySampleBytes) * channels
            if copyIsFloat {
                appendInterleavedFloat(UnsafeBufferPointer(start: bytes.baseAddress?.assumingMemoryBound(to: Float.self), count: usable), channels: channels)
                return
            }
            if copyScratch.count < usable { copyScratch = Array(repeating: 0, count: usable) }
            copyScratch.withUnsafeMutableBufferPointer { out in
                if copySampleBytes == 2 {
                    for i in 0..<usable { out[i] = Float(bytes.loadUnaligned(fromByteOffset: i * 2, as: Int16.self)) * (1 / 32768) }
                } else {
                    for i in 0..<usable { out[i] = Float(bytes.loadUnaligned(fromByteOffset: i * 4, as: Int32.self)) * (1 / 2_147_483_648) }
                }
            }
            copyScratch.withUnsafeBufferPointer { appendInterleavedFloat(UnsafeBufferPointer(rebasing: $0[0..<usable]), channels: channels) }
            return
        }
        guard let packet, let codec else { return }
        guard av_new_packet(packet, Int32(bytes.count)) == 0 else {
            throw AudioError(.limitExceeded, component: component, "out of memory for a \(bytes.count)-byte packet")
        }
        packet.pointee.data.update(from: bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), count: bytes.count)
        var status = avcodec_send_packet(codec, packet)
        av_packet_unref(packet)
        if status == oat_averror_eagain() {
            try receiveFrames()
            status = avcodec_send_packet(codec, packet)
        }
        if status < 0 && status != oat_averror_eagain() {
            // A corrupt packet: skip it as a player would, and remember why.
            skippedPacketCount += 1
            lastDecodeError = AudioError(.invalidData, component: component, "the decoder rejected a \(bytes.count)-byte packet", underlying: CodecMapping.errorText(status))
            return
        }
        try receiveFrames()
    }

    /// Decodes every packet of a batch.
    public func decode(_ batch: AudioPacketBatch) throws(AudioError) {
        let result: Result<Void, AudioError> = batch.data.withUnsafeBytes { raw in
            Result { () throws(AudioError) in
                if batch.packetDescriptions.isEmpty {
                    guard batch.packetCount > 0 else { return }
                    // Constant-size packets: hand the decoder a few thousand frames at a time.
                    let size = raw.count / batch.packetCount
                    let perCall = Swift.max(1, 4096 / Swift.max(1, Int(sourceFormat.framesPerPacket))) * size
                    var at = 0
                    while at < raw.count {
                        let end = Swift.min(raw.count, at + perCall)
                        try decode(packet: UnsafeRawBufferPointer(rebasing: raw[at..<end]))
                        at = end
                    }
                } else {
                    for d in batch.packetDescriptions {
                        let start = Int(d.startOffset), end = start + Int(d.dataByteSize)
                        guard start >= 0, end <= raw.count else {
                            throw AudioError(.invalidArgument, component: component, "packet description \(start)+\(d.dataByteSize) is outside the \(raw.count)-byte batch")
                        }
                        try decode(packet: UnsafeRawBufferPointer(rebasing: raw[start..<end]))
                    }
                }
            }
        }
        try result.get()
    }

    /// Tells the converter no more packets come: drains the decoder and the resampler.
    public func endOfInput() throws(AudioError) {
        guard !inputEnded else { return }
        start()
        try checkBackend()
        inputEnded = true
        if let codec {
            _ = avcodec_send_packet(codec, nil)
            try receiveFrames()
        }
        flushResampler()
        // Trailing frames without a valid-frame count: drop them from the end now.
        if validFrameCount == nil && primeInfo.trailingFrames > 0 {
            let ratio = destinationFormat.sampleRate / sourceFormat.sampleRate
            let drop = Swift.min(bufferedFrameCount, Int((Double(primeInfo.trailingFrames) * ratio).rounded()))
            for plane in fifo { plane.removeLast(drop * outBytesPerFrame) }
        }
        drained = true
    }

    /// Reads up to `maxFrames` converted frames into `buffer` (from its start); returns the count.
    /// Before ``endOfInput()``, frames that may still be trimmed as trailing frames are held back.
    public func read(into buffer: AudioPCMBuffer, maxFrames: Int? = nil) -> Int {
        let capacity = Swift.min(buffer.frameCapacity, maxFrames ?? buffer.frameCapacity)
        var available = bufferedFrameCount
        if !drained && validFrameCount == nil && primeInfo.trailingFrames > 0 {
            let ratio = destinationFormat.sampleRate / sourceFormat.sampleRate
            available -= Int((Double(primeInfo.trailingFrames) * ratio).rounded())
        }
        let n = Swift.max(0, Swift.min(capacity, available))
        guard n > 0 else { buffer.frameLength = 0; return 0 }
        for plane in 0..<outPlanes {
            fifo[plane].copy(from: fifoReadFrames * outBytesPerFrame, bytes: n * outBytesPerFrame, to: buffer.mutableBytes(plane).baseAddress!)
        }
        fifoReadFrames += n
        if fifoReadFrames * outBytesPerFrame > 1 << 16 && fifoReadFrames * 2 > fifo[0].count / outBytesPerFrame {
            for plane in fifo { plane.removeFirst(fifoReadFrames * outBytesPerFrame) }
            fifoReadFrames = 0
        }
        buffer.frameLength = n
        return n
    }

    // MARK: Pull side

    /// Fills `buffer` with up to `maxFrames` frames (default: its capacity), asking `input` for
    /// packets whenever more are needed: the shape of `AudioConverterFillComplexBuffer`.
    /// `input` receives a suggested packet count and returns a batch, or nil at the end of the
    /// stream. Returns the frames written; 0 means the stream has ended.
    public func fillComplexBuffer(_ buffer: AudioPCMBuffer, maxFrames: Int? = nil,
                                  _ input: (Int) throws(AudioError) -> AudioPacketBatch?) throws(AudioError) -> Int {
        let wanted = Swift.min(buffer.frameCapacity, maxFrames ?? buffer.frameCapacity)
        let holdback = validFrameCount == nil ? Int(primeInfo.trailingFrames) + 1 : 0
        if canDecodeDirectly(holdback: holdback), wanted > 0 {
            return try fillDirectly(buffer, wanted: wanted, input)
        }
        while !drained && bufferedFrameCount < wanted + holdback {
            // Packets to ask for: the frames wanted over the frames per packet; when packets vary
            // (FLAC, Vorbis, Opus), the frames still missing over the average packet seen so far,
            // one at first (not `wanted` packets, which decoded a whole FLAC file at once).
            let missing = wanted + holdback - bufferedFrameCount
            let count: Int
            if sourceFormat.framesPerPacket > 0 {
                count = Swift.max(1, wanted / Int(sourceFormat.framesPerPacket))
            } else if pulledPackets > 0 && pulledFrames > 0 {
                count = Swift.max(1, missing / Swift.max(1, pulledFrames / pulledPackets))
            } else {
                count = 1
            }
            guard let batch = try input(count) else {
                try endOfInput()
                break
            }
            let before = bufferedFrameCount
            try decode(batch)
            pulledPackets += batch.packetCount
            pulledFrames += Swift.max(0, bufferedFrameCount - before)
        }
        return read(into: buffer, maxFrames: wanted)
    }

    /// True when decoded frames may go straight into the caller's buffer: libmpg123 or a Float32
    /// copy (decoders that deliver interleaved Float32 through ``appendInterleavedFloat(_:channels:)``)
    /// into an interleaved destination, with nothing held back for trimming at the end (the
    /// valid length is known, or there are no trailing frames), so every frame appended is final.
    func canDecodeDirectly(holdback: Int) -> Bool {
        holdback == 0 && outPlanes == 1 && !drained && (backend == .mpg123 || (backend == .copy && copyIsFloat))
            && channelMap == nil
    }

    /// ``fillComplexBuffer(_:maxFrames:_:)`` decoding into `buffer` itself: what the FIFO holds
    /// first, then frames as the decoder delivers them; only the last packet's overflow goes
    /// through the FIFO. Asks for the packets the missing frames need, not `wanted` frames' worth
    /// each time (which left up to a whole batch in the FIFO).
    func fillDirectly(_ buffer: AudioPCMBuffer, wanted: Int,
                      _ input: (Int) throws(AudioError) -> AudioPacketBatch?) throws(AudioError) -> Int {
        let base = buffer.mutableBytes(0).baseAddress!
        var filled = 0
        if bufferedFrameCount > 0 {
            filled = read(into: buffer, maxFrames: wanted)
            if filled == wanted { return filled }
        }
        direct = (base + filled * outBytesPerFrame, wanted - filled, 0)
        defer { direct = nil }
        do throws(AudioError) {
            while !drained && filled + direct!.filled + bufferedFrameCount < wanted {
                let missing = wanted - filled - direct!.filled - bufferedFrameCount
                let perPacket = Int(sourceFormat.framesPerPacket)
                let count = perPacket > 0 ? Swift.max(1, (missing + perPacket - 1) / perPacket) : 1
                guard let batch = try input(count) else {
                    try endOfInput()
                    break
                }
                let before = direct!.filled + bufferedFrameCount
                try decode(batch)
                pulledPackets += batch.packetCount
                pulledFrames += Swift.max(0, direct!.filled + bufferedFrameCount - before)
            }
        } catch {
            // The input (or a packet) failed after frames went straight into `buffer`: they go
            // back to the front of the FIFO, where the FIFO path would have left them, so the
            // caller still gets them (``read(into:maxFrames:)``). Thrown with them only in
            // `buffer`, they were lost: AudioConverterFillComplexBuffer then read the (empty)
            // FIFO over them and reported 0 packets with the input proc's error.
            let delivered = filled + direct!.filled
            direct = nil
            restoreToFIFO(from: base, frames: delivered)
            throw error
        }
        // The FIFO only takes frames once the buffer is full: they follow the buffer's last frame.
        filled += direct!.filled
        direct = nil
        buffer.frameLength = filled
        return filled
    }

    /// Puts `frames` frames at `source` (one interleaved plane) back in front of what the FIFO
    /// holds (after a failed direct fill).
    private func restoreToFIFO(from source: UnsafeMutableRawPointer, frames: Int) {
        guard frames > 0, outPlanes == 1 else { return }
        let restBytes = bufferedFrameCount * outBytesPerFrame
        var rest = [UInt8](repeating: 0, count: restBytes)
        if restBytes > 0 { rest.withUnsafeMutableBytes { fifo[0].copy(from: fifoReadFrames * outBytesPerFrame, bytes: restBytes, to: $0.baseAddress!) } }
        fifo[0].removeAll()
        fifoReadFrames = 0
        fifo[0].append(UnsafeRawBufferPointer(start: source, count: frames * outBytesPerFrame))
        rest.withUnsafeBytes { fifo[0].append($0) }
    }

    // MARK: Internals

    func start() {
        guard !started else { return }
        started = true
        leadingLeft = Int64(primeInfo.leadingFrames)
    }

    /// A channel map is set after init: only the libavcodec path applies it.
    func checkBackend() throws(AudioError) {
        guard !backendChecked else { return }
        backendChecked = true
        if backend != .ffmpeg && channelMap != nil {
            backend = .ffmpeg
            mpg123 = nil
            try openFFmpegDecoder()
        }
    }
}
