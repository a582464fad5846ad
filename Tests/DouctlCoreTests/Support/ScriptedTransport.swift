@testable import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlSystem
import DouctlTestSupport
import Testing

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

extension APIClient {
    /// This client with its options changed (clients are configured once, when made).
    func with(_ change: (inout APIClientOptions) -> Void) -> APIClient {
        var options = self.options
        change(&options)
        return APIClient(profile: profile, http: http, tokens: tokens, session: session, options: options)
    }
}
