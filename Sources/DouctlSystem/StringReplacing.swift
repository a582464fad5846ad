extension String {
    /// Replaces every occurrence of `target` (what Foundation's replacingOccurrences does,
    /// without linking Foundation).
    public func replacingAll(_ target: String, with replacement: String) -> String {
        guard !target.isEmpty else { return self }
        var result = ""
        var rest = Substring(self)
        while let range = rest.firstRange(ofBytes: target) {
            result += rest[..<range.lowerBound]
            result += replacement
            rest = rest[range.upperBound...]
        }
        result += rest
        return result
    }
}

extension StringProtocol {
    /// The first occurrence of `needle`, compared byte for byte in UTF-8: for the ASCII
    /// markers looked for here ("://", "{me}") what `firstRange(of:)` answers, without
    /// _StringProcessing's generic searcher, whose first calls cost a small request ~0.2 M
    /// instructions and 128 KiB of resident code (issue 23).
    @inlinable
    public func firstRange(ofBytes needle: String) -> Range<Index>? {
        let view = utf8
        var start = view.startIndex
        while start != view.endIndex {
            var probe = start
            var matched = true
            for byte in needle.utf8 {
                guard probe != view.endIndex, view[probe] == byte else { matched = false; break }
                view.formIndex(after: &probe)
            }
            if matched { return start..<probe }
            view.formIndex(after: &start)
        }
        return needle.isEmpty ? startIndex..<startIndex : nil
    }

    /// The first index of an ASCII character, found in the UTF-8 bytes: `firstIndex(of:)`
    /// compares Characters, which runs grapheme breaking over every byte before it.
    @inlinable
    public func firstIndex(ofASCII scalar: Unicode.Scalar) -> Index? { utf8.firstIndex(of: UInt8(truncatingIfNeeded: scalar.value)) }

    /// The index after an ASCII character found by `firstIndex(ofASCII:)`/`lastIndex(ofASCII:)`.
    @inlinable
    public func index(afterASCII index: Index) -> Index { utf8.index(after: index) }

    /// Whether `needle` occurs, byte for byte (see `firstRange(ofBytes:)`).
    @inlinable
    public func containsBytes(_ needle: String) -> Bool { firstRange(ofBytes: needle) != nil }

    /// Whether the string starts with `prefix`, compared byte for byte in UTF-8. `hasPrefix`
    /// also makes sure the prefix ends on a Character boundary, which runs the grapheme
    /// breaker over the next bytes; for the ASCII markers looked for here ("--", "HTTP/",
    /// "https://") the answer is the same, and a small request's start does not page in
    /// the standard library's Character code (issue 23).
    @inlinable
    public func hasPrefix(bytes prefix: String) -> Bool { utf8.starts(with: prefix.utf8) }

    /// What follows the first `count` bytes, which the caller has seen are ASCII (the
    /// "--" of "--name"): `dropFirst(_:)` counts Characters.
    @inlinable
    public func droppingASCII(_ count: Int) -> SubSequence {
        self[(utf8.index(startIndex, offsetBy: count, limitedBy: endIndex) ?? endIndex)...]
    }

    /// Whether an ASCII character occurs, found in the UTF-8 bytes (see `firstIndex(ofASCII:)`).
    @inlinable
    public func containsASCII(_ scalar: Unicode.Scalar) -> Bool { firstIndex(ofASCII: scalar) != nil }
}

extension StringProtocol where UTF8View: BidirectionalCollection {
    /// The last index of an ASCII character (see `firstIndex(ofASCII:)`).
    @inlinable
    public func lastIndex(ofASCII scalar: Unicode.Scalar) -> Index? { utf8.lastIndex(of: UInt8(truncatingIfNeeded: scalar.value)) }
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
