// The input node in manual rendering mode: its audio comes from a block of the app's
// (Apple's `setManualRenderingInputPCMFormat(_:inputBlock:)`) instead of a capture device; and
// which nodes the engine renders (a node's lastRenderTime is nil outside the rendering graph).
import Foundation
import OpenAudioToolbox
internal import OATUnits
import Synchronization

/// The block an input node pulls in manual rendering mode (Apple's `AVAudioIONodeInputBlock`):
/// return an `AudioBufferList` holding the number of frames asked for, in the format given to
/// ``AVAudioInputNode/setManualRenderingInputPCMFormat(_:inputBlock:)``, valid until the next
/// call; or nil when there is no data (the input renders silence and the render reports
/// `.insufficientDataFromInputNode`).
public typealias AVAudioIONodeInputBlock = (AVAudioFrameCount) -> UnsafePointer<AudioBufferList>?

/// Set by the render when the input block gave no data or fewer frames than asked for; read
/// (and cleared) after each manual render, offline or real time. One per engine.
final class ManualInputStarvation: Sendable {
    let flag = Atomic<Bool>(false)
}

/// An input block with its format (one per call of `setManualRenderingInputPCMFormat`).
final class ManualInputSource: @unchecked Sendable {
    let format: AVAudioFormat
    let block: AVAudioIONodeInputBlock

    init(format: AVAudioFormat, block: @escaping AVAudioIONodeInputBlock) {
        self.format = format
        self.block = block
    }

    /// Formats the render reads: linear PCM, Float32 or Int16, interleaved or not.
    static func supports(_ format: AVAudioFormat) -> Bool {
        format.commonFormat == .pcmFormatFloat32 || format.commonFormat == .pcmFormatInt16
    }
}

/// Renders an input block's audio into the graph: the block is called with the slice's frame
/// count and its buffers are copied (converted to Float32 planar) with nothing allocated.
final class ManualInputUnit: OATUnits.RenderNode, @unchecked Sendable {
    let source: ManualInputSource
    private let starvation: ManualInputStarvation
    private let interleaved: Bool
    private let int16: Bool

    init(source: ManualInputSource, starvation: ManualInputStarvation) {
        self.source = source
        self.starvation = starvation
        interleaved = source.format.isInterleaved
        int16 = source.format.commonFormat == .pcmFormatInt16
        super.init(name: "AVAudioInputNode manual input", inputChannels: [], outputChannels: [max(1, Int(source.format.channelCount))])
    }

    override func render(_ context: AURenderContext) {
        let out = context.output(0)
        let frames = context.frames
        let channels = out.channelCount
        guard let pointer = source.block(AVAudioFrameCount(frames)) else {
            out.silence()
            starvation.flag.store(true, ordering: .relaxed)
            return
        }
        let list = UnsafeMutableAudioBufferListPointer(UnsafeMutablePointer(mutating: pointer))
        let sampleBytes = int16 ? 2 : 4
        // Apple: a block gives the frames asked for or none; fewer are not used.
        var complete = list.count >= (interleaved ? 1 : channels)
        if complete {
            for b in 0..<(interleaved ? 1 : channels) {
                let need = frames * sampleBytes * (interleaved ? channels : 1)
                if list[b].mData == nil || Int(list[b].mDataByteSize) < need { complete = false }
            }
        }
        guard complete else {
            out.silence()
            starvation.flag.store(true, ordering: .relaxed)
            return
        }
        for c in 0..<channels {
            let data = interleaved ? list[0].mData! : list[c].mData!
            let step = interleaved ? channels : 1
            let first = interleaved ? c : 0
            if int16 {
                let s = data.assumingMemoryBound(to: Int16.self)
                for f in 0..<frames { out[c][f] = Float(s[f * step + first]) / 32768 }
            } else {
                let s = data.assumingMemoryBound(to: Float.self)
                for f in 0..<frames { out[c][f] = s[f * step + first] }
            }
        }
    }
}

extension AVAudioEngine {
    /// True when `node` is in the graph the engine renders: it is the output node, or a chain
    /// of connections leads from it to the output node (or to a sink node, which the output
    /// pulls). An attached node that is not connected there is not rendered.
    func isInRenderChain(_ node: AVAudioNode) -> Bool {
        lock.lock()
        let edges = connections
        lock.unlock()
        var seen: Set<ObjectIdentifier> = []
        func reaches(_ n: AVAudioNode) -> Bool {
            if n === outputNode || n is AVAudioSinkNode { return true }
            guard seen.insert(ObjectIdentifier(n)).inserted else { return false }
            return edges.contains { $0.source === n && reaches($0.destination) }
        }
        return reaches(node)
    }

    /// After a manual render: true (and cleared) when the input node's block gave no data.
    func takeInputStarved() -> Bool {
        manualInputStarvation.flag.exchange(false, ordering: .relaxed)
    }
}
