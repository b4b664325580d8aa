// AVAudioConverter: Apple's converter object (PCM to PCM, decoding, encoding, sample-rate
// conversion) over the AudioConverter underneath.
import Foundation
import OpenAudioToolbox

/// What an input block says about the data it returns (Apple's `AVAudioConverterInputStatus`).
public enum AVAudioConverterInputStatus: Int, Sendable {
    /// The returned buffer holds data.
    case haveData = 0
    /// No data now, more later: the conversion returns what it has (``AVAudioConverterOutputStatus/inputRanDry``).
    case noDataNow = 1
    /// The input is over: the converter drains what it holds.
    case endOfStream = 2
}

/// How a conversion call ended (Apple's `AVAudioConverterOutputStatus`).
public enum AVAudioConverterOutputStatus: Int, Sendable {
    /// The output buffer holds data (filled, or as much as the input allowed before it ended).
    case haveData = 0
    /// The input block had no data now; the output holds what could be converted.
    case inputRanDry = 1
    /// The input ended and everything was delivered: no data returned.
    case endOfStream = 2
    /// The conversion failed; the error says why.
    case error = 3
}

/// How a converter primes (Apple's `AVAudioConverterPrimeMethod`).
public enum AVAudioConverterPrimeMethod: Int, Sendable {
    /// Leading and trailing frames are primed from the input.
    case pre = 0
    /// Only trailing frames are primed (the default).
    case normal = 1
    /// No priming: the first output frames include the codec's latency.
    case none = 2
}

/// Priming frames (Apple's `AVAudioConverterPrimeInfo`).
public struct AVAudioConverterPrimeInfo: Hashable, Sendable {
    /// Frames primed before the input.
    public var leadingFrames: AVAudioFrameCount
    /// Frames primed after the input.
    public var trailingFrames: AVAudioFrameCount
    /// No priming.
    public init() { self.init(leadingFrames: 0, trailingFrames: 0) }
    /// The given priming.
    public init(leadingFrames: AVAudioFrameCount, trailingFrames: AVAudioFrameCount) {
        self.leadingFrames = leadingFrames
        self.trailingFrames = trailingFrames
    }
}

/// Supplies input to ``AVAudioConverter/convert(to:error:withInputFrom:)`` (Apple's
/// `AVAudioConverterInputBlock`): asked for a number of packets, it returns a buffer and says
/// through the status pointer whether it has data, none now, or the stream ended.
public typealias AVAudioConverterInputBlock = (_ inNumberOfPackets: AVAudioPacketCount,
                                               _ outStatus: UnsafeMutablePointer<AVAudioConverterInputStatus>) -> AVAudioBuffer?

/// Converts audio between formats (Apple's `AVAudioConverter`): PCM sample types, channel
/// counts and interleaving, sample rates, decoding compressed packets to PCM and encoding PCM
/// to compressed packets.
open class AVAudioConverter: NSObject, @unchecked Sendable {
    /// The format of the input.
    public let inputFormat: AVAudioFormat
    /// The format of the output.
    public let outputFormat: AVAudioFormat
    private var ref: AudioConverterRef?
    private var ended = false

    /// A converter from `fromFormat` to `toFormat`; nil when no conversion between them exists.
    public init?(from fromFormat: AVAudioFormat, to toFormat: AVAudioFormat) {
        inputFormat = fromFormat
        outputFormat = toFormat
        var converter: AudioConverterRef?
        guard AudioConverterNew(fromFormat.streamDescription, toFormat.streamDescription, &converter) == noErr, let converter else { return nil }
        ref = converter
        super.init()
        if let cookie = fromFormat.magicCookie { magicCookie = cookie }
        applyDownmix()
    }

    deinit { if let ref { AudioConverterDispose(ref) } }

    /// Forgets buffered input and the end of the stream (call it after
    /// ``AVAudioConverterOutputStatus/endOfStream`` before converting again, or to seek).
    open func reset() {
        if let ref { AudioConverterReset(ref) }
        ended = false
    }

    // MARK: Properties

    /// The codec's magic cookie: the decoder's (input) for decoding, the encoder's (output) for encoding.
    open var magicCookie: Data? {
        get {
            guard let ref else { return nil }
            let id = outputFormat.streamDescription.pointee.mFormatID != kAudioFormatLinearPCM
                ? kAudioConverterCompressionMagicCookie : kAudioConverterDecompressionMagicCookie
            var size: UInt32 = 0
            guard AudioConverterGetPropertyInfo(ref, id, &size, nil) == noErr, size > 0 else { return nil }
            var bytes = [UInt8](repeating: 0, count: Int(size))
            guard AudioConverterGetProperty(ref, id, &size, &bytes) == noErr else { return nil }
            return Data(bytes.prefix(Int(size)))
        }
        set {
            guard let ref, var bytes = newValue.map({ [UInt8]($0) }), !bytes.isEmpty else { return }
            AudioConverterSetProperty(ref, kAudioConverterDecompressionMagicCookie, UInt32(bytes.count), &bytes)
        }
    }

    /// The sample-rate converter's quality (an ``AVAudioQuality`` raw value, default
    /// `.medium`): the resampler's filter length, 8 (`.min`) to 128 taps (`.max`). Set it
    /// before converting (or call ``reset()``).
    open var sampleRateConverterQuality: Int {
        get { Int(getUInt32(kAudioConverterSampleRateConverterQuality) ?? kAudioConverterQuality_Medium) }
        set { setUInt32(kAudioConverterSampleRateConverterQuality, UInt32(clamping: newValue)) }
    }

    /// How the converter primes.
    open var primeMethod: AVAudioConverterPrimeMethod {
        get { AVAudioConverterPrimeMethod(rawValue: Int(getUInt32(kAudioConverterPrimeMethod) ?? 1)) ?? .normal }
        set { setUInt32(kAudioConverterPrimeMethod, UInt32(newValue.rawValue)) }
    }

    /// The converter's priming frames.
    open var primeInfo: AVAudioConverterPrimeInfo {
        get {
            guard let ref else { return AVAudioConverterPrimeInfo() }
            var info = AudioConverterPrimeInfo()
            var size = UInt32(MemoryLayout<AudioConverterPrimeInfo>.size)
            guard AudioConverterGetProperty(ref, kAudioConverterPrimeInfo, &size, &info) == noErr else { return AVAudioConverterPrimeInfo() }
            return AVAudioConverterPrimeInfo(leadingFrames: info.leadingFrames, trailingFrames: info.trailingFrames)
        }
        set {
            guard let ref else { return }
            var info = AudioConverterPrimeInfo(leadingFrames: newValue.leadingFrames, trailingFrames: newValue.trailingFrames)
            AudioConverterSetProperty(ref, kAudioConverterPrimeInfo, UInt32(MemoryLayout<AudioConverterPrimeInfo>.size), &info)
        }
    }

    /// For each output channel, the input channel it takes (-1 for silence).
    open var channelMap: [NSNumber] {
        get {
            guard let ref else { return [] }
            var map = [Int32](repeating: 0, count: Int(outputFormat.channelCount))
            var size = UInt32(map.count * MemoryLayout<Int32>.size)
            guard AudioConverterGetProperty(ref, kAudioConverterChannelMap, &size, &map) == noErr else {
                return (0..<Int(outputFormat.channelCount)).map { NSNumber(value: $0 < Int(inputFormat.channelCount) ? $0 : -1) }
            }
            return map.map { NSNumber(value: $0) }
        }
        set {
            guard let ref else { return }
            var map = newValue.map { Int32($0.intValue) }
            if AudioConverterSetProperty(ref, kAudioConverterChannelMap, UInt32(map.count * MemoryLayout<Int32>.size), &map) == noErr {
                mapSetByUser = true
            }
        }
    }

    /// Whether an output with fewer channels than the input gets a mix of them (true) or the
    /// first input channels in order (false, the default, as Apple's: stereo to mono keeps the
    /// left channel). A ``channelMap`` set explicitly wins over it.
    open var downmix = false { didSet { applyDownmix() } }
    private var mapSetByUser = false

    /// Without a map of the user's: the first channels in order when remapping to fewer
    /// channels, the converter's standard mix when ``downmix`` is on.
    private func applyDownmix() {
        guard let ref, !mapSetByUser, outputFormat.channelCount < inputFormat.channelCount,
              inputFormat.streamDescription.pointee.mFormatID == kAudioFormatLinearPCM || outputFormat.streamDescription.pointee.mFormatID == kAudioFormatLinearPCM else { return }
        if downmix {
            var none: Int32 = 0
            AudioConverterSetProperty(ref, kAudioConverterChannelMap, 0, &none)
        } else {
            var map = (0..<Int32(outputFormat.channelCount)).map { $0 }
            AudioConverterSetProperty(ref, kAudioConverterChannelMap, UInt32(map.count * MemoryLayout<Int32>.size), &map)
        }
    }

    /// Dither when reducing the bit depth (float or wider integers to 16- or 8-bit integers):
    /// triangular-PDF dither (`kDitherAlgorithm_TPDF`) on, none off (the default, as Apple's).
    open var dither = false {
        didSet { setUInt32(kAudioConverterPropertyDithering, dither ? kDitherAlgorithm_TPDF : 0) }
    }

    /// The resampler's algorithm, one of ``AVSampleRateConverterAlgorithm_Normal`` (the
    /// default), ``AVSampleRateConverterAlgorithm_Mastering`` (a longer, steeper filter:
    /// slower, less aliasing) and ``AVSampleRateConverterAlgorithm_MinimumPhase`` (kept, but
    /// resampled as Normal: libswresample has no minimum-phase filter). Set it before
    /// converting (or call ``reset()``); other strings are ignored.
    open var sampleRateConverterAlgorithm: String? {
        get {
            switch getUInt32(kAudioConverterSampleRateConverterComplexity) {
            case kAudioConverterSampleRateConverterComplexity_Mastering: AVSampleRateConverterAlgorithm_Mastering
            case kAudioConverterSampleRateConverterComplexity_MinimumPhase: AVSampleRateConverterAlgorithm_MinimumPhase
            case .some: AVSampleRateConverterAlgorithm_Normal
            case nil: nil
            }
        }
        set {
            let value: UInt32
            switch newValue {
            case AVSampleRateConverterAlgorithm_Mastering: value = kAudioConverterSampleRateConverterComplexity_Mastering
            case AVSampleRateConverterAlgorithm_MinimumPhase: value = kAudioConverterSampleRateConverterComplexity_MinimumPhase
            case AVSampleRateConverterAlgorithm_Normal, nil: value = kAudioConverterSampleRateConverterComplexity_Normal
            default: return
            }
            setUInt32(kAudioConverterSampleRateConverterComplexity, value)
        }
    }

    // MARK: Encoding

    /// True when the converter encodes (PCM in, a compressed format out).
    private var isEncoding: Bool {
        inputFormat.streamDescription.pointee.mFormatID == kAudioFormatLinearPCM
            && outputFormat.streamDescription.pointee.mFormatID != kAudioFormatLinearPCM
    }

    /// How the encoder spends bits, one of the `AVAudioBitRateStrategy_...` strings (nil when
    /// not encoding, or for an encoder without the choice: lossless, G.711). AAC and MP3 encode
    /// at a constant bit rate by default, Opus at a variable one. Set it before converting;
    /// other strings are ignored.
    open var bitRateStrategy: String? {
        get {
            guard isEncoding else { return nil }
            switch getUInt32(kAudioCodecPropertyBitRateControlMode) {
            case kAudioCodecBitRateControlMode_Constant: return AVAudioBitRateStrategy_Constant
            case kAudioCodecBitRateControlMode_LongTermAverage: return AVAudioBitRateStrategy_LongTermAverage
            case kAudioCodecBitRateControlMode_VariableConstrained: return AVAudioBitRateStrategy_VariableConstrained
            case kAudioCodecBitRateControlMode_Variable: return AVAudioBitRateStrategy_Variable
            default: return nil
            }
        }
        set {
            guard isEncoding else { return }
            let mode: UInt32
            switch newValue {
            case AVAudioBitRateStrategy_Constant: mode = kAudioCodecBitRateControlMode_Constant
            case AVAudioBitRateStrategy_LongTermAverage: mode = kAudioCodecBitRateControlMode_LongTermAverage
            case AVAudioBitRateStrategy_VariableConstrained: mode = kAudioCodecBitRateControlMode_VariableConstrained
            case AVAudioBitRateStrategy_Variable: mode = kAudioCodecBitRateControlMode_Variable
            default: return
            }
            setUInt32(kAudioCodecPropertyBitRateControlMode, mode)
        }
    }

    /// Every bit rate the encoder takes, in bits per second (nil when not encoding or when bit
    /// rate does not apply): the converter's `kAudioConverterAvailableEncodeBitRates`, each
    /// range as its minimum and, when wider than one value, its maximum.
    open var availableEncodeBitRates: [NSNumber]? { encodeValues(kAudioConverterAvailableEncodeBitRates) }
    /// The bit rates the encoder takes with the output's sample rate and channel count
    /// (`kAudioConverterApplicableEncodeBitRates`); nil when not encoding.
    open var applicableEncodeBitRates: [NSNumber]? { encodeValues(kAudioConverterApplicableEncodeBitRates) }
    /// Every output sample rate the encoder takes (`kAudioConverterAvailableEncodeSampleRates`);
    /// nil when not encoding.
    open var availableEncodeSampleRates: [NSNumber]? { encodeValues(kAudioConverterAvailableEncodeSampleRates) }
    /// The output sample rates the encoder takes with the current formats
    /// (`kAudioConverterApplicableEncodeSampleRates`); nil when not encoding.
    open var applicableEncodeSampleRates: [NSNumber]? { encodeValues(kAudioConverterApplicableEncodeSampleRates) }
    /// The channel layout tags the encoder takes (`kAudioConverterAvailableEncodeChannelLayoutTags`:
    /// one per channel count it opens with, in the channel order the converter feeds it); nil
    /// when not encoding.
    open var availableEncodeChannelLayoutTags: [NSNumber]? {
        guard isEncoding, let ref else { return nil }
        var size: UInt32 = 0
        guard AudioConverterGetPropertyInfo(ref, kAudioConverterAvailableEncodeChannelLayoutTags, &size, nil) == noErr else { return nil }
        var tags = [UInt32](repeating: 0, count: Int(size) / MemoryLayout<UInt32>.size)
        guard AudioConverterGetProperty(ref, kAudioConverterAvailableEncodeChannelLayoutTags, &size, &tags) == noErr else { return nil }
        return tags.prefix(Int(size) / MemoryLayout<UInt32>.size).map { NSNumber(value: $0) }
    }

    private func encodeValues(_ id: AudioConverterPropertyID) -> [NSNumber]? {
        guard isEncoding, let ref else { return nil }
        var size: UInt32 = 0
        guard AudioConverterGetPropertyInfo(ref, id, &size, nil) == noErr else { return nil }
        var ranges = [AudioValueRange](repeating: AudioValueRange(), count: Int(size) / MemoryLayout<AudioValueRange>.stride)
        guard AudioConverterGetProperty(ref, id, &size, &ranges) == noErr else { return nil }
        return ranges.prefix(Int(size) / MemoryLayout<AudioValueRange>.stride).flatMap { r in
            r.mMaximum > r.mMinimum ? [NSNumber(value: r.mMinimum), NSNumber(value: r.mMaximum)] : [NSNumber(value: r.mMinimum)]
        }
    }

    /// The encoder's bit rate in bits per second (0 when not encoding).
    open var bitRate: Int {
        get { Int(getUInt32(kAudioConverterEncodeBitRate) ?? 0) }
        set { setUInt32(kAudioConverterEncodeBitRate, UInt32(clamping: newValue)) }
    }

    /// The largest packet the converter produces, in bytes.
    open var maximumOutputPacketSize: Int { Int(getUInt32(kAudioConverterPropertyMaximumOutputPacketSize) ?? 0) }

    private func getUInt32(_ id: AudioConverterPropertyID) -> UInt32? {
        guard let ref else { return nil }
        var value: UInt32 = 0
        var size = UInt32(MemoryLayout<UInt32>.size)
        return AudioConverterGetProperty(ref, id, &size, &value) == noErr ? value : nil
    }

    private func setUInt32(_ id: AudioConverterPropertyID, _ value: UInt32) {
        guard let ref else { return }
        var v = value
        AudioConverterSetProperty(ref, id, UInt32(MemoryLayout<UInt32>.size), &v)
    }

    // MARK: Converting

    /// Converts a whole PCM buffer into another in one call, without sample-rate conversion
    /// (use ``convert(to:error:withInputFrom:)`` for that): the output gets as many frames as the
    /// input has (it must have the room).
    open func convert(to outputBuffer: AVAudioPCMBuffer, from inputBuffer: AVAudioPCMBuffer) throws {
        guard inputFormat.sampleRate == outputFormat.sampleRate else {
            throw avError(kAudioConverterErr_InvalidInputSize,
                          "AVAudioConverter.convert(to:from:) does not convert sample rates (\(inputFormat.sampleRate) -> \(outputFormat.sampleRate) Hz): use convert(to:error:withInputFrom:)")
        }
        guard inputFormat.streamDescription.pointee.mFormatID == kAudioFormatLinearPCM,
              outputFormat.streamDescription.pointee.mFormatID == kAudioFormatLinearPCM else {
            throw avError(kAudioConverterErr_FormatNotSupported, "AVAudioConverter.convert(to:from:) converts PCM to PCM only")
        }
        guard outputBuffer.frameCapacity >= inputBuffer.frameLength else {
            throw avError(kAudioConverterErr_InvalidOutputSize,
                          "AVAudioConverter.convert(to:from:): the output holds \(outputBuffer.frameCapacity) frames, the input has \(inputBuffer.frameLength)")
        }
        var given = false
        var error: NSError?
        let status = convert(to: outputBuffer, error: &error) { _, outStatus in
            if given { outStatus.pointee = .endOfStream; return nil }
            given = true
            outStatus.pointee = .haveData
            return inputBuffer
        }
        reset()
        if status == .error { throw error ?? avError(kAudioConverterErr_UnspecifiedError, "AVAudioConverter.convert(to:from:) failed") }
    }

    /// Converts into `outputBuffer` (filling it up to its capacity), pulling input from
    /// `inputBlock` as needed. Returns ``AVAudioConverterOutputStatus/haveData`` with data,
    /// ``AVAudioConverterOutputStatus/inputRanDry`` when the block had nothing now,
    /// ``AVAudioConverterOutputStatus/endOfStream`` once the input ended and all was delivered,
    /// ``AVAudioConverterOutputStatus/error`` with `outError` set.
    open func convert(to outputBuffer: AVAudioBuffer, error outError: NSErrorPointer,
                      withInputFrom inputBlock: AVAudioConverterInputBlock) -> AVAudioConverterOutputStatus {
        guard let ref else {
            outError?.pointee = avError(kAudio_ParamError, "AVAudioConverter: no converter")
            return .error
        }
        return withoutActuallyEscaping(inputBlock) { block in
            fill(outputBuffer, ref, InputContext(block: block, format: inputFormat, ended: ended), outError)
        }
    }

    private func fill(_ outputBuffer: AVAudioBuffer, _ ref: AudioConverterRef, _ context: InputContext,
                      _ outError: NSErrorPointer) -> AVAudioConverterOutputStatus {
        let list = UnsafeMutableAudioBufferListPointer(outputBuffer.mutableAudioBufferList)
        var packets: UInt32
        var descriptions: UnsafeMutablePointer<AudioStreamPacketDescription>? = nil
        if let pcm = outputBuffer as? AVAudioPCMBuffer {
            packets = pcm.frameCapacity
            let bytes = pcm.frameCapacity * outputFormat.streamDescription.pointee.mBytesPerFrame
            for i in 0..<list.count { list[i].mDataByteSize = bytes }
        } else if let compressed = outputBuffer as? AVAudioCompressedBuffer {
            packets = compressed.packetCapacity
            list[0].mDataByteSize = compressed.byteCapacity
            descriptions = compressed.packetDescriptions
        } else {
            outError?.pointee = avError(kAudio_ParamError, "AVAudioConverter: the output buffer is neither PCM nor compressed")
            return .error
        }
        let unmanaged = Unmanaged.passRetained(context)
        defer { unmanaged.release() }
        let status = AudioConverterFillComplexBuffer(ref, { _, ioPackets, ioData, outDescriptions, userData in
            let context = Unmanaged<InputContext>.fromOpaque(userData!).takeUnretainedValue()
            return context.supply(ioPackets, ioData, outDescriptions)
        }, unmanaged.toOpaque(), &packets, outputBuffer.mutableAudioBufferList, descriptions)
        ended = context.ended
        if let pcm = outputBuffer as? AVAudioPCMBuffer {
            pcm.frameLength = packets
        } else if let compressed = outputBuffer as? AVAudioCompressedBuffer {
            compressed.packetCount = packets
            compressed.byteLength = list[0].mDataByteSize
        }
        if status == InputContext.noDataNow {
            return .inputRanDry
        }
        if status != noErr {
            outError?.pointee = context.error ?? avError(status, "AVAudioConverter: converting \(inputFormat) to \(outputFormat) failed")
            return .error
        }
        if packets == 0 && context.ended { return .endOfStream }
        return .haveData
    }

    /// The state of one `convert` call's input: the block, the buffer it last returned (kept
    /// until the next request, as the converter may still read it), and how the input ended.
    private final class InputContext {
        /// The status the input proc returns for "no data now" (any non-zero value stops the fill).
        static let noDataNow: OSStatus = 0x6E6F_6474 // 'nodt'
        let block: AVAudioConverterInputBlock
        let format: AVAudioFormat
        var ended: Bool
        var current: AVAudioBuffer?
        var error: NSError?

        init(block: @escaping AVAudioConverterInputBlock, format: AVAudioFormat, ended: Bool) {
            self.block = block
            self.format = format
            self.ended = ended
        }

        func supply(_ ioPackets: UnsafeMutablePointer<UInt32>, _ ioData: UnsafeMutablePointer<AudioBufferList>,
                    _ outDescriptions: UnsafeMutablePointer<UnsafeMutablePointer<AudioStreamPacketDescription>?>?) -> OSStatus {
            if ended {
                ioPackets.pointee = 0
                return noErr
            }
            var status = AVAudioConverterInputStatus.haveData
            let buffer = block(ioPackets.pointee, &status)
            current = buffer
            switch status {
            case .noDataNow:
                ioPackets.pointee = 0
                return Self.noDataNow
            case .endOfStream:
                ended = true
                ioPackets.pointee = 0
                return noErr
            case .haveData:
                break
            }
            guard let buffer else {
                error = avError(kAudio_ParamError, "AVAudioConverter: the input block said haveData and returned no buffer")
                return kAudio_ParamError
            }
            let source = UnsafeMutableAudioBufferListPointer(UnsafeMutablePointer(mutating: buffer.audioBufferList))
            let target = UnsafeMutableAudioBufferListPointer(ioData)
            let n = min(source.count, target.count)
            for i in 0..<n { target[i] = source[i] }
            target.count = n
            if let pcm = buffer as? AVAudioPCMBuffer {
                ioPackets.pointee = pcm.frameLength
                outDescriptions?.pointee = nil
            } else if let compressed = buffer as? AVAudioCompressedBuffer {
                ioPackets.pointee = compressed.packetCount
                outDescriptions?.pointee = compressed.packetDescriptions
            } else {
                ioPackets.pointee = 0
            }
            if ioPackets.pointee == 0 {
                // An empty buffer with haveData is the end, as Apple's converter takes it.
                ended = true
            }
            return noErr
        }
    }
}
