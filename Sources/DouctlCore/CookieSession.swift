import DouctlHTTP

/// Coding's cookie session (issue #7), attached to API clients of coding-style profiles
/// that logged in with a password. Filled in with the Coding support.
public enum CookieSession {
    public static func hooks(for profile: ResolvedProfile, store: CredentialStore) -> SessionHooks? {
        nil
    }
}
