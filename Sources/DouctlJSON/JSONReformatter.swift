/// Validating streaming re-formatter: turns JSON text into pretty or compact JSON text without building a tree.
/// This is the fast path `douctl api` uses to print big replies.
public enum JSONReformatter {
    /// Output is handed over in chunks of at least this size (except the last), to keep write(2) calls few.
    public static let chunkSize = 64 * 1024

    /// Reformats exactly one JSON value. Calls `emit` with output chunks (each ≥ 64 KiB except the last,
    /// to keep write(2) calls few). Throws on malformed input; output already emitted before the error
    /// is allowed. Accepts and rejects exactly what `JSONParser` does, and prints what
    /// `JSONParser.parse(input).write(to:format:)` would.
    public static func reformat(
        _ input: UnsafeRawBufferPointer, format: JSONFormat, emit: (UnsafeRawBufferPointer) -> Void
    ) throws(JSONParseError) {
        let result = withoutActuallyEscaping(emit) { emit in
            Result { () throws(JSONParseError) in
                var writer = ReformatWriter(indent: format.effectiveIndent, inputSize: input.count, emit: emit)
                defer { writer.free() }
                try JSONScanner.scan(input, into: &writer)
                writer.finish()
            }
        }
        try result.get()
    }

    public static func reformat(_ input: [UInt8], format: JSONFormat) throws(JSONParseError) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(input.count + input.count / 2)
        let result = input.withUnsafeBytes { raw in
            Result { () throws(JSONParseError) in
                try reformat(raw, format: format) { chunk in
                    output.append(contentsOf: chunk.assumingMemoryBound(to: UInt8.self))
                }
            }
        }
        try result.get()
        return output
    }
}

/// Writes scanner events straight back out as JSON text.
struct ReformatWriter: JSONEventHandler {
    let indent: Int
    let emit: (UnsafeRawBufferPointer) -> Void
    var output: ByteBuffer
    /// Decoded text of strings that need re-escaping.
    var decoded = ByteBuffer(capacity: 256)
    var scratch = ByteBuffer(capacity: 64)

    init(indent: Int, inputSize: Int, emit: @escaping (UnsafeRawBufferPointer) -> Void) {
        self.indent = indent
        self.emit = emit
        output = ByteBuffer(capacity: min(JSONReformatter.chunkSize * 2, max(inputSize * 2, 256)))
    }

    func free() {
        output.free()
        decoded.free()
        scratch.free()
    }

    mutating func finish() {
        if output.count > 0 { emit(output.bytes) }
        output.count = 0
    }

    @inline(__always)
    private mutating func flushIfFull() {
        if output.count >= JSONReformatter.chunkSize {
            emit(output.bytes)
            output.count = 0
        }
    }

    @inline(__always)
    private mutating func appendString(_ token: StringToken) {
        if token.isCanonicalJSON, let content = token.content.baseAddress {
            // Already canonical: copy it with its quotes.
            output.append(content - 1, count: token.content.count + 2)
        } else if token.flags == StringToken.hasEscapes {
            // Only escapes to rewrite (most non-canonical strings: "https:\/\/", "\u4e2d"):
            // one pass from the token to the output.
            StringCoding.appendRequoted(token.content, to: &output)
        } else {
            decoded.count = 0
            StringCoding.appendText(of: token, to: &decoded, scratch: &scratch)
            StringCoding.appendQuoted(decoded.bytes, to: &output)
        }
    }

    mutating func emptyArray() {
        output.append(UInt8(ascii: "["), UInt8(ascii: "]"))
        flushIfFull()
    }

    mutating func emptyObject() {
        output.append(UInt8(ascii: "{"), UInt8(ascii: "}"))
        flushIfFull()
    }

    mutating func beginArray(depth: Int) {
        output.append(UInt8(ascii: "["))
        if indent > 0 { output.appendNewline(indentedBy: depth * indent) }
    }

    mutating func beginObject(depth: Int) {
        output.append(UInt8(ascii: "{"))
        if indent > 0 { output.appendNewline(indentedBy: depth * indent) }
    }

    mutating func endArray(depth: Int) {
        if indent > 0 { output.appendNewline(indentedBy: (depth - 1) * indent) }
        output.append(UInt8(ascii: "]"))
        flushIfFull()
    }

    mutating func endObject(depth: Int) {
        if indent > 0 { output.appendNewline(indentedBy: (depth - 1) * indent) }
        output.append(UInt8(ascii: "}"))
        flushIfFull()
    }

    mutating func separator(depth: Int) {
        output.append(UInt8(ascii: ","))
        if indent > 0 { output.appendNewline(indentedBy: depth * indent) }
    }

    mutating func key(_ token: StringToken) {
        appendString(token)
        if indent > 0 { output.append(UInt8(ascii: ":"), UInt8(ascii: " ")) } else { output.append(UInt8(ascii: ":")) }
    }

    mutating func string(_ token: StringToken) {
        appendString(token)
        flushIfFull()
    }

    /// A key the stream engine has written to `output` itself (`copyString`).
    @inline(__always)
    mutating func keyCopied() {
        if indent > 0 { output.append(UInt8(ascii: ":"), UInt8(ascii: " ")) } else { output.append(UInt8(ascii: ":")) }
    }

    /// `keyCopied` when `output` has room for two bytes more (the stream engine's copies
    /// leave that much): ": " is stored whole and the indent decides how much of it counts.
    @inline(__always)
    mutating func keyCopiedWithRoom() {
        let out = UnsafeMutableRawPointer(output.base + output.count)
        out.storeBytes(of: UInt16(littleEndian: 0x203A), as: UInt16.self)  // ": "
        output.count &+= indent > 0 ? 2 : 1
    }

    /// `separator` after a string the stream engine has copied, which leaves room for a byte.
    @inline(__always)
    mutating func separatorWithRoom(depth: Int) {
        if indent > 0 {
            indentedSeparator(depth: depth)
        } else {
            (output.base + output.count).pointee = UInt8(ascii: ",")
            output.count &+= 1
        }
    }

    /// `separator` when indenting, out of line, so that the compact path it sits beside
    /// keeps its registers.
    @inline(never)
    mutating func indentedSeparator(depth: Int) {
        output.appendCommaNewline(indentedBy: depth * indent)
    }

    /// A string value the stream engine has written to `output` itself.
    @inline(__always)
    mutating func stringCopied() {
        flushIfFull()
    }

    @inline(__always)
    mutating func number(_ text: UnsafeRawBufferPointer) {
        // Most numbers are short: copied here, not by a memmove call each.
        if let source = text.baseAddress, text.count <= 32 {
            output.reserve(32)
            let target = UnsafeMutableRawPointer(output.base + output.count)
            if text.count >= 16 {
                // The first sixteen bytes and the last, which overlap.
                let last = text.count - 16
                let (a, b) = (source.loadUnaligned(as: UInt64.self), source.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
                let (c, d) = (source.loadUnaligned(fromByteOffset: last, as: UInt64.self), source.loadUnaligned(fromByteOffset: last + 8, as: UInt64.self))
                target.storeBytes(of: a, as: UInt64.self)
                target.storeBytes(of: b, toByteOffset: 8, as: UInt64.self)
                target.storeBytes(of: c, toByteOffset: last, as: UInt64.self)
                target.storeBytes(of: d, toByteOffset: last + 8, as: UInt64.self)
            } else if text.count >= 8 {
                target.storeBytes(of: source.loadUnaligned(as: UInt64.self), as: UInt64.self)
                target.storeBytes(of: source.loadUnaligned(fromByteOffset: text.count - 8, as: UInt64.self), toByteOffset: text.count - 8, as: UInt64.self)
            } else if text.count >= 4 {
                target.storeBytes(of: source.loadUnaligned(as: UInt32.self), as: UInt32.self)
                target.storeBytes(of: source.loadUnaligned(fromByteOffset: text.count - 4, as: UInt32.self), toByteOffset: text.count - 4, as: UInt32.self)
            } else {
                for index in 0..<text.count { target.storeBytes(of: source.load(fromByteOffset: index, as: UInt8.self), toByteOffset: index, as: UInt8.self) }
            }
            output.count += text.count
        } else {
            output.append(text)
        }
        flushIfFull()
    }

    mutating func literal(_ literal: JSONLiteral) {
        // One word stored (a copy of four or five bytes through memcpy costs more).
        output.reserve(8)
        let target = UnsafeMutableRawPointer(output.base + output.count)
        switch literal {
        case .null:
            target.storeBytes(of: UInt32(littleEndian: 0x6C6C_756E), as: UInt32.self)  // "null"
            output.count += 4
        case .true:
            target.storeBytes(of: UInt32(littleEndian: 0x6575_7274), as: UInt32.self)  // "true"
            output.count += 4
        case .false:
            target.storeBytes(of: UInt64(littleEndian: 0x65_736C_6166), as: UInt64.self)  // "false", then three bytes past it
            output.count += 5
        }
        flushIfFull()
    }
}
