import OATCore
import COATFFmpeg
import COATFFmpegLazy

/// How an encoder spends bits (Apple's `kAudioCodecBitRateControlMode_*`).
public enum BitRateStrategy: String, Sendable, CaseIterable {
    /// Constant bit rate.
    case constant
    /// Average bit rate over the long term.
    case longTermAverage
    /// Variable, kept near the bit rate.
    case variableConstrained
    /// Variable, driven by quality.
    case variable
}

/// Encoder settings: what `kAudioConverterEncodeBitRate`, `kAudioConverterCodecQuality` and
/// `kAudioCodecPropertyBitRateControlMode` set on Apple's converters.
public struct AudioEncoderSettings: Hashable, Sendable {
    /// Bits per second for lossy codecs; nil picks a default for the channel count.
    public var bitRate: Int?
    /// Codec quality 0...127 (Apple's scale; 127 = best/slowest); nil = the codec's default.
    public var quality: Int?
    /// Bit-rate strategy; nil = the codec's default (VBR for Opus, CBR for AAC/MP3).
    public var strategy: BitRateStrategy?
    /// Creates settings.
    public init(bitRate: Int? = nil, quality: Int? = nil, strategy: BitRateStrategy? = nil) {
        self.bitRate = bitRate
        self.quality = quality
        self.strategy = strategy
    }
}

/// The encoding half of Apple's `AudioConverter`: linear PCM in, packets of a compressed (or
/// another PCM) format out, through libavcodec. AAC-LC (FFmpeg's native encoder; HE-AAC needs
/// libfdk_aac, which Debian's libavcodec does not have), Apple Lossless, FLAC, Opus (libopus),
/// MP3 (libmp3lame), linear PCM of any width and byte order, mu-law and A-law.
///
/// Feed it PCM in ``inputFormat`` (the sample layout the codec takes natively: read your source
/// through an ``AudioConverter`` or `ExtendedAudioFile` in that format), collect the packets,
/// call ``finish()`` at the end. ``magicCookie`` is in this project's conventions (AAC: the
/// AudioSpecificConfig; ALAC: the 36-byte `alac` atom; FLAC: the 34-byte STREAMINFO; Opus: an
/// OpusHead), and ``packetTableInfo`` gives priming (the encoder delay) and remainder frames.
///
/// Thread safety: not thread-safe; use from one thread.
public final class AudioEncoder {
    /// The PCM format ``encode(_:)`` takes (native sample layout of the codec).
    public let inputFormat: AudioStreamBasicDescription
    /// The format of the packets produced, completed (frames per packet, flags).
    public let outputFormat: AudioStreamBasicDescription
    /// The decoder's magic cookie, if the format has one (updated by ``finish()`` for FLAC).
    public private(set) var magicCookie: [UInt8]?
    /// Frames the encoder adds before the audio (Apple's `kAudioConverterPrimeInfo`); the
    /// trailing count is known after ``finish()``.
    public private(set) var primeInfo: AudioConverterPrimeInfo
    /// PCM frames fed so far.
    public private(set) var inputFrameCount: Int64 = 0
    /// Frames the packets produced so far decode to.
    public private(set) var encodedFrameCount: Int64 = 0
    /// Packets produced so far.
    public private(set) var packetCount: Int64 = 0

    private var codec: UnsafeMutablePointer<AVCodecContext>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private let sampleFormat: AVSampleFormat
    private let planes: Int
    private let planeBytesPerFrame: Int
    private let frameSize: Int
    private let padLastFrame: Bool
    private var fifo: [[UInt8]]
    private var finished = false
    private let isCBR: Bool
    private let component = "AudioEncoder"

    /// The libavcodec encoder name for a format, or nil when none is available.
    static func encoderName(for format: AudioStreamBasicDescription) -> String? {
        switch format.formatID {
        case .mpeg4AAC: "aac"
        case .appleLossless: "alac"
        case .flac: "flac"
        case .opus: "libopus"
        case .mpegLayer3: "libmp3lame"
        default: nil
        }
    }

    /// Formats this build can encode to (besides linear PCM).
    public static var encodableFormats: [AudioFormatCode] {
        [.mpeg4AAC, .appleLossless, .flac, .opus, .mpegLayer3, .ulaw, .alaw].filter { id in
            if id == .ulaw || id == .alaw { return true }
            guard let name = encoderName(for: .compressed(id, sampleRate: 44100, channels: 2, framesPerPacket: 0)) else { return false }
            return avcodec_find_encoder_by_name(name) != nil
        }
    }

    /// Creates an encoder producing `destination` (sample rate and channel count as given; for
    /// lossless formats `sourceBitDepth` picks 16 or 24 bits when the flags do not say).
    public init(to destination: AudioStreamBasicDescription, sourceBitDepth: Int = 16,
                settings: AudioEncoderSettings = AudioEncoderSettings()) throws(AudioError) {
        av_log_set_level(AV_LOG_QUIET)
        if let failure = oat_ffmpeg_load() {
            throw AudioError(.unsupportedFormat, component: "AudioEncoder", "cannot encode '\(destination.formatID)': \(String(cString: failure))")
        }
        let rate = destination.sampleRate
        let channels = destination.channelsPerFrame
        guard rate >= 1000, rate <= 768_000, rate == rate.rounded(), channels > 0, channels <= 8 else {
            throw AudioError(.invalidArgument, component: component, "cannot encode \(channels) channels at \(rate) Hz")
        }
        let found: UnsafePointer<AVCodec>?
        var bits = sourceBitDepth
        switch destination.formatID {
        case .linearPCM:
            guard destination.validationFailure == nil, let choice = CodecMapping.pcmDecoder(for: destination) else {
                throw AudioError(.unsupportedFormat, component: component, "cannot write PCM as \(destination)")
            }
            found = avcodec_find_encoder(choice.id)
            bits = Int(destination.bitsPerChannel)
        case .ulaw: found = avcodec_find_encoder(AV_CODEC_ID_PCM_MULAW); bits = 16
        case .alaw: found = avcodec_find_encoder(AV_CODEC_ID_PCM_ALAW); bits = 16
        default:
            guard let name = Self.encoderName(for: destination) else {
                throw AudioError(.unsupportedFormat, component: component,
                                 "no encoder for '\(destination.formatID)'" + (destination.formatID == .mpeg4AAC_HE || destination.formatID == .mpeg4AAC_HE_V2 ? " (HE-AAC needs libfdk_aac, which this libavcodec lacks)" : ""))
            }
            found = avcodec_find_encoder_by_name(name)
            let depth: Int? = switch destination.formatFlags.rawValue {
            case 1: 16
            case 2: 20
            case 3: 24
            case 4: 32
            default: nil
            }
            if let depth { bits = depth }
            bits = bits > 16 ? 24 : 16
        }
        guard let encoder = found else {
            throw AudioError(.unsupportedFormat, component: component, "this libavcodec has no encoder for '\(destination.formatID)'")
        }
        if destination.formatID == .opus && ![8000.0, 12000, 16000, 24000, 48000].contains(rate) {
            throw AudioError(.unsupportedFormat, component: component, "Opus encodes at 8, 12, 16, 24 or 48 kHz, not \(rate) Hz")
        }
        // The sample layout: integers for lossless and PCM (bit-exact), float for lossy codecs.
        var supported: [AVSampleFormat] = []
        if var p = encoder.pointee.sample_fmts {
            while p.pointee != AV_SAMPLE_FMT_NONE { supported.append(p.pointee); p += 1 }
        }
        let lossy = [AudioFormatCode.mpeg4AAC, .opus, .mpegLayer3].contains(destination.formatID)
        let preference: [AVSampleFormat] = lossy ? [AV_SAMPLE_FMT_FLTP, AV_SAMPLE_FMT_FLT, AV_SAMPLE_FMT_S16P, AV_SAMPLE_FMT_S16]
            : bits > 16 ? [AV_SAMPLE_FMT_S32, AV_SAMPLE_FMT_S32P, AV_SAMPLE_FMT_FLT, AV_SAMPLE_FMT_DBL, AV_SAMPLE_FMT_S64]
            : [AV_SAMPLE_FMT_S16, AV_SAMPLE_FMT_S16P, AV_SAMPLE_FMT_U8, AV_SAMPLE_FMT_S32, AV_SAMPLE_FMT_FLT, AV_SAMPLE_FMT_DBL]
        guard let fmt = preference.first(where: { supported.contains($0) }) ?? supported.first else {
            throw AudioError(.unsupportedFormat, component: component, "the '\(destination.formatID)' encoder takes no sample format this project produces")
        }
        sampleFormat = fmt
        let planar = av_sample_fmt_is_planar(fmt) != 0
        let sampleBytes = Int(av_get_bytes_per_sample(fmt))
        planes = planar ? Int(channels) : 1
        planeBytesPerFrame = planar ? sampleBytes : sampleBytes * Int(channels)
        let isFloat = fmt == AV_SAMPLE_FMT_FLT || fmt == AV_SAMPLE_FMT_FLTP || fmt == AV_SAMPLE_FMT_DBL || fmt == AV_SAMPLE_FMT_DBLP
        inputFormat = .linearPCM(sampleRate: rate, channels: channels, bitsPerChannel: UInt32(sampleBytes * 8), isFloat: isFloat,
                                 isSigned: fmt != AV_SAMPLE_FMT_U8 && fmt != AV_SAMPLE_FMT_U8P, isInterleaved: !planar)
        fifo = Array(repeating: [], count: planes)

        codec = avcodec_alloc_context3(encoder)
        frame = av_frame_alloc()
        packet = av_packet_alloc()
        guard let codec, frame != nil, packet != nil else {
            throw AudioError(.limitExceeded, component: component, "out of memory creating the encoder")
        }
        codec.pointee.sample_rate = Int32(rate)
        codec.pointee.sample_fmt = fmt
        codec.pointee.time_base = AVRational(num: 1, den: Int32(rate))
        av_channel_layout_default(&codec.pointee.ch_layout, Int32(channels))
        codec.pointee.flags |= Int32(1 << 22) // AV_CODEC_FLAG_GLOBAL_HEADER: cookie, no in-band headers
        if !lossy && destination.formatID != .linearPCM && (fmt == AV_SAMPLE_FMT_S32 || fmt == AV_SAMPLE_FMT_S32P) {
            codec.pointee.bits_per_raw_sample = Int32(bits)
        }
        let privData = codec.pointee.priv_data
        let quality = settings.quality.map { max(0, min(127, $0)) }
        var cbr = false
        switch destination.formatID {
        case .mpeg4AAC:
            let strategy = settings.strategy ?? .constant
            if strategy == .variable, settings.bitRate == nil {
                codec.pointee.flags |= Int32(1 << 1) // AV_CODEC_FLAG_QSCALE
                let q = 0.5 + 1.5 * Double(quality ?? 64) / 127
                codec.pointee.global_quality = Int32(q * 118)
            } else {
                codec.pointee.bit_rate = Int64(settings.bitRate ?? Int(channels) * 64000)
            }
            cbr = strategy == .constant
        case .mpegLayer3:
            let strategy = settings.strategy ?? .constant
            if strategy == .variable {
                codec.pointee.flags |= Int32(1 << 1)
                let v = 9 - Double(quality ?? 80) * 9 / 127 // LAME -V: 0 best ... 9
                codec.pointee.global_quality = Int32(v * 118)
            } else {
                codec.pointee.bit_rate = Int64(settings.bitRate ?? (channels == 1 ? 64000 : 128000))
                if strategy == .longTermAverage || strategy == .variableConstrained { av_opt_set_int(privData, "abr", 1, 0) }
            }
            if let quality { codec.pointee.compression_level = Int32(9 - quality * 9 / 127) }
            cbr = strategy == .constant
        case .opus:
            codec.pointee.bit_rate = Int64(settings.bitRate ?? Int(channels) * 48000)
            let vbr = switch settings.strategy ?? .variable {
            case .constant: "off"
            case .longTermAverage, .variableConstrained: "constrained"
            case .variable: "on"
            }
            av_opt_set(privData, "vbr", vbr, 0)
            if let quality { codec.pointee.compression_level = Int32(quality * 10 / 127) }
        case .flac:
            if let quality { codec.pointee.compression_level = Int32(quality * 8 / 127) }
        default: break
        }
        isCBR = cbr
        let status = avcodec_open2(codec, encoder, nil)
        if status < 0 {
            throw AudioError(.unsupportedFormat, component: component, "cannot open the '\(destination.formatID)' encoder at \(rate) Hz, \(channels) channels",
                             underlying: CodecMapping.errorText(status))
        }
        let caps = encoder.pointee.capabilities
        let variable = caps & (1 << 16) != 0
        frameSize = codec.pointee.frame_size > 0 && !variable ? Int(codec.pointee.frame_size) : 4096
        padLastFrame = codec.pointee.frame_size > 0 && !variable && caps & (1 << 6) == 0
        if codec.pointee.extradata_size > 0, let e = codec.pointee.extradata {
            magicCookie = Array(UnsafeBufferPointer(start: e, count: Int(codec.pointee.extradata_size)))
        }
        primeInfo = AudioConverterPrimeInfo(leadingFrames: UInt32(max(0, codec.pointee.initial_padding)), trailingFrames: 0)
        switch destination.formatID {
        case .linearPCM, .ulaw, .alaw:
            var f = destination
            if f.formatID != .linearPCM {
                f = AudioStreamBasicDescription(sampleRate: rate, formatID: f.formatID, bytesPerPacket: channels, framesPerPacket: 1,
                                                bytesPerFrame: channels, channelsPerFrame: channels, bitsPerChannel: 8)
            }
            outputFormat = f
        case .flac:
            outputFormat = .compressed(.flac, sampleRate: rate, channels: channels, framesPerPacket: 0,
                                       flags: bits > 16 ? .alacSourceBitDepth24 : .alacSourceBitDepth16)
        case .appleLossless:
            outputFormat = .compressed(.appleLossless, sampleRate: rate, channels: channels, framesPerPacket: UInt32(frameSize),
                                       flags: bits > 16 ? .alacSourceBitDepth24 : .alacSourceBitDepth16)
        case .mpeg4AAC:
            outputFormat = .compressed(.mpeg4AAC, sampleRate: rate, channels: channels, framesPerPacket: 1024, flags: .mpeg4ObjectType(2))
        case .opus:
            outputFormat = .compressed(.opus, sampleRate: 48000, channels: channels, framesPerPacket: UInt32(frameSize))
        default:
            outputFormat = .compressed(destination.formatID, sampleRate: rate, channels: channels, framesPerPacket: UInt32(frameSize))
        }
    }

    deinit {
        avcodec_free_context(&codec)
        av_frame_free(&frame)
        av_packet_free(&packet)
    }

    /// The encoder's bit rate in bits per second (0 when it does not have one).
    public var bitRate: Int { Int(codec?.pointee.bit_rate ?? 0) }
    /// True when every packet has the same size (PCM) or the bit rate is constant.
    public var isConstantBitRate: Bool { isCBR || outputFormat.bytesPerPacket > 0 }

    /// Priming, remainder and valid frames of the packets produced so far (final after
    /// ``finish()``).
    public var packetTableInfo: AudioFilePacketTableInfo {
        let leading = Int64(primeInfo.leadingFrames)
        let valid = max(0, min(inputFrameCount, encodedFrameCount - leading))
        return AudioFilePacketTableInfo(numberValidFrames: valid, primingFrames: Int32(leading),
                                        remainderFrames: Int32(max(0, encodedFrameCount - leading - valid)))
    }

    /// Encodes the frames of `buffer` (in ``inputFormat``); returns the packets that are ready.
    public func encode(_ buffer: AudioPCMBuffer) throws(AudioError) -> AudioPacketBatch {
        guard buffer.format.channelsPerFrame == inputFormat.channelsPerFrame, buffer.format.bytesPerFrame == inputFormat.bytesPerFrame,
              buffer.format.isInterleaved == inputFormat.isInterleaved, buffer.format.isFloat == inputFormat.isFloat else {
            throw AudioError(.invalidArgument, component: component, "input must be \(inputFormat), got \(buffer.format)")
        }
        guard !finished else { throw AudioError(.invalidState, component: component, "encode after finish") }
        let n = buffer.frameLength
        for p in 0..<planes {
            fifo[p].append(contentsOf: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(buffer.mutableBytes(p))[0..<(n * planeBytesPerFrame)]))
        }
        inputFrameCount += Int64(n)
        var batch = AudioPacketBatch(firstPacketIndex: packetCount)
        while fifoFrames >= frameSize {
            try sendFrame(frames: frameSize, into: &batch)
        }
        compactFifo()
        return batch
    }

    /// Encodes what is left and drains the encoder; returns the last packets.
    public func finish() throws(AudioError) -> AudioPacketBatch {
        var batch = AudioPacketBatch(firstPacketIndex: packetCount)
        guard !finished else { return batch }
        finished = true
        while fifoFrames > 0 {
            try sendFrame(frames: min(frameSize, fifoFrames), into: &batch)
        }
        guard let codec else { return batch }
        _ = avcodec_send_frame(codec, nil)
        try receivePackets(into: &batch)
        return batch
    }

    private var consumedBytes = 0
    private var sentFrames: Int64 = 0
    private var fifoFrames: Int { (fifo[0].count - consumedBytes) / planeBytesPerFrame }

    private func compactFifo() {
        guard consumedBytes > 0 else { return }
        for p in 0..<planes { fifo[p].removeFirst(consumedBytes) }
        consumedBytes = 0
    }

    private func sendFrame(frames: Int, into batch: inout AudioPacketBatch) throws(AudioError) {
        guard let codec, let frame else { return }
        // Take the frames from the front of the fifo (compacted lazily).
        let n = min(frames, fifoFrames)
        guard n > 0 else { return }
        let coded = padLastFrame ? frameSize : n
        frame.pointee.nb_samples = Int32(coded)
        frame.pointee.format = sampleFormat.rawValue
        frame.pointee.sample_rate = codec.pointee.sample_rate
        _ = av_channel_layout_copy(&frame.pointee.ch_layout, &codec.pointee.ch_layout)
        frame.pointee.pts = sentFrames
        sentFrames += Int64(coded)
        guard av_frame_get_buffer(frame, 0) >= 0 else {
            throw AudioError(.limitExceeded, component: component, "out of memory for a \(coded)-frame buffer")
        }
        for p in 0..<planes {
            guard let dst = frame.pointee.extended_data[p] else { continue }
            fifo[p].withUnsafeBytes { src in
                dst.update(from: src.baseAddress!.assumingMemoryBound(to: UInt8.self) + consumedBytes, count: n * planeBytesPerFrame)
            }
            if coded > n {
                let silence: UInt8 = sampleFormat == AV_SAMPLE_FMT_U8 || sampleFormat == AV_SAMPLE_FMT_U8P ? 0x80 : 0
                (dst + n * planeBytesPerFrame).update(repeating: silence, count: (coded - n) * planeBytesPerFrame)
            }
        }
        consumedBytes += n * planeBytesPerFrame
        let status = avcodec_send_frame(codec, frame)
        av_frame_unref(frame)
        if fifo[0].count == consumedBytes { for p in 0..<planes { fifo[p].removeAll(keepingCapacity: true) }; consumedBytes = 0 }
        guard status >= 0 else {
            throw AudioError(.invalidState, component: component, "the encoder rejected \(coded) frames", underlying: CodecMapping.errorText(status))
        }
        try receivePackets(into: &batch)
    }

    private func receivePackets(into batch: inout AudioPacketBatch) throws(AudioError) {
        guard let codec, let packet else { return }
        while true {
            let status = avcodec_receive_packet(codec, packet)
            if status == oat_averror_eagain() || status == oat_averror_eof() { return }
            guard status >= 0 else {
                throw AudioError(.invalidState, component: component, "encoding failed", underlying: CodecMapping.errorText(status))
            }
            defer { av_packet_unref(packet) }
            var sideSize = 0
            if let side = av_packet_get_side_data(packet, AV_PKT_DATA_NEW_EXTRADATA, &sideSize), sideSize > 0 {
                magicCookie = Array(UnsafeBufferPointer(start: side, count: sideSize))
            }
            let size = Int(packet.pointee.size)
            guard size > 0, let data = packet.pointee.data else { continue }
            let start = batch.data.count
            batch.data.append(contentsOf: UnsafeBufferPointer(start: data, count: size))
            if outputFormat.bytesPerPacket > 0 {
                let count = size / Int(outputFormat.bytesPerPacket)
                batch.packetCount += count
                packetCount += Int64(count)
                encodedFrameCount += Int64(count)
            } else {
                let frames: Int64 = outputFormat.framesPerPacket > 0 ? Int64(outputFormat.framesPerPacket) : max(0, packet.pointee.duration)
                batch.packetDescriptions.append(AudioStreamPacketDescription(
                    startOffset: Int64(start), variableFramesInPacket: outputFormat.framesPerPacket > 0 ? 0 : UInt32(frames), dataByteSize: UInt32(size)))
                batch.packetCount += 1
                packetCount += 1
                encodedFrameCount += frames
            }
        }
    }
}
