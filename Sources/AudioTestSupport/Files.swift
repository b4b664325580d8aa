#if canImport(Glibc)
import Glibc
#endif

/// Writes `bytes` to `path`; returns false on failure.
public func writeFile(_ path: String, _ bytes: [UInt8]) -> Bool {
    guard let f = fopen(path, "wb") else { return false }
    defer { fclose(f) }
    return bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, f) } == bytes.count
}

/// Removes `path`, ignoring errors.
public func removeFile(_ path: String) { unlink(path) }
