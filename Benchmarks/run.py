#!/usr/bin/env python3
"""douctl's benchmarks: each case against curl (and jq) in the same run.

Reports medians of repeated runs (wall time) and the largest peak RSS seen (ru_maxrss of
the waited process, which includes the children a shell pipeline waited for), as a
Markdown table. Not a test: nothing here asserts; the goals are printed beside the ratios.

Usage: Benchmarks/run.py [--quick] [--only NAME,...]
Needs: swift, curl, jq, python3, openssl. Builds douctl in release mode first.
"""
import argparse, os, shutil, signal, socket, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORK = os.path.join(ROOT, "Benchmarks", "work")
DOUCTL = os.path.join(ROOT, ".build", "release", "douctl")
GiB, MiB = 1 << 30, 1 << 20


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure(command, runs, env=None):
    """Median wall seconds and max peak RSS (MiB) over `runs` runs of `command` (a list of
    arguments, or a string for the shell when it needs pipes and loops)."""
    shell = isinstance(command, str)
    walls, peaks = [], []
    for _ in range(runs):
        started = time.perf_counter()
        process = subprocess.Popen(command, shell=shell, executable="/bin/bash" if shell else None,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        _, status, usage = os.wait4(process.pid, 0)
        walls.append(time.perf_counter() - started)
        peaks.append(usage.ru_maxrss / 1024)
        if status != 0:
            sys.exit("benchmark command failed (%s): %s\n%s" % (status, command, process.stderr.read().decode()))
    return statistics.median(walls), max(peaks)


def make_file(path, size):
    if os.path.exists(path) and os.path.getsize(path) == size:
        return path
    block = os.urandom(MiB)
    with open(path, "wb") as f:
        written = 0
        while written < size:
            n = min(MiB, size - written)
            f.write(block[:n])
            written += n
    return path


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer runs, smaller files")
    parser.add_argument("--only", default="", help="comma-separated case names")
    options = parser.parse_args()
    only = set(filter(None, options.only.split(",")))
    runs = 3 if options.quick else 5
    big = 256 * MiB if options.quick else GiB

    subprocess.run(["swift", "build", "-c", "release", "--product", "douctl"], cwd=ROOT, check=True)
    os.makedirs(WORK, exist_ok=True)
    www = os.path.join(WORK, "www")
    os.makedirs(www, exist_ok=True)
    with open(os.path.join(www, "small.json"), "w") as f:
        f.write('{"id":"1000001","uid":"ahbei","name":"阿北","alt":"http:\\/\\/www.douban.com\\/people\\/ahbei\\/"}')
    big_json = os.path.join(www, "big.json")
    if not os.path.exists(big_json):
        subprocess.run([sys.executable, os.path.join(ROOT, "Benchmarks", "make-json.py"), "50", big_json], check=True)

    port = free_port()
    server = subprocess.Popen([sys.executable, os.path.join(ROOT, "Benchmarks", "sink_server.py"), str(port), www], stdout=subprocess.PIPE)
    server.stdout.readline()
    base = "http://127.0.0.1:%d" % port
    # The same sink behind TLS (python's ssl), with a self-signed certificate both clients trust.
    cert, key = os.path.join(WORK, "tls-cert.pem"), os.path.join(WORK, "tls-key.pem")
    if not os.path.exists(cert):
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                        "-keyout", key, "-out", cert, "-days", "3650", "-subj", "/CN=127.0.0.1",
                        "-addext", "subjectAltName=IP:127.0.0.1"], check=True, stderr=subprocess.DEVNULL)
    tls_port = free_port()
    tls_server = subprocess.Popen([sys.executable, os.path.join(ROOT, "Benchmarks", "sink_server.py"), str(tls_port), www, cert, key], stdout=subprocess.PIPE)
    tls_server.stdout.readline()
    tls_base = "https://127.0.0.1:%d" % tls_port
    config = tempfile.mkdtemp(prefix="douctl-bench-")
    env = dict(os.environ, DOUCTL_CONFIG_DIR=config)
    rows = []

    def case(name, goal, douctl, curl, runs=runs, ratio_goal=None, rss_goal=None):
        if only and name not in only:
            return None
        d_wall, d_rss = measure(douctl, runs, env)
        c_wall, c_rss = measure(curl, runs, env) if curl else (None, None)
        ratio = d_wall / c_wall if c_wall else None
        verdict = []
        if ratio_goal is not None and ratio is not None:
            verdict.append("ok" if ratio <= ratio_goal else "MISSED")
        if rss_goal is not None:
            verdict.append("ok" if d_rss <= rss_goal else "MISSED")
        rows.append((name, d_wall, c_wall, ratio, d_rss, c_rss, goal, " ".join(verdict)))
        print("%-28s douctl %.4fs %.1f MiB | other %s | ratio %s" % (
            name, d_wall, d_rss, "%.4fs %.1f MiB" % (c_wall, c_rss) if c_wall else "-", "%.2f" % ratio if ratio else "-"), flush=True)
        return d_wall, d_rss

    try:
        case("version", "<= 0.7x curl", [DOUCTL, "--version"], ["curl", "--version"], runs=30, ratio_goal=0.7)
        case("api GET small JSON", "<= 1.3x curl -s", [DOUCTL, "api", "/small.json", "--api-base", base],
             ["curl", "-s", base + "/small.json"], runs=30, ratio_goal=1.3)
        payload = make_file(os.path.join(WORK, "upload-%d.bin" % big), big)
        case("api -F 1 GiB multipart" if big == GiB else "api -F multipart", "<= 1.1x curl -F, RSS <= 32 MiB",
             [DOUCTL, "api", "/upload", "--attach", "file=" + payload, "--api-base", base],
             ["curl", "-s", "-F", "file=@" + payload, base + "/upload"], ratio_goal=1.1, rss_goal=32)
        case("pretty-print 50 MB reply", "<= 1.0x curl | jq .",
             "%s api /big.json --api-base %s --pretty > /dev/null" % (DOUCTL, base),
             "curl -s %s/big.json | jq . > /dev/null" % base, ratio_goal=1.0)
        case("upload 1 GiB" if big == GiB else "upload big file", "<= 1.1x curl -F, RSS <= 32 MiB",
             [DOUCTL, "upload", payload, "--to", "/upload", "--field", "image", "--api-base", base],
             ["curl", "-s", "-F", "image=@" + payload, base + "/upload"], ratio_goal=1.1, rss_goal=32)
        case("upload over HTTPS" + (" 1 GiB" if big == GiB else ""), "<= 1.1x curl -F, RSS <= 32 MiB",
             [DOUCTL, "upload", payload, "--to", "/upload", "--field", "image", "--api-base", tls_base, "--cacert", cert],
             ["curl", "-s", "--cacert", cert, "-F", "image=@" + payload, tls_base + "/upload"], ratio_goal=1.1, rss_goal=32)
        hundred = make_file(os.path.join(WORK, "upload-100m.bin"), 100 * MiB)
        case("upload 100 MB", "same RSS as 1 GiB",
             [DOUCTL, "upload", hundred, "--to", "/upload", "--field", "image", "--api-base", base],
             ["curl", "-s", "-F", "image=@" + hundred, base + "/upload"], rss_goal=32)
        files = [make_file(os.path.join(WORK, "part-%02d.bin" % i), 8 * MiB) for i in range(64)]
        case("upload --parallel 8, 64 x 8 MB", "speed-up vs 64 sequential curl -F",
             [DOUCTL, "upload", "--parallel", "8", "--to", "/upload", "--field", "image", "--api-base", base] + files,
             "for f in %s; do curl -s -F image=@$f %s/upload > /dev/null; done" % (" ".join(files), base),
             runs=3)
        if not only or "timeline --all 10,000" in only:
            sandbox = subprocess.Popen([DOUCTL, "sandbox", "--seed", "10000"], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            sandbox.stdout.readline()
            subprocess.run([DOUCTL, "--profile", "sandbox", "auth", "login", "--device", "--no-browser"], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            case("timeline --all 10,000", "RSS flat, <= 48 MiB",
                 [DOUCTL, "--profile", "sandbox", "shuo", "timeline", "--user", "ahbei", "--count", "200", "--all"], None,
                 rss_goal=48)
            sandbox.send_signal(signal.SIGINT)
            sandbox.wait()
    finally:
        server.kill()
        tls_server.kill()
        shutil.rmtree(config, ignore_errors=True)

    print("\n| case | douctl | curl (or curl \\| jq) | ratio | douctl peak RSS | curl peak RSS | goal | result |")
    print("|---|---|---|---|---|---|---|---|")
    for name, d_wall, c_wall, ratio, d_rss, c_rss, goal, verdict in rows:
        print("| %s | %.3f s | %s | %s | %.1f MiB | %s | %s | %s |" % (
            name, d_wall, "%.3f s" % c_wall if c_wall else "-", "%.2fx" % ratio if ratio else "-",
            d_rss, "%.1f MiB" % c_rss if c_rss else "-", goal, verdict))


if __name__ == "__main__":
    main()
