import DouctlJSON

/// Users on a terminal: a card for `user me`/`user get`, one line each for lists
/// (`user search`, `following`, `followers`). Douban and Coding fields both.
enum UserView {
    static func name(of user: JSON) -> String {
        user["screen_name"]?.stringValue ?? user["name"]?.stringValue ?? user["uid"]?.stringValue ?? "?"
    }

    /// Douban's uid, Coding's global_key.
    static func handle(of user: JSON) -> String? {
        (user["uid"] ?? user["global_key"])?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
    }

    static func card(_ user: JSON, width: Int, style: TextStyle) -> [String] {
        var lines: [String] = []
        var header = [style.bold(name(of: user))]
        if let handle = handle(of: user) { header.append(style.dim("@" + handle)) }
        if let id = user["id"]?.scalarText { header.append(style.dim("#" + id)) }
        lines.append(header.joined(separator: " "))
        let about = (user["description"] ?? user["desc"] ?? user["slogan"])?.stringValue ?? ""
        if !about.isEmpty { lines += DisplayWidth.wrap(about, width: max(width, 20), style.widths) }
        var facts: [String] = []
        if let location = (user["loc_name"] ?? user["location"])?.stringValue, !location.isEmpty { facts.append(location) }
        let counts: [(String, String)] = [
            ("following", "following_count"), ("following", "follows_count"),
            ("followers", "followers_count"), ("followers", "fans_count"),
            ("statuses", "statuses_count"), ("tweets", "tweets_count"),
        ]
        for (label, key) in counts {
            if let count = user[key]?.intValue { facts.append("\(count) \(label)") }
        }
        if !facts.isEmpty { lines.append(style.dim(facts.joined(separator: " · "))) }
        if let url = (user["alt"] ?? user["url"])?.stringValue, !url.isEmpty { lines.append(style.dim(url)) }
        return lines
    }

    /// One line: name, @handle, and the start of what they say about themselves.
    static func row(_ user: JSON, width: Int, style: TextStyle) -> String {
        var plain = name(of: user)
        var line = style.bold(plain)
        if let handle = handle(of: user) {
            plain += " @" + handle
            line += " " + style.dim("@" + handle)
        }
        let about = ((user["description"] ?? user["signature"] ?? user["slogan"])?.stringValue ?? "")
            .split(whereSeparator: \.isNewline).joined(separator: " ")
        let room = width - DisplayWidth.of(plain, style.widths) - 2
        if !about.isEmpty, room > 4 { line += "  " + DisplayWidth.truncate(about, to: room, style.widths) }
        return line
    }
}

/// The items of one page of a list as the API sent it: the array itself, or the array
/// in an envelope (`users`, `comments`, `list`, …); nil when there is none.
enum PageItems {
    static func of(_ page: JSON) -> [JSON]? {
        if let items = page.arrayValue { return items }
        guard let object = page.objectValue else { return nil }
        for key in ["statuses", "users", "comments", "list", "items", "data"] {
            if let items = object[key]?.arrayValue { return items }
        }
        return nil
    }
}

/// Objects such as `auth status`, `cache info`, a `profile list` row: "key  value" lines,
/// keys aligned; nested objects one level down, indented.
enum FieldsView {
    static func lines(_ object: JSON, style: TextStyle, indent: String = "") -> [String] {
        guard let fields = object.objectValue else { return [indent + (object.scalarText ?? object.text(.compact))] }
        let keyWidth = fields.map { DisplayWidth.of($0.key, style.widths) }.max() ?? 0
        var lines: [String] = []
        for (key, value) in fields {
            let label = style.bold(key) + String(repeating: " ", count: keyWidth - DisplayWidth.of(key, style.widths))
            switch value {
            case .object:
                lines.append(indent + label)
                lines += Self.lines(value, style: style, indent: indent + "  ")
            case .array(let items):
                let texts = items.map { $0.stringValue ?? $0.text(.compact) }
                lines.append(indent + label + "  " + (texts.isEmpty ? style.dim("none") : texts.joined(separator: ", ")))
            case .null:
                lines.append(indent + label + "  " + style.dim("-"))
            default:
                lines.append(indent + label + "  " + (value.stringValue ?? value.scalarText ?? ""))
            }
        }
        return lines
    }

    /// Rows of objects as a table: a bold header, columns padded by display width.
    static func table(_ rows: [JSON], columns: [String], style: TextStyle) -> [String] {
        let cells = rows.map { row in columns.map { column -> String in
            guard let value = row[column] else { return "" }
            if let bool = value.boolValue { return bool ? "yes" : "no" }
            return value.stringValue ?? (value.isNull ? "-" : value.scalarText ?? value.text(.compact))
        } }
        let widths = columns.indices.map { index in
            max(DisplayWidth.of(columns[index], style.widths), cells.map { DisplayWidth.of($0[index], style.widths) }.max() ?? 0)
        }
        func line(_ values: [String], _ decorate: (String) -> String) -> String {
            var text = ""
            for (index, value) in values.enumerated() {
                text += decorate(value)
                if index < values.count - 1 { text += String(repeating: " ", count: widths[index] - DisplayWidth.of(value, style.widths) + 2) }
            }
            while text.hasSuffix(" ") { text.removeLast() }
            return text
        }
        return [line(columns.map { $0.uppercased() }, style.bold)] + cells.map { line($0, { $0 }) }
    }
}
