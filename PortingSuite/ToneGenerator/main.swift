// A sine-wave generator on the default output unit, Learning Core Audio chapter 7 style: the
// render callback keeps its phase in a struct passed as the refCon, the unit is found with
// AudioComponentFindNext, the callback installed with kAudioUnitProperty_SetRenderCallback,
// and the program plays for a fixed time (CFRunLoopRunInMode) before stopping. Written for
// macOS; only the import differs.
//
// usage: porting-tone-generator [SECONDS] [HZ]
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Foundation

struct MySineWavePlayer {
    var outputUnit: AudioUnit?
    var startingFrameCount: Double = 0
    var cycleLength: Double = 0
}

func CheckError(_ error: OSStatus, _ operation: String) {
    if error == noErr { return }
    let code = CFSwapInt32HostToBig(UInt32(bitPattern: error))
    let chars = withUnsafeBytes(of: code) { Array($0) }
    if chars.allSatisfy({ isprint(Int32($0)) != 0 }) {
        fputs("Error: \(operation) ('\(String(decoding: chars, as: UTF8.self))')\n", stderr)
    } else {
        fputs("Error: \(operation) (\(error))\n", stderr)
    }
    exit(1)
}

func SineWaveRenderProc(_ inRefCon: UnsafeMutableRawPointer, _ ioActionFlags: UnsafeMutablePointer<AudioUnitRenderActionFlags>,
                        _ inTimeStamp: UnsafePointer<AudioTimeStamp>, _ inBusNumber: UInt32, _ inNumberFrames: UInt32,
                        _ ioData: UnsafeMutablePointer<AudioBufferList>?) -> OSStatus {
    let player = inRefCon.assumingMemoryBound(to: MySineWavePlayer.self)
    var j = player.pointee.startingFrameCount
    let cycleLength = player.pointee.cycleLength
    let buffers = UnsafeMutableAudioBufferListPointer(ioData!)
    for frame in 0..<Int(inNumberFrames) {
        let value = Float32(sin(2 * Double.pi * (j / cycleLength))) * 0.5
        for buffer in buffers {
            buffer.mData!.assumingMemoryBound(to: Float32.self)[frame] = value
        }
        j += 1.0
        if j > cycleLength { j -= cycleLength }
    }
    player.pointee.startingFrameCount = j
    return noErr
}

func CreateAndConnectOutputUnit(_ player: UnsafeMutablePointer<MySineWavePlayer>) {
    var outputcd = AudioComponentDescription()
    outputcd.componentType = kAudioUnitType_Output
    outputcd.componentSubType = kAudioUnitSubType_DefaultOutput
    outputcd.componentManufacturer = kAudioUnitManufacturer_Apple
    guard let comp = AudioComponentFindNext(nil, &outputcd) else {
        fputs("can't get output unit\n", stderr)
        exit(-1)
    }
    CheckError(AudioComponentInstanceNew(comp, &player.pointee.outputUnit), "Couldn't open component for outputUnit")

    var input = AURenderCallbackStruct()
    input.inputProc = SineWaveRenderProc
    input.inputProcRefCon = UnsafeMutableRawPointer(player)
    CheckError(AudioUnitSetProperty(player.pointee.outputUnit!, kAudioUnitProperty_SetRenderCallback, kAudioUnitScope_Input, 0,
                                    &input, UInt32(MemoryLayout<AURenderCallbackStruct>.size)),
               "AudioUnitSetProperty failed")
    CheckError(AudioUnitInitialize(player.pointee.outputUnit!), "Couldn't initialize output unit")
}

let seconds = CommandLine.arguments.count > 1 ? Double(CommandLine.arguments[1]) ?? 2 : 2
let hz = CommandLine.arguments.count > 2 ? Double(CommandLine.arguments[2]) ?? 440 : 440
let player = UnsafeMutablePointer<MySineWavePlayer>.allocate(capacity: 1)
player.initialize(to: MySineWavePlayer())

CreateAndConnectOutputUnit(player)
// The unit's sample rate: what the callback's frames count in.
var format = AudioStreamBasicDescription()
var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
CheckError(AudioUnitGetProperty(player.pointee.outputUnit!, kAudioUnitProperty_StreamFormat, kAudioUnitScope_Input, 0, &format, &size),
           "Couldn't get the stream format")
player.pointee.cycleLength = format.mSampleRate / hz
CheckError(AudioOutputUnitStart(player.pointee.outputUnit!), "Couldn't start output unit")
fputs("playing \(hz) Hz for \(seconds) s at \(format.mSampleRate) Hz\n", stderr)
CFRunLoopRunInMode(CFRunLoopMode.defaultMode, seconds, false)

AudioOutputUnitStop(player.pointee.outputUnit!)
AudioUnitUninitialize(player.pointee.outputUnit!)
AudioComponentInstanceDispose(player.pointee.outputUnit!)
exit(0)
