#!/usr/bin/env python3
"""A 100-page walk (issue 14): `douctl api /items --paginate` against a shell loop of 100
`curl` calls and against one `curl` given all 100 URLs (one kept-alive connection), in the
same run, against a local keep-alive server; with --latency-ms the server waits that long
before each reply, as a real network's round trip would.

Usage: Benchmarks/walk.py [--binary .build/release/douctl] [--pages 100] [--latency-ms 0] [--runs 5]
"""
import argparse, http.server, json, os, statistics, subprocess, sys, tempfile, threading, time
from urllib.parse import urlparse, parse_qs

def serve(pages, per_page, latency):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out in separate writes
        def do_GET(self):
            query = parse_qs(urlparse(self.path).query)
            start = int(query.get("start", ["0"])[0])
            count = int(query.get("count", [str(per_page)])[0])
            total = pages * per_page
            items = [{"id": i, "text": "状态 %d" % i} for i in range(start, min(start + count, total))]
            body = json.dumps(items, ensure_ascii=False).encode()
            if latency: time.sleep(latency)
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

def median_wall(command, runs, env):
    walls = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, shell=isinstance(command, str), env=env, check=True, stdout=subprocess.DEVNULL)
        walls.append(time.perf_counter() - started)
    return statistics.median(walls)

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=".build/release/douctl")
    parser.add_argument("--pages", type=int, default=100)
    parser.add_argument("--per-page", type=int, default=20)
    parser.add_argument("--latency-ms", type=float, default=0)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    server = serve(args.pages, args.per_page, args.latency_ms / 1000)
    base = "http://127.0.0.1:%d" % server.server_port
    env = dict(os.environ, DOUCTL_CONFIG_DIR=tempfile.mkdtemp(prefix="douctl-walk-"), DOUCTL_TOKEN="bench")
    urls = ["%s/items?start=%d&count=%d" % (base, page * args.per_page, args.per_page) for page in range(args.pages + 1)]
    douctl = [args.binary, "api", "/items", "-f", "count=%d" % args.per_page, "--paginate", "--api-base", base]
    loop = "for u in %s; do curl -s -H 'Authorization: Bearer bench' \"$u\"; done" % " ".join("'%s'" % u for u in urls)
    single = ["curl", "-s", "-H", "Authorization: Bearer bench"] + urls
    d = median_wall(douctl, args.runs, env)
    l = median_wall(loop, args.runs, env)
    s = median_wall(single, args.runs, env)
    print("%d-page walk, server latency %g ms: douctl %.3f s | %d curl calls %.3f s (%.2fx) | one curl, %d URLs %.3f s (%.2fx)" % (
        args.pages, args.latency_ms, d, len(urls), l, d / l, len(urls), s, d / s))
    server.shutdown()

if __name__ == "__main__":
    sys.exit(main())
