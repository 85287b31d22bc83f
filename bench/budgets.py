#!/usr/bin/env python3
"""
make bench's first table (issue 46): what watching costs, against its budgets, each a ratio
measured in this one run (arms interleaved in time, medians over rounds).

    sudo python3 bench/budgets.py [--rounds 7] [--seconds 3] [--tls-rounds 5] [--go-rounds 3]
                                  [--out FILE]

- Plain TCP: build/pingpong, 1-byte ping-pong, 2 client threads pinned (bench/run.sh's PIN=1),
  arms baseline, the floor (build/floor: bench/floor.bpf.c's trivial programs on the hooks the
  sock backend uses per event), depwatch with TLS on and `--without tls`, on each backend. A
  distance is the floor's ratio to its round's baseline minus depwatch's, in points. BPF ns per
  round trip: one more run of the floor and of depwatch (sock) with kernel.bpf_stats_enabled,
  each arm's own programs' run time over the calls.
- Connection churn (pingpong --churn, 2 threads): baseline, floor, depwatch; after one unmeasured
  churn run that fills the TIME_WAIT table to its steady state (bench/run.sh's CHURN).
- OpenSSL over TLS at saturation, both ends traced: one nginx (HTTP/2 over TLS, HTTPS/1.1,
  h2c) on CPU 0, h2load -c 1 on CPU 1 (-m 8 for HTTP/2, --h1 for the keep-alive HTTPS/1.1 client), arms
  depwatch `--without tls` and depwatch, on each backend; h2c in the same arms. Then, once, the
  probed SSL calls a request (the dw_ssl_* entry programs' runs, kernel.bpf_stats_enabled, 5 000
  requests of each; every call is an entry hit and a return).
- Go over TLS at saturation: build/go/gotls-stripped-trimpath (client and server in one
  process, one HTTP/1.1 connection) alone and under depwatch (sock) once it attached the file;
  the dw_go_* programs' hits per request from kernel.bpf_stats_enabled.

Nothing here is a test assertion: a missed budget is printed as missed. The machine is shared
by every arm: compare the rows of one run only, on a quiet machine.
"""
import argparse
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bpfprogs  # noqa: E402
import gotls  # noqa: E402
import tlscost  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, os.environ.get("OUT", "build"))
DEPWATCH = os.path.join(OUT, "depwatch")
PINGPONG = os.path.join(OUT, "pingpong")
FLOOR = os.path.join(OUT, "floor")
GOTLS = gotls.GOTLS
TAG = "dwbudget-%d" % os.getpid()
# requests per h2load run: about 1-2 s each at this VM's rates (h2c ~50 000/s, HTTP/2 over TLS
# ~60 000/s untraced, HTTPS/1.1 ~18 000/s): 20 000 h2c requests (0.4 s) spread the rounds by 40 points
H2_REQUESTS = {"h2 over TLS": 60000, "HTTPS/1.1 keep-alive": 20000, "h2c": 100000}


def has_sock_tracepoints():
    with open("/sys/kernel/btf/vmlinux", "rb") as f:
        return b"btf_trace_sock_send_length" in f.read()


class Tracer:
    """A tracer process (argv) logging to a file of its own, up once a line matches ready (a
    regular expression) within timeout s: self.ready_line; stopped by SIGTERM, then SIGKILL."""

    def __init__(self, argv, ready, timeout, what):
        self.log = tempfile.NamedTemporaryFile("w+", prefix="budgets-", suffix=".log", delete=False)
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while True:
            with open(self.log.name) as f:
                text = f.read()
            m = re.search(ready, text)
            if m:
                self.ready_line = m.group(0)
                return
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                sys.exit("budgets: %s did not start:\n%s" % (what, text))
            time.sleep(0.05)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        os.unlink(self.log.name)


class Daemon(Tracer):
    """depwatch run on its own pin and run dirs, up once its start line is logged."""

    def __init__(self, backend, tls=True):
        self.run_dir = "/tmp/" + TAG
        super().__init__([DEPWATCH, "run", "--backend", backend, "--pin-dir", "/sys/fs/bpf/" + TAG,
                          "--run-dir", self.run_dir] + ([] if tls else ["--without", "tls"]),
                         r"depwatch: started .*", 120, "depwatch")


def floor():
    """bench/floor.bpf.c's trivial programs (build/floor), attached once it says it is ready."""
    return Tracer([FLOOR], r"floor: ready.*", 10, "the floor")


def pingpong(args, churn=False, seconds=None):
    """One pingpong run: (calls, calls per second)."""
    argv = [PINGPONG, "--size", "1", "--threads", "2", "--seconds", str(seconds or args.seconds),
            "--warmup-ms", "300", "--cpu", "--pin"] + (["--churn"] if churn else [])
    line = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=120).stdout
    m = re.search(r"calls=(\d+) seconds=[\d.]+ calls_per_s=([\d.]+)", line)
    if not m:
        sys.exit("budgets: unexpected pingpong output: %r" % line)
    return int(m.group(1)), float(m.group(2))


def under(arm, fn):
    """fn() with the arm's tracer attached (arm: None, "floor", or (backend, tls))."""
    t = None if arm is None else floor() if arm == "floor" else Daemon(*arm)
    try:
        return fn(t)
    finally:
        if t:
            t.stop()


def bpf_ns(pid, fn):
    """(fn's result, the run time in ns of the programs process pid holds, over fn)."""
    ids = bpfprogs.prog_ids(pid)

    def total():
        return sum(p.get("run_time_ns", 0) for p in bpfprogs.loaded() if p["id"] in ids)
    before = total()
    res = fn()
    return res, total() - before


def med(xs):
    return statistics.median(xs) if xs else None


def span(xs, fmt):
    return "%s (%s–%s)" % (fmt % med(xs), fmt % min(xs), fmt % max(xs)) if xs else "not measured"


class Table:
    def __init__(self):
        self.rows = []

    def add(self, budget, measured, met):
        self.rows.append("| %s | %s | %s |" % (budget, measured, "n/a" if met is None else
                                                 "met" if met else "**missed**"))


def tcp_rows(args, backends, table, notes):
    arms = [None, "floor"] + [(b, t) for b in backends for t in (True, False)]
    name = {None: "baseline", "floor": "floor"}
    for b in backends:
        name[(b, True)], name[(b, False)] = b, b + " --without tls"
    for churn in (False, True):
        if churn:
            pingpong(args, churn=True)  # TIME_WAIT to its steady state, not measured
        use = arms if not churn else [None, "floor", (backends[0], True)]
        rate = {name[a]: [] for a in use}
        for r in range(args.rounds):
            for a in use:
                rate[name[a]].append(under(a, lambda t: pingpong(args, churn)[1]))
            print("budgets: %s round %d: %s" % ("churn" if churn else "ping-pong", r + 1,
                                                 ", ".join("%s %.0f" % (k, v[-1]) for k, v in rate.items())),
                  file=sys.stderr, flush=True)
        base = rate["baseline"]

        def points(a, b):
            """a's distance above b, in points of baseline, per round"""
            return [100 * (rate[b][i] - rate[a][i]) / base[i] for i in range(args.rounds)]
        what = "connection churn (pingpong --churn, 2 threads)" if churn else "plain TCP, 1-byte ping-pong, 2 threads"
        notes.append("%s, calls/s medians: %s" % (what, ", ".join("%s %.0f" % (k, med(v)) for k, v in rate.items())))
        lim = 2 if churn else 1
        d = points(name[(backends[0], True)], "floor")
        table.add("%s: depwatch (%s) within %d point%s of the floor" % (what, backends[0], lim, "s" if lim > 1 else ""),
                  span(d, "%.1f") + " points", med(d) <= lim)
        if churn:
            continue
        for b in backends:
            d = points(name[(b, True)], name[(b, False)])
            table.add("plain TCP with TLS on (%s): within 1 point of `--without tls`" % b, span(d, "%.1f") + " points",
                      med(d) <= 1)
    # BPF ns per round trip: the floor's and depwatch's own programs over one run each
    ns = {}
    with open("/proc/sys/kernel/bpf_stats_enabled") as f:
        was = f.read().strip()
    try:
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write("1")
        for a, label in (("floor", "floor"), ((backends[0], True), "depwatch")):
            (calls, _), t = under(a, lambda tr: bpf_ns(tr.proc.pid, lambda: pingpong(args)))
            ns[label] = t / calls
    finally:
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write(was)
    table.add("plain TCP: BPF ns per round trip ≤ 1.3× the floor's", "%.0f vs %.0f ns: %.2f×"
              % (ns["depwatch"], ns["floor"], ns["depwatch"] / ns["floor"]), ns["depwatch"] <= 1.3 * ns["floor"])


def ssl_calls(port, n=5000):
    """The probed SSL calls a request, both ends (each an entry and a return: two uprobe hits), from
    the dw_ssl_* entry programs' runs with kernel.bpf_stats_enabled, over n requests of each kind."""
    def entries():
        return sum(q.get("run_cnt", 0) for q in bpfprogs.loaded()
                   if q.get("name", "").startswith("dw_ssl_") and not q["name"].endswith("_ret"))
    with open("/proc/sys/kernel/bpf_stats_enabled") as f:
        saved = f.read().strip()
    out = {}
    try:
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write("1")
        for k, url, h1 in (("h2 over TLS", "https://127.0.0.1:%d/" % port, False),
                           ("HTTPS/1.1 keep-alive", "https://127.0.0.1:%d/" % (port + 1), True)):
            before = entries()
            tlscost.h2load(url, n, h1=h1, cpu=1)
            out[k] = (entries() - before) / n
    finally:
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write(saved)
    return out


def tls_rows(args, backends, table, notes):
    p = args.port
    ngx = tlscost.start_nginx(p, cpu=0)
    # the client on CPU 1, nginx on CPU 0: unpinned, the h2c rounds spread over 60 points
    runs = {"h2 over TLS": lambda: tlscost.h2load("https://127.0.0.1:%d/" % p, H2_REQUESTS["h2 over TLS"], cpu=1),
            "HTTPS/1.1 keep-alive": lambda: tlscost.h2load("https://127.0.0.1:%d/" % (p + 1),
                                                           H2_REQUESTS["HTTPS/1.1 keep-alive"], h1=True, cpu=1),
            "h2c": lambda: tlscost.h2load("http://127.0.0.1:%d/" % (p + 2), H2_REQUESTS["h2c"], cpu=1)}
    res = {(b, t, k): [] for b in backends for t in (False, True) for k in runs}
    try:
        for r in range(args.tls_rounds):
            for b in backends:
                for t in (False, True):
                    def all_runs(_):
                        return {k: fn() for k, fn in runs.items()}
                    got = under((b, t), all_runs)
                    for k, v in got.items():
                        res[(b, t, k)].append(v)
            print("budgets: TLS round %d done" % (r + 1), file=sys.stderr, flush=True)
        calls = under((backends[0], True), lambda _: ssl_calls(p))
    finally:
        ngx.kill()
        ngx.wait()
    for b in backends:
        for k in ("h2 over TLS", "HTTPS/1.1 keep-alive"):
            on, off = res[(b, True, k)], res[(b, False, k)]
            ratio = [on[i] / off[i] for i in range(len(on))]
            table.add("OpenSSL at saturation, %s (h2load%s, %s): ≥ 80%% of `--without tls`; probed SSL calls a request"
                      % (k, " --h1" if "1.1" in k else " -m 8", b),
                      "%s (%.0f vs %.0f req/s); %.2f SSL calls a request" % (span(ratio, "%.2f"), med(on), med(off),
                                                                          calls[k]), med(ratio) >= 0.80)
        on, off = res[(b, True, "h2c")], res[(b, False, "h2c")]
        d = [100 * (off[i] - on[i]) / off[i] for i in range(len(on))]
        table.add("h2c with TLS on (%s): within 1 point of `--without tls`" % b,
                  "%s points (%.0f vs %.0f req/s)" % (span(d, "%.1f"), med(on), med(off)), med(d) <= 1)
    notes.append("TLS: nginx 1 worker, h2load -c 1, requests a run: %s; %d rounds"
                 % (", ".join("%s %d" % kv for kv in H2_REQUESTS.items()), args.tls_rounds))


def go_rows(args, backend, table, notes):
    def run_go():
        """requests per second of one run (gotls.run_go: its own elapsed time)"""
        return args.go_requests / gotls.run_go(args.go_requests) * 1e6

    def go_hits():
        return sum(p.get("run_cnt", 0) for p in bpfprogs.loaded() if p.get("name", "").startswith("dw_go_"))

    alone, probed, hits = [], [], []
    with open("/proc/sys/kernel/bpf_stats_enabled") as f:
        was = f.read().strip()
    for r in range(args.go_rounds):
        alone.append(run_go())
        holder = subprocess.Popen([GOTLS, "-wait", "-n", "1"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
        d = Daemon(backend)
        try:
            gotls.wait_attached(d.run_dir)
            with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
                f.write("1")
            before = go_hits()
            probed.append(run_go())
            hits.append((go_hits() - before) / args.go_requests)
        finally:
            with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
                f.write(was)
            holder.kill()
            holder.wait()
            d.stop()
    ratio = [probed[i] / alone[i] for i in range(len(alone))]
    table.add("Go over TLS at saturation (%s, HTTP/1.1, one connection): ≥ 60%% of untraced; hits per request"
              % backend, "%s (%.0f vs %.0f req/s); %.1f hits a request" % (span(ratio, "%.2f"), med(probed),
                                                                         med(alone), med(hits)),
              med(ratio) >= 0.60)
    notes.append("Go: %s, %d requests a run, %d rounds" % (os.path.basename(GOTLS), args.go_requests, args.go_rounds))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=7, help="ping-pong and churn rounds (default 7)")
    ap.add_argument("--seconds", type=float, default=3, help="seconds per ping-pong run (default 3)")
    ap.add_argument("--tls-rounds", type=int, default=5)
    ap.add_argument("--go-rounds", type=int, default=3)
    ap.add_argument("--go-requests", type=int, default=3000)
    ap.add_argument("--port", type=int, default=47600)
    ap.add_argument("--out", help="also write the table there")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("budgets: run as root (BPF, kernel.bpf_stats_enabled)")
    for f in (DEPWATCH, PINGPONG, FLOOR, GOTLS):
        if not os.access(f, os.X_OK):
            sys.exit("budgets: %s is missing: make %s" % (f, "bench" if f != GOTLS else "gobins"))
    backends = (["sock"] if has_sock_tracepoints() else []) + ["syscalls"]
    t0 = time.monotonic()
    others = bpfprogs.dw_others(set())
    table, notes = Table(), []
    probe = Daemon(backends[0])
    start_line = probe.ready_line
    probe.stop()
    tcp_rows(args, backends, table, notes)
    tls_rows(args, backends, table, notes)
    go_rows(args, backends[0], table, notes)
    head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip() or "?"
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    lines = ["## Budgets (issue 46)", "",
             "- %s, kernel %s, commit %s; %.0f s; load average after: %s; dw_ programs of others at the start: %d"
             % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), platform.release(), head,
                time.monotonic() - t0, load, others),
             "- depwatch's hooks (%s, default config): %s" % (backends[0], start_line.split("attached: ", 1)[-1]),
             "- medians over the rounds (min–max of the rounds), each arm's ratio to its own round's "
             "baseline; `bench/budgets.py`", "",
             "| budget | measured | |", "| --- | --- | --- |"] + table.rows + [""] + ["- " + n for n in notes] + [""]
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
