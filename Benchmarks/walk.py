#!/usr/bin/env python3
"""A 100-page walk (issue 14): `douctl api /items --paginate` against a shell loop of 100
`curl` calls and against one `curl` given all 100 URLs (one kept-alive connection), in the
same run, against a local keep-alive server; with --latency-ms the server waits that long
before each reply, as a real network's round trip would.

With --total the pages are Douban's `{"start","count","total","items"}` objects, so douctl
fetches them --parallel N at a time (issue 23; default 4); without, bare arrays that give no
total, walked one page at a time.

Usage: Benchmarks/walk.py [--binary .build/release/douctl] [--pages 100] [--latency-ms 0] [--runs 11]
                          [--total] [--parallel N]
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, time
from urllib.parse import urlparse, parse_qs
from json_server import serve_json

def serve(pages, per_page, latency, total=False):
    """Pages of `per_page` items (Douban's start/count), `pages` of them in all; with `total`
    each page is an object that says how many items there are."""
    def reply(path):
        query = parse_qs(urlparse(path).query)
        start = int(query.get("start", ["0"])[0])
        count = int(query.get("count", [str(per_page)])[0])
        items = [{"id": i, "text": "状态 %d" % i} for i in range(start, min(start + count, pages * per_page))]
        if total:
            items = {"start": start, "count": count, "total": pages * per_page, "items": items}
        return json.dumps(items, ensure_ascii=False).encode()
    return serve_json(reply, latency)

def wall(command, env):
    started = time.perf_counter()
    subprocess.run(command, shell=isinstance(command, str), env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started

def alternating_medians(commands, runs, env):
    """Runs the commands in turn, `runs` rounds, so drift in the machine's load hits all alike;
    returns each one's median wall time and, per round, the first one's ratio to the others."""
    walls = [[] for _ in commands]
    for _ in range(runs):
        for index, command in enumerate(commands):
            walls[index].append(wall(command, env))
    ratios = [sorted(a / b for a, b in zip(walls[0], other)) for other in walls[1:]]
    return [statistics.median(w) for w in walls], ratios

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=".build/release/douctl")
    parser.add_argument("--pages", type=int, default=100)
    parser.add_argument("--per-page", type=int, default=20)
    parser.add_argument("--latency-ms", type=float, default=0)
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--total", action="store_true", help="pages give the total: douctl may fetch them in parallel")
    parser.add_argument("--parallel", type=int, default=None, help="douctl's --parallel (its default: 4)")
    args = parser.parse_args()
    server = serve(args.pages, args.per_page, args.latency_ms / 1000, args.total)
    base = "http://127.0.0.1:%d" % server.server_port
    env = dict(os.environ, DOUCTL_CONFIG_DIR=tempfile.mkdtemp(prefix="douctl-walk-"), DOUCTL_TOKEN="bench")
    # Without a total a walk ends at the empty page after the last; with one, at the last.
    urls = ["%s/items?start=%d&count=%d" % (base, page * args.per_page, args.per_page)
            for page in range(args.pages if args.total else args.pages + 1)]
    douctl = [args.binary, "api", "/items", "-f", "count=%d" % args.per_page, "--paginate", "--api-base", base]
    if args.parallel is not None:
        douctl += ["--parallel", str(args.parallel)]
    loop = "for u in %s; do curl -s -H 'Authorization: Bearer bench' \"$u\"; done" % " ".join("'%s'" % u for u in urls)
    single = ["curl", "-s", "-H", "Authorization: Bearer bench"] + urls
    (d, l, s), (vs_loop, vs_single) = alternating_medians([douctl, loop, single], args.runs, env)
    print("%d-page walk, server latency %g ms, %d rounds: douctl %.3f s | %d curl calls %.3f s (%.2fx) | "
          "one curl, %d URLs %.3f s (%.2fx; per round %.2f-%.2fx, median %.2fx)" % (
        args.pages, args.latency_ms, args.runs, d, len(urls), l, d / l, len(urls), s, d / s,
        vs_single[0], vs_single[-1], statistics.median(vs_single)))
    server.shutdown()

if __name__ == "__main__":
    sys.exit(main())
