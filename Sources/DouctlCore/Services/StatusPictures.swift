import DouctlJSON
import DouctlSystem

/// Reading pictures out of a status: what the styles share. Where a style keeps them is
/// its own (`APIStyleRules.pictureURLs(in:)`).
public enum StatusPictures {
    /// The http(s) URLs of `urls`, each once, in order.
    static func webURLsOnce(_ urls: [String]) -> [String] {
        var seen = Set<String>()
        return urls.filter { ($0.hasPrefix("http://") || $0.hasPrefix("https://")) && seen.insert($0).inserted }
    }

    /// The pictures of a Coding-style tweet's `content`: `<img src>` and Markdown images,
    /// web URLs only, each once.
    public static func inContent(_ content: String) -> [String] {
        webURLsOnce(htmlImageSources(content) + markdownImageTargets(content))
    }

    /// `src` of each `<img …>` tag, with the HTML entities a URL can carry decoded.
    static func htmlImageSources(_ html: String) -> [String] {
        var sources: [String] = []
        var rest = Substring(html)
        while let tag = rest.firstRange(ofBytes: "<img") {
            let afterTag = rest[tag.upperBound...]
            let end = afterTag.firstIndex(of: ">") ?? afterTag.endIndex
            let attributes = afterTag[..<end]
            if let src = attributes.firstRange(ofBytes: "src=\"") {
                let value = attributes[src.upperBound...]
                if let close = value.firstIndex(of: "\"") {
                    sources.append(String(value[..<close])
                        .replacingAll("&quot;", with: "\"").replacingAll("&#39;", with: "'")
                        .replacingAll("&lt;", with: "<").replacingAll("&gt;", with: ">")
                        .replacingAll("&amp;", with: "&"))
                }
            }
            rest = afterTag[end...]
        }
        return sources
    }

    /// The target of each Markdown image `![alt](url)` (no nested brackets, no titles).
    static func markdownImageTargets(_ text: String) -> [String] {
        var targets: [String] = []
        var rest = Substring(text)
        while let open = rest.firstRange(ofBytes: "![") {
            let afterOpen = rest[open.upperBound...]
            guard let close = afterOpen.firstRange(ofBytes: "](") else { break }
            let target = afterOpen[close.upperBound...]
            guard let end = target.firstIndex(of: ")") else { break }
            let url = target[..<end].trimmingCharacters(in: " ")
            if !url.contains(" ") { targets.append(url) }
            rest = target[end...]
        }
        return targets
    }
}
