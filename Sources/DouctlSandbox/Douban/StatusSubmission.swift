#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlServer
import DouctlSystem

/// What a status POST carried, the picture already on disk.
struct StatusSubmission {
    var text = ""
    var recTitle = ""
    var recURL = ""
    var recDescription = ""
    var recImage = ""
    var image: StagedImage?
    /// 1003 or 1009, reported once the whole body has been read.
    var imageProblem: DoubanError?

    mutating func assign(_ name: String, _ value: String) {
        switch name {
        case "text": text = value
        case "rec_title": recTitle = value
        case "rec_url": recURL = value
        case "rec_desc": recDescription = value
        case "rec_image": recImage = value
        default: break
        }
    }

    /// Pictures may be at most 3 MiB ("< 3 MB"; larger → 1003).
    static let maxImageBytes: Int64 = 3 << 20

    /// Reads a form or multipart body. The `image` part streams to a file in the picture
    /// directory; past 3 MiB the file is dropped and the rest of the part read and discarded,
    /// so memory stays flat whatever the upload's size.
    static func read(_ exchange: Exchange, pictureDirectory: String) throws -> StatusSubmission {
        var submission = StatusSubmission()
        guard exchange.isMultipart else {
            for (name, value) in try exchange.fields() { submission.assign(name, value) }
            return submission
        }
        exchange.bodyHandled = true
        guard let reader = MultipartReader(body: exchange.request.body,
                                           contentType: exchange.request.headers["Content-Type"] ?? "") else {
            throw DoubanError.unknown("multipart body without a boundary")
        }
        var seen: Set<String> = []
        do {
            while let part = try reader.nextPart() {
                if part.name == "image" && submission.image == nil && submission.imageProblem == nil {
                    let (record, outcome) = try stageImage(part, in: pictureDirectory)
                    exchange.recordedParts.append(record)
                    switch outcome {
                    case .success(let image): submission.image = image
                    case .failure(let problem): submission.imageProblem = problem
                    }
                    continue
                }
                let bytes = try exchange.keep(part)
                if part.filename == nil, let name = part.name, !seen.contains(name) {
                    guard let bytes else { throw DoubanError.unknown("the field \(name) is too large") }
                    seen.insert(name)
                    submission.assign(name, String(decoding: bytes, as: UTF8.self))
                }
            }
        } catch let error as DoubanError {
            if let image = submission.image { unlink(image.path) }
            _ = try? exchange.request.body.drain()
            throw error
        } catch {
            if let image = submission.image { unlink(image.path) }
            guard let error = error as? HTTPServerError else { throw DoubanError.unknown("malformed multipart body") }
            let refusal = DoubanError.forMultipart(error)
            // Past a part limit the client still gets its 413 once it has sent the rest.
            if case .multipartTooLarge = error { _ = try? exchange.request.body.drain() }
            throw refusal
        }
        return submission
    }

    private static func stageImage(_ part: MultipartPart, in pictureDirectory: String) throws -> (RecordedPart, Result<StagedImage, DoubanError>) {
        let staged: PictureStaging.Result
        do {
            staged = try PictureStaging.stage(part, in: pictureDirectory, limit: Self.maxImageBytes)
        } catch let error as SystemError {
            throw DoubanError(status: 500, code: 999, name: "unknow_v2_error", detail: "cannot store the picture: \(error)")
        }
        switch staged.outcome {
        case .writeFailed(let failure):
            return (staged.record, .failure(DoubanError(status: 500, code: 999, name: "unknow_v2_error",
                                                        detail: "cannot store the picture: \(failure)")))
        case .tooLarge:
            return (staged.record, .failure(.imageTooLarge))
        case .stored(let path):
            guard let bytes = try? FileIO.readFile(path), let info = ImageInfo.inspect(bytes) else {
                unlink(path)
                return (staged.record, .failure(.imageWrongFormat))
            }
            return (staged.record, .success(StagedImage(path: path, size: staged.size, info: info)))
        }
    }
}

/// An uploaded picture on disk, recognized, waiting to be renamed into the picture store.
struct StagedImage {
    var path: String
    var size: Int64
    var info: ImageInfo
}
