import Testing
@testable import AudioCore
@Test func fourCC() { #expect(FourCC("lpcm").description == "lpcm") }
