#!/usr/bin/env python3
"""`upload` vs `curl -F` to a server that does real work with the body, and to the sink.

nginx receives the multipart body, writes it to a temporary file (client_body_buffer_size
16k: anything larger goes to disk) and only then proxies it to Benchmarks/sink_server.py,
the way an upload endpoint behind nginx does; beside it, the same upload straight to the
sink. Alternating pairs (douctl, curl), medians and the range of per-pair ratios.

Usage: Benchmarks/upload_nginx.py DOUCTL [SIZE_MIB] [PAIRS]
(default 1024 MiB, 6 pairs). Needs nginx, curl, python3.
"""
import os, shutil, socket, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MiB = 1 << 20


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(port):
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit("nothing listens on %d" % port)


def timed(command):
    start = time.monotonic()
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    elapsed = time.monotonic() - start
    if result.returncode != 0:
        sys.exit("failed (%d): %s\n%s%s" % (result.returncode, " ".join(command), result.stdout[-400:], result.stderr[-400:]))
    return elapsed


def main():
    douctl = os.path.abspath(sys.argv[1])
    size = int(sys.argv[2]) * MiB if len(sys.argv) > 2 else 1024 * MiB
    pairs = int(sys.argv[3]) if len(sys.argv) > 3 else 6
    work = tempfile.mkdtemp(prefix="douctl-upload-bench")
    payload = os.path.join(work, "payload.bin")
    block = os.urandom(MiB)
    with open(payload, "wb") as f:
        for _ in range(size // MiB):
            f.write(block)
    sink_port, nginx_port = free_port(), free_port()
    sink = subprocess.Popen([sys.executable, os.path.join(ROOT, "Benchmarks", "sink_server.py"), str(sink_port), work],
                            stdout=subprocess.DEVNULL)
    prefix = os.path.join(work, "nginx")
    os.makedirs(prefix)
    with open(os.path.join(prefix, "nginx.conf"), "w") as f:
        f.write("""worker_processes 1; daemon off; master_process off; pid %(p)s/nginx.pid; error_log %(p)s/error.log;
events { worker_connections 64; }
http { access_log off;
  client_body_temp_path %(p)s/body; proxy_temp_path %(p)s/proxy; fastcgi_temp_path %(p)s/fastcgi;
  uwsgi_temp_path %(p)s/uwsgi; scgi_temp_path %(p)s/scgi;
  server { listen 127.0.0.1:%(port)d;
    location / { client_max_body_size 0; client_body_buffer_size 16k; proxy_request_buffering on;
                 proxy_http_version 1.1; proxy_pass http://127.0.0.1:%(sink)d; } } }
""" % {"p": prefix, "port": nginx_port, "sink": sink_port})
    nginx = subprocess.Popen([shutil.which("nginx") or "/usr/sbin/nginx", "-p", prefix, "-c", prefix + "/nginx.conf"],
                             stderr=subprocess.DEVNULL)
    try:
        wait_for(sink_port)
        wait_for(nginx_port)
        for name, port in (("nginx (body to disk, then proxied)", nginx_port), ("sink_server.py", sink_port)):
            base = "http://127.0.0.1:%d" % port
            d_cmd = [douctl, "upload", payload, "--to", "/upload", "--field", "image", "--api-base", base]
            c_cmd = ["curl", "-sS", "-F", "image=@" + payload, base + "/upload"]
            timed(d_cmd), timed(c_cmd)  # warm the page cache and both binaries
            d, c = [], []
            for _ in range(pairs):
                d.append(timed(d_cmd))
                c.append(timed(c_cmd))
            ratios = sorted(x / y for x, y in zip(d, c))
            print("%-36s %d MiB: douctl %.2f s, curl %.2f s, ratio of medians %.2fx (pairs %.2f-%.2fx, median pair %.2fx)" % (
                name, size // MiB, statistics.median(d), statistics.median(c), statistics.median(d) / statistics.median(c),
                ratios[0], ratios[-1], statistics.median(ratios)), flush=True)
    finally:
        if os.environ.get("KEEP_LOG"):
            print(open(os.path.join(prefix, "error.log")).read()[-2000:])
        nginx.terminate()
        sink.terminate()
        nginx.wait()
        sink.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
