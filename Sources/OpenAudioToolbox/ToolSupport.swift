#if canImport(Glibc)
import Glibc
#endif

/// Writes `text` as one line to standard error (the command-line tools' error reporting).
package func writeStandardError(_ text: String) {
    let line = text.hasSuffix("\n") ? text : text + "\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
}
