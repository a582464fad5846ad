/// A growable byte buffer written through a raw pointer.
///
/// Output loops write here instead of `Array.append`, which re-checks capacity and uniqueness on
/// every byte. It owns manually allocated memory, so each owner calls `free()` exactly once
/// (always in a `defer`) and never copies the struct.
struct ByteBuffer {
    private(set) var base: UnsafeMutablePointer<UInt8>
    var count = 0
    private(set) var capacity: Int

    init(capacity: Int) {
        let size = max(capacity, 64)
        base = .allocate(capacity: size)
        self.capacity = size
    }

    func free() { base.deallocate() }

    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }
    var buffer: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: base, count: count) }

    /// Makes room for `extra` more bytes.
    @inline(__always)
    mutating func reserve(_ extra: Int) {
        if extra > capacity - count { grow(toHold: extra) }
    }

    @inline(never)
    private mutating func grow(toHold extra: Int) {
        // Sizes come from data already in memory, so these sums cannot overflow.
        let newCapacity = max(capacity * 2, count + extra)
        let newBase = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        newBase.initialize(from: base, count: count)
        base.deallocate()
        base = newBase
        capacity = newCapacity
    }

    @inline(__always)
    mutating func append(_ byte: UInt8) {
        reserve(1)
        base[count] = byte
        count += 1
    }

    @inline(__always)
    mutating func append(_ first: UInt8, _ second: UInt8) {
        reserve(2)
        base[count] = first
        base[count + 1] = second
        count += 2
    }

    @inline(__always)
    mutating func append(_ source: UnsafeRawPointer, count length: Int) {
        reserve(length)
        UnsafeMutableRawPointer(base + count).copyMemory(from: source, byteCount: length)
        count += length
    }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress else { return }
        append(source, count: bytes.count)
    }

    @inline(__always)
    mutating func append(_ text: StaticString) {
        append(UnsafeRawPointer(text.utf8Start), count: text.utf8CodeUnitCount)
    }

    /// "\n" then `spaces` spaces: the start of a pretty-printed line. The spaces are stored
    /// eight at a time (a few past the end, inside the reserve, and overwritten next), since
    /// indents are short and a memset call per line costs more than the line.
    @inline(__always)
    mutating func appendNewline(indentedBy spaces: Int) {
        appendLineBreak(0x0A, length: 1, indentedBy: spaces)
    }

    /// ",", then `appendNewline`'s line: a pretty separator, its first two bytes in one store.
    @inline(__always)
    mutating func appendCommaNewline(indentedBy spaces: Int) {
        appendLineBreak(0x0A2C, length: 2, indentedBy: spaces)
    }

    /// `length` (1 or 2) bytes of `lead` (first byte lowest), then `spaces` spaces.
    @inline(__always)
    private mutating func appendLineBreak(_ lead: UInt16, length: Int, indentedBy spaces: Int) {
        reserve(spaces + 10)
        let line = UnsafeMutableRawPointer(base + count)
        line.storeBytes(of: UInt16(littleEndian: lead), as: UInt16.self)
        var stored = 0
        while stored < spaces {
            line.storeBytes(of: 0x2020_2020_2020_2020 as UInt64, toByteOffset: length + stored, as: UInt64.self)
            stored += 8
        }
        count += length + spaces
    }

    /// Appends a Unicode scalar value as UTF-8 (the caller passes a valid scalar).
    mutating func appendUTF8(scalar value: UInt32) {
        reserve(4)
        count += Self.storeUTF8(scalar: value, at: UnsafeMutableRawPointer(base + count))
    }

    /// Stores a scalar's UTF-8 encoding at `out` (room for four bytes) and returns its length.
    @inline(__always)
    static func storeUTF8(scalar value: UInt32, at out: UnsafeMutableRawPointer) -> Int {
        if value < 0x80 {
            out.storeBytes(of: UInt8(truncatingIfNeeded: value), as: UInt8.self)
            return 1
        }
        if value < 0x800 {
            out.storeBytes(of: UInt8(truncatingIfNeeded: 0xC0 | (value >> 6)), as: UInt8.self)
            out.storeBytes(of: UInt8(truncatingIfNeeded: 0x80 | (value & 0x3F)), toByteOffset: 1, as: UInt8.self)
            return 2
        }
        if value < 0x10000 {
            out.storeBytes(of: UInt8(truncatingIfNeeded: 0xE0 | (value >> 12)), as: UInt8.self)
            out.storeBytes(of: UInt8(truncatingIfNeeded: 0x80 | ((value >> 6) & 0x3F)), toByteOffset: 1, as: UInt8.self)
            out.storeBytes(of: UInt8(truncatingIfNeeded: 0x80 | (value & 0x3F)), toByteOffset: 2, as: UInt8.self)
            return 3
        }
        out.storeBytes(of: UInt8(truncatingIfNeeded: 0xF0 | (value >> 18)), as: UInt8.self)
        out.storeBytes(of: UInt8(truncatingIfNeeded: 0x80 | ((value >> 12) & 0x3F)), toByteOffset: 1, as: UInt8.self)
        out.storeBytes(of: UInt8(truncatingIfNeeded: 0x80 | ((value >> 6) & 0x3F)), toByteOffset: 2, as: UInt8.self)
        out.storeBytes(of: UInt8(truncatingIfNeeded: 0x80 | (value & 0x3F)), toByteOffset: 3, as: UInt8.self)
        return 4
    }
}
