// Audio Toolbox–compatible AudioUnitProperties.h value types: connections, channel infos,
// presets, parameter infos, units and options.

import OATCore
import OATUnits

// MARK: - Property value types

/// A connection from another unit's output to an input bus (Apple's `AudioUnitConnection`,
/// the value of ``kAudioUnitProperty_MakeConnection``).
public struct AudioUnitConnection {
    /// The unit that feeds the input; nil disconnects.
    public var sourceAudioUnit: AudioUnit?
    /// Its output bus (0 here).
    public var sourceOutputNumber: UInt32
    /// The input bus it feeds.
    public var destInputNumber: UInt32
    /// A zeroed connection.
    public init() { self.init(sourceAudioUnit: nil, sourceOutputNumber: 0, destInputNumber: 0) }
    /// Apple's memberwise initialiser.
    public init(sourceAudioUnit: AudioUnit?, sourceOutputNumber: UInt32, destInputNumber: UInt32) {
        self.sourceAudioUnit = sourceAudioUnit
        self.sourceOutputNumber = sourceOutputNumber
        self.destInputNumber = destInputNumber
    }
}

/// A supported channel configuration (Apple's `AUChannelInfo`): -1 on both sides means any
/// count, the same in and out.
public struct AUChannelInfo: Sendable, Hashable {
    /// Input channels.
    public var inChannels: Int16
    /// Output channels.
    public var outChannels: Int16
    /// A zeroed value.
    public init() { self.init(inChannels: 0, outChannels: 0) }
    /// Apple's memberwise initialiser.
    public init(inChannels: Int16, outChannels: Int16) {
        self.inChannels = inChannels
        self.outChannels = outChannels
    }
}

/// A buffer a host lends a unit (Apple's `AudioUnitExternalBuffer`).
public struct AudioUnitExternalBuffer {
    /// The memory.
    public var buffer: UnsafeMutablePointer<UInt8>
    /// Its size in bytes.
    public var size: UInt32
    /// Apple's memberwise initialiser.
    public init(buffer: UnsafeMutablePointer<UInt8>, size: UInt32) {
        self.buffer = buffer
        self.size = size
    }
}

/// One bin of a frequency response (Apple's `AudioUnitFrequencyResponseBin`).
public struct AudioUnitFrequencyResponseBin: Sendable, Hashable {
    /// Frequency in Hz.
    public var mFrequency: Float64
    /// Linear magnitude.
    public var mMagnitude: Float64
    /// A zeroed bin.
    public init() { self.init(mFrequency: 0, mMagnitude: 0) }
    /// Apple's memberwise initialiser.
    public init(mFrequency: Float64, mMagnitude: Float64) {
        self.mFrequency = mFrequency
        self.mMagnitude = mMagnitude
    }
}

/// A preset (Apple's `AUPreset`). Different: the name is a Swift `String` (`CFString` here), not
/// an `Unmanaged<CFString>`.
public struct AUPreset: Sendable {
    /// The preset number (negative: a user preset).
    public var presetNumber: Int32
    /// The preset name.
    public var presetName: CFString?
    /// A zeroed preset.
    public init() { self.init(presetNumber: 0, presetName: nil) }
    /// Memberwise initialiser.
    public init(presetNumber: Int32, presetName: CFString?) {
        self.presetNumber = presetNumber
        self.presetName = presetName
    }
}

/// The unit of a parameter (Apple's `AudioUnitParameterUnit`).
public enum AudioUnitParameterUnit: UInt32, Sendable {
    /// Generic, usually 0 ... 1.
    case generic = 0
    /// An index (menu item).
    case indexed = 1
    /// 0 false, otherwise true.
    case boolean = 2
    /// Percent.
    case percent = 3
    /// Seconds.
    case seconds = 4
    /// Sample frames.
    case sampleFrames = 5
    /// Phase in degrees.
    case phase = 6
    /// A rate multiplier.
    case rate = 7
    /// Hertz.
    case hertz = 8
    /// Cents.
    case cents = 9
    /// Relative semitones.
    case relativeSemiTones = 10
    /// A MIDI note number.
    case midiNoteNumber = 11
    /// A MIDI controller value.
    case midiController = 12
    /// Decibels.
    case decibels = 13
    /// Linear gain.
    case linearGain = 14
    /// Degrees.
    case degrees = 15
    /// Equal-power crossfade.
    case equalPowerCrossfade = 16
    /// Mixer fader curve.
    case mixerFaderCurve1 = 17
    /// Pan.
    case pan = 18
    /// Meters.
    case meters = 19
    /// Absolute cents.
    case absoluteCents = 20
    /// Octaves.
    case octaves = 21
    /// Beats per minute.
    case BPM = 22
    /// Beats.
    case beats = 23
    /// Milliseconds.
    case milliseconds = 24
    /// A ratio.
    case ratio = 25
    /// A custom unit (named by `unitName`).
    case customUnit = 26
    /// A MIDI 2 controller value.
    case midi2Controller = 27
}

/// Flags of a parameter (Apple's `AudioUnitParameterOptions`).
public struct AudioUnitParameterOptions: OptionSet, Sendable, Hashable {
    /// The raw bits.
    public var rawValue: UInt32
    /// Creates options.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// The name string must be released (Apple; never set here).
    public static let flag_CFNameRelease = AudioUnitParameterOptions(rawValue: 1 << 4)
    /// Omitted from presets.
    public static let flag_OmitFromPresets = AudioUnitParameterOptions(rawValue: 1 << 13)
    /// History may be plotted.
    public static let flag_PlotHistory = AudioUnitParameterOptions(rawValue: 1 << 14)
    /// A read-only meter.
    public static let flag_MeterReadOnly = AudioUnitParameterOptions(rawValue: 1 << 15)
    /// Display with a square-root scale.
    public static let flag_DisplaySquareRoot = AudioUnitParameterOptions(rawValue: 1 << 16)
    /// Display with a squared scale.
    public static let flag_DisplaySquared = AudioUnitParameterOptions(rawValue: 2 << 16)
    /// Display with a cubed scale.
    public static let flag_DisplayCubed = AudioUnitParameterOptions(rawValue: 3 << 16)
    /// Display with a cube-root scale.
    public static let flag_DisplayCubeRoot = AudioUnitParameterOptions(rawValue: 4 << 16)
    /// Display with an exponential scale.
    public static let flag_DisplayExponential = AudioUnitParameterOptions(rawValue: 5 << 16)
    /// The parameter has a clump ID.
    public static let flag_HasClump = AudioUnitParameterOptions(rawValue: 1 << 20)
    /// Values have strings.
    public static let flag_ValuesHaveStrings = AudioUnitParameterOptions(rawValue: 1 << 21)
    /// Display with a logarithmic scale.
    public static let flag_DisplayLogarithmic = AudioUnitParameterOptions(rawValue: 1 << 22)
    /// High resolution.
    public static let flag_IsHighResolution = AudioUnitParameterOptions(rawValue: 1 << 23)
    /// Not for real-time changes.
    public static let flag_NonRealTime = AudioUnitParameterOptions(rawValue: 1 << 24)
    /// The parameter can ramp.
    public static let flag_CanRamp = AudioUnitParameterOptions(rawValue: 1 << 25)
    /// Expert mode.
    public static let flag_ExpertMode = AudioUnitParameterOptions(rawValue: 1 << 26)
    /// `cfNameString` holds the name.
    public static let flag_HasCFNameString = AudioUnitParameterOptions(rawValue: 1 << 27)
    /// Changing it may change other parameters.
    public static let flag_IsGlobalMeta = AudioUnitParameterOptions(rawValue: 1 << 28)
    /// Changing it may change parameters of its element.
    public static let flag_IsElementMeta = AudioUnitParameterOptions(rawValue: 1 << 29)
    /// Readable.
    public static let flag_IsReadable = AudioUnitParameterOptions(rawValue: 1 << 30)
    /// Writable.
    public static let flag_IsWritable = AudioUnitParameterOptions(rawValue: 1 << 31)
}

/// One parameter's description (Apple's `AudioUnitParameterInfo`, the value of
/// ``kAudioUnitProperty_ParameterInfo``). Different: `unitName` and `cfNameString` are
/// `Unmanaged<AnyObject>?` (there is no CoreFoundation string class here) and always nil: the
/// name is in ``name`` and ``AudioUnitParameterOptions/flag_HasCFNameString`` is not set. The
/// struct holds no Swift reference, so `&info` passes as a raw pointer as on macOS.
public struct AudioUnitParameterInfo {
    /// The name as a NUL-terminated UTF-8 C string (52 bytes; longer names are cut).
    public var name: (CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar,
                      CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar,
                      CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar,
                      CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar)
    /// The unit's name for ``AudioUnitParameterUnit/customUnit`` (nil here).
    public var unitName: Unmanaged<AnyObject>?
    /// The clump (group) ID (``AudioUnitParameterOptions/flag_HasClump``).
    public var clumpID: UInt32
    /// The name as a CoreFoundation string (nil here: read ``name``).
    public var cfNameString: Unmanaged<AnyObject>?
    /// The unit of measure.
    public var unit: AudioUnitParameterUnit
    /// The smallest value.
    public var minValue: AudioUnitParameterValue
    /// The largest value.
    public var maxValue: AudioUnitParameterValue
    /// The default value.
    public var defaultValue: AudioUnitParameterValue
    /// Flags.
    public var flags: AudioUnitParameterOptions
    /// A zeroed description.
    public init() {
        name = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        unitName = nil
        clumpID = 0
        cfNameString = nil
        unit = .generic
        minValue = 0
        maxValue = 0
        defaultValue = 0
        flags = []
    }
}

/// The Apple unit of measure of an OATUnits parameter unit.
func appleParameterUnit(_ u: ParameterUnit) -> AudioUnitParameterUnit {
    switch u {
    case .generic: return .generic
    case .linearGain: return .linearGain
    case .decibels: return .decibels
    case .hertz: return .hertz
    case .seconds: return .seconds
    case .milliseconds: return .milliseconds
    case .octaves: return .octaves
    case .cents: return .cents
    case .percent: return .percent
    case .ratio: return .ratio
    case .pan: return .pan
    case .boolean: return .boolean
    case .indexed: return .indexed
    }
}

/// The ``AudioUnitParameterInfo`` of an OATUnits parameter.
func parameterInfo(_ p: NodeParameter) -> AudioUnitParameterInfo {
    var info = AudioUnitParameterInfo()
    withUnsafeMutableBytes(of: &info.name) { raw in
        let bytes = Array(p.name.utf8.prefix(raw.count - 1))
        raw.copyBytes(from: bytes)
    }
    info.unit = appleParameterUnit(p.unit)
    info.minValue = p.range.lowerBound
    info.maxValue = p.range.upperBound
    info.defaultValue = p.defaultValue
    info.flags = [.flag_IsReadable, .flag_IsWritable]
    return info
}
