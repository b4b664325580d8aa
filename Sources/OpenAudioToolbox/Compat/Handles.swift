// The objects behind the C API's opaque handles (AudioFileID, AudioQueueRef, AudioConverterRef,
// AudioFileStreamID, ExtAudioFileRef, AudioComponentInstance, AUGraph).
//
// A handle is the address of a small slot that outlives the object it names: disposing of the
// object empties the slot, so a second Dispose/Close, or any call with the stale handle, finds an
// empty slot and returns an error instead of reading freed memory. Emptied slots are reused only
// after `reuseAfter` others have been emptied, so a handle stays recognisably stale for that many
// disposals. Looking an object up reads the slot without a lock (render-thread calls such as
// `AudioUnitRender` and `AudioConverterFillComplexBuffer` use it); creating and disposing take one.

import Synchronization

/// The slot a handle points at.
final class CompatHandleSlot: @unchecked Sendable {
    var object: AnyObject?
    init(_ object: AnyObject) { self.object = object }
}

enum CompatHandles {
    private struct Table {
        /// Every slot ever made (they are never freed; this keeps them reachable).
        var all: [CompatHandleSlot] = []
        /// Emptied slots, oldest first.
        var free: [CompatHandleSlot] = []
        var freeStart = 0
    }

    /// How many emptied slots wait before one is reused.
    static let reuseAfter = 4096
    private static let table = Locked(Table())

    /// A new handle naming `object`.
    static func make(_ object: AnyObject) -> OpaquePointer {
        let slot = table.withLock { t -> CompatHandleSlot in
            if t.free.count - t.freeStart > reuseAfter {
                let s = t.free[t.freeStart]
                t.freeStart += 1
                if t.freeStart > 4096 {
                    t.free.removeFirst(t.freeStart)
                    t.freeStart = 0
                }
                s.object = object
                return s
            }
            let s = CompatHandleSlot(object)
            t.all.append(s)
            return s
        }
        return OpaquePointer(Unmanaged.passUnretained(slot).toOpaque())
    }

    /// The object `handle` names, if it is a `T` and has not been disposed of.
    @inline(__always)
    static func object<T: AnyObject>(_ handle: OpaquePointer?, as type: T.Type) -> T? {
        guard let handle else { return nil }
        return Unmanaged<CompatHandleSlot>.fromOpaque(UnsafeRawPointer(handle)).takeUnretainedValue().object as? T
    }

    /// Empties `handle`'s slot and returns the `T` it named; nil when it names no `T` (already
    /// disposed of, or another kind of object), and then the slot is left as it was.
    static func remove<T: AnyObject>(_ handle: OpaquePointer?, as type: T.Type) -> T? {
        guard let handle else { return nil }
        let slot = Unmanaged<CompatHandleSlot>.fromOpaque(UnsafeRawPointer(handle)).takeUnretainedValue()
        return table.withLock { t -> T? in
            guard let object = slot.object as? T else { return nil }
            slot.object = nil
            t.free.append(slot)
            return object
        }
    }
}
