// Apple's player units set up through the C API, as the scheduling tests use them: a player
// graph into a GenericOutput, and a standalone file player rendering offline.
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Testing

/// An opened AUGraph of an Apple player unit (`subType`: ScheduledSoundPlayer or
/// AudioFilePlayer) connected to an output unit (`outputSubType`: GenericOutput to render it
/// with AudioUnitRender, DefaultOutput to play it). The caller initializes and disposes the graph.
struct PlayerUnitGraph {
    let graph: AUGraph
    let player: AudioUnit
    let output: AudioUnit

    init(_ subType: OSType, output outputSubType: OSType = kAudioUnitSubType_GenericOutput) throws {
        var made: AUGraph?
        #expect(NewAUGraph(&made) == noErr)
        let g = try #require(made)
        var playerDesc = AudioComponentDescription(componentType: kAudioUnitType_Generator, componentSubType: subType,
                                                   componentManufacturer: kAudioUnitManufacturer_Apple, componentFlags: 0, componentFlagsMask: 0)
        var outDesc = AudioComponentDescription(componentType: kAudioUnitType_Output, componentSubType: outputSubType,
                                                componentManufacturer: kAudioUnitManufacturer_Apple, componentFlags: 0, componentFlagsMask: 0)
        var playerNode: AUNode = 0, outNode: AUNode = 0
        #expect(AUGraphAddNode(g, &playerDesc, &playerNode) == noErr)
        #expect(AUGraphAddNode(g, &outDesc, &outNode) == noErr)
        #expect(AUGraphOpen(g) == noErr)
        var p: AudioUnit?, o: AudioUnit?
        #expect(AUGraphNodeInfo(g, playerNode, nil, &p) == noErr)
        #expect(AUGraphNodeInfo(g, outNode, nil, &o) == noErr)
        guard let p, let o else {
            DisposeAUGraph(g)
            throw PlayerUnitError.missingUnit
        }
        #expect(AUGraphConnectNodeInput(g, playerNode, 0, outNode, 0) == noErr)
        graph = g
        player = p
        output = o
    }
}

/// A player unit the C API did not give back.
enum PlayerUnitError: Error { case missingUnit }

/// A standalone AudioFilePlayer with a read-ahead of `bufferFrames`, initialized and set to
/// render offline (its renders wait for its reading thread). The caller disposes it.
func makeOfflineFilePlayer(bufferFrames: UInt32) throws -> AudioUnit {
    var desc = AudioComponentDescription(componentType: kAudioUnitType_Generator, componentSubType: kAudioUnitSubType_AudioFilePlayer,
                                         componentManufacturer: kAudioUnitManufacturer_Apple, componentFlags: 0, componentFlagsMask: 0)
    let component = try #require(AudioComponentFindNext(nil, &desc))
    var instance: AudioUnit?
    #expect(AudioComponentInstanceNew(component, &instance) == noErr)
    let unit = try #require(instance)
    var frames = bufferFrames
    #expect(AudioUnitSetProperty(unit, kAudioUnitProperty_ScheduledFileBufferSizeFrames, kAudioUnitScope_Global, 0, &frames, 4) == noErr)
    #expect(AudioUnitInitialize(unit) == noErr)
    var offline: UInt32 = 1
    #expect(AudioUnitSetProperty(unit, kAudioUnitProperty_OfflineRender, kAudioUnitScope_Global, 0, &offline, 4) == noErr)
    return unit
}
