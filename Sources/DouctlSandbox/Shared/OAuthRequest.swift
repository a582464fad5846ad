import DouctlServer
import DouctlSystem

/// What both fakes read from an OAuth request the same way: its parameters and the client's
/// credentials.
enum OAuthRequest {
    static let deviceGrantType = "urn:ietf:params:oauth:grant-type:device_code"

    /// Form (and query) parameters of an OAuth POST: the wiki shows them in the query string,
    /// every SDK sends a form; the form wins.
    static func parameters(_ exchange: Exchange) throws -> [String: String] {
        var parameters: [String: String] = [:]
        for (name, value) in exchange.request.query where parameters[name] == nil { parameters[name] = value }
        var fromForm: [String: String] = [:]
        for (name, value) in try exchange.fields() where fromForm[name] == nil { fromForm[name] = value }
        parameters.merge(fromForm) { _, form in form }
        return parameters
    }

    /// client_id and client_secret from HTTP Basic (RFC 6749 §2.3.1, form-encoded inside) or the form.
    static func clientCredentials(_ exchange: Exchange, _ parameters: [String: String]) -> (id: String?, secret: String?) {
        if let header = exchange.request.headers["Authorization"], header.lowercased().hasPrefix("basic "),
           let decoded = Base64.decode(String(header.dropFirst(6)).trimmingSpaces()) {
            let pair = String(decoding: decoded, as: UTF8.self)
            let pieces = pair.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            let id = PercentEncoding.decode(String(pieces[0]), plusAsSpace: true)
            let secret = pieces.count > 1 ? PercentEncoding.decode(String(pieces[1]), plusAsSpace: true) : nil
            return (id, secret)
        }
        return (parameters["client_id"], parameters["client_secret"])
    }
}

/// PKCE (RFC 7636): the challenge an authorization request may carry, and the verifier the
/// token request must then show.
enum PKCE {
    /// 43 to 128 characters of `[A-Za-z0-9-._~]`, what challenges and verifiers are made of.
    static func isWellFormed(_ text: String) -> Bool {
        (43...128).contains(text.utf8.count) && text.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                 UInt8(ascii: "~"):
                return true
            default:
                return false
            }
        }
    }

    /// Why `verifier` does not satisfy the code's PKCE challenge (RFC 7636 §4.6), or nil.
    static func problem(_ record: AuthorizationCodeRecord, verifier: String?) -> String? {
        guard let challenge = record.codeChallenge else { return nil }
        guard let verifier, !verifier.isEmpty else { return "code_verifier is missing" }
        guard isWellFormed(verifier) else { return "code_verifier is malformed" }
        let expected = record.codeChallengeMethod == "S256" ? Base64.encode(Digest.sha256(Array(verifier.utf8)), urlSafe: true) : verifier
        return expected == challenge ? nil : "code_verifier does not match the code_challenge"
    }
}
