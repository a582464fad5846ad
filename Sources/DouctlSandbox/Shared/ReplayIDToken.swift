import DouctlJSON
import DouctlSystem

/// An ID token the replay re-issues (OpenID Connect Core §2): the recorded claims where the
/// recording kept them (else `sub` the recorded userinfo's), then `iss` the replay's issuer, `aud` the client, fresh `iat`, `exp`
/// and `auth_time`, the authorization request's `nonce` (none when it sent none), and
/// `at_hash` for the access token issued with it (§3.1.3.6: the left half of its SHA-256).
/// Signed RS256 or ES256 (RFC 7518 §3.3, §3.4) with the replay's key (`ReplayLogin.signer`).
struct ReplayIDToken {
    var claims = JSONObject()

    init(recorded: String, subject: String? = nil, issuer: String, audience: String?, now: Int, lifetime: Int, nonce: String?, accessToken: String?) {
        if let recordedClaims = ReplayLogin.claims(recorded)?.objectValue {
            for (key, value) in recordedClaims where key != "nonce" { claims[key] = value }
        }
        if claims["sub"] == nil { claims["sub"] = .string(subject ?? "replay-user") }
        claims["iss"] = .string(issuer)
        if let audience { claims["aud"] = .string(audience) }
        if let nonce { claims["nonce"] = .string(nonce) }
        claims["auth_time"] = .int(now)
        claims["iat"] = .int(now)
        claims["exp"] = .int(now + lifetime)
        if let accessToken {
            claims["at_hash"] = .string(Base64.encode(Array(Digest.sha256(Array(accessToken.utf8)).prefix(16)), urlSafe: true))
        } else {
            claims["at_hash"] = nil
        }
    }

    /// An algorithm, the key id the JWKS serves its key under, and the signing function.
    struct Signer {
        var algorithm: String
        var keyID: String
        var sign: ([UInt8]) -> [UInt8]
    }

    /// The compact JWS: header and claims base64url-encoded, then the signature (ES256's
    /// 64-byte r ‖ s, RS256's modulus-long one).
    func signed(with signer: Signer) -> String {
        let header: JSON = ["alg": .string(signer.algorithm), "typ": "JWT", "kid": .string(signer.keyID)]
        let input = Base64.encode(header.serialized(.compact), urlSafe: true) + "." + Base64.encode(JSON.object(claims).serialized(.compact), urlSafe: true)
        return input + "." + Base64.encode(signer.sign(Array(input.utf8)), urlSafe: true)
    }
}
