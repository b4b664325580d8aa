// A minimal stand-in for the CFRunLoop functions Audio Toolbox code calls: enough for a queue's
// callbacks to be delivered on the thread that runs the loop, as Apple does. There is no
// CoreFoundation on Linux (swift-corelibs-foundation does not export it).

import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Apple's `CFString` stand-in: a Swift `String`.
public typealias CFString = String

/// A run-loop mode (Apple's `CFRunLoopMode`). Modes are accepted and not distinguished.
public struct CFRunLoopMode: RawRepresentable, Hashable, Sendable {
    /// The mode name.
    public var rawValue: CFString
    /// Creates a mode.
    public init(rawValue: CFString) { self.rawValue = rawValue }
    /// The default mode.
    public static let defaultMode = CFRunLoopMode(rawValue: "kCFRunLoopDefaultMode")
    /// The common modes.
    public static let commonModes = CFRunLoopMode(rawValue: "kCFRunLoopCommonModes")
}

/// The default mode (Apple's `kCFRunLoopDefaultMode`).
public let kCFRunLoopDefaultMode: CFRunLoopMode = .defaultMode
/// The common modes (Apple's `kCFRunLoopCommonModes`).
public let kCFRunLoopCommonModes: CFRunLoopMode = .commonModes

/// Why ``CFRunLoopRunInMode(_:_:_:)`` returned (Apple's `CFRunLoopRunResult`).
public enum CFRunLoopRunResult: Int32, Sendable {
    /// Nothing to run.
    case finished = 1
    /// ``CFRunLoopStop(_:)`` was called.
    case stopped = 2
    /// The time ran out.
    case timedOut = 3
    /// A source was handled and the caller asked to return then.
    case handledSource = 4
}

/// A thread's run loop (Apple's `CFRunLoop`): here, a queue of work that runs while the owning
/// thread is inside ``CFRunLoopRunInMode(_:_:_:)``. Audio queues created with a run loop post
/// their output callbacks to it.
public final class CFRunLoop: @unchecked Sendable {
    private let work = Locked<[@Sendable () -> Void]>([])
    private let signal = DispatchSemaphore(value: 0)
    private let stopped = Atomic<Bool>(false)

    init() {}

    func perform(_ block: @escaping @Sendable () -> Void) {
        work.withLock { $0.append(block) }
        signal.signal()
    }

    func stop() {
        stopped.store(true, ordering: .releasing)
        signal.signal()
    }

    func run(seconds: Double, returnAfterSourceHandled: Bool) -> CFRunLoopRunResult {
        let deadline = DispatchTime.now() + .nanoseconds(Int(max(0, min(seconds, 1e6)) * 1e9))
        stopped.store(false, ordering: .releasing)
        while true {
            let batch = work.withLock { w -> [@Sendable () -> Void] in defer { w.removeAll() }; return w }
            for b in batch { b() }
            if !batch.isEmpty && returnAfterSourceHandled { return .handledSource }
            if stopped.load(ordering: .acquiring) { return .stopped }
            if signal.wait(timeout: deadline) == .timedOut {
                let late = work.withLock { w -> [@Sendable () -> Void] in defer { w.removeAll() }; return w }
                for b in late { b() }
                return .timedOut
            }
        }
    }

    private static let loops = Locked<[UInt: CFRunLoop]>([:])
    static let main = CFRunLoop()

    static func current() -> CFRunLoop {
        if isMainThread() { return main }
        let me = UInt(pthread_self())
        return loops.withLock { l in
            if let r = l[me] { return r }
            let r = CFRunLoop()
            l[me] = r
            return r
        }
    }
}

/// True on the process's initial thread (Linux: its thread id is the process id).
func isMainThread() -> Bool {
    var buf = [CChar](repeating: 0, count: 64)
    let n = readlink("/proc/thread-self", &buf, 63)
    guard n > 0 else { return false }
    let text = String(decoding: buf[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    guard let last = text.split(separator: "/").last, let tid = Int32(last) else { return false }
    return tid == getpid()
}

/// The calling thread's run loop (Apple's `CFRunLoopGetCurrent`).
public func CFRunLoopGetCurrent() -> CFRunLoop! { CFRunLoop.current() }
/// The main thread's run loop (Apple's `CFRunLoopGetMain`).
public func CFRunLoopGetMain() -> CFRunLoop! { CFRunLoop.main }
/// Runs the current thread's loop for `seconds`, running posted callbacks (Apple's
/// `CFRunLoopRunInMode`; the mode is ignored).
@discardableResult
public func CFRunLoopRunInMode(_ mode: CFRunLoopMode!, _ seconds: CFTimeInterval, _ returnAfterSourceHandled: Bool) -> CFRunLoopRunResult {
    CFRunLoop.current().run(seconds: seconds, returnAfterSourceHandled: returnAfterSourceHandled)
}
/// Makes a running loop return (Apple's `CFRunLoopStop`).
public func CFRunLoopStop(_ rl: CFRunLoop!) { rl?.stop() }
