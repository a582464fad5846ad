#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CCurl
import DouctlSystem

/// A reply's Content-Encoding decoded for a request carried without libcurl (`SocketExchange`):
/// the encodings libcurl decodes (deflate, gzip, br, zstd), each from its system library,
/// opened only when a request offers it (zlib, libbrotlidec, libzstd: a few hundred
/// kilobytes, not libcurl's thirty libraries). What is offered is the keeper's libcurl's own
/// list (`KeeperServer.libcurlAcceptEncoding`, told in the handshake), so a keeper call asks
/// for what a direct call asks for.
enum KeeperDecoding {
    /// The encodings named in an Accept-Encoding value ("deflate, gzip, br, zstd"), lowercased.
    static func names(_ value: String) -> [String] {
        value.utf8.split(separator: 0x2C).map {
            HTTPSyntax.lowercased(HTTPSyntax.trimmingWhitespace(Substring(String(decoding: $0, as: UTF8.self))))
        }.filter { !$0.isEmpty }
    }

    /// Whether every encoding the keeper's libcurl offers (`value`) can be decoded here: each
    /// one's library is found where our loader would open it from (found, not opened: opening
    /// all three would cost every call ~0.3 M instructions and ~55 system calls; each is
    /// opened only when a reply uses it). False for an empty list or a name we do not know
    /// (the request then goes through libcurl, which decodes its own list).
    static func canDecode(_ value: String) -> Bool {
        let offered = names(value)
        guard !offered.isEmpty else { return false }
        for name in offered {
            switch name {
            case "identity": continue
            case "deflate", "gzip", "x-gzip": if !Libraries.installed(Libraries.zlibNames) { return false }
            case "br": if !Libraries.installed(Libraries.brotliNames) { return false }
            case "zstd": if !Libraries.installed(Libraries.zstdNames) { return false }
            default: return false
            }
        }
        return true
    }

    /// What a plain-http call douctl carries itself (`SocketExchange.Route.direct`) asks for:
    /// the encodings whose libraries are installed here, in libcurl's order. Debian's libcurl
    /// is built with all three, so this is its "deflate, gzip, br, zstd"; nil when none is
    /// installed (such a request then goes through libcurl). Looked for once a run.
    static let installedEncodings: String? = {
        var names: [String] = []
        if Libraries.installed(Libraries.zlibNames) { names += ["deflate", "gzip"] }
        if Libraries.installed(Libraries.brotliNames) { names.append("br") }
        if Libraries.installed(Libraries.zstdNames) { names.append("zstd") }
        return names.isEmpty ? nil : names.joined(separator: ", ")
    }()

    /// The decoders for a Content-Encoding value (applied last first), or a message in
    /// libcurl's words for an encoding it does not decode. `offered` is the Accept-Encoding
    /// sent: libcurl decodes exactly the encodings it was built with, the ones it offers.
    static func decoders(for value: String, offered: String) -> Result<[ContentDecoder], TransportError> {
        var decoders: [ContentDecoder] = []
        let known = Set(names(offered))
        for token in value.utf8.split(separator: 0x2C) {
            let name = HTTPSyntax.lowercased(HTTPSyntax.trimmingWhitespace(Substring(String(decoding: token, as: UTF8.self))))
            if name.isEmpty || name == "identity" || name == "none" { continue }
            guard known.contains(name == "x-gzip" ? "gzip" : name) else {
                return .failure(.malformedReply("Unrecognized content encoding type. libcurl understands \(offered) content encodings."))
            }
            guard let decoder = ContentDecoder(name) else {
                return .failure(.malformedReply("cannot decode the reply's \(name) encoding: its library cannot be loaded"))
            }
            decoders.append(decoder)
        }
        return .success(decoders.reversed())
    }
}

/// One streaming decoder. Its `feed` returns the decoded bytes, or nil when the data is not
/// valid in its encoding.
final class ContentDecoder {
    private enum Kind { case zlib, brotli, zstd }
    private let kind: Kind
    private var state: UnsafeMutableRawPointer?
    /// zlib's z_stream (112 bytes on LP64 platforms), kept as raw memory.
    private var stream: UnsafeMutableRawPointer?
    private var gzip = false
    private var triedRaw = false
    private var zlibSeen = 0

    init?(_ name: String) {
        switch name {
        case "gzip", "x-gzip", "deflate":
            guard let library = Libraries.zlib else { return nil }
            kind = .zlib
            gzip = name != "deflate"
            let memory = UnsafeMutableRawPointer.allocate(byteCount: 112, alignment: 8)
            memory.initializeMemory(as: UInt8.self, repeating: 0, count: 112)
            stream = memory
            guard library.inflateInit2(memory, gzip ? 15 + 32 : 15, "1.2.11", 112) == 0 else {
                memory.deallocate()
                stream = nil
                return nil
            }
        case "br":
            guard let library = Libraries.brotli, let instance = library.create(nil, nil, nil) else { return nil }
            kind = .brotli
            state = instance
        case "zstd":
            guard let library = Libraries.zstd, let instance = library.create() else { return nil }
            kind = .zstd
            state = instance
        default:
            return nil
        }
    }

    deinit {
        switch kind {
        case .zlib:
            if let stream {
                _ = Libraries.zlib?.inflateEnd(stream)
                stream.deallocate()
            }
        case .brotli:
            if let state { Libraries.brotli?.destroy(state) }
        case .zstd:
            if let state { _ = Libraries.zstd?.free(state) }
        }
    }

    /// How a feed ended: all input taken, the data is not valid in its encoding, or `emit`
    /// refused more (the bomb bound, a closed output: the caller knows why).
    enum Fed { case taken, invalid, refused }

    /// Decodes `input`, handing the output to `emit` a block (64–128 KiB) at a time as it is
    /// made, never all at once: a few hundred bytes of brotli or zstd can decode to gigabytes,
    /// and the decompression bomb's bound (checked as each block is delivered) must see the
    /// first 64 MiB before the rest is made.
    func feed(_ input: UnsafeRawBufferPointer, _ emit: (UnsafeRawBufferPointer) -> Bool) -> Fed {
        guard !input.isEmpty else { return .taken }
        switch kind {
        case .zlib: return inflate(input, emit)
        case .brotli: return brotli(input, emit)
        case .zstd: return zstd(input, emit)
        }
    }

    private func inflate(_ input: UnsafeRawBufferPointer, _ emit: (UnsafeRawBufferPointer) -> Bool) -> Fed {
        guard let library = Libraries.zlib, let stream, let base = input.baseAddress else { return .invalid }
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        stream.storeBytes(of: UnsafeMutableRawPointer(mutating: base), toByteOffset: 0, as: UnsafeMutableRawPointer.self)
        stream.storeBytes(of: UInt32(input.count), toByteOffset: 8, as: UInt32.self)
        while true {
            let result: Int32 = chunk.withUnsafeMutableBytes { buffer in
                guard let out = buffer.baseAddress else { return -2 }
                stream.storeBytes(of: out, toByteOffset: 24, as: UnsafeMutableRawPointer.self)
                stream.storeBytes(of: UInt32(buffer.count), toByteOffset: 32, as: UInt32.self)
                return library.inflate(stream, 0)
            }
            let left = Int(stream.load(fromByteOffset: 32, as: UInt32.self))
            let produced = chunk.count - left
            let inputLeft = Int(stream.load(fromByteOffset: 8, as: UInt32.self))
            if result == -3 && !gzip && !triedRaw && zlibSeen == 0 && produced == 0 {
                // "deflate" sent as a raw deflate stream (no zlib header), which libcurl accepts too.
                triedRaw = true
                _ = library.inflateEnd(stream)
                stream.initializeMemory(as: UInt8.self, repeating: 0, count: 112)
                guard library.inflateInit2(stream, -15, "1.2.11", 112) == 0 else { return .invalid }
                return inflate(input, emit)
            }
            if produced > 0, !chunk.withUnsafeBytes({ emit(UnsafeRawBufferPointer(rebasing: $0[0..<produced])) }) { return .refused }
            if result == 1 { return .taken }  // Z_STREAM_END: anything after it is ignored, as libcurl does
            guard result == 0 || result == -5 else { return .invalid }
            zlibSeen += 1
            // Room left in the output: inflate took all it could of the input.
            if left > 0 || inputLeft == 0 && result == -5 { return .taken }
        }
    }

    private func brotli(_ input: UnsafeRawBufferPointer, _ emit: (UnsafeRawBufferPointer) -> Bool) -> Fed {
        guard let library = Libraries.brotli, let state, let base = input.baseAddress else { return .invalid }
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        var availableIn = input.count
        var nextIn: UnsafePointer<UInt8>? = base.assumingMemoryBound(to: UInt8.self)
        while true {
            var written = 0
            let result: Int32 = chunk.withUnsafeMutableBytes { buffer in
                var availableOut = buffer.count
                var nextOut = buffer.baseAddress?.assumingMemoryBound(to: UInt8.self)
                let result = library.decompress(state, &availableIn, &nextIn, &availableOut, &nextOut, nil)
                written = buffer.count - availableOut
                return result
            }
            if written > 0, !chunk.withUnsafeBytes({ emit(UnsafeRawBufferPointer(rebasing: $0[0..<written])) }) { return .refused }
            switch result {
            case 1, 2: return .taken        // done, or needs more input
            case 3: continue               // needs more output room
            default: return .invalid
            }
        }
    }

    private func zstd(_ input: UnsafeRawBufferPointer, _ emit: (UnsafeRawBufferPointer) -> Bool) -> Fed {
        guard let library = Libraries.zstd, let state, let base = input.baseAddress else { return .invalid }
        var chunk = [UInt8](repeating: 0, count: 128 * 1024)
        var source = ZstdBuffer(pointer: UnsafeMutableRawPointer(mutating: base), size: input.count, position: 0)
        while true {
            var produced = 0
            let result: Int = chunk.withUnsafeMutableBytes { buffer in
                var target = ZstdBuffer(pointer: buffer.baseAddress, size: buffer.count, position: 0)
                let result = withUnsafeMutableBytes(of: &target) { out in
                    withUnsafeMutableBytes(of: &source) { into in
                        guard let outPointer = out.baseAddress, let inPointer = into.baseAddress else { return -1 }
                        return library.decompress(state, outPointer, inPointer)
                    }
                }
                produced = target.position
                return result
            }
            if library.isError(result) != 0 { return .invalid }
            if produced > 0, !chunk.withUnsafeBytes({ emit(UnsafeRawBufferPointer(rebasing: $0[0..<produced])) }) { return .refused }
            if source.position >= source.size && produced < chunk.count || produced == 0 { return .taken }
        }
    }
}

/// ZSTD_inBuffer and ZSTD_outBuffer (pointer, size, pos).
struct ZstdBuffer {
    var pointer: UnsafeMutableRawPointer?
    var size: Int
    var position: Int
}

/// The decoders' libraries, each opened once, on first use, from the system's directories.
private enum Libraries {
    static let zlibNames = ["libz.so.1", "libz.so"]
    static let brotliNames = ["libbrotlidec.so.1", "libbrotlidec.so"]
    static let zstdNames = ["libzstd.so.1", "libzstd.so"]

    /// Whether `open(names)` would find one of them (`ccurl_trusted_find`: the same search).
    static func installed(_ names: [String]) -> Bool {
        var pointers: [UnsafePointer<CChar>?] = names.map { UnsafePointer(strdup($0)) }
        pointers.append(nil)
        defer { for pointer in pointers { free(UnsafeMutableRawPointer(mutating: pointer)) } }
        return pointers.withUnsafeBufferPointer { ccurl_trusted_find($0.baseAddress) } == 1
    }

    struct Zlib {
        let inflateInit2: @convention(c) (UnsafeMutableRawPointer, Int32, UnsafePointer<CChar>, Int32) -> Int32
        let inflate: @convention(c) (UnsafeMutableRawPointer, Int32) -> Int32
        let inflateEnd: @convention(c) (UnsafeMutableRawPointer) -> Int32
    }
    struct Brotli {
        let create: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer?
        let decompress: @convention(c) (UnsafeMutableRawPointer, UnsafeMutablePointer<Int>, UnsafeMutablePointer<UnsafePointer<UInt8>?>, UnsafeMutablePointer<Int>, UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, UnsafeMutablePointer<Int>?) -> Int32
        let destroy: @convention(c) (UnsafeMutableRawPointer) -> Void
    }
    struct Zstd {
        let create: @convention(c) () -> UnsafeMutableRawPointer?
        let decompress: @convention(c) (UnsafeMutableRawPointer, UnsafeMutableRawPointer, UnsafeMutableRawPointer) -> Int
        let isError: @convention(c) (Int) -> UInt32
        let free: @convention(c) (UnsafeMutableRawPointer) -> Int
    }

    static func open(_ names: [String]) -> UnsafeMutableRawPointer? {
        var pointers: [UnsafePointer<CChar>?] = names.map { UnsafePointer(strdup($0)) }
        pointers.append(nil)
        defer { for pointer in pointers { free(UnsafeMutableRawPointer(mutating: pointer)) } }
        var reason = [CChar](repeating: 0, count: 256)
        return pointers.withUnsafeBufferPointer { list in
            ccurl_trusted_dlopen(nil, nil, list.baseAddress, RTLD_NOW | RTLD_LOCAL, &reason, reason.count)
        }
    }

    static func symbol<T>(_ library: UnsafeMutableRawPointer, _ name: String, as type: T.Type) -> T? {
        guard let pointer = dlsym(library, name) else { return nil }
        return unsafeBitCast(pointer, to: type)
    }

    static let zlib: Zlib? = {
        guard let library = open(zlibNames),
              let initialise = symbol(library, "inflateInit2_", as: (@convention(c) (UnsafeMutableRawPointer, Int32, UnsafePointer<CChar>, Int32) -> Int32).self),
              let inflate = symbol(library, "inflate", as: (@convention(c) (UnsafeMutableRawPointer, Int32) -> Int32).self),
              let end = symbol(library, "inflateEnd", as: (@convention(c) (UnsafeMutableRawPointer) -> Int32).self) else { return nil }
        return Zlib(inflateInit2: initialise, inflate: inflate, inflateEnd: end)
    }()

    static let brotli: Brotli? = {
        guard let library = open(brotliNames),
              let create = symbol(library, "BrotliDecoderCreateInstance", as: (@convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer?).self),
              let decompress = symbol(library, "BrotliDecoderDecompressStream", as: (@convention(c) (UnsafeMutableRawPointer, UnsafeMutablePointer<Int>, UnsafeMutablePointer<UnsafePointer<UInt8>?>, UnsafeMutablePointer<Int>, UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, UnsafeMutablePointer<Int>?) -> Int32).self),
              let destroy = symbol(library, "BrotliDecoderDestroyInstance", as: (@convention(c) (UnsafeMutableRawPointer) -> Void).self) else { return nil }
        return Brotli(create: create, decompress: decompress, destroy: destroy)
    }()

    static let zstd: Zstd? = {
        guard let library = open(zstdNames),
              let create = symbol(library, "ZSTD_createDStream", as: (@convention(c) () -> UnsafeMutableRawPointer?).self),
              let decompress = symbol(library, "ZSTD_decompressStream", as: (@convention(c) (UnsafeMutableRawPointer, UnsafeMutableRawPointer, UnsafeMutableRawPointer) -> Int).self),
              let isError = symbol(library, "ZSTD_isError", as: (@convention(c) (Int) -> UInt32).self),
              let free = symbol(library, "ZSTD_freeDStream", as: (@convention(c) (UnsafeMutableRawPointer) -> Int).self) else { return nil }
        return Zstd(create: create, decompress: decompress, isError: isError, free: free)
    }()
}
