import DouctlArguments
import DouctlCore

/// `KEY=VALUE` options (`-f`, `-F`, `--attach`), split at the first '='.
enum KeyValueOptions {
    /// Every value split; `shown` names the option in the error about one without a key.
    static func split(_ values: [String], shown: String) throws(DouctlError) -> [(key: String, value: String)] {
        do { return try pairs(values, shown: shown) } catch { throw .usage(error.message) }
    }

    /// The same, refused at parse time (`validate()`, exit 2 with the usage line).
    static func pairs(_ values: [String], shown: String) throws(OptionError) -> [(key: String, value: String)] {
        var pairs: [(key: String, value: String)] = []
        for raw in values {
            guard let equals = raw.firstIndex(of: "="), equals != raw.startIndex else {
                throw OptionError("invalid field '\(raw)' for \(shown): expected KEY=VALUE")
            }
            pairs.append((String(raw[..<equals]), String(raw[raw.index(after: equals)...])))
        }
        return pairs
    }
}
