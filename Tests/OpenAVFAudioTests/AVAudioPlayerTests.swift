// AVAudioPlayer without a device: opening files and data (and refusing what is no audio with
// Apple's error), the properties Apple documents, the ranges of volume, pan and rate, seeking
// while stopped, and a delegate written as Apple code writes one.
import OATTestSupport
import Foundation
import OpenAVFAudio
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Writes a 32-bit float WAV of `frames` frames whose sample is `value(frame, channel)`.
func writePlayerFixture(_ path: String, rate: Double, channels: Int, frames: Int, value: (Int, Int) -> Float) throws {
    let settings: [String: Any] = [AVFormatIDKey: Int(kAudioFormatLinearPCM), AVSampleRateKey: rate, AVNumberOfChannelsKey: channels,
                                   AVLinearPCMBitDepthKey: 32, AVLinearPCMIsFloatKey: true]
    let file = try AVAudioFile(forWriting: URL(fileURLWithPath: path), settings: settings)
    let buffer = try #require(AVAudioPCMBuffer(pcmFormat: file.processingFormat, frameCapacity: AVAudioFrameCount(frames)))
    for c in 0..<channels { for i in 0..<frames { buffer.floatChannelData![c][i] = value(i, c) } }
    buffer.frameLength = AVAudioFrameCount(frames)
    try file.write(from: buffer)
    file.close()
}

/// A delegate as Apple code writes one (an NSObject subclass implementing both methods).
final class AppleStyleDelegate: NSObject, AVAudioPlayerDelegate {
    var finished: [Bool] = []
    var errors = 0
    func audioPlayerDidFinishPlaying(_ player: AVAudioPlayer, successfully flag: Bool) { finished.append(flag) }
    func audioPlayerDecodeErrorDidOccur(_ player: AVAudioPlayer, error: (any Error)?) { errors += 1 }
}

/// A delegate implementing none of the (optional) methods.
final class SilentDelegate: NSObject, AVAudioPlayerDelegate {}

@Suite struct AVAudioPlayerTests {
    @Test("Data that is no audio file throws Apple's NSOSStatusErrorDomain error ('typ?'), from a URL and from memory")
    func badFileThrowsAppleError() throws {
        let scratch = try ScratchDirectory("avplayer-bad")
        let path = "\(scratch.path)/not-audio.wav"
        let text = Array("This is a text file, not a sound. It goes on for a while to look like a file.".utf8)
        #expect(writeFile(path, text))
        var thrown: (any Error)?
        do { _ = try AVAudioPlayer(contentsOf: URL(fileURLWithPath: path)) } catch { thrown = error }
        let error = try #require(thrown as NSError?, "no error for a text file")
        #expect(error.domain == NSOSStatusErrorDomain)
        #expect(error.code == Int(kAudioFileUnsupportedFileTypeError), "code \(error.code)")
        thrown = nil
        do { _ = try AVAudioPlayer(data: Data(text)) } catch { thrown = error }
        let dataError = try #require(thrown as NSError?, "no error for text data")
        #expect(dataError.domain == NSOSStatusErrorDomain)
        #expect(dataError.code == Int(kAudioFileUnsupportedFileTypeError), "code \(dataError.code)")
        thrown = nil
        do { _ = try AVAudioPlayer(contentsOf: URL(fileURLWithPath: "\(scratch.path)/missing.wav")) } catch { thrown = error }
        let missing = try #require(thrown as NSError?, "no error for a missing file")
        #expect(missing.domain == NSOSStatusErrorDomain)
        thrown = nil
        do { _ = try AVAudioPlayer(data: Data()) } catch { thrown = error }
        #expect((thrown as NSError?)?.domain == NSOSStatusErrorDomain)
    }

    @Test("A file's and the same bytes' duration, channels, format, settings, url and data")
    func properties() throws {
        let scratch = try ScratchDirectory("avplayer-props")
        let path = "\(scratch.path)/tone.wav"
        try writePlayerFixture(path, rate: 44100, channels: 1, frames: 66150) { i, _ in 0.25 * Float(sin(Double(i) * 0.05)) }
        let url = URL(fileURLWithPath: path)
        let player = try AVAudioPlayer(contentsOf: url)
        #expect(abs(player.duration - 1.5) < 1e-9)
        #expect(player.numberOfChannels == 1)
        #expect(player.format.sampleRate == 44100)
        #expect(player.format.channelCount == 1)
        #expect((player.settings[AVSampleRateKey] as? Double ?? (player.settings[AVSampleRateKey] as? NSNumber)?.doubleValue) == 44100)
        #expect(player.url == url)
        #expect(player.data == nil)
        #expect(!player.isPlaying)
        let bytes = try Data(contentsOf: url)
        let fromData = try AVAudioPlayer(data: bytes, fileTypeHint: "com.microsoft.waveform-audio")
        #expect(abs(fromData.duration - 1.5) < 1e-9)
        #expect(fromData.url == nil)
        #expect(fromData.data == bytes)
        #expect(try AVAudioPlayer(data: bytes).numberOfChannels == 1)
    }

    @Test("Defaults and ranges: volume 0 ... 1, pan -1 ... 1, rate 0.5 ... 2; currentTime seeks while stopped, within the sound")
    func rangesAndSeekingWhileStopped() throws {
        let scratch = try ScratchDirectory("avplayer-ranges")
        let path = "\(scratch.path)/tone.wav"
        try writePlayerFixture(path, rate: 48000, channels: 2, frames: 96000) { i, _ in 0.25 * Float(sin(Double(i) * 0.05)) }
        let player = try AVAudioPlayer(contentsOf: URL(fileURLWithPath: path))
        #expect(player.volume == 1 && player.pan == 0 && player.rate == 1)
        #expect(player.numberOfLoops == 0 && !player.enableRate && !player.isMeteringEnabled)
        #expect(player.currentTime == 0)
        player.volume = 1.5
        #expect(player.volume == 1)
        player.volume = 0.25
        #expect(player.volume == 0.25)
        player.pan = -3
        #expect(player.pan == -1)
        player.rate = 4
        #expect(player.rate == 2)
        player.rate = 0.1
        #expect(player.rate == 0.5)
        player.numberOfLoops = -1
        #expect(player.numberOfLoops == -1)
        player.currentTime = 0.75
        #expect(abs(player.currentTime - 0.75) < 1e-9)
        player.currentTime = 10
        #expect(abs(player.currentTime - 2) < 1e-9)
        player.currentTime = -1
        #expect(player.currentTime == 0)
        player.updateMeters()
        #expect(player.averagePower(forChannel: 0) == -160)
        #expect(player.peakPower(forChannel: 1) == -160)
        player.currentDevice = "oat_test"
        #expect(player.currentDevice == "oat_test")
    }

    @Test("A delegate as Apple code writes it: an NSObject subclass, held weakly, optional methods")
    @MainActor func delegateIsWeakAndOptional() throws {
        let scratch = try ScratchDirectory("avplayer-delegate")
        let path = "\(scratch.path)/tone.wav"
        try writePlayerFixture(path, rate: 48000, channels: 2, frames: 480) { _, _ in 0.1 }
        let player = try AVAudioPlayer(contentsOf: URL(fileURLWithPath: path))
        var delegate: AppleStyleDelegate? = AppleStyleDelegate()
        player.delegate = delegate
        #expect(player.delegate === delegate)
        delegate = nil
        #expect(player.delegate == nil, "the delegate must be held weakly")
        let silent = SilentDelegate()
        player.delegate = silent
        silent.audioPlayerDidFinishPlaying(player, successfully: true)
        #expect(player.delegate === silent)
    }
}
