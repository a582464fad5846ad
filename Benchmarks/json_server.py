"""A keep-alive JSON server on 127.0.0.1 for the benchmarks: `reply(path)` gives each GET's
body (bytes); with `latency` seconds every reply waits that long first, as a network's round
trip would; `arrived`, when given, is called as each request comes in."""
import http.server, threading, time


def serve_json(reply, latency=0.0, arrived=None):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out in separate writes

        def do_GET(self):
            if arrived:
                arrived()
            body = reply(self.path)
            if latency:
                time.sleep(latency)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
