// swift-tools-version:6.0
// douctl: a command-line client for Douban- and Coding-style REST APIs.
//
// Layers look only down:
//   DouctlArguments (parser, help, completions, man)   — knows nothing of HTTP
//   CCurl → DouctlHTTP (libcurl transport)              — knows nothing of OAuth
//   DouctlJSON, DouctlCore (profiles, OAuth, tokens, envelopes, endpoints, request shaping);
//     the core's one use of DouctlServer is the OAuth loopback callback listener
//   DouctlServer → DouctlSandbox (loopback HTTP/1.1 server, Douban + Coding fakes)
//   DouctlCommands (one file per command group) → douctl (main.swift only)
// DouctlSystem underneath all of them: threads, file descriptors, atomic files, locks.
import PackageDescription

let package = Package(
    name: "douctl",
    products: [
        .executable(name: "douctl", targets: ["douctl"]),
    ],
    dependencies: [],
    targets: [
        .target(name: "CCurl", linkerSettings: [.linkedLibrary("dl", .when(platforms: [.linux]))]),
        .target(name: "DouctlSystem"),
        .target(name: "DouctlArguments", dependencies: ["DouctlSystem"]),
        .target(name: "DouctlJSON"),
        .target(name: "DouctlHTTP", dependencies: ["CCurl", "DouctlSystem"]),
        .target(name: "DouctlServer", dependencies: ["DouctlSystem"]),
        .target(name: "DouctlCore", dependencies: ["DouctlHTTP", "DouctlJSON", "DouctlSystem", "DouctlServer"]),
        .target(name: "DouctlSandbox", dependencies: ["DouctlServer", "DouctlJSON", "DouctlSystem"]),
        // Every module a target imports is declared, not reached through another's dependencies.
        .target(name: "DouctlCommands", dependencies: ["DouctlArguments", "DouctlCore", "DouctlHTTP", "DouctlJSON", "DouctlSandbox", "DouctlSystem"]),
        .executableTarget(
            name: "douctl",
            dependencies: ["DouctlCommands", "DouctlSystem"],
            // The Swift runtime linked in, in release builds: start-up drops from ~6.5 ms to
            // ~3.8 ms (Benchmarks/run.py), which is most of what a small request costs.
            // Debug builds stay dynamic, since test bundles link this module beside the
            // dynamically linked test frameworks.
            linkerSettings: [.unsafeFlags(["-static-stdlib"], .when(configuration: .release))]),

        // What several test targets share: the rule for tests that need an external tool, a raw
        // HTTP client, temporary directories, TestFailure, config fixtures, a run's result, a child's
        // peak memory, the scripted HTTP transport.
        .target(name: "DouctlTestSupport", dependencies: ["DouctlCore", "DouctlHTTP", "DouctlJSON", "DouctlServer", "DouctlSystem"], path: "Tests/DouctlTestSupport"),
        .testTarget(name: "DouctlArgumentsTests", dependencies: ["DouctlArguments", "DouctlSystem", "DouctlTestSupport"]),
        .testTarget(name: "DouctlJSONTests", dependencies: ["DouctlJSON", "DouctlSystem", "DouctlTestSupport"]),
        .testTarget(name: "DouctlServerTests", dependencies: ["DouctlServer", "DouctlSystem", "DouctlTestSupport"]),
        // In-process: the core against a scripted HTTP transport; no sockets, no waits.
        .testTarget(name: "DouctlCoreTests", dependencies: ["DouctlCore", "DouctlHTTP", "DouctlJSON", "DouctlSystem", "DouctlTestSupport"]),
        .testTarget(name: "DouctlSandboxTests", dependencies: ["DouctlSandbox", "DouctlServer", "DouctlJSON", "DouctlSystem", "DouctlTestSupport"]),
        // In-process: the real command tree parsed, and `Douctl.main` run through a
        // ProcessContext against a sandbox on 127.0.0.1.
        .testTarget(name: "DouctlCommandsTests", dependencies: ["DouctlCommands", "DouctlArguments", "DouctlCore", "DouctlJSON", "DouctlSandbox", "DouctlSystem", "DouctlTestSupport"]),
        // End-to-end: runs the built `douctl` binary against real servers on 127.0.0.1.
        .testTarget(name: "DouctlTests", dependencies: ["douctl", "DouctlSandbox", "DouctlServer", "DouctlJSON", "DouctlSystem", "DouctlTestSupport"]),
    ]
)
