// The AVAudioEngine scenario of render-alloc-bench: an engine graph (player -> EQ -> reverb ->
// main mixer, plus a source node at 44.1 kHz that the mixer resamples to the engine's 48 kHz)
// playing to a real device. The source node's block runs on the device's render thread: after
// the warm-up calls it opens the counting window on that thread, which stays open between calls
// (so the engine's graph render and the device loop count), until the control side asks it to
// close. Meanwhile the control thread changes volumes, pans, the EQ gain and the reverb mix.

import BenchSupport
import Foundation
import MallocCounter
import OpenAVFAudio
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The source node's state, touched on the render thread only (read after the engine stopped),
/// except the atomics.
final class EngineProbe: @unchecked Sendable {
    let warmupCalls: Int
    var calls = 0
    var measuredCalls = 0
    var measuredFrames = 0
    var phase = 0.0
    let closeWindow = Atomic<Bool>(false)
    private var open = false
    private var closed = false

    init(warmupCalls: Int) { self.warmupCalls = warmupCalls }

    /// Called first in every render of the source block.
    func enter(frames: Int) {
        calls += 1
        if !open && !closed && calls > warmupCalls {
            open = true
            _ = oat_mc_set_flags(windowFlag)
        }
        if open {
            if closeWindow.load(ordering: .acquiring) {
                _ = oat_mc_set_flags(0)
                open = false
                closed = true
                return
            }
            measuredCalls += 1
            measuredFrames += frames
        }
    }
}

/// Plays the engine graph on `spec` (an `OAT_OUTPUT` value) for `seconds` and reports what was
/// allocated on the render thread once warm.
func runAVEngine(_ kind: String, spec: String, options: Options) -> KindResult {
    var result = KindResult(kind: kind, device: "AVAudioEngine on \(spec)")
    setenv("OAT_OUTPUT", spec, 1)
    let engine = AVAudioEngine()
    let player = AVAudioPlayerNode()
    let eq = AVAudioUnitEQ(numberOfBands: 2)
    eq.bands[0].filterType = .lowShelf
    eq.bands[0].frequency = 200
    eq.bands[0].gain = 3
    eq.bands[0].bypass = false
    eq.bands[1].filterType = .parametric
    eq.bands[1].frequency = 2000
    eq.bands[1].bypass = false
    let reverb = AVAudioUnitReverb()
    reverb.loadFactoryPreset(.mediumHall)
    reverb.wetDryMix = 30
    let probe = EngineProbe(warmupCalls: options.warmupCalls)
    let sourceFormat = AVAudioFormat(standardFormatWithSampleRate: 44100, channels: 2)!
    let source = AVAudioSourceNode(format: sourceFormat) { _, _, frameCount, data in
        probe.enter(frames: Int(frameCount))
        let buffers = UnsafeMutableAudioBufferListPointer(data)
        var phase = probe.phase
        let step = 2 * Double.pi * 660 / 44100
        for f in 0..<Int(frameCount) {
            let v = Float(0.1 * sin(phase))
            for b in 0..<buffers.count { buffers[b].mData!.assumingMemoryBound(to: Float.self)[f] = v }
            phase += step
        }
        probe.phase = phase.truncatingRemainder(dividingBy: 2 * Double.pi)
        return noErr
    }
    let format = AVAudioFormat(standardFormatWithSampleRate: 48000, channels: 2)!
    for node in [player, eq, reverb, source] as [AVAudioNode] { engine.attach(node) }
    engine.connect(player, to: eq, format: format)
    engine.connect(eq, to: reverb, format: format)
    engine.connect(reverb, to: engine.mainMixerNode, format: format)
    engine.connect(source, to: engine.mainMixerNode, format: sourceFormat)
    let tone = AVAudioPCMBuffer(pcmFormat: format, frameCapacity: 4800)!
    for c in 0..<2 { for i in 0..<4800 { tone.floatChannelData![c][i] = Float(0.3 * sin(2 * Double.pi * 440 * Double(i) / 48000)) } }
    tone.frameLength = 4800
    player.scheduleBuffer(tone, at: nil, options: .loops)
    oat_mc_reset()
    do { try engine.start() } catch {
        result.skipped = "\(error)"
        return result
    }
    player.play()
    let t0 = monotonicSeconds()
    var loud = true
    var lastFlip = t0
    while monotonicSeconds() - t0 < options.seconds * Double(options.cycles) {
        let t = monotonicSeconds() - t0
        if monotonicSeconds() - lastFlip > 0.07 {
            loud.toggle()
            lastFlip = monotonicSeconds()
            player.volume = loud ? 1 : 0.5
            eq.bands[1].gain = loud ? 6 : -6
            reverb.wetDryMix = loud ? 30 : 50
        }
        player.pan = Float(sin(t * 3))
        source.pan = Float(-sin(t * 3))
        usleep(3_000)
    }
    probe.closeWindow.store(true, ordering: .releasing)
    usleep(300_000)   // a few more renders: the block closes the window on the next one
    player.stop()
    engine.stop()
    note("render-alloc-bench: \(kind): \(probe.calls) renders of the source node, \(probe.measuredCalls) counted")
    result.measuredCalls = probe.measuredCalls
    result.measuredFrames = probe.measuredFrames
    result.requestedFrames = probe.measuredFrames
    collectAllocations(into: &result)
    return result
}
