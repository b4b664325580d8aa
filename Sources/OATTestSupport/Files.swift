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

/// Reads a file's bytes (empty when missing).
public func fileBytes(_ path: String) -> [UInt8] { Corpus.read(path) ?? [] }

/// Writes text to a file.
@discardableResult
public func writeText(_ path: String, _ text: String) -> Bool { writeFile(path, Array(text.utf8)) }

/// Lists a directory's entry names.
public func listDirectory(_ path: String) -> [String] {
    guard let d = opendir(path) else { return [] }
    defer { closedir(d) }
    var names: [String] = []
    while let e = readdir(d) {
        let name = withUnsafePointer(to: e.pointee.d_name) { String(cString: UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self)) }
        if name != "." && name != ".." { names.append(name) }
    }
    return names.sorted()
}
