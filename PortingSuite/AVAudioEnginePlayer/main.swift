// Plays a file the way Apple's AVAudioEngine sample code does: an AVAudioPlayerNode attached
// to the engine, connected to the main mixer (through an EQ and a reverb with "fx"), the file
// scheduled with a completion handler for when it has played back, the engine stopped then.
// Written for macOS/iOS; only the import differs.
//
// usage: porting-avaudioengine-player FILE [plain|fx]
#if canImport(AVFoundation)
import AVFoundation
#else
import OpenAVFAudio
#endif

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    FileHandle.standardError.write("usage: porting-avaudioengine-player FILE [plain|fx]\n".data(using: .utf8)!)
    exit(2)
}
let mode = arguments.count > 2 ? arguments[2] : "plain"

do {
    let file = try AVAudioFile(forReading: URL(fileURLWithPath: arguments[1]))
    let engine = AVAudioEngine()
    let player = AVAudioPlayerNode()
    engine.attach(player)
    if mode == "fx" {
        let eq = AVAudioUnitEQ(numberOfBands: 2)
        eq.bands[0].filterType = .lowPass
        eq.bands[0].frequency = 2000
        eq.bands[0].bypass = false
        eq.bands[1].filterType = .parametric
        eq.bands[1].frequency = 440
        eq.bands[1].gain = 6
        eq.bands[1].bandwidth = 1
        eq.bands[1].bypass = false
        let reverb = AVAudioUnitReverb()
        reverb.loadFactoryPreset(.mediumHall)
        reverb.wetDryMix = 30
        engine.attach(eq)
        engine.attach(reverb)
        engine.connect(player, to: eq, format: file.processingFormat)
        engine.connect(eq, to: reverb, format: file.processingFormat)
        engine.connect(reverb, to: engine.mainMixerNode, format: file.processingFormat)
    } else {
        engine.connect(player, to: engine.mainMixerNode, format: file.processingFormat)
    }
    engine.prepare()
    try engine.start()
    let finished = DispatchSemaphore(value: 0)
    player.scheduleFile(file, at: nil, completionCallbackType: .dataPlayedBack) { _ in
        finished.signal()
    }
    player.play()
    finished.wait()
    player.stop()
    engine.stop()
    print("played \(file.length) frames of \(file.fileFormat.sampleRate) Hz audio (\(mode))")
} catch {
    FileHandle.standardError.write("error: \(error)\n".data(using: .utf8)!)
    exit(1)
}
