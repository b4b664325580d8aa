// A Standard MIDI File played with MusicPlayer through an AUGraph: AUSampler (a SoundFont
// preset loaded with kAUSamplerProperty_LoadInstrument) -> default output, in the shape of the
// MIDI chapter programs macOS books teach: CheckError with four-character codes, the sequence
// loaded with MusicSequenceFileLoad, the graph set with MusicSequenceSetAUGraph, the player
// polled with MusicPlayerGetTime until the longest track's length has played.
//
//   porting-music-player FILE.mid BANK.sf2 [PRESET]
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Foundation

func CheckError(_ error: OSStatus, _ operation: String) {
    guard error != noErr else { return }
    var code = CFSwapInt32HostToBig(UInt32(bitPattern: error))
    let text = withUnsafeBytes(of: &code) { bytes -> String in
        if bytes.allSatisfy({ isprint(Int32($0)) != 0 }) { return "'" + String(decoding: bytes, as: UTF8.self) + "'" }
        return String(error)
    }
    FileHandle.standardError.write("Error: \(operation) (\(text))\n".data(using: .utf8)!)
    exit(1)
}

let arguments = CommandLine.arguments
guard arguments.count >= 3 else {
    FileHandle.standardError.write("usage: porting-music-player FILE.mid BANK.sf2 [PRESET]\n".data(using: .utf8)!)
    exit(2)
}
let preset = arguments.count > 3 ? UInt8(arguments[3]) ?? 0 : 0

// The graph: sampler -> default output.
var graph: AUGraph?
CheckError(NewAUGraph(&graph), "NewAUGraph")
var samplerDescription = AudioComponentDescription(componentType: kAudioUnitType_MusicDevice, componentSubType: kAudioUnitSubType_Sampler,
                                                   componentManufacturer: kAudioUnitManufacturer_Apple, componentFlags: 0, componentFlagsMask: 0)
var outputDescription = AudioComponentDescription(componentType: kAudioUnitType_Output, componentSubType: kAudioUnitSubType_DefaultOutput,
                                                  componentManufacturer: kAudioUnitManufacturer_Apple, componentFlags: 0, componentFlagsMask: 0)
var samplerNode = AUNode()
var outputNode = AUNode()
CheckError(AUGraphAddNode(graph!, &samplerDescription, &samplerNode), "AUGraphAddNode sampler")
CheckError(AUGraphAddNode(graph!, &outputDescription, &outputNode), "AUGraphAddNode output")
CheckError(AUGraphOpen(graph!), "AUGraphOpen")
CheckError(AUGraphConnectNodeInput(graph!, samplerNode, 0, outputNode, 0), "AUGraphConnectNodeInput")
var samplerUnit: AudioUnit?
CheckError(AUGraphNodeInfo(graph!, samplerNode, nil, &samplerUnit), "AUGraphNodeInfo")
CheckError(AUGraphInitialize(graph!), "AUGraphInitialize")

// The preset from the bank.
let bankURL = URL(fileURLWithPath: arguments[2])
#if canImport(AudioToolbox)
var instrument = AUSamplerInstrumentData(fileURL: Unmanaged.passUnretained(bankURL as CFURL), instrumentType: UInt8(kInstrumentType_SF2Preset),
                                         bankMSB: UInt8(kAUSampler_DefaultMelodicBankMSB), bankLSB: UInt8(kAUSampler_DefaultBankLSB), presetID: preset)
#else
// Different here: the URL itself (CFURL is Foundation's URL on Linux, not a class to hold unmanaged).
var instrument = AUSamplerInstrumentData(fileURL: bankURL as CFURL, instrumentType: UInt8(kInstrumentType_SF2Preset),
                                         bankMSB: UInt8(kAUSampler_DefaultMelodicBankMSB), bankLSB: UInt8(kAUSampler_DefaultBankLSB), presetID: preset)
#endif
withUnsafePointer(to: &instrument) { data in
    CheckError(AudioUnitSetProperty(samplerUnit!, AudioUnitPropertyID(kAUSamplerProperty_LoadInstrument), kAudioUnitScope_Global, 0,
                                    data, UInt32(MemoryLayout<AUSamplerInstrumentData>.size)), "kAUSamplerProperty_LoadInstrument")
}

// The sequence, played on the graph.
var sequence: MusicSequence?
CheckError(NewMusicSequence(&sequence), "NewMusicSequence")
CheckError(MusicSequenceFileLoad(sequence!, URL(fileURLWithPath: arguments[1]) as CFURL, .midiType, .smf_ChannelsToTracks), "MusicSequenceFileLoad")
CheckError(MusicSequenceSetAUGraph(sequence!, graph!), "MusicSequenceSetAUGraph")
var trackCount: UInt32 = 0
CheckError(MusicSequenceGetTrackCount(sequence!, &trackCount), "MusicSequenceGetTrackCount")
var sequenceLength: MusicTimeStamp = 0
for i in 0..<trackCount {
    var track: MusicTrack?
    CheckError(MusicSequenceGetIndTrack(sequence!, i, &track), "MusicSequenceGetIndTrack")
    var length: MusicTimeStamp = 0
    var size = UInt32(MemoryLayout<MusicTimeStamp>.size)
    CheckError(MusicTrackGetProperty(track!, kSequenceTrackProperty_TrackLength, &length, &size), "kSequenceTrackProperty_TrackLength")
    sequenceLength = max(sequenceLength, length)
}

var player: MusicPlayer?
CheckError(NewMusicPlayer(&player), "NewMusicPlayer")
CheckError(MusicPlayerSetSequence(player!, sequence), "MusicPlayerSetSequence")
CheckError(MusicPlayerPreroll(player!), "MusicPlayerPreroll")
CheckError(MusicPlayerStart(player!), "MusicPlayerStart")
var seconds: Float64 = 0
CheckError(MusicSequenceGetSecondsForBeats(sequence!, sequenceLength, &seconds), "MusicSequenceGetSecondsForBeats")
print("porting-music-player: \(trackCount) tracks, \(sequenceLength) beats, \(String(format: "%.3f", seconds)) s")

// Poll the player until the end, plus a little for the last release.
while true {
    var now: MusicTimeStamp = 0
    CheckError(MusicPlayerGetTime(player!, &now), "MusicPlayerGetTime")
    if now >= sequenceLength + 0.5 { break }
    usleep(20_000)
}
CheckError(MusicPlayerStop(player!), "MusicPlayerStop")
CheckError(AUGraphStop(graph!), "AUGraphStop")
CheckError(DisposeMusicPlayer(player!), "DisposeMusicPlayer")
CheckError(DisposeMusicSequence(sequence!), "DisposeMusicSequence")
CheckError(DisposeAUGraph(graph!), "DisposeAUGraph")
print("porting-music-player: done")
