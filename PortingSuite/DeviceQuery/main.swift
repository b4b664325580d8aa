// Lists the audio devices and the default input and output the way macOS command-line tools
// ask the HAL: AudioObjectGetPropertyDataSize/GetPropertyData on the system object, then each
// device's name (a CFString), nominal sample rate, buffer frame size and stream channels.
// Written for macOS; only the import differs.
//
// usage: porting-device-query   (prints "default-output NAME RATE" and "default-input ..." lines)
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Foundation

func CheckError(_ error: OSStatus, _ operation: String) {
    if error == noErr { return }
    let big = CFSwapInt32HostToBig(UInt32(bitPattern: error))
    let bytes = withUnsafeBytes(of: big) { Array($0) }
    if bytes.allSatisfy({ isprint(Int32($0)) != 0 }) {
        fputs("Error: \(operation) ('\(String(decoding: bytes, as: UTF8.self))')\n", stderr)
    } else {
        fputs("Error: \(operation) (\(error))\n", stderr)
    }
    exit(1)
}

func deviceName(_ id: AudioDeviceID) -> String {
    var address = AudioObjectPropertyAddress(mSelector: kAudioDevicePropertyDeviceNameCFString,
                                             mScope: kAudioObjectPropertyScopeGlobal,
                                             mElement: kAudioObjectPropertyElementMain)
    var name: CFString? = nil
    var size = UInt32(MemoryLayout<CFString?>.size)
    CheckError(withUnsafeMutablePointer(to: &name) { AudioObjectGetPropertyData(id, &address, 0, nil, &size, $0) }, "device name")
    return (name ?? "" as CFString) as String
}

func nominalRate(_ id: AudioDeviceID) -> Float64 {
    var address = AudioObjectPropertyAddress(mSelector: kAudioDevicePropertyNominalSampleRate,
                                             mScope: kAudioObjectPropertyScopeGlobal,
                                             mElement: kAudioObjectPropertyElementMain)
    var rate: Float64 = 0
    var size = UInt32(MemoryLayout<Float64>.size)
    CheckError(AudioObjectGetPropertyData(id, &address, 0, nil, &size, &rate), "nominal sample rate")
    return rate
}

func defaultDevice(_ selector: AudioObjectPropertySelector) -> AudioDeviceID {
    var address = AudioObjectPropertyAddress(mSelector: selector, mScope: kAudioObjectPropertyScopeGlobal,
                                             mElement: kAudioObjectPropertyElementMain)
    var id = AudioDeviceID(0)
    var size = UInt32(MemoryLayout<AudioDeviceID>.size)
    CheckError(AudioObjectGetPropertyData(AudioObjectID(kAudioObjectSystemObject), &address, 0, nil, &size, &id), "default device")
    return id
}

var address = AudioObjectPropertyAddress(mSelector: kAudioHardwarePropertyDevices, mScope: kAudioObjectPropertyScopeGlobal,
                                         mElement: kAudioObjectPropertyElementMain)
var dataSize: UInt32 = 0
CheckError(AudioObjectGetPropertyDataSize(AudioObjectID(kAudioObjectSystemObject), &address, 0, nil, &dataSize), "device list size")
let count = Int(dataSize) / MemoryLayout<AudioDeviceID>.size
var devices = [AudioDeviceID](repeating: 0, count: count)
CheckError(AudioObjectGetPropertyData(AudioObjectID(kAudioObjectSystemObject), &address, 0, nil, &dataSize, &devices), "device list")
for id in devices {
    print("device \(id) \(deviceName(id)) \(nominalRate(id))")
}
let output = defaultDevice(kAudioHardwarePropertyDefaultOutputDevice)
print("default-output \(deviceName(output)) \(nominalRate(output))")
let input = defaultDevice(kAudioHardwarePropertyDefaultInputDevice)
print("default-input \(deviceName(input)) \(nominalRate(input))")
var bufferAddress = AudioObjectPropertyAddress(mSelector: kAudioDevicePropertyBufferFrameSize, mScope: kAudioObjectPropertyScopeGlobal,
                                               mElement: kAudioObjectPropertyElementMain)
var frames: UInt32 = 0
var size = UInt32(MemoryLayout<UInt32>.size)
CheckError(AudioObjectGetPropertyData(output, &bufferAddress, 0, nil, &size, &frames), "buffer frame size")
print("buffer-frames \(frames)")
exit(0)
