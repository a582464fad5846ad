import Foundation
import Testing
import DouctlTestSupport

/// A scripted stand-in for the user's browser, started by douctl through $BROWSER.
/// Modes: follow (approve: fetch the URL, following the redirect into douctl's listener),
/// forge (first hit the listener with a wrong state, then follow), deny (send the listener
/// error=access_denied), none (do nothing). It records its argv and the listener's bound
/// address in `record`.
struct FakeBrowser {
    let directory: String
    var script: String { directory + "/browser.py" }
    var record: String { directory + "/browser-record.txt" }

    init() throws {
        try Tools.require("python3")
        directory = TemporaryDirectory.make(prefix: "douctl-browser")
        try Data(Self.source.utf8).write(to: URL(fileURLWithPath: script))
    }

    func command(_ mode: String) -> String { "python3 \(script) \(mode) \(record)" }

    var recorded: String { (try? String(contentsOfFile: record, encoding: .utf8)) ?? "" }

    /// Waits for the script to finish writing its record.
    func waitForRecord(containing text: String, timeout: Double = 10) -> String {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if recorded.contains(text) { return recorded }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return recorded
    }

    static let source = #"""
import sys, urllib.request, urllib.parse, urllib.error
mode, record, url = sys.argv[1], sys.argv[2], sys.argv[3]
log = open(record, "a")
log.write("argv=%r\n" % sys.argv)
query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
redirect = query.get("redirect_uri", "")
port = urllib.parse.urlsplit(redirect).port if redirect else None
if port:
    for line in open("/proc/net/tcp").read().splitlines()[1:]:
        fields = line.split()
        local, state = fields[1], fields[3]
        if state == "0A" and int(local.split(":")[1], 16) == port:
            log.write("listen=%s\n" % local)
def get(target):
    try:
        with urllib.request.urlopen(target, timeout=10) as reply:
            return reply.status, reply.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode("utf-8", "replace")
if mode == "forge-error":
    status, _ = get(redirect + "?" + urllib.parse.urlencode({"error": "access_denied"}))
    log.write("forged-error=%d\n" % status)
    status, body = get(url)
    log.write("followed=%d %s\n" % (status, "close this tab" in body))
if mode == "forge":
    status, _ = get(redirect + "?" + urllib.parse.urlencode({"code": "forged", "state": "not-the-state"}))
    log.write("forged=%d\n" % status)
if mode in ("follow", "forge"):
    status, body = get(url)
    log.write("followed=%d %s\n" % (status, "close this tab" in body))
elif mode == "deny":
    status, _ = get(redirect + "?" + urllib.parse.urlencode({"error": "access_denied", "state": query.get("state", "")}))
    log.write("denied=%d\n" % status)
log.write("done\n")
log.close()
"""#
}
