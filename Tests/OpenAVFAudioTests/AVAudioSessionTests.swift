import OATTestSupport
import Foundation
import OpenAVFAudio
import Testing

/// iOS code configures its session unguarded; these lines are written as iOS code writes them
/// (only the import differs) and must compile and behave.
@Suite struct AVAudioSessionTests {
    /// An iOS-style setup, as in Apple's "Configuring an audio session" idioms.
    func configureForVoIP() throws -> AVAudioSession {
        let session = AVAudioSession.sharedInstance()
        try session.setCategory(.playAndRecord, mode: .voiceChat, options: [.defaultToSpeaker, .allowBluetooth, .allowBluetoothA2DP])
        try session.setPreferredSampleRate(48_000)
        try session.setPreferredIOBufferDuration(0.02)
        return session
    }

    @Test func anIOSSessionSetupCompilesAndReadsBack() throws {
        // The device tests use 0.02 s too; the previous value is put back.
        let previous = AVAudioSession.sharedInstance().preferredIOBufferDuration
        defer { try? AVAudioSession.sharedInstance().setPreferredIOBufferDuration(previous) }
        let session = try configureForVoIP()
        #expect(session.category == .playAndRecord)
        #expect(session.mode == .voiceChat)
        #expect(session.categoryOptions.contains(.defaultToSpeaker))
        #expect(session.sampleRate == 48_000)
        #expect(abs(session.ioBufferDuration - 0.02) < 1e-9)
        #expect(session.outputLatency > 0 && session.inputLatency > 0)
        // The older spellings.
        try session.setCategory(.playback)
        #expect(session.category == .playback)
        try session.setCategory(.ambient, options: .mixWithOthers)
        #expect(session.categoryOptions == .mixWithOthers)
        try session.setMode(.measurement)
        #expect(session.mode == .measurement)
        // defaultToSpeaker belongs to playAndRecord, as iOS insists.
        #expect(throws: NSError.self) { try session.setCategory(.playback, options: .defaultToSpeaker) }
        #expect(AVAudioSession.Category.playback.rawValue == "AVAudioSessionCategoryPlayback")
        #expect(AVAudioSession.Port.builtInMic.rawValue == "MicrophoneBuiltIn")
        #expect(AVAudioSession.RecordPermission.granted.rawValue == 0x6772_6E74)   // 'grnt'
        try session.setPreferredSampleRate(0)
    }

    @Test func recordPermissionIsGrantedWhenAsked() async throws {
        let session = AVAudioSession.sharedInstance()
        let granted = await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
            session.requestRecordPermission { ok in c.resume(returning: ok) }
        }
        #expect(granted)
        #expect(session.recordPermission == .granted)
    }

    @Test func notificationHandlersReadAppleUserInfoKeys() throws {
        // A handler as iOS code writes it, fed a notification built like the session's.
        final class Seen: @unchecked Sendable {
            var reasons: [AVAudioSession.RouteChangeReason] = []
            var types: [AVAudioSession.InterruptionType] = []
        }
        let seen = Seen()
        let center = NotificationCenter()
        let a = center.addObserver(forName: AVAudioSession.routeChangeNotification, object: nil, queue: nil) { note in
            guard let info = note.userInfo, let value = info[AVAudioSessionRouteChangeReasonKey] as? UInt,
                  let reason = AVAudioSession.RouteChangeReason(rawValue: value) else { return }
            seen.reasons.append(reason)
        }
        let b = center.addObserver(forName: AVAudioSession.interruptionNotification, object: nil, queue: nil) { note in
            guard let info = note.userInfo, let value = info[AVAudioSessionInterruptionTypeKey] as? UInt,
                  let type = AVAudioSession.InterruptionType(rawValue: value) else { return }
            if type == .ended, let o = info[AVAudioSessionInterruptionOptionKey] as? UInt {
                #expect(AVAudioSession.InterruptionOptions(rawValue: o).contains(.shouldResume))
            }
            seen.types.append(type)
        }
        center.post(name: AVAudioSession.routeChangeNotification, object: nil,
                    userInfo: [AVAudioSessionRouteChangeReasonKey: NSNumber(value: AVAudioSession.RouteChangeReason.oldDeviceUnavailable.rawValue)])
        center.post(name: AVAudioSession.interruptionNotification, object: nil,
                    userInfo: [AVAudioSessionInterruptionTypeKey: NSNumber(value: AVAudioSession.InterruptionType.ended.rawValue),
                               AVAudioSessionInterruptionOptionKey: NSNumber(value: AVAudioSession.InterruptionOptions.shouldResume.rawValue)])
        center.removeObserver(a)
        center.removeObserver(b)
        #expect(seen.reasons == [.oldDeviceUnavailable])
        #expect(seen.types == [.ended])
    }
}
