#!/usr/bin/env python3
"""douctl's benchmarks: each case against curl (and jq) in the same run.

Reports medians of repeated runs (wall time) and the largest peak RSS seen (ru_maxrss of
the waited process, which includes the children a shell pipeline waited for), as a
Markdown table. Not a test: nothing here asserts; the goals are printed beside the ratios.

Usage: Benchmarks/run.py [--quick] [--only NAME,...] [--douctl PATH]
--douctl runs another build of douctl (an earlier one, to compare) instead of building this one.
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


PEAK_RSS = os.path.join(WORK, "peak-rss")
# CPU seconds (user + system) of the last run_once, and the medians of both commands' in the
# last measure_pairs: on a loaded machine they move less than wall time (issue 44).
LAST_CPU, PAIR_CPU = 0.0, None


def build_launcher():
    """Benchmarks/peak_rss.c, built with the Swift toolchain's clang (or cc)."""
    source = os.path.join(ROOT, "Benchmarks", "peak_rss.c")
    if os.path.exists(PEAK_RSS) and os.path.getmtime(PEAK_RSS) >= os.path.getmtime(source):
        return
    compiler = shutil.which("clang") or shutil.which("cc")
    if not compiler:
        sys.exit("Benchmarks/run.py needs clang or cc to build Benchmarks/peak_rss.c")
    subprocess.run([compiler, "-O2", "-o", PEAK_RSS, source], check=True)


def build_floor():
    """Benchmarks/floor.swift: the least a Swift program can do to GET with libcurl."""
    source, binary = os.path.join(ROOT, "Benchmarks", "floor.swift"), os.path.join(WORK, "floor")
    if not (os.path.exists(binary) and os.path.getmtime(binary) >= os.path.getmtime(source)):
        subprocess.run(["swiftc", "-O", "-static-stdlib", "-o", binary, source], check=True)
    return binary


def run_once(command, env=None):
    """(wall seconds, peak RSS MiB) of one run, timed and measured by the peak-rss launcher."""
    shell = isinstance(command, str)
    argv = ["/bin/bash", "-c", command] if shell else command
    result = os.path.join(WORK, "peak-rss.out")
    process = subprocess.run([PEAK_RSS, result] + argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    if process.returncode != 0:
        sys.exit("benchmark command failed (%s): %s\n%s" % (process.returncode, command, process.stderr.decode()))
    global LAST_CPU
    with open(result) as f:
        nanoseconds, kib, microseconds = f.read().split()[:3]
    LAST_CPU = int(microseconds) / 1e6
    return int(nanoseconds) / 1e9, int(kib) / 1024


def measure(command, runs, env=None):
    """Median wall seconds and max peak RSS (MiB) over `runs` runs of `command` (a list of
    arguments, or a string for the shell when it needs pipes and loops)."""
    samples = [run_once(command, env) for _ in range(runs)]
    return statistics.median(s[0] for s in samples), max(s[1] for s in samples)


def measure_pairs(first, second, pairs, env=None):
    """Alternating runs of two commands, so drift in the machine's load hits both alike.
    Returns each one's (median wall, max RSS) and the range of the per-pair ratios."""
    global PAIR_CPU
    a, b, cpu_a, cpu_b = [], [], [], []
    for _ in range(pairs):
        a.append(run_once(first, env))
        cpu_a.append(LAST_CPU)
        b.append(run_once(second, env))
        cpu_b.append(LAST_CPU)
    PAIR_CPU = (statistics.median(cpu_a), statistics.median(cpu_b))
    ratios = sorted(x[0] / y[0] for x, y in zip(a, b))
    return ((statistics.median(x[0] for x in a), max(x[1] for x in a)),
            (statistics.median(y[0] for y in b), max(y[1] for y in b)),
            (ratios[0], ratios[-1]))


def start_nginx(www, cert, key):
    """A loopback nginx serving `www` over HTTP/1.1 and over TLS with HTTP/2 (ALPN), or None
    when nginx is not installed. Small requests are measured against it: a Python server's
    own latency would hide the clients' start-up cost."""
    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)
    if not nginx:
        return None
    prefix = os.path.join(WORK, "nginx")
    os.makedirs(prefix, exist_ok=True)
    http_port, h2_port, gzip_port = free_port(), free_port(), free_port()
    config = os.path.join(prefix, "nginx.conf")
    with open(config, "w") as f:
        f.write("""worker_processes 1; daemon off; pid %(p)s/nginx.pid; error_log %(p)s/error.log;
events { worker_connections 128; }
http { access_log off; default_type application/json;
  client_body_temp_path %(p)s/body; proxy_temp_path %(p)s/proxy; fastcgi_temp_path %(p)s/fastcgi;
  uwsgi_temp_path %(p)s/uwsgi; scgi_temp_path %(p)s/scgi;
  server { listen 127.0.0.1:%(http)d; root %(www)s; }
  server { listen 127.0.0.1:%(h2)d ssl http2; root %(www)s;
           ssl_certificate %(cert)s; ssl_certificate_key %(key)s; }
  log_format sent '$body_bytes_sent';
  server { listen 127.0.0.1:%(gzip)d; root %(www)s; access_log %(p)s/gzip.log sent;
           gzip on; gzip_types application/json; } }
""" % {"p": prefix, "http": http_port, "h2": h2_port, "gzip": gzip_port, "www": www, "cert": cert, "key": key})
    process = subprocess.Popen([nginx, "-p", prefix, "-c", config], stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", h2_port), timeout=0.1).close()
            break
        except OSError:
            time.sleep(0.05)
    # The fourth: the same files with `gzip on` (level 1, nginx's default), each reply's
    # body bytes sent logged to gzip.log (issue 34: bytes on the wire).
    return ("http://127.0.0.1:%d" % http_port, "https://127.0.0.1:%d" % h2_port, process,
            "http://127.0.0.1:%d" % gzip_port, os.path.join(prefix, "gzip.log"))


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


def make_big_array(path, source, size):
    """One JSON array of about `size` bytes: the elements of `source` (a JSON array)
    repeated, so it is as realistic as make-json.py's output without generating 1 GiB."""
    if os.path.exists(path) and abs(os.path.getsize(path) - size) < 64 * MiB:
        return path
    with open(source, "rb") as f:
        inner = f.read().strip()[1:-1]
    with open(path, "wb") as f:
        f.write(b"[")
        written = 1
        while written + len(inner) + 2 <= size or written == 1:
            if written > 1:
                f.write(b",")
            f.write(inner)
            written += len(inner) + 1
        f.write(b"]")
    return path


def make_big_envelope(path, array):
    """A Coding-style envelope around the 1 GiB array: {"code":0,"msg":"ok","data":[...]}."""
    if os.path.exists(path) and os.path.getsize(path) > os.path.getsize(array):
        return path
    with open(array, "rb") as source, open(path, "wb") as f:
        f.write(b'{"code":0,"msg":"ok","data":')
        while True:
            block = source.read(8 * MiB)
            if not block:
                break
            f.write(block)
        f.write(b'}')
    return path


def start_keeper_behind_relay(env, port, delay, cert, prefix):
    """A delaying relay in front of the TLS server on `port`, a private runtime directory, and
    the first douctl call through the relay, which starts the keeper (its socket waited for).
    Returns (relay, runtime, the keeper's environment, the relay's base URL, the douctl call)."""
    relay_port = free_port()
    relay = subprocess.Popen([sys.executable, os.path.join(ROOT, "Benchmarks", "delay_relay.py"), str(relay_port), str(port), str(delay)],
                             stdout=subprocess.PIPE)
    relay.stdout.readline()
    runtime = tempfile.mkdtemp(prefix=prefix)
    keep_env = dict(env, XDG_RUNTIME_DIR=runtime, DOUCTL_KEEP="5m")
    far = "https://127.0.0.1:%d" % relay_port
    douctl_call = [DOUCTL, "api", "/small.json", "--api-base", far, "--cacert", cert]
    try:
        subprocess.run(douctl_call, env=keep_env, stdout=subprocess.DEVNULL, check=True)
    except BaseException:
        relay.kill()
        shutil.rmtree(runtime, ignore_errors=True)
        raise
    for _ in range(100):
        if os.path.exists(os.path.join(runtime, "douctl", "keeper-%s.sock" % douctl_version())):
            break
        time.sleep(0.05)
    return relay, runtime, keep_env, far, douctl_call


def keeper_cases(rows, env, www, cert, tls_port, h2_base, only):
    """Issue 44: 100 sequential `douctl api` calls through the connection keeper against 100
    sequential curl calls, in front of a loopback TLS server behind a relay holding each
    direction DELAY ms (Benchmarks/delay_relay.py: one round trip is 2 x DELAY); then, per
    call, douctl's time after the first against one round trip plus the server's time; and
    on loopback without the relay, a call through the keeper against a direct one."""
    delay = 22
    relay, runtime, keep_env, far, douctl_call = start_keeper_behind_relay(env, tls_port, delay, cert, "douctl-keeper-run-")
    try:
        loop = "for i in $(seq 100); do %s > /dev/null; done"
        name = "keeper: 100 calls, RTT %d ms" % (2 * delay)
        if not only or name in only or "keeper" in only:
            (d_wall, d_rss), (c_wall, c_rss), (low, high) = measure_pairs(
                loop % " ".join(douctl_call), loop % ("curl -s --cacert %s %s/small.json" % (cert, far)), 3, keep_env)
            ratio = d_wall / c_wall
            rows.append((name, d_wall, c_wall, ratio, d_rss, c_rss, "<= 0.4x 100 curl calls",
                         ("ok" if ratio <= 0.4 else "MISSED") + " (pairs %.2f-%.2fx)" % (low, high)))
            print("%-28s douctl %.3fs | curl %.3fs | ratio %.2f (pairs %.2f-%.2f)" % (name, d_wall, c_wall, ratio, low, high), flush=True)
        name = "keeper off: 100 calls, RTT %d ms" % (2 * delay)
        if not only or name in only or "keeper" in only:
            # The before: the same loop with --no-keep (each call its own TCP and TLS handshake).
            (d_wall, d_rss), (c_wall, c_rss), (low, high) = measure_pairs(
                loop % " ".join(douctl_call + ["--no-keep"]), loop % ("curl -s --cacert %s %s/small.json" % (cert, far)), 3, keep_env)
            rows.append((name, d_wall, c_wall, d_wall / c_wall, d_rss, c_rss, "the before (no goal)", "(pairs %.2f-%.2fx)" % (low, high)))
            print("%-28s douctl %.3fs | curl %.3fs | ratio %.2f (pairs %.2f-%.2f)" % (name, d_wall, c_wall, d_wall / c_wall, low, high), flush=True)
        name = "keeper: one call, RTT %d ms" % (2 * delay)
        if not only or name in only or "keeper" in only:
            # The server's own time: curl's time from sending the request to the first byte
            # of the reply, on loopback without the relay.
            timings = []
            for _ in range(20):
                out = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{time_pretransfer} %{time_starttransfer}", "--cacert", cert,
                                      "https://127.0.0.1:%d/small.json" % tls_port], capture_output=True, text=True).stdout.split()
                timings.append(float(out[1]) - float(out[0]))
            server_time = statistics.median(timings)
            # The same call to the same server without the relay, alternating: what a call
            # costs here besides the distance (starting douctl, loading libcurl, the keeper's
            # hop), so the distance's share of each call can be read off.
            local_call = [DOUCTL, "api", "/small.json", "--api-base", "https://127.0.0.1:%d" % tls_port, "--cacert", cert]
            subprocess.run(local_call, env=keep_env, stdout=subprocess.DEVNULL, check=True)
            calls, local = [], []
            for _ in range(30):
                calls.append(run_once(douctl_call, keep_env)[0])
                local.append(run_once(local_call, keep_env)[0])
            per_call, here = statistics.median(calls), statistics.median(local)
            bound = 1.2 * 2 * delay / 1000 + server_time
            rows.append((name, per_call, here, per_call / here, 0, None, "distance's share <= 1.2 x RTT + server (%.1f ms)" % (bound * 1000),
                         ("ok" if per_call - here <= bound else "MISSED") + " (share %.1f ms; whole call %s the bound; calls %.1f-%.1f ms; server %.1f ms)" % (
                             (per_call - here) * 1000, "within" if per_call <= bound else "over", min(calls) * 1000, max(calls) * 1000, server_time * 1000)))
            print("%-28s median %.1f ms, %.1f ms without the relay (bound %.1f ms)" % (name, per_call * 1000, here * 1000, bound * 1000), flush=True)
        near = h2_base or "https://127.0.0.1:%d" % tls_port
        name = "keeper on loopback"
        if not only or name in only or "keeper" in only:
            near_call = [DOUCTL, "api", "/small.json", "--api-base", near, "--cacert", cert]
            subprocess.run(near_call, env=keep_env, stdout=subprocess.DEVNULL, check=True)
            (d_wall, d_rss), (c_wall, c_rss), (low, high) = measure_pairs(near_call, near_call + ["--no-keep"], 40, keep_env)
            ratio = d_wall / c_wall
            rows.append((name, d_wall, c_wall, ratio, d_rss, c_rss, "<= 1.0x direct (--no-keep)",
                         ("ok" if ratio <= 1.0 else "MISSED") + " (pairs %.2f-%.2fx)" % (low, high)))
            print("%-28s keeper %.4fs | direct %.4fs | ratio %.2f (pairs %.2f-%.2f)" % (name, d_wall, c_wall, ratio, low, high), flush=True)
    finally:
        subprocess.run([DOUCTL, "keeper", "stop"], env=keep_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        relay.kill()
        shutil.rmtree(runtime, ignore_errors=True)


def keeper_cpu(env):
    """The running keeper's CPU seconds (user + system) so far, or 0."""
    import json
    try:
        status = json.loads(subprocess.run([DOUCTL, "keeper", "status"], env=env, capture_output=True, text=True).stdout)
        with open("/proc/%d/stat" % status["pid"]) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (ValueError, KeyError, OSError):
        return 0.0


def keeper_h2_cases(rows, env, cert, h2_base, only):
    """Issue 44: the keeper over HTTP/2. N douctl processes in parallel (xargs -P8) against
    nginx with http2 behind the delaying relay: through the keeper (which carries each
    request as a stream on one multiplexed connection) and direct (--no-keep: each its own
    TCP, TLS and HTTP/2 handshake), each against curl doing the same in the same run."""
    delay, calls, parallel = 22, 64, 8
    h2_port = int(h2_base.rsplit(":", 1)[1])
    relay, runtime, keep_env, far, douctl_call = start_keeper_behind_relay(env, h2_port, delay, cert, "douctl-keeper-h2-run-")
    try:
        # The second call opens the keeper's HTTP/2 connection.
        subprocess.run(douctl_call, env=keep_env, stdout=subprocess.DEVNULL, check=True)
        fan = "seq %d | xargs -P%d -I{} %%s > /dev/null" % (calls, parallel)
        curl_fan = fan % ("curl -s --http2 --cacert %s %s/small.json" % (cert, far))
        name = "keeper h2: %d sequential calls, RTT %d ms" % (calls, 2 * delay)
        if not only or name in only or "keeper" in only or "keeper h2" in only:
            # One after another, as the HTTP/1.1 row (keeper: 100 calls) but to an HTTP/2 origin.
            loop = "for i in $(seq %d); do %%s > /dev/null; done" % calls
            (d_wall, d_rss), (c_wall, c_rss), (low, high) = measure_pairs(loop % " ".join(douctl_call), loop % ("curl -s --http2 --cacert %s %s/small.json" % (cert, far)), 3, keep_env)
            cpu = " CPU %.2f / %.2f s = %.2fx" % (PAIR_CPU[0], PAIR_CPU[1], PAIR_CPU[0] / PAIR_CPU[1] if PAIR_CPU[1] else 0)
            rows.append((name, d_wall, c_wall, d_wall / c_wall, d_rss, c_rss, "<= 0.4x curl", ("ok" if d_wall / c_wall <= 0.4 else "MISSED") + " (pairs %.2f-%.2fx;%s)" % (low, high, cpu)))
            print("%-40s douctl %.3fs | curl %.3fs | ratio %.2f (pairs %.2f-%.2f)%s" % (name, d_wall, c_wall, d_wall / c_wall, low, high, cpu), flush=True)
        for name, extra, goal in (("keeper h2: %d calls, %d parallel, RTT %d ms" % (calls, parallel, 2 * delay), [], "< 1.0x curl (one shared connection)"),
                                  ("keeper h2 off: %d calls, %d parallel, RTT %d ms" % (calls, parallel, 2 * delay), ["--no-keep"], "the before (no goal)")):
            if only and name not in only and "keeper" not in only and "keeper h2" not in only:
                continue
            keeper_before = keeper_cpu(keep_env)
            (d_wall, d_rss), (c_wall, c_rss), (low, high) = measure_pairs(fan % " ".join(douctl_call + extra), curl_fan, 3, keep_env)
            ratio = d_wall / c_wall
            # The keeper is not a child of the runs: its CPU time is read from /proc, per run.
            keeper_share = (keeper_cpu(keep_env) - keeper_before) / 3
            cpu = " CPU %.2f / %.2f s = %.2fx, the keeper's %.2f s a run" % (PAIR_CPU[0], PAIR_CPU[1], PAIR_CPU[0] / PAIR_CPU[1] if PAIR_CPU[1] else 0, keeper_share)
            # The keeper's connections to the origin: an HTTP/2 origin's line says how many it
            # opened; an HTTP/1.1 relay (a douctl before this) holds one line per connection.
            held = subprocess.run([DOUCTL, "keeper", "status"], env=keep_env, capture_output=True, text=True).stdout.strip()
            if "connections opened" in held:
                connections = held.split("connections opened")[0].rsplit(", ", 1)[-1].strip()
            else:
                connections = "%d held (HTTP/1.1)" % held.count("exchanges")
            verdict = ("" if extra else ("ok" if ratio < 1.0 else "MISSED")) + " (pairs %.2f-%.2fx;%s; keeper's connections opened: %s)" % (low, high, cpu, connections)
            rows.append((name, d_wall, c_wall, ratio, d_rss, c_rss, goal, verdict))
            print("%-40s douctl %.3fs | curl %.3fs | ratio %.2f (pairs %.2f-%.2f)%s; keeper connections %s" % (name, d_wall, c_wall, ratio, low, high, cpu, connections), flush=True)
    finally:
        subprocess.run([DOUCTL, "keeper", "stop"], env=keep_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        relay.kill()
        shutil.rmtree(runtime, ignore_errors=True)


def douctl_version():
    return subprocess.run([DOUCTL, "--version"], capture_output=True, text=True).stdout.split()[-1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer runs, smaller files")
    parser.add_argument("--only", default="", help="comma-separated case names")
    parser.add_argument("--douctl", default="", help="a douctl binary to measure instead of building one")
    options = parser.parse_args()
    global DOUCTL
    only = set(filter(None, options.only.split(",")))
    runs = 3 if options.quick else 5
    big = 256 * MiB if options.quick else GiB

    if options.douctl:
        DOUCTL = os.path.abspath(options.douctl)
    else:
        # Built as scripts/install.sh builds it: without SwiftPM's $ORIGIN RUNPATH, which made the
        # loader try 11 directories beside the binary for each of libm and libc (22 failed
        # openat, issue 44) before the system's.
        subprocess.run(["swift", "build", "-c", "release", "--disable-local-rpath", "--product", "douctl"], cwd=ROOT, check=True)
    os.makedirs(WORK, exist_ok=True)
    build_launcher()
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
    nginx = start_nginx(www, cert, key)
    small_base, h2_base = (nginx[0], nginx[1]) if nginx else (base, None)
    config = tempfile.mkdtemp(prefix="douctl-bench-")
    # The keeper (issue 44) is measured by its own rows (keeper_cases); every other row
    # measures direct calls, as before it.
    env = dict(os.environ, DOUCTL_CONFIG_DIR=config, DOUCTL_KEEP="0")
    rows = []

    def case(name, goal, douctl, curl, runs=runs, ratio_goal=None, rss_goal=None, pairs=None, case_env=None):
        if only and name not in only:
            return None
        spread = ""
        if pairs:
            (d_wall, d_rss), (c_wall, c_rss), (low, high) = measure_pairs(douctl, curl, pairs, case_env or env)
            spread = " (pairs %.2f-%.2fx; CPU %.1f / %.1f ms = %.2fx)" % (
                low, high, PAIR_CPU[0] * 1000, PAIR_CPU[1] * 1000, PAIR_CPU[0] / PAIR_CPU[1] if PAIR_CPU[1] else 0)
        else:
            d_wall, d_rss = measure(douctl, runs, env)
            c_wall, c_rss = measure(curl, runs, env) if curl else (None, None)
        ratio = d_wall / c_wall if c_wall else None
        verdict = []
        if ratio_goal is not None and ratio is not None:
            verdict.append("ok" if ratio <= ratio_goal else "MISSED")
        if rss_goal is not None:
            verdict.append("ok" if d_rss <= rss_goal else "MISSED")
        rows.append((name, d_wall, c_wall, ratio, d_rss, c_rss, goal, " ".join(verdict) + spread))
        print("%-28s douctl %.4fs %.1f MiB | other %s | ratio %s%s" % (
            name, d_wall, d_rss, "%.4fs %.1f MiB" % (c_wall, c_rss) if c_wall else "-", "%.2f" % ratio if ratio else "-",
            spread), flush=True)
        return d_wall, d_rss

    try:
        case("version", "<= 0.4x curl", [DOUCTL, "--version"], ["curl", "--version"], runs=30, ratio_goal=0.4)
        # Issue 42: operations of a 10 MB, 1,000-operation API description (Benchmarks/openapi.py).
        if not only or any(name.startswith("openapi") for name in only):
            sys.path.insert(0, os.path.join(ROOT, "Benchmarks"))
            import openapi
            openapi.cases(case, DOUCTL, env, WORK)
        # Issue 44 item 4: a small GET at or under curl, pair by pair (it was <= 1.15x).
        case("api GET small JSON", "<= 1.0x curl -s, RSS <= 14 MiB", [DOUCTL, "api", "/small.json", "--api-base", small_base],
             ["curl", "-s", small_base + "/small.json"], pairs=40, ratio_goal=1.0, rss_goal=14)
        floor = build_floor()
        case("floor: a minimal Swift GET", "the Swift runtime's own cost", [floor, small_base + "/small.json"],
             ["curl", "-s", small_base + "/small.json"], pairs=40)
        # Issue 23: douctl's small GET beside the floor itself (the "other" column), pair by pair.
        floor_rss = case("floor alone", "-", [floor, small_base + "/small.json"], None, runs=20)
        case("api GET small vs the floor", "<= 1.05x the floor, RSS <= floor + 1 MiB",
             [DOUCTL, "api", "/small.json", "--api-base", small_base], [floor, small_base + "/small.json"], pairs=40,
             ratio_goal=1.05, rss_goal=(floor_rss[1] + 1) if floor_rss else None)
        if h2_base:
            h2_call = [DOUCTL, "api", "/small.json", "--api-base", h2_base, "--cacert", cert]
            h2_curl = ["curl", "-s", "--http2", "--cacert", cert, h2_base + "/small.json"]
            case("api GET over HTTP/2 (TLS)", "<= 1.0x curl --http2 (direct: DOUCTL_KEEP=0)", h2_call, h2_curl, pairs=40, ratio_goal=1.0)
            # The same call as a user makes it, with the connection keeper on (the default):
            # after the first call, which starts the keeper, no call loads libcurl.
            name = "api GET over HTTP/2 (TLS) through the keeper"
            if not only or name in only:
                runtime = tempfile.mkdtemp(prefix="douctl-keeper-small-")
                keep_env = dict(env, XDG_RUNTIME_DIR=runtime, DOUCTL_KEEP="5m")
                try:
                    subprocess.run(h2_call, env=keep_env, stdout=subprocess.DEVNULL, check=True)
                    for _ in range(100):
                        if os.path.exists(os.path.join(runtime, "douctl", "keeper-%s.sock" % douctl_version())):
                            break
                        time.sleep(0.05)
                    subprocess.run(h2_call, env=keep_env, stdout=subprocess.DEVNULL, check=True)
                    case(name, "<= 1.0x curl --http2 (the default: the keeper)", h2_call, h2_curl, pairs=40, ratio_goal=1.0, case_env=keep_env)
                finally:
                    subprocess.run([DOUCTL, "keeper", "stop"], env=keep_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    shutil.rmtree(runtime, ignore_errors=True)
        payload = make_file(os.path.join(WORK, "upload-%d.bin" % big), big)
        case("api -F 1 GiB multipart" if big == GiB else "api -F multipart", "<= 1.1x curl -F, RSS <= 32 MiB",
             [DOUCTL, "api", "/upload", "--attach", "file=" + payload, "--api-base", base],
             ["curl", "-s", "-F", "file=@" + payload, base + "/upload"], ratio_goal=1.1, rss_goal=32)
        case("pretty-print 50 MB reply", "<= 1.0x curl | jq .",
             "%s api /big.json --api-base %s --pretty > /dev/null" % (DOUCTL, base),
             "curl -s %s/big.json | jq . > /dev/null" % base, ratio_goal=1.0)
        # Issue 23: a 1 GiB JSON reply (the 50 MB array repeated), streamed at flat memory.
        huge_json = make_big_array(os.path.join(www, "huge.json"), big_json, big)
        reply_base = small_base
        case("api --raw 1 GiB reply", "<= 1.1x curl -o /dev/null, RSS <= 32 MiB",
             "%s api /huge.json --api-base %s --raw > /dev/null" % (DOUCTL, reply_base),
             ["curl", "-s", "-o", "/dev/null", reply_base + "/huge.json"], ratio_goal=1.1, rss_goal=32)
        case("api --compact 1 GiB reply", "RSS <= 32 MiB (beside curl -o /dev/null)",
             "%s api /huge.json --api-base %s --compact > /dev/null" % (DOUCTL, reply_base),
             ["curl", "-s", "-o", "/dev/null", reply_base + "/huge.json"], rss_goal=32)
        case("api --pretty 1 GiB reply", "RSS <= 32 MiB (beside curl -o /dev/null)",
             "%s api /huge.json --api-base %s --pretty > /dev/null" % (DOUCTL, reply_base),
             ["curl", "-s", "-o", "/dev/null", reply_base + "/huge.json"], rss_goal=32)
        # Issue 44: the same reply reformatted through a pipe, beside curl's bytes through the
        # same pipe, in alternating pairs (the pipe and its reader cost both sides alike).
        for name, flag in (("api --compact 1 GiB to a pipe", "--compact"), ("api --pretty 1 GiB to a pipe", "--pretty")):
            case(name if big == GiB else name.replace("1 GiB", "big"), "<= 1.3x curl into wc -c, RSS <= 32 MiB",
                 "%s api /huge.json --api-base %s %s | wc -c > /dev/null" % (DOUCTL, reply_base, flag),
                 "curl -s %s/huge.json | wc -c > /dev/null" % reply_base, pairs=9, ratio_goal=1.3, rss_goal=32)
        # Issue 23: the same array in a Coding envelope, its code first: unwrapped in the stream.
        make_big_envelope(os.path.join(www, "huge-envelope.json"), huge_json)
        case("api --compact 1 GiB envelope", "RSS <= 32 MiB (beside curl -o /dev/null)",
             "%s api /huge-envelope.json --api-base %s --compact > /dev/null" % (DOUCTL, reply_base),
             ["curl", "-s", "-o", "/dev/null", reply_base + "/huge-envelope.json"], rss_goal=32)
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
        if not only or "100-page walk at 20 ms" in only:
            # Issue 23: pages that give the total are fetched 4 at a time (--parallel's default),
            # against one curl given all 100 URLs over one kept-alive connection.
            sys.path.insert(0, os.path.join(ROOT, "Benchmarks"))
            from walk import serve as serve_walk
            walk_server = serve_walk(100, 20, 0.020, total=True)
            walk_base = "http://127.0.0.1:%d" % walk_server.server_port
            walk_urls = ["%s/items?start=%d&count=20" % (walk_base, page * 20) for page in range(100)]
            walk_env = dict(env, DOUCTL_TOKEN="bench")
            for name, extra, goal in (("100-page walk at 20 ms", [], "<= 0.3x one keep-alive curl"),
                                      ("100-page walk --parallel 1", ["--parallel", "1"], "about 1x (one at a time)")):
                if only and name not in only:
                    continue
                (d_wall, d_rss), (c_wall, c_rss), (low, high) = measure_pairs(
                    [DOUCTL, "api", "/items", "-f", "count=20", "--paginate", "--api-base", walk_base] + extra,
                    ["curl", "-s", "-H", "Authorization: Bearer bench"] + walk_urls, 5, walk_env)
                ratio = d_wall / c_wall
                verdict = ("ok" if ratio <= 0.3 else "MISSED") if not extra else ""
                rows.append((name, d_wall, c_wall, ratio, d_rss, c_rss, goal, verdict + " (pairs %.2f-%.2fx)" % (low, high)))
                print("%-28s douctl %.4fs %.1f MiB | curl %.4fs | ratio %.2f" % (name, d_wall, d_rss, c_wall, ratio), flush=True)
            walk_server.shutdown()
        # Issue 34: --jq (libjq in process) beside `douctl ... | jq -c` (a second process and a
        # pipe), on a 100-page walk (1,000 items a page, no latency: the filter's own cost) and
        # on one 200 MB reply. The "other" column is the pipeline; its peak RSS is its largest
        # process's (jq's, holding the 200 MB document as jv values).
        if not only or any(name.startswith("jq ") for name in only):
            sys.path.insert(0, os.path.join(ROOT, "Benchmarks"))
            from walk import serve as serve_walk
            jq_walk = serve_walk(100, 1000, 0, total=True)
            jq_base = "http://127.0.0.1:%d" % jq_walk.server_port
            jq_env = dict(env, DOUCTL_TOKEN="bench")
            walk_command = "%s api /items -f count=1000 --paginate --api-base %s" % (DOUCTL, jq_base)
            for name, program in (("jq walk .id", ".id"), ("jq walk select", "select(.id % 7 == 0) | {id, text}")):
                if only and name not in only:
                    continue
                (d_wall, d_rss), (c_wall, c_rss), (low, high) = measure_pairs(
                    "%s --jq '%s' > /dev/null" % (walk_command, program),
                    "%s | jq -c '%s' > /dev/null" % (walk_command, program), 11, jq_env)
                rows.append((name, d_wall, c_wall, d_wall / c_wall, d_rss, c_rss, "<= 1.0x douctl | jq -c, RSS flat", "(pairs %.2f-%.2fx)" % (low, high)))
                print("%-28s douctl %.4fs %.1f MiB | | jq %.4fs %.1f MiB | ratio %.2f" % (name, d_wall, d_rss, c_wall, c_rss, d_wall / c_wall), flush=True)
            jq_walk.shutdown()
            reply_200 = make_big_array(os.path.join(www, "200m.json"), big_json, 200 * MiB)
            for name, program in (("jq 200 MB length", "length"), ("jq 200 MB .[0]", ".[0]")):
                case(name, "<= 1.0x douctl | jq -c",
                     "%s api /200m.json --api-base %s --jq '%s' > /dev/null" % (DOUCTL, small_base, program),
                     "%s api /200m.json --api-base %s | jq -c '%s' > /dev/null" % (DOUCTL, small_base, program), runs=3)
        # Issue 34: a compressed reply, the 50 MB JSON from nginx with gzip on: douctl asks
        # for it by default (as gh and httpie), curl with --compressed. Wall time in
        # alternating pairs, and the body bytes nginx sent to each (its access log).
        if nginx and (not only or any(name.startswith("gzip ") for name in only)):
            gzip_base, gzip_log = nginx[3], nginx[4]

            def sent_bytes(command):
                before = os.path.getsize(gzip_log) if os.path.exists(gzip_log) else 0
                run_once(command, env)
                time.sleep(0.2)  # nginx writes the log line after the reply
                with open(gzip_log) as f:
                    f.seek(before)
                    return int(f.read().split()[-1])

            curl_gzip = "curl -s --compressed %s/big.json > /dev/null" % gzip_base
            # --raw: the transfer and the decoding (curl's work too); without it douctl also
            # parses and reprints the 50 MB of JSON, which curl does not: its time says that.
            for name, extra in (("gzip 50 MB JSON --raw", "--raw"), ("gzip 50 MB JSON", "")):
                if only and name not in only:
                    continue
                douctl_gzip = "%s api /big.json --api-base %s %s > /dev/null" % (DOUCTL, gzip_base, extra)
                d_sent, c_sent = sent_bytes(douctl_gzip), sent_bytes(curl_gzip)
                plain = os.path.getsize(big_json)
                (d_wall, d_rss), (c_wall, c_rss), (low, high) = measure_pairs(douctl_gzip, curl_gzip, 5, env)
                note = "wire: douctl %d B, curl %d B of %d (%.1fx less)" % (d_sent, c_sent, plain, plain / max(d_sent, 1))
                timed = extra == "--raw"
                rows.append((name, d_wall, c_wall, d_wall / c_wall, d_rss, c_rss,
                             "<= 1.1x curl --compressed, same bytes" if timed else "same bytes (douctl also reprints the JSON)",
                             ("ok" if (d_wall / c_wall <= 1.1 or not timed) and d_sent == c_sent else "MISSED") + " (pairs %.2f-%.2fx; %s)" % (low, high, note)))
                print("%-28s douctl %.4fs %.1f MiB | curl --compressed %.4fs | ratio %.2f | %s" % (
                    name, d_wall, d_rss, c_wall, d_wall / c_wall, note), flush=True)
        if not only or any(name.startswith("keeper") for name in only):
            keeper_cases(rows, env, www, cert, tls_port, h2_base, only)
            if h2_base:
                keeper_h2_cases(rows, env, cert, h2_base, only)
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
        if nginx:
            # SIGTERM: the master stops its workers (SIGKILL left them holding our stdout).
            nginx[2].terminate()
            try:
                nginx[2].wait(timeout=10)
            except subprocess.TimeoutExpired:
                nginx[2].kill()
        server.kill()
        tls_server.kill()
        shutil.rmtree(config, ignore_errors=True)

    print("\n| case | douctl | curl (or curl \\| jq) | ratio | douctl peak RSS | curl peak RSS | goal | result |")
    print("|---|---|---|---|---|---|---|---|")
    for name, d_wall, c_wall, ratio, d_rss, c_rss, goal, verdict in rows:
        print("| %s | %.3f s | %s | %s | %.1f MiB | %s | %s | %s |" % (
            name, d_wall, "%.3f s" % c_wall if c_wall else "-", "%.2fx" % ratio if ratio else "-",
            d_rss, "%.1f MiB" % c_rss if c_rss else "-", goal, verdict))
    floor_binary = os.path.join(WORK, "floor")
    print("\ndouctl binary: %.1f MB%s" % (os.path.getsize(DOUCTL) / 1e6, ", the floor program's: %.1f MB" % (
        os.path.getsize(floor_binary) / 1e6) if os.path.exists(floor_binary) else ""))


if __name__ == "__main__":
    main()
