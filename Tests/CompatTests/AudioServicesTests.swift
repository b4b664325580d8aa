// System Sound Services (AudioServices.h) as iOS and macOS code calls it: sounds made from files,
// played through a private PulseAudio null sink whose monitor is recorded, with their completion
// blocks and run-loop completion routines; the properties and the errors Apple's header gives.
import Foundation
import OATTestSupport
import OpenAudioToolbox
import Testing

/// Counts the completion routine's calls through its client data (a C function, as apps pass).
private func countCompletion(_ id: SystemSoundID, _ clientData: UnsafeMutableRawPointer?) {
    clientData?.assumingMemoryBound(to: Int.self).pointee += 1
}

struct AudioServicesTests {
    @Test("Sounds are made from audio files of at most 30 s; properties and errors as Apple's header gives them")
    func soundsPropertiesErrors() throws {
        let scratch = try ScratchDirectory("sysound")
        var id: SystemSoundID = 0
        let missing = URL(fileURLWithPath: scratch.path + "/none.wav")
        #expect(AudioServicesCreateSystemSoundID(missing, &id) == kAudioFileFileNotFoundError)
        let text = scratch.path + "/text.wav"
        try "not audio".write(toFile: text, atomically: true, encoding: .utf8)
        #expect(AudioServicesCreateSystemSoundID(URL(fileURLWithPath: text), &id) != noErr)
        // 31 s of silence: longer than a system sound may be.
        let long = scratch.path + "/long.wav"
        try #require(runFFmpeg(["-f", "lavfi", "-i", "anullsrc=r=8000:cl=mono", "-t", "31", long]))
        #expect(AudioServicesCreateSystemSoundID(URL(fileURLWithPath: long), &id) == kAudioServicesSystemSoundExceededMaximumDurationError)
        let short = scratch.path + "/short.wav"
        try #require(runFFmpeg(["-f", "lavfi", "-i", "sine=f=440:r=8000:d=0.2", short]))
        #expect(AudioServicesCreateSystemSoundID(URL(fileURLWithPath: short), &id) == kAudioServicesNoError)
        #expect(id != 0 && id != kSystemSoundID_Vibrate)

        var size: UInt32 = 0
        var writable: DarwinBoolean = false
        #expect(AudioServicesGetPropertyInfo(kAudioServicesPropertyIsUISound, 4, &id, &size, &writable) == noErr && size == 4 && writable.boolValue)
        var value: UInt32 = 7
        size = 4
        #expect(AudioServicesGetProperty(kAudioServicesPropertyIsUISound, 4, &id, &size, &value) == noErr && value == 1)
        size = 4
        #expect(AudioServicesGetProperty(kAudioServicesPropertyCompletePlaybackIfAppDies, 4, &id, &size, &value) == noErr && value == 0)
        var on: UInt32 = 1
        #expect(AudioServicesSetProperty(kAudioServicesPropertyCompletePlaybackIfAppDies, 4, &id, 4, &on) == noErr)
        size = 4
        #expect(AudioServicesGetProperty(kAudioServicesPropertyCompletePlaybackIfAppDies, 4, &id, &size, &value) == noErr && value == 1)
        #expect(AudioServicesGetProperty(0x6E6F_6E65, 4, &id, &size, &value) == kAudioServicesUnsupportedPropertyError)
        var wide = UInt64(id)
        #expect(AudioServicesGetProperty(kAudioServicesPropertyIsUISound, 8, &wide, &size, &value) == kAudioServicesBadSpecifierSizeError)
        var small: UInt16 = 0
        #expect(AudioServicesSetProperty(kAudioServicesPropertyIsUISound, 4, &id, 2, &small) == kAudioServicesBadPropertySizeError)
        var unknown: SystemSoundID = 0x7FFF_0000
        #expect(AudioServicesAddSystemSoundCompletion(unknown, nil, nil, countCompletion, nil) == kAudioServicesSystemSoundUnspecifiedError)
        size = 4
        #expect(AudioServicesGetProperty(kAudioServicesPropertyIsUISound, 4, &unknown, &size, &value) == kAudioServicesSystemSoundUnspecifiedError)
        #expect(AudioServicesDisposeSystemSoundID(id) == noErr)
        #expect(AudioServicesDisposeSystemSoundID(id) == kAudioServicesSystemSoundUnspecifiedError)
    }

    @Test("Vibrate plays nothing and completes at once")
    func vibrateCompletes() {
        let done = DispatchSemaphore(value: 0)
        AudioServicesPlaySystemSoundWithCompletion(kSystemSoundID_Vibrate) { done.signal() }
        #expect(done.wait(timeout: .now() + 2) == .success)
    }
}

@Suite("PlaybackAudioServicesTests", .serialized, .requires(TestResource.first(TestResource.corpusMissing, TestResource.pulseAudioMissing, TestResource.ffmpegMissing)))
struct PlaybackAudioServicesTests {
    @Test("A system sound plays the whole file at the default output, then its completion block and routine run")
    func playsTheFileThenCompletes() throws {
        let input = try TestResource.corpusFile("ffmpeg-generated/wav/pcm_f32le_st.wav")
        let reference = try #require(decodeWithFFmpeg(input))
        let daemon = try PulseTestDaemon(sampleRate: 44100, channels: 2)
        defer { daemon.stop() }
        setenv("OAT_OUTPUT", "pulse:\(daemon.sinkName)", 1)
        setenv("PULSE_SERVER", daemon.server, 1)
        defer { unsetenv("OAT_OUTPUT"); unsetenv("PULSE_SERVER") }
        let scratch = try ScratchDirectory("sysound-play")
        let recording = try daemon.recordMonitor(to: scratch.path + "/monitor.raw")

        var id: SystemSoundID = 0
        #expect(AudioServicesCreateSystemSoundID(URL(fileURLWithPath: input), &id) == noErr)
        defer { AudioServicesDisposeSystemSoundID(id) }
        // The routine, on this thread's run loop (the idiom of older code).
        let calls = UnsafeMutablePointer<Int>.allocate(capacity: 1)
        calls.initialize(to: 0)
        defer { calls.deallocate() }
        #expect(AudioServicesAddSystemSoundCompletion(id, CFRunLoopGetCurrent(), nil, countCompletion, calls) == noErr)
        let done = DispatchSemaphore(value: 0)
        let started = Date()
        AudioServicesPlaySystemSoundWithCompletion(id) { done.signal() }
        #expect(done.wait(timeout: .now() + 15) == .success, "no completion")
        let elapsed = Date().timeIntervalSince(started)
        var waited = 0.0
        while calls.pointee == 0 && waited < 5 {
            _ = CFRunLoopRunInMode(kCFRunLoopDefaultMode, 0.1, true)
            waited += 0.1
        }
        usleep(200_000)
        let recorded = recording.stop()
        print("AudioServices: completion after \(String(format: "%.2f", elapsed)) s for a 3.00 s file; routine called \(calls.pointee) time(s)")
        #expect(calls.pointee == 1)
        // The completion comes once the sound has been played, not when it was handed over.
        #expect(elapsed >= 2.9, "the completion came after \(elapsed) s")
        let m = try #require(lossyAlign(recording: recorded, reference: reference, channels: 2), "the file is not in the recording")
        print("AudioServices: SNR \(m.snr) dB at offset \(m.offset)")
        #expect(m.snr >= 60, "SNR \(m.snr) dB")
        AudioServicesRemoveSystemSoundCompletion(id)
    }
}
