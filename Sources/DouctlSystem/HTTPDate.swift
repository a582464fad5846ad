#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// HTTP dates (RFC 9110 §5.6.7): the IMF-fixdate "Sun, 06 Nov 1994 08:49:37 GMT" that the
/// server writes in its `Date` header, and that the client reads in Retry-After and Set-Cookie
/// Expires (where the older cookie form "Sun, 06-Nov-1994 08:49:37 GMT" is accepted too).
/// Built by hand: `strftime` would follow the process locale, and Foundation is not linked.
public enum HTTPDate {
    private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    private static let lowercasedMonths = months.map { $0.lowercased() }

    /// The current time as an IMF-fixdate.
    public static func now() -> String {
        format(secondsSinceEpoch: time(nil))
    }

    public static func format(secondsSinceEpoch: time_t) -> String {
        var seconds = secondsSinceEpoch
        var parts = tm()
        guard gmtime_r(&seconds, &parts) != nil,
              weekdays.indices.contains(Int(parts.tm_wday)), months.indices.contains(Int(parts.tm_mon)) else {
            return "Thu, 01 Jan 1970 00:00:00 GMT"
        }
        func twoDigits(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(weekdays[Int(parts.tm_wday)]), \(twoDigits(parts.tm_mday)) \(months[Int(parts.tm_mon)]) "
            + "\(1900 + Int(parts.tm_year)) \(twoDigits(parts.tm_hour)):\(twoDigits(parts.tm_min)):\(twoDigits(parts.tm_sec)) GMT"
    }

    /// Seconds since 1970, or nil when `text` is not such a date. Every field is range-checked
    /// before it reaches timegm, so no reply can trap the parse.
    public static func parse(_ text: String) -> Double? {
        let words = text.split(whereSeparator: { $0 == " " || $0 == "-" || $0 == "," }).map(String.init)
        guard words.count == 6, words[5].uppercased() == "GMT",
              let day = Int32(words[1]), (1...31).contains(day),
              let month = lowercasedMonths.firstIndex(of: words[2].lowercased()),
              let year = Int32(words[3]), (1601...9999).contains(year) else { return nil }
        let clock = words[4].split(separator: ":").compactMap { Int32($0) }
        guard clock.count == 3, (0...23).contains(clock[0]), (0...59).contains(clock[1]), (0...60).contains(clock[2]) else { return nil }
        var fields = tm()
        fields.tm_year = year - 1900
        fields.tm_mon = Int32(month)
        fields.tm_mday = day
        fields.tm_hour = clock[0]
        fields.tm_min = clock[1]
        fields.tm_sec = clock[2]
        let seconds = timegm(&fields)
        return seconds == -1 ? nil : Double(seconds)
    }
}
