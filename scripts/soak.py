#!/usr/bin/env python3
"""Soak tests: does douctl (and its sandbox) stay flat over time? Not part of `swift test`.

    scripts/soak.py api [--calls 10000] [--max-minutes M]
        N sequential `douctl api` calls against a `douctl sandbox` (or as many as fit in M
        minutes; the report says how many ran). Every call must succeed.
        Samples each call's peak RSS (wait4's rusage) and, every --sample-every calls, the
        sandbox's RSS and open file descriptors from /proc.

    scripts/soak.py sandbox [--minutes 30] [--workers 8] [--idle-connections 64]
        The sandbox under load for M minutes: workers loop over API calls, uploads, posts and
        deletes, device logins and refreshes, raw keep-alive and half-open connections, while a
        probe checks every second that the sandbox answers. Samples the sandbox's RSS and fds
        every --interval seconds.

Both print a table and a verdict, and exit 1 when something failed or a figure grew:
RSS is flat when the median of the last quarter of samples is within --rss-slack (default
10 %, at least 4 MiB) of the median of the second quarter (the first is warm-up); fds are
flat when, after the load, the count is back within 2 of where it started, and the
maximum under load stays below the connections the soak opened plus a small margin.

Options common to both: --douctl PATH (default: .build/release/douctl, else .build/debug/douctl),
--nice N (default 19; the soak shares the machine).
"""
import argparse
import os
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def find_douctl(explicit):
    if explicit:
        return os.path.abspath(explicit)
    for configuration in ("release", "debug"):
        path = os.path.join(ROOT, ".build", configuration, "douctl")
        if os.access(path, os.X_OK):
            return path
    sys.exit("soak: no douctl binary; run `swift build -c release` or pass --douctl PATH")


def png_bytes():
    """A valid 1×1 PNG, so the sandbox accepts it as a picture."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00")) + chunk(b"IEND", b"")


def proc_rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def proc_fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


class Sandbox:
    """`douctl sandbox` in its own process, with a private config directory."""

    def __init__(self, douctl, nice, extra=()):
        self.config = tempfile.mkdtemp(prefix="douctl-soak-")
        self.env = dict(os.environ, DOUCTL_CONFIG_DIR=self.config, LANG="C.UTF-8", HOME=self.config)
        self.env.pop("DOUCTL_TOKEN", None)
        self.log = open(os.path.join(self.config, "sandbox.log"), "wb")
        self.process = subprocess.Popen([douctl, "sandbox", *extra], env=self.env,
                                        stdout=subprocess.PIPE, stderr=self.log)
        line = self.process.stdout.readline().decode().strip()
        if not line.startswith("http://"):
            self.stop()
            sys.exit(f"soak: the sandbox did not start (first line: {line!r}); see {self.log.name}")
        self.base = line
        self.port = int(line.rsplit(":", 1)[1])
        self.pid = self.process.pid

    def answers(self, timeout=5):
        try:
            with urllib.request.urlopen(self.base + "/", timeout=timeout) as reply:
                return reply.status == 200
        except Exception:
            return False

    def sample(self):
        return proc_rss_kib(self.pid), proc_fds(self.pid)

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.log.close()

    def cleanup(self):
        shutil.rmtree(self.config, ignore_errors=True)


def run_douctl(douctl, env, arguments, nice, stdin=None, timeout=60):
    """Runs douctl; returns (exit status, stdout, stderr, peak RSS in KiB)."""
    process = subprocess.Popen([douctl, *arguments], env=env, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = process.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        return -1, out, err + b"\n(soak: killed after timeout)", 0
    # The peak comes from wait4(), which MeasuredPopen (below) uses to reap the child.
    return process.returncode, out, err, getattr(process, "peak_rss_kib", 0)


class MeasuredPopen(subprocess.Popen):
    """Popen that keeps the child's peak RSS from wait4()."""

    def _try_wait(self, wait_flags):
        try:
            pid, status, usage = os.wait4(self.pid, wait_flags)
        except ChildProcessError:
            pid, status, usage = self.pid, 0, None
        if usage is not None and pid == self.pid:
            self.peak_rss_kib = usage.ru_maxrss
        return pid, status


subprocess.Popen = MeasuredPopen  # noqa: the wrapper only adds a field


def login(douctl, sandbox, nice):
    status, _, err, _ = run_douctl(douctl, sandbox.env, ["--profile", "sandbox", "auth", "login", "--device", "--no-browser"], nice)
    if status != 0:
        raise RuntimeError(f"login failed ({status}): {err.decode(errors='replace').strip()}")


def flat_rss(samples, slack):
    """Compares the median of the last quarter with the second quarter's (the first is warm-up)."""
    if len(samples) < 8:
        return True, "too few samples to judge"
    quarter = len(samples) // 4
    early = statistics.median(samples[quarter:2 * quarter])
    late = statistics.median(samples[-quarter:])
    allowed = max(early * slack, 4096)
    return late - early <= allowed, f"median {early / 1024:.1f} MiB (2nd quarter) → {late / 1024:.1f} MiB (last quarter), allowed +{allowed / 1024:.1f} MiB"


def api_soak(args):
    douctl = find_douctl(args.douctl)
    sandbox = Sandbox(douctl, args.nice)
    failures = []
    peaks = []
    sandbox_samples = []
    started = time.monotonic()
    try:
        login(douctl, sandbox, args.nice)
        env = dict(sandbox.env, DOUCTL_PROFILE="sandbox")
        paths = ["/v2/user/~me", "/v2/user/ahbei", "/shuo/v2/statuses/home_timeline?count=5"]
        budget = started + args.max_minutes * 60 if args.max_minutes else None
        for index in range(args.calls):
            if budget and time.monotonic() > budget:
                print(f"soak api: stopping after {index} of {args.calls} calls: the --max-minutes budget is spent", flush=True)
                break
            # The sandbox, like Douban, allows 5000 calls an hour per token: log in afresh first.
            if index and index % 4000 == 0:
                login(douctl, sandbox, args.nice)
            path = paths[index % len(paths)]
            status, out, err, peak = run_douctl(douctl, env, ["api", path], args.nice)
            peaks.append(peak)
            if status != 0 or not out.strip():
                failures.append(f"call {index} ({path}): exit {status}: {err.decode(errors='replace').strip()}")
                if len(failures) > 20:
                    break
            if index % args.sample_every == 0 or index == args.calls - 1:
                rss, fds = sandbox.sample()
                sandbox_samples.append((index, rss, fds))
                elapsed = time.monotonic() - started
                print(f"soak api: {index + 1:6d}/{args.calls} calls  {elapsed:7.1f}s  douctl peak RSS {peak / 1024:5.1f} MiB"
                      f"  sandbox RSS {rss / 1024:6.1f} MiB  fds {fds:3d}  failures {len(failures)}", flush=True)
        if peaks and (not sandbox_samples or sandbox_samples[-1][0] != len(peaks) - 1):
            rss, fds = sandbox.sample()
            sandbox_samples.append((len(peaks) - 1, rss, fds))
    finally:
        elapsed = time.monotonic() - started
        answered = sandbox.answers()
        sandbox.stop()

    ok = not failures and answered
    print(f"\nsoak api: {len(peaks)} calls in {elapsed:.0f}s ({len(peaks) / max(elapsed, 1e-9):.1f} calls/s), {len(failures)} failures")
    for failure in failures[:10]:
        print("  " + failure)
    if peaks:
        tenth = max(1, len(peaks) // 10)
        first, last = statistics.median(peaks[:tenth]), statistics.median(peaks[-tenth:])
        print(f"douctl peak RSS per call: first tenth median {first / 1024:.1f} MiB, last tenth {last / 1024:.1f} MiB, max {max(peaks) / 1024:.1f} MiB")
        if last > first * 1.1 + 1024:
            ok = False
            print("  NOT FLAT: a douctl call grows with the number of calls before it")
    rss_ok, rss_text = flat_rss([rss for _, rss, _ in sandbox_samples], args.rss_slack)
    fds = [fds for _, _, fds in sandbox_samples]
    fds_ok = bool(fds) and fds[-1] <= fds[0] + 2
    print(f"sandbox RSS: {rss_text} — {'flat' if rss_ok else 'NOT FLAT'}")
    print(f"sandbox fds: first {fds[0] if fds else '?'}, last {fds[-1] if fds else '?'}, max {max(fds) if fds else '?'} — {'flat' if fds_ok else 'NOT FLAT'}")
    print(f"sandbox answered at the end: {'yes' if answered else 'NO'}")
    ok = ok and rss_ok and fds_ok
    print("soak api: " + ("PASS" if ok else "FAIL"))
    sandbox.cleanup()
    return 0 if ok else 1


class Counters:
    def __init__(self):
        self.lock = threading.Lock()
        self.counts = {}
        self.failures = []

    def add(self, name, ok, detail=""):
        with self.lock:
            done, failed = self.counts.get(name, (0, 0))
            self.counts[name] = (done + 1, failed + (0 if ok else 1))
            if not ok and len(self.failures) < 50:
                self.failures.append(f"{name}: {detail}")


def sandbox_soak(args):
    douctl = find_douctl(args.douctl)
    sandbox = Sandbox(douctl, args.nice, ["--token-ttl", str(args.token_ttl)])
    counters = Counters()
    stop = threading.Event()
    picture = os.path.join(sandbox.config, "soak.png")
    with open(picture, "wb") as file:
        file.write(png_bytes())
    login(douctl, sandbox, args.nice)
    baseline_rss, baseline_fds = sandbox.sample()

    def douctl_job(name, arguments, stdin=None, accept=(0,)):
        status, out, err, _ = run_douctl(douctl, env, arguments, args.nice, stdin=stdin)
        counters.add(name, status in accept, f"exit {status}: {err.decode(errors='replace').strip()[:200]}")
        return status, out

    env = dict(sandbox.env, DOUCTL_PROFILE="sandbox")

    def worker(number):
        step = number
        while not stop.is_set():
            kind = step % 6
            step += 1
            if kind == 0:
                douctl_job("api", ["api", "/v2/user/~me"])
            elif kind == 1:
                # Steady state: what the soak uploads it deletes, so retained data does not
                # pass for a leak.
                status, out = douctl_job("upload", ["upload", picture, picture, "--parallel", "2", "-f", "text=soak", "--progress", "never"])
                if status == 0:
                    import json
                    for line in out.decode(errors="replace").splitlines():
                        try:
                            identifier = str(json.loads(line)["reply"]["id"])
                        except Exception as error:  # noqa
                            counters.add("delete", False, f"no id in the upload's line: {error}")
                            continue
                        douctl_job("delete", ["shuo", "delete", identifier])
            elif kind == 2:
                status, out = douctl_job("post", ["shuo", "post", f"soak {number}-{step}"])
                if status == 0:
                    import json
                    try:
                        identifier = str(json.loads(out)["id"])
                        douctl_job("delete", ["shuo", "delete", identifier])
                    except Exception as error:  # noqa
                        counters.add("delete", False, f"no id in the post's reply: {error}")
            elif kind == 3:
                douctl_job("timeline", ["shuo", "timeline", "--count", "20"])
            elif kind == 4:
                # Logins mint tokens; with a short --token-ttl the others keep refreshing too.
                douctl_job("login", ["auth", "login", "--device", "--no-browser"])
            else:
                raw_connections(number)

    def raw_connections(number):
        """Keep-alive requests, a half-sent request, and a connection that just sits."""
        ok = True
        detail = ""
        try:
            with socket.create_connection(("127.0.0.1", sandbox.port), timeout=10) as connection:
                for _ in range(3):
                    connection.sendall(b"GET /v2/user/ahbei HTTP/1.1\r\nHost: soak\r\n\r\n")
                    reply = b""
                    while b"\r\n\r\n" not in reply:
                        chunk = connection.recv(65536)
                        if not chunk:
                            raise ConnectionError("closed early")
                        reply += chunk
                    head, _, body = reply.partition(b"\r\n\r\n")
                    length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0)
                    while len(body) < length:
                        body += connection.recv(65536)
                    ok = ok and head.startswith(b"HTTP/1.1 200")
            half = socket.create_connection(("127.0.0.1", sandbox.port), timeout=10)
            half.sendall(b"POST /shuo/v2/statuses/ HTTP/1.1\r\nHost: soak\r\nContent-Length: 100\r\n\r\nabc")
            half.close()
        except Exception as error:  # noqa
            ok, detail = False, str(error)
        counters.add("raw", ok, detail)

    idle = []

    def hold_idle_connections():
        """Many open connections at once, replaced every few seconds."""
        while not stop.is_set():
            try:
                for _ in range(args.idle_connections - len(idle)):
                    idle.append(socket.create_connection(("127.0.0.1", sandbox.port), timeout=10))
                counters.add("idle-connections", True)
            except Exception as error:  # noqa
                counters.add("idle-connections", False, str(error))
            stop.wait(5)
            while idle:
                idle.pop().close()

    probe_failures = []
    probe_count = [0]

    def probe():
        while not stop.is_set():
            started = time.monotonic()
            if not sandbox.answers(timeout=10):
                probe_failures.append(time.strftime("%H:%M:%S"))
            probe_count[0] += 1
            stop.wait(max(0, 1 - (time.monotonic() - started)))

    threads = [threading.Thread(target=worker, args=(n,), daemon=True) for n in range(args.workers)]
    threads += [threading.Thread(target=hold_idle_connections, daemon=True), threading.Thread(target=probe, daemon=True)]
    for thread in threads:
        thread.start()
    samples = []
    started = time.monotonic()
    deadline = started + args.minutes * 60
    try:
        while time.monotonic() < deadline:
            time.sleep(min(args.interval, max(0, deadline - time.monotonic())))
            rss, fds = sandbox.sample()
            samples.append((time.monotonic() - started, rss, fds))
            with counters.lock:
                done = sum(count for count, _ in counters.counts.values())
                failed = sum(failed for _, failed in counters.counts.values())
            print(f"soak sandbox: {samples[-1][0]:7.0f}s  RSS {rss / 1024:6.1f} MiB  fds {fds:4d}  operations {done:6d}"
                  f"  failed {failed}  probe misses {len(probe_failures)}", flush=True)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
        time.sleep(2)
        after_rss, after_fds = sandbox.sample()
        answered = sandbox.answers()
        sandbox.stop()

    elapsed = time.monotonic() - started
    print(f"\nsoak sandbox: {elapsed / 60:.1f} minutes, {args.workers} workers, {args.idle_connections} idle connections held")
    for name, (done, failed) in sorted(counters.counts.items()):
        print(f"  {name:17s} {done:7d} done, {failed} failed")
    for failure in counters.failures[:10]:
        print("  failure: " + failure)
    rss_ok, rss_text = flat_rss([rss for _, rss, _ in samples], args.rss_slack)
    fds = [fds for _, _, fds in samples]
    limit = baseline_fds + args.idle_connections + 4 * args.workers + 16
    fds_ok = after_fds <= baseline_fds + 2 and (max(fds) if fds else 0) <= limit
    print(f"sandbox RSS: start {baseline_rss / 1024:.1f} MiB; {rss_text}; after the load {after_rss / 1024:.1f} MiB — {'flat' if rss_ok else 'NOT FLAT'}")
    print(f"sandbox fds: start {baseline_fds}, max under load {max(fds) if fds else '?'} (limit {limit}), after the load {after_fds} — {'flat' if fds_ok else 'NOT FLAT'}")
    print(f"probe: {probe_count[0]} probes, {len(probe_failures)} unanswered {probe_failures[:5]}; answered at the end: {'yes' if answered else 'NO'}")
    failed = sum(failed for _, failed in counters.counts.values())
    ok = rss_ok and fds_ok and not probe_failures and answered and failed == 0
    print("soak sandbox: " + ("PASS" if ok else "FAIL"))
    sandbox.cleanup()
    return 0 if ok else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="mode", required=True)
    for name in ("api", "sandbox"):
        mode = sub.add_parser(name)
        mode.add_argument("--douctl")
        mode.add_argument("--nice", type=int, default=19)
        mode.add_argument("--rss-slack", type=float, default=0.10)
    sub.choices["api"].add_argument("--calls", type=int, default=10000)
    sub.choices["api"].add_argument("--sample-every", type=int, default=250)
    sub.choices["api"].add_argument("--max-minutes", type=float, default=0, help="stop early after this long (0: never)")
    sandbox = sub.choices["sandbox"]
    sandbox.add_argument("--minutes", type=float, default=30)
    sandbox.add_argument("--workers", type=int, default=8)
    sandbox.add_argument("--idle-connections", type=int, default=64)
    sandbox.add_argument("--interval", type=float, default=10)
    sandbox.add_argument("--token-ttl", type=int, default=60)
    args = parser.parse_args()
    # Once, here: every douctl the soak starts inherits it.
    os.nice(max(0, args.nice))
    return api_soak(args) if args.mode == "api" else sandbox_soak(args)


if __name__ == "__main__":
    sys.exit(main())
