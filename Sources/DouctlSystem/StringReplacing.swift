extension String {
    /// Replaces every occurrence of `target` (what Foundation's replacingOccurrences does,
    /// without linking Foundation).
    public func replacingAll(_ target: String, with replacement: String) -> String {
        guard !target.isEmpty else { return self }
        var result = ""
        var rest = Substring(self)
        while let range = rest.firstRange(of: target) {
            result += rest[..<range.lowerBound]
            result += replacement
            rest = rest[range.upperBound...]
        }
        result += rest
        return result
    }
}

extension String {
    /// The string, or nil when it is empty: an unset and an empty environment variable (or
    /// query parameter) mean the same.
    public var nonEmpty: String? { isEmpty ? nil : self }
}

/// Text made safe inside HTML (the OAuth callback page, the sandbox's pages): & < > " '.
public enum HTMLText {
    public static func escape(_ text: String) -> String {
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

extension StringProtocol {
    /// Trims the given characters from both ends (no Foundation needed).
    public func trimmingCharacters(in set: String) -> String {
        var slice = Substring(self)
        while let first = slice.first, set.contains(first) { slice.removeFirst() }
        while let last = slice.last, set.contains(last) { slice.removeLast() }
        return String(slice)
    }
}
