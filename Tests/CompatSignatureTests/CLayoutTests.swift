// Apple's C structs and C callback types, checked by the compiler and by their 64-bit layout:
// the callback typealiases are `@convention(c)` as on Apple (a global function converts to them; a
// capturing closure does not compile, which no runtime test can show), and the structs they point
// at have Apple's sizes and field offsets, so a pointer handed to or from C code reads the same
// bytes.

import OpenAudioToolbox
import Testing

private func halListener(_ object: AudioObjectID, _ count: UInt32, _ addresses: UnsafePointer<AudioObjectPropertyAddress>,
                         _ client: UnsafeMutableRawPointer?) -> OSStatus { OSStatus(count) }

private func streamListener(_ client: UnsafeMutableRawPointer, _ stream: AudioFileStreamID, _ id: AudioFileStreamPropertyID,
                            _ flags: UnsafeMutablePointer<AudioFileStreamPropertyFlags>) {
    flags.pointee.insert(.cacheProperty)
}

private func streamPackets(_ client: UnsafeMutableRawPointer, _ bytes: UInt32, _ packets: UInt32, _ data: UnsafeRawPointer,
                           _ descriptions: UnsafeMutablePointer<AudioStreamPacketDescription>?) {
    client.storeBytes(of: descriptions?[Int(packets) - 1].mDataByteSize ?? 0, as: UInt32.self)
}

private func queueOutput(_ user: UnsafeMutableRawPointer?, _ queue: AudioQueueRef, _ buffer: AudioQueueBufferRef) {
    buffer.pointee.mAudioDataByteSize = buffer.pointee.mAudioDataBytesCapacity
}

@Suite struct CLayoutTests {
    @Test func fileStreamProcsAreCFunctionPointers() {
        let listener: AudioFileStream_PropertyListenerProc = streamListener
        let packets: AudioFileStream_PacketsProc = streamPackets
        var flags: AudioFileStreamPropertyFlags = [.propertyIsCached]
        var client: UInt32 = 0
        let stream = AudioFileStreamID(bitPattern: 1)!
        listener(&client, stream, kAudioFileStreamProperty_DataFormat, &flags)
        #expect(flags == [.propertyIsCached, .cacheProperty] && flags.rawValue == 3)
        var descriptions = [AudioStreamPacketDescription(mStartOffset: 0, mVariableFramesInPacket: 0, mDataByteSize: 417),
                            AudioStreamPacketDescription(startOffset: 417, dataByteSize: 418)]
        let bytes: [UInt8] = [0]
        bytes.withUnsafeBytes { packets(&client, 835, 2, $0.baseAddress!, &descriptions) }
        #expect(client == 418)
    }

    @Test func packetDescriptionHasApplesLayout() {
        #expect(MemoryLayout<AudioStreamPacketDescription>.size == 16)
        #expect(MemoryLayout<AudioStreamPacketDescription>.offset(of: \.mVariableFramesInPacket) == 8)
        #expect(MemoryLayout<AudioStreamPacketDescription>.offset(of: \.mDataByteSize) == 12)
        let d = AudioStreamPacketDescription(startOffset: 3, variableFramesInPacket: 1152, dataByteSize: 417)
        #expect(d.mStartOffset == 3 && d.variableFramesInPacket == 1152 && d == AudioStreamPacketDescription(mStartOffset: 3, mVariableFramesInPacket: 1152, mDataByteSize: 417))
        #expect(Set([d, d, AudioStreamPacketDescription()]).count == 2)
    }

    @Test func queueBufferHasApplesLayout() {
        // Apple's 64-bit AudioQueueBuffer: the constant fields are read-only in Swift, as on Apple.
        #expect(MemoryLayout<AudioQueueBuffer>.size == 56) // C's sizeof, tail padding included
        #expect(MemoryLayout<AudioQueueBuffer>.stride == 56)
        #expect(MemoryLayout<AudioQueueBuffer>.offset(of: \.mAudioData) == 8)
        #expect(MemoryLayout<AudioQueueBuffer>.offset(of: \.mAudioDataByteSize) == 16)
        #expect(MemoryLayout<AudioQueueBuffer>.offset(of: \.mUserData) == 24)
        #expect(MemoryLayout<AudioQueueBuffer>.offset(of: \.mPacketDescriptions) == 40)
        #expect(MemoryLayout<AudioQueueBuffer>.offset(of: \.mPacketDescriptionCount) == 48)
        let output: AudioQueueOutputCallback = queueOutput
        let data = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 16)
        defer { data.deallocate() }
        var buffer = AudioQueueBuffer(mAudioDataBytesCapacity: 64, mAudioData: data, mAudioDataByteSize: 0, mUserData: nil,
                                      mPacketDescriptionCapacity: 0, mPacketDescriptions: nil, mPacketDescriptionCount: 0)
        output(nil, AudioQueueRef(bitPattern: 1)!, &buffer)
        #expect(buffer.mAudioDataByteSize == 64)
    }

    @Test func halListenerIsACFunctionPointer() {
        let proc: AudioObjectPropertyListenerProc = halListener
        // A C function pointer is one machine word and round-trips through a raw pointer, as code
        // that stores callbacks in C-typed fields does on Apple.
        #expect(MemoryLayout<AudioObjectPropertyListenerProc>.size == MemoryLayout<UnsafeRawPointer>.size)
        let back = unsafeBitCast(unsafeBitCast(proc, to: UnsafeRawPointer.self), to: AudioObjectPropertyListenerProc.self)
        var address = AudioObjectPropertyAddress(mSelector: 1, mScope: 2, mElement: 3)
        #expect(back(1, 7, &address, nil) == 7)
    }

    @Test func halAddressHasApplesLayout() {
        #expect(MemoryLayout<AudioObjectPropertyAddress>.size == 12)
        #expect(MemoryLayout<AudioObjectPropertyAddress>.offset(of: \.mElement) == 8)
        let a = AudioObjectPropertyAddress(mSelector: 1, mScope: 2, mElement: 3)
        #expect(a == AudioObjectPropertyAddress(mSelector: 1, mScope: 2, mElement: 3))
        #expect(a != AudioObjectPropertyAddress())
        #expect(Set([a, a, AudioObjectPropertyAddress()]).count == 2)
    }
}
