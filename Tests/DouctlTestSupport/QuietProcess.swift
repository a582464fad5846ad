import Foundation

/// Runs `executable` with stdout discarded and waits for it: its exit status and what it
/// wrote on stderr (a tool a test drives for its side effects: openssl, install.sh, a build).
public func runCollectingStderr(_ executable: String, _ arguments: [String], environment: [String: String]? = nil, directory: String? = nil) throws -> (status: Int32, stderr: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let environment { process.environment = environment }
    if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
    let errors = Pipe()
    process.standardError = errors
    process.standardOutput = FileHandle.nullDevice
    try process.runAlone()
    let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return (process.terminationStatus, text)
}
