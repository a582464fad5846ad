import DouctlCore
import DouctlJSON
import DouctlSystem

/// The readable feed of `shuo timeline`, `shuo get` and `shuo comments` on a terminal:
/// per status a header (author, @uid, relative time, id), the text wrapped to the width
/// by display width, its pictures and link, a reshared status indented, and the counts.
/// Douban statuses and Coding tweets both; pure (JSON and a clock in, lines out).
enum StatusView {
    static func lines(_ status: JSON, width: Int, now: Double, style: TextStyle, indent: String = "") -> [String] {
        let width = max(width - DisplayWidth.of(indent, style.widths), 20)
        var lines: [String] = []
        let author = status["user"] ?? status["owner"] ?? .null
        // The name may be cut to the width; the handle, time, id and title never are.
        var header: [(text: String, bold: Bool)] = [(DisplayWidth.truncate(UserView.name(of: author), to: width, style.widths), true)]
        if let handle = UserView.handle(of: author) { header.append(("@" + handle, false)) }
        if let when = Age.describe(status["created_at"], now: now) { header.append(("· " + when, false)) }
        if let id = status["id"]?.scalarText { header.append(("#" + id, false)) }
        if let title = status["title"]?.stringValue, status["reshared_status"] != nil { header.append((title, false)) }
        lines += fitted(header, width: width, style: style)
        // Coding's tweets are HTML: its pictures and link targets get the lines Douban's
        // attachments get below.
        let html = status["text"] == nil ? status["content"]?.stringValue.map(HTMLText.read) : nil
        let text = status["text"]?.stringValue ?? html?.text ?? ""
        if !text.isEmpty { lines += DisplayWidth.wrap(text, width: width, style.widths) }
        if let html {
            for url in html.pictures { lines += labelled("[picture]", url, width: width, style: style) }
            for link in html.links {
                lines += labelled("[link]" + (link.text.isEmpty || link.text == link.href ? "" : " " + link.text), link.href, width: width, style: style)
            }
        }
        for attachment in status["attachments"]?.arrayValue ?? [] {
            let type = attachment["type"]?.stringValue
            if type == "image" {
                for media in attachment["media"]?.arrayValue ?? [] {
                    let url = media["original_src"]?.stringValue ?? media["src"]?.stringValue ?? ""
                    lines += labelled("[picture]", url, width: width, style: style)
                }
            } else if let href = attachment["href"]?.stringValue ?? attachment["expaned_href"]?.stringValue {
                let title = attachment["title"]?.stringValue ?? ""
                lines += labelled("[link]" + (title.isEmpty ? "" : " " + title), href, width: width, style: style)
            }
        }
        if let original = status["reshared_status"], original.objectValue != nil {
            lines += Self.lines(original, width: width, now: now, style: style, indent: "  │ ").dropLast()
        }
        var counts: [String] = []
        if let likes = (status["like_count"] ?? status["likes"])?.intValue { counts.append("♥ \(likes)") }
        if let comments = (status["comments_count"] ?? status["comments"])?.intValue { counts.append("💬 \(comments)") }
        if let reshares = status["reshared_count"]?.intValue { counts.append("⟳ \(reshares)") }
        if !counts.isEmpty { lines.append(style.dim(counts.joined(separator: "  "))) }
        return lines.map { indent + $0 } + [""]
    }

    /// The header's parts packed into lines of `width`, a part never split across two (a
    /// status id stays whole to be copied), as narrow terminals need (40 columns).
    static func fitted(_ parts: [(text: String, bold: Bool)], width: Int, style: TextStyle) -> [String] {
        var lines: [String] = []
        var line: [String] = []
        var used = 0
        for part in parts {
            let partWidth = DisplayWidth.of(part.text, style.widths)
            if !line.isEmpty && used + 1 + partWidth > width {
                lines.append(line.joined(separator: " "))
                (line, used) = ([], 0)
            }
            used += (line.isEmpty ? 0 : 1) + partWidth
            line.append(part.bold ? style.bold(part.text) : style.dim(part.text))
        }
        if !line.isEmpty { lines.append(line.joined(separator: " ")) }
        return lines
    }

    /// "[picture] URL" on one line when it fits; else the label (cut to the width) and the
    /// URL whole on a line of its own, for the terminal to wrap: a URL is never cut, so it
    /// can still be copied or clicked.
    static func labelled(_ label: String, _ url: String, width: Int, style: TextStyle) -> [String] {
        let line = label + " " + url
        if DisplayWidth.of(line, style.widths) <= width { return [style.dim(line)] }
        return [style.dim(DisplayWidth.truncate(label, to: width, style.widths)), style.dim(url)]
    }
}

/// Human times: "just now", "5m ago", "3h ago", "2d ago", then the date.
enum Age {
    /// Seconds since 1970 of a status's `created_at`: Douban's "2026-11-24 20:00:00"
    /// (Beijing time), RFC 3339, or Coding's milliseconds.
    static func seconds(_ value: JSON?) -> Double? {
        guard let value else { return nil }
        if let text = value.stringValue {
            if text.count == 19, let seconds = Timestamp.parseRFC3339(text + "+08:00") { return seconds }
            return Timestamp.parseRFC3339(text)
        }
        if let number = value.doubleValue { return number > 1e11 ? number / 1000 : number }
        return nil
    }

    static func describe(_ value: JSON?, now: Double) -> String? {
        guard let then = seconds(value) else { return value?.stringValue }
        let elapsed = now - then
        if elapsed < 0 { return String(Timestamp.rfc3339(then).prefix(10)) }
        if elapsed < 60 { return "just now" }
        if elapsed < 3600 { return "\(Int(elapsed / 60))m ago" }
        if elapsed < 86400 { return "\(Int(elapsed / 3600))h ago" }
        if elapsed < 30 * 86400 { return "\(Int(elapsed / 86400))d ago" }
        return String(Timestamp.rfc3339(then).prefix(10))
    }
}

/// Coding renders tweets to HTML: the text a person reads, without tags, and what the tags
/// point at that the text does not show: pictures (`<img src>`, and Markdown `![](url)`, as
/// `shuo get --save-images` finds them) and the targets of web links (`<a href>`).
enum HTMLText {
    struct Content {
        var text: String
        var pictures: [String]
        var links: [(text: String, href: String)]
    }

    static func plain(_ html: String) -> String { read(html).text }

    static func read(_ html: String) -> Content {
        var text = ""
        var links: [(text: String, href: String)] = []
        var openLink: (start: Int, href: String)?  // where its text starts, in UTF-8 bytes
        var inTag = false
        var tag = ""
        for character in html {
            if inTag {
                if character == ">" {
                    inTag = false
                    let name = tag.lowercased()
                    if name.hasPrefix("br") || name.hasPrefix("/p") || name.hasPrefix("/div") || name.hasPrefix("/li") { text.append("\n") }
                    if name == "a" || name.hasPrefix("a ") || name.hasPrefix("a\n") || name.hasPrefix("a\t") {
                        openLink = attribute("href", in: tag).map { (text.utf8.count, $0) }
                    } else if name.hasPrefix("/a"), let link = openLink {
                        links.append((decode(String(decoding: text.utf8.dropFirst(link.start), as: UTF8.self)).trimmingCharacters(in: " \n\t"), link.href))
                        openLink = nil
                    }
                } else {
                    tag.append(character)
                }
            } else if character == "<" {
                inTag = true
                tag = ""
            } else {
                text.append(character)
            }
        }
        text = decode(text)
        while text.hasSuffix("\n") { text.removeLast() }
        var seen = Set<String>()
        let webLinks = links.filter { ($0.href.hasPrefix("http://") || $0.href.hasPrefix("https://")) && seen.insert($0.href).inserted }
        return Content(text: text, pictures: StatusPictures.inContent(html), links: webLinks)
    }

    /// The value of `name="…"` (or '…') in a tag's text, entities decoded.
    private static func attribute(_ name: String, in tag: String) -> String? {
        for quote in ["\"", "'"] {
            guard let start = tag.firstRange(ofBytes: name + "=" + quote) else { continue }
            let value = tag[start.upperBound...]
            guard let end = value.firstIndex(of: Character(quote)) else { return nil }
            return decode(String(value[..<end]))
        }
        return nil
    }

    private static func decode(_ text: String) -> String {
        var text = text
        for (entity, replacement) in [("&lt;", "<"), ("&gt;", ">"), ("&quot;", "\""), ("&#39;", "'"), ("&nbsp;", " "), ("&amp;", "&")] {
            text = text.replacingAll(entity, with: replacement)
        }
        return text
    }
}
