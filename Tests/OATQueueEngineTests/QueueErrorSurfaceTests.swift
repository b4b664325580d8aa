#if canImport(Glibc)
import Glibc
#endif
import OATCore
import OATDevices
import Synchronization
import Testing
@testable import OATQueueEngine

/// Issue 19 §3: a decoder the queue cannot create is an error the client sees (property,
/// listener and event), not a queue that silently hands its buffers back unplayed.
@Suite struct QueueErrorSurfaceTests {
    @Test func aDecoderThatCannotBeCreatedBecomesTheConverterError() throws {
        // ALAC needs its cookie (the ALACSpecificConfig); none is ever set.
        let alac = AudioStreamBasicDescription.compressed(.appleLossless, sampleRate: 44100, channels: 2, framesPerPacket: 4096)
        let events = Locked<[AudioOutputQueueEvent]>([])
        let returned = Locked(0)
        let queue = try AudioOutputQueue(format: alac, output: { f throws(AudioError) in NullOutputDevice(format: f, realTime: false) }) { _, _ in
            returned.withLock { $0 += 1 }
        }
        queue.eventHandler = { e in events.withLock { $0.append(e) } }
        let b = try queue.allocateBuffer(byteCapacity: 400, packetDescriptionCapacity: 1)
        let junk = [UInt8](repeating: 0x55, count: 400)
        junk.withUnsafeBytes { _ = b.fill($0, packetDescriptions: [AudioStreamPacketDescription(startOffset: 0, dataByteSize: 400)]) }
        try queue.enqueue(b)
        try queue.start()
        #expect(wait(seconds: 3) { queue.converterError != nil })
        #expect(wait(seconds: 3) { events.withLock { $0.contains(.propertyChanged(.converterError)) } })
        #expect(events.withLock { $0.contains { if case .converterError = $0 { true } else { false } } })
        queue.dispose(immediately: true)
    }
}
