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

extension CommandContext {
    /// True when stdout gets a view rather than JSON: a terminal, unless --json,
    /// --format json, --pretty or --compact asks for JSON (or --format text asks for a view).
    var wantsView: Bool {
        guard let view = presentation.view else { return false }
        if view.json { return false }
        if let format = view.format { return format == .text }
        if globals.pretty || globals.compact { return false }
        return stdout.isTerminal
    }

    /// Whether stdout gets colour (`--color`, `NO_COLOR`, a terminal).
    var colorsStdout: Bool {
        if stdout.stage != nil { return false }  // --jq reads the output, not a person
        return ColorChoice.enabled(globals.color, isTerminal: stdout.isTerminal, environment: environment)
    }

    var viewContext: ViewContext {
        ViewContext(width: Terminal.width(stdout.fileDescriptor) ?? 80, now: Timestamp.now(),
                    style: TextStyle(enabled: colorsStdout, widths: DisplayWidth.Model(environment: environment)))
    }

    /// The view of `json` on a terminal, else (or when the view does not fit the reply) JSON.
    func printDocument(_ json: JSON, view: HumanView) {
        if wantsView, let lines = view.document(TerminalText.shown(json), viewContext) {
            printLines(lines)
        } else {
            printJSON(json)
        }
    }

    func printLines(_ lines: [String]) {
        var text = lines.joined(separator: "\n")
        if !text.isEmpty || !lines.isEmpty { text += "\n" }
        stdout.write(Array(text.utf8))
        stdout.flush()
    }

    /// JSON bytes for stdout, coloured like jq's when colour is on. `api` and the streaming
    /// reply path call this with the bytes they are about to write.
    /// JSON text as stdout should get it: coloured and with terminal controls escaped on a
    /// terminal (`JSONColorizer`), as it is in a pipe.
    func colored(_ bytes: [UInt8]) -> [UInt8] {
        let colors = colorsStdout
        return colors || stdout.isTerminal ? JSONColorizer.colorize(bytes, colors: colors) : bytes
    }
}
