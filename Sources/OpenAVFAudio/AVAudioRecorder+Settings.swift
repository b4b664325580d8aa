// AVAudioRecorder's settings dictionary: the file type (the URL's extension, or
// AVAudioFileTypeKey), the data format (AVFormatIDKey, AVSampleRateKey, AVNumberOfChannelsKey,
// the AVLinearPCM keys) and the encoder (AVEncoderBitRateKey, AVEncoderAudioQualityKey, ...),
// checked before anything is created.
internal import OATCore
import Foundation
import OpenAudioToolbox

/// The file type of a recording (Apple's `AVAudioFileTypeKey`): an `AudioFileTypeID`
/// (`kAudioFileWAVEType`, `kAudioFileCAFType`, `kAudioFileM4AType`, ...) as an `Int`/`NSNumber`.
/// Without it the type follows the URL's extension.
public let AVAudioFileTypeKey = "AVAudioFileTypeKey"

/// What a recorder records: the container, the data format asked for, the encoder settings.
struct RecorderPlan {
    var fileType: AudioFileType
    /// The format the input queue is asked for (compressed formats are completed by the encoder).
    var format: AudioStreamBasicDescription
    var encoder: AudioEncoderSettings

    /// Reads `settings` for a recording to `url`; throws an `NSError` (`NSOSStatusErrorDomain`)
    /// naming the key or the combination that cannot be recorded.
    init(url: URL, settings: [String: Any]) throws {
        let path = url.path
        if let value = settings[AVAudioFileTypeKey] {
            guard let number = settingNumber(value), number >= 0, number <= Double(UInt32.max) else {
                throw avError(kAudioFileUnsupportedFileTypeError, "AVAudioRecorder: AVAudioFileTypeKey \(value) is not an AudioFileTypeID (\(path))")
            }
            fileType = AudioFileType(rawValue: UInt32(number))
        } else {
            guard let type = AudioFileConversion.fileType(forExtension: url.lastPathComponent), url.lastPathComponent.contains(".") else {
                throw avError(kAudioFileUnsupportedFileTypeError,
                              "AVAudioRecorder: no audio file type for the extension '.\(url.pathExtension)' of \(path) (use .caf, .m4a, .wav, .aif, .aiff, .aifc, .flac, .opus, .aac or .mp3, or AVAudioFileTypeKey)")
            }
            fileType = type
        }
        guard AudioFileWriter.writableTypes.contains(fileType) || fileType == .rf64 else {
            throw avError(kAudioFileUnsupportedFileTypeError, "AVAudioRecorder: cannot record '\(fileType)' files (\(path))")
        }
        let defaults = AudioFileConversion.defaultFormat(for: fileType, sourceBits: 16, sourceFloat: false)
        let formatID: OATCore.AudioFormatCode
        if let value = settings[AVFormatIDKey] {
            guard let number = settingNumber(value), number >= 0, number <= Double(UInt32.max) else {
                throw avError(kAudioFormatUnsupportedDataFormatError, "AVAudioRecorder: AVFormatIDKey \(value) is not an AudioFormatID")
            }
            formatID = OATCore.AudioFormatCode(rawValue: UInt32(number))
        } else {
            formatID = defaults.formatID
        }
        let rate: Double
        if let value = settings[AVSampleRateKey] {
            guard let r = settingNumber(value), r.isFinite, r >= 1000, r <= 768_000 else {
                throw avError(kAudio_ParamError, "AVAudioRecorder: AVSampleRateKey \(value) is not a sample rate in 1000...768000 Hz")
            }
            rate = r
        } else {
            rate = formatID == .opus ? 48000 : 44100
        }
        let channels: UInt32
        if let value = settings[AVNumberOfChannelsKey] {
            guard let c = settingNumber(value), c == c.rounded(), c >= 1, c <= 8 else {
                throw avError(kAudio_ParamError, "AVAudioRecorder: AVNumberOfChannelsKey \(value) is not a channel count in 1...8")
            }
            channels = UInt32(c)
        } else {
            channels = 1
        }
        if formatID == .linearPCM {
            format = try Self.pcmFormat(settings, fileType: fileType, rate: rate, channels: channels)
        } else {
            let framesPerPacket: UInt32
            switch formatID {
            case .mpeg4AAC: framesPerPacket = 1024
            case .appleLossless: framesPerPacket = 4096
            case .opus: framesPerPacket = 960
            case .mpegLayer3: framesPerPacket = 1152
            case .ulaw, .alaw: framesPerPacket = 1
            case .flac: framesPerPacket = 0
            default:
                throw avError(kAudioFormatUnsupportedDataFormatError,
                              "AVAudioRecorder: cannot record '\(formatID)' (AVFormatIDKey); this recorder encodes linear PCM, AAC, Apple Lossless, FLAC, Opus, MP3, mu-law and A-law")
            }
            format = .compressed(formatID, sampleRate: rate, channels: channels, framesPerPacket: framesPerPacket)
        }
        encoder = try Self.encoderSettings(settings, channels: Int(channels))
        do {
            try AudioFileWriter.check(Self.checked(format), in: fileType)
        } catch {
            throw avError(kAudioFileUnsupportedDataFormatError, "AVAudioRecorder: \(path): \(error.message)")
        }
    }

    /// The format as the file will hold it, for ``AudioFileWriter/check(_:in:)`` (PCM completed).
    static func checked(_ f: AudioStreamBasicDescription) -> AudioStreamBasicDescription {
        guard f.isPCM else { return f }
        var g = f
        g.bytesPerFrame = (f.bitsPerChannel + 7) / 8 * f.channelsPerFrame
        g.bytesPerPacket = g.bytesPerFrame
        g.framesPerPacket = 1
        return g
    }

    /// Linear PCM from the `AVLinearPCM` keys. Absent keys take what the container holds (WAVE
    /// little-endian, AIFF big-endian, CAF native); keys that contradict the container throw.
    static func pcmFormat(_ settings: [String: Any], fileType: AudioFileType, rate: Double, channels: UInt32) throws -> AudioStreamBasicDescription {
        var bits: UInt32 = 16
        if let value = settings[AVLinearPCMBitDepthKey] {
            guard let b = settingNumber(value), [8.0, 16, 24, 32].contains(b) else {
                throw avError(kAudioFormatUnsupportedDataFormatError, "AVAudioRecorder: AVLinearPCMBitDepthKey \(value) is not 8, 16, 24 or 32")
            }
            bits = UInt32(b)
        }
        let isFloat = settingNumber(settings[AVLinearPCMIsFloatKey]).map { $0 != 0 } ?? false
        if isFloat && bits != 32 {
            if settings[AVLinearPCMBitDepthKey] == nil { bits = 32 } else {
                throw avError(kAudioFormatUnsupportedDataFormatError, "AVAudioRecorder: float PCM (AVLinearPCMIsFloatKey) is 32-bit, not \(bits)-bit")
            }
        }
        let bigEndianDefault = fileType == .aiff || fileType == .aifc
        let bigEndian = settingNumber(settings[AVLinearPCMIsBigEndianKey]).map { $0 != 0 } ?? bigEndianDefault
        // 8-bit samples are unsigned in WAVE, signed in AIFF and CAF.
        let signed = !(bits == 8 && (fileType == .wave || fileType == .rf64))
        return .linearPCM(sampleRate: rate, channels: channels, bitsPerChannel: bits, isFloat: isFloat,
                          isBigEndian: bits > 8 && bigEndian, isSigned: isFloat || signed)
    }

    /// The encoder keys: bit rate (total or per channel), quality, bit-rate strategy.
    static func encoderSettings(_ settings: [String: Any], channels: Int) throws -> AudioEncoderSettings {
        var s = AudioEncoderSettings()
        if let value = settings[AVEncoderBitRateKey] {
            guard let b = settingNumber(value), b >= 6000, b <= 1_536_000 else {
                throw avError(kAudio_ParamError, "AVAudioRecorder: AVEncoderBitRateKey \(value) is not a bit rate in 6000...1536000 bit/s")
            }
            s.bitRate = Int(b)
        } else if let value = settings[AVEncoderBitRatePerChannelKey] {
            guard let b = settingNumber(value), b >= 6000, b * Double(channels) <= 1_536_000 else {
                throw avError(kAudio_ParamError, "AVAudioRecorder: AVEncoderBitRatePerChannelKey \(value) is not a bit rate per channel of 6000 bit/s or more")
            }
            s.bitRate = Int(b) * channels
        }
        if let value = settings[AVEncoderAudioQualityKey] ?? settings[AVEncoderAudioQualityForVBRKey] {
            guard let q = settingNumber(value), q >= 0, q <= 127 else {
                throw avError(kAudio_ParamError, "AVAudioRecorder: AVEncoderAudioQualityKey \(value) is not an AVAudioQuality (0...127)")
            }
            s.quality = Int(q)
        }
        if let value = settings[AVEncoderBitRateStrategyKey] {
            switch value as? String {
            case AVAudioBitRateStrategy_Constant: s.strategy = .constant
            case AVAudioBitRateStrategy_LongTermAverage: s.strategy = .longTermAverage
            case AVAudioBitRateStrategy_VariableConstrained: s.strategy = .variableConstrained
            case AVAudioBitRateStrategy_Variable: s.strategy = .variable
            default:
                throw avError(kAudio_ParamError, "AVAudioRecorder: AVEncoderBitRateStrategyKey \(value) is not one of the AVAudioBitRateStrategy_ strings")
            }
        }
        return s
    }

    /// Settings for a format passed to `init(url:format:)`: its settings dictionary without the
    /// sample layout a buffer has in memory (files hold interleaved samples in the byte order
    /// their container takes).
    static func settings(of format: AVAudioFormat) -> [String: Any] {
        var s = format.settings
        s[AVLinearPCMIsNonInterleaved] = nil
        s[AVLinearPCMIsBigEndianKey] = nil
        return s
    }
}
