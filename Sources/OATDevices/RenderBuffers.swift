import OATCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Non-interleaved Float32 scratch buffers allocated once, for a device thread.
final class RenderBuffers: @unchecked Sendable {
    let channels: Int
    let frames: Int
    let pointers: UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>
    let interleaved: UnsafeMutableBufferPointer<Float>

    init(channels: Int, frames: Int) {
        self.channels = channels
        self.frames = frames
        pointers = .allocate(capacity: channels)
        for c in 0..<channels {
            let p = UnsafeMutablePointer<Float>.allocate(capacity: frames)
            p.initialize(repeating: 0, count: frames)
            pointers[c] = p
        }
        interleaved = .allocate(capacity: frames * channels)
        interleaved.initialize(repeating: 0)
    }

    deinit {
        for p in pointers { p.deallocate() }
        pointers.deallocate()
        interleaved.deallocate()
    }

    /// Zeroes frames `from..<frames` of every channel.
    @inline(__always)
    func silence(from: Int) {
        guard from < frames else { return }
        for p in pointers { (p + from).update(repeating: 0, count: frames - from) }
    }

    /// Interleaves the first `count` frames into ``interleaved``.
    @inline(__always)
    func interleave(_ count: Int) {
        let ch = channels
        for c in 0..<ch {
            let src = pointers[c]
            var j = c
            for i in 0..<count {
                interleaved[j] = src[i]
                j += ch
            }
        }
    }
}
