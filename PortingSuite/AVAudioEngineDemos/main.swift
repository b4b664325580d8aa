// Three small programs in the idioms of Apple's AVAudioEngine sample code, written for
// macOS/iOS; only the import differs.
//
//   pitch FILE RATE CENTS     player -> AVAudioUnitTimePitch -> main mixer, to the device
//   mix FILE1 FILE2 FILE3     three players at different volumes and pans into the main mixer
//   offline FILE OUT.caf      offline manual rendering through an EQ and a reverb to a file
#if canImport(AVFoundation)
import AVFoundation
#else
import OpenAVFAudio
#endif

func fail(_ message: String) -> Never {
    FileHandle.standardError.write((message + "\n").data(using: .utf8)!)
    exit(2)
}

let usage = "usage: porting-avaudioengine-demos pitch FILE RATE CENTS | mix FILE1 FILE2 FILE3 | offline FILE OUT.caf"
let arguments = CommandLine.arguments
guard arguments.count >= 2 else { fail(usage) }

/// Plays `file` on `player` and waits until the device has played it all.
func playToEnd(_ player: AVAudioPlayerNode, _ file: AVAudioFile, _ group: DispatchGroup) {
    group.enter()
    player.scheduleFile(file, at: nil, completionCallbackType: .dataPlayedBack) { _ in
        group.leave()
    }
}

func pitch(_ path: String, rate: Float, cents: Float) throws {
    let file = try AVAudioFile(forReading: URL(fileURLWithPath: path))
    let engine = AVAudioEngine()
    let player = AVAudioPlayerNode()
    let timePitch = AVAudioUnitTimePitch()
    timePitch.rate = rate
    timePitch.pitch = cents
    engine.attach(player)
    engine.attach(timePitch)
    engine.connect(player, to: timePitch, format: file.processingFormat)
    engine.connect(timePitch, to: engine.mainMixerNode, format: file.processingFormat)
    engine.prepare()
    try engine.start()
    let group = DispatchGroup()
    playToEnd(player, file, group)
    player.play()
    group.wait()
    player.stop()
    engine.stop()
    print("pitch: played \(file.length) frames at rate \(rate), \(cents) cents")
}

func mix(_ paths: [String]) throws {
    let engine = AVAudioEngine()
    let settings: [(volume: Float, pan: Float)] = [(1.0, -1.0), (0.5, 0.0), (0.25, 0.5)]
    let group = DispatchGroup()
    var players: [AVAudioPlayerNode] = []
    var files: [AVAudioFile] = []
    for (index, path) in paths.enumerated() {
        let file = try AVAudioFile(forReading: URL(fileURLWithPath: path))
        let player = AVAudioPlayerNode()
        engine.attach(player)
        engine.connect(player, to: engine.mainMixerNode, format: file.processingFormat)
        player.volume = settings[index].volume
        player.pan = settings[index].pan
        players.append(player)
        files.append(file)
    }
    engine.prepare()
    try engine.start()
    for (player, file) in zip(players, files) { playToEnd(player, file, group) }
    for player in players { player.play() }
    group.wait()
    for player in players { player.stop() }
    engine.stop()
    for (index, file) in files.enumerated() {
        print("mix: \(file.url.lastPathComponent) at volume \(settings[index].volume), pan \(settings[index].pan)")
    }
}

func offline(_ path: String, to outputPath: String) throws {
    let file = try AVAudioFile(forReading: URL(fileURLWithPath: path))
    let format = file.processingFormat
    let engine = AVAudioEngine()
    let player = AVAudioPlayerNode()
    let eq = AVAudioUnitEQ(numberOfBands: 1)
    eq.bands[0].filterType = .lowPass
    eq.bands[0].frequency = 1000
    eq.bands[0].bypass = false
    let reverb = AVAudioUnitReverb()
    reverb.loadFactoryPreset(.largeHall)
    reverb.wetDryMix = 50
    engine.attach(player)
    engine.attach(eq)
    engine.attach(reverb)
    engine.connect(player, to: eq, format: format)
    engine.connect(eq, to: reverb, format: format)
    engine.connect(reverb, to: engine.mainMixerNode, format: format)

    let maxFrames: AVAudioFrameCount = 4096
    try engine.enableManualRenderingMode(.offline, format: format, maximumFrameCount: maxFrames)
    try engine.start()
    player.scheduleFile(file, at: nil)
    player.play()

    let buffer = AVAudioPCMBuffer(pcmFormat: engine.manualRenderingFormat,
                                  frameCapacity: engine.manualRenderingMaximumFrameCount)!
    let output = try AVAudioFile(forWriting: URL(fileURLWithPath: outputPath), settings: file.fileFormat.settings)
    while engine.manualRenderingSampleTime < file.length {
        let remaining = file.length - engine.manualRenderingSampleTime
        let frames = min(AVAudioFrameCount(remaining), buffer.frameCapacity)
        let status = try engine.renderOffline(frames, to: buffer)
        switch status {
        case .success:
            try output.write(from: buffer)
        case .insufficientDataFromInputNode, .cannotDoInCurrentContext:
            continue
        case .error:
            fail("offline: the render failed")
        @unknown default:
            fail("offline: unknown render status")
        }
    }
    player.stop()
    engine.stop()
    print("offline: rendered \(engine.manualRenderingSampleTime) frames of \(file.length)")
}

do {
    switch arguments[1] {
    case "pitch" where arguments.count == 5:
        guard let rate = Float(arguments[3]), let cents = Float(arguments[4]) else { fail(usage) }
        try pitch(arguments[2], rate: rate, cents: cents)
    case "mix" where arguments.count == 5:
        try mix(Array(arguments[2...4]))
    case "offline" where arguments.count == 4:
        try offline(arguments[2], to: arguments[3])
    default:
        fail(usage)
    }
} catch {
    FileHandle.standardError.write("error: \(error)\n".data(using: .utf8)!)
    exit(1)
}
