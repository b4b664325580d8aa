// AVAudioRecorder without a device: settings dictionaries as apps pass them, the container from
// the URL's extension, the completed format, and the clear errors of combinations that cannot
// be recorded (nothing is created for them).
import OATTestSupport
import Foundation
import OpenAVFAudio
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite struct AVAudioRecorderSettingsTests {
    /// The NSError an initialiser threw.
    func thrown(_ body: () throws -> AVAudioRecorder) -> NSError? {
        do {
            _ = try body()
            return nil
        } catch {
            return error as NSError
        }
    }

    @Test("Apps' settings dictionaries give the format they name, in the container of the URL's extension")
    func settingsAsAppsPassThem() throws {
        let dir = try ScratchDirectory("avrec-settings")
        defer { dir.remove() }
        let aac = try AVAudioRecorder(url: URL(fileURLWithPath: "\(dir.path)/memo.m4a"), settings: [
            AVFormatIDKey: Int(kAudioFormatMPEG4AAC), AVSampleRateKey: 44100.0, AVNumberOfChannelsKey: 1,
            AVEncoderAudioQualityKey: AVAudioQuality.high.rawValue, AVEncoderBitRateKey: 96000,
        ])
        let f = aac.format.streamDescription.pointee
        #expect(f.mFormatID == kAudioFormatMPEG4AAC)
        #expect(f.mSampleRate == 44100)
        #expect(f.mChannelsPerFrame == 1)
        #expect(f.mFramesPerPacket == 1024, "the encoder completes AAC's packet shape")
        #expect(aac.settings[AVEncoderBitRateKey] as? Int == 96000)
        #expect((aac.settings[AVFormatIDKey] as? Int).map { UInt32($0) } == kAudioFormatMPEG4AAC)
        #expect(aac.url.lastPathComponent == "memo.m4a")
        #expect(!aac.isRecording)
        #expect(aac.currentTime == 0)
        #expect(!FileManager.default.fileExists(atPath: "\(dir.path)/memo.m4a"), "init creates nothing")

        let wav = try AVAudioRecorder(url: URL(fileURLWithPath: "\(dir.path)/a.wav"), settings: [
            AVFormatIDKey: kAudioFormatLinearPCM, AVSampleRateKey: 48000, AVNumberOfChannelsKey: 2, AVLinearPCMBitDepthKey: 24,
        ])
        let w = wav.format.streamDescription.pointee
        #expect(w.mFormatID == kAudioFormatLinearPCM && w.mBitsPerChannel == 24 && w.mChannelsPerFrame == 2 && w.mBytesPerFrame == 6)
        #expect(w.mFormatFlags & kAudioFormatFlagIsBigEndian == 0, "WAVE is little-endian")

        // AIFF without the endianness key takes the container's big-endian integers.
        let aiff = try AVAudioRecorder(url: URL(fileURLWithPath: "\(dir.path)/a.aiff"), settings: [
            AVFormatIDKey: Int(kAudioFormatLinearPCM), AVSampleRateKey: 44100, AVNumberOfChannelsKey: 1,
        ])
        #expect(aiff.format.streamDescription.pointee.mFormatFlags & kAudioFormatFlagIsBigEndian != 0)

        // Float PCM in CAF, Apple Lossless in CAF, FLAC and Opus (this stack has libopus).
        let caf = try AVAudioRecorder(url: URL(fileURLWithPath: "\(dir.path)/a.caf"), settings: [
            AVFormatIDKey: Int(kAudioFormatLinearPCM), AVSampleRateKey: 44100, AVNumberOfChannelsKey: 1, AVLinearPCMIsFloatKey: true,
        ])
        #expect(caf.format.commonFormat == .pcmFormatFloat32)
        let alac = try AVAudioRecorder(url: URL(fileURLWithPath: "\(dir.path)/b.caf"), settings: [
            AVFormatIDKey: Int(kAudioFormatAppleLossless), AVSampleRateKey: 44100, AVNumberOfChannelsKey: 2,
        ])
        #expect(alac.format.streamDescription.pointee.mFormatID == kAudioFormatAppleLossless)
        let flac = try AVAudioRecorder(url: URL(fileURLWithPath: "\(dir.path)/c.flac"), settings: [
            AVFormatIDKey: Int(kAudioFormatFLAC), AVSampleRateKey: 48000, AVNumberOfChannelsKey: 1,
        ])
        #expect(flac.format.streamDescription.pointee.mFormatID == kAudioFormatFLAC)
        let opus = try AVAudioRecorder(url: URL(fileURLWithPath: "\(dir.path)/d.opus"), settings: [
            AVFormatIDKey: Int(kAudioFormatOpus), AVSampleRateKey: 48000, AVNumberOfChannelsKey: 1,
        ])
        #expect(opus.format.streamDescription.pointee.mFormatID == kAudioFormatOpus)
        // No AVFormatIDKey: what the container holds (.m4a: AAC).
        let plain = try AVAudioRecorder(url: URL(fileURLWithPath: "\(dir.path)/e.m4a"), settings: [AVSampleRateKey: 22050, AVNumberOfChannelsKey: 1])
        #expect(plain.format.streamDescription.pointee.mFormatID == kAudioFormatMPEG4AAC)
        // AVAudioFileTypeKey overrides the extension.
        let typed = try AVAudioRecorder(url: URL(fileURLWithPath: "\(dir.path)/f.rec"), settings: [
            AVAudioFileTypeKey: Int(kAudioFileWAVEType), AVFormatIDKey: Int(kAudioFormatLinearPCM), AVSampleRateKey: 8000, AVNumberOfChannelsKey: 1,
        ])
        #expect((typed.settings[AVAudioFileTypeKey] as? Int).map { UInt32($0) } == kAudioFileWAVEType)
        // init(url:format:) with the engine's standard format: float WAVE.
        let std = try AVAudioRecorder(url: URL(fileURLWithPath: "\(dir.path)/g.wav"), format: AVAudioFormat(standardFormatWithSampleRate: 48000, channels: 2)!)
        #expect(std.format.commonFormat == .pcmFormatFloat32 && std.format.channelCount == 2 && std.format.isInterleaved)
    }

    @Test("Settings that cannot be recorded throw an NSError naming the key or the combination; nothing is created")
    func badSettingsThrow() throws {
        let dir = try ScratchDirectory("avrec-bad")
        defer { dir.remove() }
        func url(_ name: String) -> URL { URL(fileURLWithPath: "\(dir.path)/\(name)") }
        let pcm: [String: Any] = [AVFormatIDKey: Int(kAudioFormatLinearPCM), AVSampleRateKey: 44100, AVNumberOfChannelsKey: 1]
        let cases: [(name: String, url: URL, settings: [String: Any], code: OSStatus, mentions: String)] = [
            ("unknown extension", url("x.xyz"), pcm, kAudioFileUnsupportedFileTypeError, ".xyz"),
            ("no extension", url("noext"), pcm, kAudioFileUnsupportedFileTypeError, "extension"),
            ("AAC in WAVE", url("aac.wav"), [AVFormatIDKey: Int(kAudioFormatMPEG4AAC), AVSampleRateKey: 44100, AVNumberOfChannelsKey: 1],
             kAudioFileUnsupportedDataFormatError, "WAVE"),
            ("PCM in M4A", url("pcm.m4a"), pcm, kAudioFileUnsupportedDataFormatError, "M4A"),
            ("float AIFF", url("f.aiff"), pcm.merging([AVLinearPCMIsFloatKey: true]) { $1 }, kAudioFileUnsupportedDataFormatError, "AIFF"),
            ("big-endian WAVE", url("be.wav"), pcm.merging([AVLinearPCMIsBigEndianKey: true]) { $1 }, kAudioFileUnsupportedDataFormatError, "little-endian"),
            ("zero sample rate", url("r.wav"), pcm.merging([AVSampleRateKey: 0]) { $1 }, kAudio_ParamError, "AVSampleRateKey"),
            ("zero channels", url("c.wav"), pcm.merging([AVNumberOfChannelsKey: 0]) { $1 }, kAudio_ParamError, "AVNumberOfChannelsKey"),
            ("12-bit PCM", url("b.wav"), pcm.merging([AVLinearPCMBitDepthKey: 12]) { $1 }, kAudioFormatUnsupportedDataFormatError, "AVLinearPCMBitDepthKey"),
            ("16-bit float", url("h.caf"), pcm.merging([AVLinearPCMIsFloatKey: true, AVLinearPCMBitDepthKey: 16]) { $1 },
             kAudioFormatUnsupportedDataFormatError, "float"),
            ("unknown codec", url("u.caf"), pcm.merging([AVFormatIDKey: 0x7A7A_7A7A]) { $1 }, kAudioFormatUnsupportedDataFormatError, "zzzz"),
            ("bit rate 1", url("br.m4a"), [AVFormatIDKey: Int(kAudioFormatMPEG4AAC), AVSampleRateKey: 44100, AVNumberOfChannelsKey: 1, AVEncoderBitRateKey: 1],
             kAudio_ParamError, "AVEncoderBitRateKey"),
            ("quality 500", url("q.m4a"), [AVFormatIDKey: Int(kAudioFormatMPEG4AAC), AVSampleRateKey: 44100, AVNumberOfChannelsKey: 1, AVEncoderAudioQualityKey: 500],
             kAudio_ParamError, "AVEncoderAudioQualityKey"),
            ("not a file URL", URL(string: "https://example.com/a.wav")!, pcm, kAudio_ParamError, "file URL"),
        ]
        for c in cases {
            let error = try #require(thrown { try AVAudioRecorder(url: c.url, settings: c.settings) }, "\(c.name): no error")
            #expect(error.domain == NSOSStatusErrorDomain, "\(c.name)")
            #expect(error.code == Int(c.code), "\(c.name): code \(error.code), expected \(c.code): \(error.localizedDescription)")
            #expect(error.localizedDescription.contains(c.mentions), "\(c.name): \(error.localizedDescription)")
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: dir.path)
        #expect(left.isEmpty, "files were created: \(left)")
    }

    @Test("Metering reads -160 dB before any audio, with metering off and for a channel that does not exist")
    func meteringWithoutAudio() throws {
        let dir = try ScratchDirectory("avrec-meter")
        defer { dir.remove() }
        let r = try AVAudioRecorder(url: URL(fileURLWithPath: "\(dir.path)/m.wav"), settings: [AVSampleRateKey: 44100, AVNumberOfChannelsKey: 2])
        #expect(!r.isMeteringEnabled)
        r.updateMeters()
        #expect(r.averagePower(forChannel: 0) == -160)
        #expect(r.peakPower(forChannel: 1) == -160)
        r.isMeteringEnabled = true
        #expect(r.isMeteringEnabled)
        r.updateMeters()
        #expect(r.averagePower(forChannel: 5) == -160)
        #expect(r.peakPower(forChannel: -1) == -160)
    }

    @Test("deleteRecording removes the file at the URL once, and never a directory")
    func deleteRecordingWithoutRecording() throws {
        let dir = try ScratchDirectory("avrec-delete")
        defer { dir.remove() }
        let path = "\(dir.path)/old.wav"
        #expect(FileManager.default.createFile(atPath: path, contents: Data([1, 2, 3])))
        let r = try AVAudioRecorder(url: URL(fileURLWithPath: path), settings: [AVSampleRateKey: 44100, AVNumberOfChannelsKey: 1])
        #expect(r.deleteRecording())
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(!r.deleteRecording(), "nothing left to delete")
        try FileManager.default.createDirectory(atPath: "\(dir.path)/d.wav", withIntermediateDirectories: false)
        let d = try AVAudioRecorder(url: URL(fileURLWithPath: "\(dir.path)/d.wav"), settings: [AVSampleRateKey: 44100, AVNumberOfChannelsKey: 1])
        #expect(!d.deleteRecording())
        #expect(FileManager.default.fileExists(atPath: "\(dir.path)/d.wav"))
    }

    @Test("A recording that cannot be written fails: prepareToRecord and record return false, no delegate call")
    func unwritableDestination() throws {
        try #require(FileManager.default.fileExists(atPath: "/dev/full"), "no /dev/full")
        let r = try AVAudioRecorder(url: URL(fileURLWithPath: "/dev/full"), settings: [
            AVAudioFileTypeKey: Int(kAudioFileWAVEType), AVFormatIDKey: Int(kAudioFormatLinearPCM), AVSampleRateKey: 44100, AVNumberOfChannelsKey: 1,
        ])
        let log = RecorderDelegateLog()
        r.delegate = log
        #expect(!r.prepareToRecord())
        #expect(!r.record())
        #expect(!r.isRecording)
        #expect(!r.deleteRecording(), "a device is never deleted")
        usleep(200_000)
        #expect(log.finishes.isEmpty, "nothing was recorded, nothing finished: \(log.finishes)")
    }

    @Test("The delegate is held weakly, as on Apple")
    func delegateIsWeak() throws {
        let dir = try ScratchDirectory("avrec-weak")
        defer { dir.remove() }
        let r = try AVAudioRecorder(url: URL(fileURLWithPath: "\(dir.path)/w.caf"), settings: [AVSampleRateKey: 44100, AVNumberOfChannelsKey: 1])
        var log: RecorderDelegateLog? = RecorderDelegateLog()
        r.delegate = log
        #expect(r.delegate === log)
        log = nil
        #expect(r.delegate == nil, "the recorder kept its delegate alive")
    }
}
