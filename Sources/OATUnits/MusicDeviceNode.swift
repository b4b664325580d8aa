import OATCore
import Synchronization

/// One MIDI channel message for a music device: status byte, two data bytes, and where in a
/// render slice it lands (frames from the slice's first frame).
public struct MIDIChannelEvent: BitwiseCopyable, Sendable, Equatable {
    /// Frames from the first frame of the slice the event lands in.
    public var offset: UInt32
    /// Status byte (0x80...0xEF: note off/on, aftertouch, controller, program, pressure, bend).
    public var status: UInt8
    /// First data byte.
    public var data1: UInt8
    /// Second data byte (0 for two-byte messages).
    public var data2: UInt8

    /// Creates an event.
    public init(offset: UInt32, status: UInt8, data1: UInt8, data2: UInt8) {
        self.offset = offset
        self.status = status
        self.data1 = data1
        self.data2 = data2
    }
}

/// Events scheduled on a music device's timeline, read by the device on its render thread: what
/// a sequence player (``MusicDeviceNode/setEventSource(_:)``) hands a device so that each event
/// lands on the frame its time maps to, whatever size the slices are and whether a clock paces
/// the graph or not.
public protocol MIDIEventSource: AnyObject, Sendable {
    /// Render thread: calls `body` for every event whose frame falls in the slice of `frames`
    /// frames that starts at `sampleTime` on the device's timeline, in time order, with its
    /// offset in the slice. Called once per slice, slices in order. Real-time safe: no
    /// allocation, lock, log or user code.
    func forEachEvent(inSliceAt sampleTime: Int64, frames: Int, _ body: (MIDIChannelEvent) -> Void)
}

/// A node that makes sound from MIDI (Apple's music devices, `kAudioUnitType_MusicDevice`):
/// a source with one stereo (or `outputChannels`) output bus and no input.
///
/// Messages come two ways, both landing on their frame: ``send(_:)`` from any thread (Apple's
/// `MusicDeviceMIDIEvent`, its offset counted in the next slice the device renders) and an
/// ``MIDIEventSource`` (a sequence player). The node splits each slice at the events' offsets
/// and calls ``handle(_:)`` then ``synthesize(into:from:count:)`` for each part, on the render
/// thread. Subclasses implement those two (and ``handleSysEx(_:)``); they must be real-time safe.
open class MusicDeviceNode: RenderNode, @unchecked Sendable {
    /// The most events one slice takes from ``send(_:)`` and from the source together; later
    /// ones wait for the next slice (their offset then counts as 0).
    public static let maxEventsPerSlice = 1024

    private let live: SPSCRingBuffer<MIDIChannelEvent>
    private let producer = Locked(())
    private let sysex: SPSCRingBuffer<UInt8>
    private let sysexProducer = Locked(())
    private let droppedEvents = Atomic<Int>(0)
    private let sourceSlot = Atomic<UnsafeMutableRawPointer?>(nil)
    private let sourceInUse = Atomic<UnsafeMutableRawPointer?>(nil)
    private let sourceLock = Locked(())
    private let scratch: UnsafeMutablePointer<MIDIChannelEvent>
    private let sysexScratch: UnsafeMutablePointer<UInt8>
    private static let sysexScratchSize = 4096

    /// The source, boxed so the render thread reads it without a dynamic cast.
    private final class SourceBox {
        let source: any MIDIEventSource
        init(_ source: any MIDIEventSource) { self.source = source }
    }

    /// Creates a music device with one output bus of `outputChannels` channels.
    public init(name: String, outputChannels: Int = 2, parameters: [NodeParameter] = []) {
        live = SPSCRingBuffer(minimumCapacity: 4096, zero: MIDIChannelEvent(offset: 0, status: 0, data1: 0, data2: 0))
        sysex = SPSCRingBuffer(minimumCapacity: 16384, zero: 0)
        scratch = .allocate(capacity: Self.maxEventsPerSlice)
        sysexScratch = .allocate(capacity: Self.sysexScratchSize)
        super.init(name: name, inputChannels: [], outputChannels: [outputChannels], parameters: parameters)
    }

    deinit {
        if let p = sourceSlot.exchange(nil, ordering: .sequentiallyConsistent) {
            Unmanaged<SourceBox>.fromOpaque(p).release()
        }
        scratch.deallocate()
        sysexScratch.deallocate()
    }

    /// Messages lost because the queue of ``send(_:)`` was full (4096 waiting).
    public var droppedEventCount: Int { droppedEvents.load(ordering: .relaxed) }

    /// Any thread: queues a channel message for the next slice the device renders, at
    /// `event.offset` frames into it (Apple's `MusicDeviceMIDIEvent`). False when the queue is
    /// full (the message is dropped and counted) or the status byte is not a channel message.
    @discardableResult
    public func send(_ event: MIDIChannelEvent) -> Bool {
        guard event.status >= 0x80, event.status < 0xF0 else { return false }
        var e = event
        e.data1 &= 0x7F
        e.data2 &= 0x7F
        let written = producer.withLock { _ in withUnsafePointer(to: e) { live.write(UnsafeBufferPointer(start: $0, count: 1)) } }
        if written == 0 { droppedEvents.add(1, ordering: .relaxed); return false }
        return true
    }

    /// Any thread: queues a System Exclusive message (`F0 ... F7`, at most 4096 bytes) for the
    /// next slice (Apple's `MusicDeviceSysEx`). False when it is malformed or does not fit.
    @discardableResult
    public func sendSysEx(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard bytes.count >= 2, bytes.count <= Self.sysexScratchSize, bytes.first == 0xF0, bytes.last == 0xF7 else { return false }
        return sysexProducer.withLock { _ -> Bool in
            guard sysex.availableToWrite >= bytes.count + 2 else { return false }
            var length = (UInt8(truncatingIfNeeded: bytes.count >> 8), UInt8(truncatingIfNeeded: bytes.count))
            _ = withUnsafeBytes(of: &length) { sysex.write($0.bindMemory(to: UInt8.self)) }
            sysex.write(bytes)
            return true
        }
    }

    /// Control plane: the source of scheduled events (a sequence player), nil for none. A
    /// replaced source is released only once the render thread no longer reads it.
    public func setEventSource(_ source: (any MIDIEventSource)?) {
        sourceLock.withLock { _ in
            let new = source.map { Unmanaged.passRetained(SourceBox($0)).toOpaque() }
            let old = sourceSlot.exchange(new, ordering: .sequentiallyConsistent)
            guard let old else { return }
            while sourceInUse.load(ordering: .sequentiallyConsistent) == old { sleep(seconds: 0.0005) }
            Unmanaged<SourceBox>.fromOpaque(old).release()
        }
    }

    /// The current source of scheduled events.
    public var eventSource: (any MIDIEventSource)? {
        sourceLock.withLock { _ in
            sourceSlot.load(ordering: .sequentiallyConsistent).map { Unmanaged<SourceBox>.fromOpaque($0).takeUnretainedValue().source }
        }
    }

    /// Render thread: applies one channel message (note on/off, controller, program, bend...).
    /// The default ignores it.
    open func handle(_ event: MIDIChannelEvent) {}

    /// Render thread: applies one System Exclusive message (`F0 ... F7`). The default ignores it.
    open func handleSysEx(_ bytes: UnsafeBufferPointer<UInt8>) {}

    /// Render thread: renders `count` frames into `output` from frame `from`, with every event
    /// up to that frame applied. The default writes silence.
    open func synthesize(into output: AUBufferList, from: Int, count: Int) {
        for c in 0..<output.channelCount { (output[c] + from).update(repeating: 0, count: count) }
    }

    /// Splits the slice at the events' offsets; subclasses override ``handle(_:)`` and
    /// ``synthesize(into:from:count:)`` instead.
    public final override func render(_ context: AURenderContext) {
        let out = context.output(0)
        let frames = context.frames
        // System Exclusive first, at the start of the slice.
        while sysex.availableToRead >= 2 {
            var header: (UInt8, UInt8) = (0, 0)
            _ = withUnsafeMutableBytes(of: &header) { sysex.read(into: $0.bindMemory(to: UInt8.self)) }
            let length = Int(header.0) << 8 | Int(header.1)
            let n = sysex.read(into: UnsafeMutableBufferPointer(start: sysexScratch, count: min(length, Self.sysexScratchSize)))
            handleSysEx(UnsafeBufferPointer(start: sysexScratch, count: n))
        }
        var count = live.read(into: UnsafeMutableBufferPointer(start: scratch, count: Self.maxEventsPerSlice))
        var p = sourceSlot.load(ordering: .sequentiallyConsistent)
        while true {
            sourceInUse.store(p, ordering: .sequentiallyConsistent)
            let q = sourceSlot.load(ordering: .sequentiallyConsistent)
            if q == p { break }
            p = q
        }
        if let p {
            let source = Unmanaged<SourceBox>.fromOpaque(p).takeUnretainedValue().source
            let liveCount = count
            let scratch = self.scratch
            source.forEachEvent(inSliceAt: context.sampleTime, frames: frames) { event in
                guard count < Self.maxEventsPerSlice else { return }
                scratch[count] = event
                count += 1
            }
            // Both runs are in order; merge the scheduled run into the live one (insertion,
            // stable: at the same offset live messages come first).
            if liveCount > 0, count > liveCount {
                for i in liveCount..<count {
                    let e = scratch[i]
                    var j = i
                    while j > 0, min(scratch[j - 1].offset, UInt32(frames)) > min(e.offset, UInt32(frames)) {
                        scratch[j] = scratch[j - 1]
                        j -= 1
                    }
                    scratch[j] = e
                }
            }
        }
        sourceInUse.store(nil, ordering: .sequentiallyConsistent)
        // Live messages sent with offsets out of order are applied in the order sent, each no
        // earlier than the one before.
        var position = 0
        for i in 0..<count {
            let e = scratch[i]
            let at = max(position, min(Int(e.offset), frames))
            if at > position {
                synthesize(into: out, from: position, count: at - position)
                position = at
            }
            handle(e)
        }
        if position < frames { synthesize(into: out, from: position, count: frames - position) }
    }
}
