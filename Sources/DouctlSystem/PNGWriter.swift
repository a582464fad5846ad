/// A minimal PNG encoder: 8-bit grayscale or RGB, no filtering, a zlib stream of stored
/// blocks. It draws the sandbox's captchas and `douctl demo`'s picture, so it lives below both.
public enum PNGWriter {
    static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// `pixels` holds one byte per pixel, row by row; missing rows are white.
    public static func grayscale(width: Int, height: Int, pixels: [UInt8]) -> [UInt8] {
        encode(width: width, height: height, channels: 1, pixels: pixels)
    }

    /// `pixels` holds red, green, blue bytes per pixel, row by row; missing rows are white.
    public static func rgb(width: Int, height: Int, pixels: [UInt8]) -> [UInt8] {
        encode(width: width, height: height, channels: 3, pixels: pixels)
    }

    private static func encode(width: Int, height: Int, channels: Int, pixels: [UInt8]) -> [UInt8] {
        let rowBytes = width * channels
        var raw: [UInt8] = []
        raw.reserveCapacity(height * (rowBytes + 1))
        for row in 0..<height {
            raw.append(0)  // filter type None
            let start = row * rowBytes
            if start + rowBytes <= pixels.count {
                raw.append(contentsOf: pixels[start..<(start + rowBytes)])
            } else {
                raw.append(contentsOf: [UInt8](repeating: 255, count: rowBytes))
            }
        }
        var header: [UInt8] = []
        header += bigEndian(UInt32(width)) + bigEndian(UInt32(height))
        // bit depth 8; colour type 0 (grayscale) or 2 (RGB); deflate; no filter method; no interlace
        header += [8, channels == 3 ? 2 : 0, 0, 0, 0]
        return signature + chunk("IHDR", header) + chunk("IDAT", zlibStored(raw)) + chunk("IEND", [])
    }

    /// A zlib stream (RFC 1950) of deflate stored blocks (RFC 1951 §3.2.4).
    static func zlibStored(_ data: [UInt8]) -> [UInt8] {
        var output: [UInt8] = [0x78, 0x01]
        var offset = 0
        repeat {
            let count = min(65_535, data.count - offset)
            let isLast = offset + count >= data.count
            output.append(isLast ? 1 : 0)
            output += [UInt8(count & 0xFF), UInt8(count >> 8), UInt8(~count & 0xFF), UInt8((~count >> 8) & 0xFF)]
            output += data[offset..<(offset + count)]
            offset += count
        } while offset < data.count
        return output + bigEndian(adler32(data))
    }

    static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let typeBytes = Array(type.utf8)
        return bigEndian(UInt32(data.count)) + typeBytes + data + bigEndian(crc32(typeBytes + data))
    }

    private static let crcTable: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 != 0 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }

    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = crcTable[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }

    static func adler32(_ bytes: [UInt8]) -> UInt32 {
        var a: UInt32 = 1
        var b: UInt32 = 0
        for byte in bytes {
            a = (a + UInt32(byte)) % 65_521
            b = (b + a) % 65_521
        }
        return b << 16 | a
    }

    private static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }
}
