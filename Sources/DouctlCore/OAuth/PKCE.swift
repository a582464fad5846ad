import DouctlSystem

/// PKCE (RFC 7636): a high-entropy verifier and its S256 challenge.
public struct PKCE: Sendable, Equatable {
    public let verifier: String
    public var challenge: String { Self.challenge(for: verifier) }
    public let method = "S256"

    /// 64 characters from the unreserved set, drawn from the system CSPRNG (getrandom).
    public init() {
        var generator = SystemRandomNumberGenerator()
        verifier = Self.randomString(length: 64, using: &generator)
    }

    public init(verifier: String) {
        self.verifier = verifier
    }

    /// BASE64URL(SHA256(ASCII(verifier))), unpadded.
    public static func challenge(for verifier: String) -> String {
        Base64.encode(Digest.sha256(Array(verifier.utf8)), urlSafe: true)
    }

    /// Random text over RFC 3986's unreserved characters (for verifiers and `state`).
    public static func randomString(length: Int, using generator: inout some RandomNumberGenerator) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        return String((0..<length).map { _ in alphabet[Int(generator.next(upperBound: UInt64(alphabet.count)))] })
    }
}
