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
                guard let unit = hex4(at: position, end: end) else { break }
                position += 4
                var scalar = unit
                if unit >= 0xD800, unit <= 0xDBFF {
                    if end - position >= 6, position.load(as: UInt8.self) == UInt8(ascii: "\\"),
                        position.load(fromByteOffset: 1, as: UInt8.self) == UInt8(ascii: "u"),
                        let low = hex4(at: position + 2, end: end), low >= 0xDC00, low <= 0xDFFF
                    {
                        scalar = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                        position += 6
                    } else {
                        scalar = 0xFFFD
                    }
                } else if unit >= 0xDC00, unit <= 0xDFFF {
                    scalar = 0xFFFD
                }
                output.appendUTF8(scalar: scalar)
            default:
                // '"', '\\' and '/' stand for themselves.
                output.append(kind)
            }
            runStart = position
        }
        if runStart < end { output.append(runStart, count: end - runStart) }
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
        switch byte {
        case 0x22: output.append(UInt8(ascii: "\\"), UInt8(ascii: "\""))
        case 0x5C: output.append(UInt8(ascii: "\\"), UInt8(ascii: "\\"))
        case 0x08: output.append(UInt8(ascii: "\\"), UInt8(ascii: "b"))
        case 0x0C: output.append(UInt8(ascii: "\\"), UInt8(ascii: "f"))
        case 0x0A: output.append(UInt8(ascii: "\\"), UInt8(ascii: "n"))
        case 0x0D: output.append(UInt8(ascii: "\\"), UInt8(ascii: "r"))
        case 0x09: output.append(UInt8(ascii: "\\"), UInt8(ascii: "t"))
        default:
            let digits = hexDigits.utf8Start
            output.append("\\u00")
            output.append(digits[Int(byte >> 4)], digits[Int(byte & 0x0F)])
        }
    }
}
