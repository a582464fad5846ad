/// How to lay out serialized JSON; `pretty` and `compact` match `jq .` and `jq -c .`.
public struct JSONFormat: Sendable, Equatable {
    /// One member or element per line, indented, with `": "` after keys.
    public var pretty: Bool
    /// Spaces per nesting level when pretty. Like `jq --indent 0`, zero gives compact output.
    /// Clamped to 0...64 so a bad setting cannot make output explode.
    public var indent: Int = 2

    public init(pretty: Bool, indent: Int = 2) {
        self.pretty = pretty
        self.indent = indent
    }

    /// `jq .`
    public static let pretty = JSONFormat(pretty: true)
    /// `jq -c .`
    public static let compact = JSONFormat(pretty: false)

    /// Spaces per level actually written; 0 means compact.
    var effectiveIndent: Int { pretty ? min(max(indent, 0), 64) : 0 }
}
