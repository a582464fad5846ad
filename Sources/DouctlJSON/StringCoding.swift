/// Turning string tokens into text and text into JSON string literals, the way jq 1.6 does.
enum StringCoding {
    /// Appends the text `token` stands for, as UTF-8, to `output`: escapes decoded, then invalid
    /// UTF-8 replaced by U+FFFD. `scratch` is a reusable work buffer.
    static func appendText(of token: StringToken, to output: inout ByteBuffer, scratch: inout ByteBuffer) {
        if !token.hasEscapes {
            if token.hasInvalidUTF8 {
                appendRepairingUTF8(token.content, to: &output)
            } else {
                output.append(token.content)
            }
        } else if token.hasInvalidUTF8 {
            // jq repairs the decoded bytes as a whole, so decode first, then repair.
            scratch.count = 0
            appendDecodingEscapes(token.content, to: &scratch)
            appendRepairingUTF8(scratch.bytes, to: &output)
        } else {
            appendDecodingEscapes(token.content, to: &output)
        }
    }

    /// Decodes backslash escapes; the scanner has already checked them. `\uD83D\uDE00` pairs become
    /// one scalar; a surrogate without its partner becomes U+FFFD.
    static func appendDecodingEscapes(_ content: UnsafeRawBufferPointer, to output: inout ByteBuffer) {
        guard let base = content.baseAddress else { return }
        let end = base + content.count
        var position = base
        var runStart = base
        while position < end {
            // Skip eight bytes at a time to the next backslash.
            while end - position >= 8 {
                let word = UInt64(littleEndian: position.loadUnaligned(as: UInt64.self))
                let backslashes = SWAR.zeroLanes(word ^ (SWAR.ones &* 0x5C)) & SWAR.highBits
                if backslashes == 0 {
                    position += 8
                } else {
                    position += backslashes.trailingZeroBitCount >> 3
                    break
                }
            }
            guard position < end else { break }
            guard position.load(as: UInt8.self) == UInt8(ascii: "\\") else {
                position += 1
                continue
            }
            output.append(runStart, count: position - runStart)
            guard end - position >= 2 else { break }
            let kind = position.load(fromByteOffset: 1, as: UInt8.self)
            position += 2
            switch kind {
            case UInt8(ascii: "b"): output.append(0x08)
            case UInt8(ascii: "f"): output.append(0x0C)
            case UInt8(ascii: "n"): output.append(0x0A)
            case UInt8(ascii: "r"): output.append(0x0D)
            case UInt8(ascii: "t"): output.append(0x09)
            case UInt8(ascii: "u"):
                guard let scalar = unicodeEscape(at: &position, end: end) else { break }
                output.appendUTF8(scalar: scalar)
            default:
                // '"', '\\' and '/' stand for themselves.
                output.append(kind)
            }
            runStart = position
        }
        if runStart < end { output.append(runStart, count: end - runStart) }
    }

    /// Appends a string token that has escapes but no invalid UTF-8 and no raw U+007F as the
    /// quoted JSON string jq prints, in one pass: what `appendDecodingEscapes` then
    /// `appendQuoted` would write. Each escape is rewritten to its canonical form, which is
    /// never longer than the escape, so the output fits in the content's size plus quotes.
    static func appendRequoted(_ content: UnsafeRawBufferPointer, to output: inout ByteBuffer) {
        output.reserve(content.count + 2)
        guard let base = content.baseAddress else {
            output.append(UInt8(ascii: "\""), UInt8(ascii: "\""))
            return
        }
        let end = base + content.count
        var out = UnsafeMutableRawPointer(output.base + output.count)
        let outStart = out
        out.storeBytes(of: UInt8(ascii: "\""), as: UInt8.self)
        out += 1
        var position = base
        var runStart = base
        while position < end {
            // To the next backslash eight bytes at a time.
            while end - position >= 8 {
                let word = UInt64(littleEndian: position.loadUnaligned(as: UInt64.self))
                let backslashes = SWAR.zeroLanes(word ^ (SWAR.ones &* 0x5C)) & SWAR.highBits
                if backslashes == 0 {
                    position += 8
                } else {
                    position += backslashes.trailingZeroBitCount &>> 3
                    break
                }
            }
            guard position < end else { break }
            guard position.load(as: UInt8.self) == UInt8(ascii: "\\") else {
                position += 1
                continue
            }
            let run = position - runStart
            out.copyMemory(from: runStart, byteCount: run)
            out += run
            // The scanner checked every escape, so each is whole and well formed.
            let kind = position.load(fromByteOffset: 1, as: UInt8.self)
            position += 2
            switch kind {
            case UInt8(ascii: "/"):
                out.storeBytes(of: kind, as: UInt8.self)
                out += 1
            case UInt8(ascii: "u"):
                // Checked by the scanner; if not, the escape's text is dropped, as decoding does.
                guard let scalar = unicodeEscape(at: &position, end: end) else { break }
                out = storeQuoted(scalar: scalar, at: out)
            default:
                // \" \\ \b \f \n \r \t are already canonical.
                out.storeBytes(of: UInt8(ascii: "\\"), as: UInt8.self)
                out.storeBytes(of: kind, toByteOffset: 1, as: UInt8.self)
                out += 2
            }
            runStart = position
        }
        let run = end - runStart
        out.copyMemory(from: runStart, byteCount: run)
        out += run
        out.storeBytes(of: UInt8(ascii: "\""), as: UInt8.self)
        out += 1
        output.count += out - outStart
    }

    /// Writes one decoded scalar as `appendQuoted` would print it; it comes from a 6-byte
    /// escape, and nothing written here is longer.
    @inline(__always)
    static func storeQuoted(scalar value: UInt32, at out: UnsafeMutableRawPointer) -> UnsafeMutableRawPointer {
        if value < 0x80 {
            let byte = UInt8(truncatingIfNeeded: value)
            if byte >= 0x20, byte != 0x22, byte != 0x5C, byte != 0x7F {
                out.storeBytes(of: byte, as: UInt8.self)
                return out + 1
            }
            let escape = escapeText(for: byte)
            out.copyMemory(from: escape.utf8Start, byteCount: escape.utf8CodeUnitCount)
            if escape.utf8CodeUnitCount == 4 {
                // "\u00" then two lowercase hex digits.
                let digits = hexDigits.utf8Start
                out.storeBytes(of: digits[Int(byte >> 4)], toByteOffset: 4, as: UInt8.self)
                out.storeBytes(of: digits[Int(byte & 0x0F)], toByteOffset: 5, as: UInt8.self)
                return out + 6
            }
            return out + escape.utf8CodeUnitCount
        }
        return out + ByteBuffer.storeUTF8(scalar: value, at: out)
    }

    /// The scalar of a `\uXXXX` escape whose digits start at `position` (just after "\u"),
    /// with a surrogate pair's second escape read too; a lone surrogate is U+FFFD. `position`
    /// moves past what was read; nil (and `position` unmoved) when the four digits are not there.
    @inline(__always)
    static func unicodeEscape(at position: inout UnsafeRawPointer, end: UnsafeRawPointer) -> UInt32? {
        guard let unit = hex4(at: position, end: end) else { return nil }
        position += 4
        if unit >= 0xD800, unit <= 0xDBFF {
            guard end - position >= 6, position.load(as: UInt8.self) == UInt8(ascii: "\\"),
                  position.load(fromByteOffset: 1, as: UInt8.self) == UInt8(ascii: "u"),
                  let low = hex4(at: position + 2, end: end), low >= 0xDC00, low <= 0xDFFF else { return 0xFFFD }
            position += 6
            return 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
        }
        return unit >= 0xDC00 && unit <= 0xDFFF ? 0xFFFD : unit
    }

    @inline(__always)
    static func hex4(at position: UnsafeRawPointer, end: UnsafeRawPointer) -> UInt32? {
        guard end - position >= 4 else { return nil }
        var value: UInt32 = 0
        for index in 0..<4 {
            guard let digit = Hex.value(of: position.load(fromByteOffset: index, as: UInt8.self)) else { return nil }
            value = value << 4 | digit
        }
        return value
    }

    /// Copies UTF-8, replacing each invalid sequence by U+FFFD with jq 1.6's exact rule
    /// (jvp_utf8_next): a bad lead or stray continuation byte is one U+FFFD; a lead byte whose
    /// sequence would run past the end swallows the rest; a sequence cut short by a non-continuation
    /// byte, an overlong form, a surrogate or a value past U+10FFFF is one U+FFFD for the bytes read.
    static func appendRepairingUTF8(_ bytes: UnsafeRawBufferPointer, to output: inout ByteBuffer) {
        guard let base = bytes.baseAddress else { return }
        let count = bytes.count
        var index = 0
        while index < count {
            let lead = base.load(fromByteOffset: index, as: UInt8.self)
            if lead < 0x80 {
                output.append(lead)
                index += 1
                continue
            }
            let length: Int
            let firstScalar: UInt32
            var scalar: UInt32
            switch lead {
            case 0xC2...0xDF: length = 2; firstScalar = 0x80; scalar = UInt32(lead & 0x1F)
            case 0xE0...0xEF: length = 3; firstScalar = 0x800; scalar = UInt32(lead & 0x0F)
            case 0xF0...0xF4: length = 4; firstScalar = 0x10000; scalar = UInt32(lead & 0x07)
            default:
                // 0x80...0xC1 and 0xF5...0xFF cannot start a sequence.
                appendReplacement(to: &output)
                index += 1
                continue
            }
            guard length <= count - index else {
                appendReplacement(to: &output)
                index = count
                continue
            }
            var read = 1
            while read < length {
                let next = base.load(fromByteOffset: index + read, as: UInt8.self)
                guard next & 0xC0 == 0x80 else { break }
                scalar = scalar << 6 | UInt32(next & 0x3F)
                read += 1
            }
            if read < length || scalar < firstScalar || (scalar >= 0xD800 && scalar <= 0xDFFF) || scalar > 0x10FFFF {
                appendReplacement(to: &output)
            } else {
                output.append(base + index, count: length)
            }
            index += read
        }
    }

    @inline(__always)
    private static func appendReplacement(to output: inout ByteBuffer) {
        output.reserve(3)
        output.append(0xEF)
        output.append(0xBF, 0xBD)
    }

    /// Appends valid UTF-8 text as a quoted JSON string the way jq prints it: '"' and '\\' escaped,
    /// \b \f \n \r \t, other controls and U+007F as lowercase \u00xx; everything else raw,
    /// '/' included.
    static func appendQuoted(_ text: UnsafeRawBufferPointer, to output: inout ByteBuffer) {
        output.append(UInt8(ascii: "\""))
        if let base = text.baseAddress {
            let end = base + text.count
            var runStart = base
            var position = base
            while true {
                while end - position >= 8 {
                    let special = SWAR.needsEscape(UInt64(littleEndian: position.loadUnaligned(as: UInt64.self)))
                    if special == 0 {
                        position += 8
                    } else {
                        position += special.trailingZeroBitCount >> 3
                        break
                    }
                }
                guard position < end else { break }
                let byte = position.load(as: UInt8.self)
                if byte >= 0x20, byte != 0x22, byte != 0x5C, byte != 0x7F {
                    position += 1
                    continue
                }
                output.append(runStart, count: position - runStart)
                appendEscape(for: byte, to: &output)
                position += 1
                runStart = position
            }
            output.append(runStart, count: end - runStart)
        }
        output.append(UInt8(ascii: "\""))
    }

    private static let hexDigits: StaticString = "0123456789abcdef"

    private static func appendEscape(for byte: UInt8, to output: inout ByteBuffer) {
        let escape = escapeText(for: byte)
        output.append(escape)
        if escape.utf8CodeUnitCount == 4 {
            let digits = hexDigits.utf8Start
            output.append(digits[Int(byte >> 4)], digits[Int(byte & 0x0F)])
        }
    }

    /// The escape jq writes for a byte of text that needs one: two characters, or `\u00`
    /// for the byte's two hex digits to follow.
    @inline(__always)
    private static func escapeText(for byte: UInt8) -> StaticString {
        switch byte {
        case 0x22: return "\\\""
        case 0x5C: return "\\\\"
        case 0x08: return "\\b"
        case 0x0C: return "\\f"
        case 0x0A: return "\\n"
        case 0x0D: return "\\r"
        case 0x09: return "\\t"
        default: return "\\u00"
        }
    }
}
