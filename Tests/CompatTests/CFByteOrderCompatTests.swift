#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Testing

/// The `CheckError` idiom copied through many macOS Core Audio programs: a four-character code is
/// made big-endian with `CFSwapInt32HostToBig` and printed as `'abcd'` when all four bytes print.
private func describeStatus(_ error: OSStatus) -> String {
    var code = CFSwapInt32HostToBig(UInt32(bitPattern: error))
    let bytes = withUnsafeBytes(of: &code) { Array($0) }
    if bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) {
        return "'" + String(decoding: bytes, as: UTF8.self) + "'"
    }
    return String(error)
}

@Suite struct CFByteOrderCompatTests {
    @Test("CheckError prints an OSStatus as its four-character code")
    func checkErrorIdiom() {
        #expect(describeStatus(kAudioFileStreamError_UnsupportedFileType) == "'typ?'")
        #expect(describeStatus(kAudioQueueErr_InvalidBuffer) == "-66687")
    }

    @Test("CFSwapInt* swaps and converts between host, big and little endian")
    func swaps() {
        #expect(CFSwapInt16(0x1234) == 0x3412)
        #expect(CFSwapInt32(0x1234_5678) == 0x7856_3412)
        #expect(CFSwapInt64(0x0102_0304_0506_0708) == 0x0807_0605_0403_0201)
        let little = CFByteOrderGetCurrent() == CFByteOrder(CFByteOrderLittleEndian.rawValue)
        #expect(little == (1.littleEndian == 1))
        #expect(CFSwapInt16HostToBig(0x1234) == (little ? 0x3412 : 0x1234))
        #expect(CFSwapInt32HostToBig(0x1234_5678) == (little ? 0x7856_3412 : 0x1234_5678))
        #expect(CFSwapInt64HostToBig(1) == (little ? 1 << 56 : 1))
        #expect(CFSwapInt16BigToHost(CFSwapInt16HostToBig(0xBEEF)) == 0xBEEF)
        #expect(CFSwapInt32BigToHost(CFSwapInt32HostToBig(0xDEAD_BEEF)) == 0xDEAD_BEEF)
        #expect(CFSwapInt64BigToHost(CFSwapInt64HostToBig(42)) == 42)
        #expect(CFSwapInt16HostToLittle(0x1234) == (little ? 0x1234 : 0x3412))
        #expect(CFSwapInt32HostToLittle(7) == (little ? 7 : 7 << 24))
        #expect(CFSwapInt64HostToLittle(7) == (little ? 7 : 7 << 56))
        #expect(CFSwapInt16LittleToHost(CFSwapInt16HostToLittle(0xBEEF)) == 0xBEEF)
        #expect(CFSwapInt32LittleToHost(CFSwapInt32HostToLittle(0xDEAD_BEEF)) == 0xDEAD_BEEF)
        #expect(CFSwapInt64LittleToHost(CFSwapInt64HostToLittle(42)) == 42)
        #expect(CFByteOrderUnknown.rawValue == 0 && CFByteOrderBigEndian.rawValue == 2)
    }

    @Test("CFSwapInt* have Apple's Swift types")
    func signatures() {
        let _: (UInt16) -> UInt16 = CFSwapInt16
        let _: (UInt32) -> UInt32 = CFSwapInt32
        let _: (UInt64) -> UInt64 = CFSwapInt64
        let _: (UInt32) -> UInt32 = CFSwapInt32HostToBig
        let _: (UInt32) -> UInt32 = CFSwapInt32BigToHost
        let _: (UInt32) -> UInt32 = CFSwapInt32HostToLittle
        let _: (UInt32) -> UInt32 = CFSwapInt32LittleToHost
        let _: () -> CFByteOrder = CFByteOrderGetCurrent
        let _: __CFByteOrder = CFByteOrderLittleEndian
        let order: CFByteOrder = CFByteOrderGetCurrent()
        #expect(order == 1 || order == 2)
    }
}
