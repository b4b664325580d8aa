// AudioUnitProperties.h symbols added to list the header whole: the preset keys carry Apple's
// strings and the parameter display-type helpers mask the display bits as Apple's inline ones.
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Testing

@Suite struct AudioUnitPropertiesHeaderTests {
    @Test func presetKeysAndDisplayTypeHelpers() {
        #expect(kAUPresetVersionKey == "version" && kAUPresetNumberKey == "preset-number" && kAUPresetExternalFileRefs == "file-references")
        #expect(kAudioUnitConfigurationInfo_BusCountWritable == "BusCountWritable")
        let flags: AudioUnitParameterOptions = [.flag_IsReadable, .flag_IsWritable, .flag_DisplayLogarithmic]
        #expect(GetAudioUnitParameterDisplayType(flags) == .flag_DisplayLogarithmic)
        let cubed = SetAudioUnitParameterDisplayType(flags, .flag_DisplayCubed)
        #expect(GetAudioUnitParameterDisplayType(cubed) == .flag_DisplayCubed)
        #expect(cubed.contains(.flag_IsReadable) && cubed.contains(.flag_IsWritable) && !cubed.contains(.flag_DisplayLogarithmic))
        #expect(kAUVoiceIOErr_UnexpectedNumberOfInputChannels == -66784)
    }
}
