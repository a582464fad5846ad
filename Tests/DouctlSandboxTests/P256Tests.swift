import DouctlSystem
import Testing

/// ES256 in plain Swift (`P256`), checked against RFC 6979 A.2.5 (NIST P-256, SHA-256): the
/// public key, the deterministic nonce's signatures, and verification of good and bad ones.
@Suite struct P256Tests {
    static func bytes(_ hex: String) -> [UInt8] {
        let digits = Array(hex.utf8)
        return stride(from: 0, to: digits.count, by: 2).map { index in
            UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16) ?? 0
        }
    }

    static let scalar = bytes("C9AFA9D845BA75166B5C215767B1D6934E50C3DB36E89B127B8A622B120F6721")
    static let x = "60FED4BA255A9D31C961EB74C6356D68C049B8923B61FA6CE669622E60F29FB6"
    static let y = "7903FE1008B8BC99A41AE9E95628BC64F2F1B20C2D7E9F5177A3C294D4462299"
    static let sample = "EFD48B2AACB6A8FD1140DD9CD45E81D69D2C877B56AAF991C34D0EA84EAF3716"
        + "F7CB1C942D657C41D436C7A1B6E29F65F3E900DBB9AFF4064DC4AB2F843ACDA8"
    static let test = "F1ABB023518351CD71D881567B1EA663ED3EFCF6C5132B354F28D3B0B7D38367"
        + "019F4113742A2B14BD25926B49C649155F267E60D3814B4C0CC84250E46F0083"

    @Test func thePublicKeyIsRFC6979s() throws {
        let key = try #require(P256.PrivateKey(scalar: Self.scalar))
        #expect(Digest.hex(key.x) == Self.x.lowercased())
        #expect(Digest.hex(key.y) == Self.y.lowercased())
    }

    @Test func signaturesAreRFC6979sDeterministicOnes() throws {
        let key = try #require(P256.PrivateKey(scalar: Self.scalar))
        #expect(Digest.hex(key.sign(Array("sample".utf8))) == Self.sample.lowercased())
        #expect(Digest.hex(key.sign(Array("test".utf8))) == Self.test.lowercased())
    }

    @Test func verificationAcceptsTheVectorsAndRefusesChanges() {
        let x = Self.bytes(Self.x), y = Self.bytes(Self.y)
        #expect(P256.verify(Self.bytes(Self.sample), message: Array("sample".utf8), x: x, y: y))
        #expect(P256.verify(Self.bytes(Self.test), message: Array("test".utf8), x: x, y: y))
        #expect(!P256.verify(Self.bytes(Self.sample), message: Array("test".utf8), x: x, y: y), "another message")
        var flipped = Self.bytes(Self.sample)
        flipped[40] ^= 1
        #expect(!P256.verify(flipped, message: Array("sample".utf8), x: x, y: y), "a changed s")
        var offCurve = y
        offCurve[31] ^= 1
        #expect(!P256.verify(Self.bytes(Self.sample), message: Array("sample".utf8), x: x, y: offCurve), "a point off the curve")
        #expect(!P256.verify([UInt8](repeating: 0, count: 64), message: Array("sample".utf8), x: x, y: y), "r = s = 0")
    }

    @Test func aGeneratedKeySignsWhatItsPublicKeyVerifies() {
        let key = P256.PrivateKey.generate()
        let message = Array("header.payload".utf8)
        let signature = key.sign(message)
        #expect(signature.count == 64)
        #expect(P256.verify(signature, message: message, x: key.x, y: key.y))
        #expect(!P256.verify(signature, message: message, x: P256.PrivateKey.generate().x, y: key.y))
    }

    @Test func scalarsOutsideTheGroupAreRefused() {
        #expect(P256.PrivateKey(scalar: [UInt8](repeating: 0, count: 32)) == nil)
        #expect(P256.PrivateKey(scalar: Self.bytes("FFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551")) == nil, "n itself")
        #expect(P256.PrivateKey(scalar: [1]) == nil, "not 32 bytes")
    }

    @Test func hmacSHA256MatchesRFC4231() {
        // RFC 4231 test case 2.
        let mac = Digest.hmacSHA256(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
        #expect(Digest.hex(mac) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }
}
