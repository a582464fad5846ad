/// Secrets and codes from the system CSPRNG.
enum Secrets {
    /// `byteCount` random bytes as lowercase hex (Douban tokens: 16 bytes → 32 hex digits).
    static func hex(byteCount: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(byteCount * 2)
        for _ in 0..<byteCount {
            let byte = UInt8.random(in: 0...255, using: &generator)
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// RFC 8628 §6.1: consonants only (no vowels, so no words; no look-alike letters), `XXXX-XXXX`.
    static let userCodeAlphabet = Array("BCDFGHJKLMNPQRSTVWXZ")

    static func userCode() -> String {
        var generator = SystemRandomNumberGenerator()
        let letters = (0..<8).map { _ in userCodeAlphabet[Int.random(in: 0..<userCodeAlphabet.count, using: &generator)] }
        return String(letters[0..<4]) + "-" + String(letters[4..<8])
    }

    /// A user code as typed: case, spaces and dashes do not matter.
    static func normalizeUserCode(_ text: String) -> String {
        String(text.uppercased().filter { $0 != "-" && $0 != " " })
    }
}
