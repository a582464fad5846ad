import DouctlArguments
import DouctlCore

extension ParsedCommand {
    /// Every `KEY=VALUE` given to `option` (`-f`, `-F`, `--attach`), split at the first '=';
    /// `shown` names the option in the error about one without a key.
    func keyValues(_ option: String, shown: String) throws(DouctlError) -> [(key: String, value: String)] {
        var pairs: [(key: String, value: String)] = []
        for raw in values(option) {
            guard let equals = raw.firstIndex(of: "="), equals != raw.startIndex else {
                throw .usage("invalid field '\(raw)' for \(shown): expected KEY=VALUE")
            }
            pairs.append((String(raw[..<equals]), String(raw[raw.index(after: equals)...])))
        }
        return pairs
    }
}
