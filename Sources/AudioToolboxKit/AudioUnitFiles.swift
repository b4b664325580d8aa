import OATCore
import OATUnits
import Synchronization

extension AUPlayerNode {
    /// Plays `paths` one after another (gaplessly) through an ``ExtendedAudioFile`` per file,
    /// decoded and resampled to the graph's rate by its `AudioConverter` on the player's feeder
    /// thread; channels are mapped to the player's (mono is duplicated, extra channels dropped).
    ///
    /// Add the player to its graph first (the graph rate is known then). The first file is
    /// opened here, so a missing or unreadable first file throws; later failures end the input
    /// and are reported by `AUPlayerNode.error`. `startSeconds` skips into the first file;
    /// `durationSeconds` limits the total.
    public func scheduleFiles(_ paths: [String], startSeconds: Double = 0, durationSeconds: Double? = nil) throws(AudioError) {
        guard isPrepared else {
            throw AudioError(.invalidState, component: "AUPlayerNode", "add the player to a graph before scheduling files")
        }
        guard let firstPath = paths.first else {
            throw AudioError(.invalidArgument, component: "AUPlayerNode", "no file to play")
        }
        let rate = sampleRate
        let outChannels = channels
        func open(_ path: String) throws(AudioError) -> ExtendedAudioFile {
            let probe = try AudioFile(path: path)
            let ch = max(1, probe.dataFormat.channelsPerFrame)
            return try ExtendedAudioFile(path: path, clientFormat: .linearPCM(sampleRate: rate, channels: ch, bitsPerChannel: 32, isFloat: true))
        }
        let first = try open(firstPath)
        if startSeconds > 0 {
            try first.seek(toFrame: min(first.frameCount, InputArithmetic.frames(seconds: startSeconds, sampleRate: first.file.dataFormat.sampleRate)))
        }
        final class FeedState: @unchecked Sendable {
            var file: ExtendedAudioFile?
            var index = 0
            var buffer: AudioPCMBuffer?
            var remaining: Int64?
        }
        let state = FeedState()
        state.file = first
        state.remaining = durationSeconds.map { InputArithmetic.frames(seconds: $0, sampleRate: rate) }
        play(from: { (out: UnsafeMutableBufferPointer<Float>) throws(AudioError) -> Int in
            let wanted = out.count / outChannels
            while true {
                if let r = state.remaining, r <= 0 { return 0 }
                guard let file = state.file else { return 0 }
                let ch = Int(file.clientFormat.channelsPerFrame)
                if state.buffer == nil || state.buffer!.format != file.clientFormat || state.buffer!.frameCapacity < wanted {
                    state.buffer = try AudioPCMBuffer(format: file.clientFormat, frameCapacity: wanted)
                }
                let buffer = state.buffer!
                var n = try file.read(into: buffer)
                if n == 0 {
                    state.index += 1
                    state.file = state.index < paths.count ? try open(paths[state.index]) : nil
                    continue
                }
                if let r = state.remaining { n = min(n, Int(r)); state.remaining = r - Int64(n) }
                guard let src = buffer.floatChannel(0) else { return 0 }
                for f in 0..<n {
                    for c in 0..<outChannels {
                        out[f * outChannels + c] = src[f * ch + (c < ch ? c : (ch == 1 ? 0 : c % ch))]
                    }
                }
                return n
            }
        })
    }
}
