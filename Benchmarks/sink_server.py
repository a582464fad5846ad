#!/usr/bin/env python3
"""A loopback HTTP/1.1 server for douctl's benchmarks.

GET serves files from a directory (with Content-Length, via sendfile). POST and PUT read
the whole request body (Content-Length or chunked; 100-continue answered) and discard it,
then answer a small JSON reply naming how many bytes arrived, so an upload is only done
when every byte reached the server. The same server answers curl and douctl alike.

Usage: sink_server.py PORT DIRECTORY [CERT KEY]
With CERT and KEY (PEM files) it speaks HTTPS instead, for the TLS upload case.
"""
import json, os, socket, ssl, sys, threading

PORT, ROOT = int(sys.argv[1]), sys.argv[2]
TLS = None
if len(sys.argv) > 4:
    TLS = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    TLS.load_cert_chain(sys.argv[3], sys.argv[4])
BUFFER = bytearray(1 << 20)


def read_head(conn, pending):
    while b"\r\n\r\n" not in pending:
        chunk = conn.recv(65536)
        if not chunk:
            return None, b""
        pending += chunk
    head, _, rest = pending.partition(b"\r\n\r\n")
    return head.decode("latin-1"), rest


def drain(conn, rest, length):
    got = min(len(rest), length)
    view = memoryview(BUFFER)
    while got < length:
        n = conn.recv_into(view, min(len(BUFFER), length - got))
        if n == 0:
            break
        got += n
    return got, rest[min(len(rest), length):]


def read_chunked(conn, rest):
    data, total = rest, 0
    while True:
        while b"\r\n" not in data:
            data += conn.recv(65536)
        line, _, data = data.partition(b"\r\n")
        size = int(line.split(b";")[0], 16)
        if size == 0:
            while b"\r\n" not in data:
                data += conn.recv(65536)
            return total, data.partition(b"\r\n")[2]
        while len(data) < size + 2:
            data += conn.recv(1 << 20)
        total += size
        data = data[size + 2:]


def serve(conn):
    pending = b""
    if TLS is not None:
        try:
            conn = TLS.wrap_socket(conn, server_side=True)
        except (OSError, ssl.SSLError):
            conn.close()
            return
    with conn:
        while True:
            head, pending = read_head(conn, pending)
            if head is None:
                return
            lines = head.split("\r\n")
            method, target, _ = lines[0].split(" ", 2)
            headers = {k.strip().lower(): v.strip() for k, _, v in (l.partition(":") for l in lines[1:])}
            if headers.get("expect", "").lower() == "100-continue":
                conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
            if method in ("POST", "PUT"):
                if headers.get("transfer-encoding", "").lower() == "chunked":
                    size, pending = read_chunked(conn, pending)
                else:
                    size, pending = drain(conn, pending, int(headers.get("content-length", "0")))
                body = json.dumps({"received": size}).encode()
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
                continue
            path = os.path.join(ROOT, target.split("?")[0].lstrip("/"))
            if not os.path.isfile(path):
                conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                continue
            size = os.path.getsize(path)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % size)
            with open(path, "rb") as f:
                conn.sendfile(f)


listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", PORT))
listener.listen(128)
print("ready", flush=True)
while True:
    conn, _ = listener.accept()
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
