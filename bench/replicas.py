#!/usr/bin/env python3
"""The seed's story with three replicas, one of them slow: a frontend's worker
pool against a dependency of three replicas, one of which goes from 200 ms to
9 s, with depwatch off, with ejection (eject = on, enforce = abort) and with
the breaker alone (enforce = abort, no eject) (issue 25).

The stand-in frontend has a fixed pool of N worker threads (POOL, 50), each
with one keep-alive connection per replica and no timeout of its own.
Requests arrive as a Poisson process at RATE (100/s: 100 x 0.2 s = 20 busy
workers, 40% of the pool); each takes a free worker, which calls the next
replica in a round-robin shared by the pool. A failed call (refused, reset,
aborted) closes that connection (the worker's next call to that replica
reconnects) and is retried once on the next replica: that failover is the
client's own, as a load balancer's "next upstream on error"; depwatch does
not retry anything, it only turns the slow replica's hang into fast errors.
A health check (10/s) goes through the same pool and answers without calling
anyone: its latency is the wait for a free worker. At CHANGE s one replica's
answers start taking 9 s, with no errors.

Three arms in one run, each with fresh replicas (three stand-in processes,
workpool.py's StandInProcess): no depwatch; depwatch with eject = on,
enforce = abort (slow_call = 300ms; eject_for's default 30 s keeps the
replica out for the rest of the arm); the same without eject, the
dependency's breaker alone, which rightly stays closed: the dependency's
slow_rate is about a third, under its 50%. Per 0.5 s: pool occupancy (the
most workers busy at once for HOLD s), requests served and failed (after the
retry), calls retried, requests waiting for a worker, health-check p99; the
time from the change to the pool's exhaustion (every worker busy), against
Little's law, and to its recovery; when the daemon ejected the replica
(--events) and its view at the end of the arm (status --json).

usage: bench/replicas.py [--out DIR] [--seconds S] [--arms off,eject,breaker]
(root; DEPWATCH names the binary). Writes DIR/replicas.md (Markdown),
DIR/replicas.tsv (the series, one gnuplot index block per arm) and, with
gnuplot, DIR/replicas.png. Not a test: nothing here asserts.
"""

import argparse
import json
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
# The keep-alive caller and the stand-in replica are the integration tests' (workpool.py).
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
from workpool import KeepAlive, StandInProcess  # noqa: E402
# the pool's story's own measures, the same here (bench/pool.py)
from pool import arrivals, bins, busy_pct, exhaustion, fmt, held, p99  # noqa: E402
DEPWATCH = os.environ.get("DEPWATCH", os.path.join(HERE, "..", "build", "depwatch"))
POOL, RATE, HEALTH_RATE = 50, 100.0, 10.0
REPLICAS, SLOW_REPLICA = 3, 1
NORMAL, SLOW, CHANGE = 0.2, 9.0, 5.0
SLOW_CALL = 0.3
BIN = 0.5
HOLD = 0.1
ARMS = ("off", "eject", "breaker")
LABEL = {"off": "depwatch off", "eject": "`eject = on`, `enforce = abort`",
         "breaker": "`enforce = abort` without eject (the breaker alone)"}
PLOT_LABEL = {"off": "depwatch off", "eject": "eject = on, enforce = abort",
              "breaker": "enforce = abort, no eject"}


class Frontend:
    """POOL workers, one keep-alive connection each per replica, fed from one queue; the
    replicas taken round-robin, a failed call retried once on the next one."""

    def __init__(self, ports):
        self.ports = ports
        self.q = queue.Queue()
        self.busy = 0
        self.next = 0
        self.lock = threading.Lock()
        self.done = []		# (kind, enqueued, finished, ok, retried)
        self.stop = threading.Event()
        self.workers = [threading.Thread(target=self.work, daemon=True) for _ in range(POOL)]
        for w in self.workers:
            w.start()

    def work(self):
        # every worker holds its connections from the start; a failed call closes one, the
        # next call on it reconnects (a refused connect is a failed call)
        conns = [KeepAlive(p, connect=True) for p in self.ports]
        while not self.stop.is_set():
            try:
                kind, t0 = self.q.get(timeout=0.1)
            except queue.Empty:
                continue
            with self.lock:
                self.busy += 1
                i = self.next
                self.next = (i + 1) % len(conns)
            ok, retried = True, False
            if kind == "req":
                ok, _ = conns[i].call()
                if not ok:
                    retried = True
                    ok, _ = conns[(i + 1) % len(conns)].call()
            with self.lock:
                self.busy -= 1
                self.done.append((kind, t0, time.monotonic(), ok, retried))
        for c in conns:
            c.close()


def start_daemon(name, ports, tmp, pin_dir, run_dir):
    conf = os.path.join(tmp, "replicas-%s.conf" % name)
    events = conf + ".events"
    with open(conf, "w") as f:
        f.write("[dependency pay]\n" + "".join("match = 127.0.0.1:%d\n" % p for p in ports) +
                "slow_call = %dms\nenforce = abort\n%s" % (SLOW_CALL * 1000, "eject = on\n" if name == "eject" else ""))
    daemon = subprocess.Popen([DEPWATCH, "run", "-c", conf, "--pin-dir", pin_dir, "--run-dir", run_dir,
                               "--events", events], stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    log = []
    for line in daemon.stderr:
        log.append(line)
        if line.startswith("depwatch: started ("):
            break
    else:
        raise RuntimeError("depwatch did not start:\n" + "".join(log))
    threading.Thread(target=lambda: log.extend(daemon.stderr), daemon=True).start()
    return daemon, events, log


def status(run_dir):
    try:
        out = subprocess.run([DEPWATCH, "status", "--json", "--run-dir", run_dir], capture_output=True,
                             text=True, timeout=10).stdout
        return json.loads(out)
    except (ValueError, subprocess.SubprocessError, OSError):
        return None


def run_arm(name, seconds, tmp, pin_dir):
    # at the machine's priority, as the frontend and the daemon
    srvs = [StandInProcess(NORMAL, nice=0) for _ in range(REPLICAS)]
    ports = [s.port for s in srvs]
    run_dir = os.path.join(tmp, "run-" + name)
    daemon = events = None
    log = []
    if name != "off":
        daemon, events, log = start_daemon(name, ports, tmp, pin_dir, run_dir)
    fe = Frontend(ports)
    time.sleep(0.5)		# the workers connect
    t_start = time.monotonic()
    w_start = time.time()
    end = t_start + seconds
    rng = random.Random(25)
    gens = [threading.Thread(target=arrivals, args=(fe, RATE, "req", end, rng), daemon=True),
            threading.Thread(target=arrivals, args=(fe, HEALTH_RATE, "health", end, rng), daemon=True)]
    for g in gens:
        g.start()
    samples = []	# (t, busy, waiting)
    w_change = None
    while time.monotonic() < end:
        now = time.monotonic()
        if w_change is None and now >= t_start + CHANGE:
            srvs[SLOW_REPLICA].set_delay(SLOW)
            w_change = time.time()
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
        pending.append((kind, t0, t_end, None, False))
    fe.stop.set()
    st = ejects = None
    if daemon:
        st = status(run_dir)
        daemon.terminate()
        daemon.wait(10)
        ejects = []
        if os.path.exists(events):
            with open(events) as f:
                for line in f:
                    try:
                        e = json.loads(line)
                    except ValueError:
                        continue
                    if e.get("event") in ("eject", "return"):
                        e["after_change_s"] = e.get("time", 0) - w_change
                        ejects.append(e)
    for s in srvs:
        s.close()
    return {"name": name, "t_start": t_start, "samples": samples, "done": done + pending,
            "seconds": seconds, "status": st, "ejects": ejects, "log": "".join(log),
            "slow_dest": "127.0.0.1:%d" % ports[SLOW_REPLICA], "w_start": w_start}


def series(arm):
    """Per BIN: (t, busy % held for HOLD s, served, failed, retried, max waiting, health p99 ms)."""
    return [(hi, busy_pct(busy), sum(1 for d in fin if d[3]), sum(1 for d in fin if not d[3]),
             sum(1 for d in fin if d[4]), max(wait or [0]), p99(health))
            for hi, busy, wait, fin, health in bins(arm)]


def mean_busy(arm, lo, hi):
    xs = [s[1] for s in arm["samples"] if lo <= s[0] < hi]
    return sum(xs) / len(xs) if xs else None


def summary(arm):
    t0 = arm["t_start"]
    kept = held(arm["samples"])
    # the normal phase's highest occupancy (after the first second), plus 10% of the pool
    normal_peak = max([b for t, b in kept if 1.0 <= t < CHANGE] or [0])
    threshold = normal_peak + POOL // 10
    after = [(t, b) for t, b in kept if t >= CHANGE]
    peak = max(b for t, b in after)
    above = [t for t, b in after if b > threshold]
    if not above:
        recovered = 0.0
    elif above[-1] >= after[-1][0] - 1.0:
        recovered = None	# still above in the arm's last second
    else:
        recovered = above[-1] + HOLD - CHANGE
    reqs = [d for d in arm["done"] if d[0] == "req" and d[1] - t0 >= CHANGE]
    health_after = [(d[2] - d[1]) * 1e3 for d in arm["done"] if d[0] == "health" and d[1] - t0 >= CHANGE]
    health_before = [(d[2] - d[1]) * 1e3 for d in arm["done"] if d[0] == "health" and d[1] - t0 < CHANGE - 0.5]
    ej = [e for e in (arm["ejects"] or []) if e.get("event") == "eject"]
    s = {
        "busy_before": mean_busy(arm, 1.0, CHANGE),
        "busy_last": mean_busy(arm, arm["seconds"] - 5.0, arm["seconds"]),
        "normal_peak": normal_peak, "threshold": threshold, "peak": peak,
        "exhausted_s": exhaustion(arm), "recovered_s": recovered,
        "served": sum(1 for d in reqs if d[3]),
        "failed": sum(1 for d in reqs if d[3] is False),
        "unfinished": sum(1 for d in reqs if d[3] is None),
        "retried": sum(1 for d in reqs if d[4]),
        "failed_before": sum(1 for d in arm["done"] if d[0] == "req" and d[1] - t0 < CHANGE and d[3] is False),
        "health_p99_before": p99(health_before), "health_p99_after": p99(health_after),
        "ejected_s": ej[0]["after_change_s"] if ej else None,
        "ejections": len(ej),
    }
    st = arm["status"]
    if st:
        dep = [d for d in st.get("dependencies", []) if d.get("name") == "pay"]
        dest = [d for d in st.get("destinations", []) if d.get("dest") == arm["slow_dest"]]
        s["dep"] = dep[0] if dep else {}
        s["dest"] = dest[0] if dest else {}
    return s


def write_tsv(path, arms):
    with open(path, "w") as f:
        for k, a in enumerate(arms):
            if k:
                f.write("\n\n")		# a gnuplot index block per arm
            f.write("# arm %s\n# t_s\tbusy_pct\tserved\tfailed\tretried\twaiting\thealth_p99_ms\n" % a["name"])
            for row in series(a):
                f.write("%.1f\t%s\t%d\t%d\t%d\t%d\t%s\n" % (row[0], fmt(row[1], "%.1f"), row[2], row[3], row[4],
                                                           row[5], fmt(row[6], "%.1f")))


def plot(out_dir, tsv, arms):
    if not shutil.which("gnuplot"):
        return None
    png = os.path.join(out_dir, "replicas.png")
    cols = {"off": "#c03030", "eject": "#2060c0", "breaker": "#d08020"}
    dts = {"off": 1, "eject": 1, "breaker": 2}	# the breaker alone draws over the off arm's line

    def plots(col, per_s=False):
        scale = "(column(%d)/%g)" % (col, BIN) if per_s else "%d" % col
        return "plot " + ", ".join("'%s' index %d using 1:%s with steps lw 2 lc rgb '%s' dt %d title '%s'"
                                   % (tsv, k, scale, cols[a["name"]], dts[a["name"]], PLOT_LABEL[a["name"]])
                                   for k, a in enumerate(arms))
    script = ["set terminal pngcairo size 1200,1000 font ',10'", "set output '%s'" % png,
              "set multiplot layout 3,1 title 'Pool of %d workers, three replicas round-robin (retry once on the next), "
              "one 200 ms -> 9 s at t = %.0f s'" % (POOL, CHANGE),
              "set datafile missing '-'", "set xlabel 't (s)'", "set grid", "set key top left opaque box",
              "set arrow 1 from %f, graph 0 to %f, graph 1 nohead dt 2" % (CHANGE, CHANGE),
              "set ylabel 'pool occupancy (%)'", "set yrange [0:105]", plots(2),
              "set ylabel 'requests served (/s)'", "set yrange [0:%d]" % (RATE * 2), plots(3, True),
              "set ylabel 'health-check p99 (ms, log)'", "set logscale y", "set yrange [0.1:20000]", plots(7),
              "unset multiplot"]
    subprocess.run(["gnuplot"], input="\n".join(script), text=True, check=True)
    return png


def report(args, arms, png, load_before, load_after):
    lines = ["## One slow replica of three: a worker pool with and without ejection", "",
             "`bench/replicas.py` (in `make bench`): a stand-in frontend with a fixed pool of %d worker threads, "
             "one keep-alive connection each to each of %d stand-in replicas (200 ms answers) and no timeout of "
             "its own; Poisson arrivals at %.0f requests/s (%.0f%% of the pool at 200 ms); each request calls the "
             "next replica round-robin and, if that call fails (refused, reset, aborted), retries once on the "
             "next one: the client's own failover, depwatch retries nothing. A health check %.0f times a second "
             "is served by the same pool (it calls nothing: its latency is the wait for a worker). At t = %.0f s "
             "one replica's answers start taking 9 s, with no errors. Arms of %.0f s each with fresh replicas: "
             "%s; `slow_call = %.0fms`, everything else default (`eject_for = 30s`: the replica stays out for the "
             "rest of the arm)." % (POOL, REPLICAS, RATE, RATE * NORMAL / POOL * 100, HEALTH_RATE, CHANGE,
                                   args.seconds, "; ".join(LABEL[a["name"]] for a in arms), SLOW_CALL * 1e3), "",
             "Little's law: a third of %.0f requests/s held 9 s each is %.0f more workers busy every second; "
             "the two healthy replicas keep about %.0f of the %d busy (the slow one's calls started before the "
             "change end within 0.2 s), so the pool is exhausted about %.1f s after the change, and the breaker "
             "cannot help: the dependency's `slow_rate` is about a third, under its 50%%." % (
                 RATE, RATE / REPLICAS, RATE * NORMAL * (REPLICAS - 1) / REPLICAS, POOL,
                 (POOL - RATE * NORMAL * (REPLICAS - 1) / REPLICAS) / (RATE / REPLICAS)), "",
             "Load average (1/5/15 min) before: %s, after: %s." % (" ".join(load_before), " ".join(load_after)), "",
             "| arm | mean busy before the change | peak busy after it | pool exhausted after the change | "
             "ejected after the change | back to the normal occupancy after the change | mean busy, last 5 s | "
             "requests served / failed / unfinished after the change (retried) | health-check p99 before / after | "
             "requests failed before the change |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    sums = {}
    for a in arms:
        s = sums[a["name"]] = summary(a)
        lines.append("| %s | %s | %d | %s | %s | %s | %s | %d / %d / %d (%d) | %s ms / %s ms | %d |" % (
            LABEL[a["name"]], fmt(s["busy_before"], "%.1f"), s["peak"], fmt(s["exhausted_s"], "%.2f s", "never"),
            "-" if a["name"] == "off" else fmt(s["ejected_s"], "%.2f s", "never"),
            fmt(s["recovered_s"], "%.2f s", "never"), fmt(s["busy_last"], "%.1f"), s["served"], s["failed"],
            s["unfinished"], s["retried"], fmt(s["health_p99_before"], "%.1f"), fmt(s["health_p99_after"], "%.1f"),
            s["failed_before"]))
    lines += ["", "Busy workers are those busy for %.0f ms in a row (sampled every 20 ms). \"Back to the normal "
              "occupancy\": from then on to the end of the arm, never more busy than the normal phase's peak "
              "plus %d (%d here; never: still above in the arm's last second)." % (
                  HOLD * 1e3, POOL // 10, sums[arms[0]["name"]]["threshold"]), ""]
    for a in arms:
        s = sums[a["name"]]
        if a["name"] == "off":
            continue
        dep, dest = s.get("dep"), s.get("dest")
        if dep is None:
            lines.append("- %s: no status at the end of the arm." % LABEL[a["name"]])
            continue
        lines.append("- %s, the daemon at the end of the arm: breaker `%s`, ejected destinations %s, slow replica "
                     "`ejected` %s (`%s`, %s ejection(s), reason %s), its connects refused %s, connections aborted "
                     "for the ejection %s; ejection events: %s." % (
                         LABEL[a["name"]], dep.get("breaker"), dep.get("ejected_dests"), dest.get("ejected"),
                         dest.get("ejected_state"), dest.get("ejections"), dest.get("ejected_reason"),
                         dest.get("rejected"), dest.get("aborted_eject"),
                         "; ".join("%s at +%.2f s (refused=%s aborted=%s)" % (e.get("event"), e["after_change_s"],
                                                                              e.get("refused"), e.get("aborted"))
                                   for e in a["ejects"]) or "none"))
    lines += ["", "Over time (per %.1f s: the most workers busy for %.0f ms, requests answered and failed in it, "
              "calls retried on the next replica, the most requests waiting for a worker, the p99 of the health "
              "checks that arrived in it; - : none answered yet):" % (BIN, HOLD * 1e3), ""]
    for a in arms:
        lines += ["<details><summary>%s</summary>" % PLOT_LABEL[a["name"]], "",
                  "| t (s) | busy | served | failed | retried | waiting | health p99 (ms) |",
                  "|---:|---:|---:|---:|---:|---:|---:|"]
        for row in series(a):
            lines.append("| %.1f | %s | %d | %d | %d | %d | %s |" % (row[0], fmt(row[1], "%.0f%%"), row[2], row[3],
                                                                     row[4], row[5], fmt(row[6], "%.1f")))
        lines += ["", "</details>", ""]
    if png:
        lines += ["![pool occupancy, requests served and health-check p99, one slow replica of three](%s)"
                  % os.path.basename(png), ""]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE))
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--arms", default=",".join(ARMS))
    args = ap.parse_args()
    names = [n for n in args.arms.split(",") if n]
    if not names or any(n not in ARMS for n in names):
        ap.error("--arms: a comma-separated subset of %s" % ",".join(ARMS))
    tmp = tempfile.mkdtemp(prefix="dwbench-replicas-")
    load_before = open("/proc/loadavg").read().split()[:3]
    arms = []
    try:
        for name in names:
            arms.append(run_arm(name, args.seconds, tmp, "/sys/fs/bpf/dwbench-replicas"))
    finally:
        if os.environ.get("REPLICAS_KEEP_LOGS"):
            for a in arms:
                print("--- %s daemon log ---\n%s" % (a["name"], a["log"]), file=sys.stderr)
        shutil.rmtree(tmp, ignore_errors=True)
    tsv = os.path.join(args.out, "replicas.tsv")
    write_tsv(tsv, arms)
    png = plot(args.out, tsv, arms)
    load_after = open("/proc/loadavg").read().split()[:3]
    text = report(args, arms, png, load_before, load_after)
    with open(os.path.join(args.out, "replicas.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
