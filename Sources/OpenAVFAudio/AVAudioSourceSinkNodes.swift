// AVAudioSourceNode and AVAudioSinkNode: user blocks that supply or receive audio on the render
// thread, over small OATUnits nodes that call them with no lock and no allocation around them.
import Foundation
import OpenAudioToolbox
internal import OATUnits

/// The block of an ``AVAudioSourceNode`` (Apple's `AVAudioSourceNodeRenderBlock`): fill
/// `frameCount` frames into the buffers of `outputData` (or point their `mData` at memory of
/// yours that stays valid until the next render), set `isSilence` when they are all zeros,
/// return `noErr` (any other status: the engine renders silence for this call).
public typealias AVAudioSourceNodeRenderBlock = (UnsafeMutablePointer<ObjCBool>, UnsafePointer<AudioTimeStamp>, AVAudioFrameCount,
                                                 UnsafeMutablePointer<AudioBufferList>) -> OSStatus

/// The block of an ``AVAudioSinkNode`` (Apple's `AVAudioSinkNodeReceiverBlock`): `frameCount`
/// frames of the audio coming in, valid only during the call.
public typealias AVAudioSinkNodeReceiverBlock = (UnsafePointer<AudioTimeStamp>, AVAudioFrameCount, UnsafePointer<AudioBufferList>) -> OSStatus

/// A node whose audio comes from a block (Apple's `AVAudioSourceNode`).
///
/// Thread safety: the block runs on the render thread when the engine renders to a device (on
/// the caller's thread in offline manual rendering), as on Apple: it must not block, lock or
/// allocate. The engine calls it with none of its own locks held and nothing allocated around
/// it. It receives non-interleaved Float32 buffers (one per channel) in the node's format.
open class AVAudioSourceNode: AVAudioNode, AVAudioMixing, @unchecked Sendable {
    let renderBlock: AVAudioSourceNodeRenderBlock
    /// The format the block renders in (nil: the output connection's format).
    let blockFormat: AVAudioFormat?

    /// Linear gain at the mixer this node feeds, 0 ... 1.
    open var volume: Float = 1 { didSet { mixingSetOnNode(volume: volume) } }
    /// Stereo position at the mixer this node feeds, -1 ... 1.
    open var pan: Float = 0 { didSet { mixingSetOnNode(pan: pan) } }

    /// A source node whose block renders in the format of its output connection.
    public init(renderBlock block: @escaping AVAudioSourceNodeRenderBlock) {
        renderBlock = block
        blockFormat = nil
        super.init(inputs: 0, outputs: 1)
    }

    /// A source node whose block renders in `format` (the engine converts its rate and channel
    /// count to the output connection's, as Apple's does).
    public init(format: AVAudioFormat, renderBlock block: @escaping AVAudioSourceNodeRenderBlock) {
        renderBlock = block
        blockFormat = format
        super.init(inputs: 0, outputs: 1)
    }

    override func makeUnit(rate: Double, inputChannels: Int, outputChannels: Int) -> OATUnits.RenderNode {
        SourceBlockUnit(channels: blockFormat.map { Int($0.channelCount) } ?? outputChannels, block: renderBlock)
    }
}

/// A node that hands the audio coming into it to a block (Apple's `AVAudioSinkNode`).
///
/// On Apple a sink sits in the input chain of a device-rendering engine. Here it may take any
/// node's output and works in offline manual rendering too; it has no output bus (no tap).
/// Thread safety: the block runs on the render thread, with no lock held and nothing allocated
/// around it; it must not block, lock or allocate.
open class AVAudioSinkNode: AVAudioNode, @unchecked Sendable {
    let receiverBlock: AVAudioSinkNodeReceiverBlock

    /// A sink node calling `block` with each render's input.
    public init(receiverBlock block: @escaping AVAudioSinkNodeReceiverBlock) {
        receiverBlock = block
        super.init(inputs: 1, outputs: 0)
    }

    override func makeUnit(rate: Double, inputChannels: Int, outputChannels: Int) -> OATUnits.RenderNode {
        SinkBlockUnit(channels: Int(inputFormat(forBus: 0).channelCount), block: receiverBlock)
    }
}

/// Renders a source node's block into the graph's buffers. Everything the call needs (the
/// buffer list, the time stamp, the silence flag) is allocated here, before rendering.
final class SourceBlockUnit: OATUnits.RenderNode, @unchecked Sendable {
    private let block: AVAudioSourceNodeRenderBlock
    private let list: UnsafeMutableAudioBufferListPointer
    private let time: UnsafeMutablePointer<AudioTimeStamp>
    private let silence: UnsafeMutablePointer<ObjCBool>

    init(channels: Int, block: @escaping AVAudioSourceNodeRenderBlock) {
        self.block = block
        list = AudioBufferList.allocate(maximumBuffers: max(1, channels))
        time = .allocate(capacity: 1)
        time.initialize(to: AudioTimeStamp())
        silence = .allocate(capacity: 1)
        silence.initialize(to: false)
        super.init(name: "AVAudioSourceNode", inputChannels: [], outputChannels: [max(1, channels)])
    }

    deinit {
        free(list.unsafeMutablePointer)
        time.deallocate()
        silence.deallocate()
    }

    override func render(_ context: AURenderContext) {
        let out = context.output(0)
        let frames = context.frames
        let bytes = UInt32(frames * MemoryLayout<Float>.size)
        for c in 0..<out.channelCount {
            list[c] = AudioBuffer(mNumberChannels: 1, mDataByteSize: bytes, mData: UnsafeMutableRawPointer(out[c]))
        }
        var ts = AudioTimeStamp()
        ts.mSampleTime = Float64(context.sampleTime)
        ts.mHostTime = context.hostTime
        ts.mFlags = context.hostTime != 0 ? kAudioTimeStampSampleHostTimeValid : kAudioTimeStampSampleTimeValid
        time.pointee = ts
        silence.pointee = false
        let status = block(silence, UnsafePointer(time), AVAudioFrameCount(frames), list.unsafeMutablePointer)
        for c in 0..<out.channelCount {
            if status != noErr { out[c].update(repeating: 0, count: frames); continue }
            // The block may have pointed the buffer at memory of its own.
            if let data = list[c].mData, data != UnsafeMutableRawPointer(out[c]) {
                let n = min(frames, Int(list[c].mDataByteSize) / MemoryLayout<Float>.size)
                out[c].update(from: data.assumingMemoryBound(to: Float.self), count: n)
                if n < frames { (out[c] + n).update(repeating: 0, count: frames - n) }
            }
        }
    }
}

/// Pulls a sink node's input and hands it to its block; its one output is silent (it only
/// exists so that the engine's output pulls the sink, through `SinkJoinUnit`).
final class SinkBlockUnit: OATUnits.RenderNode, @unchecked Sendable {
    private let block: AVAudioSinkNodeReceiverBlock
    private let list: UnsafeMutableAudioBufferListPointer
    private let time: UnsafeMutablePointer<AudioTimeStamp>

    init(channels: Int, block: @escaping AVAudioSinkNodeReceiverBlock) {
        self.block = block
        list = AudioBufferList.allocate(maximumBuffers: max(1, channels))
        time = .allocate(capacity: 1)
        time.initialize(to: AudioTimeStamp())
        super.init(name: "AVAudioSinkNode", inputChannels: [max(1, channels)], outputChannels: [1])
    }

    deinit {
        free(list.unsafeMutablePointer)
        time.deallocate()
    }

    override func render(_ context: AURenderContext) {
        let input = context.input(0)
        let frames = context.frames
        let bytes = UInt32(frames * MemoryLayout<Float>.size)
        for c in 0..<min(list.count, input.channelCount) {
            list[c] = AudioBuffer(mNumberChannels: 1, mDataByteSize: bytes, mData: UnsafeMutableRawPointer(input[c]))
        }
        var ts = AudioTimeStamp()
        ts.mSampleTime = Float64(context.sampleTime)
        ts.mHostTime = context.hostTime
        ts.mFlags = context.hostTime != 0 ? kAudioTimeStampSampleHostTimeValid : kAudioTimeStampSampleTimeValid
        time.pointee = ts
        _ = block(UnsafePointer(time), AVAudioFrameCount(frames), list.unsafePointer)
        context.output(0).silence()
    }
}

/// Sits before the graph's output when the engine has sink nodes: passes input 0 (what the
/// output would have played) through untouched and pulls inputs 1... (the sinks) so that they
/// render every slice.
final class SinkJoinUnit: OATUnits.RenderNode, @unchecked Sendable {
    init(channels: Int, sinks: Int) {
        super.init(name: "sink join", inputChannels: [channels] + Array(repeating: 1, count: sinks), outputChannels: [channels])
    }

    override func render(_ context: AURenderContext) {
        for bus in 1..<max(1, context.inputCount) { _ = context.input(bus) }
        context.output(0).copy(from: context.input(0))
    }
}
