// Records what an AVAudioEngine plays the way Apple's sample code does: a tap installed on the
// main mixer writes each buffer to an AVAudioFile while a player node plays a file to the
// output; the file is played back (dataPlayedBack), then the tap removed and the engine stopped.
// Written for macOS/iOS; only the import differs.
//
// usage: porting-avaudioengine-tap-recorder INPUT OUTPUT.caf|.wav
#if canImport(AVFoundation)
import AVFoundation
#else
import OpenAVFAudio
#endif

let arguments = CommandLine.arguments
guard arguments.count >= 3 else {
    FileHandle.standardError.write("usage: porting-avaudioengine-tap-recorder INPUT OUTPUT\n".data(using: .utf8)!)
    exit(2)
}

do {
    let file = try AVAudioFile(forReading: URL(fileURLWithPath: arguments[1]))
    let engine = AVAudioEngine()
    let player = AVAudioPlayerNode()
    engine.attach(player)
    engine.connect(player, to: engine.mainMixerNode, format: file.processingFormat)
    let mixer = engine.mainMixerNode
    let format = mixer.outputFormat(forBus: 0)
    let output = try AVAudioFile(forWriting: URL(fileURLWithPath: arguments[2]), settings: format.settings)
    var written: AVAudioFramePosition = 0
    var failure: Error?
    mixer.installTap(onBus: 0, bufferSize: 4096, format: format) { buffer, _ in
        do {
            try output.write(from: buffer)
            written += AVAudioFramePosition(buffer.frameLength)
        } catch {
            failure = error
        }
    }
    engine.prepare()
    try engine.start()
    let finished = DispatchSemaphore(value: 0)
    player.scheduleFile(file, at: nil, completionCallbackType: .dataPlayedBack) { _ in
        finished.signal()
    }
    player.play()
    finished.wait()
    mixer.removeTap(onBus: 0)
    player.stop()
    engine.stop()
    if let failure { throw failure }
    print("recorded \(written) frames of the main mixer while playing \(file.length) frames")
} catch {
    FileHandle.standardError.write("error: \(error)\n".data(using: .utf8)!)
    exit(1)
}
