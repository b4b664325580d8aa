// Audio Toolbox–compatible AudioUnitParameters.h: parameter IDs of the Apple units provided here.

import OATCore
import OATDevices
import OATFiles
import OATUnits
import FoundationEssentials
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Mixer input volume (input scope) / master volume (output scope), linear 0 ... 4.
public let kMultiChannelMixerParam_Volume: AudioUnitParameterID = 0
/// Mixer input enable (input scope), 0 or 1.
public let kMultiChannelMixerParam_Enable: AudioUnitParameterID = 1
/// Mixer input pan (input scope), −1 ... 1.
public let kMultiChannelMixerParam_Pan: AudioUnitParameterID = 2
/// N-band EQ global gain (dB).
public let kAUNBandEQParam_GlobalGain: AudioUnitParameterID = 0
/// N-band EQ band bypass (+ band).
public let kAUNBandEQParam_BypassBand: AudioUnitParameterID = 1000
/// N-band EQ filter type (+ band).
public let kAUNBandEQParam_FilterType: AudioUnitParameterID = 2000
/// N-band EQ frequency in Hz (+ band).
public let kAUNBandEQParam_Frequency: AudioUnitParameterID = 3000
/// N-band EQ gain in dB (+ band).
public let kAUNBandEQParam_Gain: AudioUnitParameterID = 4000
/// N-band EQ bandwidth in octaves (+ band).
public let kAUNBandEQParam_Bandwidth: AudioUnitParameterID = 5000
/// Parametric (peaking) band.
public let kAUNBandEQFilterType_Parametric: Int = 0
/// Butterworth low pass.
public let kAUNBandEQFilterType_2ndOrderButterworthLowPass: Int = 1
/// Butterworth high pass.
public let kAUNBandEQFilterType_2ndOrderButterworthHighPass: Int = 2
/// Resonant low pass.
public let kAUNBandEQFilterType_ResonantLowPass: Int = 3
/// Resonant high pass.
public let kAUNBandEQFilterType_ResonantHighPass: Int = 4
/// Band pass.
public let kAUNBandEQFilterType_BandPass: Int = 5
/// Band stop.
public let kAUNBandEQFilterType_BandStop: Int = 6
/// Low shelf.
public let kAUNBandEQFilterType_LowShelf: Int = 7
/// High shelf.
public let kAUNBandEQFilterType_HighShelf: Int = 8
/// Resonant low shelf.
public let kAUNBandEQFilterType_ResonantLowShelf: Int = 9
/// Resonant high shelf.
public let kAUNBandEQFilterType_ResonantHighShelf: Int = 10
/// Reverb wet percentage.
public let kReverb2Param_DryWetMix: AudioUnitParameterID = 0
/// Reverb gain (dB).
public let kReverb2Param_Gain: AudioUnitParameterID = 1
/// Reverb decay at 0 Hz (s).
public let kReverb2Param_DecayTimeAt0Hz: AudioUnitParameterID = 4
/// Reverb decay at Nyquist (s).
public let kReverb2Param_DecayTimeAtNyquist: AudioUnitParameterID = 5
/// Delay wet percentage.
public let kDelayParam_WetDryMix: AudioUnitParameterID = 0
/// Delay time (s).
public let kDelayParam_DelayTime: AudioUnitParameterID = 1
/// Delay feedback (percent).
public let kDelayParam_Feedback: AudioUnitParameterID = 2
/// Delay low-pass cutoff (Hz).
public let kDelayParam_LopassCutoff: AudioUnitParameterID = 3
/// Varispeed rate.
public let kVarispeedParam_PlaybackRate: AudioUnitParameterID = 0
/// Varispeed cents.
public let kVarispeedParam_PlaybackCents: AudioUnitParameterID = 1
/// Compressor threshold (dB).
public let kDynamicsProcessorParam_Threshold: AudioUnitParameterID = 0
/// Compressor attack (s).
public let kDynamicsProcessorParam_AttackTime: AudioUnitParameterID = 4
/// Compressor release (s).
public let kDynamicsProcessorParam_ReleaseTime: AudioUnitParameterID = 5
/// Compressor makeup gain (dB).
public let kDynamicsProcessorParam_OverallGain: AudioUnitParameterID = 6
/// Limiter attack (the look-ahead here, s).
public let kLimiterParam_AttackTime: AudioUnitParameterID = 0
/// Limiter release (s).
public let kLimiterParam_DecayTime: AudioUnitParameterID = 1
/// Limiter pre-gain (dB).
public let kLimiterParam_PreGain: AudioUnitParameterID = 2

/// Time-pitch rate (0.5 ... 2 here; Apple 1/32 ... 32).
public let kNewTimePitchParam_Rate: AudioUnitParameterID = 0
/// Time-pitch pitch in cents (−2400 ... 2400).
public let kNewTimePitchParam_Pitch: AudioUnitParameterID = 1
/// Overlap (Apple's phase vocoder setting): not a parameter here.
public let kNewTimePitchParam_Overlap: AudioUnitParameterID = 4
/// Peak locking (Apple's phase vocoder setting): not a parameter here.
public let kNewTimePitchParam_EnablePeakLocking: AudioUnitParameterID = 6
/// Old time-pitch rate.
public let kTimePitchParam_Rate: AudioUnitParameterID = 0
/// Old time-pitch pitch in cents.
public let kTimePitchParam_Pitch: AudioUnitParameterID = 1
/// Old time-pitch effect blend: not a parameter here.
public let kTimePitchParam_EffectBlend: AudioUnitParameterID = 2

/// Reverb2 minimum delay time (2): not a parameter of the reverb here (`kAudioUnitErr_InvalidParameter`).
public let kReverb2Param_MinDelayTime: AudioUnitParameterID = 2
/// Reverb2 maximum delay time (3): not a parameter here.
public let kReverb2Param_MaxDelayTime: AudioUnitParameterID = 3
/// Reverb2 reflection randomisation (6): not a parameter here.
public let kReverb2Param_RandomizeReflections: AudioUnitParameterID = 6
/// Dynamics processor head room (1): not a parameter here (the compressor has an explicit
/// ratio, ID 100, and knee, ID 101).
public let kDynamicsProcessorParam_HeadRoom: AudioUnitParameterID = 1
/// Dynamics processor expansion ratio (2): not a parameter here (no expander).
public let kDynamicsProcessorParam_ExpansionRatio: AudioUnitParameterID = 2
/// Dynamics processor expansion threshold (3): not a parameter here (no expander).
public let kDynamicsProcessorParam_ExpansionThreshold: AudioUnitParameterID = 3
/// Dynamics processor gain reduction, read-only (1000): not a parameter here.
public let kDynamicsProcessorParam_CompressionAmount: AudioUnitParameterID = 1000
/// Dynamics processor input level, read-only (2000): not a parameter here.
public let kDynamicsProcessorParam_InputAmplitude: AudioUnitParameterID = 2000
/// Dynamics processor output level, read-only (3000): not a parameter here.
public let kDynamicsProcessorParam_OutputAmplitude: AudioUnitParameterID = 3000

// MARK: - The single-filter units and the distortion (AUFilterUnitNode, AUDistortionNode)

/// Low-pass cutoff frequency (Hz, 10 ... Nyquist, default 6900).
public let kLowPassParam_CutoffFrequency: AudioUnitParameterID = 0
/// Low-pass resonance (dB, −20 ... 40, default 0).
public let kLowPassParam_Resonance: AudioUnitParameterID = 1
/// High-pass cutoff frequency (Hz, 10 ... Nyquist, default 6900).
public let kHipassParam_CutoffFrequency: AudioUnitParameterID = 0
/// High-pass resonance (dB, −20 ... 40, default 0).
public let kHipassParam_Resonance: AudioUnitParameterID = 1
/// Band-pass centre frequency (Hz, 20 ... Nyquist, default 5000).
public let kBandpassParam_CenterFrequency: AudioUnitParameterID = 0
/// Band-pass bandwidth (cents, 100 ... 12000, default 600).
public let kBandpassParam_Bandwidth: AudioUnitParameterID = 1
/// High-shelf cutoff frequency (Hz, 10000 ... Nyquist, default 10000).
public let kHighShelfParam_CutOffFrequency: AudioUnitParameterID = 0
/// High-shelf gain (dB, −40 ... 40, default 0).
public let kHighShelfParam_Gain: AudioUnitParameterID = 1
/// Low-shelf cutoff frequency (Hz, 10 ... 200, default 80).
public let kAULowShelfParam_CutoffFrequency: AudioUnitParameterID = 0
/// Low-shelf gain (dB, −40 ... 40, default 0).
public let kAULowShelfParam_Gain: AudioUnitParameterID = 1
/// Parametric EQ centre frequency (Hz, 20 ... Nyquist, default 2000).
public let kParametricEQParam_CenterFreq: AudioUnitParameterID = 0
/// Parametric EQ Q (0.1 ... 20, default 1).
public let kParametricEQParam_Q: AudioUnitParameterID = 1
/// Parametric EQ gain (dB, −20 ... 20, default 0).
public let kParametricEQParam_Gain: AudioUnitParameterID = 2
/// Distortion delay (ms, 0.1 ... 500, default 0.1).
public let kDistortionParam_Delay: AudioUnitParameterID = 0
/// Distortion decay (0.1 ... 50, default 1).
public let kDistortionParam_Decay: AudioUnitParameterID = 1
/// Distortion delay mix (percent, default 50).
public let kDistortionParam_DelayMix: AudioUnitParameterID = 2
/// Distortion decimation (percent, default 50).
public let kDistortionParam_Decimation: AudioUnitParameterID = 3
/// Distortion rounding (percent, default 0).
public let kDistortionParam_Rounding: AudioUnitParameterID = 4
/// Distortion decimation mix (percent, default 50).
public let kDistortionParam_DecimationMix: AudioUnitParameterID = 5
/// Distortion linear term (0 ... 1, default 1).
public let kDistortionParam_LinearTerm: AudioUnitParameterID = 6
/// Distortion squared term (0 ... 20, default 0).
public let kDistortionParam_SquaredTerm: AudioUnitParameterID = 7
/// Distortion cubic term (0 ... 20, default 0).
public let kDistortionParam_CubicTerm: AudioUnitParameterID = 8
/// Distortion polynomial mix (percent, default 50).
public let kDistortionParam_PolynomialMix: AudioUnitParameterID = 9
/// Distortion ring-modulator frequency 1 (Hz, 0.5 ... 8000, default 100).
public let kDistortionParam_RingModFreq1: AudioUnitParameterID = 10
/// Distortion ring-modulator frequency 2 (Hz, 0.5 ... 8000, default 100).
public let kDistortionParam_RingModFreq2: AudioUnitParameterID = 11
/// Distortion ring-modulator balance (percent, default 50).
public let kDistortionParam_RingModBalance: AudioUnitParameterID = 12
/// Distortion ring-modulator mix (percent, default 0).
public let kDistortionParam_RingModMix: AudioUnitParameterID = 13
/// Distortion soft-clip gain (dB, −80 ... 20, default −6).
public let kDistortionParam_SoftClipGain: AudioUnitParameterID = 14
/// Distortion final mix (percent wet, default 50).
public let kDistortionParam_FinalMix: AudioUnitParameterID = 15
