#if canImport(Glibc)
import Glibc
#endif
import DouctlJSON
import DouctlTestSupport
import Foundation
import Testing

/// An HTTPS/1.1 server with keep-alive on 127.0.0.1 (python3's ssl, the test PKI's server
/// certificate) that counts the TLS connections it accepted, for the keeper's tests:
/// `/count` says how many; `/slow` never answers; `/big?mb=N` sends N MiB; `/upload` reads
/// the body (Content-Length or chunked) and says its size and SHA-256; `/gz?enc=gzip|deflate|chunked-gzip|br|zstd|chunked-br|chunked-zstd`
/// a compressed reply, `/gz?enc=br-bomb|zstd-bomb` 256 MiB of zeros compressed; `/hostile` a 500 with terminal control sequences in its head and body;
/// `/to-elsewhere?to=URL` redirects there; anything else echoes its connection number, path
/// and Authorization. `/heads` lists every request head it was sent.
final class KeeperPeer: @unchecked Sendable {
    let peer: PythonPeer
    let base: String
    let pki: TestPKI

    init() throws {
        pki = try TestPKI.shared()
        peer = try PythonPeer(name: "keeper-peer", source: Self.source, arguments: [pki.serverCertificate, pki.serverKey])
        base = peer.base.replacingOccurrences(of: "http://127.0.0.1", with: "https://127.0.0.1")
    }

    /// A douctl with a private runtime directory (where the keeper's socket goes) and the
    /// keeper on (the test harness turns it off for every other test).
    static func douctl(idle: String = "30s", extra: [String: String] = [:]) -> Douctl {
        let runtime = TemporaryDirectory.make(prefix: "keeper-run")
        chmod(runtime, 0o700)
        return Douctl(environment: ["XDG_RUNTIME_DIR": runtime, "DOUCTL_KEEP": idle].merging(extra) { $1 })
    }

    static func socketPath(_ douctl: Douctl) -> String {
        (douctl.environment["XDG_RUNTIME_DIR"] ?? "") + "/douctl/keeper-0.1.0.sock"
    }

    /// The first call goes direct and starts the keeper: waits (generously) for its socket.
    static func startKeeper(_ douctl: Douctl, base: String, cacert: String) throws {
        let first = try douctl.run("api", base + "/warm", "--cacert", cacert)
        #expect(first.status == 0, "\(first)")
        try waitFor("the keeper's socket") { FileManager.default.fileExists(atPath: socketPath(douctl)) && (try? status(douctl)["running"]) == .bool(true) }
    }

    /// `keeper status`, as JSON (its output in a pipe).
    static func status(_ douctl: Douctl, _ arguments: [String] = []) throws -> JSON {
        try douctl.run(arguments + ["keeper", "status"]).json()
    }

    static func waitFor(_ what: String, within seconds: Double = 20, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try condition() { return }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw TestFailure("\(what): not within \(seconds)s")
    }

    func connections(_ douctl: Douctl) throws -> Int {
        // Asked with curl's semantics but not through the keeper: a run of its own, direct.
        let result = try douctl.run("api", base + "/count", "--cacert", pki.caCertificate, "--no-keep")
        return Int(try result.json()["connections"]?.scalarText ?? "") ?? -1
    }

    static let source = #"""
import hashlib, json, socket, ssl, sys, threading, time
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[1], sys.argv[2])
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", 0))
server.listen(64)
lock = threading.Lock()
state = {"connections": 0, "heads": []}
print("ready %d" % server.getsockname()[1], flush=True)

import ctypes
from ctypes import c_void_p, c_size_t, c_int, c_uint32, POINTER, byref, Structure
libraries = {}
bombs = {}

def brotli_encoder():
    if "br" not in libraries:
        br = ctypes.CDLL("libbrotlienc.so.1")
        br.BrotliEncoderCreateInstance.restype = c_void_p
        br.BrotliEncoderCreateInstance.argtypes = [c_void_p] * 3
        br.BrotliEncoderSetParameter.argtypes = [c_void_p, c_int, c_uint32]
        br.BrotliEncoderCompressStream.argtypes = [c_void_p, c_int, POINTER(c_size_t), POINTER(c_void_p), POINTER(c_size_t), POINTER(c_void_p), c_void_p]
        br.BrotliEncoderIsFinished.argtypes = [c_void_p]
        br.BrotliEncoderHasMoreOutput.argtypes = [c_void_p]
        br.BrotliEncoderDestroyInstance.argtypes = [c_void_p]
        libraries["br"] = br
    return libraries["br"]

class ZBuf(Structure):
    _fields_ = [("ptr", c_void_p), ("size", c_size_t), ("pos", c_size_t)]

def zstd_encoder():
    if "zstd" not in libraries:
        zs = ctypes.CDLL("libzstd.so.1")
        zs.ZSTD_createCStream.restype = c_void_p
        zs.ZSTD_initCStream.argtypes = [c_void_p, c_int]
        zs.ZSTD_compressStream.argtypes = [c_void_p, POINTER(ZBuf), POINTER(ZBuf)]
        zs.ZSTD_compressStream.restype = c_size_t
        zs.ZSTD_endStream.argtypes = [c_void_p, POINTER(ZBuf)]
        zs.ZSTD_endStream.restype = c_size_t
        zs.ZSTD_isError.argtypes = [c_size_t]
        zs.ZSTD_freeCStream.argtypes = [c_void_p]
        libraries["zstd"] = zs
    return libraries["zstd"]

def br_pack(chunks):
    br = brotli_encoder()
    state = br.BrotliEncoderCreateInstance(None, None, None)
    br.BrotliEncoderSetParameter(state, 1, 5)
    out, room = bytearray(), ctypes.create_string_buffer(1 << 16)
    for op, data in [(0, c) for c in chunks] + [(2, None)]:
        avail_in = c_size_t(len(data) if data is not None else 0)
        next_in = c_void_p(ctypes.addressof(data) if data is not None else None)
        while True:
            avail_out, next_out = c_size_t(len(room)), c_void_p(ctypes.addressof(room))
            if not br.BrotliEncoderCompressStream(state, op, byref(avail_in), byref(next_in), byref(avail_out), byref(next_out), None):
                raise ValueError("brotli")
            out += room.raw[:len(room) - avail_out.value]
            if op == 0 and avail_in.value == 0 and not br.BrotliEncoderHasMoreOutput(state): break
            if op == 2 and br.BrotliEncoderIsFinished(state): break
    br.BrotliEncoderDestroyInstance(state)
    return bytes(out)

def zstd_pack(chunks):
    zs = zstd_encoder()
    stream = zs.ZSTD_createCStream()
    zs.ZSTD_initCStream(stream, 3)
    out, room = bytearray(), ctypes.create_string_buffer(1 << 16)
    for data in chunks:
        source = ZBuf(ctypes.addressof(data), len(data), 0)
        while source.pos < source.size:
            target = ZBuf(ctypes.addressof(room), len(room), 0)
            if zs.ZSTD_isError(zs.ZSTD_compressStream(stream, byref(target), byref(source))): raise ValueError("zstd")
            out += room.raw[:target.pos]
    while True:
        target = ZBuf(ctypes.addressof(room), len(room), 0)
        left = zs.ZSTD_endStream(stream, byref(target))
        if zs.ZSTD_isError(left): raise ValueError("zstd")
        out += room.raw[:target.pos]
        if left == 0: break
    zs.ZSTD_freeCStream(stream)
    return bytes(out)


def reply(conn, status, body, extra=""):
    data = json.dumps(body).encode()
    conn.sendall(("HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s\r\n" % (status, len(data), extra)).encode() + data)

def serve(raw):
    with lock:
        state["connections"] += 1
        number = state["connections"]
    try:
        conn = context.wrap_socket(raw, server_side=True)
    except (OSError, ssl.SSLError):
        return
    pending = b""
    def more():
        nonlocal pending
        data = conn.recv(1 << 20)
        if not data:
            raise EOFError()
        pending += data
    try:
        while True:
            while b"\r\n\r\n" not in pending:
                more()
            head, pending = pending.split(b"\r\n\r\n", 1)
            lines = head.decode("latin-1").split("\r\n")
            method, target, _ = lines[0].split(" ", 2)
            headers = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            with lock:
                state["heads"].append(head.decode("latin-1"))
            if headers.get("expect", "").lower() == "100-continue":
                conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
            digest, size = hashlib.sha256(), 0
            if "content-length" in headers:
                length = int(headers["content-length"])
                while len(pending) < length:
                    more()
                digest.update(pending[:length]); size = length; pending = pending[length:]
            elif headers.get("transfer-encoding", "").lower() == "chunked":
                while True:
                    while b"\r\n" not in pending:
                        more()
                    line, pending = pending.split(b"\r\n", 1)
                    length = int(line.split(b";")[0], 16)
                    while len(pending) < length + 2:
                        more()
                    digest.update(pending[:length]); size += length; pending = pending[length + 2:]
                    if length == 0:
                        break
            path, _, query = target.partition("?")
            params = dict(p.split("=", 1) for p in query.split("&") if "=" in p)
            if path == "/count":
                reply(conn, "200 OK", {"connections": state["connections"]})
            elif path == "/heads":
                with lock:
                    reply(conn, "200 OK", state["heads"])
            elif path == "/slow":
                time.sleep(30)
                return
            elif path == "/big":
                total = int(params.get("mb", "1")) << 20
                conn.sendall(("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n" % total).encode())
                block = b"x" * (1 << 20)
                sent = 0
                while sent < total:
                    conn.sendall(block[:min(len(block), total - sent)])
                    sent += min(len(block), total - sent)
            elif path == "/hostile":
                # Terminal control sequences in a header and an error body, and a broken framing after.
                body = b"\x1b]0;pwned\x07\x1b[2J error \x9b31m"
                conn.sendall(b"HTTP/1.1 500 Oops\x1b[31m\r\nX-Evil: \x1b]52;c;cHduZWQ=\x07\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
            elif path == "/gz":
                # A compressed reply (asked for by api's Accept-Encoding), framed by length or
                # chunked: gzip and deflate (zlib), br and zstd (libbrotlienc and libzstd through
                # ctypes: no Python package), with 200 KB of filler for these two so the reply
                # decodes in several blocks; br-bomb and zstd-bomb are `mb` MiB of zeros (256: 405
                # bytes and 8 KB on the wire), made once.
                import zlib
                enc = params.get("enc", "gzip")
                base = enc[len("chunked-"):] if enc.startswith("chunked-") else "gzip" if enc == "chunked" else enc
                if base in ("br", "zstd"):
                    data = json.dumps({"decoded": enc, "filler": ["item %d of the filler" % i for i in range(10000)]}).encode()
                    packed = (br_pack if base == "br" else zstd_pack)([ctypes.create_string_buffer(data, len(data))])
                elif base in ("br-bomb", "zstd-bomb"):
                    size = int(params.get("mb", "256"))
                    with lock:
                        packed = bombs.get((base, size))
                        if packed is None:
                            zeros = ctypes.create_string_buffer(1 << 20)
                            packed = bombs[(base, size)] = (br_pack if base == "br-bomb" else zstd_pack)([zeros] * size)
                    base = base[:-5]
                else:
                    data = json.dumps({"decoded": enc}).encode()
                    packer = zlib.compressobj(wbits=31 if "gzip" in enc else 15)
                    packed = packer.compress(data) + packer.flush()
                if enc.startswith("chunked"):
                    conn.sendall(("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: %s\r\nTransfer-Encoding: chunked\r\n\r\n" % base).encode())
                    for i in range(0, len(packed), 7):
                        piece = packed[i:i + 7]
                        conn.sendall(b"%x\r\n" % len(piece) + piece + b"\r\n")
                    conn.sendall(b"0\r\n\r\n")
                else:
                    conn.sendall(("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: %s\r\nContent-Length: %d\r\n\r\n" % (base, len(packed))).encode() + packed)
            elif path == "/upload":
                reply(conn, "200 OK", {"bytes": size, "sha256": digest.hexdigest()})
            elif path == "/to-elsewhere":
                reply(conn, "302 Found", {}, "Location: %s\r\n" % params.get("to", "/"))
            else:
                reply(conn, "200 OK", {"connection": number, "path": path, "auth": headers.get("authorization", "")})
    except (EOFError, OSError, ssl.SSLError, ValueError):
        pass
    finally:
        try:
            conn.close()
        except OSError:
            pass

while True:
    raw, _ = server.accept()
    threading.Thread(target=serve, args=(raw,), daemon=True).start()
"""#
}
