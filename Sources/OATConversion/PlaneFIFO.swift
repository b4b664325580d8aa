/// One plane of ``AudioConverter``'s output FIFO: bytes in raw memory that the decoders write
/// into directly. An `[UInt8]` FIFO needed a zero-filled temporary array for every append that
/// was computed in place ((de)interleaving, integer scaling), and the Swift array's
/// copy-on-write checks on each access: about a tenth of `afinfo --decode`'s CPU for an MP3
/// (docs/PERFORMANCE.md, "Decode CPU").
///
/// Thread safety: not thread-safe; owned by one converter.
final class PlaneFIFO {
    private var base: UnsafeMutableRawPointer?
    private var capacity = 0
    /// Where the stored bytes start: ``removeFirst(_:)`` only moves it; ``extend(by:)`` moves
    /// the stored bytes back to the start when it needs the room.
    private var head = 0
    /// Bytes stored.
    private(set) var count = 0

    init() {}

    deinit { base?.deallocate() }

    /// Grows the FIFO by `bytes` and returns where they go (uninitialized).
    func extend(by bytes: Int) -> UnsafeMutableRawPointer {
        precondition(bytes >= 0)
        if head + count + bytes > capacity, let base, head > 0, count + bytes <= capacity {
            if count > 0 { base.copyMemory(from: base + head, byteCount: count) }
            head = 0
        }
        if head + count + bytes > capacity {
            let newCapacity = Swift.max(count + bytes, capacity * 2, 16 << 10)
            let p = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
            if let base {
                p.copyMemory(from: base + head, byteCount: count)
                base.deallocate()
            }
            base = p
            capacity = newCapacity
            head = 0
        }
        let at = base.unsafelyUnwrapped + head + count
        count += bytes
        return at
    }

    /// Grows the FIFO by `bytes` and returns them as Float32 samples to write.
    func extendFloats(by samples: Int) -> UnsafeMutablePointer<Float> {
        extend(by: samples * 4).bindMemory(to: Float.self, capacity: samples)
    }

    /// Appends a copy of `bytes`.
    func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        extend(by: bytes.count).copyMemory(from: source, byteCount: bytes.count)
    }

    /// Appends `bytes` zero bytes.
    func appendZeros(_ bytes: Int) {
        guard bytes > 0 else { return }
        extend(by: bytes).initializeMemory(as: UInt8.self, repeating: 0, count: bytes)
    }

    /// Copies `bytes` bytes from offset `offset` to `destination`.
    func copy(from offset: Int, bytes: Int, to destination: UnsafeMutableRawPointer) {
        precondition(offset >= 0 && bytes >= 0 && offset + bytes <= count)
        guard bytes > 0, let base else { return }
        destination.copyMemory(from: base + head + offset, byteCount: bytes)
    }

    /// Drops the first `bytes` bytes (without moving the rest).
    func removeFirst(_ bytes: Int) {
        precondition(bytes >= 0 && bytes <= count)
        count -= bytes
        head = count == 0 ? 0 : head + bytes
    }

    /// Drops the last `bytes` bytes.
    func removeLast(_ bytes: Int) {
        precondition(bytes >= 0 && bytes <= count)
        count -= bytes
    }

    /// Drops everything (keeping the memory).
    func removeAll() {
        count = 0
        head = 0
    }
}
