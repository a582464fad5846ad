/// Restrained emphasis for human views: bold names, dim times and counts; nothing at all
/// when colour is off (a pipe, NO_COLOR, --color never). And how the terminal counts the
/// columns of emoji sequences (`DisplayWidth.Model`), which the views lay text out by.
struct TextStyle: Sendable {
    let enabled: Bool
    var widths: DisplayWidth.Model = .graphemes

    init(enabled: Bool, widths: DisplayWidth.Model = .graphemes) {
        self.enabled = enabled
        self.widths = widths
    }

    static let plain = TextStyle(enabled: false)

    func bold(_ text: String) -> String { wrap(text, "1") }
    func dim(_ text: String) -> String { wrap(text, "2") }
    func blue(_ text: String) -> String { wrap(text, "34") }

    private func wrap(_ text: String, _ code: String) -> String {
        enabled && !text.isEmpty ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text
    }
}

/// `--color WHEN` and `NO_COLOR`: whether a stream gets colour.
enum ColorChoice: String, Sendable {
    case auto, always, never

    /// `always` colours even in a pipe (and wins over NO_COLOR, as a flag does over the
    /// environment); `auto` colours a terminal unless NO_COLOR is set and not empty.
    static func enabled(_ choice: ColorChoice, isTerminal: Bool, environment: [String: String]) -> Bool {
        switch choice {
        case .always: return true
        case .never: return false
        case .auto: return isTerminal && (environment["NO_COLOR"] ?? "").isEmpty
        }
    }
}
