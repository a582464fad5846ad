import DouctlJSON

/// The reason an error reply gives, read from the error dialects REST APIs use, so the
/// error line says why (also with `--error-body none`, and in `upload` and `download`,
/// which print no error body):
/// - RFC 9457 problem details: `title`, `detail`, and an `errors` list;
/// - Django REST Framework: `detail`, `{"field": ["…"]}`, `non_field_errors`;
/// - GitHub: `message` and `errors[].field/code/message`;
/// - GitLab: `message` (a string, or an object of field → texts), `error`, `error_description`;
/// - JSON:API: `errors[].title/detail/source.pointer`;
/// - Google: `error.message` and `error.status`;
/// - Datasette and OAuth 2 (RFC 6749 §5.2): `error`, `error_description`.
/// Field errors are named briefly: "name: This field is required.; qty: Ensure …".
/// (Douban's and Coding's `msg` envelopes are read before this, by `ReplyDecoder`.)
enum ErrorDialects {
    struct Reason: Equatable {
        /// One line: the headline, then the field errors.
        var text: String
        /// A symbolic status the reply names (Google's `error.status`), shown as its code.
        var code: String?
    }

    /// At most this many field errors are named; the rest are counted.
    static let maximumFieldErrors = 8
    /// Each text is cut to this many characters ("…" marks a cut).
    static let textLimit = 200

    static func reason(in object: JSONObject) -> Reason? {
        var headline: [String] = []
        var fields: [String] = []
        var code: String?
        func add(_ text: String?) {
            guard let text, !text.isEmpty, !headline.contains(text) else { return }
            headline.append(text)
        }

        add(shortText(object["title"]))
        switch object["error"] {
        case .string(let error)?:
            let description = shortText(object["error_description"])
            add(description.map { "\(shortLine(error)): \($0)" } ?? shortLine(error))
        case .object(let google)?:
            add(shortText(google["message"]))
            code = shortText(google["status"]) ?? shortText(google["code"])
            if let errors = google["errors"] { fields += items(errors) }
        default:
            break
        }
        switch object["message"] {
        case .object(let byField)?: fields += fieldErrors(byField, prefix: "", depth: 0)
        case .array(let list)?: fields += items(.array(list))
        case let value?: add(shortText(value))
        case nil: break
        }
        switch object["detail"] {
        case .object(let byField)?: fields += fieldErrors(byField, prefix: "", depth: 0)
        case let value?: add(shortText(value))
        case nil: break
        }
        if let errors = object["errors"] { fields += items(errors) }
        if let general = object["non_field_errors"] { fields += texts(general) }
        if headline.isEmpty && fields.isEmpty && looksLikeFieldErrors(object) {
            fields = fieldErrors(object, prefix: "", depth: 0)
        }

        var text = headline.joined(separator: ": ")
        if !fields.isEmpty {
            var shown = Array(fields.prefix(maximumFieldErrors))
            if fields.count > shown.count { shown.append("… (\(fields.count - shown.count) more)") }
            text += (text.isEmpty ? "" : ": ") + shown.joined(separator: "; ")
        }
        guard !text.isEmpty else { return nil }
        return Reason(text: text, code: code)
    }

    /// DRF's 400: every member a list of texts (or of nested objects), or a text.
    private static func looksLikeFieldErrors(_ object: JSONObject) -> Bool {
        guard !object.isEmpty else { return false }
        var sawList = false
        for (_, value) in object {
            switch value {
            case .array(let list):
                guard list.allSatisfy({ $0.stringValue != nil || $0.objectValue != nil }) else { return false }
                sawList = true
            case .string, .object: continue
            default: return false
            }
        }
        return sawList
    }

    /// `{"name": ["This field is required."], "items": [{"qty": ["…"]}]}` →
    /// "name: This field is required.", "items.0.qty: …".
    private static func fieldErrors(_ object: JSONObject, prefix: String, depth: Int) -> [String] {
        var out: [String] = []
        for (key, value) in object {
            let name = prefix.isEmpty ? key : "\(prefix).\(key)"
            let label = key == "non_field_errors" && prefix.isEmpty ? nil : shortLine(name)
            switch value {
            case .object(let nested) where depth < 3:
                out += fieldErrors(nested, prefix: name, depth: depth + 1)
            case .array(let list) where depth < 3 && list.contains(where: { $0.objectValue != nil }):
                for (index, element) in list.enumerated() {
                    if case .object(let nested) = element { out += fieldErrors(nested, prefix: "\(name).\(index)", depth: depth + 1) }
                }
            default:
                let said = texts(value).joined(separator: " ")
                if said.isEmpty { continue }
                out.append(label.map { "\($0): \(said)" } ?? said)
            }
        }
        return out
    }

    /// An `errors` list (JSON:API, GitHub, RFC 9457 extensions), or an object of field → texts.
    private static func items(_ errors: JSON) -> [String] {
        switch errors {
        case .object(let byField):
            return fieldErrors(byField, prefix: "", depth: 0)
        case .array(let list):
            return list.compactMap { element -> String? in
                guard case .object(let item) = element else { return shortText(element) }
                let name = pointerName(item["source"]?["pointer"] ?? item["pointer"]) ?? shortText(item["field"])
                    ?? shortText(item["source"]?["parameter"]) ?? shortText(item["parameter"]) ?? shortText(item["location"])
                let detail = shortText(item["detail"]) ?? shortText(item["message"])
                let title = shortText(item["title"])
                var said = detail ?? title ?? shortText(item["code"]) ?? shortText(item["reason"])
                if name == nil, let title, let detail, title != detail { said = "\(title): \(detail)" }
                guard let said else { return nil }
                return name.map { "\($0): \(said)" } ?? said
            }
        default:
            return shortText(errors).map { [$0] } ?? []
        }
    }

    /// A JSON pointer as a field name: "/data/attributes/title" → "title", "#/age" → "age",
    /// "/items/0/qty" → "items/0/qty".
    private static func pointerName(_ pointer: JSON?) -> String? {
        guard var text = pointer?.stringValue, !text.isEmpty else { return nil }
        if text.hasPrefix("#") { text.removeFirst() }
        for prefix in ["/data/attributes/", "/data/relationships/", "/"] where text.hasPrefix(prefix) {
            text.removeFirst(prefix.count)
            break
        }
        return text.isEmpty ? nil : shortLine(text)
    }

    private static func texts(_ value: JSON) -> [String] {
        switch value {
        case .array(let list): return list.compactMap(shortText)
        default: return shortText(value).map { [$0] } ?? []
        }
    }

    private static func shortText(_ value: JSON?) -> String? {
        guard let value, !value.isNull, let text = value.scalarText else { return nil }
        let line = shortLine(text)
        return line.isEmpty ? nil : line
    }

    private static func shortLine(_ text: String) -> String {
        BodyQuote.singleLine(text, limit: textLimit)
    }
}
