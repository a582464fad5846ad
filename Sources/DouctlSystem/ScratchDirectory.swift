#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A fresh private directory (mode 0700, made by `mkdtemp`) for files a run throws away
/// afterwards: the demo's config directory, the sandbox's pictures.
public enum ScratchDirectory {
    /// Creates `PARENT/PREFIX-XXXXXX` and returns its path; `parent` is `$TMPDIR` as the
    /// caller read it, /tmp when that is unset or empty.
    public static func create(prefix: String, in parent: String?) throws(SystemError) -> String {
        var base = parent ?? ""
        if base.isEmpty { base = "/tmp" }
        while base.count > 1 && base.hasSuffix("/") { base.removeLast() }
        var template = Array("\(base)/\(prefix)-XXXXXX".utf8CString)
        let created = template.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress.flatMap { mkdtemp($0) }.map { String(cString: $0) }
        }
        guard let created else { throw SystemError("mkdtemp", path: base) }
        return created
    }

    /// Removes the directory and everything in it. Symbolic links are removed, never
    /// followed, so nothing outside the directory is touched.
    public static func remove(_ path: String) {
        if let names = try? FileIO.listDirectory(path) {
            for name in names {
                let entry = path + "/" + name
                if (try? FileIO.linkStatus(entry))?.isDirectory == true {
                    remove(entry)
                } else {
                    unlink(entry)
                }
            }
        }
        rmdir(path)
    }
}
