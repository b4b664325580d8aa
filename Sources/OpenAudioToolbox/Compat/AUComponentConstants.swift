// Audio Toolbox–compatible AUComponent.h constants beyond the units provided here: Apple's
// other unit types and subtypes, and the component selectors (AudioComponentInstanceCanDo).

// MARK: - More types and subtypes (Apple's; the units here are listed in docs/PORTING.md)

/// `'aumf'`: music effects (none here).
public let kAudioUnitType_MusicEffect: UInt32 = fourCC("aumf")
/// `'aupn'`: panners (none here).
public let kAudioUnitType_Panner: UInt32 = fourCC("aupn")
/// `'auol'`: offline effects (none here).
public let kAudioUnitType_OfflineEffect: UInt32 = fourCC("auol")
/// `'aumi'`: MIDI processors (none here).
public let kAudioUnitType_MIDIProcessor: UInt32 = fourCC("aumi")
/// `'lpas'`: low-pass filter (OATUnits' `AUFilterUnitNode`, Apple's parameters).
public let kAudioUnitSubType_LowPassFilter: UInt32 = fourCC("lpas")
/// `'hpas'`: high-pass filter (OATUnits' `AUFilterUnitNode`, Apple's parameters).
public let kAudioUnitSubType_HighPassFilter: UInt32 = fourCC("hpas")
/// `'bpas'`: band-pass filter (OATUnits' `AUFilterUnitNode`, Apple's parameters).
public let kAudioUnitSubType_BandPassFilter: UInt32 = fourCC("bpas")
/// `'hshf'`: high-shelf filter (OATUnits' `AUFilterUnitNode`, Apple's parameters).
public let kAudioUnitSubType_HighShelfFilter: UInt32 = fourCC("hshf")
/// `'lshf'`: low-shelf filter (OATUnits' `AUFilterUnitNode`, Apple's parameters).
public let kAudioUnitSubType_LowShelfFilter: UInt32 = fourCC("lshf")
/// `'pmeq'`: parametric EQ (OATUnits' `AUFilterUnitNode`, Apple's parameters).
public let kAudioUnitSubType_ParametricEQ: UInt32 = fourCC("pmeq")
/// `'dist'`: distortion (OATUnits' `AUDistortionNode`, Apple's parameters).
public let kAudioUnitSubType_Distortion: UInt32 = fourCC("dist")
/// `'greq'`: graphic EQ (not provided here).
public let kAudioUnitSubType_GraphicEQ: UInt32 = fourCC("greq")
/// `'mrev'`: matrix reverb (not provided here: use `kAudioUnitSubType_Reverb2`).
public let kAudioUnitSubType_MatrixReverb: UInt32 = fourCC("mrev")
/// `'tmpt'`: pitch (Apple's older name of the time-pitch subtype; the time-pitch unit here).
public let kAudioUnitSubType_Pitch: UInt32 = fourCC("tmpt")
/// `'mcmp'`: multiband compressor (not provided here).
public let kAudioUnitSubType_MultiBandCompressor: UInt32 = fourCC("mcmp")
/// `'sdly'`: sample delay (not provided here).
public let kAudioUnitSubType_SampleDelay: UInt32 = fourCC("sdly")
/// `'merg'`: merger (not provided here).
public let kAudioUnitSubType_Merger: UInt32 = fourCC("merg")
/// `'3dem'`: spatial mixer (OATUnits' `AUSpatialMixerNode`: Apple's parameters and properties, SpatialMixerCompat.swift).
public let kAudioUnitSubType_SpatialMixer: UInt32 = fourCC("3dem")
/// `'smxr'`: stereo mixer (not provided here: use `kAudioUnitSubType_MultiChannelMixer`).
public let kAudioUnitSubType_StereoMixer: UInt32 = fourCC("smxr")
/// `'mxmx'`: matrix mixer (not provided here).
public let kAudioUnitSubType_MatrixMixer: UInt32 = fourCC("mxmx")
/// `'hrtf'`: HRTF panner (not provided here).
public let kAudioUnitSubType_HRTFPanner: UInt32 = fourCC("hrtf")
/// `'raac'`: AAC round trip (not provided here).
public let kAudioUnitSubType_RoundTripAAC: UInt32 = fourCC("raac")
/// `'nsnd'`: network send (not provided here).
public let kAudioUnitSubType_NetSend: UInt32 = fourCC("nsnd")
/// `'nrcv'`: network receive (not provided here).
public let kAudioUnitSubType_NetReceive: UInt32 = fourCC("nrcv")

// MARK: - Selectors (for AudioComponentInstanceCanDo)

/// The first selector of the unit calls (Apple's `kAudioUnitRange`).
public let kAudioUnitRange: Int = 0x0000
/// ``AudioUnitInitialize(_:)``.
public let kAudioUnitInitializeSelect: Int = 0x0001
/// ``AudioUnitUninitialize(_:)``.
public let kAudioUnitUninitializeSelect: Int = 0x0002
/// ``AudioUnitGetPropertyInfo(_:_:_:_:_:_:)``.
public let kAudioUnitGetPropertyInfoSelect: Int = 0x0003
/// ``AudioUnitGetProperty(_:_:_:_:_:_:)``.
public let kAudioUnitGetPropertySelect: Int = 0x0004
/// `AudioUnitSetProperty`.
public let kAudioUnitSetPropertySelect: Int = 0x0005
/// ``AudioUnitAddPropertyListener(_:_:_:_:)``.
public let kAudioUnitAddPropertyListenerSelect: Int = 0x000A
/// ``AudioUnitRemovePropertyListener(_:_:_:)``.
public let kAudioUnitRemovePropertyListenerSelect: Int = 0x000B
/// ``AudioUnitRemovePropertyListenerWithUserData(_:_:_:_:)``.
public let kAudioUnitRemovePropertyListenerWithUserDataSelect: Int = 0x0012
/// ``AudioUnitAddRenderNotify(_:_:_:)``.
public let kAudioUnitAddRenderNotifySelect: Int = 0x000F
/// ``AudioUnitRemoveRenderNotify(_:_:_:)``.
public let kAudioUnitRemoveRenderNotifySelect: Int = 0x0010
/// ``AudioUnitGetParameter(_:_:_:_:_:)``.
public let kAudioUnitGetParameterSelect: Int = 0x0006
/// ``AudioUnitSetParameter(_:_:_:_:_:_:)``.
public let kAudioUnitSetParameterSelect: Int = 0x0007
/// ``AudioUnitScheduleParameters(_:_:_:)``.
public let kAudioUnitScheduleParametersSelect: Int = 0x0011
/// ``AudioUnitRender(_:_:_:_:_:_:)``.
public let kAudioUnitRenderSelect: Int = 0x000E
/// ``AudioUnitReset(_:_:_:)``.
public let kAudioUnitResetSelect: Int = 0x0009
/// `AudioUnitComplexRender` (not provided).
public let kAudioUnitComplexRenderSelect: Int = 0x0013
/// `AudioUnitProcess` (not provided).
public let kAudioUnitProcessSelect: Int = 0x0014
/// `AudioUnitProcessMultiple` (not provided).
public let kAudioUnitProcessMultipleSelect: Int = 0x0015
