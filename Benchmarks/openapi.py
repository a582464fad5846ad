#!/usr/bin/env python3
"""Issue 42's figures: an API description of ~10 MB with 1,000 operations
(Benchmarks/make-openapi.py), indexed once by `profile add --openapi`; then a TAB completion
(`__complete operations`, < 50 ms), `douctl NAME OPERATION --dry-run` beside `douctl api PATH
--dry-run` (<= 1.2x, alternating pairs) and its peak RSS (< 32 MiB). Run by Benchmarks/run.py
(case names "openapi ..."), or alone: Benchmarks/openapi.py [--douctl PATH] [--pairs N]."""
import argparse, os, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))


def cases(case, douctl, env, work, pairs=20):
    """Adds the cases through run.py's `case` (name, goal, douctl argv, other argv, ...)."""
    description = os.path.join(work, "openapi-10mb.json")
    if not os.path.exists(description):
        subprocess.run([sys.executable, os.path.join(HERE, "make-openapi.py"), description, "1000", "10"], check=True)
    env["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="douctl-bench-cache-")
    started = time.monotonic()
    subprocess.run([douctl, "profile", "add", "big", "--openapi", description], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print("openapi: profile add --openapi (%.1f MB, read and indexed once): %.2fs" % (
        os.path.getsize(description) / 1e6, time.monotonic() - started), flush=True)
    case("openapi TAB completion", "< 50 ms", [douctl, "__complete", "operations", "--", "big", "things4"], None, runs=20)
    case("openapi TAB completion of an option's values", "< 50 ms",
         [douctl, "__complete", "operations", "--", "big", "things499-list", "--state", ""], None, runs=20)
    case("openapi op --dry-run vs api --dry-run", "<= 1.2x api --dry-run, RSS < 32 MiB",
         [douctl, "big", "things499-create", "o", "r", "-F", "id=1", "-f", "name=x", "--dry-run"],
         [douctl, "--profile", "big", "api", "/repos/o/r/things499", "--json", "-F", "id=1", "-f", "name=x", "--dry-run"],
         pairs=pairs, ratio_goal=1.2, rss_goal=32)


def main():
    sys.path.insert(0, HERE)
    import run
    parser = argparse.ArgumentParser()
    parser.add_argument("--douctl", default=run.DOUCTL)
    parser.add_argument("--pairs", type=int, default=20)
    options = parser.parse_args()
    os.makedirs(run.WORK, exist_ok=True)
    run.build_launcher()
    env = dict(os.environ, DOUCTL_CONFIG_DIR=tempfile.mkdtemp(prefix="douctl-bench-"))

    def case(name, goal, douctl, other, runs=10, ratio_goal=None, rss_goal=None, pairs=None):
        if pairs:
            (d_wall, d_rss), (o_wall, o_rss), (low, high) = run.measure_pairs(douctl, other, pairs, env)
            print("%-46s %.2f ms %.1f MiB | other %.2f ms %.1f MiB | ratio %.2f (pairs %.2f-%.2fx) | goal %s" % (
                name, d_wall * 1e3, d_rss, o_wall * 1e3, o_rss, d_wall / o_wall, low, high, goal), flush=True)
        else:
            d_wall, d_rss = run.measure(douctl, runs, env)
            print("%-46s %.2f ms %.1f MiB | goal %s" % (name, d_wall * 1e3, d_rss, goal), flush=True)

    cases(case, os.path.abspath(options.douctl), env, run.WORK, options.pairs)


if __name__ == "__main__":
    main()
