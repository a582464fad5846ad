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
