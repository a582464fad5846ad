import DouctlArguments
import DouctlHTTP
import DouctlSystem

/// `KEY=VALUE` as an option's value (`-f`, `-F`, `--attach`, `--arg`), split at the first
/// '=' when the option is bound: commands read the pair, never the text.
struct KeyValue: Sendable, Equatable {
    var key: String
    var value: String

    init(_ key: String, _ value: String) {
        self.key = key
        self.value = value
    }

    /// The reader of option `shown`'s values for `OptionBinding.values(_:_:parse:)`: one
    /// without a key is refused at parse time, "invalid field 'x' for -f: expected KEY=VALUE".
    static func reader(_ shown: String, noun: String = "field", form: String = "KEY=VALUE")
        -> @Sendable (String) throws(OptionError) -> KeyValue {
        { (raw: String) throws(OptionError) -> KeyValue in try parse(raw, shown: shown, noun: noun, form: form) }
    }

    static func parse(_ raw: String, shown: String, noun: String = "field", form: String = "KEY=VALUE") throws(OptionError) -> KeyValue {
        guard let equals = raw.firstIndex(of: "="), equals != raw.startIndex else {
            throw OptionError("invalid \(noun) '\(raw)' for \(shown): expected \(form)")
        }
        return KeyValue(String(raw[..<equals]), String(raw[raw.index(after: equals)...]))
    }
}

extension HTTPHeader {
    /// `-H 'Name: value'`, read when the option is bound: a name that is not a token, or a
    /// value with CR, LF or NUL, is refused at parse time.
    static func option(_ raw: String) throws(OptionError) -> HTTPHeader {
        guard let colon = raw.firstIndex(of: ":"), colon != raw.startIndex else {
            throw OptionError("invalid header '\(HTTPSyntax.printable(raw))': expected 'Name: value'")
        }
        let name = String(raw[..<colon]).trimmingCharacters(in: " ")
        let value = raw[raw.index(after: colon)...].trimmingCharacters(in: " \t")
        // Bytes, not Characters: "\r\n" is one Character, so a Character check misses it.
        if let problem = HTTPSyntax.headerProblem(name: name, value: value) { throw OptionError(problem) }
        return HTTPHeader(name, value)
    }
}
