import DouctlSystem

/// The sandbox's own `http://127.0.0.1:PORT`, which replies link to (pictures, avatars, the
/// device verification page). It is known only once the port is bound, after the handlers
/// exist, so they share this holder rather than a string.
final class BaseURL: Sendable {
    private let text = LockedValue("")

    var value: String { text.value }

    func set(_ url: String) { text.withLock { $0 = url } }
}
