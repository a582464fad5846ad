import DouctlSystem

/// Just enough Markdown for tweets: paragraphs (blank lines), line breaks, images
/// `![alt](url)` and links `[text](url)`; everything else is escaped text.
enum CodingMarkdown {
    static func html(_ markdown: String) -> String {
        let text = markdown.replacingCRLF()
        var paragraphs: [[Substring]] = []
        var current: [Substring] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.allSatisfy({ $0 == " " || $0 == "\t" }) {
                if !current.isEmpty { paragraphs.append(current) }
                current = []
            } else {
                current.append(line)
            }
        }
        if !current.isEmpty { paragraphs.append(current) }
        return paragraphs.map { lines in
            "<p>" + lines.map { inline(String($0)) }.joined(separator: "<br />") + "</p>"
        }.joined()
    }

    private static func inline(_ line: String) -> String {
        let characters = Array(line)
        var output = ""
        var index = 0
        while index < characters.count {
            let isImage = characters[index] == "!" && index + 1 < characters.count && characters[index + 1] == "["
            if isImage || characters[index] == "[" {
                let open = isImage ? index + 1 : index
                if let (label, url, end) = link(characters, open) {
                    if isImage {
                        output += "<img src=\"\(HTMLText.escape(url))\" alt=\"\(HTMLText.escape(label))\">"
                    } else {
                        output += "<a href=\"\(HTMLText.escape(url))\" target=\"_blank\" rel=\"nofollow\">\(HTMLText.escape(label))</a>"
                    }
                    index = end
                    continue
                }
            }
            output += HTMLText.escape(String(characters[index]))
            index += 1
        }
        return output
    }

    /// `[label](url)` starting at `open` (the `[`): the label, the URL (without an optional
    /// title) and the index after `)`.
    private static func link(_ characters: [Character], _ open: Int) -> (String, String, Int)? {
        guard let close = characters[(open + 1)...].firstIndex(of: "]"), close + 1 < characters.count,
              characters[close + 1] == "(", let end = characters[(close + 2)...].firstIndex(of: ")") else { return nil }
        let label = String(characters[(open + 1)..<close])
        let target = String(characters[(close + 2)..<end]).trimmingSpaces()
        let url = target.split(separator: " ", maxSplits: 1).first.map(String.init) ?? ""
        guard !url.isEmpty else { return nil }
        return (label, url, end + 1)
    }
}

extension String {
    fileprivate func replacingCRLF() -> String {
        guard unicodeScalars.contains("\r") else { return self }
        var result = ""
        var previousWasCR = false
        for scalar in unicodeScalars {
            if scalar == "\r" {
                result.append("\n")
                previousWasCR = true
                continue
            }
            if scalar == "\n" && previousWasCR {
                previousWasCR = false
                continue
            }
            previousWasCR = false
            result.unicodeScalars.append(scalar)
        }
        return result
    }
}
