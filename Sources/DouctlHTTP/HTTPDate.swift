#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// HTTP dates (RFC 9110 §5.6.7) as servers send them in Retry-After and Set-Cookie Expires:
/// "Sun, 06 Nov 1994 08:49:37 GMT", and the older cookie form "Sun, 06-Nov-1994 08:49:37 GMT".
/// Every field is range-checked before it reaches timegm, so no reply can trap the parse.
public enum HTTPDate {
    static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// Seconds since 1970, or nil when `text` is not such a date.
    public static func parse(_ text: String) -> Double? {
        let words = text.split(whereSeparator: { $0 == " " || $0 == "-" || $0 == "," }).map(String.init)
        guard words.count == 6, words[5].uppercased() == "GMT",
              let day = Int32(words[1]), (1...31).contains(day),
              let month = months.firstIndex(of: words[2].lowercased()),
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
