/// What the sandbox needs to know about an uploaded picture, from its bytes: the format (by
/// magic number, never by name or declared type), the pixel size, and whether a GIF animates.
struct ImageInfo: Equatable {
    enum Format: String {
        case jpeg = "image/jpeg"
        case png = "image/png"
        case gif = "image/gif"

        var fileExtension: String {
            switch self {
            case .jpeg: return "jpg"
            case .png: return "png"
            case .gif: return "gif"
            }
        }
    }

    var format: Format
    var width: Int
    var height: Int
    var isAnimated: Bool

    static func format(of bytes: [UInt8]) -> Format? {
        if bytes.starts(with: [0xFF, 0xD8, 0xFF]) { return .jpeg }
        if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if bytes.starts(with: Array("GIF87a".utf8)) || bytes.starts(with: Array("GIF89a".utf8)) { return .gif }
        return nil
    }

    /// Nil when the bytes are not JPEG, PNG or GIF. A recognized file whose size cannot be read
    /// gets 0×0 rather than being refused (Douban checks the format, not the decoder).
    static func inspect(_ bytes: [UInt8]) -> ImageInfo? {
        guard let format = format(of: bytes) else { return nil }
        var info = ImageInfo(format: format, width: 0, height: 0, isAnimated: false)
        switch format {
        case .png:
            if bytes.count >= 24 {
                info.width = Int(bigEndian32(bytes, 16))
                info.height = Int(bigEndian32(bytes, 20))
            }
        case .gif:
            if bytes.count >= 10 {
                info.width = Int(bytes[6]) | Int(bytes[7]) << 8
                info.height = Int(bytes[8]) | Int(bytes[9]) << 8
            }
            info.isAnimated = countGIFFrames(bytes) > 1
        case .jpeg:
            if let (width, height) = jpegSize(bytes) {
                info.width = width
                info.height = height
            }
        }
        return info
    }

    private static func bigEndian32(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }

    /// Walks the JPEG markers to the first start-of-frame (SOF0–SOF15 except DHT, JPG, DAC).
    private static func jpegSize(_ bytes: [UInt8]) -> (Int, Int)? {
        var index = 2
        while index + 9 < bytes.count {
            guard bytes[index] == 0xFF else { return nil }
            let marker = bytes[index + 1]
            if marker == 0xFF { index += 1; continue }
            if marker == 0xD8 || marker == 0x01 || (0xD0...0xD7).contains(marker) { index += 2; continue }
            let length = Int(bytes[index + 2]) << 8 | Int(bytes[index + 3])
            if (0xC0...0xCF).contains(marker) && marker != 0xC4 && marker != 0xC8 && marker != 0xCC {
                let height = Int(bytes[index + 5]) << 8 | Int(bytes[index + 6])
                let width = Int(bytes[index + 7]) << 8 | Int(bytes[index + 8])
                return (width, height)
            }
            if marker == 0xD9 || marker == 0xDA || length < 2 { return nil }
            index += 2 + length
        }
        return nil
    }

    /// Image descriptors in a GIF (stops at 2: enough to say "animated").
    private static func countGIFFrames(_ bytes: [UInt8]) -> Int {
        guard bytes.count > 13 else { return 0 }
        var index = 13
        let flags = bytes[10]
        if flags & 0x80 != 0 { index += 3 * (1 << (Int(flags & 0x07) + 1)) }
        var frames = 0
        while index < bytes.count && frames < 2 {
            switch bytes[index] {
            case 0x2C:  // image descriptor
                frames += 1
                guard index + 10 <= bytes.count else { return frames }
                let localFlags = bytes[index + 9]
                index += 10
                if localFlags & 0x80 != 0 { index += 3 * (1 << (Int(localFlags & 0x07) + 1)) }
                index += 1  // LZW minimum code size
                index = skipSubBlocks(bytes, index)
            case 0x21:  // extension
                index = skipSubBlocks(bytes, index + 2)
            default:
                return frames
            }
        }
        return frames
    }

    private static func skipSubBlocks(_ bytes: [UInt8], _ start: Int) -> Int {
        var index = start
        while index < bytes.count {
            let size = Int(bytes[index])
            index += 1
            if size == 0 { return index }
            index += size
        }
        return index
    }

    /// A 1×1 GIF, served for every avatar URL so clients that fetch avatars stay offline.
    static let placeholderGIF: [UInt8] = [
        0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 0x01, 0x00, 0x01, 0x00, 0x80, 0x00, 0x00, 0x00, 0x77, 0x22,
        0xFF, 0xFF, 0xFF, 0x21, 0xF9, 0x04, 0x01, 0x00, 0x00, 0x00, 0x00, 0x2C, 0x00, 0x00, 0x00, 0x00,
        0x01, 0x00, 0x01, 0x00, 0x00, 0x02, 0x02, 0x44, 0x01, 0x00, 0x3B,
    ]
}
