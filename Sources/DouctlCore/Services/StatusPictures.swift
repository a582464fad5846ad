import DouctlJSON
import DouctlSystem

/// The pictures of a status as URLs, for `shuo get --save-images`.
/// - Douban: each `attachments[].media[]` of type image (the status's own, then a reshared
///   original's), its `original_src` (the full-size picture) else its `src`.
/// - Coding: the pictures embedded in the tweet's `content`, as HTML `<img src="…">` (how the
///   API renders them) or Markdown `![alt](url)` (how they are posted).
public enum StatusPictures {
    public static func urls(in status: JSON, style: APIStyle) -> [String] {
        var urls: [String] = []
        switch style {
        case .douban:
            // A reshare (转播) shows the original's pictures: those count too, after its own.
            let attachments = (status["attachments"]?.arrayValue ?? []) + (status["reshared_status"]?["attachments"]?.arrayValue ?? [])
            for attachment in attachments {
                for media in attachment["media"]?.arrayValue ?? [] {
                    guard (media["type"]?.stringValue ?? "image") == "image" else { continue }
                    let original = media["original_src"]?.stringValue ?? ""
                    let url = original.isEmpty ? media["src"]?.stringValue ?? "" : original
                    if !url.isEmpty { urls.append(url) }
                }
            }
        case .coding:
            let content = status["content"]?.stringValue ?? ""
            urls = htmlImageSources(content) + markdownImageTargets(content)
        }
        var seen = Set<String>()
        return urls.filter { ($0.hasPrefix("http://") || $0.hasPrefix("https://")) && seen.insert($0).inserted }
    }

    /// `src` of each `<img …>` tag, with the HTML entities a URL can carry decoded.
    static func htmlImageSources(_ html: String) -> [String] {
        var sources: [String] = []
        var rest = Substring(html)
        while let tag = rest.firstRange(of: "<img") {
            let afterTag = rest[tag.upperBound...]
            let end = afterTag.firstIndex(of: ">") ?? afterTag.endIndex
            let attributes = afterTag[..<end]
            if let src = attributes.firstRange(of: "src=\"") {
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
        while let open = rest.firstRange(of: "![") {
            let afterOpen = rest[open.upperBound...]
            guard let close = afterOpen.firstRange(of: "](") else { break }
            let target = afterOpen[close.upperBound...]
            guard let end = target.firstIndex(of: ")") else { break }
            let url = target[..<end].trimmingCharacters(in: " ")
            if !url.contains(" ") { targets.append(url) }
            rest = target[end...]
        }
        return targets
    }
}
