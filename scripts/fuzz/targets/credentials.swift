// Fuzz target: the credentials.json loader, through the real store on a real file (so the
// mode check, the JSON reader and the entry decoder all run), and the write-back round trip.
@testable import DouctlCore
import DouctlJSON
import DouctlSystem
#if canImport(Glibc)
import Glibc
#endif

let directory: ConfigDirectory = {
    // On tmpfs where there is one: the store's reads are what is fuzzed, not the disk.
    let parent = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp"
    var template = Array("\(parent)/douctl-fuzz-credentials-XXXXXX".utf8CString)
    let path = template.withUnsafeMutableBufferPointer { buffer -> String? in
        guard let base = buffer.baseAddress, let made = mkdtemp(base) else { return nil }
        return String(cString: made)
    }
    guard let path else { fuzzFailure("mkdtemp failed") }
    return ConfigDirectory(path: path)
}()
let store = CredentialStore(directory: directory)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    // A plain write (no fsync per input, which would make this 1000 times slower).
    let fd = open(store.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard fd >= 0 else { fuzzFailure("cannot write \(store.path)") }
    do { try FileIO.writeAll(fd, bytes) } catch { fuzzFailure("cannot write \(store.path): \(error)") }
    close(fd)
    for profile in ["sandbox", "default", ""] {
        do {
            if let credential = try store.load(profile) {
                _ = credential.isExpired(now: 1_700_000_000)
                // What douctl writes must read back the same.
                guard let again = Credential(json: credential.json) else { fuzzFailure("written entry does not load") }
                if again.accessToken != credential.accessToken || again.refreshToken != credential.refreshToken
                    || again.scopes != credential.scopes || again.userName != credential.userName {
                    fuzzFailure("entry changed across a write and a load")
                }
            }
        } catch {
            _ = "\(error)"
        }
    }
    if let json = try? JSONParser.parse(bytes), let value = json["expires_at"]?.stringValue {
        _ = Timestamp.parseRFC3339(value)
    }
    _ = Timestamp.parseRFC3339(String(decoding: bytes, as: UTF8.self))
    return 0
}
