import Foundation
import Testing
import DouctlTestSupport

/// The release link's inputs of its own (Package.swift's `releaseLink`): the function order
/// (Benchmarks/douctl.order, written by Benchmarks/order.py), the linker script for code with no
/// symbol (Benchmarks/douctl.ld) and the empty libstdc++ stub (Benchmarks/static-cxx). A stale
/// order list costs nothing visible but start-up: the functions it no longer names lie outside
/// the ordered block, each in a 64 KiB window the kernel maps on first use (issue 44: 22 stale
/// names, a small GET's code faults 33 instead of 19). These tests catch the drift.
@Suite("release link inputs")
struct ReleaseLinkInputsTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    static func read(_ path: String) throws -> String {
        try String(contentsOfFile: repository + "/" + path, encoding: .utf8)
    }

    @Test func theReleaseLinkNamesItsInputsAndKeepsPIE() throws {
        let manifest = try Self.read("Package.swift")
        for input in ["Benchmarks/douctl.order", "Benchmarks/douctl.ld", "Benchmarks/static-cxx"] {
            #expect(manifest.contains("\\(Context.packageDirectory)/\(input)"), "Package.swift's release link names \(input)")
            #expect(FileManager.default.fileExists(atPath: Self.repository + "/" + input), "\(input) is checked in")
        }
        #expect(manifest.contains("\"-z\", \"-Xlinker\", \"pack-relative-relocs\""), "relative relocations packed (DT_RELR) where glibc reads them")
        for nonPIE in ["-no-pie", "-static-executable", "-z\", \"-Xlinker\", \"norelro"] {
            #expect(!manifest.contains(nonPIE), "the release link stays PIE with RELRO: \(nonPIE)")
        }
        let script = try Self.read("Benchmarks/douctl.ld")
        #expect(script.contains("INSERT BEFORE .text;"), "douctl.ld adds to lld's default layout, not replaces it")
        // The stub only turns the Swift runtime's -lstdc++ into nothing: a linker script with no inputs.
        let stub = try Self.read("Benchmarks/static-cxx/libstdc++.so")
        let withoutComments = stub.replacingOccurrences(of: #"/\*[\s\S]*?\*/"#, with: "", options: .regularExpression)
        #expect(withoutComments.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "static-cxx/libstdc++.so names no library: \(withoutComments)")
    }

    /// Every name in the order list that is one of douctl's own functions as written must still
    /// be defined in the built binary (the debug one `swift test` built, which has every function
    /// but none of the optimizer's specializations and merges). A function renamed or given a
    /// parameter leaves its old name in the list and its new one out of the ordered block.
    /// Where a release binary newer than every source file is at hand, every name in the list
    /// (specializations and the statics read at start too) must be in it.
    @Test func theOrderListNamesFunctionsTheBuildStillDefines() throws {
        let listed = try Self.read("Benchmarks/douctl.order").split(separator: "\n").map(String.init)
        let regenerate = "regenerate it: `swift build -c release && Benchmarks/order.py` (needs valgrind)"
        let ours = listed.filter(Self.isOwnFunctionAsWritten)
        #expect(ours.count > 200, "the list names douctl's own functions (\(ours.count) found)")
        let defined = try ELFSymbols.definedNames(in: Douctl.binary)
        let gone = ours.filter { !defined.contains($0) }
        #expect(gone.isEmpty, "\(gone.count) of the \(ours.count) functions Benchmarks/douctl.order names are not in \(Douctl.binary); \(regenerate). First: \(gone.prefix(3))")

        guard let release = try Self.freshRelease() else { return }
        let inRelease = try ELFSymbols.definedNames(in: release)
        let stale = listed.filter { !$0.isEmpty && !inRelease.contains($0) }
        #expect(stale.isEmpty, "\(stale.count) of the \(listed.count) names in Benchmarks/douctl.order are not in \(release); \(regenerate). First: \(stale.prefix(3))")
    }

    /// The Swift runtime's argv finder (libswiftCore's CommandLine.cpp: a constructor that reads
    /// /proc/self/maps at every start) is left out of the release link, since
    /// Sources/CCurl/arguments.c defines the two functions the standard library asks, from what
    /// glibc hands constructors. On a release binary newer than the sources: the runtime's
    /// constructor is not in it, ours is, and arguments (bytes outside ASCII, an empty one) arrive
    /// whole.
    @Test func theReleaseBinaryTakesItsArgumentsFromTheCLibrary() throws {
        guard let release = try Self.freshRelease() else {
            try Test.cancel("skipped: needs a release build newer than the sources (swift build -c release)")
        }
        let symbols = try ELFSymbols.definedNames(in: release)
        #expect(symbols.contains("ccurl_capture_arguments"), "arguments.c's constructor is linked")
        #expect(!symbols.contains("_GLOBAL__sub_I_CommandLine.cpp"), "the runtime's /proc/self/maps reader is not linked")
        let (status, text) = try runCollectingStderr(release, ["--config-dir", "", "--no-such-\u{00F8}\u{4E2D}"])
        #expect(status == 2 && text.hasPrefix("douctl: unknown option '--no-such-\u{00F8}\u{4E2D}'"), "\(status): \(text)")
    }

    /// A function of one of douctl's modules, mangled as written: `$s`, a module whose name starts
    /// "Douctl", and the ending of a function, initializer, accessor, global initializer or
    /// closure (a specialization or merge ends otherwise: `…Tf4nnd_n`, `…Ttg5`, `…Tm`).
    static func isOwnFunctionAsWritten(_ name: String) -> Bool {
        guard name.hasPrefix("$s"), let digits = Int(name.dropFirst(2).prefix { $0.isNumber }),
              name.dropFirst(2 + String(digits).count).hasPrefix("Douctl") else { return false }
        return name.range(of: #"(F|fC|fc|vg|vs|vM|_WZ|fU[0-9]*_)$"#, options: .regularExpression) != nil
    }

    /// The release binary when it is newer than every source file, else nil. `.ci/run` runs
    /// these tests again after its release build with DOUCTL_REQUIRE_RELEASE_BUILD=1, where a
    /// missing or stale one is a failure: `swift test` runs before that build, so without the
    /// second pass the release-only checks would never run in CI.
    static func freshRelease() throws -> String? {
        let release = repository + "/.build/release/douctl"
        if let built = modified(release), newestSource() < built { return release }
        if ProcessInfo.processInfo.environment["DOUCTL_REQUIRE_RELEASE_BUILD"] == "1" {
            throw TestFailure("DOUCTL_REQUIRE_RELEASE_BUILD=1, but \(release) is missing or older than the sources")
        }
        return nil
    }

    static func modified(_ path: String) -> Date? {
        (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date
    }

    static func newestSource() -> Date {
        let root = repository + "/Sources"
        let files = FileManager.default.enumerator(atPath: root)?.compactMap { $0 as? String } ?? []
        return files.compactMap { modified(root + "/" + $0) }.max() ?? .distantFuture
    }
}

/// The names an ELF64 little-endian file defines in its symbol table (.symtab, else .dynsym).
enum ELFSymbols {
    struct Malformed: Error, CustomStringConvertible {
        var description: String
    }

    static func definedNames(in path: String) throws -> Set<String> {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        func integer(_ offset: Int, _ size: Int) throws -> Int {
            guard offset >= 0, offset + size <= bytes.count else { throw Malformed(description: "\(path): read past the end at \(offset)") }
            var value = 0
            for index in (0..<size).reversed() { value = value << 8 | Int(bytes[offset + index]) }
            return value
        }
        guard bytes.count > 64, bytes[0..<4] == [0x7F, 0x45, 0x4C, 0x46], bytes[4] == 2, bytes[5] == 1 else {
            throw Malformed(description: "\(path) is not a 64-bit little-endian ELF file")
        }
        let sectionTable = try integer(0x28, 8), sectionSize = try integer(0x3A, 2), sectionCount = try integer(0x3C, 2)
        struct Section { var type: Int, offset: Int, size: Int, link: Int, entrySize: Int }
        let sections = try (0..<sectionCount).map { index -> Section in
            let at = sectionTable + index * sectionSize
            return Section(type: try integer(at + 4, 4), offset: try integer(at + 0x18, 8), size: try integer(at + 0x20, 8),
                           link: try integer(at + 0x28, 4), entrySize: try integer(at + 0x38, 8))
        }
        guard let table = sections.first(where: { $0.type == 2 }) ?? sections.first(where: { $0.type == 11 }),
              table.link < sections.count, table.entrySize == 24 else { throw Malformed(description: "\(path) has no symbol table") }
        let strings = sections[table.link]
        var names = Set<String>()
        for at in stride(from: table.offset, to: table.offset + table.size, by: 24) {
            let nameOffset = try integer(at, 4), sectionIndex = try integer(at + 6, 2)
            guard sectionIndex != 0, nameOffset > 0, nameOffset < strings.size else { continue }
            let start = strings.offset + nameOffset
            guard let end = bytes[start..<(strings.offset + strings.size)].firstIndex(of: 0) else { continue }
            names.insert(String(decoding: bytes[start..<end], as: UTF8.self))
        }
        return names
    }
}
