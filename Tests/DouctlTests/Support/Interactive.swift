#if canImport(Glibc)
import Glibc
#endif
import DouctlTestSupport
import Foundation
import Testing

/// A douctl process a test talks to while it runs: read what it says on stderr, answer on
/// stdin, then collect the result.
final class RunningDouctl: @unchecked Sendable {
    let process = Process()
    private let lock = NSCondition()
    private var out: [UInt8] = []
    private var err: [UInt8] = []
    private var open = 2
    private let input = Pipe()

    init(_ douctl: Douctl, _ arguments: [String], environment extra: [String: String] = [:], in directory: String? = nil) throws {
        process.executableURL = URL(fileURLWithPath: Douctl.binary)
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        var environment = douctl.environment
        environment.merge(extra) { $1 }
        process.environment = environment
        let stdout = Pipe(), stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = input
        try process.runAlone()
        drain(stdout.fileHandleForReading, isError: false)
        drain(stderr.fileHandleForReading, isError: true)
    }

    private func drain(_ handle: FileHandle, isError: Bool) {
        Thread.detachNewThread { [self] in
            while true {
                let chunk = handle.availableData
                lock.lock()
                if chunk.isEmpty {
                    open -= 1
                } else if isError {
                    err.append(contentsOf: chunk)
                } else {
                    out.append(contentsOf: chunk)
                }
                lock.broadcast()
                lock.unlock()
                if chunk.isEmpty { return }
            }
        }
    }

    var stderrSoFar: String {
        lock.lock()
        defer { lock.unlock() }
        return String(decoding: err, as: UTF8.self)
    }

    /// Waits until stderr satisfies `condition`; returns stderr so far.
    @discardableResult
    func waitForStderr(timeout: Double = 20, _ condition: (String) -> Bool) throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        lock.lock()
        defer { lock.unlock() }
        while true {
            let text = String(decoding: err, as: UTF8.self)
            if condition(text) { return text }
            if open == 0 || !lock.wait(until: deadline) {
                throw WaitError(message: "stderr never matched; it was:\n\(text)")
            }
        }
    }

    /// Waits until stdout satisfies `condition`; returns stdout so far.
    @discardableResult
    func waitForStdout(timeout: Double = 20, _ condition: (String) -> Bool) throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        lock.lock()
        defer { lock.unlock() }
        while true {
            let text = String(decoding: out, as: UTF8.self)
            if condition(text) { return text }
            if open == 0 || !lock.wait(until: deadline) {
                throw WaitError(message: "stdout never matched; it was:\n\(text)")
            }
        }
    }

    func send(_ text: String) {
        try? input.fileHandleForWriting.write(contentsOf: Data(text.utf8))
    }

    func closeInput() {
        try? input.fileHandleForWriting.close()
    }

    func kill(_ signal: Int32) {
        Foundation.kill(process.processIdentifier, signal)
    }

    func finish(timeout: Double = 30) -> Douctl.Result {
        closeInput()
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        if process.isRunning {
            Issue.record("douctl did not finish within \(timeout)s")
            process.interrupt()
            // A run that ignores Ctrl-C too must not hold the whole suite: kill it.
            let grace = Date().addingTimeInterval(2)
            while process.isRunning && Date() < grace { Thread.sleep(forTimeInterval: 0.01) }
            if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
        }
        process.waitUntilExit()
        lock.lock()
        // Its pipes end when it does, unless something it started holds them: wait a while, not forever.
        let pipesDeadline = Date().addingTimeInterval(10)
        while open > 0 && lock.wait(until: pipesDeadline) {}
        if open > 0 { Issue.record("douctl's stdout or stderr stayed open after it exited (a process it started holds it)") }
        let result = Douctl.Result(status: process.terminationStatus, stdout: out, stderrBytes: err)
        lock.unlock()
        return result
    }

    struct WaitError: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }
}

/// A test's own sandbox, with a profile in the test's config directory pointing at it.
struct SandboxFixture {
    let sandbox: DouctlSandbox.Sandbox
    let douctl: Douctl

    init(_ configure: (inout SandboxConfiguration) -> Void = { _ in }, environment: [String: String] = [:]) throws {
        var configuration = SandboxConfiguration()
        configure(&configuration)
        sandbox = try Sandbox(configuration)
        try sandbox.start()
        douctl = Douctl(environment: environment)
        try SandboxProfiles.write(base: sandbox.baseURL, in: douctl.configDirectory)
    }

    /// Logs the default profile in by storing a token the sandbox issued.
    @discardableResult
    func login(user: String = "ahbei", scopes: [String] = Sandbox.allScopes, expiresAt: String = "2099-01-01T00:00:00Z") throws -> (access: String, refresh: String) {
        let tokens = sandbox.issueToken(user: user, scopes: scopes)
        try Credentials.write(["sandbox": tokens.accessToken], in: douctl.configDirectory, expiresAt: expiresAt, refreshTokens: ["sandbox": tokens.refreshToken])
        return (tokens.accessToken, tokens.refreshToken)
    }

    var credentials: String {
        (try? String(contentsOfFile: douctl.configDirectory + "/credentials.json", encoding: .utf8)) ?? ""
    }

    func stop() { sandbox.stop() }
}

import DouctlSandbox

extension RunningDouctl {
    /// Starts `count` douctl processes with `arguments` while this test holds the credentials
    /// lock, waits until every one of them is queued on it, lets them go, and returns their
    /// results: all of them found the stored token due at the same moment.
    static func racingOnTheCredentialsLock(_ douctl: Douctl, _ arguments: [String], count: Int = 6) throws -> [CommandResult] {
        let lockPath = douctl.configDirectory + "/.credentials.lock"
        let fd = Glibc.open(lockPath, O_RDWR | O_CREAT, 0o600)
        try #require(fd >= 0)
        defer { Glibc.close(fd) }
        try #require(flock(fd, LOCK_EX) == 0)
        var lockHeld = true
        defer { if lockHeld { flock(fd, LOCK_UN) } }
        let running = try (0..<count).map { _ in try RunningDouctl(douctl, arguments) }
        let queued = try LockWaiters.count(on: lockPath, reaching: count, timeout: 120)
        #expect(queued >= count, "only \(queued) of \(count) processes queued on the lock")
        flock(fd, LOCK_UN)
        lockHeld = false
        return running.map { $0.finish(timeout: 120) }
    }
}
