import DouctlSystem
import Testing

/// RS256 in plain Swift (`RSA`), checked against a 2048-bit key and signature made by
/// Python's `cryptography` (OpenSSL), PKCS #1 v1.5 with SHA-256, checked in as constants:
/// the modulus from the primes, the deterministic signature byte for byte, verification of
/// good and changed ones; and a generated key's own roundtrip.
@Suite struct RSATests {
    static let p = "F5FFA4854433D76C86FBC7DA33714E7B057E3128C267A50E2EDB51834C7E588B0FDD42A7E457573CDD912C66CE3C677F"
        + "9319814157436E4D8073EBB8560B0F9DADE023ABB53C2C81DFACE25A0058C4A7DB0F3197BA71F117A1588EF2F3DB4C2D581079FE4819A59270A0"
        + "DD36320357C74E892FE4F11098EB972A5862DEFA4375"
    static let q = "C1C02A8097228904146145B0B951E2CD36FC44178EABC200789228AC27E13D2CA906BD9ADD19864DB21992A522DD79C4"
        + "ECA404F61D61E25A09D944B1E3ADFC947CDC3FC41010C12C4D56BEB62B9433887E00E8575467CD25F3BE2D25228639A0298BC9BB7D548CC7D7"
        + "4FCCBE12AC4E192D1AC4792A15EC90B9A9A2E43EE841A1"
    static let n = "BA2E639B5E6955C52DF98B22193DF62339C32F327C38112B4428825AB1ED109548F0196EA992283720BAA72FFFFCD3C7"
        + "79E7893491EFD47F7D5D3E728CDC62CA87A254F8608A0E2A1AD90C1D60F4478035164A7EC78B77378E631CABE10F5E37C5071CAA84CDA6BDC4"
        + "A0B430FF35E36E2CF183AFBE9FBA157132BBF3BF5623F4E71AF239BEAE9F3FFE61D1BCE603361A133DD22385915ED9A0B7E34B0CEB52A4D1D0"
        + "1C4A40953650D1A3571C74F1B8B0C1FD5558B3AD1B53507EA44505DF2F98A2332DFB329C3D50BCA32750A324AAD2466140C69040A3B8E5959A"
        + "A61268F6DCBC4A13E8AA188633A343B628D7D3C6206F6E15A58DFD6242E87E7E233E8D2195"
    static let message = Array("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9".utf8)
    static let signature = "A27E9C7AAE4B1AD313D05A924ABC039C654780CC03936889E425F55358521C449386B3A3E3A7991FFDF1933F21ABDB4"
        + "367C065FF4F10FD7D3DD68ADC21860FECC2F712CF1B13F3FB7B4EAED68528409E000CC969F6D2EBC43E9CBCC9FACC38BC2A75B81CFB5632334"
        + "A7487F866BEAA953D081A2E74D098493FBC14FEBD57A23BB210D1B8D31DADC03B2CE332DB735E8DEA7C48776F8BD3FBBEAB596D85E686781D2"
        + "61844416914F5111CEE90BAFF53AA514219E9EAF8CBC64E90FD4FFC36D6DA0330365FD84925B64D2D1F6603AFCD099101555543BD2462ABEB3"
        + "0A371E5E4AA7122D6E63D281307B18FF9BB8A3DDF012FD8C9E1D8B78C45A51FBAFDC7A12239"

    static func bytes(_ hex: String) -> [UInt8] { P256Tests.bytes(hex) }

    @Test func theKnownKeySignsWhatOpenSSLSigned() throws {
        let key = try #require(RSA.PrivateKey(p: Self.bytes(Self.p), q: Self.bytes(Self.q)))
        #expect(Digest.hex(key.modulus) == Self.n.lowercased())
        #expect(key.publicExponent == [0x01, 0x00, 0x01])
        #expect(Digest.hex(key.sign(Self.message)) == Self.signature.lowercased())
    }

    @Test func verificationAcceptsTheVectorAndRefusesChanges() {
        let n = Self.bytes(Self.n), e: [UInt8] = [1, 0, 1], signature = Self.bytes(Self.signature)
        #expect(RSA.verify(signature, message: Self.message, modulus: n, exponent: e))
        #expect(!RSA.verify(signature, message: Self.message + [0x2e], modulus: n, exponent: e), "another message")
        var flipped = signature
        flipped[100] ^= 1
        #expect(!RSA.verify(flipped, message: Self.message, modulus: n, exponent: e), "a changed signature")
        #expect(!RSA.verify(Array(signature.dropFirst()), message: Self.message, modulus: n, exponent: e), "a short signature")
        #expect(!RSA.verify(n, message: Self.message, modulus: n, exponent: e), "s = n")
        #expect(!RSA.verify(signature, message: Self.message, modulus: n, exponent: [3]), "another exponent")
    }

    @Test func aGeneratedKeySignsWhatItsPublicKeyVerifies() throws {
        let key = RSA.PrivateKey.generate()
        #expect(key.modulus.count == 256)
        #expect(key.modulus[0] & 0x80 != 0, "a full 2048-bit modulus")
        #expect(key.publicExponent == [0x01, 0x00, 0x01])
        let signature = key.sign(Self.message)
        #expect(signature.count == 256)
        #expect(RSA.verify(signature, message: Self.message, modulus: key.modulus, exponent: key.publicExponent))
        #expect(!RSA.verify(signature, message: Self.message, modulus: Self.bytes(Self.n), exponent: key.publicExponent), "another key")
    }

    @Test func unusableKeysAreRefused() {
        #expect(RSA.PrivateKey(p: Self.bytes(Self.p), q: Self.bytes(Self.p)) == nil, "p = q")
        #expect(RSA.PrivateKey(p: [0x0c], q: Self.bytes(Self.q)) == nil, "an even p")
        #expect(RSA.PrivateKey(p: Self.bytes(Self.p), q: Self.bytes(Self.q), e: 4) == nil, "an even e")
        #expect(RSA.PrivateKey(p: [0x07], q: [0x0b], e: 3) == nil, "e shares a factor with p − 1")
    }
}

extension RSATests {
    /// The checked-in key: tests that sign RS256 in process use it (through
    /// `ReplayLogin.testRSAKey`) rather than making 2048-bit primes in a debug build.
    static let fixedKey = RSA.PrivateKey(p: bytes(p), q: bytes(q))
}
