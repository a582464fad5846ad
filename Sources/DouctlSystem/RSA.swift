/// RSASSA-PKCS1-v1_5 with SHA-256 (RS256, RFC 7518 §3.3; RFC 8017 §8.2), in plain Swift: a
/// replayed login whose recorded provider signed RS256 signs its ID tokens with it, so a
/// client pinned to OIDC's default algorithm verifies them against the replay's JWKS.
/// Unsigned big integers on 64-bit limbs, Montgomery multiplication (CIOS), 4-bit windowed
/// exponentiation, Miller–Rabin primes, CRT signing. Not constant-time: the keys are a fake
/// server's, made per run, never a user's secret.
public enum RSA {
    /// A key pair: the primes, the CRT exponents and coefficient, the public modulus and
    /// exponent (RFC 8017 §3.2, second representation).
    public struct PrivateKey: Sendable {
        /// The modulus n and public exponent e, big-endian, as a JWK carries them.
        public let modulus: [UInt8]
        public let publicExponent: [UInt8]
        let n: BigUInt, e: UInt64
        let p: Montgomery, q: Montgomery
        let dp: BigUInt, dq: BigUInt, qInverse: BigUInt

        /// The key with primes `p` and `q` (big-endian) and public exponent `e`; nil when
        /// either is not an odd number above 3, p = q, or e is not invertible mod p−1 or q−1.
        /// (The primes are not tested here: `generate` makes them, a test passes known ones.)
        public init?(p pBytes: [UInt8], q qBytes: [UInt8], e: UInt64 = 65537) {
            let p = BigUInt(bigEndian: pBytes), q = BigUInt(bigEndian: qBytes)
            guard e >= 3, e < 1 << 32, e & 1 == 1, p.isOdd, q.isOdd, p.bitWidth > 2, q.bitWidth > 2, p != q,
                  let dp = Self.inverseOfE(e, modulo: p.subtractingOne()),
                  let dq = Self.inverseOfE(e, modulo: q.subtractingOne()) else { return nil }
            let mp = Montgomery(modulus: p), mq = Montgomery(modulus: q)
            // q⁻¹ mod p by Fermat: q^(p−2), p prime.
            let qModP = mp.reduce(q)
            guard !qModP.isZero else { return nil }
            let qInverse = mp.power(qModP, p.subtractingOne().subtractingOne())
            n = p.multiplied(by: q)
            self.e = e
            self.p = mp
            self.q = mq
            self.dp = dp
            self.dq = dq
            self.qInverse = qInverse
            modulus = n.bigEndianBytes(count: (n.bitWidth + 7) / 8)
            publicExponent = BigUInt(e).bigEndianBytes(count: (BigUInt(e).bitWidth + 7) / 8)
        }

        /// A new key of `bits` (2048 by default) from the system's random source: two random
        /// primes of half the size, their top two bits set so n has exactly `bits` bits.
        public static func generate(bits: Int = 2048, e: UInt64 = 65537) -> PrivateKey {
            var generator = SystemRandomNumberGenerator()
            while true {
                let p = RSA.randomPrime(bits: bits / 2, e: e, using: &generator)
                let q = RSA.randomPrime(bits: bits - bits / 2, e: e, using: &generator)
                if let key = PrivateKey(p: p.bigEndianBytes(count: (p.bitWidth + 7) / 8), q: q.bigEndianBytes(count: (q.bitWidth + 7) / 8), e: e),
                   key.n.bitWidth == bits {
                    return key
                }
            }
        }

        /// The RS256 signature of `message`: the modulus's length in bytes, big-endian.
        public func sign(_ message: [UInt8]) -> [UInt8] {
            let m = BigUInt(bigEndian: RSA.encode(Digest.sha256(message), length: modulus.count))
            let sp = p.power(p.reduce(m), dp)
            let sq = q.power(q.reduce(m), dq)
            // h = qInv·(sp − sq) mod p; s = sq + h·q.
            let difference = p.subtract(sp, p.reduce(sq))
            let h = p.multiplyPlain(qInverse, difference)
            let s = sq.adding(h.multiplied(by: q.modulus))
            return s.bigEndianBytes(count: modulus.count)
        }

        /// dₓ = e⁻¹ mod m for an even m: (1 + k·m)/e with k ≡ −m⁻¹ (mod e).
        static func inverseOfE(_ e: UInt64, modulo m: BigUInt) -> BigUInt? {
            let r = m.remainder(dividingBy: e)
            guard let rInverse = RSA.inverse(r, modulo: e) else { return nil }
            let k = (e - rInverse) % e
            let numerator = m.multiplied(by: BigUInt(k)).adding(BigUInt(1))
            let (quotient, remainder) = numerator.divided(by: e)
            return remainder == 0 ? quotient : nil
        }
    }

    /// Whether `signature` is an RS256 signature of `message` by the public key (n, e),
    /// both big-endian.
    public static func verify(_ signature: [UInt8], message: [UInt8], modulus: [UInt8], exponent: [UInt8]) -> Bool {
        let n = BigUInt(bigEndian: modulus), e = BigUInt(bigEndian: exponent)
        let length = (n.bitWidth + 7) / 8
        guard n.isOdd, n.bitWidth >= 512, !e.isZero, signature.count == length else { return false }
        let s = BigUInt(bigEndian: signature)
        guard s < n else { return false }
        let mn = Montgomery(modulus: n)
        let m = mn.power(s, e)
        return m.bigEndianBytes(count: length) == encode(Digest.sha256(message), length: length)
    }

    /// EMSA-PKCS1-v1_5 (RFC 8017 §9.2) for a SHA-256 digest: 00 01 FF… 00 DigestInfo H.
    static func encode(_ digest: [UInt8], length: Int) -> [UInt8] {
        let prefix: [UInt8] = [0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00, 0x04, 0x20]
        let padding = max(8, length - 3 - prefix.count - digest.count)
        return [0x00, 0x01] + [UInt8](repeating: 0xff, count: padding) + [0x00] + prefix + digest
    }

    /// a⁻¹ mod m for small numbers (extended Euclid); nil when they share a factor.
    static func inverse(_ a: UInt64, modulo m: UInt64) -> UInt64? {
        var (oldR, r) = (Int64(a % m), Int64(m))
        var (oldS, s) = (Int64(1), Int64(0))
        while r != 0 {
            let quotient = oldR / r
            (oldR, r) = (r, oldR - quotient * r)
            (oldS, s) = (s, oldS - quotient * s)
        }
        guard oldR == 1 else { return nil }
        return UInt64((oldS % Int64(m) + Int64(m)) % Int64(m))
    }

    // MARK: - Primes

    static let smallPrimes: [UInt64] = {
        var primes: [UInt64] = []
        var candidate: UInt64 = 3
        while primes.count < 300 {
            if primes.allSatisfy({ $0 * $0 > candidate || candidate % $0 != 0 }) { primes.append(candidate) }
            candidate += 2
        }
        return primes
    }()

    /// A random prime of exactly `bits` bits (top two set) with p − 1 prime to e: odd
    /// candidates sieved by small primes, then Miller–Rabin (`isProbablePrime`).
    static func randomPrime<G: RandomNumberGenerator>(bits: Int, e: UInt64, using generator: inout G) -> BigUInt {
        let words = (bits + 63) / 64
        while true {
            var limbs = (0..<words).map { _ in generator.next() as UInt64 }
            let topBits = bits - (words - 1) * 64
            if topBits < 64 { limbs[words - 1] &= (UInt64(1) << UInt64(topBits)) - 1 }
            limbs[words - 1] |= UInt64(3) << UInt64(topBits - 2)
            limbs[0] |= 1
            let candidate = BigUInt(limbs: limbs)
            guard !smallPrimes.contains(where: { candidate.remainder(dividingBy: $0) == 0 }),
                  candidate.remainder(dividingBy: e) != 1,
                  isProbablePrime(candidate, rounds: bits >= 1024 ? 5 : 10, using: &generator) else { continue }
            return candidate
        }
    }

    /// Miller–Rabin with `rounds` random bases (FIPS 186-5 B.3.1; five rounds suffice for
    /// 1024-bit random candidates, table B.1).
    static func isProbablePrime<G: RandomNumberGenerator>(_ n: BigUInt, rounds: Int, using generator: inout G) -> Bool {
        guard n.isOdd, n.bitWidth > 2 else { return n == BigUInt(2) || n == BigUInt(3) }
        let nMinusOne = n.subtractingOne()
        var s = 0
        while !nMinusOne.bit(s) { s += 1 }
        let d = nMinusOne.shiftedRight(by: s)
        let mn = Montgomery(modulus: n)
        let one = mn.one, minusOne = mn.toMontgomery(nMinusOne)
        for _ in 0..<rounds {
            // A base in [2, n − 2]: random, one word shorter than n, at least 2.
            var limbs = (0..<max(1, n.limbs.count - 1)).map { _ in generator.next() as UInt64 }
            if limbs.count == 1 { limbs[0] = 2 + limbs[0] % (n.limbs[0] > 4 ? n.limbs[0] - 3 : 1) } else { limbs[0] |= 2 }
            var x = mn.powerMontgomery(mn.toMontgomery(BigUInt(limbs: limbs)), d)
            if x == one || x == minusOne { continue }
            var composite = true
            for _ in 1..<max(s, 1) {
                x = mn.multiply(x, x)
                if x == minusOne { composite = false; break }
                if x == one { break }
            }
            if composite { return false }
        }
        return true
    }
}

/// Arithmetic modulo an odd m in Montgomery form (R = 2^(64·k), k the modulus's words).
struct Montgomery: Sendable {
    let modulus: BigUInt
    let k: Int
    /// −m⁻¹ mod 2⁶⁴.
    let inverse: UInt64
    /// R² mod m, and R mod m (one in Montgomery form).
    let rSquared: BigUInt
    let one: BigUInt

    init(modulus: BigUInt) {
        self.modulus = modulus
        k = modulus.limbs.count
        var inv: UInt64 = 1
        for _ in 0..<6 { inv = inv &* (2 &- modulus.limbs[0] &* inv) }
        inverse = 0 &- inv
        // R mod m by doubling 1 (64·k times), then R² mod m = R·R in Montgomery form doubled
        // another 64·k times.
        var value = BigUInt(1)
        for _ in 0..<(64 * k) { value = Self.doubled(value, modulo: modulus) }
        one = value
        for _ in 0..<(64 * k) { value = Self.doubled(value, modulo: modulus) }
        rSquared = value
    }

    private static func doubled(_ a: BigUInt, modulo m: BigUInt) -> BigUInt {
        let twice = a.shiftedLeftOne()
        return twice < m ? twice : twice.subtracting(m)
    }

    /// a·b·R⁻¹ mod m, for a < R and b < m (CIOS).
    func multiply(_ a: BigUInt, _ b: BigUInt) -> BigUInt {
        let k = self.k
        var t = [UInt64](repeating: 0, count: k + 2)
        let n = modulus.limbs
        let aLimbs = a.limbs, bLimbs = b.limbs
        t.withUnsafeMutableBufferPointer { t in
            n.withUnsafeBufferPointer { n in
                for i in 0..<k {
                    let bi = i < bLimbs.count ? bLimbs[i] : 0
                    var carry: UInt64 = 0
                    for j in 0..<k {
                        let aj = j < aLimbs.count ? aLimbs[j] : 0
                        (carry, t[j]) = Self.multiplyAdd(aj, bi, t[j], carry)
                    }
                    var overflow: Bool
                    (t[k], overflow) = t[k].addingReportingOverflow(carry)
                    t[k + 1] = overflow ? 1 : 0
                    let m = t[0] &* inverse
                    (carry, _) = Self.multiplyAdd(m, n[0], t[0], 0)
                    for j in 1..<max(k, 1) {
                        (carry, t[j - 1]) = Self.multiplyAdd(m, n[j], t[j], carry)
                    }
                    (t[k - 1], overflow) = t[k].addingReportingOverflow(carry)
                    t[k] = t[k + 1] &+ (overflow ? 1 : 0)
                }
            }
        }
        let result = BigUInt(limbs: Array(t[0...k]))
        return result < modulus ? result : result.subtracting(modulus)
    }

    /// (hi, lo) of a·b + c + d, which cannot overflow 128 bits.
    @inline(__always)
    static func multiplyAdd(_ a: UInt64, _ b: UInt64, _ c: UInt64, _ d: UInt64) -> (UInt64, UInt64) {
        let product = a.multipliedFullWidth(by: b)
        let (low1, carry1) = product.low.addingReportingOverflow(c)
        let (low2, carry2) = low1.addingReportingOverflow(d)
        return (product.high &+ (carry1 ? 1 : 0) &+ (carry2 ? 1 : 0), low2)
    }

    func toMontgomery(_ a: BigUInt) -> BigUInt { multiply(a, rSquared) }
    func fromMontgomery(_ a: BigUInt) -> BigUInt { multiply(a, BigUInt(1)) }

    /// a·b mod m for plain a < R, b < m.
    func multiplyPlain(_ a: BigUInt, _ b: BigUInt) -> BigUInt { multiply(multiply(a, rSquared), b) }

    /// a mod m for any a (split into k-word pieces, Horner in Montgomery form).
    func reduce(_ a: BigUInt) -> BigUInt {
        var result = BigUInt.zero
        var index = ((a.limbs.count + k - 1) / k - 1) * k
        while index >= 0 {
            let piece = BigUInt(limbs: Array(a.limbs[index..<min(index + k, a.limbs.count)]))
            // result·R + piece, kept plain: multiply(result, R²) = result·R mod m.
            let shifted = multiply(result, rSquared)
            let pieceReduced = fromMontgomery(multiply(piece, rSquared))
            result = subtract(shifted, modulus.subtracting(pieceReduced).reducedOnce(modulus))
            index -= k
        }
        return result
    }

    /// a − b mod m for a, b < m.
    func subtract(_ a: BigUInt, _ b: BigUInt) -> BigUInt {
        a < b ? a.adding(modulus).subtracting(b) : a.subtracting(b)
    }

    /// base^exponent mod m, plain in and out.
    func power(_ base: BigUInt, _ exponent: BigUInt) -> BigUInt {
        fromMontgomery(powerMontgomery(toMontgomery(base), exponent))
    }

    /// base^exponent in Montgomery form, a 4-bit window left to right.
    func powerMontgomery(_ base: BigUInt, _ exponent: BigUInt) -> BigUInt {
        var table = [one, base]
        for _ in 2..<16 { table.append(multiply(table[table.count - 1], base)) }
        var result = one
        let windows = (exponent.bitWidth + 3) / 4
        for window in stride(from: windows - 1, through: 0, by: -1) {
            for _ in 0..<4 { result = multiply(result, result) }
            var digit = 0
            for bit in 0..<4 where exponent.bit(window * 4 + bit) { digit |= 1 << bit }
            if digit != 0 { result = multiply(result, table[digit]) }
        }
        return result
    }
}

/// An unsigned integer of any size on 64-bit limbs, least significant first, no leading
/// zero limbs (zero is no limbs).
struct BigUInt: Equatable, Sendable {
    var limbs: [UInt64]
    static let zero = BigUInt(limbs: [])

    init(limbs: [UInt64]) {
        var limbs = limbs
        while limbs.last == 0 { limbs.removeLast() }
        self.limbs = limbs
    }

    init(_ value: UInt64) { self.init(limbs: [value]) }

    init(bigEndian bytes: [UInt8]) {
        var limbs = [UInt64](repeating: 0, count: (bytes.count + 7) / 8)
        for (index, byte) in bytes.reversed().enumerated() { limbs[index / 8] |= UInt64(byte) << (UInt64(index % 8) * 8) }
        self.init(limbs: limbs)
    }

    /// `count` big-endian bytes (cut at the left when the number is longer).
    func bigEndianBytes(count: Int) -> [UInt8] {
        (0..<count).reversed().map { index in
            index / 8 < limbs.count ? UInt8(truncatingIfNeeded: limbs[index / 8] >> (UInt64(index % 8) * 8)) : 0
        }
    }

    var isZero: Bool { limbs.isEmpty }
    var isOdd: Bool { (limbs.first ?? 0) & 1 == 1 }
    var bitWidth: Int { limbs.last.map { limbs.count * 64 - $0.leadingZeroBitCount } ?? 0 }

    func bit(_ index: Int) -> Bool {
        index / 64 < limbs.count && (limbs[index / 64] >> UInt64(index % 64)) & 1 == 1
    }

    static func < (a: BigUInt, b: BigUInt) -> Bool {
        if a.limbs.count != b.limbs.count { return a.limbs.count < b.limbs.count }
        for index in stride(from: a.limbs.count - 1, through: 0, by: -1) where a.limbs[index] != b.limbs[index] {
            return a.limbs[index] < b.limbs[index]
        }
        return false
    }

    func adding(_ other: BigUInt) -> BigUInt {
        var result = [UInt64](repeating: 0, count: max(limbs.count, other.limbs.count) + 1)
        var carry = false
        for index in 0..<(result.count - 1) {
            let a = index < limbs.count ? limbs[index] : 0, b = index < other.limbs.count ? other.limbs[index] : 0
            let (sum, first) = a.addingReportingOverflow(b)
            let (total, second) = sum.addingReportingOverflow(carry ? 1 : 0)
            result[index] = total
            carry = first || second
        }
        result[result.count - 1] = carry ? 1 : 0
        return BigUInt(limbs: result)
    }

    /// self − other for other ≤ self (a larger `other` wraps, which callers rule out).
    func subtracting(_ other: BigUInt) -> BigUInt {
        var result = limbs
        var borrow = false
        for index in result.indices {
            let b = index < other.limbs.count ? other.limbs[index] : 0
            let (difference, first) = result[index].subtractingReportingOverflow(b)
            let (total, second) = difference.subtractingReportingOverflow(borrow ? 1 : 0)
            result[index] = total
            borrow = first || second
        }
        return BigUInt(limbs: result)
    }

    func subtractingOne() -> BigUInt { isZero ? self : subtracting(BigUInt(1)) }

    func reducedOnce(_ m: BigUInt) -> BigUInt { self < m ? self : subtracting(m) }

    func multiplied(by other: BigUInt) -> BigUInt {
        guard !isZero, !other.isZero else { return .zero }
        var result = [UInt64](repeating: 0, count: limbs.count + other.limbs.count)
        for i in limbs.indices {
            var carry: UInt64 = 0
            for j in other.limbs.indices {
                (carry, result[i + j]) = Montgomery.multiplyAdd(limbs[i], other.limbs[j], result[i + j], carry)
            }
            result[i + other.limbs.count] = carry
        }
        return BigUInt(limbs: result)
    }

    func shiftedLeftOne() -> BigUInt {
        var result = [UInt64](repeating: 0, count: limbs.count + 1)
        for index in limbs.indices {
            result[index] |= limbs[index] << 1
            result[index + 1] = limbs[index] >> 63
        }
        return BigUInt(limbs: result)
    }

    func shiftedRight(by bits: Int) -> BigUInt {
        let words = bits / 64, shift = UInt64(bits % 64)
        guard words < limbs.count else { return .zero }
        var result = [UInt64](repeating: 0, count: limbs.count - words)
        for index in result.indices {
            result[index] = limbs[index + words] >> shift
            if shift > 0, index + words + 1 < limbs.count { result[index] |= limbs[index + words + 1] << (64 - shift) }
        }
        return BigUInt(limbs: result)
    }

    /// Quotient and remainder by a nonzero word.
    func divided(by divisor: UInt64) -> (quotient: BigUInt, remainder: UInt64) {
        var quotient = [UInt64](repeating: 0, count: limbs.count)
        var remainder: UInt64 = 0
        for index in stride(from: limbs.count - 1, through: 0, by: -1) {
            (quotient[index], remainder) = divisor.dividingFullWidth((remainder, limbs[index]))
        }
        return (BigUInt(limbs: quotient), remainder)
    }

    func remainder(dividingBy divisor: UInt64) -> UInt64 { divided(by: divisor).remainder }
}
