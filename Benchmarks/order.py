#!/usr/bin/env python3
"""Regenerates Benchmarks/douctl.order: the functions a release douctl runs for a small request,
`--version`, a usage error and the streamed reformatter, hottest first, one symbol per line.

The release link (Package.swift) hands this list to lld (`--symbol-ordering-file`), which
places those functions side by side at the start of .text. Without it the ~1,100 functions a
small GET runs (~0.5 MB of code) lie scattered over 7 MB, and since the kernel maps a file's
pages 64 KiB at a time around each fault, most of .text ended up resident: ~5 MiB of the
4.5 MiB by which a small GET's RSS exceeded the floor program's. A stale list costs nothing
but that saving: names no longer in the binary are skipped (`--no-warn-symbol-ordering`).

Usage: Benchmarks/order.py [--check]
Needs valgrind (callgrind counts which functions ran, without timing anything) and a
release build (`swift build -c release --product douctl`). --check prints how many of the
functions that run now are missing from the checked-in list, and changes nothing.
"""
import os, re, subprocess, sys, tempfile
from json_server import serve_json

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOUCTL = os.path.join(ROOT, ".build", "release", "douctl")
ORDER = os.path.join(ROOT, "Benchmarks", "douctl.order")

SMALL = b'{"id":"1000001","uid":"ahbei","name":"\xe9\x98\xbf\xe5\x8c\x97","alt":"http:\\/\\/www.douban.com\\/people\\/ahbei\\/"}'
# A reply big enough to go through the streamed reformatter (an array past the first buffer).
ARRAY = b"[" + b",".join(SMALL for _ in range(4000)) + b"]"


def functions_run(argv, env):
    """{symbol: instructions} of the functions in douctl's own image that ran (self cost)."""
    with tempfile.NamedTemporaryFile(suffix=".callgrind") as out:
        subprocess.run(["valgrind", "--tool=callgrind", "--demangle=no", "--callgrind-out-file=" + out.name] + argv,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        report = subprocess.run(["callgrind_annotate", "--threshold=100", out.name],
                                capture_output=True, text=True).stdout
    image = os.path.realpath(DOUCTL)
    costs = {}
    for line in report.splitlines():
        match = re.match(r"\s*([\d,]+) .*?:(\S+?)(?:'\d+)? \[(.*)\]\s*$", line)
        if match and os.path.realpath(match.group(3)) == image and not match.group(2).startswith("0x"):
            costs[match.group(2)] = costs.get(match.group(2), 0) + int(match.group(1).replace(",", ""))
    return costs


def main():
    if not os.path.exists(DOUCTL):
        sys.exit("build first: swift build -c release --product douctl")
    server = serve_json(lambda path: ARRAY if path.startswith("/array") else SMALL)
    base = "http://127.0.0.1:%d" % server.server_port
    env = dict(os.environ, DOUCTL_CONFIG_DIR=tempfile.mkdtemp(prefix="douctl-order-"), HOME=tempfile.mkdtemp(prefix="douctl-order-home-"))
    runs = [  # the most common first: its functions go first
        ["api", "/small.json", "--api-base", base],
        ["--version"],
        ["api", "/small.json", "--api-base", base, "--raw"],
        ["api", "/array.json", "--api-base", base, "--pretty"],
        ["api", "/array.json", "--api-base", base, "--compact"],
        ["api", "/small.json", "--no-such-option"],
    ]
    order, seen = [], set()
    for arguments in runs:
        costs = functions_run([DOUCTL] + arguments, env)
        for name in sorted(costs, key=lambda n: -costs[n]):
            if name not in seen:
                seen.add(name)
                order.append(name)
        print("%-60s %5d functions (%d new)" % (" ".join(arguments)[:60], len(costs), len(order)), file=sys.stderr)
    server.shutdown()
    if "--check" in sys.argv:
        existing = set(open(ORDER).read().split()) if os.path.exists(ORDER) else set()
        missing = [n for n in order if n not in existing]
        print("%d of %d functions run are missing from %s" % (len(missing), len(order), os.path.relpath(ORDER, ROOT)))
        return
    with open(ORDER, "w") as f:
        f.write("\n".join(order) + "\n")
    print("wrote %d symbols to %s" % (len(order), os.path.relpath(ORDER, ROOT)))


if __name__ == "__main__":
    main()
