import DouctlArguments
import DouctlCore

/// A node of the command tree: its spec (data) and, for leaves, what runs it.
/// Specs feed the parser, help, completions and the man page; `run` stays out of them.
struct Command: Sendable {
    var spec: CommandSpec
    var children: [Command]
    var run: (@Sendable (Invocation) throws(DouctlError) -> ExitStatus)?

    /// A leaf command.
    init(_ spec: CommandSpec, run: @escaping @Sendable (Invocation) throws(DouctlError) -> ExitStatus) {
        self.spec = spec
        children = []
        self.run = run
    }

    /// A group: `spec.subcommands` is filled from the children.
    init(group spec: CommandSpec, _ children: [Command]) {
        self.spec = spec
        self.children = children
        self.run = nil
        self.spec.subcommands = children.map(\.spec)
    }

    /// This command, taking only these groups of global options (see `GlobalOptions.Group`).
    func inheriting(_ groups: [GlobalOptions.Group]) -> Command {
        var copy = self
        copy.spec.inheritedGroups = groups.map(\.rawValue)
        return copy
    }

    func find(_ path: [String]) -> Command? {
        var node = self
        for name in path {
            guard let next = node.children.first(where: { $0.spec.name == name }) else { return nil }
            node = next
        }
        return node
    }
}
