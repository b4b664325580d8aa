@testable import OATCore
import Testing

/// The tools' number formatting (they print without Foundation's `String(format:)`).
@Suite struct TextFormattingTests {
    @Test func fixedRoundsLikePrintf() {
        #expect(fixed(3.14159, 3) == "3.142")
        #expect(fixed(2.0, 1) == "2.0")
        #expect(fixed(-0.04, 1) == "0.0" || fixed(-0.04, 1) == "-0.0")
        #expect(fixed(-12.35, 1) == "-12.4")
        #expect(fixed(59.96, 1) == "60.0")
        #expect(fixed(7, 0) == "7")
        #expect(fixed(0.005, 2) == "0.01")
        #expect(fixed(.infinity, 1) == "inf")
    }

    @Test func leftPaddingMatchesPrintfWidths() {
        // afrecord's meter: "%02d:%04.1f" and "%6.1f".
        #expect(leftPadded("3", 2, "0") + ":" + leftPadded(fixed(5.25, 1), 4, "0") == "03:05.3")
        #expect(leftPadded(fixed(-120, 1), 6) == "-120.0")
        #expect(leftPadded(fixed(-6.02, 1), 6) == "  -6.0")
        #expect(leftPadded("toolong", 3) == "toolong")
    }
}
