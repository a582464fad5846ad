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

/// FNV-1a: a stable choice per input (Swift's Hasher is seeded per process).
func stableHash(_ bytes: [UInt8]) -> UInt64 {
    bytes.reduce(0xcbf2_9ce4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
}

/// What douctl writes for an entry must read back the same.
func checkRoundTrip(_ credential: Credential) {
    guard let again = Credential(json: credential.json) else { fuzzFailure("written entry does not load") }
    if again.accessToken != credential.accessToken || again.refreshToken != credential.refreshToken
        || again.scopes != credential.scopes || again.userName != credential.userName || again.userID != credential.userID {
        fuzzFailure("entry changed across a write and a load")
    }
    _ = credential.isExpired(now: 1_700_000_000)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    // The entry decoder on every input (fast)...
    if let json = try? JSONParser.parse(bytes) {
        for (_, value) in json["profiles"]?.objectValue ?? JSONObject() {
            if let credential = Credential(json: value) { checkRoundTrip(credential) }
        }
        if let value = json["expires_at"]?.stringValue { _ = Timestamp.parseRFC3339(value) }
    }
    _ = Timestamp.parseRFC3339(String(decoding: bytes, as: UTF8.self))
    // ...and the whole loader, file and all, on one input in eight: a debug build's file
    // read costs milliseconds, which would otherwise cap this target at a few runs a second.
    guard stableHash(bytes) % 8 == 0 else { return 0 }
    // A plain write (no fsync per input).
    let fd = open(store.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard fd >= 0 else { fuzzFailure("cannot write \(store.path)") }
    do { try FileIO.writeAll(fd, bytes) } catch { fuzzFailure("cannot write \(store.path): \(error)") }
    close(fd)
    do {
        if let credential = try store.load("sandbox") { checkRoundTrip(credential) }
    } catch {
        _ = "\(error)"
    }
    return 0
}
