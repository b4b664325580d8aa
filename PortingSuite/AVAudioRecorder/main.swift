// Records from the microphone the way iOS apps do with AVAudioRecorder: the session set to
// playAndRecord and activated, a settings dictionary, a delegate told when the recording ends,
// metering polled by a timer on the main run loop, the run loop kept running until the
// delegate is called. Written for iOS/macOS; only the import differs.
//
// usage: porting-avaudiorecorder OUTPUT.m4a|.caf|.wav|.aiff SECONDS [aac|pcm|alac]
//        SECONDS 0 records until the process is stopped (a signal).
#if canImport(AVFoundation)
import AVFoundation
#else
import OpenAVFAudio
#endif

final class RecorderController: NSObject, AVAudioRecorderDelegate, @unchecked Sendable {
    var recorder: AVAudioRecorder?
    var finished = false
    var succeeded = false

    func start(url: URL, seconds: TimeInterval, codec: String) throws {
        let session = AVAudioSession.sharedInstance()
        try session.setCategory(.playAndRecord, mode: .default, options: [.defaultToSpeaker])
        try session.setActive(true)
        var settings: [String: Any] = [AVSampleRateKey: 44100.0, AVNumberOfChannelsKey: 1]
        switch codec {
        case "pcm":
            settings[AVFormatIDKey] = Int(kAudioFormatLinearPCM)
            settings[AVLinearPCMBitDepthKey] = 16
            settings[AVLinearPCMIsFloatKey] = false
        case "alac":
            settings[AVFormatIDKey] = Int(kAudioFormatAppleLossless)
            settings[AVEncoderBitDepthHintKey] = 16
        default:
            settings[AVFormatIDKey] = Int(kAudioFormatMPEG4AAC)
            settings[AVEncoderAudioQualityKey] = AVAudioQuality.high.rawValue
        }
        let recorder = try AVAudioRecorder(url: url, settings: settings)
        recorder.delegate = self
        recorder.isMeteringEnabled = true
        guard recorder.prepareToRecord() else { throw NSError(domain: "porting", code: 1, userInfo: [NSLocalizedDescriptionKey: "prepareToRecord failed"]) }
        let started = seconds > 0 ? recorder.record(forDuration: seconds) : recorder.record()
        guard started else { throw NSError(domain: "porting", code: 2, userInfo: [NSLocalizedDescriptionKey: "record failed"]) }
        self.recorder = recorder
        print("recording to \(url.lastPathComponent)")
        fflush(stdout)
    }

    func audioRecorderDidFinishRecording(_ recorder: AVAudioRecorder, successfully flag: Bool) {
        succeeded = flag
        finished = true
    }

    func audioRecorderEncodeErrorDidOccur(_ recorder: AVAudioRecorder, error: Error?) {
        print("encode error: \(error.map { "\($0)" } ?? "unknown")")
    }
}

let arguments = CommandLine.arguments
guard arguments.count >= 3, let seconds = TimeInterval(arguments[2]) else {
    FileHandle.standardError.write("usage: porting-avaudiorecorder OUTPUT SECONDS [aac|pcm|alac]\n".data(using: .utf8)!)
    exit(2)
}
let controller = RecorderController()
do {
    try controller.start(url: URL(fileURLWithPath: arguments[1]), seconds: seconds, codec: arguments.count > 3 ? arguments[3] : "aac")
} catch {
    FileHandle.standardError.write("error: \(error)\n".data(using: .utf8)!)
    exit(1)
}
let meterTimer = Timer.scheduledTimer(withTimeInterval: 0.25, repeats: true) { _ in
    guard let recorder = controller.recorder, recorder.isRecording else { return }
    recorder.updateMeters()
    print(String(format: "%.2f s  average %.1f dB  peak %.1f dB", recorder.currentTime,
                 recorder.averagePower(forChannel: 0), recorder.peakPower(forChannel: 0)))
    fflush(stdout)
}
while !controller.finished {
    _ = RunLoop.main.run(mode: .default, before: Date(timeIntervalSinceNow: 0.1))
}
meterTimer.invalidate()
print(controller.succeeded ? "finished" : "failed")
exit(controller.succeeded ? 0 : 1)
