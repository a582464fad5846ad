#if canImport(Glibc)
import Glibc
#endif
import DouctlJSON
import DouctlTestSupport
import Foundation
import Testing

/// Compressed replies through the keeper's libcurl-free path (issue 44): the request asks for
/// the encodings the keeper's libcurl asks for (not a fixed list), a br or zstd reply is
/// decoded as libcurl decodes it, and a br or zstd decompression bomb stops at gzip's bound.
/// The built binary, a real keeper, KeeperPeer's TLS origin on 127.0.0.1.
@Suite("Keeper: compressed replies")
struct KeeperEncodingTests {
    static func requireCodecs() throws {
        // The origin makes br and zstd with libbrotlienc and libzstd (ctypes); douctl decodes
        // them with libbrotlidec and libzstd.
        try Tools.requireLibrary("libbrotlienc.so.1")
        try Tools.requireLibrary("libbrotlidec.so.1")
        try Tools.requireLibrary("libzstd.so.1")
    }

    /// A br and a zstd reply (200 KB of JSON, by length and chunked) print through the keeper
    /// exactly as a direct call prints them, with libcurl not loaded for the keeper call.
    @Test func brotliAndZstdRepliesPrintThroughTheKeeperAsADirectCallPrintsThem() throws {
        try Self.requireCodecs()
        let server = try KeeperPeer()
        let douctl = KeeperPeer.douctl()
        defer { _ = try? douctl.run("keeper", "stop") }
        try KeeperPeer.startKeeper(douctl, base: server.base, cacert: server.pki.caCertificate)
        for encoding in ["br", "zstd", "chunked-br", "chunked-zstd"] {
            for mode in [[], ["--raw"]] {
                let arguments = ["api", server.base + "/gz?enc=" + encoding, "--cacert", server.pki.caCertificate] + mode
                let through = try douctl.run(["-v"] + arguments, environment: ["LD_DEBUG": "files"])
                #expect(through.status == 0, "\(encoding) \(mode): \(through.stderr.suffix(2000))")
                #expect(through.stderr.contains("* keeper:"), "\(encoding): it went through the keeper")
                #expect(!KeeperClientTests.loadsLibcurl(through), "\(encoding): a keeper call loaded libcurl")
                let direct = try douctl.run(arguments + ["--no-keep"])
                #expect(direct.status == 0, "\(encoding) \(mode): \(direct)")
                #expect(through.stdout == direct.stdout, "\(encoding) \(mode): the same bytes printed")
                let reply = try through.json()
                #expect(reply["decoded"]?.scalarText == encoding, "\(encoding): \(through.stdoutText.prefix(200))")
                #expect(reply["filler"]?.arrayValue?.count == 10000, "\(encoding): the whole reply decoded")
            }
        }
    }

    /// A br and a zstd bomb (2 GiB of zeros in 3 KB and 64 KB) through the keeper: refused at
    /// gzip's bound (past 64 MiB at more than 200 times the bytes received), one line, exit 8,
    /// nothing on stdout, as the same call direct (libcurl's decoders) ends. Under a 1 GiB
    /// address-space limit: the decoders hand their output on a block at a time, so the bound
    /// stops the reply before the rest is made (decoded whole, one read's 3 KB of brotli would
    /// need 2 GiB).
    @Test(arguments: ["br-bomb", "zstd-bomb"])
    func aBrotliOrZstdBombStopsAtTheGzipBound(_ encoding: String) throws {
        try Self.requireCodecs()
        let server = try KeeperPeer()
        let douctl = KeeperPeer.douctl()
        defer { _ = try? douctl.run("keeper", "stop") }
        try KeeperPeer.startKeeper(douctl, base: server.base, cacert: server.pki.caCertificate)
        let limited = ["/bin/sh", "-c", "ulimit -v 1048576 && exec \"$0\" \"$@\""]
        let arguments = ["api", server.base + "/gz?enc=\(encoding)&mb=2048", "--cacert", server.pki.caCertificate, "--no-retry"]
        var lines: [String] = []
        for direct in [false, true] {
            let result = try douctl.run(via: limited, arguments + (direct ? ["--no-keep"] : []), environment: ["LD_DEBUG": direct ? "" : "files"], timeout: 120)
            let said = result.stderr.split(separator: "\n").filter { !$0.contains("file=") && !$0.hasPrefix(" ") && !$0.isEmpty }
            #expect(result.status == 8, "\(encoding) direct \(direct): exit \(result.status) \(said.suffix(5))")
            #expect(result.stdout.isEmpty, "\(encoding) direct \(direct)")
            #expect(said.count == 1 && said.first?.contains("refused as a decompression bomb") == true, "\(encoding) direct \(direct): \(said.suffix(5))")
            if !direct { #expect(!KeeperClientTests.loadsLibcurl(result), "\(encoding): the keeper call loaded libcurl") }
            lines.append(said.first.map { String($0) } ?? "")
        }
        // The same words either way (the byte counts are each path's own).
        let words = lines.map { $0.replacingOccurrences(of: #"\d+ bytes"#, with: "N bytes", options: .regularExpression) }
        #expect(words[0] == words[1], "\(lines)")
    }

    /// What libcurl asks for follows the libcurl in use. A libcurl that sends "deflate, gzip"
    /// (one built without brotli and zstd), made here by a shim over the system's libcurl
    /// that rewrites CURLOPT_ACCEPT_ENCODING "" and given as DOUCTL_LIBCURL to the keeper and
    /// the direct call alike: the origin receives the same head from a keeper call (carried
    /// without libcurl) as from a direct call, that Accept-Encoding included. A shim that sends
    /// an encoding douctl cannot decode ("xz") makes the keeper call go through libcurl, with
    /// the same head again.
    @Test func aKeeperCallsHeadEqualsADirectCallsWhateverTheLibcurlAsksFor() throws {
        let cc = try Tools.require("cc")
        for (list, withoutLibcurl) in [("deflate, gzip", true), ("deflate, gzip, br, zstd, xz", false)] {
            let shim = try Self.libcurlShim(cc: cc, acceptEncoding: list)
            let server = try KeeperPeer()
            let douctl = KeeperPeer.douctl(extra: ["DOUCTL_LIBCURL": shim])
            defer { _ = try? douctl.run("keeper", "stop") }
            try KeeperPeer.startKeeper(douctl, base: server.base, cacert: server.pki.caCertificate)
            let arguments = ["api", server.base + "/get?q=1", "-H", "X-Custom: value", "--cacert", server.pki.caCertificate]
            let through = try douctl.run(["-v"] + arguments, environment: ["LD_DEBUG": "files"])
            #expect(through.status == 0, "\(list): \(through.stderr.suffix(1500))")
            #expect(through.stderr.contains("* keeper:"), "\(list): it went through the keeper")
            #expect(KeeperClientTests.loadsLibcurl(through) == !withoutLibcurl, "\(list): libcurl loaded: \(!withoutLibcurl)")
            if !withoutLibcurl {
                #expect(through.stderr.contains("this call goes through libcurl"), "\(list): \(through.stderr.suffix(1500))")
            }
            let direct = try douctl.run(arguments + ["--no-keep"])
            #expect(direct.status == 0, "\(list): \(direct)")
            let heads = (try douctl.run("api", server.base + "/heads", "--cacert", server.pki.caCertificate, "--no-keep").json().arrayValue ?? []).compactMap { $0.stringValue }
            // The last three: the keeper call's, the direct call's, this /heads request's own.
            #expect(heads.count >= 3)
            if heads.count >= 3 {
                let (kept, straight) = (heads[heads.count - 3], heads[heads.count - 2])
                #expect(kept == straight, "\(list): the same head\n\(kept)\n---\n\(straight)")
                #expect(kept.contains("\r\nAccept-Encoding: \(list)\r\n"), "\(list): \(kept)")
            }
        }
    }

    /// A shared library over the system's libcurl whose only change is CURLOPT_ACCEPT_ENCODING
    /// "": it passes `acceptEncoding` instead, as a libcurl built with those decoders would send.
    static func libcurlShim(cc: String, acceptEncoding: String) throws -> String {
        let libcurl = try Tools.requireLibrary("libcurl.so.4")
        let directory = TemporaryDirectory.make(prefix: "curl-shim")
        let source = directory + "/shim.c"
        try """
        #define _GNU_SOURCE
        #include <dlfcn.h>
        #include <stdarg.h>
        typedef int (*setopt_t)(void *, int, ...);
        int curl_easy_setopt(void *handle, int option, ...) {
            static setopt_t real;
            if (!real) {
                void *library = dlopen("\(libcurl)", RTLD_NOW | RTLD_NOLOAD);
                if (!library) return 43;
                real = (setopt_t)dlsym(library, "curl_easy_setopt");
                if (!real) return 43;
            }
            va_list list;
            va_start(list, option);
            void *value = va_arg(list, void *);
            va_end(list);
            if (option == 10102 && value && *(const char *)value == 0) value = (void *)"\(acceptEncoding)";
            return real(handle, option, value);
        }
        """.write(toFile: source, atomically: true, encoding: .utf8)
        let output = directory + "/libcurl-shim.so"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: cc)
        process.arguments = ["-shared", "-fPIC", "-O1", "-o", output, source, "-Wl,--no-as-needed", libcurl, "-ldl"]
        try process.runAlone()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw TestFailure("cc could not build the libcurl shim") }
        return output
    }
}
