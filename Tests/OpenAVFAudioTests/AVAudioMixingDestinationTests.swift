import OATTestSupport
import Foundation
import OpenAVFAudio
import Testing

/// A player fanned out to two mixers mixes at each with that mixer's AVAudioMixingDestination;
/// the node's own volume and pan set all of them. Levels by offline manual rendering: the first
/// mixer feeds the main mixer hard left, the second hard right, so each output channel is one path.
@Suite struct AVAudioMixingDestinationTests {
    @Test func eachMixerOfAFanOutHasItsOwnVolumeAndPanAndTheNodeSetsThemAll() throws {
        let engine = try AVAudioSourceNodeTests.offlineEngine()
        let format = AVAudioSourceNodeTests.stereo
        let player = AVAudioPlayerNode()
        let left = AVAudioMixerNode(), right = AVAudioMixerNode(), unused = AVAudioMixerNode()
        for n in [player, left, right, unused] as [AVAudioNode] { engine.attach(n) }
        engine.connect(player, to: [AVAudioConnectionPoint(node: left, bus: 0), AVAudioConnectionPoint(node: right, bus: 0)], fromBus: 0, format: format)
        engine.connect(left, to: engine.mainMixerNode, format: format)
        engine.connect(right, to: engine.mainMixerNode, format: format)
        left.pan = -1
        right.pan = 1

        let toLeft = try #require(player.destination(forMixer: left, bus: 0))
        let toRight = try #require(player.destination(forMixer: right, bus: 0))
        #expect(toLeft.connectionPoint.node === left && toLeft.connectionPoint.bus == 0)
        #expect(player.destination(forMixer: unused, bus: 0) == nil, "not connected to that mixer")
        #expect(player.destination(forMixer: left, bus: 1) == nil, "nor to that bus")
        #expect(toLeft.destination(forMixer: left, bus: 0) === toLeft && toLeft.destination(forMixer: right, bus: 0) == nil)
        #expect(player.destination(forMixer: left, bus: 0) === toLeft, "the same destination while the connection stands")
        #expect(toLeft.volume == 1 && toLeft.pan == 0, "a destination starts from the node's values")

        toLeft.volume = 0.8
        toRight.volume = 0.2
        #expect(player.volume == 1 && player.pan == 0, "destination values do not show on the node")

        try engine.start()
        player.scheduleBuffer(AVAudioEngineOfflineTests.toneBuffer(frequency: 500, amplitude: 0.4, frames: 96000, channels: 2))
        player.play()
        var rendered = 0
        func levels() throws -> (left: Double, right: Double) {
            rendered += 12000
            let out = try AVAudioEngineOfflineTests.render(engine, total: rendered)
            try #require(out[0].count == 12000)
            return (toneAmplitude(out[0], freq: 500, rate: 48000, from: 2400, count: 9600),
                    toneAmplitude(out[1], freq: 500, rate: 48000, from: 2400, count: 9600))
        }
        let first = try levels()
        print("fan-out: destination volumes 0.8 / 0.2 -> left \(first.left), right \(first.right)")
        #expect(abs(first.left - 0.32) < 0.01, "path 1 at 0.8: \(first.left)")
        #expect(abs(first.right - 0.08) < 0.01, "path 2 at 0.2: \(first.right)")

        // Pan at one destination: the player hard right at the left mixer, whose output the
        // main mixer takes only on the left, silences that path alone.
        toLeft.pan = 1
        let panned = try levels()
        print("fan-out: left destination panned right -> left \(panned.left), right \(panned.right)")
        #expect(panned.left < 0.002 && abs(panned.right - 0.08) < 0.01, "only path 1 moved: \(panned.left), \(panned.right)")

        // The node-level setters apply to every destination.
        player.volume = 0.5
        player.pan = 0
        #expect(toLeft.volume == 0.5 && toRight.volume == 0.5 && toLeft.pan == 0)
        let second = try levels()
        print("fan-out: node volume 0.5 -> left \(second.left), right \(second.right)")
        #expect(abs(second.left - 0.2) < 0.01 && abs(second.right - 0.2) < 0.01, "both at 0.5: \(second.left), \(second.right)")

        // One destination again: only its path changes.
        toRight.volume = 0
        let third = try levels()
        #expect(abs(third.left - 0.2) < 0.01 && third.right < 0.002, "only the right path silenced: \(third.left), \(third.right)")
    }
}
