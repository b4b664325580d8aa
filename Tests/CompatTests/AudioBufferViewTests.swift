// Apple's CoreAudio overlay views of an AudioBuffer, as AudioKit's core uses them (only the
// import differs).
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Testing

@Suite struct AudioBufferViewTests {
    /// A typed buffer becomes an AudioBuffer and back: same address, byte size, channels, samples;
    /// writes through one view are read through the other.
    @Test func typedAndRawViewsOfAnAudioBuffer() {
        let storage = UnsafeMutableBufferPointer<Float>.allocate(capacity: 6)
        defer { storage.deallocate() }
        for i in 0..<6 { storage[i] = Float(i) * 0.25 }
        let buffer = AudioBuffer(storage, numberOfChannels: 2)
        #expect(buffer.mNumberChannels == 2 && buffer.mDataByteSize == 24 && buffer.mData == UnsafeMutableRawPointer(storage.baseAddress))
        let floats = UnsafeMutableBufferPointer<Float>(buffer)
        #expect(floats.count == 6 && floats[5] == 1.25)
        floats[0] = -1
        #expect(storage[0] == -1)
        let read = UnsafeBufferPointer<Float>(buffer)
        #expect(Array(read) == [-1, 0.25, 0.5, 0.75, 1, 1.25])
        let raw = UnsafeMutableRawBufferPointer(buffer)
        #expect(raw.count == 24)
        #expect(UnsafeMutableBufferPointer<Int16>(buffer).count == 12, "a view of another type counts by its stride")
        var empty = AudioBuffer()
        empty.mDataByteSize = 64
        #expect(UnsafeMutableBufferPointer<Float>(empty).isEmpty && UnsafeMutableRawBufferPointer(empty).isEmpty,
                "no data is an empty view, not a trap")
    }
}
