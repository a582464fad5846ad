#!/usr/bin/env python3
"""Regenerates Benchmarks/douctl.order: the functions a release douctl runs for a small request,
`--version`, a usage error and the streamed reformatter, hottest first, one symbol per line;
then the read-only data (type descriptors, metadata patterns) and the zeroed statics a small
request and `--version` touch, in the order first touched.

The release link (Package.swift) hands this list to lld (`--symbol-ordering-file`), which
places those functions side by side at the start of .text. Without it the ~1,100 functions a
small GET runs (~0.5 MB of code) lie scattered over 7 MB, and since the kernel maps a file's
pages 64 KiB at a time around each fault, most of .text ended up resident: ~5 MiB of the
4.5 MiB by which a small GET's RSS exceeded the floor program's. A stale list costs nothing
but that saving: names no longer in the binary are skipped (`--no-warn-symbol-ordering`).

The data half matters as much: the Swift runtime reads the descriptor of every type it
builds metadata for, and the standard library's lie spread over 1 MB of .rodata, so a small
GET left ~0.5 MiB of it resident (64 KiB around each page read). Each descriptor is in a
section of its own, so the link can gather the ones read at start, as it does functions.
They are found with valgrind's lackey (every load and store, mapped to symbols by address).

Usage: Benchmarks/order.py [--check]
Needs valgrind (callgrind counts which functions ran, without timing anything) and a
release build (`swift build -c release --product douctl`). --check prints how many of the
functions that run now are missing from the checked-in list, and changes nothing.
"""
import bisect, os, re, shlex, shutil, subprocess, sys, tempfile
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


def unmovable_symbols():
    """Functions of the static standard library that share one big .text section per module
    (Swift.o's 1.6 MB, _StringProcessing's, _RegexParser's): naming one in the list would pull
    that whole section into the middle of the hot functions, so they are left out."""
    toolchain = os.path.dirname(os.path.dirname(os.path.realpath(shutil.which("swiftc") or "swiftc")))
    static = os.path.join(toolchain, "lib", "swift_static", "linux")
    names = set()
    for archive in ("libswiftCore.a", "libswift_StringProcessing.a", "libswift_RegexParser.a"):
        path = os.path.join(static, archive)
        if not os.path.exists(path):
            continue
        listing = subprocess.run(["readelf", "-S", "-s", "-W", path], capture_output=True, text=True).stdout
        section_names = {}
        for line in listing.splitlines():
            if line.startswith("File: "):
                section_names = {}
            header = re.match(r"\s*\[\s*(\d+)\]\s+(\S+)", line)
            if header:
                section_names[header.group(1)] = header.group(2)
                continue
            symbol = re.match(r"\s*\d+:\s+[0-9a-f]+\s+\d+\s+FUNC\s+\S+\s+\S+\s+(\d+)\s+(\S+)", line)
            if symbol and section_names.get(symbol.group(1)) == ".text":
                names.add(symbol.group(2))
    # A specialization of a standard-library function often has the same name in one of
    # douctl's own objects, in a section of its own: that copy can move.
    # Only the objects the product links (its link file list): a stale object, or one of a
    # test target's built in release, may define a name the binary takes from Swift.o.
    with open(os.path.join(ROOT, ".build", "release", "douctl.product", "Objects.LinkFileList")) as listed:
        objects = [line.strip().strip("'\"") for line in listed if line.strip()]
    own = set()
    for start in range(0, len(objects), 50):
        listing = subprocess.run(["nm", "--defined-only"] + objects[start:start + 50], capture_output=True, text=True).stdout
        own.update(line.split()[-1] for line in listing.splitlines() if len(line.split()) == 3)
    return names - own


def sections(path):
    """{name: (address, size)} of the executable's sections."""
    found = {}
    for line in subprocess.run(["readelf", "-S", "-W", path], capture_output=True, text=True).stdout.splitlines():
        match = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)", line)
        if match:
            found[match.group(1)] = (int(match.group(2), 16), int(match.group(3), 16))
    return found


def data_read(argv, env):
    """The .rodata and .bss symbols of douctl's image that `argv` reads or writes, in the order
    first touched. (.data and .data.rel.ro are relocated as the process loads, so every page of
    them is touched anyway; the order there changes nothing.)"""
    image = os.path.realpath(DOUCTL)
    ranges = [sections(image)[name] for name in (".rodata", ".bss")]
    symbols = []
    for line in subprocess.run(["nm", "-S", "--defined-only", image], capture_output=True, text=True).stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and any(start <= int(parts[0], 16) < start + size for start, size in ranges):
            symbols.append((int(parts[0], 16), int(parts[1], 16), parts[3]))
    symbols.sort()
    addresses = [a for a, _, _ in symbols]
    # valgrind loads a position-independent executable at 0x108000.
    base = 0x108000
    low = base + min(start for start, _ in ranges)
    high = base + max(start + size for start, size in ranges)
    order, seen = [], set()
    # lackey logs to descriptor 3, sent to our pipe; douctl's own output is thrown away.
    command = "exec valgrind --tool=lackey --trace-mem=yes --log-fd=3 %s 3>&1 >/dev/null 2>/dev/null" % " ".join(
        shlex.quote(word) for word in argv)
    with subprocess.Popen(["sh", "-c", command], stdout=subprocess.PIPE, env=env) as child:
        for line in child.stdout:
            if line[:2] not in (b" L", b" M", b" S"):
                continue
            address = int(line[3:line.index(b",")], 16)
            if low <= address < high:
                offset = address - base
                index = bisect.bisect_right(addresses, offset) - 1
                if index >= 0 and offset < symbols[index][0] + max(symbols[index][1], 1):
                    name = symbols[index][2]
                    if name not in seen:
                        seen.add(name)
                        order.append(name)
    return order


def main():
    if not os.path.exists(DOUCTL):
        sys.exit("build first: swift build -c release --product douctl")
    server = serve_json(lambda path: ARRAY if path.startswith("/array") else SMALL)
    base = "http://127.0.0.1:%d" % server.server_port
    env = dict(os.environ, DOUCTL_CONFIG_DIR=tempfile.mkdtemp(prefix="douctl-order-"), HOME=tempfile.mkdtemp(prefix="douctl-order-home-"))
    # A plain-http call goes by douctl's own HTTP/1.1 code; an https one (no keeper) through
    # libcurl, whose Swift side is run here by naming libcurl in DOUCTL_LIBCURL.
    libcurl = next((line.split(" => ")[1].strip() for line in subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout.splitlines()
                    if "libcurl.so.4 " in line and " => " in line), None)
    through_libcurl = dict(env, DOUCTL_LIBCURL=libcurl) if libcurl else env
    runs = [  # the most common first: its functions go first
        (["api", "/small.json", "--api-base", base], env),
        (["--version"], env),
        (["api", "/small.json", "--api-base", base], through_libcurl),
        (["api", "/small.json", "--api-base", base, "--raw"], env),
        (["api", "/array.json", "--api-base", base, "--pretty"], env),
        (["api", "/array.json", "--api-base", base, "--compact"], env),
        (["api", "/small.json", "--no-such-option"], env),
    ]
    order, seen = [], set(unmovable_symbols())
    for arguments, run_env in runs:
        costs = functions_run([DOUCTL] + arguments, run_env)
        for name in sorted(costs, key=lambda n: -costs[n]):
            if name not in seen:
                seen.add(name)
                order.append(name)
        print("%-60s %5d functions (%d new)" % (" ".join(arguments)[:60], len(costs), len(order)), file=sys.stderr)
    functions = len(order)
    for arguments, run_env in runs[:3]:  # the small requests and --version: what every start reads
        read = data_read([DOUCTL] + arguments, run_env)
        for name in read:
            if name not in seen:
                seen.add(name)
                order.append(name)
        print("%-60s %5d data symbols read (%d new)" % (" ".join(arguments)[:60], len(read), len(order) - functions), file=sys.stderr)
    server.shutdown()
    if "--check" in sys.argv:
        existing = set(open(ORDER).read().split()) if os.path.exists(ORDER) else set()
        missing = [n for n in order if n not in existing]
        print("%d of %d symbols (functions run, data read) are missing from %s" % (len(missing), len(order), os.path.relpath(ORDER, ROOT)))
        return
    with open(ORDER, "w") as f:
        f.write("\n".join(order) + "\n")
    print("wrote %d symbols to %s" % (len(order), os.path.relpath(ORDER, ROOT)))


if __name__ == "__main__":
    main()
