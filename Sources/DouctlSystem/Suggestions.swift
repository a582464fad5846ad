/// "Did you mean …?" for mistyped commands, options and values.
public enum Suggestions {
    /// The closest candidate within a small edit distance, or nil.
    public static func closest(to input: String, in candidates: [String]) -> String? {
        let limit = max(1, min(3, input.count / 3))
        var best: (candidate: String, distance: Int)?
        for candidate in candidates {
            let distance = editDistance(input, candidate)
            if distance <= limit, distance < (best?.distance ?? .max) {
                best = (candidate, distance)
            }
        }
        if let best { return best.candidate }
        // A unique candidate that starts with what was typed ("--pre" → "--pretty").
        let prefixed = candidates.filter { $0.hasPrefix(input) && input.count >= 3 }
        return prefixed.count == 1 ? prefixed.first : nil
    }

    /// Damerau–Levenshtein (optimal string alignment): a swap of neighbours counts once.
    public static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previousPrevious = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    current[j] = min(current[j], previousPrevious[j - 2] + 1)
                }
            }
            (previousPrevious, previous, current) = (previous, current, previousPrevious)
        }
        return previous[b.count]
    }
}
