import Foundation

/// One child started at a time across the test runner.
///
/// Foundation's Process (Linux) learns that a child ended when the child's end of a socket
/// pair closes. That end is made without close-on-exec and stays open in this process until
/// `run()` returns, so a child another thread starts in that moment inherits it and holds it
/// for as long as it lives: the first child's exit is then never seen, and `waitUntilExit()`
/// waits forever. CI hung that way on a `douctl keeper status` whose end a python peer,
/// started at the same moment by another test, held. Starting children one at a time closes
/// the window (douctl's own spawns close every descriptor above stderr in the child).
private let launchLock = NSLock()

extension Process {
    /// `run()`, never at the same moment as another test's.
    public func runAlone() throws {
        launchLock.lock()
        defer { launchLock.unlock() }
        try run()
    }
}
