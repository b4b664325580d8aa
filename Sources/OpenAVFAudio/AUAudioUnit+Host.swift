// AUAudioUnit as Apple's host interface to a unit the host renders itself (the way players of
// the AVAudioEngine era drive their output unit): bus arrays over the unit's stream formats,
// render resources, the render block, and for I/O units the output provider, the input handler
// and the hardware. Everything goes through the unit's AudioUnit handle (OpenAudioToolbox's C
// API), as Apple bridges version 2 units.
//
// The render side (DESIGN.md section 2): the provider and handler are reached from the render
// thread through an atomic pointer to an immutable holder made when the block was set (no lock,
// no allocation there); holders are kept until the unit goes, so a render that read the old one
// finishes with it.
import Foundation
import OpenAudioToolbox
import Synchronization

/// The result of a render call (Apple's `AUAudioUnitStatus`, an `OSStatus`).
public typealias AUAudioUnitStatus = OSStatus
/// A count of channels (Apple's `AUAudioChannelCount`).
public typealias AUAudioChannelCount = UInt32
/// A sample time of the render timeline (Apple's `AUEventSampleTime`).
public typealias AUEventSampleTime = Int64

/// Supplies a unit's input or, for an I/O unit, the audio it plays (Apple's
/// `AURenderPullInputBlock`): fill the buffer list with the frames asked for, on the render
/// thread (no locks, no allocation), and return `noErr`.
public typealias AURenderPullInputBlock = (UnsafeMutablePointer<AudioUnitRenderActionFlags>, UnsafePointer<AudioTimeStamp>,
                                           AUAudioFrameCount, Int, UnsafeMutablePointer<AudioBufferList>) -> AUAudioUnitStatus

/// Renders a unit's output (Apple's `AURenderBlock`): flags, time stamp, frame count, output
/// bus, the buffer list to fill, and the block that supplies the unit's input (nil: the unit's
/// own render callback or connection, if any).
public typealias AURenderBlock = (UnsafeMutablePointer<AudioUnitRenderActionFlags>, UnsafePointer<AudioTimeStamp>, AUAudioFrameCount, Int,
                                  UnsafeMutablePointer<AudioBufferList>, AURenderPullInputBlock?) -> AUAudioUnitStatus

/// Told that an I/O unit has input ready (Apple's `AUInputHandler`): flags, time stamp, frame
/// count and bus (1); fetch the frames with the unit's ``AUAudioUnit/renderBlock`` on bus 1.
/// Runs on the input thread.
public typealias AUInputHandler = (UnsafeMutablePointer<AudioUnitRenderActionFlags>, UnsafePointer<AudioTimeStamp>, AUAudioFrameCount, Int) -> Void

/// Whether a bus is one of a unit's inputs or outputs (Apple's `AUAudioUnitBusType`).
public enum AUAudioUnitBusType: Int, @unchecked Sendable {
    /// An input bus (the unit's input scope).
    case input = 1
    /// An output bus (the unit's output scope).
    case output = 2
}

/// One input or output bus of an audio unit (Apple's `AUAudioUnitBus`): its format is the
/// unit's stream format on that bus (`kAudioUnitProperty_StreamFormat`).
///
/// On an I/O unit, input bus 0 carries what the host plays (the format of ``AUAudioUnit/outputProvider``),
/// output bus 0 the device's output, input bus 1 the device's input and output bus 1 what
/// the host records (the format ``AUAudioUnit/inputHandler``'s renders give).
open class AUAudioUnitBus: NSObject, @unchecked Sendable {
    private let lock = NSLock()
    private weak var owner: AUAudioUnit?
    private var ownFormat: AVAudioFormat
    private var enabled = true
    private var busName: String?
    private var allocate = true
    /// The bus's number in its array.
    public private(set) var index: Int
    /// Whether the bus is an input or an output.
    public private(set) var busType: AUAudioUnitBusType

    /// A bus of no unit yet, with `format` (Apple's `init(format:)`); an array it is put in
    /// gives it its unit.
    public init(format: AVAudioFormat) throws {
        ownFormat = format
        index = 0
        busType = .input
    }

    init(owner: AUAudioUnit, type: AUAudioUnitBusType, index: Int) {
        self.owner = owner
        busType = type
        self.index = index
        ownFormat = AVAudioFormat(standardFormatWithSampleRate: 44100, channels: 2)!
    }

    func place(in unit: AUAudioUnit, type: AUAudioUnitBusType, index: Int) {
        lock.lock(); defer { lock.unlock() }
        owner = unit
        busType = type
        self.index = index
    }

    private var scope: AudioUnitScope { busType == .input ? kAudioUnitScope_Input : kAudioUnitScope_Output }

    /// The bus's format: the unit's stream format on it.
    open var format: AVAudioFormat {
        if let handle = owner?.handle {
            var asbd = AudioStreamBasicDescription()
            var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
            if AudioUnitGetProperty(handle, kAudioUnitProperty_StreamFormat, scope, AudioUnitElement(index), &asbd, &size) == noErr,
               let f = AVAudioFormat(streamDescription: &asbd) { return f }
        }
        lock.lock(); defer { lock.unlock() }
        return ownFormat
    }

    /// Sets the bus's format: the unit's stream format on the bus (Apple's `setFormat(_:)`).
    /// Throws the unit's `NSOSStatusErrorDomain` error: `kAudioUnitErr_FormatNotSupported` for
    /// a format it cannot take, `kAudioUnitErr_Initialized` once render resources are allocated
    /// on a unit that cannot change formats then, `kAudioUnitErr_InvalidElement` for a bus it
    /// does not have.
    open func setFormat(_ format: AVAudioFormat) throws {
        if let handle = owner?.handle {
            var asbd = format.streamDescription.pointee
            try check(AudioUnitSetProperty(handle, kAudioUnitProperty_StreamFormat, scope, AudioUnitElement(index), &asbd,
                                           UInt32(MemoryLayout<AudioStreamBasicDescription>.size)),
                      "AUAudioUnitBus.setFormat: \(busType == .input ? "input" : "output") bus \(index) of \(owner?.audioUnitName ?? "the unit") refused \(format)")
        }
        lock.lock(); ownFormat = format; lock.unlock()
    }

    /// Whether the bus takes part in rendering (kept; every bus of a unit here renders).
    open var isEnabled: Bool {
        get { lock.lock(); defer { lock.unlock() }; return enabled }
        set { lock.lock(); enabled = newValue; lock.unlock() }
    }

    /// The bus's name (nil unless set).
    open var name: String? {
        get { lock.lock(); defer { lock.unlock() }; return busName }
        set { lock.lock(); busName = newValue; lock.unlock() }
    }

    /// Whether the unit allocates the bus's buffers (kept; the render block accepts buffers
    /// with null data pointers either way).
    open var shouldAllocateBuffer: Bool {
        get { lock.lock(); defer { lock.unlock() }; return allocate }
        set { lock.lock(); allocate = newValue; lock.unlock() }
    }

    /// The most channels the bus takes (64, the render graph's limit).
    open var maximumChannelCount: AUAudioChannelCount { 64 }

    /// The channel counts the bus takes (nil: any up to ``maximumChannelCount``).
    open var supportedChannelCounts: [NSNumber]? { nil }

    /// Seconds of latency the bus's context adds (kept, 0 unless set).
    open var contextPresentationLatency: TimeInterval = 0
}

/// The input or output busses of an audio unit (Apple's `AUAudioUnitBusArray`).
open class AUAudioUnitBusArray: NSObject, @unchecked Sendable, Sequence {
    private let lock = NSLock()
    private var busses: [AUAudioUnitBus]
    private weak var owner: AUAudioUnit?
    /// Whether the array holds input or output busses.
    public let busType: AUAudioUnitBusType

    /// An array of `busses` for `audioUnit` (Apple's `init(audioUnit:busType:busses:)`).
    public init(audioUnit: AUAudioUnit, busType: AUAudioUnitBusType, busses: [AUAudioUnitBus]) {
        owner = audioUnit
        self.busType = busType
        self.busses = busses
        super.init()
        for (i, b) in busses.enumerated() { b.place(in: audioUnit, type: busType, index: i) }
    }

    /// An empty array for `audioUnit` (Apple's `init(audioUnit:busType:)`).
    public convenience init(audioUnit: AUAudioUnit, busType: AUAudioUnitBusType) {
        self.init(audioUnit: audioUnit, busType: busType, busses: [])
    }

    /// The number of busses.
    open var count: Int { lock.lock(); defer { lock.unlock() }; return busses.count }

    /// The bus at `index` (0 ..< ``count``).
    open subscript(index: Int) -> AUAudioUnitBus { lock.lock(); defer { lock.unlock() }; return busses[index] }

    /// Whether ``setBusCount(_:)`` can change the count: false, the units here have the busses
    /// of their kind.
    open var isCountChangeable: Bool { false }

    /// Changes the number of busses; throws `kAudioUnitErr_PropertyNotWritable` unless
    /// `count` is the current count.
    open func setBusCount(_ count: Int) throws {
        if count != self.count {
            throw avError(kAudioUnitErr_PropertyNotWritable, "AUAudioUnitBusArray.setBusCount: the unit has \(self.count) \(busType == .input ? "input" : "output") busses, which cannot change")
        }
    }

    /// Replaces the busses (Apple's `replaceBusses(_:)`), numbering them from 0.
    open func replaceBusses(_ busArray: [AUAudioUnitBus]) {
        lock.lock()
        busses = busArray
        let owner = self.owner
        lock.unlock()
        if let owner { for (i, b) in busArray.enumerated() { b.place(in: owner, type: busType, index: i) } }
    }

    /// The busses in order.
    public func makeIterator() -> IndexingIterator<[AUAudioUnitBus]> {
        lock.lock(); defer { lock.unlock() }
        return busses.makeIterator()
    }
}

/// A block the render thread reaches without a lock: an atomic pointer to an immutable holder.
final class AURenderSlot<Block>: @unchecked Sendable {
    private final class Holder { let block: Block; init(_ block: Block) { self.block = block } }
    private let current = Atomic<Int>(0)
    private let lock = NSLock()
    private var kept: [Holder] = []
    private var value: Block?

    /// The block set last (control side).
    var block: Block? { lock.lock(); defer { lock.unlock() }; return value }

    /// Sets the block (nil: none). The holder is kept until the slot goes, so a render that
    /// read the previous one finishes with it.
    func set(_ block: Block?) {
        lock.lock(); defer { lock.unlock() }
        value = block
        guard let block else { current.store(0, ordering: .releasing); return }
        let holder = Holder(block)
        kept.append(holder)
        current.store(Int(bitPattern: Unmanaged.passUnretained(holder).toOpaque()), ordering: .releasing)
    }

    /// The current block, on the render thread.
    func load() -> Block? {
        let bits = current.load(ordering: .acquiring)
        guard bits != 0, let p = UnsafeRawPointer(bitPattern: bits) else { return nil }
        return Unmanaged<Holder>.fromOpaque(p).takeUnretainedValue().block
    }
}

/// What a unit of its own needs to be hosted: its bus arrays, and the slots of the blocks the
/// render thread calls.
final class AUHostState: @unchecked Sendable {
    let provider = AURenderSlot<AURenderPullInputBlock>()
    let inputHandler = AURenderSlot<AUInputHandler>()
    /// The pull block of the render block's current call (set and cleared on the rendering
    /// thread around `AudioUnitRender`, read by the input callback it calls on that thread).
    nonisolated(unsafe) var pull: AURenderPullInputBlock?
    private let lock = NSLock()
    private var inputs: AUAudioUnitBusArray?
    private var outputs: AUAudioUnitBusArray?
    private var pullInstalled = false
    private(set) var allocated = false

    /// Installs the provider and input thunks on an I/O unit (before it is initialised, as the
    /// C API requires for the input callback).
    func attach(_ unit: AUAudioUnit) {
        guard let handle = unit.handle, unit.isOutputComponent else { return }
        let refCon = Unmanaged.passUnretained(self).toOpaque()
        var render = AURenderCallbackStruct(inputProc: hostOutputProviderProc, inputProcRefCon: refCon)
        _ = AudioUnitSetProperty(handle, kAudioUnitProperty_SetRenderCallback, kAudioUnitScope_Input, 0, &render,
                                 UInt32(MemoryLayout<AURenderCallbackStruct>.size))
        var input = AURenderCallbackStruct(inputProc: hostInputHandlerProc, inputProcRefCon: refCon)
        _ = AudioUnitSetProperty(handle, kAudioOutputUnitProperty_SetInputCallback, kAudioUnitScope_Global, 0, &input,
                                 UInt32(MemoryLayout<AURenderCallbackStruct>.size))
    }

    /// Installs the pull thunk as a non-I/O unit's input callback, once.
    func installPull(_ handle: AudioUnit, inputs: Int) {
        lock.lock(); defer { lock.unlock() }
        guard !pullInstalled else { return }
        pullInstalled = true
        let refCon = Unmanaged.passUnretained(self).toOpaque()
        for bus in 0..<max(1, inputs) {
            var render = AURenderCallbackStruct(inputProc: hostPullInputProc, inputProcRefCon: refCon)
            _ = AudioUnitSetProperty(handle, kAudioUnitProperty_SetRenderCallback, kAudioUnitScope_Input, AudioUnitElement(bus), &render,
                                     UInt32(MemoryLayout<AURenderCallbackStruct>.size))
        }
    }

    func busses(_ type: AUAudioUnitBusType, of unit: AUAudioUnit) -> AUAudioUnitBusArray {
        lock.lock(); defer { lock.unlock() }
        if let a = type == .input ? inputs : outputs { return a }
        let n = unit.busCount(type)
        let a = AUAudioUnitBusArray(audioUnit: unit, busType: type, busses: (0..<n).map { AUAudioUnitBus(owner: unit, type: type, index: $0) })
        if type == .input { inputs = a } else { outputs = a }
        return a
    }

    func setAllocated(_ on: Bool) { lock.lock(); allocated = on; lock.unlock() }
}

/// The I/O unit's render callback: what the host's ``AUAudioUnit/outputProvider`` gives, or
/// silence while there is none.
private func hostOutputProviderProc(_ refCon: UnsafeMutableRawPointer, _ flags: UnsafeMutablePointer<AudioUnitRenderActionFlags>,
                                    _ timeStamp: UnsafePointer<AudioTimeStamp>, _ bus: UInt32, _ frames: UInt32,
                                    _ data: UnsafeMutablePointer<AudioBufferList>?) -> OSStatus {
    guard let data else { return noErr }
    let host = Unmanaged<AUHostState>.fromOpaque(refCon).takeUnretainedValue()
    if let provider = host.provider.load() {
        return provider(flags, timeStamp, frames, 0, data)
    }
    for buffer in UnsafeMutableAudioBufferListPointer(data) {
        if let bytes = buffer.mData { memset(bytes, 0, Int(buffer.mDataByteSize)) }
    }
    flags.pointee.insert(.unitRenderAction_OutputIsSilence)
    return noErr
}

/// The I/O unit's input callback: tells the host's ``AUAudioUnit/inputHandler``.
private func hostInputHandlerProc(_ refCon: UnsafeMutableRawPointer, _ flags: UnsafeMutablePointer<AudioUnitRenderActionFlags>,
                                  _ timeStamp: UnsafePointer<AudioTimeStamp>, _ bus: UInt32, _ frames: UInt32,
                                  _ data: UnsafeMutablePointer<AudioBufferList>?) -> OSStatus {
    let host = Unmanaged<AUHostState>.fromOpaque(refCon).takeUnretainedValue()
    host.inputHandler.load()?(flags, timeStamp, frames, Int(bus))
    return noErr
}

/// A unit's input callback while its render block runs with a pull block.
private func hostPullInputProc(_ refCon: UnsafeMutableRawPointer, _ flags: UnsafeMutablePointer<AudioUnitRenderActionFlags>,
                               _ timeStamp: UnsafePointer<AudioTimeStamp>, _ bus: UInt32, _ frames: UInt32,
                               _ data: UnsafeMutablePointer<AudioBufferList>?) -> OSStatus {
    guard let data else { return kAudioUnitErr_NoConnection }
    let host = Unmanaged<AUHostState>.fromOpaque(refCon).takeUnretainedValue()
    guard let pull = host.pull else { return kAudioUnitErr_NoConnection }
    return pull(flags, timeStamp, frames, Int(bus), data)
}
