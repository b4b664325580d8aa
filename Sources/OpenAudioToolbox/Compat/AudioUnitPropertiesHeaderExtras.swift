// The rest of AudioUnitProperties.h that costs nothing to provide: preset and configuration
// dictionary keys, the parameter display-type helpers, the voice processor's input-channel error.

/// Preset dictionary key: the preset format version (Apple's `kAUPresetVersionKey`).
public let kAUPresetVersionKey: String = "version"
/// Preset dictionary key: the unit's component type (Apple's `kAUPresetTypeKey`).
public let kAUPresetTypeKey: String = "type"
/// Preset dictionary key: the unit's component subtype (Apple's `kAUPresetSubtypeKey`).
public let kAUPresetSubtypeKey: String = "subtype"
/// Preset dictionary key: the unit's manufacturer (Apple's `kAUPresetManufacturerKey`).
public let kAUPresetManufacturerKey: String = "manufacturer"
/// Preset dictionary key: the unit's state data (Apple's `kAUPresetDataKey`).
public let kAUPresetDataKey: String = "data"
/// Preset dictionary key: the preset's name (Apple's `kAUPresetNameKey`).
public let kAUPresetNameKey: String = "name"
/// Preset dictionary key: the preset's number (Apple's `kAUPresetNumberKey`).
public let kAUPresetNumberKey: String = "preset-number"
/// Preset dictionary key: the render quality (Apple's `kAUPresetRenderQualityKey`).
public let kAUPresetRenderQualityKey: String = "render-quality"
/// Preset dictionary key: the CPU load (Apple's `kAUPresetCPULoadKey`).
public let kAUPresetCPULoadKey: String = "cpu-load"
/// Preset dictionary key: the element names (Apple's `kAUPresetElementNameKey`).
public let kAUPresetElementNameKey: String = "element-name"
/// Preset dictionary key: files the preset refers to (Apple's `kAUPresetExternalFileRefs`).
public let kAUPresetExternalFileRefs: String = "file-references"
/// Preset dictionary key: VST state data (Apple's `kAUPresetVSTDataKey`).
public let kAUPresetVSTDataKey: String = "vstdata"
/// Preset dictionary key: a VST preset (Apple's `kAUPresetVSTPresetKey`).
public let kAUPresetVSTPresetKey: String = "vstpreset"
/// Preset dictionary key: MAS state data (Apple's `kAUPresetMASDataKey`).
public let kAUPresetMASDataKey: String = "masdata"
/// Preset dictionary key: per-part state (Apple's `kAUPresetPartKey`).
public let kAUPresetPartKey: String = "part"

/// Configuration-info key: the unit has a custom view (Apple's `kAudioUnitConfigurationInfo_HasCustomView`).
public let kAudioUnitConfigurationInfo_HasCustomView: String = "HasCustomView"
/// Configuration-info key: the channel configurations (Apple's `kAudioUnitConfigurationInfo_ChannelConfigurations`).
public let kAudioUnitConfigurationInfo_ChannelConfigurations: String = "ChannelConfigurations"
/// Configuration-info key: the initial input buses (Apple's `kAudioUnitConfigurationInfo_InitialInputs`).
public let kAudioUnitConfigurationInfo_InitialInputs: String = "InitialInputs"
/// Configuration-info key: the initial output buses (Apple's `kAudioUnitConfigurationInfo_InitialOutputs`).
public let kAudioUnitConfigurationInfo_InitialOutputs: String = "InitialOutputs"
/// Configuration-info key: the unit's icon (Apple's `kAudioUnitConfigurationInfo_IconURL`).
public let kAudioUnitConfigurationInfo_IconURL: String = "IconURL"
/// Configuration-info key: the bus count is writable (Apple's `kAudioUnitConfigurationInfo_BusCountWritable`).
public let kAudioUnitConfigurationInfo_BusCountWritable: String = "BusCountWritable"
/// Configuration-info key: the supported channel layout tags (Apple's `kAudioUnitConfigurationInfo_SupportedChannelLayoutTags`).
public let kAudioUnitConfigurationInfo_SupportedChannelLayoutTags: String = "SupportedChannelLayoutTags"

/// The display-type bits of parameter flags (square root ... exponential, logarithmic).
private let parameterDisplayMask: UInt32 = (7 << 16) | (1 << 22)

/// The display type among a parameter's flags (Apple's `GetAudioUnitParameterDisplayType`).
public func GetAudioUnitParameterDisplayType(_ flags: AudioUnitParameterOptions) -> AudioUnitParameterOptions {
    AudioUnitParameterOptions(rawValue: flags.rawValue & parameterDisplayMask)
}

/// `flags` with its display type replaced by `displayType` (Apple's `SetAudioUnitParameterDisplayType`).
public func SetAudioUnitParameterDisplayType(_ flags: AudioUnitParameterOptions, _ displayType: AudioUnitParameterOptions) -> AudioUnitParameterOptions {
    AudioUnitParameterOptions(rawValue: (flags.rawValue & ~parameterDisplayMask) | displayType.rawValue)
}

/// The voice processor was given an input with a channel count it cannot use (Apple's
/// `kAUVoiceIOErr_UnexpectedNumberOfInputChannels`).
public let kAUVoiceIOErr_UnexpectedNumberOfInputChannels: OSStatus = -66784
