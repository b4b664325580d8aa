import Foundation
import OpenAVFAudio
import Testing

/// The session members AudioKit's core calls: input data sources and the haptics switch.
struct AVAudioSessionDataSourceTests {
    /// No port lists data sources here: nil lists, nil chosen, nil accepted, anything else an
    /// error naming it.
    @Test func inputDataSources() throws {
        let session = AVAudioSession.sharedInstance()
        #expect(session.inputDataSources == nil && session.inputDataSource == nil)
        try session.setInputDataSource(nil)
        let foreign = AVAudioSessionDataSourceDescription()
        let error = #expect(throws: NSError.self) { try session.setInputDataSource(foreign) }
        let text = error.map { "\($0.localizedDescription) \($0)" } ?? ""
        #expect(text.contains("setInputDataSource"), "\(text)")
    }

    /// The haptics and system sounds switch keeps what was set (default false).
    @Test func allowHapticsAndSystemSoundsDuringRecording() throws {
        let session = AVAudioSession.sharedInstance()
        let before = session.allowHapticsAndSystemSoundsDuringRecording
        defer { try? session.setAllowHapticsAndSystemSoundsDuringRecording(before) }
        try session.setAllowHapticsAndSystemSoundsDuringRecording(true)
        #expect(session.allowHapticsAndSystemSoundsDuringRecording)
        try session.setAllowHapticsAndSystemSoundsDuringRecording(false)
        #expect(!session.allowHapticsAndSystemSoundsDuringRecording)
    }
}
