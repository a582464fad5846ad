#if canImport(Glibc)
import Glibc
#endif
import DouctlJSON
import DouctlTestSupport
import Foundation
import Testing

/// Compressed replies: api and the typed commands ask for every encoding libcurl decodes
/// (as gh and httpie do; curl needs --compressed), download never does, and every bound on
/// a reply's size applies to the decoded bytes, so a decompression bomb is one line, exit 8.
@Suite("Compressed replies")
struct CompressionTests {
    /// nginx with gzip on, over plain HTTP, logging each request's bytes sent and its
    /// Accept-Encoding.
    final class GzipNginx: @unchecked Sendable {
        let process: Process
        let port: UInt16
        let root: String
        var base: String { "http://127.0.0.1:\(port)" }

        init(files: [String: [UInt8]]) throws {
            _ = try Tools.require("nginx")
            let root = TemporaryDirectory.make(prefix: "douctl-gzip")
            self.root = root
            for (name, bytes) in files { try Data(bytes).write(to: URL(fileURLWithPath: root + "/" + name)) }
            (process, port) = try NginxPeer.start(root: root) { port in """
              log_format sizes '$uri $body_bytes_sent "$http_accept_encoding"';
              access_log \(root)/access.log sizes;
              gzip on; gzip_types application/json application/octet-stream; gzip_min_length 0;
              server { listen 127.0.0.1:\(port); root \(root); }
            """ }
        }

        /// The access log's lines: "URI BYTES_SENT \"ACCEPT_ENCODING\"".
        var log: [String] {
            ((try? String(contentsOfFile: root + "/access.log", encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }

        deinit { NginxPeer.stop(process) }
    }

    static let items: [UInt8] = Array(("[" + (0..<2000).map { #"{"id":\#($0),"text":"状态 \#($0)","user":{"uid":"ahbei","name":"阿北"}}"# }.joined(separator: ",") + "]").utf8)

    @Test func apiAsksForACompressedReplyAndPrintsItDecoded() throws {
        let nginx = try GzipNginx(files: ["items.json": Self.items, "me.json": Array(#"{"id":"1000001","uid":"ahbei","name":"阿北"}"#.utf8)])
        let douctl = Douctl(environment: ["DOUCTL_TOKEN": "t"])
        let result = try douctl.run("api", "/items.json", "--api-base", nginx.base, "--include")
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText.contains("Content-Encoding: gzip\r\n"), "\(result.stdoutText.prefix(400))")
        let plain = try douctl.run("api", "/items.json", "--api-base", nginx.base)
        #expect(plain.stdout == Self.items + [0x0A], "the reply printed decoded")
        // Both through douctl's own HTTP/1.1 code (issue 44.4): nginx's chunked gzip reply read
        // and decoded without libcurl, which the loader never opened (LD_DEBUG lists each file).
        let own = try douctl.run(["api", "/items.json", "--api-base", nginx.base], environment: ["LD_DEBUG": "files"])
        #expect(own.stdout == Self.items + [0x0A])
        #expect(own.stderr.contains("libz.so"), "the loader's lines were read, so the check below can fail: \(own.stderr.suffix(300))")
        #expect(!own.stderr.contains("libcurl"), "\(own.stderr.suffix(600))")
        let sent = nginx.log.filter { $0.hasPrefix("/items.json ") }
        #expect(sent.count == 3)
        for line in sent {
            let bytes = Int(line.split(separator: " ")[1]) ?? .max
            #expect(bytes < Self.items.count / 4, "gzip on the wire: \(line)")
        }
    }

    @Test func downloadKeepsTheBytesAsServedAndAsksForNoEncoding() throws {
        let gz = Data([0x1F, 0x8B, 0x08, 0x00] + Array(repeating: 0x41, count: 5000))
        let nginx = try GzipNginx(files: ["items.json": Self.items, "archive.gz": [UInt8](gz)])
        let directory = TemporaryDirectory.make(prefix: "douctl-gzip-dl")
        let douctl = Douctl()
        let result = try douctl.run("download", nginx.base + "/items.json", nginx.base + "/archive.gz", "-d", directory)
        #expect(result.status == 0, "\(result)")
        #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory + "/items.json"))) == Self.items)
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/archive.gz")) == gz, "a .gz file stays a .gz file")
        for line in nginx.log {
            #expect(line.hasSuffix(" \"-\""), "download sends no Accept-Encoding: \(line)")
        }
    }

    /// `download --compressed` (opt-in, as curl's): Accept-Encoding sent, the decoded bytes
    /// saved (to a file and to stdout), and never with --continue (a range of the encoded
    /// reply cannot continue decoded bytes).
    @Test func downloadCompressedAsksAndSavesTheDecodedBytes() throws {
        let nginx = try GzipNginx(files: ["items.json": Self.items])
        let directory = TemporaryDirectory.make(prefix: "douctl-gzip-dlc")
        let douctl = Douctl()
        let result = try douctl.run("download", "--compressed", nginx.base + "/items.json", "-d", directory)
        #expect(result.status == 0, "\(result)")
        #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory + "/items.json"))) == Self.items)
        #expect(result.stdoutText.contains("\"bytes\":\(Self.items.count)"), "the decoded size: \(result.stdoutText)")
        let piped = try douctl.run("download", "--compressed", nginx.base + "/items.json", "-o", "-")
        #expect(piped.status == 0, "\(piped)")
        #expect(piped.stdout == Self.items)
        let sent = nginx.log
        #expect(sent.count == 2)
        for line in sent {
            #expect(line.contains("gzip"), "Accept-Encoding sent: \(line)")
            #expect((Int(line.split(separator: " ")[1]) ?? .max) < Self.items.count / 4, "gzip on the wire: \(line)")
        }
        let resumed = try douctl.run("download", "--compressed", "--continue", nginx.base + "/items.json", "-o", directory + "/again.json")
        #expect(resumed.status == 2, "\(resumed)")
        #expect(resumed.stderr.contains("--continue cannot be combined with --compressed"), "\(resumed.stderr)")
        #expect(nginx.log.count == 2, "nothing sent")
    }

    /// A gzip bomb to a file: refused once it decodes past 64 MiB at more than 200 times
    /// the bytes received (exit 8, one line), nothing left on disk; without --compressed
    /// the ~1 MiB is saved as served.
    @Test func downloadCompressedRefusesADecompressionBomb() throws {
        let bomb = try Self.bomb()
        let listener = try HostileListener { connection, _ in
            guard HostileListener.send(connection, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: \(bomb.count)\r\nConnection: close\r\n\r\n") else { return }
            _ = try? LoopbackSocket.sendAll(connection, bomb)
        }
        let directory = TemporaryDirectory.make(prefix: "douctl-bomb-dl")
        let douctl = Douctl()
        for target in [["-d", directory], ["-o", "-"]] {
            let result = try douctl.run(["download", "--compressed", listener.baseURL + "/bomb.json", "--no-retry"] + target, timeout: 120)
            #expect(result.status == 8, "\(result.stderr)")
            #expect(result.stderr.contains("refused as a decompression bomb"), "\(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
            #expect(result.stdout.count < 65 << 20, "stdout got at most the 64 MiB floor")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty, "no file and no temp file left")
        let asServed = try douctl.run(["download", listener.baseURL + "/bomb.json", "-d", directory, "--no-retry"], timeout: 120)
        #expect(asServed.status == 0, "\(asServed)")
        #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory + "/bomb.json"))) == bomb)
    }

    /// 1 GiB of zeros gzipped (about 1 MiB on the wire), served with Content-Encoding: gzip.
    static func bomb() throws -> [UInt8] {
        let python = try Tools.require("python3")
        let path = TemporaryDirectory.make(prefix: "douctl-bomb") + "/bomb.gz"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["-c", """
            import zlib, sys
            c = zlib.compressobj(9, zlib.DEFLATED, 31)
            block = bytes(1 << 20)
            with open(sys.argv[1], "wb") as f:
                for _ in range(1024): f.write(c.compress(block))
                f.write(c.flush())
            """, path]
        try process.runAlone()
        process.waitUntilExit()
        return [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// A gzip bomb streamed by `api --raw` (to stdout, and with -o to a file): the
    /// transport's decoded-size bound refuses it in its own words, exit 8. Before issue 38
    /// the raw stream had no bound: 1 GiB of zeros reached stdout, exit 0 (or, where the
    /// sink failed first, "connection lost: Failed writing received data", exit 7).
    @Test func aDecompressionBombUnderRawIsTheBoundsOwnLineAndExit8() throws {
        let bomb = try Self.bomb()
        let listener = try HostileListener { connection, _ in
            guard HostileListener.send(connection, "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Encoding: gzip\r\nContent-Length: \(bomb.count)\r\nConnection: close\r\n\r\n") else { return }
            _ = try? LoopbackSocket.sendAll(connection, bomb)
        }
        let directory = TemporaryDirectory.make(prefix: "douctl-bomb-raw")
        let douctl = Douctl()
        for extra in [[], ["-o", directory + "/out.bin"]] {
            let result = try douctl.run(["api", "/bomb", "--raw", "--api-base", listener.baseURL, "--no-retry"] + extra, timeout: 120)
            #expect(result.status == 8, "\(result.stderr)")
            #expect(result.stderr.hasPrefix("douctl: the reply decodes to more than 200 times the "), "\(result.stderr)")
            #expect(result.stderr.contains("refused as a decompression bomb"), "\(result.stderr)")
            #expect(!result.stderr.contains("connection lost"), "\(result.stderr)")
            // The bytes received are libcurl's count at the refusal, not a progress report
            // that may not have come yet on a fast link.
            #expect(!result.stderr.contains("times the 0 bytes received"), "\(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
            #expect(result.stdout.count < 65 << 20, "stdout got at most the 64 MiB floor")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty, "-o left no file and no temp file")
    }

    @Test func aDecompressionBombIsOneLineAndExit8() throws {
        let bomb = try Self.bomb()
        #expect(bomb.count < 2 << 20)
        for status in ["200 OK", "500 Internal Server Error"] {
            let listener = try HostileListener { connection, _ in
                guard HostileListener.send(connection, "HTTP/1.1 \(status)\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: \(bomb.count)\r\nConnection: close\r\n\r\n") else { return }
                _ = try? LoopbackSocket.sendAll(connection, bomb)
            }
            let douctl = Douctl()
            let result = try douctl.run(["api", "/bomb", "--api-base", listener.baseURL, "--no-retry"], timeout: 120)
            let lines = result.stderr.split(separator: "\n")
            if status.hasPrefix("200") {
                #expect(result.status == 8, "\(result)")
                #expect(result.stdout.isEmpty)
                #expect(lines.count == 1 && result.stderr.contains("refused as a decompression bomb"), "\(result.stderr)")
            } else {
                // An error reply is read to its first 64 KiB, decoded.
                #expect(result.status == 1, "\(result)")
                #expect(lines.count <= 2, "\(result.stderr.prefix(300))")
            }
        }
    }
}
