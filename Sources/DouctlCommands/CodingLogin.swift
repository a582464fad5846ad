import DouctlCore
import DouctlJSON

/// Coding's account + password login with a cookie session (issue #7). Filled in with the
/// Coding support; until then it says so instead of sending anything.
enum CodingLogin {
    static func run(_ invocation: Invocation, profile: ResolvedProfile) throws(DouctlError) -> Credential {
        throw .unsupported("--password login is not built yet")
    }
}

enum CodingSession {
    /// The cookie session's summary for `auth status`, or nil when there is none.
    static func status(_ invocation: Invocation, profile: ResolvedProfile) throws(DouctlError) -> JSON? { nil }

    /// Deletes the profile's cookie jar; true when there was one.
    static func forget(_ invocation: Invocation, profile: ResolvedProfile) throws(DouctlError) -> Bool { false }
}
