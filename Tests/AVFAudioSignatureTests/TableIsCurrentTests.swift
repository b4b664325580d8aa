import Foundation
import Testing

/// The generated conformance file must come from the current table: it records the table's
/// FNV-1a hash, recomputed here (run Scripts/gen-avf-signature-tests.py after editing the table).
@Suite struct AVFAudioSignatureTableIsCurrent {
    @Test("AVFAudioSignatureConformance.swift was generated from the current docs/api-avfaudio-signatures.tsv")
    func generatedFileIsCurrent() throws {
        let here = URL(fileURLWithPath: #filePath)
        let root = here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let table = try Data(contentsOf: root.appendingPathComponent("docs/api-avfaudio-signatures.tsv"))
        let generated = try String(contentsOf: here.deletingLastPathComponent().appendingPathComponent("AVFAudioSignatureConformance.swift"),
                                   encoding: .utf8)
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in table {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        let expected = "// table-fnv1a64: " + String(hash, radix: 16).leftPadded(to: 16)
        #expect(generated.contains(expected), "run Scripts/gen-avf-signature-tests.py: the table changed")
    }
}

private extension String {
    func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
