#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlSystem

/// Dates as douctl writes and reads them, without Foundation's formatters (start-up cost).
public enum Timestamp {
    /// Seconds since 1970.
    public static func now() -> Double { currentUnixTime() }

    /// The latest instant douctl writes (9999-12-31T23:59:59Z); later or non-finite values are
    /// clamped, so a hostile lifetime from a server can never trap the conversion.
    public static let latest: Double = 253_402_300_799

    /// "2026-11-21T09:30:00Z" (RFC 3339, UTC, whole seconds).
    public static func rfc3339(_ seconds: Double) -> String {
        let clamped = seconds.isNaN ? 0 : min(max(seconds, 0), latest)
        var time = time_t(clamped.rounded(.down))
        var parts = tm()
        gmtime_r(&time, &parts)
        return "\(pad(Int(parts.tm_year) + 1900, 4))-\(pad(Int(parts.tm_mon) + 1))-\(pad(Int(parts.tm_mday)))T\(pad(Int(parts.tm_hour))):\(pad(Int(parts.tm_min))):\(pad(Int(parts.tm_sec)))Z"
    }

    /// Parses RFC 3339 ("2026-11-21T09:30:00Z", "…T17:30:00+08:00", fractional seconds allowed).
    public static func parseRFC3339(_ text: String) -> Double? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20 else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for index in range {
                let byte = bytes[index]
                guard byte >= 48 && byte <= 57 else { return nil }
                value = value * 10 + Int(byte - 48)
            }
            return value
        }
        guard let year = number(0..<4), bytes[4] == 45, let month = number(5..<7), bytes[7] == 45,
              let day = number(8..<10), bytes[10] == 84 || bytes[10] == 116 || bytes[10] == 32,
              let hour = number(11..<13), bytes[13] == 58, let minute = number(14..<16), bytes[16] == 58,
              let second = number(17..<19),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        var index = 19
        var fraction = 0.0
        if index < bytes.count, bytes[index] == 46 {
            index += 1
            var scale = 0.1
            while index < bytes.count, bytes[index] >= 48, bytes[index] <= 57 {
                fraction += Double(bytes[index] - 48) * scale
                scale /= 10
                index += 1
            }
        }
        guard index < bytes.count else { return nil }
        var offset = 0
        switch bytes[index] {
        case 90, 122: // Z z
            guard index + 1 == bytes.count else { return nil }
        case 43, 45: // + -
            guard index + 6 == bytes.count, let hours = number(index + 1..<index + 3), bytes[index + 3] == 58,
                  let minutes = number(index + 4..<index + 6) else { return nil }
            offset = (hours * 3600 + minutes * 60) * (bytes[index] == 45 ? -1 : 1)
        default:
            return nil
        }
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month - 1)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(hour)
        parts.tm_min = Int32(minute)
        parts.tm_sec = Int32(second)
        return Double(timegm(&parts) - offset) + fraction
    }

    /// A short human duration: "59m", "6d 23h", "expired 3m ago".
    public static func describeRemaining(_ seconds: Double) -> String {
        if seconds < 0 { return "expired \(duration(-seconds)) ago" }
        return "in \(duration(seconds))"
    }

    public static func duration(_ seconds: Double) -> String {
        let total = Int(seconds)
        if total < 60 { return "\(total)s" }
        if total < 3600 { return "\(total / 60)m" }
        if total < 86400 { return "\(total / 3600)h \(total % 3600 / 60)m" }
        return "\(total / 86400)d \(total % 86400 / 3600)h"
    }

    private static func pad(_ value: Int, _ width: Int = 2) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }
}
