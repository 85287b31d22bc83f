#!/usr/bin/env python3
"""Turns bench/run.sh's raw files into the Markdown report (stdout).

usage: report.py RUNS STATS
  RUNS   lines "size threads pair mode foreign calls seconds calls_per_s p50_us p99_us cpu_us":
         mode A (baseline) or B (depwatch); foreign, the dw_ programs of other loaders seen
  STATS  lines "size threads prog run_time_ns run_cnt calls" (deltas over one stats run)
Metadata comes from the environment (see run.sh).
"""
import os
import sys
from collections import OrderedDict, defaultdict
from statistics import median


def read_rows(path):
    with open(path) as f:
        return [line.split() for line in f if line.strip()]


def load_runs(path):
    runs = OrderedDict()
    for row in read_rows(path):
        size, threads, pair, mode, foreign, _calls, _secs, cps, p50, p99, cpu = row
        cfg = runs.setdefault((int(size), int(threads)), {"A": {}, "B": {}})
        cfg[mode][int(pair)] = (float(cps), float(p50), float(p99), int(foreign), float(cpu))
    return runs


def fmt_rate(x):
    return f"{x:,.0f}"


def fmt_lat(runs, i, j):
    return f"{median(r[i] for r in runs):.1f} / {median(r[j] for r in runs):.1f}"


def fmt_cpu(a, b):
    ca, cb = median(r[4] for r in a), median(r[4] for r in b)
    ratios = [y[4] / x[4] for x, y in zip(a, b) if x[4] > 0]
    return f"{ca:.2f} → {cb:.2f} ({cb / ca:.3f}, {min(ratios):.3f}–{max(ratios):.3f})"


def clean_ratio(a, b):
    """The ratio of medians over the pairs where neither run saw other dw_ programs."""
    clean = [(x, y) for x, y in zip(a, b) if not x[3] and not y[3]]
    if len(clean) < 3:
        return f"— ({len(clean)})"
    ratio = median(y[0] for _, y in clean) / median(x[0] for x, _ in clean)
    return f"{ratio:.3f} ({len(clean)})"


def summary_table(runs):
    out = [
        "| size (B) | client threads | pairs | baseline calls/s | depwatch calls/s "
        "| ratio with/baseline (min–max of pairs) | baseline p50 / p99 µs | depwatch p50 / p99 µs "
        "| CPU µs/call baseline → depwatch (ratio, min–max) "
        "| runs with other dw_ programs | ratio, clean pairs only (n) |",
        "|---:|---:|---:|---:|---:|---|---:|---:|---|---:|---|",
    ]
    for (size, threads), cfg in runs.items():
        pairs = sorted(set(cfg["A"]) & set(cfg["B"]))
        a = [cfg["A"][p] for p in pairs]
        b = [cfg["B"][p] for p in pairs]
        ratios = [y[0] / x[0] for x, y in zip(a, b) if x[0] > 0]
        ma, mb = median(r[0] for r in a), median(r[0] for r in b)
        out.append(
            f"| {size} | {threads} | {len(pairs)} | {fmt_rate(ma)} | {fmt_rate(mb)} "
            f"| {mb / ma:.3f} ({min(ratios):.3f}–{max(ratios):.3f}) "
            f"| {fmt_lat(a, 1, 2)} | {fmt_lat(b, 1, 2)} | {fmt_cpu(a, b)} "
            f"| {sum(1 for r in a + b if r[3])} | {clean_ratio(a, b)} |"
        )
    return out


def stats_table(path):
    rows = read_rows(path)
    if not rows:
        return ["(no BPF statistics were collected)"]
    cfgs = list(OrderedDict.fromkeys((int(r[0]), int(r[1])) for r in rows))
    cell = defaultdict(lambda: (0, 0))
    calls = {}
    progs = []
    for size, threads, name, ns, cnt, ncalls in rows:
        key = (int(size), int(threads))
        t, c = cell[(name, key)]
        cell[(name, key)] = (t + int(ns), c + int(cnt))
        calls[key] = int(ncalls)
        if name not in progs:
            progs.append(name)
    head = " | ".join(f"{s} B × {t} thr" for s, t in cfgs)
    out = [f"| program | {head} |", "|---|" + "---:|" * len(cfgs)]
    for name in progs:
        cells = []
        for key in cfgs:
            t, c = cell[(name, key)]
            per_call = c / calls[key] if calls[key] else 0
            if not c:
                cells.append("— (0 runs)")
            elif per_call < 0.05:
                cells.append(f"{t / c:.0f} ns ({c} runs)")
            else:
                cells.append(f"{t / c:.0f} ns ({per_call:.2f}/call)")
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    totals = []
    for key in cfgs:
        t = sum(cell[(n, key)][0] for n in progs)
        totals.append(f"{t / calls[key]:.0f} ns/call" if calls[key] else "—")
    out.append("| **all dw_ programs** | " + " | ".join(totals) + " |")
    return out


def raw_table(runs):
    out = [
        "| size (B) | threads | pair | mode | calls/s | p50 µs | p99 µs | CPU µs/call "
        "| other dw_ programs |",
        "|---:|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for (size, threads), cfg in runs.items():
        for pair in sorted(set(cfg["A"]) | set(cfg["B"])):
            for mode, label in (("A", "baseline"), ("B", "depwatch")):
                if pair not in cfg[mode]:
                    continue
                cps, p50, p99, foreign, cpu = cfg[mode][pair]
                out.append(
                    f"| {size} | {threads} | {pair} | {label} | {fmt_rate(cps)} "
                    f"| {p50:.1f} | {p99:.1f} | {cpu:.2f} | {foreign} |"
                )
    return out


def foreign_note(runs):
    n = sum(1 for cfg in runs.values() for m in "AB" for r in cfg[m].values() if r[3])
    if not n:
        return "No other loader's dw_ programs were attached before or after any run."
    return (
        f"WARNING: {n} run(s) had another loader's dw_ programs attached (another depwatch, "
        "e.g. someone's integration tests) before or after the run: those runs include its "
        "cost. See the last column of the raw runs."
    )


def pin_text(pin):
    if pin == "0":
        return "Threads are not pinned (PIN=0): the scheduler places them."
    return (
        "With `--pin`: client thread i and the server thread of its connection share the "
        "i-th CPU, so each call stays on one CPU (1 thread: one CPU busy; 2 threads: both). "
        "Unpinned single-connection runs on this VM swing several-fold between runs with the "
        "scheduler's placement (cross-CPU wake-ups), which would bury the effect measured."
    )


def main():
    runs_path, stats_path = sys.argv[1:3]
    env = os.environ.get
    runs = load_runs(runs_path)
    lines = [
        "# depwatch overhead: loopback request/response, without vs with depwatch",
        "",
        f"- Date: {env('DATE', '?')}",
        f"- Kernel: `{env('KERNEL', '?')}`",
        f"- CPU: {env('CPU_MODEL', '?')}, {env('CORES', '?')} cores",
        f"- Command: `{env('CMDLINE', 'make bench')}` (as root, from the repository root)",
        f"- Build (sha256 prefix): {env('BUILD_ID', '?')}; the daemon's hooks: "
        f"{env('ATTACHED', '?')}",
        f"- Load average (1/5/15 min) before: {env('LOAD_BEFORE', '?')}, "
        f"after: {env('LOAD_AFTER', '?')}; whole run took {env('ELAPSED', '?')} s",
        "",
        "Workload: `build/pingpong`, one process, 127.0.0.1 only. N client threads on "
        "persistent TCP connections each send a request of S bytes and block until the "
        "S-byte response has fully arrived; the server answers from one thread per "
        "connection. No think time. Latency is client-side, per call, exact percentiles. "
        + pin_text(env("PIN", "1")),
        "",
        f"Method: for each configuration, {env('PAIRS', '?')} pairs of runs alternating in "
        "time (baseline, depwatch, baseline, depwatch, ...), each run "
        f"{env('RUN_SECONDS', '?')} s after a {env('WARMUP_MS', '?')} ms warm-up. A fresh "
        "`depwatch run` is started before and stopped (SIGTERM) after every depwatch run, "
        "so baselines have no dw_ programs attached. Figures are medians over the runs; "
        "the ratio is median(depwatch) / median(baseline), and the range is the min–max "
        "of the per-pair ratios. Ratio < 1 means depwatch costs throughput. "
        "CPU µs/call is pingpong's own CPU time (user + system, all threads, both ends of "
        "every connection; BPF programs run in it) over the measured period per call, with "
        "the same ratio and range (> 1 means depwatch costs CPU): on a shared machine it is "
        "steadier than calls/s, which also moves with whoever else wants the CPUs. The last "
        "column repeats the ratio over the pairs in which neither run saw another "
        "loader's dw_ programs (shown when there are at least 3).",
        "",
        "## Throughput and latency",
        "",
        *summary_table(runs),
        "",
        foreign_note(runs),
        "",
        "## Cost per BPF program",
        "",
        "One extra run per configuration (not in the table above) with depwatch running "
        "and `kernel.bpf_stats_enabled=1`, no warm-up; the sysctl is restored afterwards. "
        "Cells: average run time per invocation (run_time_ns / run_cnt, deltas over the "
        "run, from `bpftool prog show --json`) and invocations per pingpong call (or the "
        "number of invocations, when well under one per call). Counts "
        "include every TCP event on the host during the run, both ends of each loopback "
        "connection, and the connects and closes. The last row is all dw_ programs' run "
        "time divided by the calls made. Enabling the statistics adds its own cost "
        "(two clock reads per invocation), so these runs are not used for throughput.",
        "",
        *stats_table(stats_path),
        "",
        "TODO(bench): bpftrace peer comparison (same workload with an equivalent bpftrace "
        "script attached) not run yet; no numbers here on purpose.",
        "",
        "## Raw runs",
        "",
        "<details><summary>every run, in the order run</summary>",
        "",
        *raw_table(runs),
        "",
        "</details>",
    ]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
