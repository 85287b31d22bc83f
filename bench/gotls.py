#!/usr/bin/env python3
"""
The cost of Go's TLS probes (issue 34, doc/go.md): the Go client's throughput with and without
them, and the BPF time per probe hit.

    sudo python3 bench/gotls.py [--rounds 3] [--requests 3000] [--backend sock|syscalls]

Each round runs build/go/gotls-stripped-trimpath -h1 -c 1 -n REQUESTS (one HTTP/1.1 connection,
one goroutine: the client and the server in one process) alone, then again under a depwatch
daemon that has attached its Go probes to the file, the arms alternating. The figure of each run
is the program's own elapsed time of its requests. Under the daemon, kernel.bpf_stats_enabled
gives the dw_go_* programs' run time and hits: BPF ns per hit. The rest of a hit's cost is the
kernel's uprobe trap (an int3, and at an entry an out-of-line single-step), which no BPF
figure shows: it is in the throughput difference.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

import bpfprogs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, os.environ.get("OUT", "build"))
GOTLS = os.path.join(OUT, "go/gotls-stripped-trimpath")
DEPWATCH = os.path.join(OUT, "depwatch")


def run_go(n):
    out = subprocess.run([GOTLS, "-h1", "-c", "1", "-n", str(n)], capture_output=True, text=True,
                         timeout=300).stdout
    m = re.search(r"requests (\d+) failed 0 .*elapsed_us (\d+)", out)
    if not m or int(m.group(1)) != n:
        sys.exit("gotls: %r" % out)
    return int(m.group(2))


def wait_attached(run_dir, timeout=120):
    """Until the daemon of run_dir says it attached GOTLS (its first scan finds the process that
    maps it), or exits naming it."""
    deadline = time.monotonic() + timeout
    while True:
        st = subprocess.run([DEPWATCH, "status", "--json", "--run-dir", run_dir], capture_output=True,
                            text=True)
        if st.returncode == 0 and '"path":"%s"' % os.path.realpath(GOTLS) in st.stdout.replace(" ", "") \
                and '"attached":true' in st.stdout.replace(" ", ""):
            return
        if time.monotonic() > deadline:
            sys.exit("the daemon never attached %s" % GOTLS)
        time.sleep(0.2)


def go_progs():
    return {p["id"]: (p.get("name", "?"), p.get("run_time_ns", 0), p.get("run_cnt", 0))
            for p in bpfprogs.loaded() if p.get("name", "").startswith("dw_go_")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=3000)
    ap.add_argument("--backend", default="sock")
    a = ap.parse_args()
    run_dir = "/tmp/dwbench-gotls-%d" % os.getpid()
    os.makedirs(run_dir, exist_ok=True)
    alone, probed, ns_hit, hits_req = [], [], [], []
    with open("/proc/sys/kernel/bpf_stats_enabled") as f:
        stats_was = f.read().strip()
    for r in range(a.rounds):
        alone.append(run_go(a.requests))
        # a process running the file: the discovery attaches what processes map
        holder = subprocess.Popen([GOTLS, "-wait", "-n", "1"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
        d = subprocess.Popen([DEPWATCH, "run", "--backend", a.backend, "--run-dir", run_dir,
                              "--pin-dir", "/sys/fs/bpf/dwbench-gotls-%d" % os.getpid()],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            wait_attached(run_dir)
            holder.kill()
            holder.wait()
            with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
                f.write("1")
            before = go_progs()
            probed.append(run_go(a.requests))
            after = go_progs()
            with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
                f.write(stats_was)
            ns = sum(after[i][1] - before.get(i, ("", 0, 0))[1] for i in after)
            cnt = sum(after[i][2] - before.get(i, ("", 0, 0))[2] for i in after)
            ns_hit.append(ns / cnt if cnt else 0)
            hits_req.append(cnt / a.requests)
            # which probes the hits are: a request's entries and returns of Write and Read
            per = {}
            for i in after:
                per[after[i][0]] = per.get(after[i][0], 0) + after[i][2] - before.get(i, ("", 0, 0))[2]
            split = ", ".join("%s %.2f" % (k, v / a.requests) for k, v in sorted(per.items()) if v)
        finally:
            if holder.poll() is None:
                holder.kill()
                holder.wait()
            d.terminate()
            d.wait()
        print("round %d: alone %.0f ms, probed %.0f ms, %.1f hits a request (%s), %.0f BPF ns a hit"
              % (r + 1, alone[-1] / 1e3, probed[-1] / 1e3, hits_req[-1], split, ns_hit[-1]), flush=True)
    ma, mp = statistics.median(alone), statistics.median(probed)
    hits = statistics.median(hits_req)
    print("\n| figure | median of %d rounds (min-max) |\n| --- | --- |" % a.rounds)
    print("| requests/s alone | %.0f (%.0f-%.0f) |" % (a.requests / ma * 1e6, a.requests / max(alone) * 1e6,
                                                     a.requests / min(alone) * 1e6))
    print("| requests/s probed | %.0f (%.0f-%.0f) |" % (a.requests / mp * 1e6, a.requests / max(probed) * 1e6,
                                                      a.requests / min(probed) * 1e6))
    print("| probe hits a request (both ends) | %.1f |" % hits)
    print("| BPF ns a hit (dw_go_*) | %.0f (%.0f-%.0f) |" % (statistics.median(ns_hit), min(ns_hit), max(ns_hit)))
    print("| added per hit, trap included (us) | %.1f |" % ((mp - ma) / a.requests / hits if hits else 0))


if __name__ == "__main__":
    main()
