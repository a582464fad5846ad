import DouctlArguments
import DouctlCore
import DouctlJSON
import DouctlSystem

/// `--format json|text` and `--json` of the commands with a human view, and the global
/// `--color WHEN` (gh's convention: a view on a terminal, JSON everywhere else).
enum OutputOptions {
    static let format = OptionSpec(
        "format", value: ValueSpec("FORMAT", kind: .choice(["text", "json"])),
        help: "text (a view for people) or json (what a pipe gets); default: text when stdout is a terminal, else json")
    static let json = OptionSpec.flag("json", help: "print JSON even on a terminal (same as --format json)")
    static let color = OptionSpec(
        "color", value: ValueSpec("WHEN", kind: .choice(["auto", "always", "never"]), default: "auto"),
        help: "colour JSON, views and errors: auto (on a terminal, unless NO_COLOR is set), always (also in a pipe), never")


    /// What the man page and help say about views.
    static let discussion = """
    On a terminal this command shows a view for people; in a pipe, or with --json or
    --format json (or --pretty/--compact), it prints exactly the JSON it always has.
    """
}

/// A human view: lines for one document and, for walks, for each item.
struct HumanView: Sendable {
    var document: @Sendable (JSON, ViewContext) -> [String]?
    var item: @Sendable (JSON, ViewContext) -> [String]

    /// Statuses: a page of them (or one), each as a feed entry.
    static let feed = HumanView(
        document: { json, context in
            if json.objectValue != nil, json["text"] != nil || json["content"] != nil {
                return StatusView.lines(json, width: context.width, now: context.now, style: context.style)
            }
            return PageItems.of(json).map { $0.flatMap { StatusView.lines($0, width: context.width, now: context.now, style: context.style) } }
        },
        item: { json, context in StatusView.lines(json, width: context.width, now: context.now, style: context.style) })

    /// Users: a card for one, a line each for a list.
    static let users = HumanView(
        document: { json, context in
            if let items = PageItems.of(json) { return items.map { UserView.row($0, width: context.width, style: context.style) } }
            return json.objectValue == nil ? nil : UserView.card(json, width: context.width, style: context.style)
        },
        item: { json, context in [UserView.row(json, width: context.width, style: context.style)] })

    /// Any object as aligned "key value" lines.
    static let fields = HumanView(
        document: { json, context in json.objectValue == nil ? nil : FieldsView.lines(json, style: context.style) },
        item: { json, context in FieldsView.lines(json, style: context.style) })
}

struct ViewContext: Sendable {
    var width: Int
    var now: Double
    var style: TextStyle
}
