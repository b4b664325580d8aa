import OATTestSupport
import OATUnits
import Foundation
import OpenAudioToolbox
import Testing

@Suite("AUPlayerNode with files")
struct PlayerFileTests {
    @Test(.requires(TestResource.corpusMissing)) func playsACorpusFileResampledToTheGraphRate() throws {
        let root = try TestResource.corpusRoot()
        let path = root + "/ffmpeg-generated/wav/pcm_f32le_st.wav"
        let source = try decodeWithToolbox(path)
        #expect(source.rate == 44100 && source.channels == 2)
        let g = try AudioGraph(sampleRate: 48000, channels: 2, maxFramesPerSlice: 1024)
        let player = AUPlayerNode(channels: 2, bufferFrames: 8192)
        try g.add(player)
        try g.connect(player, to: g.output)
        try g.commit()
        try player.scheduleFiles([path])
        var left: [Float] = []
        let deadline = Date().addingTimeInterval(20)
        while !player.isFinished && Date() < deadline {
            if player.bufferedFrames < 1024 && !player.isInputEnded { usleep(1000); continue }
            left += g.renderOffline(frames: 1024)[0]
        }
        #expect(player.error == nil)
        #expect(player.underrunCount == 0)
        let expectedFrames = Double(source.samples.count / 2) * 48000 / 44100
        #expect(abs(Double(player.playedFrames) / expectedFrames - 1) < 0.005, "played \(player.playedFrames), expected \(expectedFrames)")
        let srcLeft = stride(from: 0, to: source.samples.count, by: 2).map { source.samples[$0] }
        let a = toDB(rms(left, to: Int(player.playedFrames))), b = toDB(rms(srcLeft))
        #expect(abs(a - b) < 0.3, "level \(a) dB vs source \(b) dB")
        // Missing files are errors at once.
        #expect(throws: AudioError.self) { try player.scheduleFiles(["/nonexistent.wav"]) }
    }
}
