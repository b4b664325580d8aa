// Issue 26 §3: AVAudioEnvironmentNode in an engine (player -> environment -> main mixer), rendered
// offline: a source to the right is louder and earlier on the right, distance follows the model,
// the listener's orientation turns the scene.
import Foundation
import OpenAVFAudio
import Testing

@Suite struct AVAudioEnvironmentNodeTests {
    static let stereo = AVAudioFormat(standardFormatWithSampleRate: 48000, channels: 2)!
    static let mono = AVAudioFormat(standardFormatWithSampleRate: 48000, channels: 1)!

    /// One second of deterministic noise (or a 1 kHz sine), mono.
    static func signal(noise: Bool) throws -> AVAudioPCMBuffer {
        let b = try #require(AVAudioPCMBuffer(pcmFormat: mono, frameCapacity: 48000))
        var s: UInt32 = 777
        for i in 0..<48000 {
            if noise {
                s = s &* 1_664_525 &+ 1_013_904_223
                b.floatChannelData![0][i] = (Float(s >> 8) / Float(1 << 24) * 2 - 1) * 0.4
            } else {
                b.floatChannelData![0][i] = Float(0.4 * sin(2 * Double.pi * 1000 * Double(i) / 48000))
            }
        }
        b.frameLength = 48000
        return b
    }

    /// An engine in offline manual rendering with player -> environment -> main mixer.
    static func makeEngine(noise: Bool) throws -> (AVAudioEngine, AVAudioPlayerNode, AVAudioEnvironmentNode) {
        let engine = AVAudioEngine()
        try engine.enableManualRenderingMode(.offline, format: stereo, maximumFrameCount: 1024)
        let player = AVAudioPlayerNode()
        let environment = AVAudioEnvironmentNode()
        engine.attach(player)
        engine.attach(environment)
        engine.connect(player, to: environment, format: mono)
        engine.connect(environment, to: engine.mainMixerNode, format: stereo)
        player.scheduleBuffer(try signal(noise: noise), at: nil, options: .loops)
        return (engine, player, environment)
    }

    /// Renders `frames` frames; left and right.
    static func render(_ engine: AVAudioEngine, frames: Int) throws -> (left: [Float], right: [Float]) {
        let out = try #require(AVAudioPCMBuffer(pcmFormat: stereo, frameCapacity: 1024))
        var l: [Float] = [], r: [Float] = []
        while l.count < frames {
            let status = try engine.renderOffline(AVAudioFrameCount(min(1024, frames - l.count)), to: out)
            #expect(status == .success)
            let n = Int(out.frameLength)
            l += Array(UnsafeBufferPointer(start: out.floatChannelData![0], count: n))
            r += Array(UnsafeBufferPointer(start: out.floatChannelData![1], count: n))
        }
        return (l, r)
    }

    static func rms(_ x: ArraySlice<Float>) -> Double {
        (x.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(1, x.count))).squareRoot()
    }

    static func lag(_ a: [Float], _ b: [Float], range: Range<Int>, maxLag: Int) -> Int {
        var best = 0, bestValue = -Double.infinity
        for lag in -maxLag...maxLag {
            var s = 0.0
            for i in range where i - lag >= 0 && i - lag < a.count { s += Double(a[i - lag]) * Double(b[i]) }
            if s > bestValue { bestValue = s; best = lag }
        }
        return best
    }

    @Test("A source 1 m to the right is louder and earlier on the right ear (spherical head and HRTF)")
    func sourceToTheRight() throws {
        for algorithm in [AVAudio3DMixingRenderingAlgorithm.sphericalHead, .HRTF] {
            let (engine, player, environment) = try Self.makeEngine(noise: true)
            player.renderingAlgorithm = algorithm
            player.position = AVAudioMake3DPoint(1, 0, 0)
            #expect(environment.applicableRenderingAlgorithms.contains(NSNumber(value: algorithm.rawValue)))
            try engine.start()
            player.play()
            let out = try Self.render(engine, frames: 9600)
            let lag = Self.lag(out.right, out.left, range: 2000..<9000, maxLag: 80)
            let itd = Double(lag) / 48 // ms
            let ild = 20 * log10(Self.rms(out.right[2000...]) / Self.rms(out.left[2000...]))
            print("AVAudioEnvironmentNode \(algorithm) at (1, 0, 0): ITD \(itd) ms, ILD \(ild) dB")
            #expect(itd > 0.5 && itd < 0.9, "\(algorithm): ITD \(itd) ms")
            #expect(ild > 3, "\(algorithm): ILD \(ild) dB")
            engine.stop()
        }
    }

    @Test("Distance follows the inverse model; the listener's orientation turns the scene")
    func distanceAndListener() throws {
        let (engine, player, environment) = try Self.makeEngine(noise: false)
        #expect(environment.distanceAttenuationParameters.distanceAttenuationModel == .inverse)
        environment.distanceAttenuationParameters.rolloffFactor = 2
        player.position = AVAudioMake3DPoint(0, 0, -1)
        try engine.start()
        player.play()
        let near = try Self.render(engine, frames: 4800)
        player.position = AVAudioMake3DPoint(0, 0, -3)
        let far = try Self.render(engine, frames: 4800)
        let drop = 20 * log10(Self.rms(far.left[2400...]) / Self.rms(near.left[2400...]))
        let want = 20 * log10(1.0 / (1 + 2 * 2))
        print("AVAudioEnvironmentNode inverse, rolloff 2, 1 m -> 3 m: \(drop) dB (model \(want) dB)")
        #expect(abs(drop - want) < 0.3, "\(drop) dB, want \(want)")
        // The listener turns 90° to the left: the source ahead is now on the right.
        environment.listenerAngularOrientation = AVAudioMake3DAngularOrientation(-90, 0, 0)
        #expect(abs(environment.listenerVectorOrientation.forward.x + 1) < 1e-5)
        let turned = try Self.render(engine, frames: 4800)
        let l = Self.rms(turned.left[2400...]), r = Self.rms(turned.right[2400...])
        print("listener turned left: left \(l), right \(r)")
        #expect(r > 0.03 && l < r * 0.01, "left \(l) right \(r)")
        // Obstruction lowers the level (the 1 kHz tone, a low-pass of −40 dB at 5 kHz).
        player.obstruction = -40
        let obstructed = try Self.render(engine, frames: 4800)
        #expect(Self.rms(obstructed.right[2400...]) < r * 0.5)
        engine.stop()
    }
}
