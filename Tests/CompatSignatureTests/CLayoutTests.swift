// Apple's C structs and C callback types, checked by the compiler and by their 64-bit layout:
// the callback typealiases are `@convention(c)` as on Apple (a global function converts to them; a
// capturing closure does not compile, which no runtime test can show), and the structs they point
// at have Apple's sizes and field offsets, so a pointer handed to or from C code reads the same
// bytes.

import OpenAudioToolbox
import Testing

private func halListener(_ object: AudioObjectID, _ count: UInt32, _ addresses: UnsafePointer<AudioObjectPropertyAddress>,
                         _ client: UnsafeMutableRawPointer?) -> OSStatus { OSStatus(count) }

@Suite struct CLayoutTests {
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
