// Apple's property IDs (AudioUnitProperties.h) of properties no unit here implements: programs
// that name them compile, and asking a unit for one answers `kAudioUnitErr_InvalidProperty`, as
// Apple's units that lack the property do. Also the render-quality, clump and frequency-response
// constants and the instrument error codes (AUComponent.h).

/// Apple's `kAudioUnitProperty_FastDispatch` (5): fast-dispatch function pointers of a plug-in (units here are Swift nodes); units here answer `kAudioUnitErr_InvalidProperty`.
public let kAudioUnitProperty_FastDispatch: AudioUnitPropertyID = 5
/// Apple's `kAudioUnitProperty_SRCAlgorithm` (9): the sample-rate converter algorithm (deprecated; one resampler here); units here answer `kAudioUnitErr_InvalidProperty`.
public let kAudioUnitProperty_SRCAlgorithm: AudioUnitPropertyID = 9
/// Apple's `kAudioUnitProperty_ReverbRoomType` (10): the room type of the 3D/spatial mixer's reverb (no such mixer here); units here answer `kAudioUnitErr_InvalidProperty`.
public let kAudioUnitProperty_ReverbRoomType: AudioUnitPropertyID = 10
/// Apple's `kAudioUnitProperty_SetExternalBuffer` (15): an external render buffer (units render into their own); units here answer `kAudioUnitErr_InvalidProperty`.
public let kAudioUnitProperty_SetExternalBuffer: AudioUnitPropertyID = 15
/// Apple's `kAudioUnitProperty_MIDIControlMapping` (17): MIDI control mapping (deprecated; no MIDI here); units here answer `kAudioUnitErr_InvalidProperty`.
public let kAudioUnitProperty_MIDIControlMapping: AudioUnitPropertyID = 17
/// Apple's `kAudioUnitProperty_GetUIComponentList` (18): Carbon view components (no audio-unit views); units here answer `kAudioUnitErr_InvalidProperty`.
public let kAudioUnitProperty_GetUIComponentList: AudioUnitPropertyID = 18
/// Apple's `kAudioUnitProperty_ContextName` (25): the host's name for the unit's context; units here answer `kAudioUnitErr_InvalidProperty`.
public let kAudioUnitProperty_ContextName: AudioUnitPropertyID = 25
/// Apple's `kAudioUnitProperty_CurrentPreset` (28): the current preset (deprecated; see ``kAudioUnitProperty_PresentPreset``); units here answer `kAudioUnitErr_InvalidProperty`.
public let kAudioUnitProperty_CurrentPreset: AudioUnitPropertyID = 28
/// Apple's `kAudioUnitProperty_CocoaUI` (31): the unit's Cocoa view (no audio-unit views); units here answer `kAudioUnitErr_InvalidProperty`.
public let kAudioUnitProperty_CocoaUI: AudioUnitPropertyID = 31
/// Apple's `kAudioUnitProperty_ParameterIDName` (34): a parameter's name of a given length; units here answer `kAudioUnitErr_InvalidProperty`.
public let kAudioUnitProperty_ParameterIDName: AudioUnitPropertyID = 34
/// Apple's `kAudioUnitProperty_ParameterValueName` (34): the old name of ``kAudioUnitProperty_ParameterIDName``; units here answer `kAudioUnitErr_InvalidProperty`.
public let kAudioUnitProperty_ParameterValueName: AudioUnitPropertyID = 34
/// Apple's `kAudioUnitProperty_ParameterClumpName` (35): a parameter clump's name (no clumps here); units here answer `kAudioUnitErr_InvalidProperty`.
public let kAudioUnitProperty_ParameterClumpName: AudioUnitPropertyID = 35
/// Apple's `kAudioUnitProperty_IconLocation` (39): the unit's icon (no audio-unit views); units here answer `kAudioUnitErr_InvalidProperty`.
public let kAudioUnitProperty_IconLocation: AudioUnitPropertyID = 39
/// Apple's `kAudioUnitProperty_AUHostIdentifier` (46): the host's name and version; units here answer `kAudioUnitErr_InvalidProperty`.
public let kAudioUnitProperty_AUHostIdentifier: AudioUnitPropertyID = 46
/// Apple's `kAudioUnitProperty_MIDIOutputCallbackInfo` (47): the unit's MIDI outputs (no MIDI output here); units here answer `kAudioUnitErr_InvalidProperty`.
public let kAudioUnitProperty_MIDIOutputCallbackInfo: AudioUnitPropertyID = 47
/// Apple's `kAudioUnitProperty_MIDIOutputCallback` (48): the unit's MIDI output callback (no MIDI output here); units here answer `kAudioUnitErr_InvalidProperty`.
public let kAudioUnitProperty_MIDIOutputCallback: AudioUnitPropertyID = 48
/// Apple's `kAudioUnitProperty_InputSamplesInOutput` (49): the input-samples-in-output callback of varispeed units; units here answer `kAudioUnitErr_InvalidProperty`.
public let kAudioUnitProperty_InputSamplesInOutput: AudioUnitPropertyID = 49
/// Apple's `kAudioUnitProperty_ClassInfoFromDocument` (50): class info from a document (no CFDictionary here); units here answer `kAudioUnitErr_InvalidProperty`.
public let kAudioUnitProperty_ClassInfoFromDocument: AudioUnitPropertyID = 50
/// Apple's `kAudioUnitProperty_RequestViewController` (56): the unit's view controller (no audio-unit views); units here answer `kAudioUnitErr_InvalidProperty`.
public let kAudioUnitProperty_RequestViewController: AudioUnitPropertyID = 56
/// Apple's `kAudioUnitProperty_ParametersForOverview` (57): parameters for an overview (no audio-unit views); units here answer `kAudioUnitErr_InvalidProperty`.
public let kAudioUnitProperty_ParametersForOverview: AudioUnitPropertyID = 57
/// Apple's `kAudioUnitProperty_SupportsMPE` (58): MIDI polyphonic expression (no music devices); units here answer `kAudioUnitErr_InvalidProperty`.
public let kAudioUnitProperty_SupportsMPE: AudioUnitPropertyID = 58
/// Apple's `kAudioUnitProperty_RenderContextObserver` (60): the render context observer (no workgroups here); units here answer `kAudioUnitErr_InvalidProperty`.
public let kAudioUnitProperty_RenderContextObserver: AudioUnitPropertyID = 60
/// Apple's `kAudioUnitProperty_LastRenderSampleTime` (61): the sample time of the last render; units here answer `kAudioUnitErr_InvalidProperty`.
public let kAudioUnitProperty_LastRenderSampleTime: AudioUnitPropertyID = 61
/// Apple's `kAudioUnitProperty_LoadedOutOfProcess` (62): whether the unit runs out of process (units run in process); units here answer `kAudioUnitErr_InvalidProperty`.
public let kAudioUnitProperty_LoadedOutOfProcess: AudioUnitPropertyID = 62
/// Apple's `kAudioUnitProperty_MIDIOutputEventListCallback` (63): MIDI 2 event-list output (no MIDI output here); units here answer `kAudioUnitErr_InvalidProperty`.
public let kAudioUnitProperty_MIDIOutputEventListCallback: AudioUnitPropertyID = 63
/// Apple's `kAudioUnitProperty_AudioUnitMIDIProtocol` (64): the unit's MIDI protocol (no MIDI here); units here answer `kAudioUnitErr_InvalidProperty`.
public let kAudioUnitProperty_AudioUnitMIDIProtocol: AudioUnitPropertyID = 64
/// Apple's `kAudioUnitProperty_HostMIDIProtocol` (65): the host's MIDI protocol (no MIDI here); units here answer `kAudioUnitErr_InvalidProperty`.
public let kAudioUnitProperty_HostMIDIProtocol: AudioUnitPropertyID = 65
/// Apple's `kAudioUnitProperty_MIDIOutputBufferSizeHint` (66): the MIDI output buffer size (no MIDI here); units here answer `kAudioUnitErr_InvalidProperty`.
public let kAudioUnitProperty_MIDIOutputBufferSizeHint: AudioUnitPropertyID = 66
/// Apple's `kAudioUnitProperty_UsesInternalReverb` (1005): the 3D mixer's or a music device's internal reverb (neither here); units here answer `kAudioUnitErr_InvalidProperty`.
public let kAudioUnitProperty_UsesInternalReverb: AudioUnitPropertyID = 1005
/// Apple's `kMusicDeviceProperty_InstrumentCount` (1000): a music device's instrument count (no music devices); units here answer `kAudioUnitErr_InvalidProperty`.
public let kMusicDeviceProperty_InstrumentCount: AudioUnitPropertyID = 1000
/// Apple's `kMusicDeviceProperty_SoundBankURL` (1100): the SoundFont 2 or DLS bank (a `CFURL`) the sampler and MIDI synth play (MusicDevice.swift).
public let kMusicDeviceProperty_SoundBankURL: AudioUnitPropertyID = 1100
/// Apple's `kAudioOutputUnitProperty_OSWorkgroup` (2015): the I/O thread's os_workgroup (none on Linux); units here answer `kAudioUnitErr_InvalidProperty`.
public let kAudioOutputUnitProperty_OSWorkgroup: AudioUnitPropertyID = 2015
/// Apple's `kAUVoiceIOProperty_VoiceProcessingQuality` (2103): the voice processor's quality (deprecated); units here answer `kAudioUnitErr_InvalidProperty`.
public let kAUVoiceIOProperty_VoiceProcessingQuality: AudioUnitPropertyID = 2103
/// Apple's `kAUVoiceIOProperty_MutedSpeechActivityEventListener` (2106): speech detected while muted; units here answer `kAudioUnitErr_InvalidProperty`.
public let kAUVoiceIOProperty_MutedSpeechActivityEventListener: AudioUnitPropertyID = 2106
/// Apple's `kAUVoiceIOProperty_OtherAudioDuckingConfiguration` (2108): how much other audio is ducked; units here answer `kAudioUnitErr_InvalidProperty`.
public let kAUVoiceIOProperty_OtherAudioDuckingConfiguration: AudioUnitPropertyID = 2108
/// Apple's `kAUNBandEQProperty_MaxNumberOfBands` (2201): the N-band EQ's largest band count (16 here); units here answer `kAudioUnitErr_InvalidProperty`.
public let kAUNBandEQProperty_MaxNumberOfBands: AudioUnitPropertyID = 2201
/// Apple's `kAUNBandEQProperty_BiquadCoefficients` (2203): the N-band EQ's biquad coefficients; units here answer `kAudioUnitErr_InvalidProperty`.
public let kAUNBandEQProperty_BiquadCoefficients: AudioUnitPropertyID = 2203
/// Apple's `kAudioUnitProperty_SpatializationAlgorithm` (3000): a spatial mixer input's `AUSpatializationAlgorithm` (`UInt32`, input scope); other units answer `kAudioUnitErr_InvalidProperty`.
public let kAudioUnitProperty_SpatializationAlgorithm: AudioUnitPropertyID = 3000
/// Apple's `kAudioUnitProperty_DopplerShift` (3002): the spatial mixer's Doppler shift (no spatial mixer here); units here answer `kAudioUnitErr_InvalidProperty`.
public let kAudioUnitProperty_DopplerShift: AudioUnitPropertyID = 3002
/// Apple's `kAudioUnitProperty_MatrixDimensions` (3009): the matrix mixer's dimensions (no matrix mixer here); units here answer `kAudioUnitErr_InvalidProperty`.
public let kAudioUnitProperty_MatrixDimensions: AudioUnitPropertyID = 3009
/// Apple's `kAudioUnitProperty_MeterClipping` (3011): a mixer's clipping meter (no metering here); units here answer `kAudioUnitErr_InvalidProperty`.
public let kAudioUnitProperty_MeterClipping: AudioUnitPropertyID = 3011
/// Apple's `kAudioUnitProperty_SampleRateConverterComplexity` (3014): the converter's resampler quality (one resampler here); units here answer `kAudioUnitErr_InvalidProperty`.
public let kAudioUnitProperty_SampleRateConverterComplexity: AudioUnitPropertyID = 3014
/// Apple's `kAudioUnitProperty_InputAnchorTimeStamp` (3016): the anchor time stamp of a mixer input; units here answer `kAudioUnitErr_InvalidProperty`.
public let kAudioUnitProperty_InputAnchorTimeStamp: AudioUnitPropertyID = 3016
/// Apple's `kAudioOfflineUnitProperty_InputSize` (3020): an offline effect's input size (no offline effects); units here answer `kAudioUnitErr_InvalidProperty`.
public let kAudioOfflineUnitProperty_InputSize: AudioUnitPropertyID = 3020
/// Apple's `kAudioOfflineUnitProperty_OutputSize` (3021): an offline effect's output size (no offline effects); units here answer `kAudioUnitErr_InvalidProperty`.
public let kAudioOfflineUnitProperty_OutputSize: AudioUnitPropertyID = 3021
/// Apple's `kAudioUnitProperty_DeferredRendererPullSize` (3320): the deferred renderer's pull size (no deferred renderer); units here answer `kAudioUnitErr_InvalidProperty`.
public let kAudioUnitProperty_DeferredRendererPullSize: AudioUnitPropertyID = 3320
/// Apple's `kAudioUnitProperty_DeferredRendererExtraLatency` (3321): the deferred renderer's extra latency (no deferred renderer); units here answer `kAudioUnitErr_InvalidProperty`.
public let kAudioUnitProperty_DeferredRendererExtraLatency: AudioUnitPropertyID = 3321
/// Apple's `kAudioUnitProperty_DeferredRendererWaitFrames` (3322): the deferred renderer's wait (no deferred renderer); units here answer `kAudioUnitErr_InvalidProperty`.
public let kAudioUnitProperty_DeferredRendererWaitFrames: AudioUnitPropertyID = 3322
/// Apple's `kAUSamplerProperty_LoadAudioFiles` (4101): builds the sampler's instrument from audio files (a `CFArray` of `CFURL`s: here a `[URL]`; MusicDevice.swift).
public let kAUSamplerProperty_LoadAudioFiles: AudioUnitPropertyID = 4101
/// Apple's `kAUSamplerProperty_LoadInstrument` (4102): loads the sampler's instrument from an `AUSamplerInstrumentData` (MusicDevice.swift).
public let kAUSamplerProperty_LoadInstrument: AudioUnitPropertyID = 4102

/// The highest render quality (Apple's `kRenderQuality_Max`, 127), for `kAudioUnitProperty_RenderQuality`.
public let kRenderQuality_Max: Int = 0x7F
/// High render quality (Apple's `kRenderQuality_High`, 96).
public let kRenderQuality_High: Int = 0x60
/// Medium render quality (Apple's `kRenderQuality_Medium`, 64).
public let kRenderQuality_Medium: Int = 0x40
/// Low render quality (Apple's `kRenderQuality_Low`, 32).
public let kRenderQuality_Low: Int = 0x20
/// The lowest render quality (Apple's `kRenderQuality_Min`, 0).
public let kRenderQuality_Min: Int = 0
/// The clump ID reserved for the system (Apple's `kAudioUnitClumpID_System`, 0).
public let kAudioUnitClumpID_System: Int = 0
/// The bins of a `kAudioUnitProperty_FrequencyResponse` answer (Apple's `kNumberOfResponseFrequencies`, 1024).
public let kNumberOfResponseFrequencies: Int = 1024
/// An instrument a music device cannot use (Apple's `kAudioUnitErr_IllegalInstrument`, -10873).
public let kAudioUnitErr_IllegalInstrument: OSStatus = -10873
/// A music device's instrument type not found (Apple's `kAudioUnitErr_InstrumentTypeNotFound`, -10872).
public let kAudioUnitErr_InstrumentTypeNotFound: OSStatus = -10872
