/// Parses JSON text into a `JSON` tree.
public enum JSONParser {
    /// The deepest nesting accepted; deeper input is an error rather than a stack overflow later.
    public static let maximumDepth = JSONScanner.maximumDepth

    /// Parses exactly one JSON value surrounded by optional whitespace. A UTF-8 BOM at the start is skipped.
    public static func parse(_ bytes: UnsafeRawBufferPointer) throws(JSONParseError) -> JSON {
        var builder = TreeBuilder()
        defer { builder.free() }
        try JSONScanner.scan(bytes, into: &builder)
        return builder.result ?? .null
    }

    public static func parse(_ bytes: [UInt8]) throws(JSONParseError) -> JSON {
        let result = bytes.withUnsafeBytes { raw in
            Result { () throws(JSONParseError) -> JSON in try parse(raw) }
        }
        return try result.get()
    }

    public static func parse(_ text: String) throws(JSONParseError) -> JSON {
        var text = text
        let result = text.withUTF8 { utf8 in
            Result { () throws(JSONParseError) -> JSON in try parse(UnsafeRawBufferPointer(utf8)) }
        }
        return try result.get()
    }
}

/// Builds the tree from scanner events without recursion.
///
/// The children of all open containers wait on two shared stacks; when a container closes, its
/// children move (no retain/release) into one exactly-sized array. That avoids growing every
/// array by doubling, which costs both time and memory on big replies.
private struct TreeBuilder: JSONEventHandler {
    var result: JSON?
    /// Elements of the open arrays, outermost first.
    private var elements = MoveStack<JSON>()
    /// Members of the open objects, outermost first.
    private var members = MoveStack<(key: String, value: JSON)>()
    /// Where each open container's children start in `elements` or `members`, innermost last.
    private var childrenStart: [Int] = []
    /// Whether each open container is an object, innermost last.
    private var openIsObject: [Bool] = []
    /// Keys read whose values are not complete yet, innermost last (a key waits while its value,
    /// a container, is being built).
    private var pendingKeys: [String] = []
    /// Decoded text of strings with escapes or bad UTF-8, before it becomes a String.
    private var decoded = ByteBuffer(capacity: 256)
    private var scratch = ByteBuffer(capacity: 64)

    mutating func free() {
        elements.free()
        members.free()
        decoded.free()
        scratch.free()
    }

    @inline(__always)
    private mutating func add(_ value: JSON) {
        guard let isObject = openIsObject.last else {
            result = value
            return
        }
        if isObject {
            members.push((key: pendingKeys.popLast() ?? "", value: value))
        } else {
            elements.push(value)
        }
    }

    /// Creates the String once: straight from the input when there is nothing to decode.
    @inline(__always)
    private mutating func makeString(_ token: StringToken) -> String {
        if token.isPlainText {
            return String(decoding: token.content.assumingMemoryBound(to: UInt8.self), as: UTF8.self)
        }
        decoded.count = 0
        StringCoding.appendText(of: token, to: &decoded, scratch: &scratch)
        return String(decoding: decoded.buffer, as: UTF8.self)
    }

    mutating func emptyArray() { add(.array([])) }
    mutating func emptyObject() { add(.object(JSONObject())) }

    mutating func beginArray(depth: Int) {
        childrenStart.append(elements.count)
        openIsObject.append(false)
    }

    mutating func beginObject(depth: Int) {
        childrenStart.append(members.count)
        openIsObject.append(true)
    }

    mutating func endArray(depth: Int) {
        guard let start = childrenStart.popLast() else { return }
        openIsObject.removeLast()
        add(.array(elements.popArray(from: start)))
    }

    mutating func endObject(depth: Int) {
        guard let start = childrenStart.popLast() else { return }
        openIsObject.removeLast()
        add(.object(JSONObject(members: members.popArray(from: start))))
    }

    mutating func separator(depth: Int) {}

    mutating func key(_ token: StringToken) { pendingKeys.append(makeString(token)) }

    mutating func string(_ token: StringToken) { add(.string(makeString(token))) }

    mutating func number(_ text: UnsafeRawBufferPointer) {
        add(.number(String(decoding: text.assumingMemoryBound(to: UInt8.self), as: UTF8.self)))
    }

    mutating func literal(_ literal: JSONLiteral) {
        switch literal {
        case .null: add(.null)
        case .true: add(.bool(true))
        case .false: add(.bool(false))
        }
    }
}

/// A stack in manually managed memory whose top items can be moved out into an Array without
/// retain/release traffic. The owner calls `free()` once, which releases what is left.
private struct MoveStack<Element> {
    private var base: UnsafeMutablePointer<Element>
    private(set) var count = 0
    private var capacity: Int

    init() {
        capacity = 64
        base = .allocate(capacity: capacity)
    }

    mutating func free() {
        base.deinitialize(count: count)
        base.deallocate()
        count = 0
    }

    @inline(__always)
    mutating func push(_ element: Element) {
        if count == capacity { grow() }
        (base + count).initialize(to: element)
        count += 1
    }

    @inline(never)
    private mutating func grow() {
        let newCapacity = capacity * 2
        let newBase = UnsafeMutablePointer<Element>.allocate(capacity: newCapacity)
        newBase.moveInitialize(from: base, count: count)
        base.deallocate()
        base = newBase
        capacity = newCapacity
    }

    /// Moves the items from index `start` to the top into a new, exactly sized array.
    mutating func popArray(from start: Int) -> [Element] {
        guard start >= 0, start < count else { return [] }
        let length = count - start
        let source = base + start
        count = start
        return [Element](unsafeUninitializedCapacity: length) { buffer, initialized in
            if let destination = buffer.baseAddress {
                destination.moveInitialize(from: source, count: length)
                initialized = length
            } else {
                source.deinitialize(count: length)
                initialized = 0
            }
        }
    }
}
