import OATProcessing
import OATTestSupport
import OATUnits
import Foundation
import Testing

@Suite struct TimePitchNodeTests {
    @Test func rateConsumesMoreInputAtTheSamePitch() throws {
        let g = try AudioGraph(sampleRate: 48000, channels: 2, maxFramesPerSlice: 512)
        let src = sineSource(channels: 2, freq: 440, amp: 0.5, rate: 48000)
        let tp = AUTimePitchNode(channels: 2)
        try g.add(src)
        try g.add(tp)
        try g.connect(src, to: tp)
        try g.connect(tp, to: g.output)
        try g.commit()
        try tp.rate.set(1.5)
        let out = g.renderOffline(frames: 48000)
        let f = dominantFrequency(Array(out[0][12000...]), sampleRate: 48000)
        print("AUTimePitchNode rate 1.5: dominant \(f) Hz, source rendered \(src.renderedFrames) frames for 48000 out")
        #expect(abs(cents(f, relativeTo: 440)) < 5)
        // 1.5x as much input as output, plus the stretch's look-ahead.
        #expect(Double(src.renderedFrames) > 48000 * 1.45)
        #expect(Double(src.renderedFrames) < 48000 * 1.5 + 20000)
    }

    @Test func pitchNodeShiftsAnOctave() throws {
        let g = try AudioGraph(sampleRate: 48000, channels: 1, maxFramesPerSlice: 256)
        let src = sineSource(channels: 1, freq: 300, amp: 0.5, rate: 48000)
        let tp = AUTimePitchNode(channels: 1, algorithm: .timeDomain)
        try g.add(src)
        try g.add(tp)
        try g.connect(src, to: tp)
        try g.connect(tp, to: g.output)
        try g.commit()
        try tp.pitch.set(1200)
        let out = g.renderOffline(frames: 48000)
        let measured = cents(dominantFrequency(Array(out[0][12000...]), sampleRate: 48000), relativeTo: 300)
        #expect(abs(measured - 1200) < 5, "\(measured) cents")
    }

    @Test func voiceProcessingNodeCancelsTheEchoOfItsReference() throws {
        let rate = 16000.0
        let g = try AudioGraph(sampleRate: rate, channels: 1, maxFramesPerSlice: 160)
        // Far end: deterministic noise; microphone: the far end delayed 40 samples at 0.5 (the echo).
        let far = (0..<Int(rate * 8)).map { i -> Float in
            var x = UInt64(i + 1) &* 0x9E37_79B9_7F4A_7C15
            x ^= x >> 31
            return Float(Double(x >> 11) / Double(1 << 53) - 0.5) * 0.5
        }
        let mic = (0..<far.count).map { i in i >= 40 ? 0.5 * far[i - 40] : 0 }
        let farNode = bufferSource(channels: 1, samples: far)
        let micNode = bufferSource(channels: 1, samples: mic)
        var s = VoiceProcessingSettings()
        s.noiseSuppression = false
        let vp = AUVoiceProcessingNode(settings: s)
        for n in [farNode, micNode, vp] as [RenderNode] { try g.add(n) }
        try g.connect(micNode, to: vp, input: 0)
        try g.connect(farNode, to: vp, input: 1)
        try g.connect(vp, to: g.output)
        try g.commit()
        let out = g.renderOffline(frames: far.count)
        let from = far.count - Int(rate * 2)
        let erle = toDB(rms(mic, from: from) / max(1e-12, rms(out[0], from: from)))
        print("AUVoiceProcessingNode: ERLE \(erle) dB over the last 2 s")
        #expect(erle >= 20)
    }
}
