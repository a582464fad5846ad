extension JSON {
    /// Appends the serialization (no trailing newline) to `output`.
    ///
    /// Iterative, so values of any depth print without deep recursion. Strings are escaped like
    /// jq; a `.number` whose text is not a valid JSON number is written as `null` rather than as
    /// broken JSON.
    public func write(to output: inout [UInt8], format: JSONFormat) {
        write(format: format) { chunk in
            output.append(contentsOf: chunk.assumingMemoryBound(to: UInt8.self))
        }
    }

    /// Streams the serialization (no trailing newline) to `emit` in chunks of at least 64 KiB
    /// (except the last), so a big value can go to a file descriptor without one big array.
    public func write(format: JSONFormat, emit: (UnsafeRawBufferPointer) -> Void) {
        var buffer = ByteBuffer(capacity: 1024)
        defer { buffer.free() }
        TreeWriter.write(self, indent: format.effectiveIndent, buffer: &buffer) { buffer in
            emit(buffer.bytes)
            buffer.count = 0
        }
        if buffer.count > 0 { emit(buffer.bytes) }
    }

    public func serialized(_ format: JSONFormat = .compact) -> [UInt8] {
        var output: [UInt8] = []
        write(to: &output, format: format)
        return output
    }

    public func text(_ format: JSONFormat = .compact) -> String {
        String(decoding: serialized(format), as: UTF8.self)
    }
}

private enum TreeWriter {
    /// One open, non-empty container and the index of its next child.
    private enum Frame {
        case array([JSON], next: Int)
        case object([(key: String, value: JSON)], next: Int)
    }

    /// Writes `root`, calling `flush` whenever the buffer holds a full chunk.
    ///
    /// Scalars inside a container are written in a tight loop; only nested containers push a frame.
    /// Frames are moved on and off the stack, so walking costs no extra reference counting.
    static func write(
        _ root: JSON, indent: Int, buffer: inout ByteBuffer, flush: (inout ByteBuffer) -> Void
    ) {
        var stack: [Frame] = []
        if let frame = open(root, into: &buffer) { stack.append(frame) }
        frames: while let frame = stack.popLast() {
            let depth = stack.count + 1
            switch frame {
            case .array(let elements, let next):
                for index in next..<elements.count {
                    if index > 0 { buffer.append(UInt8(ascii: ",")) }
                    if indent > 0 { buffer.appendNewline(indentedBy: depth * indent) }
                    if let child = open(elements[index], into: &buffer) {
                        stack.append(.array(elements, next: index + 1))
                        stack.append(child)
                        continue frames
                    }
                    if buffer.count >= JSONReformatter.chunkSize { flush(&buffer) }
                }
                if indent > 0 { buffer.appendNewline(indentedBy: (depth - 1) * indent) }
                buffer.append(UInt8(ascii: "]"))
            case .object(let members, let next):
                for index in next..<members.count {
                    if index > 0 { buffer.append(UInt8(ascii: ",")) }
                    if indent > 0 { buffer.appendNewline(indentedBy: depth * indent) }
                    appendQuoted(members[index].key, to: &buffer)
                    if indent > 0 {
                        buffer.append(UInt8(ascii: ":"), UInt8(ascii: " "))
                    } else {
                        buffer.append(UInt8(ascii: ":"))
                    }
                    if let child = open(members[index].value, into: &buffer) {
                        stack.append(.object(members, next: index + 1))
                        stack.append(child)
                        continue frames
                    }
                    if buffer.count >= JSONReformatter.chunkSize { flush(&buffer) }
                }
                if indent > 0 { buffer.appendNewline(indentedBy: (depth - 1) * indent) }
                buffer.append(UInt8(ascii: "}"))
            }
            if buffer.count >= JSONReformatter.chunkSize { flush(&buffer) }
        }
    }

    /// Writes a scalar or empty container whole, or the opening bracket of a non-empty one
    /// (returning its frame).
    @inline(__always)
    private static func open(_ value: JSON, into buffer: inout ByteBuffer) -> Frame? {
        switch value {
        case .null: buffer.append("null")
        case .bool(let flag): buffer.append(flag ? "true" : "false")
        case .number(let text): appendNumber(text, to: &buffer)
        case .string(let text): appendQuoted(text, to: &buffer)
        case .array(let elements):
            if elements.isEmpty {
                buffer.append(UInt8(ascii: "["), UInt8(ascii: "]"))
            } else {
                buffer.append(UInt8(ascii: "["))
                return .array(elements, next: 0)
            }
        case .object(let object):
            if object.isEmpty {
                buffer.append(UInt8(ascii: "{"), UInt8(ascii: "}"))
            } else {
                buffer.append(UInt8(ascii: "{"))
                return .object(object.members, next: 0)
            }
        }
        return nil
    }

    private static func appendQuoted(_ text: String, to buffer: inout ByteBuffer) {
        var text = text
        text.withUTF8 { StringCoding.appendQuoted(UnsafeRawBufferPointer($0), to: &buffer) }
    }

    private static func appendNumber(_ text: String, to buffer: inout ByteBuffer) {
        var text = text
        text.withUTF8 { utf8 in
            let bytes = UnsafeRawBufferPointer(utf8)
            if JSONNumberGrammar.isValid(bytes) {
                buffer.append(bytes)
            } else {
                buffer.append("null")
            }
        }
    }
}
