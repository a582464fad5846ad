#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlSystem

/// Produces a request body's bytes on demand, straight into libcurl's upload buffer.
/// Files are opened when their turn comes and read with read(2): memory stays flat
/// whatever the file size.
final class BodyReader {
    private let body: RequestBody
    private var segmentIndex = 0
    private var segmentOffset: Int64 = 0
    private var openFile: Int32 = -1
    private(set) var failure: TransportError?

    init(_ body: RequestBody) {
        self.body = body
    }

    deinit { closeFile() }

    /// Starts over from the first byte (libcurl asks for this when it must resend).
    func rewind() -> Bool {
        guard body.isReplayable else { return false }
        closeFile()
        segmentIndex = 0
        segmentOffset = 0
        return true
    }

    /// Fills `buffer`; returns the byte count (0 at the end) or nil after a failure.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        switch body {
        case .none:
            return 0
        case .bytes(let bytes):
            return copy(bytes, into: buffer)
        case .stream(let fd, let prefix):
            if Int(segmentOffset) < prefix.count { return copy(prefix, into: buffer) }
            return readDescriptor(fd, into: buffer, what: "standard input")
        case .segments(let segments):
            while segmentIndex < segments.count {
                let count: Int?
                switch segments[segmentIndex] {
                case .bytes(let bytes):
                    count = copy(bytes, into: buffer)
                case .file(let path, let length):
                    count = readFileSegment(path: path, length: length, into: buffer)
                }
                guard let count else { return nil }
                if count > 0 { return count }
                closeFile()
                segmentIndex += 1
                segmentOffset = 0
            }
            return 0
        }
    }

    private func copy(_ bytes: [UInt8], into buffer: UnsafeMutableRawBufferPointer) -> Int {
        let remaining = bytes.count - Int(segmentOffset)
        let count = min(remaining, buffer.count)
        guard count > 0 else { return 0 }
        bytes.withUnsafeBytes { source in
            let start = Int(segmentOffset)
            UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count])
                .copyMemory(from: UnsafeRawBufferPointer(rebasing: source[start..<start + count]))
        }
        segmentOffset += Int64(count)
        return count
    }

    private func readFileSegment(path: String, length: Int64, into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        if openFile < 0 {
            openFile = open(EscapedBytes.cString(path), O_RDONLY | O_CLOEXEC)
            if openFile < 0 {
                failure = .bodyFile("cannot read \(path): \(SystemError("open").reason)")
                return nil
            }
        }
        let remaining = length - segmentOffset
        if remaining <= 0 {
            // The file must end exactly where it measured; more bytes mean it grew.
            var probe: UInt8 = 0
            if Glibc.read(openFile, &probe, 1) > 0 {
                failure = .bodyFile("\(path) changed while it was being sent")
                return nil
            }
            return 0
        }
        let wanted = Int(min(Int64(buffer.count), remaining))
        let count = readDescriptor(openFile, into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<wanted]), what: path)
        guard let count else { return nil }
        if count == 0 {
            failure = .bodyFile("\(path) changed while it was being sent (it is shorter now)")
            return nil
        }
        segmentOffset += Int64(count)
        return count
    }

    private func readDescriptor(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, what: String) -> Int? {
        while true {
            let count = Glibc.read(fd, buffer.baseAddress, buffer.count)
            if count >= 0 { return count }
            if currentErrno() == EINTR { continue }
            failure = .bodyFile("cannot read \(what): \(SystemError("read").reason)")
            return nil
        }
    }

    private func closeFile() {
        if openFile >= 0 {
            close(openFile)
            openFile = -1
        }
    }
}
