#!/usr/bin/env python3
"""Request-shaping figures (issue 12), each against a local server on 127.0.0.1:

  1. cache hit vs network call: median wall time of `douctl api /x --cache 1h` served
     from the cache vs the same call going to a server that answers after LATENCY ms;
  2. the client-side rate limit: P processes share `rate_limit` N/min; the server records
     when each request arrives, and the script reports the most requests seen in any
     60-second window (goal: N, within one).

Usage: Benchmarks/shaping.py [--binary .build/release/douctl] [--latency-ms 20]
                             [--quota 40] [--processes 4] [--requests 60]
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, threading, time
from json_server import serve_json

def serve(latency):
    """A small JSON reply after `latency` seconds; returns the server and the arrival times."""
    arrivals = []
    server = serve_json(lambda path: b'{"id":"1","uid":"ahbei","name":"x"}', latency, lambda: arrivals.append(time.time()))
    return server, arrivals

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=".build/release/douctl")
    parser.add_argument("--latency-ms", type=float, default=20)
    parser.add_argument("--quota", type=int, default=40)
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--requests", type=int, default=60)
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    server, arrivals = serve(args.latency_ms / 1000)
    base = f"http://127.0.0.1:{server.server_port}"
    home = tempfile.mkdtemp(prefix="douctl-bench-")
    env = dict(os.environ, DOUCTL_CONFIG_DIR=home + "/config", XDG_CACHE_HOME=home + "/cache", DOUCTL_TOKEN="bench")

    def run(*extra):
        started = time.perf_counter()
        subprocess.run([args.binary, "api", "/x", "--api-base", base, *extra], env=env, check=True, stdout=subprocess.DEVNULL)
        return time.perf_counter() - started

    run("--cache", "1h")  # warm
    network = statistics.median(run() for _ in range(args.runs))
    hit = statistics.median(run("--cache", "1h") for _ in range(args.runs))
    print(f"cache: network call {network*1000:.1f} ms (server latency {args.latency_ms:.0f} ms), "
          f"cache hit {hit*1000:.1f} ms, ratio {hit/network:.2f}x (median of {args.runs})")

    subprocess.run([args.binary, "profile", "add", "quota", "--preset", "douban", "--api-base", base,
                    "--rate-limit", f"{args.quota}/min"], env=env, check=True, stdout=subprocess.DEVNULL)
    arrivals.clear()
    each = args.requests // args.processes
    def worker():
        for _ in range(each):
            subprocess.run([args.binary, "--profile", "quota", "api", "/x"], env=env, check=True, stdout=subprocess.DEVNULL)
    started = time.time()
    threads = [threading.Thread(target=worker) for _ in range(args.processes)]
    for thread in threads: thread.start()
    for thread in threads: thread.join()
    times = sorted(arrivals)
    busiest = max(sum(1 for t in times[i:] if t < start + 60) for i, start in enumerate(times))
    print(f"rate limit {args.quota}/min, {args.processes} processes, {len(times)} requests in {time.time()-started:.1f} s: "
          f"at most {busiest} in any 60 s window (goal {args.quota}, within 1)")
    server.shutdown()

if __name__ == "__main__":
    sys.exit(main())
