#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlServer
import DouctlSystem

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


/// The sandbox's pages escape with the one HTML escaper (DouctlSystem).
enum HTML {
    static func escape(_ text: String) -> String { HTMLText.escape(text) }
}

/// Query strings and fragments the sandbox builds (redirects), percent-encoded per RFC 3986.
enum URLText {
    static func encode(_ text: String) -> String { PercentEncoding.encode(text) }

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
