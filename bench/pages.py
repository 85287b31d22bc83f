#!/usr/bin/env python3
"""Bounded outputs (issue 16): the /metrics page and `status` at many
destinations and callers, with and without --max-series.

For each case (DESTS x CALLERS): four listeners on 0.0.0.0, DESTS
destinations as 127.X.Y.Z x those four ports; CALLERS client processes, each
in a cgroup of its own under the cgroup v2 mount (named like a systemd unit,
bench-caller-N.service), connect to their share of the destinations and make
one call on each, then keep one call per process in flight. Then, for each
--max-series value (0: no cap, as before this step; the default), a fresh
daemon is started before the traffic, and measured once it is quiet:
  - the /metrics page: bytes, lines, and depwatch_metrics_render_seconds (the
    daemon's own time to render it), the median of SAMPLES scrapes;
  - `status` (table) and `status --json`: bytes and wall time of the command.
Nothing here asserts: the numbers are reported as a Markdown table.

usage: bench/pages.py [--quick]   (root)
Knobs (environment): DEPWATCH (default build/depwatch), PAGES_CASES
("2000x50,10000x50"; --quick "2000x50"), PAGES_SERIES ("0,default"), PAGES_SAMPLES (5).
"""

import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PORTS = 4

CLIENT = r"""
import os, socket, sys
cg, base, first, count, ports = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
ports = [int(p) for p in ports.split(",")]
with open(os.path.join(cg, "cgroup.procs"), "w") as f:
    f.write(str(os.getpid()))
def call(s):
    s.sendall(b"x\n")
    b = b""
    while not b.endswith(b"\n"):
        got = s.recv(64)
        if not got:
            raise SystemExit("closed")
        b += got
for i in range(first, first + count):
    a, p = divmod(i, len(ports))
    s = socket.create_connection(("127.%d.%d.%d" % (base + a // 62500, (a // 250) % 250 + 1, a % 250 + 1), ports[p]))
    call(s)
    s.close()
h = socket.create_connection(("127.%d.1.1" % base, ports[-1]))
h.sendall(b"hold\n")
print("ready", flush=True)
sys.stdin.read()
"""


class Server:
    """Answers each line at once; a line "hold" is never answered."""

    def __init__(self):
        self.lsock = socket.socket()
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("0.0.0.0", 0))
        self.lsock.listen(1024)
        self.port = self.lsock.getsockname()[1]
        threading.Thread(target=self.loop, daemon=True).start()

    def loop(self):
        while True:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(c,), daemon=True).start()

    @staticmethod
    def serve(c):
        buf = b""
        try:
            while True:
                got = c.recv(64)
                if not got:
                    break
                buf += got
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if line != b"hold":
                        c.sendall(b"ok\n")
        except OSError:
            pass
        finally:
            c.close()

    def close(self):
        self.lsock.close()


def cgroup2_mount():
    with open("/proc/self/mounts") as f:
        for line in f:
            p = line.split()
            if len(p) > 2 and p[2] == "cgroup2":
                return p[1]
    raise SystemExit("no cgroup v2 mount")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def get(url):
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.read().decode()


def render_s(page):
    for line in page.splitlines():
        if line.startswith("depwatch_metrics_render_seconds "):
            return float(line.split()[1])
    return float("nan")


def run_case(binary, ndests, ncallers, series, samples):
    root = cgroup2_mount()
    top = os.path.join(root, "dwbench-pages-%d.slice" % os.getpid())
    os.mkdir(top)
    srvs = [Server() for _ in range(PORTS)]
    run_dir = tempfile.mkdtemp(prefix="dwpages-")
    pin_dir = "/sys/fs/bpf/dwpages-%d" % os.getpid()
    mport = free_port()
    args = [binary, "run", "--run-dir", run_dir, "--pin-dir", pin_dir, "--max-dests", str(ndests * 2 + 1024),
            "--metrics", "127.0.0.1:%d" % mport]
    if series != "default":
        args += ["--max-series", series]
    log = open(os.path.join(tempfile.gettempdir(), "dwpages.log"), "a")
    d = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    clients = []
    try:
        deadline = time.monotonic() + 30
        while not os.path.exists(os.path.join(run_dir, "depwatch.sock")):
            if time.monotonic() > deadline or d.poll() is not None:
                raise SystemExit("daemon did not start: see %s" % log.name)
            time.sleep(0.1)
        time.sleep(0.5)
        base = random.randint(16, 200)
        share = ndests // ncallers
        ports = ",".join(str(s.port) for s in srvs)
        for k in range(ncallers):
            cg = os.path.join(top, "bench-caller-%d.service" % k)
            os.mkdir(cg)
            clients.append(subprocess.Popen([sys.executable, "-c", CLIENT, cg, str(base), str(k * share),
                                             str(share), ports],
                                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
        for c in clients:
            if c.stdout.readline().strip() != "ready":
                raise SystemExit("a client failed")
        time.sleep(2)
        url = "http://127.0.0.1:%d/metrics" % mport
        sizes, lines, renders = [], [], []
        for _ in range(samples):
            page = get(url)
            sizes.append(len(page))
            lines.append(page.count("\n"))
            renders.append(render_s(page))
            time.sleep(0.3)
        out = {}
        for what, extra in (("status", []), ("status --json", ["--json"])):
            times, blen = [], 0
            for _ in range(samples):
                t = time.monotonic()
                r = subprocess.run([binary, "status", "--run-dir", run_dir] + extra, capture_output=True,
                                   timeout=60)
                times.append(time.monotonic() - t)
                blen = len(r.stdout)
            out[what] = (blen, statistics.median(times))
        return {"dests": ndests, "callers": ncallers, "series": series,
                "page_bytes": int(statistics.median(sizes)), "page_lines": int(statistics.median(lines)),
                "render_ms": statistics.median(renders) * 1000, "status": out}
    finally:
        for c in clients:
            try:
                c.stdin.close()
                c.wait(10)
            except Exception:
                c.kill()
        d.terminate()
        d.wait(30)
        for s in srvs:
            s.close()
        for dp, dns, _ in sorted(os.walk(top), key=lambda x: -len(x[0])):
            for n in dns:
                try:
                    os.rmdir(os.path.join(dp, n))
                except OSError:
                    pass
        os.rmdir(top)
        shutil.rmtree(run_dir, ignore_errors=True)
        log.close()


def main():
    quick = "--quick" in sys.argv
    binary = os.environ.get("DEPWATCH", os.path.join(ROOT, "build", "depwatch"))
    cases = os.environ.get("PAGES_CASES", "2000x50" if quick else "2000x50,10000x50")
    series = os.environ.get("PAGES_SERIES", "0,default").split(",")
    samples = int(os.environ.get("PAGES_SAMPLES", "3" if quick else "5"))
    print("| destinations | callers | --max-series | /metrics bytes | lines | render ms | status bytes | status ms | status --json bytes | --json ms |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for case in cases.split(","):
        nd, nc = (int(x) for x in case.split("x"))
        for s in series:
            r = run_case(binary, nd, nc, s, samples)
            st, js = r["status"]["status"], r["status"]["status --json"]
            print("| %d | %d | %s | %d | %d | %.1f | %d | %.0f | %d | %.0f |" % (
                nd, nc, s if s != "0" else "0 (no cap, as before)", r["page_bytes"], r["page_lines"],
                r["render_ms"], st[0], st[1] * 1000, js[0], js[1] * 1000), flush=True)


if __name__ == "__main__":
    main()
