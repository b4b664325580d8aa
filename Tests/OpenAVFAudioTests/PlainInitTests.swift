import OATTestSupport
import Foundation
import OpenAVFAudio
import Testing

/// NSObject's plain `init()` on the classes whose Apple declaration inherits it (issue 25: a
/// library's `AVAudioUnit()` met "initializer is inaccessible").
struct PlainInitTests {
    /// `AVAudioFormat()`: every field zero, no layout, the "other" common format.
    @Test func avAudioFormatPlainInit() {
        let format = AVAudioFormat()
        #expect(format.sampleRate == 0 && format.channelCount == 0)
        #expect(format.commonFormat == .otherFormat)
        #expect(format.channelLayout == nil)
        #expect(format.streamDescription.pointee.mFormatID == 0 && format.streamDescription.pointee.mBytesPerFrame == 0)
    }

    /// `AVAudioUnit()`: a unit of no component that an engine runs, passing the audio through
    /// unchanged (a 1 kHz burst keeps its level sample for sample).
    @Test func avAudioUnitPlainInitPassesAudioThrough() throws {
        let unit = AVAudioUnit()
        #expect(unit.audioComponentDescription.componentType == 0 && unit.audioComponentDescription.componentSubType == 0)
        let out = try AVAudioUnitHandleTests.renderBurst(through: unit, seconds: 0.2)
        let dry = AVAudioEngineOfflineTests.toneBuffer(frequency: 1000, amplitude: 0.5, frames: 4800)
        let input = Array(UnsafeBufferPointer(start: dry.floatChannelData![0], count: 4800))
        var worst: Float = 0
        for i in 0..<4800 { worst = max(worst, abs(out[i] - input[i])) }
        #expect(worst < 1e-6, "the burst passes unchanged: worst difference \(worst)")
        #expect(AVAudioUnitHandleTests.rms(out, from: 4800, count: 4800) == 0, "nothing after the burst")
    }
}
