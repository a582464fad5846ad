#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlSystem
import DouctlTestSupport
import Testing

/// The one file committer (issue 38, point 7): written beside the target under a temp
/// name, committed by rename (replacing) or by a link that never replaces, else discarded.
@Suite struct StagedFileTests {
    static func names(_ directory: TemporaryDirectory) throws -> [String] {
        try FileIO.listDirectory(directory.path).sorted()
    }

    @Test func aCommitReplacesTheTargetWithTheModeAskedAndLeavesNoTempFile() throws {
        let directory = try TemporaryDirectory(prefix: "staged")
        let target = directory.path + "/out.json"
        try AtomicFile.write(Array("old".utf8), to: target)
        let staged = try StagedFile(beside: target)
        #expect(staged.path.hasPrefix(directory.path + "/.out.json.tmp-"))
        try staged.append(Array("new bytes".utf8))
        try staged.truncate(to: 3)
        try staged.append(Array("!".utf8))
        #expect(try FileIO.readFile(target) == Array("old".utf8), "the target is untouched until the commit")
        try staged.commit(to: target, mode: 0o640)
        #expect(try FileIO.readFile(target) == Array("new!".utf8))
        var info = stat()
        #expect(stat(target, &info) == 0 && info.st_mode & 0o777 == 0o640)
        #expect(try Self.names(directory) == ["out.json"])
        staged.discard()
        #expect(try Self.names(directory) == ["out.json"], "a committed file is not discarded")
    }

    @Test func withoutReplacingAnExistingTargetIsRefusedAndNothingMoves() throws {
        let directory = try TemporaryDirectory(prefix: "staged")
        let target = directory.path + "/kept.bin"
        try AtomicFile.write(Array("theirs".utf8), to: target)
        let staged = try StagedFile(beside: target)
        try staged.append(Array("ours".utf8))
        #expect(throws: StagedFile.CommitFailure.self) { try staged.commit(to: target, mode: 0o644, replacing: false) }
        #expect(try FileIO.readFile(target) == Array("theirs".utf8))
        staged.discard()
        #expect(try Self.names(directory) == ["kept.bin"], "the temp file is discarded")

        let fresh = try StagedFile(beside: directory.path + "/new.bin")
        try fresh.append(Array("ours".utf8))
        try fresh.commit(to: directory.path + "/new.bin", mode: 0o644, replacing: false)
        #expect(try FileIO.readFile(directory.path + "/new.bin") == Array("ours".utf8))
        #expect(try Self.names(directory) == ["kept.bin", "new.bin"])
    }

    /// A symbolic link at the target is replaced by the rename, never written through.
    @Test func aLinkAtTheTargetIsReplacedNotFollowed() throws {
        let directory = try TemporaryDirectory(prefix: "staged")
        let elsewhere = directory.path + "/elsewhere"
        try AtomicFile.write(Array("keep me".utf8), to: elsewhere)
        let target = directory.path + "/link"
        #expect(symlink(elsewhere, target) == 0)
        let staged = try StagedFile(beside: target)
        try staged.append(Array("mine".utf8))
        try staged.commit(to: target, mode: 0o600)
        #expect(try FileIO.readFile(elsewhere) == Array("keep me".utf8))
        #expect(try FileIO.readFile(target) == Array("mine".utf8))
        #expect(try FileIO.linkStatus(target).isRegularFile)
    }
}
