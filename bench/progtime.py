#!/usr/bin/env python3
"""
BPF run time per call of several builds, interleaved: the quick way to see
what one change to the programs costs, without make bench's throughput arms.

    sudo python3 bench/progtime.py [--rounds 6] [--threads 1] [--split]
        [--backend sock|syscalls] LABEL=BINARY ...

Each round starts each arm in turn (`BINARY run --backend sock`, --backend
syscalls with that option, or, for a
binary named `floor`, the floor loader), turns kernel.bpf_stats_enabled on,
runs one `pingpong --pin` of --seconds (--churn: a connection per call), and takes the deltas of its programs'
run_time_ns and run_cnt. A program's figure is its run time over pingpong's
calls (both ends of each loopback connection are traced, so a call is the
client's call and the server's request); the table gives the median over the
rounds and the min-max, and each program's time per invocation.

Only a measurement: the variants' figures (bench/variants) are wrong by
design. Per-program time moves with where the hypervisor puts the vCPUs from
one run to the next, which is why arms alternate within each round; another
loader's dw_ programs on the same hooks (someone's tests) are counted and
shown, since their traffic runs our programs too.
"""
import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import time

import bpfprogs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def snapshot(ids):
    return {p["id"]: (p.get("name", "?"), p.get("run_time_ns", 0), p.get("run_cnt", 0))
            for p in bpfprogs.loaded() if p["id"] in ids}


def start(label, binary, backend):
    path = f"/tmp/progtime-{label}.log"
    # the child's own open file: a shared one would share the offset our reads move
    log = open(path, "a")
    log.truncate(0)
    floor = os.path.basename(binary) == "floor"
    argv = [binary] if floor else [binary, "run", "--backend", backend,
                                   "--pin-dir", f"/sys/fs/bpf/progtime-{label}",
                                   "--run-dir", f"/run/progtime-{label}"]
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    log.close()
    want = "floor: ready" if floor else "depwatch: started"
    # the verifier takes 20 s and more on a loaded 2-core machine: up to 3 minutes
    for _ in range(1800):
        with open(path) as f:
            if want in f.read():
                return proc
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    stop(proc)
    with open(path) as f:
        sys.exit(f"progtime: {label} ({binary}) did not start:\n{f.read()}")


def stop(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    proc.wait()


def one_run(args, label, binary):
    proc = start(label, binary, args.backend)
    try:
        ids = bpfprogs.prog_ids(proc.pid)
        subprocess.run(["sysctl", "-q", "-w", "kernel.bpf_stats_enabled=1"], check=True)
        before = snapshot(ids)
        cmd = [args.pingpong, "--size", str(args.size), "--threads", str(args.threads),
               "--seconds", str(args.seconds), "--warmup-ms", "0", "--cpu", "--pin"]
        cmd += ["--split"] if args.split else []
        cmd += ["--churn"] if args.churn else []
        line = subprocess.run(cmd, capture_output=True,
                              text=True, check=True).stdout
        after = snapshot(ids)
        others = bpfprogs.dw_others(ids)
    finally:
        subprocess.run(["sysctl", "-q", "-w", f"kernel.bpf_stats_enabled={args.stats_orig}"])
        stop(proc)
    calls = int(re.search(r"calls=(\d+)", line).group(1))
    per = {}
    for pid, (name, t0, c0) in before.items():
        _, t1, c1 = after[pid]
        if c1 > c0:
            per[name] = ((t1 - t0) / calls, (t1 - t0) / (c1 - c0), (c1 - c0) / calls)
    return per, others


def spread(xs):
    return f"{statistics.median(xs):.0f} ({min(xs):.0f}–{max(xs):.0f})"


def report(args, arms, runs):
    first = arms[0][0]
    base = statistics.median(sum(v[0] for v in per.values()) for per, _ in runs[first])
    print(f"\n{args.size} B x {args.threads} thread(s){', split' if args.split else ''}{', churn' if args.churn else ''}, "
          f"{args.backend} backend, "
          f"{args.rounds} rounds of {args.seconds} s; ns of BPF run time per call, "
          f"median (min–max of rounds); per program: ns per invocation x invocations per call\n")
    print(f"| arm | per call | vs {first} | programs | other dw_ programs |")
    print("|---|---:|---:|---|---:|")
    for label, binary in arms:
        totals = [sum(v[0] for v in per.values()) for per, _ in runs[label]]
        names = sorted({n for per, _ in runs[label] for n, v in per.items() if v[2] >= 0.5})
        cells = []
        for n in names:
            inv = [per[n][1] for per, _ in runs[label] if n in per]
            cnt = statistics.median(per[n][2] for per, _ in runs[label] if n in per)
            cells.append(f"{n} {statistics.median(inv):.0f}×{cnt:.2f}")
        print(f"| {label} | {spread(totals)} | {statistics.median(totals) - base:+.0f} | "
              f"{', '.join(cells)} | {max(o for _, o in runs[label])} |")
    # every program that ran, rare ones too (dw_set_state: connects and closes), per arm
    names = []
    for label, _ in arms:
        names += sorted({n for per, _ in runs[label] for n in per} - set(names))
    print("\nPer program: ns per invocation, median (min–max of rounds); invocations per call "
          "(median), or in all over the rounds when under 0.05 per call\n")
    print("| program | " + " | ".join(label for label, _ in arms) + " |")
    print("|---|" + "---:|" * len(arms))
    for n in names:
        cells = []
        for label, _ in arms:
            inv = [per[n][1] for per, _ in runs[label] if n in per]
            if not inv:
                cells.append("—")
                continue
            cnt = statistics.median(per[n][2] for per, _ in runs[label] if n in per)
            times = f"{cnt:.2f}/call" if cnt >= 0.05 else "rare"
            cells.append(f"{spread(inv)} ({times})")
        print(f"| {n} | " + " | ".join(cells) + " |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--size", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=2)
    ap.add_argument("--split", action="store_true", help="a destination per thread")
    ap.add_argument("--churn", action="store_true",
                    help="a connection per call (figures per connection)")
    ap.add_argument("--backend", default="sock", choices=("sock", "syscalls"),
                    help="the daemons' backend (the floor has only the sock backend's hooks)")
    ap.add_argument("--pingpong", default=os.path.join(ROOT, "build-bench", "pingpong"))
    ap.add_argument("arms", nargs="+", metavar="LABEL=BINARY")
    args = ap.parse_args()
    if os.geteuid():
        sys.exit("progtime: needs root (loads BPF programs)")
    arms = []
    for a in args.arms:
        label, sep, binary = a.partition("=")
        if not sep or not os.access(binary, os.X_OK):
            sys.exit(f"progtime: {a}: want LABEL=BINARY, an executable")
        arms.append((label, binary))
    with open("/proc/sys/kernel/bpf_stats_enabled") as f:
        args.stats_orig = f.read().strip()
    runs = {label: [] for label, _ in arms}
    for r in range(args.rounds):
        for label, binary in arms:
            per, others = one_run(args, label, binary)
            runs[label].append((per, others))
            print(f"round {r + 1} {label}: {sum(v[0] for v in per.values()):.0f} ns/call",
                  file=sys.stderr, flush=True)
    report(args, arms, runs)


if __name__ == "__main__":
    main()
