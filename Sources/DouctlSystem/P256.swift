/// ECDSA over NIST P-256 with SHA-256 (ES256, RFC 7518 §3.4), in plain Swift: a replayed
/// login signs its ID tokens with it so strict OIDC clients, which refuse symmetric keys,
/// verify them against the replay's JWKS. Fixed-width 256-bit arithmetic in Montgomery
/// form, Jacobian points, RFC 6979 deterministic nonces. Not constant-time: the keys are a
/// fake server's, made per run, never a user's secret.
public enum P256 {
    /// A key pair: the 32-byte scalar and the public point's 32-byte big-endian coordinates.
    public struct PrivateKey: Sendable {
        public let scalar: [UInt8]
        public let x: [UInt8]
        public let y: [UInt8]

        /// A key from a 32-byte big-endian scalar in [1, n-1]; nil otherwise.
        public init?(scalar bytes: [UInt8]) {
            guard bytes.count == 32 else { return nil }
            let d = U256(bigEndian: bytes)
            guard !d.isZero, d < P256.order.modulus else { return nil }
            guard let point = P256.affine(P256.multiply(P256.generator, by: d)) else { return nil }
            scalar = bytes
            x = point.x.bigEndianBytes
            y = point.y.bigEndianBytes
        }

        /// A new key from the system's random source.
        public static func generate() -> PrivateKey {
            var generator = SystemRandomNumberGenerator()
            while true {
                let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
                if let key = PrivateKey(scalar: bytes) { return key }
            }
        }

        /// The ES256 signature of `message`: r ‖ s, 32 bytes each (the JWS form).
        public func sign(_ message: [UInt8]) -> [UInt8] {
            P256.sign(digest: Digest.sha256(message), scalar: U256(bigEndian: scalar))
        }
    }

    /// Whether `signature` (r ‖ s) is an ES256 signature of `message` by the public key (x, y).
    public static func verify(_ signature: [UInt8], message: [UInt8], x: [UInt8], y: [UInt8]) -> Bool {
        guard signature.count == 64, x.count == 32, y.count == 32 else { return false }
        let n = order
        let r = U256(bigEndian: Array(signature[0..<32])), s = U256(bigEndian: Array(signature[32..<64]))
        guard !r.isZero, !s.isZero, r < n.modulus, s < n.modulus else { return false }
        let qx = U256(bigEndian: x), qy = U256(bigEndian: y)
        guard qx < field.modulus, qy < field.modulus, isOnCurve(qx, qy) else { return false }
        let z = n.reduceOnce(U256(bigEndian: Digest.sha256(message)))
        let w = n.inverse(n.toMontgomery(s))
        let u1 = n.fromMontgomery(n.multiply(n.toMontgomery(z), w))
        let u2 = n.fromMontgomery(n.multiply(n.toMontgomery(r), w))
        let q = Jacobian(x: field.toMontgomery(qx), y: field.toMontgomery(qy), z: field.one)
        guard let point = affine(add(multiply(generator, by: u1), multiply(q, by: u2))) else { return false }
        return n.reduceOnce(point.x) == r
    }

    // MARK: - Curve

    static let field = Modulus(U256(0xFFFF_FFFF_0000_0001, 0, 0x0000_0000_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF))
    static let order = Modulus(U256(0xFFFF_FFFF_0000_0000, 0xFFFF_FFFF_FFFF_FFFF, 0xBCE6_FAAD_A717_9E84, 0xF3B9_CAC2_FC63_2551))
    static let b = U256(0x5AC6_35D8_AA3A_93E7, 0xB3EB_BD55_7698_86BC, 0x651D_06B0_CC53_B0F6, 0x3BCE_3C3E_27D2_604B)
    static let generator = Jacobian(
        x: field.toMontgomery(U256(0x6B17_D1F2_E12C_4247, 0xF8BC_E6E5_63A4_40F2, 0x7703_7D81_2DEB_33A0, 0xF4A1_3945_D898_C296)),
        y: field.toMontgomery(U256(0x4FE3_42E2_FE1A_7F9B, 0x8EE7_EB4A_7C0F_9E16, 0x2BCE_3357_6B31_5ECE, 0xCBB6_4068_37BF_51F5)),
        z: field.one)

    /// A point in Jacobian coordinates (X/Z², Y/Z³), coordinates in Montgomery form; z = 0 is
    /// the point at infinity.
    struct Jacobian {
        var x: U256, y: U256, z: U256
        static let infinity = Jacobian(x: .zero, y: .zero, z: .zero)
    }

    /// y² = x³ − 3x + b (mod p), for plain (not Montgomery) coordinates.
    static func isOnCurve(_ x: U256, _ y: U256) -> Bool {
        let f = field
        let mx = f.toMontgomery(x), my = f.toMontgomery(y)
        let x3 = f.multiply(f.multiply(mx, mx), mx)
        let right = f.add(f.subtract(x3, f.add(f.add(mx, mx), mx)), f.toMontgomery(b))
        return f.multiply(my, my) == right
    }

    /// dbl-2001-b (a = −3).
    static func double(_ point: Jacobian) -> Jacobian {
        let f = field
        if point.z.isZero || point.y.isZero { return .infinity }
        let delta = f.multiply(point.z, point.z)
        let gamma = f.multiply(point.y, point.y)
        let beta = f.multiply(point.x, gamma)
        let t = f.multiply(f.subtract(point.x, delta), f.add(point.x, delta))
        let alpha = f.add(f.add(t, t), t)
        let beta4 = f.add(f.add(beta, beta), f.add(beta, beta))
        let x3 = f.subtract(f.multiply(alpha, alpha), f.add(beta4, beta4))
        let yz = f.add(point.y, point.z)
        let z3 = f.subtract(f.subtract(f.multiply(yz, yz), gamma), delta)
        let gamma2 = f.multiply(gamma, gamma)
        let gamma8 = f.add(f.add(f.add(gamma2, gamma2), f.add(gamma2, gamma2)), f.add(f.add(gamma2, gamma2), f.add(gamma2, gamma2)))
        let y3 = f.subtract(f.multiply(alpha, f.subtract(beta4, x3)), gamma8)
        return Jacobian(x: x3, y: y3, z: z3)
    }

    /// add-2007-bl, with the doubling and inverse cases.
    static func add(_ p: Jacobian, _ q: Jacobian) -> Jacobian {
        let f = field
        if p.z.isZero { return q }
        if q.z.isZero { return p }
        let z1z1 = f.multiply(p.z, p.z), z2z2 = f.multiply(q.z, q.z)
        let u1 = f.multiply(p.x, z2z2), u2 = f.multiply(q.x, z1z1)
        let s1 = f.multiply(f.multiply(p.y, q.z), z2z2), s2 = f.multiply(f.multiply(q.y, p.z), z1z1)
        let h = f.subtract(u2, u1)
        let sd = f.subtract(s2, s1)
        if h.isZero { return sd.isZero ? double(p) : .infinity }
        let r = f.add(sd, sd)
        let h2 = f.add(h, h)
        let i = f.multiply(h2, h2)
        let j = f.multiply(h, i)
        let v = f.multiply(u1, i)
        let x3 = f.subtract(f.subtract(f.multiply(r, r), j), f.add(v, v))
        let s1j = f.multiply(s1, j)
        let y3 = f.subtract(f.multiply(r, f.subtract(v, x3)), f.add(s1j, s1j))
        let zz = f.add(p.z, q.z)
        let z3 = f.multiply(f.subtract(f.subtract(f.multiply(zz, zz), z1z1), z2z2), h)
        return Jacobian(x: x3, y: y3, z: z3)
    }

    /// k·P, double-and-add from the top bit.
    static func multiply(_ point: Jacobian, by k: U256) -> Jacobian {
        var result = Jacobian.infinity
        for bit in stride(from: 255, through: 0, by: -1) {
            result = double(result)
            if k.bit(bit) { result = add(result, point) }
        }
        return result
    }

    /// The plain affine coordinates; nil for the point at infinity.
    static func affine(_ point: Jacobian) -> (x: U256, y: U256)? {
        let f = field
        guard !point.z.isZero else { return nil }
        let zinv = f.inverse(point.z)
        let zinv2 = f.multiply(zinv, zinv)
        return (f.fromMontgomery(f.multiply(point.x, zinv2)), f.fromMontgomery(f.multiply(point.y, f.multiply(zinv2, zinv))))
    }

    /// ECDSA with the RFC 6979 nonce for `digest` (SHA-256 of the message).
    static func sign(digest: [UInt8], scalar d: U256) -> [UInt8] {
        let n = order
        let z = n.reduceOnce(U256(bigEndian: digest))
        var nonces = RFC6979(scalar: d, digest: z)
        while true {
            let k = nonces.next()
            guard let point = affine(multiply(generator, by: k)) else { continue }
            let r = n.reduceOnce(point.x)
            if r.isZero { continue }
            let kinv = n.inverse(n.toMontgomery(k))
            let rd = n.multiply(n.toMontgomery(r), n.toMontgomery(d))
            let s = n.fromMontgomery(n.multiply(kinv, n.add(n.toMontgomery(z), rd)))
            if s.isZero { continue }
            return r.bigEndianBytes + s.bigEndianBytes
        }
    }

    /// RFC 6979 §3.2's HMAC-DRBG for qlen = hlen = 256: candidates k in [1, n-1].
    struct RFC6979 {
        var key = [UInt8](repeating: 0, count: 32)
        var value = [UInt8](repeating: 1, count: 32)
        var started = false

        init(scalar d: U256, digest z: U256) {
            let material = d.bigEndianBytes + z.bigEndianBytes
            key = Digest.hmacSHA256(key: key, message: value + [0] + material)
            value = Digest.hmacSHA256(key: key, message: value)
            key = Digest.hmacSHA256(key: key, message: value + [1] + material)
            value = Digest.hmacSHA256(key: key, message: value)
        }

        mutating func next() -> U256 {
            while true {
                if started {
                    key = Digest.hmacSHA256(key: key, message: value + [0])
                    value = Digest.hmacSHA256(key: key, message: value)
                }
                started = true
                value = Digest.hmacSHA256(key: key, message: value)
                let k = U256(bigEndian: value)
                if !k.isZero, k < P256.order.modulus { return k }
            }
        }
    }

    /// Arithmetic modulo an odd 256-bit modulus in Montgomery form (R = 2²⁵⁶).
    struct Modulus: Sendable {
        let modulus: U256
        /// −m⁻¹ mod 2⁶⁴.
        let inverseWord: UInt64
        /// R² mod m, to enter Montgomery form.
        let rSquared: U256
        /// R mod m: 1 in Montgomery form.
        let one: U256

        init(_ modulus: U256) {
            self.modulus = modulus
            var inverse: UInt64 = 1
            for _ in 0..<6 { inverse = inverse &* (2 &- modulus.w0 &* inverse) }
            inverseWord = 0 &- inverse
            // 2^k mod m by doubling, from k = 0 to 512.
            var value = U256(0, 0, 0, 1)
            var rMod = U256.zero
            for step in 1...512 {
                value = Self.addMod(value, value, modulus)
                if step == 256 { rMod = value }
            }
            one = rMod
            rSquared = value
        }

        static func addMod(_ a: U256, _ b: U256, _ m: U256) -> U256 {
            let (sum, carry) = a.adding(b)
            if carry || !(sum < m) { return sum.subtracting(m).result }
            return sum
        }

        func add(_ a: U256, _ b: U256) -> U256 { Self.addMod(a, b, modulus) }

        func subtract(_ a: U256, _ b: U256) -> U256 {
            let (difference, borrow) = a.subtracting(b)
            return borrow ? difference.adding(modulus).result : difference
        }

        /// a − m when a ≥ m (a < 2m): a hash or an x coordinate taken mod n.
        func reduceOnce(_ a: U256) -> U256 { a < modulus ? a : a.subtracting(modulus).result }

        /// Montgomery product a·b·R⁻¹ mod m (CIOS).
        func multiply(_ a: U256, _ b: U256) -> U256 {
            let x = [a.w0, a.w1, a.w2, a.w3], y = [b.w0, b.w1, b.w2, b.w3]
            let m = [modulus.w0, modulus.w1, modulus.w2, modulus.w3]
            var t: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0)
            for i in 0..<4 {
                var carry: UInt64 = 0
                var row = [t.0, t.1, t.2, t.3]
                for j in 0..<4 { (carry, row[j]) = Self.multiplyAdd(x[j], y[i], row[j], carry) }
                var (top, overflow) = t.4.addingReportingOverflow(carry)
                t = (row[0], row[1], row[2], row[3], top, overflow ? 1 : 0)
                let factor = t.0 &* inverseWord
                row = [t.0, t.1, t.2, t.3]
                (carry, _) = Self.multiplyAdd(factor, m[0], row[0], 0)
                for j in 1..<4 { (carry, row[j - 1]) = Self.multiplyAdd(factor, m[j], row[j], carry) }
                (top, overflow) = t.4.addingReportingOverflow(carry)
                row[3] = top
                t = (row[0], row[1], row[2], row[3], t.5 &+ (overflow ? 1 : 0), 0)
            }
            let result = U256(t.3, t.2, t.1, t.0)
            if t.4 != 0 || !(result < modulus) { return result.subtracting(modulus).result }
            return result
        }

        /// a·b + c + d as (high, low): never overflows 128 bits.
        static func multiplyAdd(_ a: UInt64, _ b: UInt64, _ c: UInt64, _ d: UInt64) -> (UInt64, UInt64) {
            var (high, low) = a.multipliedFullWidth(by: b)
            var overflow: Bool
            (low, overflow) = low.addingReportingOverflow(c)
            if overflow { high &+= 1 }
            (low, overflow) = low.addingReportingOverflow(d)
            if overflow { high &+= 1 }
            return (high, low)
        }

        func toMontgomery(_ a: U256) -> U256 { multiply(a, rSquared) }
        func fromMontgomery(_ a: U256) -> U256 { multiply(a, U256(0, 0, 0, 1)) }

        /// a⁻¹ (Montgomery form in and out), as a^(m−2) (m is prime).
        func inverse(_ a: U256) -> U256 {
            let exponent = modulus.subtracting(U256(0, 0, 0, 2)).result
            var result = one
            for bit in stride(from: 255, through: 0, by: -1) {
                result = multiply(result, result)
                if exponent.bit(bit) { result = multiply(result, a) }
            }
            return result
        }
    }
}

/// A 256-bit unsigned integer, four 64-bit words; `w0` is the least significant.
struct U256: Equatable, Sendable {
    var w0: UInt64, w1: UInt64, w2: UInt64, w3: UInt64
    static let zero = U256(0, 0, 0, 0)

    /// The words from most to least significant, as the number is written.
    init(_ w3: UInt64, _ w2: UInt64, _ w1: UInt64, _ w0: UInt64) {
        (self.w0, self.w1, self.w2, self.w3) = (w0, w1, w2, w3)
    }

    /// Up to 32 big-endian bytes (fewer are left-padded with zeros; more are cut at the left).
    init(bigEndian bytes: [UInt8]) {
        var words: [UInt64] = [0, 0, 0, 0]
        for (index, byte) in bytes.suffix(32).reversed().enumerated() { words[index / 8] |= UInt64(byte) << (UInt64(index % 8) * 8) }
        self.init(words[3], words[2], words[1], words[0])
    }

    var bigEndianBytes: [UInt8] {
        [w3, w2, w1, w0].flatMap { word in (0..<8).reversed().map { UInt8(truncatingIfNeeded: word >> (UInt64($0) * 8)) } }
    }

    var isZero: Bool { (w0 | w1 | w2 | w3) == 0 }

    func bit(_ index: Int) -> Bool {
        let word = [w0, w1, w2, w3][index / 64]
        return (word >> UInt64(index % 64)) & 1 == 1
    }

    static func < (a: U256, b: U256) -> Bool {
        if a.w3 != b.w3 { return a.w3 < b.w3 }
        if a.w2 != b.w2 { return a.w2 < b.w2 }
        if a.w1 != b.w1 { return a.w1 < b.w1 }
        return a.w0 < b.w0
    }

    func adding(_ other: U256) -> (result: U256, carry: Bool) {
        let (r0, c0) = w0.addingReportingOverflow(other.w0)
        let (r1, c1) = Self.addWithCarry(w1, other.w1, c0)
        let (r2, c2) = Self.addWithCarry(w2, other.w2, c1)
        let (r3, c3) = Self.addWithCarry(w3, other.w3, c2)
        return (U256(r3, r2, r1, r0), c3)
    }

    func subtracting(_ other: U256) -> (result: U256, borrow: Bool) {
        let (r0, b0) = w0.subtractingReportingOverflow(other.w0)
        let (r1, b1) = Self.subtractWithBorrow(w1, other.w1, b0)
        let (r2, b2) = Self.subtractWithBorrow(w2, other.w2, b1)
        let (r3, b3) = Self.subtractWithBorrow(w3, other.w3, b2)
        return (U256(r3, r2, r1, r0), b3)
    }

    private static func addWithCarry(_ a: UInt64, _ b: UInt64, _ carry: Bool) -> (UInt64, Bool) {
        let (sum, first) = a.addingReportingOverflow(b)
        let (total, second) = sum.addingReportingOverflow(carry ? 1 : 0)
        return (total, first || second)
    }

    private static func subtractWithBorrow(_ a: UInt64, _ b: UInt64, _ borrow: Bool) -> (UInt64, Bool) {
        let (difference, first) = a.subtractingReportingOverflow(b)
        let (total, second) = difference.subtractingReportingOverflow(borrow ? 1 : 0)
        return (total, first || second)
    }
}
