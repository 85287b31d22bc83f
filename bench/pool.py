#!/usr/bin/env python3
"""The seed's story, measured: a frontend's worker pool against a dependency
that goes from 200 ms to 9 s, with depwatch off, enforce = connect and
enforce = abort (issue 15).

The stand-in frontend has a fixed pool of N worker threads (POOL, 50), each
with one keep-alive connection to the dependency and no timeout of its own.
Requests arrive as a Poisson process at RATE (100/s: 100 x 0.2 s = 20 busy
workers, 40% of the pool); each takes a free worker and makes one call to
the dependency (a failed call closes the connection; the next request on that
worker reconnects). A health check (10/s) goes through the same pool and
answers without calling anyone: its latency is the wait for a free worker.
At CHANGE s the dependency's answers start taking 9 s, with no errors.

Three arms in one run, each with a fresh dependency: no depwatch; depwatch
with enforce = connect; with enforce = abort (slow_call = 300ms, open_for =
60s, so the breaker stays open for the rest of the arm). Per 0.5 s: pool
occupancy (the most workers busy at once), requests served (answered) and
failed, requests waiting for a worker, health-check p99; the time from the
change to the pool's exhaustion (every worker busy), against Little's law.

usage: bench/pool.py [--out DIR] [--seconds S]   (root; DEPWATCH names the binary)
Writes DIR/pool.md (Markdown), DIR/pool.tsv (the series) and, with gnuplot,
DIR/pool.png. Not a test: nothing here asserts.
"""

import argparse
import os
import queue
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# The keep-alive caller and the stand-in dependency are the integration tests' (workpool.py).
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
from workpool import KeepAlive, StandInProcess  # noqa: E402
DEPWATCH = os.environ.get("DEPWATCH", os.path.join(HERE, "..", "build", "depwatch"))
POOL, RATE, HEALTH_RATE = 50, 100.0, 10.0
NORMAL, SLOW, CHANGE = 0.2, 9.0, 5.0
SLOW_CALL = 0.3
BIN = 0.5

class Frontend:
    """POOL workers, one keep-alive connection each, fed from one queue."""

    def __init__(self, port):
        self.port = port
        self.q = queue.Queue()
        self.busy = 0
        self.lock = threading.Lock()
        self.done = []		# (kind, enqueued, finished, ok)
        self.stop = threading.Event()
        self.workers = [threading.Thread(target=self.work, daemon=True) for _ in range(POOL)]
        for w in self.workers:
            w.start()

    def work(self):
        # a keep-alive pool: every worker holds its connection from the start; a failed call
        # closes it, the next request on that worker reconnects
        conn = KeepAlive(self.port, connect=True)
        while not self.stop.is_set():
            try:
                kind, t0 = self.q.get(timeout=0.1)
            except queue.Empty:
                continue
            with self.lock:
                self.busy += 1
            ok = True
            if kind == "req":
                ok, _ = conn.call()
            with self.lock:
                self.busy -= 1
                self.done.append((kind, t0, time.monotonic(), ok))


def arrivals(fe, rate, kind, until, rng):
    t = time.monotonic()
    while t < until:
        t += rng.expovariate(rate) if kind == "req" else 1.0 / rate
        time.sleep(max(0, t - time.monotonic()))
        fe.q.put((kind, time.monotonic()))


def run_arm(name, seconds, pin_dir, run_dir):
    # at the machine's priority, as the frontend and the daemon
    srv = StandInProcess(NORMAL, nice=0)
    port = srv.port
    daemon = conf = None
    if name != "off":
        conf = tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False)
        conf.write("[dependency payments]\nmatch = 127.0.0.1:%d\nslow_call = %dms\nopen_for = 60s\nenforce = %s\n"
                   % (port, SLOW_CALL * 1000, name))
        conf.close()
        daemon = subprocess.Popen([DEPWATCH, "run", "-c", conf.name, "--pin-dir", pin_dir, "--run-dir", run_dir],
                                  stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for line in daemon.stderr:
            if line.startswith("depwatch: started ("):
                break
        threading.Thread(target=lambda: [None for _ in daemon.stderr], daemon=True).start()
    fe = Frontend(port)
    time.sleep(0.5)		# the workers connect
    t_start = time.monotonic()
    end = t_start + seconds
    rng = random.Random(15)
    gens = [threading.Thread(target=arrivals, args=(fe, RATE, "req", end, rng), daemon=True),
            threading.Thread(target=arrivals, args=(fe, HEALTH_RATE, "health", end, rng), daemon=True)]
    for g in gens:
        g.start()
    samples = []	# (t, busy, waiting)
    changed = False
    while time.monotonic() < end:
        now = time.monotonic()
        if not changed and now >= t_start + CHANGE:
            srv.set_delay(SLOW)
            changed = True
        with fe.lock:
            samples.append((now - t_start, fe.busy, fe.q.qsize()))
        time.sleep(0.02)
    t_end = time.monotonic()
    with fe.lock:
        done = [d for d in fe.done if d[2] <= t_end]
    # requests and health checks still waiting (or hanging) at the end count with their age so far
    pending = []
    while True:
        try:
            kind, t0 = fe.q.get_nowait()
        except queue.Empty:
            break
        pending.append((kind, t0, t_end, None))
    fe.stop.set()
    if daemon:
        daemon.terminate()
        daemon.wait(10)
        os.unlink(conf.name)
    srv.close()
    return {"name": name, "t_start": t_start, "samples": samples, "done": done + pending,
            "seconds": seconds}


def p99(xs):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * 0.99))] if xs else None


HOLD = 0.1


def held(samples):
    """(t, busy) per sample: the fewest workers busy over the HOLD s from it. A burst of
    requests that fail at once keeps every worker busy for a moment, not for HOLD."""
    out = []
    for i, (t, busy, _) in enumerate(samples):
        low, j = busy, i
        while j < len(samples) and samples[j][0] < t + HOLD:
            low = min(low, samples[j][1])
            j += 1
        if j < len(samples):
            out.append((t, low))
    return out


def bins(arm):
    """Per BIN: (end s, worker counts held for HOLD s, waiting counts, requests finished,
    health-check latencies ms): the walk both benches' series share."""
    t0 = arm["t_start"]
    kept = held(arm["samples"])
    for b in range(int(arm["seconds"] / BIN)):
        lo, hi = b * BIN, (b + 1) * BIN
        busy = [h[1] for h in kept if lo <= h[0] < hi]
        wait = [s[2] for s in arm["samples"] if lo <= s[0] < hi]
        fin = [d for d in arm["done"] if d[3] is not None and lo <= d[2] - t0 < hi and d[0] == "req"]
        health = [(d[2] - d[1]) * 1e3 for d in arm["done"] if d[0] == "health" and lo <= d[1] - t0 < hi]
        yield hi, busy, wait, fin, health


def busy_pct(busy):
    """A bin's most workers busy, in % of POOL; None: no sample in it (the process was not scheduled)."""
    return 100.0 * max(busy) / POOL if busy else None


def series(arm):
    """Per BIN: (t, busy % held for HOLD s, served, failed, max waiting, health p99 ms)."""
    return [(hi, busy_pct(busy), sum(1 for d in fin if d[3]), sum(1 for d in fin if not d[3]),
             max(wait or [0]), p99(health)) for hi, busy, wait, fin, health in bins(arm)]


def exhaustion(arm):
    """From the change to the first time every worker was busy for HOLD s."""
    for t, busy in held(arm["samples"]):
        if t >= CHANGE and busy >= POOL:
            return t - CHANGE
    return None


def summary(arm):
    after = [d for d in arm["done"] if d[1] - arm["t_start"] >= CHANGE]
    before = [d for d in arm["done"] if d[1] - arm["t_start"] < CHANGE - 0.5]
    health_after = [(d[2] - d[1]) * 1e3 for d in after if d[0] == "health"]
    health_before = [(d[2] - d[1]) * 1e3 for d in before if d[0] == "health"]
    reqs = [d for d in after if d[0] == "req"]
    failed_before = sum(1 for d in arm["done"] if d[0] == "req" and d[1] - arm["t_start"] < CHANGE and d[3] is False)
    peak = max(h[1] for h in held(arm["samples"]) if h[0] >= CHANGE)
    return {
        "exhausted_s": exhaustion(arm),
        "peak_pct": 100.0 * peak / POOL,
        "served": sum(1 for d in reqs if d[3]),
        "failed": sum(1 for d in reqs if d[3] is False),
        "unfinished": sum(1 for d in reqs if d[3] is None),
        "health_p99_before": p99(health_before),
        "health_p99_after": p99(health_after),
        "health_unanswered": sum(1 for d in after if d[0] == "health" and d[3] is None),
        "health_n": len(health_after),
        "failed_before": failed_before,
    }


def fmt(v, spec="%.0f", none="-"):
    return none if v is None else spec % v


def plot(out_dir, arms):
    if not shutil.which("gnuplot"):
        return None
    png = os.path.join(out_dir, "pool.png")
    script = ["set terminal pngcairo size 1200,800 font ',10'", "set output '%s'" % png,
              "set multiplot layout 2,1 title 'Pool of %d workers, dependency 200 ms -> 9 s at t = %.0f s'" % (POOL, CHANGE),
              "set datafile missing '-'",
              "set xlabel 't (s)'", "set ylabel 'pool occupancy (%)'", "set yrange [0:105]", "set grid",
              "set arrow from %f,0 to %f,105 nohead dt 2" % (CHANGE, CHANGE)]
    cols = {"off": "#c03030", "connect": "#d08020", "abort": "#2060c0"}
    script.append("plot " + ", ".join("'%s' using 1:2 with steps lw 2 lc rgb '%s' title 'depwatch %s'"
                                       % (os.path.join(out_dir, "pool-%s.tsv" % a["name"]), cols[a["name"]], a["name"])
                                       for a in arms))
    script += ["set ylabel 'health-check p99 (ms, log)'", "set logscale y", "set yrange [0.1:20000]"]
    script.append("plot " + ", ".join("'%s' using 1:6 with steps lw 2 lc rgb '%s' title 'depwatch %s'"
                                       % (os.path.join(out_dir, "pool-%s.tsv" % a["name"]), cols[a["name"]], a["name"])
                                       for a in arms))
    script.append("unset multiplot")
    subprocess.run(["gnuplot"], input="\n".join(script), text=True, check=True)
    return png


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE))
    ap.add_argument("--seconds", type=float, default=20.0)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="dwbench-pool-")
    load_before = open("/proc/loadavg").read().split()[:3]
    arms = []
    try:
        for name in ("off", "connect", "abort"):
            arms.append(run_arm(name, args.seconds, "/sys/fs/bpf/dwbench-pool", os.path.join(tmp, "run")))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for a in arms:
        with open(os.path.join(args.out, "pool-%s.tsv" % a["name"]), "w") as f:
            f.write("# t_s\tbusy_pct\tserved\tfailed\twaiting\thealth_p99_ms\n")
            for row in series(a):
                f.write("%.1f\t%s\t%d\t%d\t%d\t%s\n" % (row[0], fmt(row[1], "%.1f"), row[2], row[3], row[4],
                                                       fmt(row[5], "%.1f")))
    png = plot(args.out, arms)
    load_after = open("/proc/loadavg").read().split()[:3]
    lines = ["## The cascade, stopped: a worker pool against a dependency that goes from 200 ms to 9 s", "",
             "`bench/pool.py` (in `make bench`): a stand-in frontend with a fixed pool of %d worker threads, "
             "one keep-alive connection each to the dependency and no timeout of its own; Poisson arrivals at "
             "%.0f requests/s (%.0f%% of the pool at 200 ms); a health check %.0f times a second served by the same "
             "pool (it calls nothing: its latency is the wait for a worker). At t = %.0f s the dependency's "
             "answers start taking 9 s, with no errors. Three arms in one run, each %.0f s with a fresh "
             "dependency: no depwatch, `enforce = connect`, `enforce = abort` (`slow_call = %.0fms`, "
             "`open_for = 60s`)." % (POOL, RATE, RATE * NORMAL / POOL * 100, HEALTH_RATE, CHANGE, args.seconds,
                                    SLOW_CALL * 1e3), "",
             "Little's law: at 9 s a call, %.0f requests/s need %.0f workers; the pool has %d, and %.0f of them "
             "are free at the change: the calls made before it still end within 0.2 s, and from then on the pool "
             "fills at %.0f workers/s, so it is exhausted about %.1f s after the change." % (
                 RATE, RATE * SLOW, POOL, POOL - RATE * NORMAL, RATE, POOL / RATE), "",
             "Load average (1/5/15 min) before: %s, after: %s. The normal phase must be quiet: with "
             "`slow_call = 300ms` against 200 ms calls, a machine that stalls the stand-ins for 100 ms makes "
             "calls slow before the change (the last column; 0 on a clean run)." % (" ".join(load_before),
                                                                                    " ".join(load_after)), "",
             "| arm | pool exhausted after the change | peak occupancy | requests served / failed / unfinished after the change | health-check p99 before / after the change | health checks unanswered at the end | requests failed before the change |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for a in arms:
        s = summary(a)
        lines.append("| %s | %s | %.0f%% | %d / %d / %d | %s ms / %s ms | %d of %d | %d |" % (
            "depwatch off" if a["name"] == "off" else "`enforce = %s`" % a["name"],
            fmt(s["exhausted_s"], "%.2f s", "never"), s["peak_pct"], s["served"], s["failed"], s["unfinished"],
            fmt(s["health_p99_before"], "%.1f"), fmt(s["health_p99_after"], "%.1f"), s["health_unanswered"],
            s["health_n"], s["failed_before"]))
    lines += ["", "Occupancy counts workers busy for %.0f ms in a row (sampled every 20 ms): a burst of requests "
              "that fail at once, after the process was descheduled, fills the pool for a moment only." % (HOLD * 1e3),
              "", "Over time (per %.1f s: the most workers busy for %.0f ms, requests answered and failed in it, the "
              "most requests waiting for a worker, the p99 of the health checks that arrived in it; - : none "
              "answered yet):" % (BIN, HOLD * 1e3), ""]
    for a in arms:
        lines += ["<details><summary>%s</summary>" % a["name"], "", "| t (s) | busy | served | failed | waiting | health p99 (ms) |",
                  "|---:|---:|---:|---:|---:|---:|"]
        for row in series(a):
            lines.append("| %.1f | %s | %d | %d | %d | %s |" % (row[0], fmt(row[1], "%.0f%%"), row[2], row[3], row[4],
                                                                fmt(row[5], "%.1f")))
        lines += ["", "</details>", ""]
    if png:
        lines += ["![pool occupancy and health-check p99](%s)" % os.path.basename(png), ""]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(args.out, "pool.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
