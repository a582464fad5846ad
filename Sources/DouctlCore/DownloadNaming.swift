import DouctlSystem

/// The local name a download gets: from the reply's `Content-Disposition` (RFC 6266:
/// `filename*` first, then `filename`), else the URL's last path segment, else "download".
/// Whatever a server says, the result is one plain file name: no directory part, no `..`,
/// no leading dot, no control characters, never empty.
public enum DownloadNaming {
    public static let fallback = "download"
    /// Leaves room for the temp file's prefix and suffix within a 255-byte name.
    static let maximumBytes = 200

    public static func name(contentDisposition: String?, url: String) -> String {
        if let header = contentDisposition, let name = name(contentDisposition: header) { return name }
        return name(url: url) ?? fallback
    }

    /// The file name a `Content-Disposition` header carries, made safe; nil when none.
    public static func name(contentDisposition header: String) -> String? {
        let parsed = HeaderValueWithParameters(parsing: header)
        if let extended = parsed.parameter("filename*"), let decoded = PercentEncoding.decodeExtendedValue(extended),
           let name = sanitize(decoded) {
            return name
        }
        return parsed.parameter("filename").flatMap(sanitize)
    }

    /// The URL's last path segment, percent-decoded and made safe; nil when there is none.
    public static func name(url: String) -> String? {
        var rest = Substring(url)
        if let scheme = rest.firstRange(ofBytes: "://") { rest = rest[scheme.upperBound...] }
        if let end = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) { rest = rest[..<end] }
        guard let slash = rest.firstIndex(of: "/") else { return nil }  // no path at all
        let path = rest[slash...]
        let segment = path.split(separator: "/", omittingEmptySubsequences: false).last ?? ""
        return sanitize(PercentEncoding.decode(String(segment)))
    }

    /// One safe file name from untrusted text, or nil when nothing usable is left.
    public static func sanitize(_ text: String) -> String? {
        // Only the last component counts (RFC 6266 §4.3): "../../etc/passwd" → "passwd".
        let last = text.split(omittingEmptySubsequences: false) { $0 == "/" || $0 == "\\" }.last.map(String.init) ?? ""
        var scalars = String.UnicodeScalarView()
        for scalar in last.unicodeScalars {
            // Controls, C1 codes and bidi overrides become "_": a name from the server
            // must not drive a terminal that lists it, nor read as another extension
            // ("invoice_\u{202E}txt.exe" shows as "…exe.txt").
            scalars.append(TerminalText.isUnsafe(scalar.value) || scalar.value == 0x09 ? "_" : scalar)
        }
        var name = String(scalars).trimmingCharacters(in: " \t")
        while name.hasPrefix(".") { name.removeFirst() }
        name = name.trimmingCharacters(in: " \t")
        guard !name.isEmpty else { return nil }
        return shortened(name)
    }

    /// At most `maximumBytes` of UTF-8, cut between characters, keeping a short extension.
    static func shortened(_ name: String) -> String {
        guard name.utf8.count > maximumBytes else { return name }
        var stem = Substring(name)
        var suffix = ""
        if let dot = name.lastIndex(of: "."), name.utf8.distance(from: dot, to: name.endIndex) <= 16 {
            stem = name[..<dot]
            suffix = String(name[dot...])
        }
        while stem.utf8.count + suffix.utf8.count > maximumBytes, !stem.isEmpty { stem.removeLast() }
        return String(stem) + suffix
    }
}
