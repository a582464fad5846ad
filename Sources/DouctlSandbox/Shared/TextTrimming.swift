extension StringProtocol {
    /// Without leading and trailing spaces and tabs.
    func trimmingSpaces() -> String {
        var text = Substring(self)
        while text.first == " " || text.first == "\t" { text.removeFirst() }
        while text.last == " " || text.last == "\t" { text.removeLast() }
        return String(text)
    }
}

/// Truncates to at most `maxBytes` of UTF-8 without splitting a character.
func truncateUTF8(_ text: String, maxBytes: Int) -> String {
    guard text.utf8.count > maxBytes else { return text }
    var result = ""
    var used = 0
    for character in text {
        let size = String(character).utf8.count
        if used + size > maxBytes { break }
        result.append(character)
        used += size
    }
    return result
}
