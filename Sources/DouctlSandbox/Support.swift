#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Clocks: wall time for anything stored or shown (token expiry, `created_at`), monotonic time
/// for durations (log lines, poll intervals measured within one run).
enum SandboxClock {
    static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1_000_000_000
    }

    static func monotonic() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1_000_000_000
    }

    /// Sleeps `seconds` in short steps, returning early once `shouldStop()` is true, so a
    /// handler pausing for a fault never holds up `Sandbox.stop()`.
    static func pause(_ seconds: Double, shouldStop: () -> Bool) {
        let end = monotonic() + seconds
        while !shouldStop() {
            let left = end - monotonic()
            if left <= 0 { return }
            let step = min(left, 0.02)
            var request = timespec(tv_sec: Int(step), tv_nsec: Int((step - Double(Int(step))) * 1_000_000_000))
            var remaining = timespec()
            nanosleep(&request, &remaining)
        }
    }
}

/// Douban's time format, `yyyy-MM-dd HH:mm:ss`, in Beijing time (UTC+8, no daylight saving).
enum BeijingTime {
    static let offset: Int64 = 8 * 3600

    static func format(_ epoch: Double) -> String {
        let seconds = Int64(epoch.rounded(.down)) + offset
        var days = seconds / 86_400
        var rest = seconds % 86_400
        if rest < 0 {
            rest += 86_400
            days -= 1
        }
        let (year, month, day) = civil(fromDays: days)
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2)) \(pad(rest / 3600, 2)):\(pad(rest % 3600 / 60, 2)):\(pad(rest % 60, 2))"
    }

    /// Epoch seconds of a Beijing wall-clock time.
    static func epoch(_ year: Int64, _ month: Int64, _ day: Int64, _ hour: Int64, _ minute: Int64, _ second: Int64) -> Double {
        Double(days(fromCivil: year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset)
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let text = String(value)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }

    // Howard Hinnant's algorithms (proleptic Gregorian calendar).
    private static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func days(fromCivil year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}

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

/// SHA-256 (FIPS 180-4), for PKCE's S256 (RFC 7636 §4.2). Linux has no CryptoKit.
enum SHA256 {
    private static let roundConstants: [UInt32] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ]

    static func hash(_ message: [UInt8]) -> [UInt8] {
        var state: [UInt32] = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]
        var bytes = message
        let bitLength = UInt64(message.count) &* 8
        bytes.append(0x80)
        while bytes.count % 64 != 56 { bytes.append(0) }
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift))) }
        var words = [UInt32](repeating: 0, count: 64)
        for block in stride(from: 0, to: bytes.count, by: 64) {
            for index in 0..<16 {
                let base = block + index * 4
                words[index] = UInt32(bytes[base]) << 24 | UInt32(bytes[base + 1]) << 16 | UInt32(bytes[base + 2]) << 8 | UInt32(bytes[base + 3])
            }
            for index in 16..<64 {
                let s0 = rotate(words[index - 15], 7) ^ rotate(words[index - 15], 18) ^ (words[index - 15] >> 3)
                let s1 = rotate(words[index - 2], 17) ^ rotate(words[index - 2], 19) ^ (words[index - 2] >> 10)
                words[index] = words[index - 16] &+ s0 &+ words[index - 7] &+ s1
            }
            var (a, b, c, d, e, f, g, h) = (state[0], state[1], state[2], state[3], state[4], state[5], state[6], state[7])
            for index in 0..<64 {
                let s1 = rotate(e, 6) ^ rotate(e, 11) ^ rotate(e, 25)
                let choice = (e & f) ^ (~e & g)
                let temp1 = h &+ s1 &+ choice &+ roundConstants[index] &+ words[index]
                let s0 = rotate(a, 2) ^ rotate(a, 13) ^ rotate(a, 22)
                let majority = (a & b) ^ (a & c) ^ (b & c)
                (h, g, f, e, d, c, b, a) = (g, f, e, d &+ temp1, c, b, a, temp1 &+ s0 &+ majority)
            }
            state[0] &+= a; state[1] &+= b; state[2] &+= c; state[3] &+= d
            state[4] &+= e; state[5] &+= f; state[6] &+= g; state[7] &+= h
        }
        return state.flatMap { word in (0..<4).map { UInt8(truncatingIfNeeded: word >> UInt32(24 - $0 * 8)) } }
    }

    private static func rotate(_ value: UInt32, _ count: UInt32) -> UInt32 {
        (value >> count) | (value << (32 - count))
    }
}

enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// RFC 4648 §5 without padding (PKCE's BASE64URL-ENCODE).
    static func urlEncode(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        var index = 0
        while index < bytes.count {
            let chunk = Array(bytes[index..<min(index + 3, bytes.count)])
            let value = UInt32(chunk[0]) << 16 | UInt32(chunk.count > 1 ? chunk[1] : 0) << 8 | UInt32(chunk.count > 2 ? chunk[2] : 0)
            for position in 0...chunk.count {
                var symbol = alphabet[Int((value >> UInt32(18 - position * 6)) & 0x3F)]
                if symbol == UInt8(ascii: "+") { symbol = UInt8(ascii: "-") }
                if symbol == UInt8(ascii: "/") { symbol = UInt8(ascii: "_") }
                output.append(symbol)
            }
            index += 3
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Standard or URL-safe base64, padding optional; nil when the text is not base64.
    static func decode(_ text: String) -> [UInt8]? {
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

enum HTML {
    static func escape(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&#39;"
            default: result.append(character)
            }
        }
        return result
    }
}

/// Percent-encoding for the query strings and fragments the sandbox builds (redirects).
enum URLText {
    static func encode(_ text: String) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        var output: [UInt8] = []
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                 UInt8(ascii: "_"), UInt8(ascii: "~"):
                output.append(byte)
            default:
                output.append(UInt8(ascii: "%"))
                output.append(digits[Int(byte >> 4)])
                output.append(digits[Int(byte & 0x0F)])
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    static func query(_ fields: [(String, String)]) -> String {
        fields.map { encode($0.0) + "=" + encode($0.1) }.joined(separator: "&")
    }
}

extension Double {
    /// Integral values without a fraction (`3600`), others as Swift prints them: JSON number text.
    var jsonNumberText: String {
        if self == rounded(), abs(self) < 1e15 { return String(Int64(self)) }
        return String(self)
    }
}

/// Truncates to at most `maxBytes` of UTF-8 without splitting a character.
func truncateUTF8(_ text: String, maxBytes: Int) -> String {
    guard text.utf8.count > maxBytes else { return text }
    var result = ""
    var used = 0
    for character in text {
        let size = String(character).utf8.count
        if used + size > maxBytes { break }
        result.append(character)
        used += size
    }
    return result
}
