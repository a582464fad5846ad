import DouctlHTTP
import DouctlJSON
import DouctlSystem

/// Where `douctl upload` sends each file.
public struct UploadTarget: Sendable, Equatable {
    public var path: String
    public var field: String
    public var fields: [(String, String)]
    /// Runs the style's picture check first (the default target is a status picture).
    public var checksPicture: Bool

    public init(path: String, field: String, fields: [(String, String)] = [], checksPicture: Bool = false) {
        self.path = path
        self.field = field
        self.fields = fields
        self.checksPicture = checksPicture
    }

    public static func == (lhs: UploadTarget, rhs: UploadTarget) -> Bool {
        lhs.path == rhs.path && lhs.field == rhs.field && lhs.checksPicture == rhs.checksPicture
            && lhs.fields.elementsEqual(rhs.fields) { $0 == $1 }
    }
}

/// The outcome of one file's upload.
public struct UploadResult: Sendable, Equatable {
    public var index: Int
    public var file: String
    public var outcome: Outcome
    public var bytes: Int64
    public var seconds: Double

    public enum Outcome: Sendable, Equatable {
        case uploaded(JSON?)
        case failed(DouctlError)
    }
}

/// Uploads files one multipart request each, `parallel` at a time, and hands results over
/// in the order the files were given, as soon as every earlier one is done.
public struct UploadBatch: Sendable {
    public var files: [String]
    public var target: UploadTarget
    public var parallel: Int
    public var factory: ClientFactory

    public init(files: [String], target: UploadTarget, parallel: Int, factory: ClientFactory) {
        self.files = files
        self.target = target
        self.parallel = parallel
        self.factory = factory
    }

    /// `progress(index, sent, total)` is called from worker threads; `deliver` is called in
    /// file order (also from worker threads, one at a time). Files not started before an
    /// interrupt get no result.
    public func run(
        progress: @escaping @Sendable (Int, Int64, Int64) -> Void,
        deliver: @escaping @Sendable (UploadResult) -> Void
    ) {
        let ordering = LockedValue<(next: Int, waiting: [Int: UploadResult])>((0, [:]))
        let batch = self
        let clients = ClientPool(factory: factory)
        let cancellation = factory.http.cancellation
        runConcurrently(count: files.count, width: parallel) { index in
            guard !cancellation.isRequested else { return }
            let result = batch.upload(index, clients: clients, progress: progress)
            // Deliver under the lock so lines come out whole and in order.
            ordering.withLock { state in
                state.waiting[index] = result
                while let ready = state.waiting.removeValue(forKey: state.next) {
                    deliver(ready)
                    state.next += 1
                }
            }
        }
    }

    /// The file's bytes among `sent` bytes of a multipart body of `total`: the part headers
    /// come first and count for nothing, so progress says 99 B for a 99-byte file, not the
    /// body's 266 B.
    public static func fileBytesSent(_ sent: Int64, of total: Int64, fileSize: Int64) -> Int64 {
        guard total > 0, fileSize > 0 else { return 0 }
        if sent >= total { return fileSize }
        return min(fileSize, max(0, sent - max(0, total - fileSize)))
    }

    private func upload(_ index: Int, clients: ClientPool, progress: @escaping @Sendable (Int, Int64, Int64) -> Void) -> UploadResult {
        let file = files[index]
        let started = Timestamp.now()
        var size: Int64 = 0
        let outcome: UploadResult.Outcome
        do {
            let client = try clients.take()
            defer { clients.give(client) }
            size = try (target.checksPicture ? client.service.checkPicture(file) : MultipartForm.checkReadableFile(file)).size
            let form = MultipartForm(parts: target.fields.map { .field(name: $0.0, value: $0.1) } + [.file(name: target.field, path: file)])
            let request = APIRequest(method: "POST", path: target.path, body: .multipart(form))
            let fileSize = size
            let reply = try client.send(request) { transfer in
                progress(index, Self.fileBytesSent(transfer.uploaded, of: transfer.uploadTotal, fileSize: fileSize), fileSize)
            }
            outcome = .uploaded(reply.payload)
        } catch {
            outcome = .failed(error)
        }
        return UploadResult(index: index, file: file, outcome: outcome, bytes: size, seconds: Timestamp.now() - started)
    }
}

/// API clients kept for reuse by a batch's workers: each worker takes one, uses it for one
/// file and gives it back, so `--parallel N` opens N connections (kept alive) however many
/// files there are. libcurl handles are not shared between threads at once.
final class ClientPool: @unchecked Sendable {
    /// Clients not in use; only one thread touches a client at a time (taken → given back).
    private struct Idle: @unchecked Sendable { var clients: [APIClient] = [] }
    private let factory: ClientFactory
    private let idle = LockedValue(Idle())

    init(factory: ClientFactory) {
        self.factory = factory
    }

    func take() throws(DouctlError) -> APIClient {
        let reused = idle.withLock { state -> Idle in
            var taken = Idle()
            if let last = state.clients.popLast() { taken.clients = [last] }
            return taken
        }
        if let client = reused.clients.first { return client }
        return try factory.make()
    }

    func give(_ client: APIClient) {
        let returned = Idle(clients: [client])
        idle.withLock { $0.clients += returned.clients }
    }
}
