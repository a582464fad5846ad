import DouctlSystem
import DouctlCore

/// Opens URLs in the user's browser: `$BROWSER` when set (a ':'-separated list of commands,
/// "%s" marking where the URL goes), else `xdg-open` (`open` on macOS).
struct BrowserLauncher {
    let environment: [String: String]

    /// Whether a browser can plausibly open here (not over a bare SSH session).
    var isAvailable: Bool {
        if let browser = environment["BROWSER"], !browser.isEmpty { return true }
        #if os(macOS)
        return true
        #else
        let hasDisplay = !(environment["DISPLAY"] ?? "").isEmpty || !(environment["WAYLAND_DISPLAY"] ?? "").isEmpty
        return hasDisplay && Subprocess.isOnPath("xdg-open", path: environment["PATH"])
        #endif
    }

    /// Opens `url` when `BrowserURL` allows it (http or https, no leading '-', nothing a
    /// shell word or terminal treats specially); false otherwise, with nothing started.
    func open(_ url: String) -> Bool {
        guard BrowserURL.problem(url) == nil else { return false }
        if let browser = environment["BROWSER"], !browser.isEmpty {
            for candidate in browser.split(separator: ":") {
                var words = candidate.split(separator: " ").map(String.init)
                if words.contains("%s") {
                    words = words.map { $0 == "%s" ? url : $0 }
                } else {
                    words.append(url)
                }
                if Subprocess.spawnDetached(words) != nil { return true }
            }
            return false
        }
        #if os(macOS)
        return Subprocess.spawnDetached(["open", url]) != nil
        #else
        return Subprocess.spawnDetached(["xdg-open", url]) != nil
        #endif
    }
}
