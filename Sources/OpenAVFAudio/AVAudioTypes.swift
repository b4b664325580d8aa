// The scalar types, enumerations and settings keys of Apple's AVFAudio (AVAudioTypes.h,
// AVAudioFormat.h, AVAudioSettings.h), spelled as Apple's Swift interface spells them.
@_exported import Foundation
@_exported import OpenAudioToolbox

/// A count of sample frames (Apple's `AVAudioFrameCount`).
public typealias AVAudioFrameCount = UInt32
/// A count of packets (Apple's `AVAudioPacketCount`).
public typealias AVAudioPacketCount = UInt32
/// A position in sample frames (Apple's `AVAudioFramePosition`).
public typealias AVAudioFramePosition = Int64
/// A count of channels (Apple's `AVAudioChannelCount`).
public typealias AVAudioChannelCount = UInt32
/// A node's bus number (Apple's `AVAudioNodeBus`).
public typealias AVAudioNodeBus = Int

/// Foundation's error out-parameter (Apple's `NSErrorPointer`): pass `&error` with
/// `var error: NSError?`, as on Apple platforms. Linux's Foundation has no autoreleasing pointer,
/// so it is a plain optional pointer here; call sites read the same.
public typealias NSErrorPointer = UnsafeMutablePointer<NSError?>?

/// The formats AVFAudio names (Apple's `AVAudioCommonFormat`).
public enum AVAudioCommonFormat: UInt, Sendable {
    /// Anything else (compressed, or PCM not listed here).
    case otherFormat = 0
    /// 32-bit native-endian float.
    case pcmFormatFloat32 = 1
    /// 64-bit native-endian float.
    case pcmFormatFloat64 = 2
    /// 16-bit native-endian signed integer.
    case pcmFormatInt16 = 3
    /// 32-bit native-endian signed integer.
    case pcmFormatInt32 = 4
}

/// Encoder and converter quality (Apple's `AVAudioQuality`).
public enum AVAudioQuality: Int, Sendable {
    /// The lowest quality.
    case min = 0
    /// Low quality.
    case low = 0x20
    /// Medium quality.
    case medium = 0x40
    /// High quality.
    case high = 0x60
    /// The highest quality.
    case max = 0x7F
}

// MARK: - Settings keys (AVAudioSettings.h)

/// The format ID (`kAudioFormat...`) of a settings dictionary, as an `Int`/`NSNumber`.
public let AVFormatIDKey = "AVFormatIDKey"
/// The sample rate in hertz, as a `Double`/`NSNumber`.
public let AVSampleRateKey = "AVSampleRateKey"
/// The channel count, as an `Int`/`NSNumber`.
public let AVNumberOfChannelsKey = "AVNumberOfChannelsKey"
/// Linear PCM: bits per sample (8, 16, 24, 32).
public let AVLinearPCMBitDepthKey = "AVLinearPCMBitDepthKey"
/// Linear PCM: big-endian samples.
public let AVLinearPCMIsBigEndianKey = "AVLinearPCMIsBigEndianKey"
/// Linear PCM: floating-point samples.
public let AVLinearPCMIsFloatKey = "AVLinearPCMIsFloatKey"
/// Linear PCM: one buffer per channel.
public let AVLinearPCMIsNonInterleaved = "AVLinearPCMIsNonInterleaved"
/// The channel layout, as `Data` holding an `AudioChannelLayout`.
public let AVChannelLayoutKey = "AVChannelLayoutKey"
/// Encoder quality, an ``AVAudioQuality`` raw value.
public let AVEncoderAudioQualityKey = "AVEncoderAudioQualityKey"
/// Encoder quality for variable bit rate, an ``AVAudioQuality`` raw value.
public let AVEncoderAudioQualityForVBRKey = "AVEncoderAudioQualityForVBRKey"
/// Encoder bit rate in bits per second.
public let AVEncoderBitRateKey = "AVEncoderBitRateKey"
/// Encoder bit rate per channel in bits per second.
public let AVEncoderBitRatePerChannelKey = "AVEncoderBitRatePerChannelKey"
/// Encoder bit-rate strategy (one of the `AVAudioBitRateStrategy_...` strings).
public let AVEncoderBitRateStrategyKey = "AVEncoderBitRateStrategyKey"
/// Encoder bit depth hint (ALAC, FLAC).
public let AVEncoderBitDepthHintKey = "AVEncoderBitDepthHintKey"
/// Sample-rate converter algorithm (one of the `AVSampleRateConverterAlgorithm_...` strings).
public let AVSampleRateConverterAlgorithmKey = "AVSampleRateConverterAlgorithmKey"
/// Sample-rate converter quality, an ``AVAudioQuality`` raw value.
public let AVSampleRateConverterAudioQualityKey = "AVSampleRateConverterAudioQualityKey"
/// Constant bit rate.
public let AVAudioBitRateStrategy_Constant = "AVAudioBitRateStrategy_Constant"
/// Long-term average bit rate.
public let AVAudioBitRateStrategy_LongTermAverage = "AVAudioBitRateStrategy_LongTermAverage"
/// Variable bit rate, constrained.
public let AVAudioBitRateStrategy_VariableConstrained = "AVAudioBitRateStrategy_VariableConstrained"
/// Variable bit rate.
public let AVAudioBitRateStrategy_Variable = "AVAudioBitRateStrategy_Variable"
/// The normal sample-rate converter.
public let AVSampleRateConverterAlgorithm_Normal = "AVSampleRateConverterAlgorithm_Normal"
/// The mastering sample-rate converter.
public let AVSampleRateConverterAlgorithm_Mastering = "AVSampleRateConverterAlgorithm_Mastering"
/// The minimum-phase sample-rate converter.
public let AVSampleRateConverterAlgorithm_MinimumPhase = "AVSampleRateConverterAlgorithm_MinimumPhase"

// MARK: - Errors

/// Builds the `NSError` Apple's AVFAudio reports for an `OSStatus` (domain
/// `NSOSStatusErrorDomain`, the status as the code), with what failed in the description.
func avError(_ status: OSStatus, _ what: String) -> NSError {
    NSError(domain: NSOSStatusErrorDomain, code: Int(status),
            userInfo: [NSLocalizedDescriptionKey: "\(what) (OSStatus \(status))"])
}

/// Throws ``avError(_:_:)`` when `status` is not `noErr`.
func check(_ status: OSStatus, _ what: @autoclosure () -> String) throws {
    if status != noErr { throw avError(status, what()) }
}

/// A number from a settings dictionary: `Int`, `Double`, `Float`, `UInt32`, `Bool` or `NSNumber`.
func settingNumber(_ value: Any?) -> Double? {
    switch value {
    case let v as Int: Double(v)
    case let v as Double: v
    case let v as Float: Double(v)
    case let v as UInt32: Double(v)
    case let v as Int32: Double(v)
    case let v as UInt: Double(v)
    case let v as Bool: v ? 1 : 0
    case let v as NSNumber: v.doubleValue
    default: nil
    }
}
