/// What `insert_image` accepts, by magic bytes: what `ImageInfo` knows (JPEG, PNG, GIF) plus
/// WebP and BMP.
struct CodingImageKind: Equatable {
    var contentType: String
    var width: Int
    var height: Int
    var isAnimated: Bool

    static func recognize(_ head: [UInt8]) -> CodingImageKind? {
        if let info = ImageInfo.inspect(head) {
            return CodingImageKind(contentType: info.format.rawValue, width: info.width, height: info.height,
                                   isAnimated: info.isAnimated)
        }
        if head.count >= 16, head.starts(with: Array("RIFF".utf8)), Array(head[8..<12]) == Array("WEBP".utf8) {
            return CodingImageKind(contentType: "image/webp", width: 0, height: 0, isAnimated: false)
        }
        if head.count >= 26, head[0] == UInt8(ascii: "B"), head[1] == UInt8(ascii: "M"),
           [12, 40, 52, 56, 108, 124].contains(littleEndian32(head, 14)) {
            let width = Int(Int32(bitPattern: UInt32(littleEndian32(head, 18))))
            let height = Int(Int32(bitPattern: UInt32(littleEndian32(head, 22))))
            return CodingImageKind(contentType: "image/bmp", width: abs(width), height: abs(height), isAnimated: false)
        }
        return nil
    }

    private static func littleEndian32(_ bytes: [UInt8], _ offset: Int) -> Int {
        Int(bytes[offset]) | Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2]) << 16 | Int(bytes[offset + 3]) << 24
    }
}
