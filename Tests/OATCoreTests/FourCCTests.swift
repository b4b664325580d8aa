import Testing
@testable import OATCore

@Suite struct FourCCTests {
    @Test func roundTripsTextAndBytes() {
        let code = FourCC("lpcm")
        #expect(code.rawValue == 0x6C70_636D)
        #expect(code.description == "lpcm")
        #expect(code.bytes == [0x6C, 0x70, 0x63, 0x6D])
        #expect(FourCC(0x6C, 0x70, 0x63, 0x6D) == code)
    }

    @Test func padsShortCodesAndEscapesUnprintableBytes() {
        #expect(FourCC("aac").description == "aac ")
        #expect(FourCC(0x6D73_0011).description == "ms\\x00\\x11")
        #expect(!FourCC(0x6D73_0011).isPrintable)
    }

    @Test func formatIDsMatchAppleCodes() {
        #expect(AudioFormatCode.linearPCM.rawValue == 0x6C70_636D)
        #expect(AudioFormatCode.mpegLayer3.rawValue == 0x2E6D_7033)
        #expect(AudioFormatCode.mpeg4AAC.rawValue == 0x6161_6320)
        #expect(AudioFormatCode.appleLossless.rawValue == 0x616C_6163)
        #expect(AudioFormatCode.appleIMA4.rawValue == 0x696D_6134)
    }
}
