/// Carries a value that is not `Sendable` to another thread whose use of it is safe by
/// construction: the one thread that alone uses it, or a C API whose contract makes sharing its
/// pointers safe. The one such box of the package; the caller states why in a comment.
package struct UncheckedSendable<Value>: @unchecked Sendable {
    /// The carried value.
    package var value: Value

    /// Wraps `value`.
    package init(_ value: Value) { self.value = value }
}
