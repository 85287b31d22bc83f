#!/usr/bin/env python3
"""
What the DNS hooks cost (issue 35): UDP that is no DNS (a 32-byte ping-pong on 127.0.0.1:21053)
and DNS itself (queries to Debian's unbound in a network namespace, one at a time), with and
without a depwatch daemon, arms alternating in each round; with kernel.bpf_stats_enabled on, the
run time per invocation of the dw_dns_ programs in the depwatch arm. Since issue 46 that is the
sock backend's query program (dw_dns_send, sock_send_length) and the close; the answers (the sock
backend's sk_data_ready branch) and the syscalls backend's reads are inside the call model's
programs, whose figures bench/progtime.py compares build against build.

    sudo python3 bench/dns.py [--rounds 5] [--seconds 3] [--backend sock|syscalls]

Prints a Markdown table (medians over the rounds, min-max of the per-round ratios). The ping-pong
also runs every other hook of the backend (the syscalls backend's system call tracepoints see the
UDP send and receive), which is why the per-program figures are the DNS hooks' own measure.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import bpfprogs  # noqa: E402
from dnsnet import NET, UPSTREAM_ADDR, Netns, Unbound  # noqa: E402

UDPPING = os.path.join(ROOT, "build", "udpping")
DEPWATCH = os.path.join(ROOT, "build", "depwatch")


def rate(argv):
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    return float(out.split()[1])


def start_daemon(backend):
    pin = "/sys/fs/bpf/dwbench-dns-%d" % os.getpid()
    run = tempfile.mkdtemp(prefix="dwbench-dns-")
    p = subprocess.Popen([DEPWATCH, "run", "--pin-dir", pin, "--run-dir", run, "--backend", backend],
                         stderr=subprocess.PIPE, text=True)
    for line in p.stderr:
        if line.startswith("depwatch: started ("):
            return p
    raise RuntimeError("depwatch did not start")


def stop_daemon(p):
    p.terminate()
    p.wait(20)


def dns_progs(pid):
    ids = bpfprogs.prog_ids(pid)
    return {p["name"]: (p.get("run_time_ns", 0), p.get("run_cnt", 0)) for p in bpfprogs.loaded()
            if p["id"] in ids and p.get("name", "").startswith("dw_dns_")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--backend", default="sock")
    a = ap.parse_args()
    ns = Netns([NET + ".1"])
    ub = None
    try:
        ub = Unbound(ns, NET + ".1", "%s@5300" % UPSTREAM_ADDR)
        echo = [UDPPING, "echo", "21053", str(a.seconds)]
        dns = ["ip", "netns", "exec", ns.name, UDPPING, "dns", NET + ".1", str(a.seconds)]
        res = {k: [] for k in ("echo_base", "echo_dw", "dns_base", "dns_dw")}
        per = {}
        subprocess.run(["sysctl", "-qw", "kernel.bpf_stats_enabled=1"], check=True)
        for r in range(a.rounds):
            res["echo_base"].append(rate(echo))
            res["dns_base"].append(rate(dns))
            d = start_daemon(a.backend)
            try:
                time.sleep(0.3)
                before = dns_progs(d.pid)
                res["echo_dw"].append(rate(echo))
                mid = dns_progs(d.pid)
                res["dns_dw"].append(rate(dns))
                after = dns_progs(d.pid)
                for name in after:
                    for arm, x, y in (("echo", before, mid), ("dns", mid, after)):
                        t = y[name][0] - x[name][0]
                        n = y[name][1] - x[name][1]
                        per.setdefault((arm, name), []).append(t / n if n else 0.0)
            finally:
                stop_daemon(d)
            print("round %d: %s" % (r + 1, {k: v[-1] for k, v in res.items()}), file=sys.stderr)
        subprocess.run(["sysctl", "-qw", "kernel.bpf_stats_enabled=0"])
        print("| workload | baseline round trips/s | depwatch (%s) | ratio (min-max) |" % a.backend)
        print("|---|---|---|---|")
        for arm, label in (("echo", "UDP ping-pong, 32 B, port 21053 (no DNS)"),
                           ("dns", "DNS queries to unbound, one at a time")):
            b, w = res[arm + "_base"], res[arm + "_dw"]
            ratios = [y / x for x, y in zip(b, w)]
            print("| %s | %.0f | %.0f | %.3f (%.3f-%.3f) |" % (label, statistics.median(b), statistics.median(w),
                                                           statistics.median(w) / statistics.median(b),
                                                           min(ratios), max(ratios)))
        print()
        print("| program | ns per invocation, ping-pong (no DNS) | ns per invocation, DNS |")
        print("|---|---|---|")
        for name in sorted({n for _, n in per}):
            print("| %s | %.0f | %.0f |" % (name, statistics.median(per[("echo", name)]),
                                           statistics.median(per[("dns", name)])))
    finally:
        if ub:
            ub.close()
        ns.close()


if __name__ == "__main__":
    main()
