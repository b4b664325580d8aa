// MPEG4ObjectID (CoreAudioTypes.h): the MPEG-4 audio object types, as Apple's Swift imports them
// (an Int-backed enumeration; the C names kMPEG4Object_* are its cases).

/// The kind of MPEG-4 audio data (Apple's `MPEG4ObjectID`): the audio object type of an
/// AudioSpecificConfig, used in the `mFormatFlags` of an MPEG-4 stream description.
public enum MPEG4ObjectID: Int, @unchecked Sendable {
    /// AAC Main (`kMPEG4Object_AAC_Main`, 1).
    case aac_Main = 1
    /// AAC low complexity (`kMPEG4Object_AAC_LC`, 2).
    case AAC_LC = 2
    /// AAC scalable sample rate (`kMPEG4Object_AAC_SSR`, 3).
    case AAC_SSR = 3
    /// AAC long-term prediction (`kMPEG4Object_AAC_LTP`, 4).
    case AAC_LTP = 4
    /// Spectral band replication, HE-AAC (`kMPEG4Object_AAC_SBR`, 5).
    case AAC_SBR = 5
    /// AAC scalable (`kMPEG4Object_AAC_Scalable`, 6).
    case aac_Scalable = 6
    /// TwinVQ (`kMPEG4Object_TwinVQ`, 7).
    case twinVQ = 7
    /// CELP speech (`kMPEG4Object_CELP`, 8).
    case CELP = 8
    /// HVXC speech (`kMPEG4Object_HVXC`, 9).
    case HVXC = 9
}
