/// An uploaded picture, from either fake: Douban's photo statuses and Coding's `insert_image`
/// both store theirs in the one picture directory, served under `/view/status/…`.
struct PictureRecord: Sendable {
    var id: Int64
    var fileName: String
    var contentType: String
    var width: Int
    var height: Int
    var size: Int64
    var isAnimated: Bool

    var fileExtension: String {
        switch contentType {
        case "image/png": return "png"
        case "image/gif": return "gif"
        case "image/webp": return "webp"
        case "image/bmp": return "bmp"
        default: return "jpg"
        }
    }
}
