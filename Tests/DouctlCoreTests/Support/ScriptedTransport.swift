@testable import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlSystem
import DouctlTestSupport
import Testing

/// An HTTP transport that answers from a script and records every request, so the core's
/// HTTP behaviour is tested in-process: no sockets, no libcurl, no waiting.
final class ScriptedTransport: HTTPTransport {
    /// What one request gets: a reply, or a transport failure.
    enum Answer {
        case reply(HTTPResponse)
        case failure(TransportError)

        static func json(_ status: Int, _ text: String, headers: [HTTPHeader] = []) -> Answer {
            .reply(HTTPResponse(head: HTTPResponseHead(status: status, headers: [HTTPHeader("Content-Type", "application/json")] + headers),
                                body: Array(text.utf8)))
        }
    }

    private(set) var requests: [HTTPRequest] = []
    private var script: [Answer]
    /// Sees each request as it is sent (a test's clock, say).
    var observe: ((HTTPRequest) -> Void)?

    init(_ script: [Answer] = []) {
        self.script = script
    }

    /// Adds answers for the requests still to come.
    func then(_ answers: Answer...) {
        script += answers
    }

    /// Answers not used by the requests sent so far.
    var unused: Int { script.count }

    func send(
        _ request: HTTPRequest,
        progress: ((TransferProgress) -> Void)?,
        restartSink: (() -> Bool)?,
        head: ((HTTPResponseHead) -> Void)?,
        sink: (UnsafeRawBufferPointer) -> Bool
    ) throws(TransportError) -> HTTPResponseHead {
        requests.append(request)
        observe?(request)
        guard !script.isEmpty else {
            Issue.record("an unscripted request: \(request.method) \(request.url)")
            throw .connectionLost("no scripted answer for \(request.method) \(request.url)")
        }
        switch script.removeFirst() {
        case .failure(let error):
            throw error
        case .reply(let response):
            var responseHead = response.head
            if responseHead.url == nil { responseHead.url = request.url }
            head?(responseHead)
            _ = response.body.withUnsafeBytes { sink($0) }
            return responseHead
        }
    }
}

extension HTTPRequest {
    func header(_ name: String) -> String? { headers.value(of: name) }

    /// The query of the URL, decoded.
    var query: [(String, String)] {
        guard let question = url.firstIndex(of: "?") else { return [] }
        return URLParts.parseQuery(String(url[url.index(after: question)...]))
    }

    func queryValue(_ name: String) -> String? { query.last { $0.0 == name }?.1 }

    /// The URL without its query.
    var path: String { String(url.prefix { $0 != "?" }) }

    /// A form body's fields, decoded.
    var form: [(String, String)] {
        guard case .bytes(let bytes) = body else { return [] }
        return URLParts.parseQuery(String(decoding: bytes, as: UTF8.self).replacingAll("+", with: " "))
    }

    func formValue(_ name: String) -> String? { form.last { $0.0 == name }?.1 }
}

/// An access token source that says what the test tells it and counts refreshes.
final class ScriptedTokens: AccessTokenSource {
    var token: String?
    /// The tokens successive refreshes return (nil: none can be had).
    var refreshes: [String?]
    private(set) var refreshed: [String] = []

    init(_ token: String?, refreshes: [String?] = []) {
        self.token = token
        self.refreshes = refreshes
    }

    func currentToken() throws(DouctlError) -> String? { token }

    func refresh(rejected token: String) throws(DouctlError) -> String? {
        refreshed.append(token)
        guard !refreshes.isEmpty else { return nil }
        let fresh = refreshes.removeFirst()
        if let fresh { self.token = fresh }
        return fresh
    }

    var rejectionHint: String { "scripted tokens were refused" }
}

/// Profiles as `ConfigFile` resolves them from the built-in presets.
enum TestProfiles {
    static func douban() throws(DouctlError) -> ResolvedProfile { try ConfigFile().resolve("sandbox") }
    static func coding() throws(DouctlError) -> ResolvedProfile { try ConfigFile().resolve("coding-sandbox") }
}

/// A clock that moves only when the code under test sleeps: waits take no time.
final class VirtualClock {
    static let start = 1_000_000.0
    private(set) var now = VirtualClock.start
    private(set) var slept: Double = 0

    func sleep(_ seconds: Double) {
        now += seconds
        slept += seconds
    }
}

/// Values collected from closures the code under test calls (lines it says, times it sends).
final class Recorder<Value>: @unchecked Sendable {
    private(set) var all: [Value] = []
    func add(_ value: Value) { all.append(value) }
}
