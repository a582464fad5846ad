import Testing

/// What a view shows, checked alike by its in-process test (on an injected terminal) and its
/// binary one (on a real pseudo-terminal, or asked for with --format text).
public enum ViewExpectations {
    /// The demo on a terminal: feed entries, not JSON, for the post, the status read back, the
    /// timeline and the comment; like and delete say what they did, as typed by hand; the
    /// whole demo fits a screen or two (it was 441 lines).
    public static func demo(raw: String, screen: [String], sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(screen.contains { $0.hasPrefix("everything worked") }, "\(screen)", sourceLocation: sourceLocation)
        #expect(!raw.contains("\"category\""), "JSON of a status on the terminal: \(raw)", sourceLocation: sourceLocation)
        #expect(!raw.contains("\"original_src\""), sourceLocation: sourceLocation)
        #expect(screen.filter { $0.hasPrefix("[picture] http://127.0.0.1:") }.count >= 3, "\(screen)", sourceLocation: sourceLocation)
        #expect(screen.contains("第一条评论 ✓"), sourceLocation: sourceLocation)
        #expect(screen.contains { $0.hasPrefix("liked ") }, sourceLocation: sourceLocation)
        #expect(screen.contains { $0.hasPrefix("deleted ") }, sourceLocation: sourceLocation)
        #expect(!raw.contains(#""deleted":true"#), sourceLocation: sourceLocation)
        #expect(screen.count < 100, "\(screen.count) lines", sourceLocation: sourceLocation)
        // The login is one line, as gh says it, not the JSON of what was stored (issue 40).
        #expect(screen.contains { $0.hasPrefix("✓ Logged in to sandbox as ") }, "\(screen)", sourceLocation: sourceLocation)
        #expect(!raw.contains("\"user_id\""), "the login's JSON on the terminal: \(raw)", sourceLocation: sourceLocation)
    }

    /// A Coding tweet "看这个 [链接](https://example.com/x)" with a picture, as the feed shows it:
    /// the text with the link's label, the picture's URL (under `base`) and the link's target.
    public static func codingFeed(_ lines: [String], base: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(lines.contains("看这个 链接"), "\(lines)", sourceLocation: sourceLocation)
        #expect(lines.contains { $0.hasPrefix("[picture] \(base)/") }, "\(lines)", sourceLocation: sourceLocation)
        #expect(lines.contains("[link] 链接 https://example.com/x"), "\(lines)", sourceLocation: sourceLocation)
    }
}
