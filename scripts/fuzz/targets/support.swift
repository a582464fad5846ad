// Shared by every fuzz target (compiled into each).
#if canImport(Glibc)
import Glibc
#endif

/// A broken invariant: report it and abort, so libFuzzer saves the input as a crash.
func fuzzFailure(_ message: String) -> Never {
    let line = "fuzz invariant broken: \(message)\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
    abort()
}

/// Splits fuzz input into pieces at NUL bytes (for argv-like inputs).
func pieces(_ data: UnsafePointer<UInt8>, _ size: Int) -> [String] {
    UnsafeBufferPointer(start: data, count: size)
        .split(separator: 0, omittingEmptySubsequences: false)
        .map { String(decoding: $0, as: UTF8.self) }
}

/// The first byte as a selector, and the rest.
func selector(_ data: UnsafePointer<UInt8>, _ size: Int) -> (UInt8, [UInt8]) {
    guard size > 0 else { return (0, []) }
    return (data[0], Array(UnsafeBufferPointer(start: data + 1, count: size - 1)))
}
