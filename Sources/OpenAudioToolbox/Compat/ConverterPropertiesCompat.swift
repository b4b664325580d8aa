// Audio Toolbox–compatible AudioConverter encoder capability properties, the channel map, and
// AudioConverterConvertComplexBuffer for non-interleaved PCM.

import OATCore
import OATConversion
#if canImport(Glibc)
import Glibc
#endif

/// A range of values (Apple's `AudioValueRange`): bit rates or sample rates here.
public struct AudioValueRange: Hashable, Sendable {
    /// The smallest value.
    public var mMinimum: Float64
    /// The largest value.
    public var mMaximum: Float64
    /// A zeroed range.
    public init() { self.init(mMinimum: 0, mMaximum: 0) }
    /// Apple's memberwise initialiser.
    public init(mMinimum: Float64, mMaximum: Float64) {
        self.mMinimum = mMinimum
        self.mMaximum = mMaximum
    }
}

/// The bit rates the encoder takes with the current input (rate, channels): array of
/// `AudioValueRange` (`'aebr'`).
public let kAudioConverterApplicableEncodeBitRates: AudioConverterPropertyID = fourCC("aebr")
/// Every bit rate the encoder takes: array of `AudioValueRange` (`'vebr'`).
public let kAudioConverterAvailableEncodeBitRates: AudioConverterPropertyID = fourCC("vebr")
/// The output sample rates the encoder takes with the current input: array of `AudioValueRange`
/// (`'aesr'`).
public let kAudioConverterApplicableEncodeSampleRates: AudioConverterPropertyID = fourCC("aesr")
/// Every output sample rate the encoder takes: array of `AudioValueRange` (`'vesr'`).
public let kAudioConverterAvailableEncodeSampleRates: AudioConverterPropertyID = fourCC("vesr")
/// Which input channel feeds each output channel: array of `SInt32`, -1 for silence (`'chmp'`).
public let kAudioConverterChannelMap: AudioConverterPropertyID = fourCC("chmp")

/// Discrete values as Apple lists them: one range per value.
private func ranges(_ values: [Double]) -> [AudioValueRange] { values.map { AudioValueRange(mMinimum: $0, mMaximum: $0) } }

private let aacBitRates: [Double] = [16000, 24000, 32000, 40000, 48000, 56000, 64000, 80000, 96000, 112000, 128000, 160000, 192000,
                                     224000, 256000, 288000, 320000]
private let mp3Layer3Rates: [Double] = [32000, 40000, 48000, 56000, 64000, 80000, 96000, 112000, 128000, 160000, 192000, 224000, 256000, 320000]
private let mp3Layer3LowRates: [Double] = [8000, 16000, 24000, 32000, 40000, 48000, 56000, 64000, 80000, 96000, 112000, 128000, 144000, 160000]

/// Bit rates of the encoder for `format` (the converter's destination); `applicable` narrows
/// them to the destination's rate and channel count. nil: bit rate does not apply (lossless,
/// PCM, G.711).
func encodeBitRates(_ format: AudioStreamBasicDescription, applicable: Bool) -> [AudioValueRange]? {
    let channels = Double(max(1, format.channelsPerFrame))
    let rate = format.sampleRate
    switch format.formatID {
    case .mpeg4AAC:
        guard applicable else { return ranges(aacBitRates) }
        // AAC-LC carries at most 6144 bits per channel per 1024-frame packet.
        return ranges(aacBitRates.filter { $0 >= 8000 * channels && $0 <= 6 * rate * channels })
    case .mpegLayer3:
        guard applicable else { return ranges(Array(Set(mp3Layer3Rates + mp3Layer3LowRates)).sorted()) }
        return ranges(rate >= 32000 ? mp3Layer3Rates : mp3Layer3LowRates.filter { rate >= 16000 || $0 <= 64000 })
    case .opus:
        return [AudioValueRange(mMinimum: 6000, mMaximum: applicable ? min(510_000, 256_000 * channels) : 510_000)]
    default:
        return nil
    }
}

/// Output sample rates the encoder for `format` takes; nil when not an encoder format here.
func encodeSampleRates(_ format: AudioStreamBasicDescription) -> [AudioValueRange]? {
    switch format.formatID {
    case .mpeg4AAC: return ranges([8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 64000, 88200, 96000])
    case .mpegLayer3: return ranges([8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000])
    case .opus: return ranges([8000, 12000, 16000, 24000, 48000])
    case .appleLossless, .flac, .ulaw, .alaw: return [AudioValueRange(mMinimum: 1000, mMaximum: 768_000)]
    default: return nil
    }
}

/// The properties this file adds, for ``AudioConverterGetProperty(_:_:_:_:)`` and friends:
/// the value (`SInt32` map or `AudioValueRange`s as bytes) or nil when `id` is not one of them
/// or does not apply (then `kAudioConverterErr_PropertyNotSupported`).
func extraConverterProperty(_ box: CompatConverter, _ id: AudioConverterPropertyID) -> [UInt8]?? {
    func bytes<T>(_ values: [T]) -> [UInt8] { values.withUnsafeBytes { Array($0) } }
    switch id {
    case kAudioConverterApplicableEncodeBitRates, kAudioConverterAvailableEncodeBitRates:
        guard box.isEncoder else { return .some(nil) }
        let format = box.encoder?.outputFormat ?? box.destination
        return .some(encodeBitRates(format, applicable: id == kAudioConverterApplicableEncodeBitRates).map(bytes))
    case kAudioConverterApplicableEncodeSampleRates, kAudioConverterAvailableEncodeSampleRates:
        guard box.isEncoder else { return .some(nil) }
        return .some(encodeSampleRates(box.destination).map(bytes))
    case kAudioConverterAvailableEncodeChannelLayoutTags:
        guard box.isEncoder else { return .some(nil) }
        return .some(encodeChannelLayoutTags(box.destination).map(bytes))
    case kAudioCodecPropertyBitRateControlMode:
        guard box.isEncoder, let strategy = box.bitRateControlMode.flatMap(BitRateStrategy.init(controlMode:)) ?? defaultBitRateStrategy(box.destination) else {
            return .some(nil)
        }
        return .some(bytes([strategy.controlMode]))
    case kAudioConverterSampleRateConverterComplexity:
        return .some(bytes([box.complexity.rawValue]))
    case kAudioConverterPropertyDithering:
        return .some(bytes([box.dither.rawValue]))
    case kAudioConverterChannelMap:
        let outputs = Int(box.destination.channelsPerFrame), inputs = Int(box.source.channelsPerFrame)
        let map = box.channelMap ?? (0..<outputs).map { $0 < inputs ? $0 : -1 }
        return .some(bytes(map.map { Int32($0) }))
    default:
        return nil
    }
}

/// The properties of this file one can set.
func isWritableExtraConverterProperty(_ box: CompatConverter, _ id: AudioConverterPropertyID) -> Bool {
    [kAudioConverterChannelMap, kAudioConverterSampleRateConverterComplexity, kAudioConverterPropertyDithering].contains(id)
        || (id == kAudioCodecPropertyBitRateControlMode && box.isEncoder)
}

/// Sets the channel map (`kAudioConverterChannelMap`, one `SInt32` per output channel, each an
/// input channel or -1), the resampler's complexity, dithering and the encoder's bit-rate
/// control mode; nil for other properties. Takes effect for the next conversion (the
/// converter restarts).
func setExtraConverterProperty(_ box: CompatConverter, _ id: AudioConverterPropertyID, _ size: UInt32, _ data: UnsafeRawPointer) -> OSStatus? {
    switch id {
    case kAudioConverterChannelMap:
        // A size of 0 (this project's) restores the default: the same channels in order, or a
        // standard mix when the channel counts differ (AVAudioConverter's downmix uses it).
        let outputs = Int(box.destination.channelsPerFrame)
        guard size == 0 || Int(size) >= outputs * 4 else { return kAudioConverterErr_BadPropertySizeError }
        let map = size == 0 ? nil : (0..<outputs).map { Int(data.loadUnaligned(fromByteOffset: $0 * 4, as: Int32.self)) }
        guard (map ?? []).allSatisfy({ $0 >= -1 && $0 < Int(box.source.channelsPerFrame) }) else { return kAudio_ParamError }
        box.channelMap = map
        box.converter = nil
        box.planar = nil
        if box.isEncoder {
            guard box.pendingPackets.isEmpty, (box.encoder?.inputFrameCount ?? 0) == 0 else { return kAudioConverterErr_OperationNotSupported }
            box.encoder = nil
            box.encoderInput = nil
            do throws(AudioError) {
                _ = try box.makeEncoder()
            } catch {
                return error.osStatus ?? kAudioConverterErr_FormatNotSupported
            }
        }
        return noErr
    case kAudioConverterSampleRateConverterComplexity:
        guard size >= 4 else { return kAudioConverterErr_BadPropertySizeError }
        guard let value = SampleRateConverterComplexity(rawValue: data.loadUnaligned(as: UInt32.self)) else { return kAudio_ParamError }
        box.complexity = value
        box.applySettings()
        return noErr
    case kAudioConverterPropertyDithering:
        guard size >= 4 else { return kAudioConverterErr_BadPropertySizeError }
        guard let value = DitherAlgorithm(rawValue: data.loadUnaligned(as: UInt32.self)) else { return kAudio_ParamError }
        box.dither = value
        box.applySettings()
        return noErr
    case kAudioCodecPropertyBitRateControlMode:
        guard box.isEncoder else { return kAudioConverterErr_PropertyNotSupported }
        guard size >= 4 else { return kAudioConverterErr_BadPropertySizeError }
        let mode = data.loadUnaligned(as: UInt32.self)
        guard BitRateStrategy(controlMode: mode) != nil else { return kAudio_ParamError }
        let old = box.bitRateControlMode
        return box.remakeEncoder({ box.bitRateControlMode = mode }, undo: { box.bitRateControlMode = old })
    case kAudioConverterApplicableEncodeBitRates, kAudioConverterAvailableEncodeBitRates,
         kAudioConverterApplicableEncodeSampleRates, kAudioConverterAvailableEncodeSampleRates,
         kAudioConverterAvailableEncodeChannelLayoutTags:
        return kAudioConverterErr_PropertyNotSupported
    default:
        return nil
    }
}

/// The interleaved twin of a PCM format (itself when interleaved or mono).
func interleavedTwin(_ f: AudioStreamBasicDescription) -> AudioStreamBasicDescription {
    guard f.isPCM, !f.isInterleaved, f.channelsPerFrame > 1 else { return f }
    var t = f
    t.formatFlags.remove(.isNonInterleaved)
    t.bytesPerFrame = f.bytesPerFrame * f.channelsPerFrame
    t.bytesPerPacket = t.bytesPerFrame
    return t
}

/// ``AudioConverterConvertComplexBuffer(_:_:_:_:)`` when either side is non-interleaved: the
/// input planes are interleaved, converted at the same rate, and the output written per plane.
func convertComplexPlanar(_ box: CompatConverter, _ frames: Int, _ input: UnsafePointer<AudioBufferList>,
                          _ output: UnsafeMutablePointer<AudioBufferList>) -> OSStatus {
    let src = box.source, dst = box.destination
    guard src.isPCM, dst.isPCM, src.sampleRate == dst.sampleRate, src.bytesPerFrame > 0, dst.bytesPerFrame > 0 else {
        return kAudioConverterErr_OperationNotSupported
    }
    let inList = UnsafeMutableAudioBufferListPointer(UnsafeMutablePointer(mutating: input))
    let outList = UnsafeMutableAudioBufferListPointer(output)
    guard inList.count >= src.bufferCount, outList.count >= dst.bufferCount else { return kAudio_ParamError }
    // Interleave the input.
    let interleavedSource = interleavedTwin(src)
    let width = Int(src.isInterleaved ? src.bytesPerFrame / max(1, src.channelsPerFrame) : src.bytesPerFrame)
    let channels = Int(src.channelsPerFrame)
    let frameBytes = Int(interleavedSource.bytesPerFrame)
    var bytes = [UInt8](repeating: 0, count: frames * frameBytes)
    let planeBytes = frames * (src.isInterleaved ? frameBytes : width)
    for i in 0..<src.bufferCount {
        guard inList[i].mData != nil, Int(inList[i].mDataByteSize) >= planeBytes else { return kAudioConverterErr_InvalidInputSize }
    }
    bytes.withUnsafeMutableBytes { out in
        defer { reverseSamples(out.baseAddress!, bytes: out.count, width: box.sourceSwap) }
        if src.isInterleaved {
            out.baseAddress!.copyMemory(from: inList[0].mData!, byteCount: out.count)
        } else {
            for ch in 0..<channels {
                let plane = inList[ch].mData!
                for f in 0..<frames {
                    (out.baseAddress! + (f * channels + ch) * width).copyMemory(from: plane + f * width, byteCount: width)
                }
            }
        }
    }
    for i in 0..<dst.bufferCount where Int(outList[i].mDataByteSize) < frames * Int(dst.bytesPerFrame) || outList[i].mData == nil {
        return kAudioConverterErr_InvalidOutputSize
    }
    do throws(AudioError) {
        let converter: AudioConverter
        if let c = box.planar { converter = c } else {
            converter = try AudioConverter(from: interleavedSource, to: dst)
            converter.channelMap = box.channelMap
            box.planar = converter
        }
        converter.reset()
        var failure: AudioError?
        bytes.withUnsafeBytes { raw in
            do throws(AudioError) { try converter.decode(packet: raw) } catch { failure = error }
        }
        if let failure { throw failure }
        try converter.endOfInput()
        let out = try AudioPCMBuffer(format: dst, frameCapacity: max(1, frames))
        let n = converter.read(into: out, maxFrames: frames)
        for i in 0..<dst.bufferCount {
            outList[i].mData!.copyMemory(from: out.mutableBytes(i).baseAddress!, byteCount: n * Int(dst.bytesPerFrame))
            reverseSamples(outList[i].mData!, bytes: n * Int(dst.bytesPerFrame), width: box.destinationSwap)
            var b = outList[i]
            b.mDataByteSize = UInt32(n * Int(dst.bytesPerFrame))
            outList[i] = b
        }
        converter.reset()
        return noErr
    } catch {
        return error.osStatus ?? kAudioConverterErr_UnspecifiedError
    }
}

// MARK: - AudioConverter properties asked of a queue

/// The queue property that answers an AudioConverter property asked of a queue: Apple's queues
/// forward converter property IDs to their codec, so a recorder reads an AAC input queue's
/// `kAudioConverterCurrentOutputStreamDescription` and `kAudioConverterCompressionMagicCookie`
/// (the encoded format and its cookie), and a player its decoder's
/// `kAudioConverterDecompressionMagicCookie` and `kAudioConverterCurrentInputStreamDescription`.
/// Other IDs come back unchanged.
func queuePropertyID(forConverterProperty id: UInt32, isInput: Bool) -> AudioQueuePropertyID {
    switch id {
    case kAudioConverterCurrentOutputStreamDescription where isInput: return kAudioQueueProperty_StreamDescription
    case kAudioConverterCurrentInputStreamDescription where !isInput: return kAudioQueueProperty_StreamDescription
    case kAudioConverterCompressionMagicCookie where isInput: return kAudioQueueProperty_MagicCookie
    case kAudioConverterDecompressionMagicCookie where !isInput: return kAudioQueueProperty_MagicCookie
    case kAudioConverterPropertyMaximumOutputPacketSize: return kAudioQueueProperty_MaximumOutputPacketSize
    default: return id
    }
}

// MARK: - Further AudioConverter.h constants (Apple's values)
//
// Declared so that code naming them compiles; the FFmpeg-backed converter answers these properties
// with `kAudioConverterErr_PropertyNotSupported` unless noted elsewhere.

/// `UInt32` maximum input buffer size (Apple's `kAudioConverterPropertyMaximumInputBufferSize`, `'xibs'`).
public let kAudioConverterPropertyMaximumInputBufferSize: AudioConverterPropertyID = fourCC("xibs")
/// `UInt32` input bytes for an output size (Apple's `kAudioConverterPropertyCalculateInputBufferSize`, `'cibs'`).
public let kAudioConverterPropertyCalculateInputBufferSize: AudioConverterPropertyID = fourCC("cibs")
/// `UInt32` output bytes for an input size (Apple's `kAudioConverterPropertyCalculateOutputBufferSize`, `'cobs'`).
public let kAudioConverterPropertyCalculateOutputBufferSize: AudioConverterPropertyID = fourCC("cobs")
/// Codec input parameters (Apple's `kAudioConverterPropertyInputCodecParameters`, `'icdp'`).
public let kAudioConverterPropertyInputCodecParameters: AudioConverterPropertyID = fourCC("icdp")
/// Codec output parameters (Apple's `kAudioConverterPropertyOutputCodecParameters`, `'ocdp'`).
public let kAudioConverterPropertyOutputCodecParameters: AudioConverterPropertyID = fourCC("ocdp")
/// `OSType` resampler algorithm (Apple's `kAudioConverterSampleRateConverterAlgorithm`, `'srci'`).
public let kAudioConverterSampleRateConverterAlgorithm: AudioConverterPropertyID = fourCC("srci")
/// `Float64` resampler initial phase (Apple's `kAudioConverterSampleRateConverterInitialPhase`, `'srip'`).
public let kAudioConverterSampleRateConverterInitialPhase: AudioConverterPropertyID = fourCC("srip")
/// `UInt32` codec quality (Apple's `kAudioConverterCodecQuality`, `'cdqu'`).
public let kAudioConverterCodecQuality: AudioConverterPropertyID = fourCC("cdqu")
/// `Float64` adjustable encode sample rate (Apple's `kAudioConverterEncodeAdjustableSampleRate`, `'ajsr'`).
public let kAudioConverterEncodeAdjustableSampleRate: AudioConverterPropertyID = fourCC("ajsr")
/// `AudioChannelLayout` of the input (Apple's `kAudioConverterInputChannelLayout`, `'icl '`).
public let kAudioConverterInputChannelLayout: AudioConverterPropertyID = fourCC("icl ")
/// `AudioChannelLayout` of the output (Apple's `kAudioConverterOutputChannelLayout`, `'ocl '`).
public let kAudioConverterOutputChannelLayout: AudioConverterPropertyID = fourCC("ocl ")
/// `[AudioChannelLayoutTag]` encoder layouts (Apple's `kAudioConverterAvailableEncodeChannelLayoutTags`, `'aecl'`).
public let kAudioConverterAvailableEncodeChannelLayoutTags: AudioConverterPropertyID = fourCC("aecl")
/// `CFArray` settings (Apple's `kAudioConverterPropertySettings`, `'acps'`).
public let kAudioConverterPropertySettings: AudioConverterPropertyID = fourCC("acps")
/// `SInt32` source bit depth hint (Apple's `kAudioConverterPropertyBitDepthHint`, `'acbd'`).
public let kAudioConverterPropertyBitDepthHint: AudioConverterPropertyID = fourCC("acbd")
/// `[AudioFormatListItem]` output formats (Apple's `kAudioConverterPropertyFormatList`, `'flst'`).
public let kAudioConverterPropertyFormatList: AudioConverterPropertyID = fourCC("flst")
/// `UInt32` dither algorithm (Apple's `kAudioConverterPropertyDithering`, `'dith'`).
public let kAudioConverterPropertyDithering: AudioConverterPropertyID = fourCC("dith")
/// `UInt32` dither bit depth (Apple's `kAudioConverterPropertyDitherBitDepth`, `'dbit'`).
public let kAudioConverterPropertyDitherBitDepth: AudioConverterPropertyID = fourCC("dbit")
/// Linear resampling (Apple's `kAudioConverterSampleRateConverterComplexity_Linear`, `'line'`).
public let kAudioConverterSampleRateConverterComplexity_Linear: UInt32 = fourCC("line")
/// Normal resampling (Apple's `kAudioConverterSampleRateConverterComplexity_Normal`, `'norm'`).
public let kAudioConverterSampleRateConverterComplexity_Normal: UInt32 = fourCC("norm")
/// Mastering-quality resampling (Apple's `kAudioConverterSampleRateConverterComplexity_Mastering`, `'bats'`).
public let kAudioConverterSampleRateConverterComplexity_Mastering: UInt32 = fourCC("bats")
/// Minimum-phase resampling (Apple's `kAudioConverterSampleRateConverterComplexity_MinimumPhase`, `'minp'`).
public let kAudioConverterSampleRateConverterComplexity_MinimumPhase: UInt32 = fourCC("minp")
/// TPDF dither (Apple's `kDitherAlgorithm_TPDF`).
public let kDitherAlgorithm_TPDF: UInt32 = 1
/// Noise-shaped dither (Apple's `kDitherAlgorithm_NoiseShaping`).
public let kDitherAlgorithm_NoiseShaping: UInt32 = 2
/// Prime with leading and trailing input frames (Apple's `kConverterPrimeMethod_Pre`).
public let kConverterPrimeMethod_Pre: UInt32 = 0
/// Prime with trailing frames only (Apple's `kConverterPrimeMethod_Normal`).
public let kConverterPrimeMethod_Normal: UInt32 = 1
/// No priming (Apple's `kConverterPrimeMethod_None`).
public let kConverterPrimeMethod_None: UInt32 = 2

// MARK: - AudioCodec.h: the bit-rate control mode, asked of an encoding converter

/// A codec property ID (Apple's `AudioCodecPropertyID`); an encoding converter answers the
/// codec properties below, as Apple's pass them to their codec.
public typealias AudioCodecPropertyID = UInt32
/// `UInt32` how the encoder spends bits, one of the `kAudioCodecBitRateControlMode_*` values
/// (Apple's `kAudioCodecPropertyBitRateControlMode`, `'acbf'`). Set it before the first
/// conversion; it remakes the encoder.
public let kAudioCodecPropertyBitRateControlMode: AudioCodecPropertyID = fourCC("acbf")
/// Constant bit rate (Apple's `kAudioCodecBitRateControlMode_Constant`).
public let kAudioCodecBitRateControlMode_Constant: UInt32 = 0
/// The bit rate held over the long term (Apple's `kAudioCodecBitRateControlMode_LongTermAverage`).
public let kAudioCodecBitRateControlMode_LongTermAverage: UInt32 = 1
/// Variable, within limits around the bit rate (Apple's `kAudioCodecBitRateControlMode_VariableConstrained`).
public let kAudioCodecBitRateControlMode_VariableConstrained: UInt32 = 2
/// Variable, driven by quality (Apple's `kAudioCodecBitRateControlMode_Variable`).
public let kAudioCodecBitRateControlMode_Variable: UInt32 = 3

extension BitRateStrategy {
    /// The strategy of a `kAudioCodecBitRateControlMode_*` value (nil for others).
    init?(controlMode: UInt32) {
        switch controlMode {
        case kAudioCodecBitRateControlMode_Constant: self = .constant
        case kAudioCodecBitRateControlMode_LongTermAverage: self = .longTermAverage
        case kAudioCodecBitRateControlMode_VariableConstrained: self = .variableConstrained
        case kAudioCodecBitRateControlMode_Variable: self = .variable
        default: return nil
        }
    }

    /// The `kAudioCodecBitRateControlMode_*` value.
    var controlMode: UInt32 {
        switch self {
        case .constant: kAudioCodecBitRateControlMode_Constant
        case .longTermAverage: kAudioCodecBitRateControlMode_LongTermAverage
        case .variableConstrained: kAudioCodecBitRateControlMode_VariableConstrained
        case .variable: kAudioCodecBitRateControlMode_Variable
        }
    }
}

/// The strategy an encoder of `format` uses when none is set (AudioEncoder's defaults).
func defaultBitRateStrategy(_ format: AudioStreamBasicDescription) -> BitRateStrategy? {
    switch format.formatID {
    case .mpeg4AAC, .mpegLayer3: .constant
    case .opus: .variable
    default: nil
    }
}

/// Channel layout tags an encoder of `format` takes: one per channel count (1 ... 8) the
/// encoder opens with, the tag of the channel order the converter feeds it (WAVE order: L R C
/// LFE, then surrounds). Probed once per format, rate and codec.
func encodeChannelLayoutTags(_ format: AudioStreamBasicDescription) -> [UInt32]? {
    guard format.formatID != .linearPCM, AudioEncoder.encodableFormats.contains(format.formatID) else { return nil }
    let key = "\(format.formatID.rawValue)/\(format.sampleRate)"
    if let known = layoutTagCache.withLock({ $0[key] }) { return known }
    // L R C (MPEG_3_0_A), L R C Cs (MPEG_4_0_A), L R C Ls Rs (MPEG_5_0_A), L R C LFE Ls Rs
    // (MPEG_5_1_A), L R C LFE Ls Rs Cs (MPEG_6_1_A), L R C LFE Ls Rs Rls Rrs (MPEG_7_1_C).
    let tags: [UInt32] = [kAudioChannelLayoutTag_Mono, kAudioChannelLayoutTag_Stereo, (113 << 16) | 3, (115 << 16) | 4,
                          (117 << 16) | 5, kAudioChannelLayoutTag_MPEG_5_1_A, (125 << 16) | 7, kAudioChannelLayoutTag_MPEG_7_1_C]
    var found: [UInt32] = []
    for channels in 1...8 {
        var f = format
        f.channelsPerFrame = UInt32(channels)
        if f.bytesPerFrame > 0, format.channelsPerFrame > 0 { f.bytesPerFrame = format.bytesPerFrame / format.channelsPerFrame * UInt32(channels) }
        if f.bytesPerPacket > 0, format.channelsPerFrame > 0 { f.bytesPerPacket = format.bytesPerPacket / format.channelsPerFrame * UInt32(channels) }
        if (try? AudioEncoder(to: f)) != nil { found.append(tags[channels - 1]) }
    }
    layoutTagCache.withLock { $0[key] = found }
    return found
}

private let layoutTagCache = Locked<[String: [UInt32]]>([:])
