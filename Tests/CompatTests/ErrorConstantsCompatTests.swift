#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Testing

/// Every error code macOS programs switch over, with Apple's values (AUComponent.h, AudioComponent.h,
/// AudioFormat.h). These did not exist, or had a wrong value, before.
@Suite struct ErrorConstantsCompatTests {
    @Test("kAudioUnitErr_* and kAudioComponentErr_* have Apple's values")
    func audioUnitErrors() {
        let expected: [(OSStatus, OSStatus)] = [
            (kAudioUnitErr_FileNotSpecified, -10869), (kAudioUnitErr_PropertyNotInUse, -10850),
            (kAudioUnitErr_InvalidOfflineRender, -10848), (kAudioUnitErr_Unauthorized, -10847),
            (kAudioUnitErr_MIDIOutputBufferFull, -66753), (kAudioUnitErr_RenderTimeout, -66745),
            (kAudioUnitErr_ExtensionNotFound, -66744), (kAudioUnitErr_InvalidParameterValue, -66743),
            (kAudioUnitErr_InvalidFilePath, -66742), (kAudioUnitErr_MissingKey, -66741),
            (kAudioUnitErr_ComponentManagerNotSupported, -66740), (kAudioUnitErr_MultipleVoiceProcessors, -66635),
            (kAudioComponentErr_DuplicateDescription, -66752), (kAudioComponentErr_UnsupportedType, -66751),
            (kAudioComponentErr_TooManyInstances, -66750), (kAudioComponentErr_InstanceInvalidated, -66749),
            (kAudioComponentErr_NotPermitted, -66748), (kAudioComponentErr_InitializationTimedOut, -66747),
            (kAudioComponentErr_InvalidFormat, -66746), (kAudioComponentErr_InstanceTimedOut, -66754),
        ]
        for (constant, value) in expected { #expect(constant == value) }
        #expect(Set(expected.map(\.0)).count == expected.count, "two constants share a value")
    }

    @Test("kAudioFormat*Error have Apple's four-character values")
    func audioFormatErrors() {
        #expect(kAudioFormatUnspecifiedError == 0x7768_6174)           // 'what'
        #expect(kAudioFormatUnsupportedPropertyError == 0x7072_6F70)   // 'prop'
        #expect(kAudioFormatBadPropertySizeError == 0x2173_697A)       // '!siz'
        #expect(kAudioFormatBadSpecifierSizeError == 0x2173_7063)      // '!spc'
        #expect(kAudioFormatUnsupportedDataFormatError == 0x666D_743F) // 'fmt?'
        #expect(kAudioFormatUnknownFormatError == 0x2166_6D74)         // '!fmt'
    }
}
