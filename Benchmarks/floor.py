#!/usr/bin/env python3
"""A small request beside the floor program, in figures the machine's load does not move:
instructions executed (callgrind, the whole process with the loader and libcurl), system calls
(strace -c, when strace is installed), peak RSS and
minor page faults (medians of repeated runs, from /usr/bin/time), and what is resident at exit
in the executable's own mappings and the heap (smaps, read by a preloaded library as the
process exits). Wall time is Benchmarks/run.py's business; these are what explain it. The
same reply over TLS too: a call through the connection keeper (issue 44), a direct one, curl.

Usage: Benchmarks/floor.py [--binary PATH] [--runs N] [--no-callgrind]
Needs: valgrind (unless --no-callgrind), /usr/bin/time, cc or clang, swiftc, openssl. Uses the release
build (`swift build -c release --disable-local-rpath --product douctl`, as scripts/install.sh
builds it: SwiftPM's $ORIGIN RUNPATH otherwise adds 22 failed openat for libm and libc) unless
--binary names another.
"""
import argparse, collections, os, re, shutil, ssl, statistics, subprocess, sys, tempfile, time
from json_server import serve_json

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORK = os.path.join(ROOT, "Benchmarks", "work")
SMALL = b'{"id":"1000001","uid":"ahbei","name":"\xe9\x98\xbf\xe5\x8c\x97","alt":"http:\\/\\/www.douban.com\\/people\\/ahbei\\/"}'


def build(source, output, command):
    if not (os.path.exists(output) and os.path.getmtime(output) >= os.path.getmtime(source)):
        subprocess.run(command, check=True)
    return output


def time_runs(argv, runs, env):
    """Median peak RSS (KiB) and minor faults over `runs` runs."""
    rss, faults = [], []
    for _ in range(runs):
        done = subprocess.run(["/usr/bin/time", "-f", "%M %R"] + argv, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, env=env)
        kib, minor = done.stderr.strip().splitlines()[-1].split()
        rss.append(int(kib))
        faults.append(int(minor))
    return statistics.median(rss), statistics.median(faults)


def instructions(argv, env):
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"] + argv,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    found = re.search(r"Collected : (\d+)", done.stderr)
    return int(found.group(1)) if found else None


def syscalls(argv, env):
    """System calls made (strace -f -c's total; None without strace): what the loader's
    searches, the configuration reads and the transfer cost in kernel entries."""
    if not shutil.which("strace"):
        return None
    with tempfile.NamedTemporaryFile(mode="r", suffix=".strace") as out:
        subprocess.run(["strace", "-f", "-c", "-o", out.name] + argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        found = re.search(r"^100\.00\s+\S+\s+\S+\s+(\d+)", out.read(), re.M)
    return int(found.group(1)) if found else None


def resident(argv, env, preload):
    """KiB resident at exit: the executable's own mappings by permission, and the heap."""
    out = os.path.join(WORK, "smaps-at-exit.txt")
    if os.path.exists(out):
        os.unlink(out)  # so a run that wrote none shows as none, not as the one before
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env=dict(env, LD_PRELOAD=preload, SMAPS_OUT=out))
    image = os.path.realpath(argv[0])
    totals, mapping = collections.Counter(), None
    if not os.path.exists(out):
        return totals
    with open(out) as f:
        for line in f:
            head = re.match(r"^[0-9a-f]+-[0-9a-f]+ (\S+) \S+ \S+ \S+\s*(.*)$", line)
            if head:
                path = head.group(2).strip()
                mapping = ("exe " + head.group(1)) if path == image else ("heap" if path == "[heap]" else "other")
            elif line.startswith("Rss:"):
                totals[mapping] += int(line.split()[1])
    return totals


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=os.path.join(ROOT, ".build", "release", "douctl"))
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--no-callgrind", action="store_true")
    options = parser.parse_args()
    os.makedirs(WORK, exist_ok=True)
    compiler = shutil.which("clang") or shutil.which("cc")
    preload = build(os.path.join(ROOT, "Benchmarks", "smaps_at_exit.c"), os.path.join(WORK, "smaps-at-exit.so"),
                    [compiler, "-O2", "-shared", "-fPIC", "-o", os.path.join(WORK, "smaps-at-exit.so"),
                     os.path.join(ROOT, "Benchmarks", "smaps_at_exit.c"), "-ldl"])
    floor = build(os.path.join(ROOT, "Benchmarks", "floor.swift"), os.path.join(WORK, "floor"),
                  ["swiftc", "-O", "-static-stdlib", "-o", os.path.join(WORK, "floor"), os.path.join(ROOT, "Benchmarks", "floor.swift")])
    server = serve_json(lambda path: SMALL)
    base = "http://127.0.0.1:%d" % server.server_port
    env = dict(os.environ, DOUCTL_CONFIG_DIR=tempfile.mkdtemp(prefix="douctl-floor-"), DOUCTL_KEEP="0")
    # Issue 44: the same reply over TLS, and a call through the connection keeper (which
    # holds the TLS connection, so the call does no TLS itself) beside a direct one and curl.
    cert, key = os.path.join(WORK, "tls-cert.pem"), os.path.join(WORK, "tls-key.pem")
    if not os.path.exists(cert):
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                        "-keyout", key, "-out", cert, "-days", "3650", "-subj", "/CN=127.0.0.1",
                        "-addext", "subjectAltName=IP:127.0.0.1"], check=True, stderr=subprocess.DEVNULL)
    tls_server = serve_json(lambda path: SMALL)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    tls_server.socket = context.wrap_socket(tls_server.socket, server_side=True)
    tls_base = "https://127.0.0.1:%d" % tls_server.server_port
    runtime = tempfile.mkdtemp(prefix="douctl-floor-run-")
    keep_env = dict(env, XDG_RUNTIME_DIR=runtime, DOUCTL_KEEP="5m")
    tls_call = [options.binary, "api", "/small.json", "--api-base", tls_base, "--cacert", cert]
    subprocess.run(tls_call, env=keep_env, stdout=subprocess.DEVNULL, check=True)  # starts the keeper
    for _ in range(100):
        folder = os.path.join(runtime, "douctl")  # made by the detached keeper, maybe not yet
        if os.path.isdir(folder) and any(name.endswith(".sock") for name in os.listdir(folder)):
            break
        time.sleep(0.05)
    cases = [
        ("floor program, small GET", [floor, base + "/small.json"], env),
        ("douctl api, small GET", [options.binary, "api", "/small.json", "--api-base", base], env),
        ("douctl --version", [options.binary, "--version"], env),
        ("curl -s, small GET", ["curl", "-s", base + "/small.json"], env),
        ("curl --version", ["curl", "--version"], env),
        ("douctl api, small GET over TLS through the keeper", tls_call, keep_env),
        ("douctl api, small GET over TLS, direct", tls_call, env),
        ("curl -s, small GET over TLS", ["curl", "-s", "--cacert", cert, tls_base + "/small.json"], env),
    ]
    print("binary: %s, %.1f MB" % (options.binary, os.path.getsize(options.binary) / 1e6))
    print("| case | instructions | system calls | peak RSS | minor faults | executable resident r-x / r-- / rw- | heap |")
    print("|---|---|---|---|---|---|---|")
    for name, argv, env in cases:
        rss, faults = time_runs(argv, options.runs, env)
        count = None if options.no_callgrind else instructions(argv, env)
        calls = syscalls(argv, env)
        where = resident(argv, env, preload) if not argv[0] == "curl" else collections.Counter()
        exe = " / ".join("%.2f" % (where["exe " + p] / 1024) for p in ("r-xp", "r--p", "rw-p")) + " MiB" if where else "-"
        print("| %s | %s | %s | %.2f MiB | %d | %s | %s |" % (
            name, "{:,}".format(count) if count else "-", calls if calls else "-", rss / 1024, faults, exe,
            "%.2f MiB" % (where["heap"] / 1024) if where else "-"), flush=True)
    subprocess.run([options.binary, "keeper", "stop"], env=keep_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    shutil.rmtree(runtime, ignore_errors=True)
    server.shutdown()
    tls_server.shutdown()


if __name__ == "__main__":
    main()
