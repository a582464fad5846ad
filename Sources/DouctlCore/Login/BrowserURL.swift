import DouctlSystem

/// The one place that decides what douctl may hand to a browser. A login's URLs come from
/// a server (`verification_uri`) or from config (`authorize_url`), and `$BROWSER` or
/// `xdg-open` act on whatever they are given: `javascript:`, `file:///etc/passwd` and
/// `smb://` open, and a "URL" beginning with `-` (`--renderer-cmd-prefix=…`) becomes the
/// browser's own option (Chromium runs it). So only an http or https URL with a host, and
/// nothing a terminal or a shell word would treat specially, is opened; anything else is
/// printed for the person to judge and copy.
public enum BrowserURL {
    /// Why `url` must not be opened, or nil when it may.
    public static func problem(_ url: String) -> String? {
        let lower = HTTPSyntax.lowercased(Substring(url))
        let rest: Substring
        if lower.hasPrefix(bytes: "https://") {
            rest = url.droppingASCII(8)
        } else if lower.hasPrefix(bytes: "http://") {
            rest = url.droppingASCII(7)
        } else {
            return "only http and https URLs are opened in a browser"
        }
        // Printable ASCII only: no space or control (a second argument, a forged line), no
        // bidi control or other look-alike (what the person reads is what opens).
        guard url.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            return "the URL holds spaces, controls or non-ASCII characters"
        }
        let authorityEnd = rest.utf8.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        let host = authority.split(separator: "@", omittingEmptySubsequences: false).last ?? ""
        guard !host.isEmpty, host.first != ":" else { return "the URL names no host" }
        return nil
    }
}
