#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
/// SHA-256 (PKCE's S256, RFC 7636 §4.2) and SHA-1 (Coding's password hashing), in plain
/// Swift: Linux has no CryptoKit, and the toolchain is all douctl may use. Shared by the
/// client (PKCE, passwords) and the sandbox (which checks them).
public enum Digest {
    public static func sha256(_ message: [UInt8]) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(message)
        return hasher.finalize()
    }

    public static func sha1(_ message: [UInt8]) -> [UInt8] {
        var hash: [UInt32] = [0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0]
        var words = [UInt32](repeating: 0, count: 80)
        for block in padded(message, bigEndianLength: true) {
            for index in 0..<16 { words[index] = block[index] }
            for index in 16..<80 {
                words[index] = rotateLeft(words[index - 3] ^ words[index - 8] ^ words[index - 14] ^ words[index - 16], 1)
            }
            var (a, b, c, d, e) = (hash[0], hash[1], hash[2], hash[3], hash[4])
            for index in 0..<80 {
                let (f, k): (UInt32, UInt32)
                switch index {
                case 0..<20: (f, k) = ((b & c) | (~b & d), 0x5A827999)
                case 20..<40: (f, k) = (b ^ c ^ d, 0x6ED9EBA1)
                case 40..<60: (f, k) = ((b & c) | (b & d) | (c & d), 0x8F1BBCDC)
                default: (f, k) = (b ^ c ^ d, 0xCA62C1D6)
                }
                let temp = rotateLeft(a, 5) &+ f &+ e &+ k &+ words[index]
                (e, d, c, b, a) = (d, c, rotateLeft(b, 30), a, temp)
            }
            hash[0] &+= a; hash[1] &+= b; hash[2] &+= c; hash[3] &+= d; hash[4] &+= e
        }
        return hash.flatMap(bigEndianBytes)
    }

    /// MD5 (RFC 1321), for the `md5-sorted` signing scheme that sign-by-MD5 APIs use.
    /// Not for anything that needs collision resistance.
    public static func md5(_ message: [UInt8]) -> [UInt8] {
        let shifts: [UInt32] = [7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
                                5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20,
                                4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
                                6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21]
        // K[i] = floor(abs(sin(i + 1)) · 2^32), as RFC 1321's table.
        let constants: [UInt32] = (0..<64).map { UInt32(truncatingIfNeeded: Int64(abs(sin(Double($0 + 1))) * 4294967296.0)) }
        var state: [UInt32] = [0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476]
        var bytes = message
        let bitLength = UInt64(message.count) &* 8
        bytes.append(0x80)
        while bytes.count % 64 != 56 { bytes.append(0) }
        for shift in stride(from: 0, through: 56, by: 8) { bytes.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift))) }
        for start in stride(from: 0, to: bytes.count, by: 64) {
            var words = [UInt32](repeating: 0, count: 16)
            for index in 0..<16 {
                let offset = start + index * 4
                words[index] = UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16 | UInt32(bytes[offset + 3]) << 24
            }
            var (a, b, c, d) = (state[0], state[1], state[2], state[3])
            for index in 0..<64 {
                var f: UInt32
                let g: Int
                switch index {
                case 0..<16: f = (b & c) | (~b & d); g = index
                case 16..<32: f = (d & b) | (~d & c); g = (5 * index + 1) % 16
                case 32..<48: f = b ^ c ^ d; g = (3 * index + 5) % 16
                default: f = c ^ (b | ~d); g = (7 * index) % 16
                }
                f = f &+ a &+ constants[index] &+ words[g]
                a = d
                d = c
                c = b
                b = b &+ rotateLeft(f, shifts[index])
            }
            state[0] &+= a; state[1] &+= b; state[2] &+= c; state[3] &+= d
        }
        return state.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8 & 0xFF), UInt8($0 >> 16 & 0xFF), UInt8($0 >> 24)] }
    }

    /// HMAC-SHA1 (RFC 2104), for the `hmac-sha1` signing scheme.
    public static func hmacSHA1(key: [UInt8], message: [UInt8]) -> [UInt8] {
        hmac(key: key, message: message, hash: sha1)
    }

    /// HMAC-SHA256 (RFC 2104), for RFC 6979's deterministic ECDSA nonces.
    public static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        hmac(key: key, message: message, hash: sha256)
    }

    /// RFC 2104 over a hash with 64-byte blocks (SHA-1 and SHA-256 both).
    private static func hmac(key: [UInt8], message: [UInt8], hash: ([UInt8]) -> [UInt8]) -> [UInt8] {
        var block = key.count > 64 ? hash(key) : key
        block += [UInt8](repeating: 0, count: 64 - block.count)
        let inner = hash(block.map { $0 ^ 0x36 } + message)
        return hash(block.map { $0 ^ 0x5c } + inner)
    }

    /// Lowercase hex, as Coding wants the password hash.
    public static func hex(_ bytes: [UInt8]) -> String {
        // Bytes written into the string's own storage: the Character array this built
        // cost every request ~43 K instructions (a rate-limit file's name; issue 44).
        @inline(__always) func digit(_ nibble: UInt8) -> UInt8 { nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10 }
        return String(unsafeUninitializedCapacity: bytes.count * 2) { text in
            for (index, byte) in bytes.enumerated() {
                text[2 * index] = digit(byte >> 4)
                text[2 * index + 1] = digit(byte & 0x0F)
            }
            return bytes.count * 2
        }
    }

    /// The message padded to 512-bit blocks of 16 big-endian words (both SHA-1 and SHA-256).
    private static func padded(_ message: [UInt8], bigEndianLength: Bool) -> [[UInt32]] {
        var bytes = message
        let bitLength = UInt64(message.count) &* 8
        bytes.append(0x80)
        while bytes.count % 64 != 56 { bytes.append(0) }
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift))) }
        var blocks: [[UInt32]] = []
        blocks.reserveCapacity(bytes.count / 64)
        for start in stride(from: 0, to: bytes.count, by: 64) {
            var block = [UInt32](repeating: 0, count: 16)
            for index in 0..<16 {
                let offset = start + index * 4
                block[index] = UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
            }
            blocks.append(block)
        }
        return blocks
    }

    private static func rotate(_ value: UInt32, _ count: UInt32) -> UInt32 { (value >> count) | (value << (32 - count)) }
    private static func rotateLeft(_ value: UInt32, _ count: UInt32) -> UInt32 { (value << count) | (value >> (32 - count)) }
    private static func bigEndianBytes(_ word: UInt32) -> [UInt8] {
        [UInt8(word >> 24), UInt8(word >> 16 & 0xFF), UInt8(word >> 8 & 0xFF), UInt8(word & 0xFF)]
    }
}

/// Standard base64 (RFC 4648 §4), and the URL-safe unpadded form PKCE uses (§5).
public enum Base64 {
    public static func encode(_ bytes: [UInt8], urlSafe: Bool = false) -> String {
        let table = Array((urlSafe
            ? "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
            : "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/").utf8)
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index + 2 < bytes.count {
            let value = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            out += [table[Int(value >> 18 & 63)], table[Int(value >> 12 & 63)], table[Int(value >> 6 & 63)], table[Int(value & 63)]]
            index += 3
        }
        let remaining = bytes.count - index
        if remaining > 0 {
            let value = UInt32(bytes[index]) << 16 | (remaining > 1 ? UInt32(bytes[index + 1]) << 8 : 0)
            out += [table[Int(value >> 18 & 63)], table[Int(value >> 12 & 63)]]
            if remaining > 1 { out.append(table[Int(value >> 6 & 63)]) }
            if !urlSafe { out += Array(repeating: UInt8(ascii: "="), count: 3 - remaining) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Standard or URL-safe base64, padding optional; nil when the text is not base64.
    public static func decode(_ text: String) -> [UInt8]? {
        var value: UInt32 = 0
        var bits = 0
        var output: [UInt8] = []
        for byte in text.utf8 {
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): digit = byte - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): digit = byte - UInt8(ascii: "a") + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0") + 52
            case UInt8(ascii: "+"), UInt8(ascii: "-"): digit = 62
            case UInt8(ascii: "/"), UInt8(ascii: "_"): digit = 63
            case UInt8(ascii: "="): continue
            default: return nil
            }
            value = value << 6 | UInt32(digit)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: value >> UInt32(bits)))
            }
        }
        return output
    }
}

/// SHA-256 fed piece by piece, so a download is hashed as it streams to disk without ever
/// holding the whole file. `Digest.sha256` is the one-shot form of the same code.
public struct SHA256: Sendable {
    private var state: [UInt32] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
    ]
    /// Bytes of an incomplete block, waiting for the rest.
    private var pending: [UInt8] = []
    private var length: UInt64 = 0
    private var words = [UInt32](repeating: 0, count: 64)

    private static let k: [UInt32] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ]

    public init() {
        pending.reserveCapacity(64)
    }

    public mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        length &+= UInt64(bytes.count)
        var offset = 0
        if !pending.isEmpty {
            let take = min(64 - pending.count, bytes.count)
            pending.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[0..<take]))
            offset = take
            guard pending.count == 64 else { return }
            let block = pending
            block.withUnsafeBytes { compress($0) }
            pending.removeAll(keepingCapacity: true)
        }
        while bytes.count - offset >= 64 {
            compress(UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + 64]))
            offset += 64
        }
        if offset < bytes.count {
            pending.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[offset...]))
        }
    }

    /// The digest of everything fed so far (the hasher itself is left as it was).
    public func finalize() -> [UInt8] {
        var copy = self
        let bitLength = length &* 8
        var tail: [UInt8] = [0x80]
        while (Int(length % 64) + tail.count) % 64 != 56 { tail.append(0) }
        for shift in stride(from: 56, through: 0, by: -8) { tail.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift))) }
        let savedLength = copy.length
        copy.update(tail)
        copy.length = savedLength
        return copy.state.flatMap { [UInt8($0 >> 24), UInt8($0 >> 16 & 0xFF), UInt8($0 >> 8 & 0xFF), UInt8($0 & 0xFF)] }
    }

    private mutating func compress(_ block: UnsafeRawBufferPointer) {
        words.withUnsafeMutableBufferPointer { w in
            for index in 0..<16 {
                let o = index * 4
                w[index] = UInt32(block[o]) << 24 | UInt32(block[o + 1]) << 16 | UInt32(block[o + 2]) << 8 | UInt32(block[o + 3])
            }
            for index in 16..<64 {
                let s0 = Self.rotate(w[index - 15], 7) ^ Self.rotate(w[index - 15], 18) ^ (w[index - 15] >> 3)
                let s1 = Self.rotate(w[index - 2], 17) ^ Self.rotate(w[index - 2], 19) ^ (w[index - 2] >> 10)
                w[index] = w[index - 16] &+ s0 &+ w[index - 7] &+ s1
            }
            var (a, b, c, d, e, f, g, h) = (state[0], state[1], state[2], state[3], state[4], state[5], state[6], state[7])
            Self.k.withUnsafeBufferPointer { k in
                for index in 0..<64 {
                    let s1 = Self.rotate(e, 6) ^ Self.rotate(e, 11) ^ Self.rotate(e, 25)
                    let choice = (e & f) ^ (~e & g)
                    let temp1 = h &+ s1 &+ choice &+ k[index] &+ w[index]
                    let s0 = Self.rotate(a, 2) ^ Self.rotate(a, 13) ^ Self.rotate(a, 22)
                    let majority = (a & b) ^ (a & c) ^ (b & c)
                    let temp2 = s0 &+ majority
                    (h, g, f, e, d, c, b, a) = (g, f, e, d &+ temp1, c, b, a, temp1 &+ temp2)
                }
            }
            state[0] &+= a; state[1] &+= b; state[2] &+= c; state[3] &+= d
            state[4] &+= e; state[5] &+= f; state[6] &+= g; state[7] &+= h
        }
    }

    private static func rotate(_ value: UInt32, _ count: UInt32) -> UInt32 { (value >> count) | (value << (32 - count)) }
}
