// A program that lists the default devices through the HAL, written as on macOS (only the import
// differs), against a private PulseAudio daemon (sink `oat_test`, its monitor the source).
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import OATTestSupport
#if canImport(Glibc)
import Glibc
#endif
import Testing

private func defaultDevice(_ selector: AudioObjectPropertySelector) -> AudioDeviceID? {
    var address = AudioObjectPropertyAddress(mSelector: selector, mScope: kAudioObjectPropertyScopeGlobal,
                                             mElement: kAudioObjectPropertyElementMain)
    var deviceID = AudioDeviceID(0)
    var size = UInt32(MemoryLayout<AudioDeviceID>.size)
    let status = AudioObjectGetPropertyData(AudioObjectID(kAudioObjectSystemObject), &address, 0, nil, &size, &deviceID)
    return status == noErr && deviceID != kAudioObjectUnknown ? deviceID : nil
}

private func stringProperty(_ device: AudioDeviceID, _ selector: AudioObjectPropertySelector) -> String? {
    var address = AudioObjectPropertyAddress(mSelector: selector, mScope: kAudioObjectPropertyScopeGlobal,
                                             mElement: kAudioObjectPropertyElementMain)
    var value: CFString? = nil
    var size = UInt32(MemoryLayout<CFString?>.size)
    let status = withUnsafeMutablePointer(to: &value) { AudioObjectGetPropertyData(device, &address, 0, nil, &size, $0) }
    return status == noErr ? value.map { String(describing: $0) } : nil
}

@Suite("PlaybackHALCompatTests", .serialized, .requires(PulseTestDaemon.unavailableReason))
struct PlaybackHALCompatTests {
    @Test("Default output and input, the device list, rate, format, streams and buffer size through the HAL")
    func defaultDevicesThroughTheHAL() throws {
        let daemon = try PulseTestDaemon(sampleRate: 44100, channels: 2)
        setenv("PULSE_SERVER", daemon.server, 1)
        defer { unsetenv("PULSE_SERVER"); daemon.stop() }

        var address = AudioObjectPropertyAddress(mSelector: kAudioHardwarePropertyDevices, mScope: kAudioObjectPropertyScopeGlobal,
                                                 mElement: kAudioObjectPropertyElementMain)
        var size: UInt32 = 0
        #expect(AudioObjectGetPropertyDataSize(AudioObjectID(kAudioObjectSystemObject), &address, 0, nil, &size) == noErr)
        let count = Int(size) / MemoryLayout<AudioDeviceID>.size
        #expect(count >= 2, "the sink and its monitor")
        var devices = [AudioDeviceID](repeating: 0, count: count)
        #expect(AudioObjectGetPropertyData(AudioObjectID(kAudioObjectSystemObject), &address, 0, nil, &size, &devices) == noErr)

        let output = try #require(defaultDevice(kAudioHardwarePropertyDefaultOutputDevice))
        let input = try #require(defaultDevice(kAudioHardwarePropertyDefaultInputDevice))
        #expect(devices.contains(output) && devices.contains(input) && output != input)
        #expect(stringProperty(output, kAudioDevicePropertyDeviceUID) == daemon.sinkName)
        #expect(stringProperty(input, kAudioDevicePropertyDeviceUID) == daemon.monitorSource)
        #expect(!(stringProperty(output, kAudioDevicePropertyDeviceNameCFString) ?? "").isEmpty)

        var rate: Float64 = 0
        var rateSize = UInt32(MemoryLayout<Float64>.size)
        address.mSelector = kAudioDevicePropertyNominalSampleRate
        #expect(AudioObjectHasProperty(output, &address))
        #expect(AudioObjectGetPropertyData(output, &address, 0, nil, &rateSize, &rate) == noErr)
        #expect(rate == 44100)

        var format = AudioStreamBasicDescription()
        var formatSize = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
        address = AudioObjectPropertyAddress(mSelector: kAudioDevicePropertyStreamFormat, mScope: kAudioObjectPropertyScopeOutput,
                                             mElement: kAudioObjectPropertyElementMain)
        #expect(AudioObjectGetPropertyData(output, &address, 0, nil, &formatSize, &format) == noErr)
        #expect(format.mSampleRate == 44100 && format.mChannelsPerFrame == 2 && format.mFormatID == kAudioFormatLinearPCM)

        address.mSelector = kAudioDevicePropertyStreams
        #expect(AudioObjectGetPropertyDataSize(output, &address, 0, nil, &size) == noErr && size == 4)
        address.mScope = kAudioObjectPropertyScopeInput
        #expect(AudioObjectGetPropertyDataSize(output, &address, 0, nil, &size) == noErr && size == 0, "a sink has no input stream")

        address = AudioObjectPropertyAddress(mSelector: kAudioDevicePropertyBufferFrameSize, mScope: kAudioObjectPropertyScopeGlobal,
                                             mElement: kAudioObjectPropertyElementMain)
        var frames: UInt32 = 256
        #expect(AudioObjectSetPropertyData(output, &address, 0, nil, 4, &frames) == noErr)
        frames = 0
        var framesSize: UInt32 = 4
        #expect(AudioObjectGetPropertyData(output, &address, 0, nil, &framesSize, &frames) == noErr && frames == 256)

        address.mSelector = fourCC("zzzz")
        #expect(!AudioObjectHasProperty(output, &address))
        #expect(AudioObjectGetPropertyDataSize(output, &address, 0, nil, &size) == kAudioHardwareUnknownPropertyError)
        address.mSelector = kAudioDevicePropertyNominalSampleRate
        #expect(AudioObjectGetPropertyDataSize(AudioObjectID(9999), &address, 0, nil, &size) == kAudioHardwareBadObjectError)

        address = AudioObjectPropertyAddress(mSelector: kAudioHardwarePropertyDefaultOutputDevice, mScope: kAudioObjectPropertyScopeGlobal,
                                             mElement: kAudioObjectPropertyElementMain)
        #expect(AudioObjectAddPropertyListener(AudioObjectID(kAudioObjectSystemObject), &address, deviceListener, nil) == noErr)
        #expect(AudioObjectRemovePropertyListener(AudioObjectID(kAudioObjectSystemObject), &address, deviceListener, nil) == noErr)
    }
}

private func deviceListener(_ object: AudioObjectID, _ count: UInt32, _ addresses: UnsafePointer<AudioObjectPropertyAddress>,
                            _ clientData: UnsafeMutableRawPointer?) -> OSStatus { noErr }

/// A four-character code.
private func fourCC(_ s: String) -> UInt32 { s.utf8.reduce(0) { $0 << 8 | UInt32($1) } }
