// libFuzzer entry for the 'flac' family (see Fuzz/Sources/FuzzHarness.swift).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzHarness.run(UnsafeRawBufferPointer(start: data, count: size), family: .flac)
    return 0
}
