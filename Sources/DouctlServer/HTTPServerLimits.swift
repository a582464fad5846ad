/// Bounds that keep one misbehaving client from exhausting the server. The defaults suit the
/// sandbox and tests: generous for real uploads, finite for everything a peer controls.
public struct HTTPServerLimits: Sendable {
    /// Request line plus header fields. A longer header section is answered 431 (414 when the
    /// request line alone is longer) and the connection is closed. Clamped to 256 B…64 MiB; the
    /// same bound applies to the trailer section of a chunked body.
    public var maxHeaderBytes = 64 * 1024
    /// Request body. A larger declared Content-Length is answered 413 without reading it; a
    /// chunked body that grows past it makes body reads throw `bodyTooLarge` and ends in 413.
    public var maxBodyBytes: Int64 = 8 << 30
    /// Seconds a keep-alive connection may sit between requests before the server closes it.
    public var idleTimeout: Double = 30
    /// Seconds a client has to send a complete header section, counted from its first byte, so
    /// a client trickling a header is dropped (408) however slowly it trickles. A new connection
    /// also has this long to send its first byte (later requests wait `idleTimeout`).
    public var headerReadTimeout: Double = 30
    /// Seconds a body read or a response write may wait for the peer before giving up.
    public var ioTimeout: Double = 30
    /// Connections served at once; more are answered 503 and closed.
    public var maxConnections = 512
    /// After the response, an unread rest of the body up to this size is read and discarded so
    /// the connection can be reused; a longer one closes the connection instead.
    public var maxDrainBytes: Int64 = 4 << 20
    /// How long `stop()` waits for handlers that are still running before it returns without
    /// them (their sockets are already shut down, so they fail fast once they write).
    public var stopGracePeriod: Double = 5

    public init() {}
}
