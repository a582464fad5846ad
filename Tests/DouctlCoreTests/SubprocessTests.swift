import Dispatch
import DouctlSystem
import Foundation
import Testing

/// Helpers (signing commands) run from several threads at once: parallel uploads and
/// parallel page walks sign each request.
@Suite("Subprocess")
struct SubprocessTests {
    /// A child spawned by one thread must not inherit the pipes another thread is about to
    /// hand its own child: a helper that reads its stdin to the end then waits for every
    /// child holding that pipe's write end, and two holding each other's never finish.
    @Test func helpersStartedAtOnceFromManyThreadsEachSeeTheEndOfTheirInput() throws {
        let threads = 16, rounds = 12
        let finished = DispatchSemaphore(value: 0)
        let failures = Failures()
        for thread in 0..<threads {
            Thread.detachNewThread {
                for round in 0..<rounds {
                    let input = "thread \(thread) round \(round)\n"
                    do {
                        let output = try Subprocess.run(["sh", "-c", "cat; sleep 0.01"], input: Array(input.utf8), environment: ["PATH": "/usr/bin:/bin"])
                        if output != Array(input.utf8) { failures.add("thread \(thread) round \(round): \(output.count) bytes") }
                    } catch {
                        failures.add("\(error)")
                    }
                }
                finished.signal()
            }
        }
        for _ in 0..<threads {
            guard finished.wait(timeout: .now() + 120) == .success else {
                Issue.record("helpers still waiting for the end of their input after 120 s: a child kept another's stdin open")
                return
            }
        }
        #expect(failures.all.isEmpty, "\(failures.all)")
    }
}

private final class Failures: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [String] = []
    func add(_ text: String) { lock.lock(); list.append(text); lock.unlock() }
    var all: [String] { lock.lock(); defer { lock.unlock() }; return list }

    /// `auth login` collects the browser it started. In a test runner (or any host running
    /// the commands in process) other children belong to others: collecting one of those
    /// leaves its owner waiting forever (Foundation's Process did, and a whole CI run with it).
    @Test func collectingFinishedHelpersLeavesOtherChildrenToTheirOwners() throws {
        // Someone else's child, started without anything that collects it by itself.
        var other: pid_t = 0
        let arguments: [UnsafeMutablePointer<CChar>?] = [strdup("true"), nil]
        defer { arguments.forEach { free($0) } }
        try #require(posix_spawnp(&other, "true", nil, nil, arguments, environ) == 0)
        let mine = try #require(Subprocess.spawnDetached(["true"], environment: ["PATH=/usr/bin:/bin"]))
        // Both have exited, and neither is collected, once /proc shows them as zombies.
        for pid in [other, mine] {
            let deadline = Date().addingTimeInterval(10)
            while Date() < deadline, !((try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? "").contains(") Z ") {
                Thread.sleep(forTimeInterval: 0.01)
            }
        }
        Subprocess.reapFinished()
        var status: Int32 = 0
        #expect(waitpid(mine, &status, WNOHANG) == -1, "the helper was collected")
        #expect(waitpid(other, &status, WNOHANG) == other, "the other child was left to its owner")
    }

    /// A helper keeps stdin, stdout and stderr and nothing else of this process, not even a
    /// descriptor opened without close-on-exec (a test runner's process monitor leaves one
    /// such for a moment; held by a helper, it hid another child's exit for good).
    @Test func aHelperInheritsNoDescriptorBeyondTheStandardThree() throws {
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        defer { close(ends[0]); close(ends[1]) }
        let child = try #require(Subprocess.spawnDetached(["sleep", "30"], environment: ["PATH=/usr/bin:/bin"]))
        defer {
            kill(child, SIGKILL)
            Subprocess.reapFinished()
        }
        let held = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(child)/fd").compactMap { Int32($0) }.sorted()
        #expect(held == [0, 1, 2], "the helper holds \(held) (the pipe was \(ends))")
    }
}

