// AVAudioEngine's manual rendering: enabling and disabling it, its format and sample time, and
// offline rendering into buffers you pull (renderOffline). The real-time variant's block
// (manualRenderingBlock) is in AVAudioEngine+IO.swift.
import Foundation
import OpenAudioToolbox
internal import OATUnits
internal import OATCore

extension AVAudioEngine {
    /// ``enableManualRenderingMode(_:format:maximumFrameCount:)``.
    func enableManualRendering(_ mode: AVAudioEngineManualRenderingMode, format pcmFormat: AVAudioFormat,
                               maximumFrameCount: AVAudioFrameCount) throws {
        lock.lock(); defer { lock.unlock() }
        guard !running else { throw avError(kAudioUnitErr_CannotDoInCurrentContext, "AVAudioEngine: stop the engine before enabling manual rendering") }
        guard pcmFormat.streamDescription.pointee.mFormatID == kAudioFormatLinearPCM, maximumFrameCount > 0 else {
            throw avError(kAudioUnitErr_FormatNotSupported, "AVAudioEngine: manual rendering needs a PCM format and a frame count")
        }
        manualMode = mode
        manualFormat = pcmFormat
        manualMaximum = maximumFrameCount
        manualTime = 0
        dirty = true
    }

    /// ``disableManualRenderingMode()``.
    func disableManualRendering() {
        lock.lock(); defer { lock.unlock() }
        stopRealtimeManual()
        manualStarted = false
        manualMode = nil
        manualFormat = nil
        inputNodeStorage?.manualInput = nil
        dirty = true
    }

    /// Apple's `AVAudioEngineManualRenderingError.invalidMode`: not in (that variant of) manual rendering.
    static let manualRenderingInvalidMode: OSStatus = -80800
    /// Apple's `AVAudioEngineManualRenderingError.notRunning`: the engine is not started.
    static let manualRenderingNotRunning: OSStatus = -80802

    /// ``renderOffline(_:to:)``: players read their schedule synchronously first, then the
    /// graph renders into scratch channels written into `buffer`; taps are drained.
    func renderManually(_ numberOfFrames: AVAudioFrameCount, to buffer: AVAudioPCMBuffer) throws -> AVAudioEngineManualRenderingStatus {
        lock.lock(); defer { lock.unlock() }
        guard manualMode == .offline, let format = manualFormat else {
            throw avError(AVAudioEngine.manualRenderingInvalidMode, "AVAudioEngine.renderOffline: the engine is not in offline manual rendering mode")
        }
        // As Apple's: rendering needs a started engine (AVAudioEngineManualRenderingError.notRunning).
        guard manualStarted else {
            throw avError(AVAudioEngine.manualRenderingNotRunning, "AVAudioEngine.renderOffline: the engine is not running (call start() first)")
        }
        guard numberOfFrames <= manualMaximum, numberOfFrames <= buffer.frameCapacity else {
            throw avError(kAudioUnitErr_TooManyFramesToProcess, "AVAudioEngine.renderOffline: \(numberOfFrames) frames is more than the maximum \(manualMaximum) or the buffer's \(buffer.frameCapacity)")
        }
        if dirty || graph == nil { try build() }
        guard let graph else { return .error }
        let frames = Int(numberOfFrames)
        for node in attached { (node as? AVAudioPlayerNode)?.fillForOffline(frames: frames, rate: renderRate) }
        let channels = Int(format.channelCount)
        let scratch = UnsafeMutablePointer<Float>.allocate(capacity: max(1, frames * channels))
        defer { scratch.deallocate() }
        let pointers = UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>.allocate(capacity: channels)
        defer { pointers.deallocate() }
        for c in 0..<channels { pointers[c] = scratch + c * frames }
        _ = takeInputStarved()
        graph.render(into: pointers, frames: frames)
        try writeRendered(pointers, frames: frames, into: buffer)
        manualTime += AVAudioFramePosition(frames)
        let starved = takeInputStarved()
        for node in attached {
            for (_, tap) in node.taps {
                let f = tap.format ?? AVAudioFormat(standardFormatWithSampleRate: renderRate, channels: AVAudioChannelCount(tap.node?.inputChannels[0] ?? 2))!
                tap.drain(format: f)
            }
        }
        return starved ? .insufficientDataFromInputNode : .success
    }
}
