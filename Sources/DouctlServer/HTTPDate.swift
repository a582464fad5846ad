#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The IMF-fixdate of the `Date` response header ("Sun, 06 Nov 1994 08:49:37 GMT"), built by
/// hand: `strftime` would follow the process locale, and Foundation is not linked here.
enum HTTPDate {
    private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    static func now() -> String {
        format(secondsSinceEpoch: time(nil))
    }

    static func format(secondsSinceEpoch: time_t) -> String {
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
}
