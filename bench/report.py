#!/usr/bin/env python3
"""Turns bench/run.sh's raw files into the Markdown report (stdout).

usage: report.py RUNS STATS DECIDE SCALE [DECIDE_FAST [DD [H2 H2STATS]]]
  RUNS    lines "workload size threads pair mode foreign calls seconds calls_per_s p50_us p99_us
          cpu_us": workload pingpong, split (pingpong --split: a destination per thread) or
          churn (a connection per call); mode A (baseline), F (the floor: bench/floor.bpf.c),
          B (depwatch, sock backend), H (the same, daemon stopped after its start), P (the
          BEFORE binary, sock backend), S (depwatch, syscalls backend) or C (bpftrace peer);
          foreign, the dw_ programs of other loaders seen
  STATS   lines "mode workload size threads prog run_time_ns run_cnt calls foreign" (deltas over
          one stats run)
  DECIDE  bench/decide.py --out's JSON (empty file: not run)
  SCALE   bench/scale.py --out's JSON (empty file: not run)
  DECIDE_FAST  the same as DECIDE, from trials with --interval 50ms (optional)
  DD      lines "pair mode foreign seconds": dd bs=64 /dev/zero -> /dev/null (optional)
  H2      lines "pair mode foreign req_per_s done succeeded failed mean_us cpu_us_per_req": h2load
          against nghttpd (issue 23; optional)
  H2STATS lines "mode prog run_time_ns run_cnt streams foreign run counted" (deltas over one
          h2load run with kernel.bpf_stats_enabled=1; counted: depwatch's streams, "out/in")
Metadata comes from the environment (see run.sh).
"""
import json
import os
import sys
from collections import OrderedDict, defaultdict
from statistics import median

from summary import summary_lines

MODES = OrderedDict((("A", "baseline"), ("F", "floor"), ("B", "depwatch"),
                     ("H", "depwatch, daemon stopped"),
                     ("P", os.environ.get("BEFORE_LABEL") or "depwatch before"),
                     ("S", "depwatch syscalls"), ("C", "bpftrace")))
SLOW_CALL_MS = 500
CHURN_TARGET = 0.95
# Issue 17: depwatch's distance to the floor, in points of baseline, at most.
FLOOR_TARGETS = {("pingpong", 1, 2): 1.0, ("pingpong", 1, 1): 2.0, ("churn", 1, 2): 2.0}
# Programs that do the same job under a new name: before → after table rows pair them.
SAME_JOB = {"dw_sendmsg": "dw_send"}  # tp_btf/tcp_sendmsg_locked, where sock_send_length was


def cfg_label(key):
    workload, size, threads = key
    if workload == "split":
        return f"{size} B × {threads} thr, split"
    return f"{'churn ' if workload == 'churn' else ''}{size} B × {threads} thr"


def workload_name(workload):
    if workload == "split":
        return "ping-pong, a destination per thread (--split)"
    return "churn (connection per call)" if workload == "churn" else "ping-pong"


def read_rows(path):
    with open(path) as f:
        return [line.split() for line in f if line.strip()]


def read_json(path):
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return None
    return json.loads(text) if text.strip() else None


def load_runs(path):
    runs = OrderedDict()
    for row in read_rows(path):
        workload, size, threads, pair, mode, foreign, _calls, _secs, cps, p50, p99, cpu = row
        cfg = runs.setdefault((workload, int(size), int(threads)), {m: {} for m in MODES})
        cfg[mode][int(pair)] = (float(cps), float(p50), float(p99), int(foreign), float(cpu))
    return runs


def fmt_rate(x):
    return f"{x:,.0f}"


def med(rows, i):
    return median(r[i] for r in rows)


def paired(cfg, m1, m2):
    """Runs of m1 and m2 in the rounds that have both."""
    pairs = sorted(set(cfg[m1]) & set(cfg[m2]))
    return [cfg[m1][p] for p in pairs], [cfg[m2][p] for p in pairs]


def ratio_cell(cfg, m1, m2, i=0):
    """median(m2) / median(m1) of field i, with the min-max of the per-round ratios."""
    a, b = paired(cfg, m1, m2)
    if not a:
        return "—", None
    ratios = [y[i] / x[i] for x, y in zip(a, b) if x[i] > 0]
    r = med(b, i) / med(a, i)
    return f"{r:.3f} ({min(ratios):.3f}–{max(ratios):.3f})", r


def clean_ratio(cfg, m1, m2):
    """The ratio of medians over the rounds where neither run saw other dw_ programs."""
    a, b = paired(cfg, m1, m2)
    clean = [(x, y) for x, y in zip(a, b) if not x[3] and not y[3]]
    if len(clean) < 3:
        return f"— ({len(clean)})"
    return f"{median(y[0] for _, y in clean) / median(x[0] for x, _ in clean):.3f} ({len(clean)})"


def has(cfg, mode):
    return bool(cfg[mode])


def throughput_table(runs):
    peer = any(has(c, "C") for c in runs.values())
    sysc = any(has(c, "S") for c in runs.values())
    before = any(has(c, "P") for c in runs.values())
    head = ("| workload | size (B) | client threads | rounds | baseline calls/s | depwatch calls/s "
            "| depwatch / baseline (min–max of rounds) ")
    sep = "|---|---:|---:|---:|---:|---:|---|"
    if before:
        head += (f"| {MODES['P']} calls/s | {MODES['P']} / baseline (min–max) "
                 f"| depwatch / {MODES['P']} (min–max) ")
        sep += "---:|---|---|"
    if sysc:
        head += "| depwatch syscalls calls/s | depwatch syscalls / baseline (min–max) "
        sep += "---:|---|"
    if peer:
        head += "| bpftrace calls/s | bpftrace / baseline (min–max) | depwatch / bpftrace (min–max) "
        sep += "---:|---|---|"
    head += "| runs with other dw_ programs | depwatch / baseline, clean rounds only (n) |"
    sep += "---:|---|"
    out = [head, sep]
    for (workload, size, threads), cfg in runs.items():
        rounds = len(cfg["A"])
        cells = [workload_name(workload), str(size), str(threads), str(rounds),
                 fmt_rate(med(cfg["A"].values(), 0)),
                 fmt_rate(med(cfg["B"].values(), 0)), ratio_cell(cfg, "A", "B")[0]]
        if before:
            cells += [fmt_rate(med(cfg["P"].values(), 0)) if has(cfg, "P") else "—",
                      ratio_cell(cfg, "A", "P")[0], ratio_cell(cfg, "P", "B")[0]]
        if sysc:
            cells += [fmt_rate(med(cfg["S"].values(), 0)) if has(cfg, "S") else "—",
                      ratio_cell(cfg, "A", "S")[0]]
        if peer:
            cells += [fmt_rate(med(cfg["C"].values(), 0)) if has(cfg, "C") else "—",
                      ratio_cell(cfg, "A", "C")[0], ratio_cell(cfg, "C", "B")[0]]
        dirty = sum(1 for m in MODES for r in cfg[m].values() if r[3])
        cells += [str(dirty), clean_ratio(cfg, "A", "B")]
        out.append("| " + " | ".join(cells) + " |")
    return out


def round_ratios(cfg, mode, i=0):
    """{round: field i of mode's run / the mean of the baselines around it}: the round's own
    baseline (run first in the round) and the next round's, where there is one."""
    out = {}
    for rnd, run in cfg[mode].items():
        around = [cfg["A"][r][i] for r in (rnd, rnd + 1) if r in cfg["A"]]
        if around and sum(around) > 0:
            out[rnd] = run[i] / (sum(around) / len(around))
    return out


def spread(xs, fmt="{:.3f}"):
    """median (min–max)"""
    return f"{fmt.format(median(xs))} ({fmt.format(min(xs))}–{fmt.format(max(xs))})"


def floor_distance(cfg, mode, ref="F"):
    """Per round, 100 × (ref's ratio − mode's ratio): points of baseline between them."""
    a, b = round_ratios(cfg, ref), round_ratios(cfg, mode)
    return [100 * (a[r] - b[r]) for r in sorted(set(a) & set(b))]


def floor_table(runs):
    modes = [m for m in ("F", "B", "H", "S", "P", "C") if any(has(c, m) for c in runs.values())]
    head = ("| workload | size (B) | client threads | rounds | baseline calls/s | "
            + " | ".join(f"{MODES[m]} / baseline" for m in modes)
            + " | depwatch − floor, points | daemon stopped − floor, points "
            "| depwatch − daemon stopped, points (the daemon's share) |")
    out = [head, "|---|---:|---:|---:|---:|" + "---|" * len(modes) + "---|---|---|"]
    for (workload, size, threads), cfg in runs.items():
        cells = [workload_name(workload), str(size), str(threads), str(len(cfg["A"])),
                 fmt_rate(med(cfg["A"].values(), 0))]
        for m in modes:
            rr = list(round_ratios(cfg, m).values())
            cells.append(spread(rr) if rr else "—")
        for m, ref in (("B", "F"), ("H", "F"), ("B", "H")):
            d = floor_distance(cfg, m, ref)
            cells.append(spread(d, "{:+.1f}") if d else "—")
        out.append("| " + " | ".join(cells) + " |")
    return out


def floor_targets(runs):
    out = []
    for key, limit in FLOOR_TARGETS.items():
        cfg = runs.get(key)
        if not cfg or not has(cfg, "F") or not has(cfg, "B"):
            continue
        d = floor_distance(cfg, "B")
        what = ("connection churn" if key[0] == "churn" else "1-byte ping-pong") + f", {key[2]} thread(s)"
        out.append(f"| {what}: depwatch within {limit:.0f} point(s) of the floor, same rounds "
                   f"| {spread(d, '{:+.1f}')} points | {verdict(median(d) <= limit)} |")
    return out


def latency_table(runs):
    modes = [m for m in MODES if any(has(c, m) for c in runs.values())]
    head = "| workload | size (B) | client threads | " + " | ".join(
        f"{MODES[m]} p50 / p99 µs" for m in modes) + " | CPU µs/call: " + " → ".join(
        MODES[m] for m in modes) + " (ratios to baseline) |"
    out = [head, "|---|---:|---:|" + "---:|" * len(modes) + "---|"]
    for (workload, size, threads), cfg in runs.items():
        lat = [f"{med(cfg[m].values(), 1):.1f} / {med(cfg[m].values(), 2):.1f}" if has(cfg, m) else "—"
               for m in modes]
        cpu = " → ".join(f"{med(cfg[m].values(), 4):.2f}" if has(cfg, m) else "—" for m in modes)
        ratios = "; ".join(f"{MODES[m]} {ratio_cell(cfg, 'A', m, 4)[0]}" for m in modes[1:])
        out.append(f"| {workload_name(workload)} | {size} | {threads} | " + " | ".join(lat)
                   + f" | {cpu} ({ratios}) |")
    return out


# {(mode, cfg): {run: [all programs' run time, calls]}}: each statistics run's own figures
STATS_RUNS = defaultdict(dict)


def load_stats(path):
    """{mode: (cfgs, cell[(name, cfg)] = (ns, cnt), calls[cfg], progs, foreign[cfg])}, summed over
    the statistics runs (STATS_RUNS=N in run.sh); each run's own total goes to STATS_RUNS."""
    res = {}
    for row in read_rows(path):
        mode, workload, size, threads, name, ns, cnt, ncalls, foreign = row[:9]
        run = int(row[9]) if len(row) > 9 else 1
        cfgs, cell, calls, progs, fgn = res.setdefault(mode, ([], defaultdict(lambda: (0, 0)), {}, [], {}))
        key = (workload, int(size), int(threads))
        if key not in cfgs:
            cfgs.append(key)
        t, c = cell[(name, key)]
        cell[(name, key)] = (t + int(ns), c + int(cnt))
        per_run = STATS_RUNS[(mode, key)].setdefault(run, [0, int(ncalls)])
        per_run[0] += int(ns)
        calls[key] = sum(r[1] for r in STATS_RUNS[(mode, key)].values())
        fgn[key] = max(fgn.get(key, 0), int(foreign))
        if name not in progs:
            progs.append(name)
    return res


def per_invocation(stats, mode, key):
    """All programs' run time over all their invocations, in ns."""
    cfgs, cell, _calls, progs, _f = stats[mode]
    t = sum(cell[(n, key)][0] for n in progs)
    c = sum(cell[(n, key)][1] for n in progs)
    return t / c if c else None


def stats_table(stats, mode):
    cfgs, cell, calls, progs, fgn = stats[mode]
    head = " | ".join(cfg_label(k) for k in cfgs)
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
    avg = [f"{per_invocation(stats, mode, k):.0f} ns" if per_invocation(stats, mode, k) else "—"
           for k in cfgs]
    out.append("| **average per invocation, all programs** | " + " | ".join(avg) + " |")
    totals = []
    for key in cfgs:
        t = sum(cell[(n, key)][0] for n in progs)
        totals.append(f"{t / calls[key]:.0f} ns/call" if calls[key] else "—")
    out.append("| **all programs, per call (churn: per connection)** | " + " | ".join(totals) + " |")
    if any(len(STATS_RUNS[(mode, k)]) > 1 for k in cfgs):
        each = []
        for key in cfgs:
            per = [t / n for t, n in STATS_RUNS[(mode, key)].values() if n]
            each.append(f"{spread(per, '{:.0f}')} ({len(per)})" if per else "—")
        out.append("| all programs, per call: each statistics run, median (min–max) (runs) | "
                   + " | ".join(each) + " |")
    out.append("| other dw_ programs attached | " + " | ".join(str(fgn[k]) for k in cfgs) + " |")
    return out


def before_after_table(runs, stats):
    """Per program and configuration: the BEFORE binary's ns per invocation next to this build's."""
    out = ["| configuration | program | before ns / invocation | now ns / invocation | now − before "
           "| invocations per call (or in all): before → now |", "|---|---|---:|---:|---:|---|"]
    _bc, bcell, bcalls, bprogs, _bf = stats["P"]
    ncfgs, ncell, ncalls, nprogs, _nf = stats["B"]
    paired = {n: SAME_JOB[n] for n in nprogs
              if SAME_JOB.get(n) in bprogs and SAME_JOB[n] not in nprogs and n not in bprogs}
    for key in ncfgs:
        for name in nprogs + [n for n in bprogs if n not in nprogs and n not in paired.values()]:
            bname = paired.get(name, name)
            bt, bn = bcell[(bname, key)]
            nt, nn = ncell[(name, key)]
            if not bn and not nn:
                continue
            b = bt / bn if bn else None
            n = nt / nn if nn else None
            diff = f"{n - b:+.0f} ns ({100 * (n / b - 1):+.0f}%)" if b and n else "—"
            per = " → ".join("—" if not calls.get(key) else f"{c / calls[key]:.2f}"
                             if c / calls[key] >= 0.05 else f"{c} runs"
                             for c, calls in ((bn, bcalls), (nn, ncalls)))
            label = f"{bname} → {name}" if bname != name else name
            out.append(f"| {cfg_label(key)} | {label} | {f'{b:.0f}' if b else '—'} "
                       f"| {f'{n:.0f}' if n else '—'} | {diff} | {per} |")
        bt = sum(bcell[(p, key)][0] for p in bprogs)
        nt = sum(ncell[(p, key)][0] for p in nprogs)
        if bcalls.get(key) and ncalls.get(key):
            out.append(f"| {cfg_label(key)} | **all programs, ns per call** | {bt / bcalls[key]:.0f} "
                       f"| {nt / ncalls[key]:.0f} | {nt / ncalls[key] - bt / bcalls[key]:+.0f} ns | |")
    for key, cfg in runs.items():
        if has(cfg, "P"):
            out.append(f"| {cfg_label(key)} | throughput / baseline (min–max) | {ratio_cell(cfg, 'A', 'P')[0]} "
                       f"| {ratio_cell(cfg, 'A', 'B')[0]} | now / before {ratio_cell(cfg, 'P', 'B')[0]} | |")
    return out


def raw_table(runs):
    out = [
        "| workload | size (B) | threads | round | mode | calls/s | p50 µs | p99 µs | CPU µs/call "
        "| other dw_ programs |",
        "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for (workload, size, threads), cfg in runs.items():
        for rnd in sorted(set().union(*(cfg[m].keys() for m in MODES))):
            for mode, label in MODES.items():
                if rnd not in cfg[mode]:
                    continue
                cps, p50, p99, foreign, cpu = cfg[mode][rnd]
                out.append(
                    f"| {workload} | {size} | {threads} | {rnd} | {label} | {fmt_rate(cps)} "
                    f"| {p50:.1f} | {p99:.1f} | {cpu:.2f} | {foreign} |"
                )
    return out


def ms(v):
    return "never" if v is None else f"{v * 1000:.0f}"


def decide_summary(dec):
    trials = dec["trials"]
    dws = [t["depwatch_s"] for t in trials if t["depwatch_s"] is not None]
    r4s = [t["completion_only_s"] for t in trials if t["completion_only_s"] is not None]
    return dws, r4s, len(trials), sum(1 for t in trials if t["foreign"])


def decide_table(dec, fast):
    dws, r4s, n, dirty = decide_summary(dec)

    def row(label, xs, n):
        if not xs:
            return f"| {label} | — | — | — | 0/{n} |"
        return (f"| {label} | {ms(median(xs))} | {ms(max(xs))} | {ms(min(xs))} | {len(xs)}/{n} |")

    def every(d):
        return ", ".join(f"{ms(t['depwatch_s'])}/{ms(t['completion_only_s'])}" for t in d["trials"])

    out = [
        "| breaker (slow_call 500 ms, 40 calls/s, 20 ms → 3 s) | median ms | worst ms | best ms "
        "| trials opened |",
        "|---|---:|---:|---:|---:|",
        row("depwatch (in-flight calls judged by their age), default 250 ms interval", dws, n),
        row("completion-only rule (resilience4j count window, same thresholds)", r4s, n),
    ]
    if fast:
        fdws, _fr4s, fn, fdirty = decide_summary(fast)
        out.append(row("for comparison: depwatch with `--interval 50ms`", fdws, fn))
    out += [
        "",
        f"Trials with other dw_ programs attached: {dirty} of {n}"
        + (f" (and {fdirty} of {fn} with `--interval 50ms`)" if fast else "")
        + f". Every trial, in ms (depwatch / completion-only): {every(dec)}."
        + (f" With `--interval 50ms`: {every(fast)}." if fast else ""),
    ]
    return out


def scale_rows(scale):
    return scale["results"] if scale else []


def scale_table(scale):
    out = [
        "| destinations × connections | calls/s (trickle) | setup s | daemon CPU, % of one core "
        "| peak RSS MiB (after the status calls) | polling pass ms: median / max (n) "
        "| destinations seen | other dw_ programs (before / after) | notes |",
        "|---|---:|---:|---:|---:|---|---:|---:|---|",
    ]
    for r in scale_rows(scale):
        size = f"{r['dests']:,} × {r['conns']:,}"
        if "error" in r:
            out.append(f"| {size} | — | — | — | — | — | — | — | FAILED: {r['error']} |")
            continue
        polls = r.get("polls") or []
        poll = f"{median(polls):.1f} / {max(polls):.1f} ({len(polls)})" if polls else "—"
        notes = [f"--max-dests {r['max_dests']}", f"whole case {r['total_s']:.0f} s"]
        if r.get("dest_map_full"):
            notes.append(f"dest_map_full {r['dest_map_full']}")
        if r.get("conn_storage_fail"):
            notes.append(f"conn_storage_fail {r['conn_storage_fail']}")
        if r.get("daemon_rc"):
            notes.append(f"daemon exit status {r['daemon_rc']}")
        if r.get("conns_made") != r["conns"] or r.get("dests_made") != r["dests"]:
            notes.append(f"made {r.get('dests_made')} × {r.get('conns_made')}")
        load = r.get("load") or {}
        notes.append("%d load processes: %.0f calls in %.0f s, %.0f errors, %.1f CPU s" % (
            r.get("load_procs", 0), load.get("calls", 0), load.get("seconds", 0),
            load.get("errors", 0), load.get("cpu_s", 0)))
        out.append(
            f"| {size} | {r['conns'] / r['period']:,.0f} | {r['setup_s']:.1f} | {r['cpu_pct']:.2f} "
            f"| {r['hwm_kib'] / 1024:.1f} ({r['hwm_after_status_kib'] / 1024:.1f}) | {poll} "
            f"| {r.get('dests_used') or 0:,} | {r['foreign_before']} / {r['foreign_after']} "
            f"| {'; '.join(notes)} |")
    return out


def verdict(ok):
    return "—" if ok is None else ("met" if ok else "**missed**")


def targets_table(runs, stats, dec, scale):
    out = ["| target | measured | |", "|---|---|---|", *floor_targets(runs)]
    for key in (("pingpong", 1, 1), ("pingpong", 1, 2)):
        cfg = runs.get(key)
        if not cfg:
            continue
        key = key[1:]
        cell, r = ratio_cell(cfg, "A", "B")
        out.append(f"| 1-byte ping-pong, {key[1]} thread(s): depwatch ≥ 97% of baseline "
                   f"| {cell} | {verdict(None if r is None else r >= 0.97)} |")
        if has(cfg, "P"):
            cell, r = ratio_cell(cfg, "A", "P")
            out.append(f"| ({MODES['P']}: BEFORE's binary) 1-byte ping-pong, {key[1]} thread(s): ≥ 97% of "
                       f"baseline | {cell} | {verdict(None if r is None else r >= 0.97)} |")
        if has(cfg, "C"):
            b, c = med(cfg["B"].values(), 0), med(cfg["C"].values(), 0)
            out.append(f"| 1-byte ping-pong, {key[1]} thread(s): depwatch better than the bpftrace peer "
                       f"| {fmt_rate(b)} vs {fmt_rate(c)} calls/s ({b / c:.3f}) | {verdict(b > c)} |")
        if has(cfg, "S"):
            cell, r = ratio_cell(cfg, "A", "S")
            out.append(f"| (syscalls backend, for kernels before 6.3) 1-byte ping-pong, {key[1]} thread(s): "
                       f"≥ 97% of baseline | {cell} | {verdict(None if r is None else r >= 0.97)} |")
    for key, cfg in runs.items():
        if key[0] != "churn":
            continue
        for mode, what in (("B", "depwatch"), ("P", f"({MODES['P']}: BEFORE's binary) depwatch"),
                           ("S", "(syscalls backend) depwatch")):
            if not has(cfg, mode):
                continue
            cell, r = ratio_cell(cfg, "A", mode)
            out.append(f"| connection churn (connect, one {key[1]}-byte call, close), {key[2]} "
                       f"thread(s): {what} ≥ {100 * CHURN_TARGET:.0f}% of baseline | {cell} "
                       f"| {verdict(None if r is None else r >= CHURN_TARGET)} |")
    if "B" in stats:
        cfgs = stats["B"][0]
        vals = [(k, per_invocation(stats, "B", k)) for k in cfgs]
        vals = [(k, v) for k, v in vals if v]
        if vals:
            worst = max(v for _, v in vals)
            out.append("| average cost per BPF invocation ≤ 150 ns | "
                       + ", ".join(f"{v:.0f} ns ({cfg_label(k)})" for k, v in vals)
                       + f" | {verdict(worst <= 150)} |")
    small = next((r for r in scale_rows(scale) if r["dests"] == 1000 and r["conns"] == 10000), None)
    if small and "error" not in small:
        out.append(f"| daemon ≤ 2% of one core at 1 000 × 10 000, 250 ms interval | {small['cpu_pct']:.2f}% "
                   f"| {verdict(small['cpu_pct'] <= 2)} |")
        out.append(f"| daemon ≤ 64 MiB RSS at 1 000 × 10 000 | peak {small['hwm_kib'] / 1024:.1f} MiB "
                   f"({small['hwm_after_status_kib'] / 1024:.1f} MiB after status calls) "
                   f"| {verdict(small['hwm_after_status_kib'] <= 64 * 1024)} |")
    big = next((r for r in scale_rows(scale) if r["dests"] == 10000 and r["conns"] == 50000), None)
    if big:
        ok = "error" not in big and not big.get("dest_map_full") and not big.get("daemon_rc")
        what = ("figures recorded below" if "error" not in big else big["error"])
        out.append(f"| 10 000 × 50 000 works and is recorded | {what} | {verdict(ok)} |")
    if dec:
        dws, _r4s, n, _dirty = decide_summary(dec)
        if dws:
            m, w = median(dws) * 1000, max(dws) * 1000
            out.append(f"| breaker open: median ≤ slow_call + 300 ms ({SLOW_CALL_MS + 300} ms) "
                       f"| {m:.0f} ms | {verdict(m <= SLOW_CALL_MS + 300)} |")
            out.append(f"| breaker open: worst ≤ slow_call + 700 ms ({SLOW_CALL_MS + 700} ms) "
                       f"| {w:.0f} ms ({len(dws)}/{n} opened) "
                       f"| {verdict(w <= SLOW_CALL_MS + 700 and len(dws) == n)} |")
    return out


def churn_analysis(runs, stats, key):
    """Where a churned connection's time goes, and how far the ratio is from the target."""
    cfg = runs[key]
    out = []
    if not has(cfg, "B"):
        return out
    _cell, r = ratio_cell(cfg, "A", "B")
    base_cpu = med(cfg["A"].values(), 4)
    dw_cpu = med(cfg["B"].values(), 4)
    if r is not None:
        out.append(
            f"- Connection churn, {key[2]} threads: depwatch at {r:.3f} of baseline, "
            + (f"{CHURN_TARGET - r:.3f} short of the {CHURN_TARGET} target"
               if r < CHURN_TARGET else f"{r - CHURN_TARGET:.3f} above the {CHURN_TARGET} target")
            + f"; CPU per connection {base_cpu:.2f} → {dw_cpu:.2f} µs ({dw_cpu - base_cpu:+.2f} µs).")
    for mode in ("B", "P"):
        if mode not in stats or key not in stats[mode][0]:
            continue
        _cfgs, cell, calls, progs, _f = stats[mode]
        if not calls.get(key):
            continue
        parts = []
        for name in progs:
            t, c = cell[(name, key)]
            if c and c / calls[key] >= 0.5:
                parts.append(f"{name} {t / c:.0f} ns × {c / calls[key]:.1f} = {t / calls[key] / 1000:.2f} µs")
        total = sum(cell[(n, key)][0] for n in progs) / calls[key] / 1000
        out.append(
            f"- BPF run time per churned connection, {MODES[mode]}: {'; '.join(parts)}; in all "
            f"{total:.2f} µs, {100 * total / base_cpu:.1f}% of the baseline's {base_cpu:.2f} CPU µs "
            "per connection.")
    return out


def bpf_ns_per_call(stats, mode, key):
    """All of mode's programs' run time per call in key's stats run, in ns (None: no run)."""
    if mode not in stats or key not in stats[mode][0]:
        return None
    _cfgs, cell, calls, progs, _f = stats[mode]
    if not calls.get(key):
        return None
    return sum(cell[(n, key)][0] for n in progs) / calls[key]


def floor_analysis(runs, stats):
    """Per configuration: the distance to the floor split into the daemon's share and the
    programs' (from the rounds), next to the programs' run time beyond the floor's (from the
    statistics runs) in points of the baseline's CPU per call."""
    out = []
    for key, cfg in runs.items():
        if not has(cfg, "F") or not has(cfg, "B"):
            continue
        d = floor_distance(cfg, "B")
        text = f"- {cfg_label(key)}: depwatch {median(d):+.1f} points from the floor"
        if has(cfg, "H"):
            h, dh = floor_distance(cfg, "H"), floor_distance(cfg, "B", "H")
            text += (f"; with its daemon stopped {median(h):+.1f}, so the daemon's polling and "
                     f"wake-ups take {median(dh):+.1f} and its programs beyond the floor's {median(h):+.1f}")
        fl, dw = bpf_ns_per_call(stats, "F", key), bpf_ns_per_call(stats, "B", key)
        if fl is not None and dw is not None:
            base_cpu = med(cfg["A"].values(), 4) * 1000
            text += (f". BPF run time per call (statistics runs): depwatch {dw:.0f} ns, floor "
                     f"{fl:.0f} ns: {dw - fl:+.0f} ns, {100 * (dw - fl) / base_cpu:+.1f} points of the "
                     f"baseline's {base_cpu / 1000:.2f} CPU µs per call")
        out.append(text + ".")
    shared, split = runs.get(("pingpong", 1, 2)), runs.get(("split", 1, 2))
    if shared and split and has(shared, "F") and has(shared, "B") and has(split, "B") and has(split, "F"):
        a, b = floor_distance(shared, "B"), floor_distance(split, "B")
        text = (f"- Rows shared between CPUs: 1 B × 2 threads to one destination {median(a):+.1f} "
                f"points from the floor, to a destination per thread {median(b):+.1f}")
        x = bpf_ns_per_call(stats, "B", ("pingpong", 1, 2))
        y = bpf_ns_per_call(stats, "B", ("split", 1, 2))
        if x is not None and y is not None:
            text += f"; BPF run time per call {x:.0f} ns vs {y:.0f} ns ({x - y:+.0f} ns shared)"
        out.append(text + ".")
    return out


def analysis(runs, stats, dec, fast, scale):
    """Data-driven notes on where the time goes, for the targets above."""
    out = floor_analysis(runs, stats)
    for key in [k for k in runs if k[0] == "churn"]:
        out += churn_analysis(runs, stats, key)
    key = ("pingpong", 1, 1)
    if "B" in stats and key in stats["B"][0] and key in runs:
        _cfgs, cell, calls, progs, _f = stats["B"]
        parts = []
        for name in progs:
            t, c = cell[(name, key)]
            if c and calls[key] and c / calls[key] >= 0.5:
                parts.append(f"{name} {t / c:.0f} ns × {c / calls[key]:.1f}")
        total = sum(cell[(n, key)][0] for n in progs) / calls[key] / 1000 if calls[key] else 0
        base_cpu = med(runs[key]["A"].values(), 4)
        dw_cpu = med(runs[key]["B"].values(), 4) if runs[key]["B"] else 0
        out.append(
            f"- BPF cost, 1 B × 1 thread: per call {', '.join(parts)}: {total:.2f} µs of BPF run time "
            f"per call, {100 * total / base_cpu:.1f}% of the baseline's {base_cpu:.2f} CPU µs per "
            f"call; the measured CPU per call grew by {dw_cpu - base_cpu:.2f} µs "
            f"({100 * (dw_cpu / base_cpu - 1):.1f}%)."
            + (" The rest is the tracepoints' dispatch (bpf_trace_run, recursion guard) and "
               "the daemon itself sharing the 2 CPUs."
               if dw_cpu - base_cpu > total else ""))
    for r in scale_rows(scale):
        if "error" in r or not r.get("polls"):
            continue
        share = median(r["polls"]) / 250 * 100
        out.append(
            f"- Daemon at {r['dests']:,} × {r['conns']:,}: a polling pass of {median(r['polls']):.1f} ms "
            f"every 250 ms is {share:.1f}% of a core by itself (measured {r['cpu_pct']:.2f}% in all).")
    if dec and fast:
        dws = decide_summary(dec)[0]
        fdws = decide_summary(fast)[0]
        if dws and fdws:
            out.append(
                f"- Time to open: median {ms(median(dws))} ms with the default 250 ms interval, "
                f"{ms(median(fdws))} ms with `--interval 50ms`. The floor of the rule itself is "
                "slow_call (500 ms) + the 10 slow calls that make 50% of a 20-call sample "
                "(250 ms at 40 calls/s) = 750 ms, plus up to one 67 ms start-time slice; the "
                "daemon looks again just after each outstanding call turns slow (at most every "
                "20 ms), so the interval adds little.")
    return out


def load_dd(path):
    """{mode: {pair: (seconds, foreign)}}"""
    res = {m: {} for m in MODES}
    if not path:
        return res
    for pair, mode, foreign, secs in read_rows(path):
        res[mode][int(pair)] = (float(secs), int(foreign))
    return res


def dd_table(dd):
    modes = [m for m in ("A", "B", "P", "S") if dd[m]]
    if "A" not in modes:
        return ["(not run)"]
    out = ["| | " + " | ".join(MODES[m] for m in modes) + " |", "|---|" + "---:|" * len(modes)]
    out.append("| wall s, median (min–max) | " + " | ".join(
        f"{median(v[0] for v in dd[m].values()):.2f} ({min(v[0] for v in dd[m].values()):.2f}–"
        f"{max(v[0] for v in dd[m].values()):.2f})" for m in modes) + " |")
    cells = []
    for m in modes:
        pairs = sorted(set(dd["A"]) & set(dd[m]))
        ratios = [dd[m][p][0] / dd["A"][p][0] for p in pairs if dd["A"][p][0] > 0]
        r = median(dd[m][p][0] for p in pairs) / median(dd["A"][p][0] for p in pairs)
        cells.append(f"{r:.2f} ({min(ratios):.2f}–{max(ratios):.2f})")
    out.append("| ratio to baseline (min–max of rounds) | " + " | ".join(cells) + " |")
    out.append("| runs with other dw_ programs | " + " | ".join(
        str(sum(1 for v in dd[m].values() if v[1])) for m in modes) + " |")
    return out


def load_h2(path):
    """{mode: {pair: (req_per_s, done, succeeded, failed, mean_us, cpu_us_per_req, foreign)}}"""
    res = {m: {} for m in MODES}
    if not path:
        return res
    for pair, mode, foreign, rps, done, ok, failed, mean, cpu in read_rows(path):
        res[mode][int(pair)] = (float(rps), int(done), int(ok), int(failed), float(mean), float(cpu),
                                int(foreign))
    return res


def load_h2_stats(path):
    """{mode: {"progs": [names], "cell": {name: [ns, cnt]}, "runs": {run: [ns, streams]},
    "counted": [(run, h2load's, depwatch's)], "foreign": n}}"""
    res = OrderedDict()
    if not path:
        return res
    for mode, name, ns, cnt, streams, foreign, run, counted in read_rows(path):
        m = res.setdefault(mode, {"progs": [], "cell": {}, "runs": {}, "counted": {}, "foreign": 0})
        if name not in m["progs"]:
            m["progs"].append(name)
        c = m["cell"].setdefault(name, [0, 0])
        c[0] += int(ns)
        c[1] += int(cnt)
        r = m["runs"].setdefault(int(run), [0, int(streams)])
        r[0] += int(ns)
        m["counted"][int(run)] = (int(streams), counted)
        m["foreign"] = max(m["foreign"], int(foreign))
    return res


def h2_table(h2):
    """Throughput of the HTTP/2 arm: per arm, requests/s and the ratio to the same rounds' baseline."""
    modes = [m for m in MODES if h2[m]]
    if "A" not in modes:
        return ["(not run)"]
    out = ["| arm | rounds | requests/s, median (min–max) | / baseline, median (min–max of rounds) "
           "| mean request time µs | CPU µs per request (h2load + nghttpd) | / baseline | failed requests "
           "| runs with other dw_ programs |",
           "|---|---:|---|---|---:|---:|---|---:|---:|"]
    for m in modes:
        runs = h2[m]
        rps = [r[0] for r in runs.values()]
        pairs = sorted(set(h2["A"]) & set(runs))
        ratio = cpu = "—"
        if m != "A" and pairs:
            rr = [runs[p][0] / h2["A"][p][0] for p in pairs if h2["A"][p][0] > 0]
            r = median(runs[p][0] for p in pairs) / median(h2["A"][p][0] for p in pairs)
            ratio = f"{r:.3f} ({min(rr):.3f}–{max(rr):.3f})"
            cr = [runs[p][5] / h2["A"][p][5] for p in pairs if h2["A"][p][5] > 0]
            c = median(runs[p][5] for p in pairs) / median(h2["A"][p][5] for p in pairs)
            cpu = f"{c:.3f} ({min(cr):.3f}–{max(cr):.3f})"
        out.append(f"| {MODES[m]} | {len(runs)} | {fmt_rate(median(rps))} ({fmt_rate(min(rps))}–"
                   f"{fmt_rate(max(rps))}) | {ratio} | {median(r[4] for r in runs.values()):.0f} "
                   f"| {median(r[5] for r in runs.values()):.2f} | {cpu} "
                   f"| {sum(r[3] for r in runs.values())} | {sum(1 for r in runs.values() if r[6])} |")
    return out


def h2_stats_table(h2s):
    """Per program and arm: ns per invocation and invocations per stream; all programs per stream."""
    modes = [m for m in ("B", "P", "S") if m in h2s]
    if not modes:
        return ["(not run)"]
    names = []
    for m in modes:
        names += [n for n in h2s[m]["progs"] if n not in names]
    out = ["| program | " + " | ".join(f"{MODES[m]}: ns / invocation (per stream) | ns per stream"
                                      for m in modes) + " |",
           "|---|" + "---:|---:|" * len(modes)]
    streams = {m: sum(r[1] for r in h2s[m]["runs"].values()) for m in modes}
    for name in names:
        if not any(h2s[m]["cell"].get(name, (0, 0))[1] for m in modes):
            continue  # attached, never ran (dw_abort, dw_enforce6, ...)
        cells = []
        for m in modes:
            t, c = h2s[m]["cell"].get(name, (0, 0))
            if not c:
                cells += ["—", "—"]
                continue
            per = c / streams[m] if streams[m] else 0
            cells += [f"{t / c:.0f} ({per:.2f})" if per >= 0.005 else f"{t / c:.0f} ({c} runs)",
                      f"{t / streams[m]:.0f}" if streams[m] else "—"]
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    total, each, counted, fgn = [], [], [], []
    for m in modes:
        t = sum(c[0] for c in h2s[m]["cell"].values())
        total += ["", f"**{t / streams[m]:.0f}**" if streams[m] else "—"]
        per = [ns / n for ns, n in h2s[m]["runs"].values() if n]
        each += ["", spread(per, "{:.0f}") + f" ({len(per)})" if per else "—"]
        counted += ["", "; ".join(f"{n} / {c}" for n, c in h2s[m]["counted"].values())]
        fgn += ["", str(h2s[m]["foreign"])]
    out.append("| **all programs, ns per stream** | " + " | ".join(total) + " |")
    out.append("| all programs per stream: each statistics run, median (min–max) (runs) | "
               + " | ".join(each) + " |")
    out.append("| streams: h2load's completed / depwatch's counted (outbound / inbound) | "
               + " | ".join(counted) + " |")
    out.append("| other dw_ programs attached | " + " | ".join(fgn) + " |")
    return out


def cleanliness(runs, stats, dec, scale, fast, h2=None, h2s=None):
    """(clean?, sentence)"""
    n_runs = sum(1 for cfg in runs.values() for m in MODES for r in cfg[m].values() if r[3])
    n_runs += sum(1 for m in (h2 or {}).values() for r in m.values() if r[6])
    n_stats = sum(1 for m in stats.values() for f in m[4].values() if f)
    n_stats += sum(1 for m in (h2s or {}).values() if m["foreign"])
    n_dec = (decide_summary(dec)[3] if dec else 0) + (decide_summary(fast)[3] if fast else 0)
    n_scale = sum(1 for r in scale_rows(scale) if r.get("foreign_before") or r.get("foreign_after"))
    if not (n_runs or n_stats or n_dec or n_scale):
        return True, ("**Clean run**: no other loader's dw_ programs (another depwatch, e.g. someone's "
                      "integration tests) were attached before or after any run, trial or case.")
    return False, (
        f"**Not a clean run**: another loader's dw_ programs (another depwatch, e.g. someone's "
        f"integration tests) were attached during {n_runs} ping-pong or h2load run(s), {n_stats} BPF-statistics "
        f"run(s), {n_dec} decision trial(s) and {n_scale} scale case(s); those include its cost and "
        "compete for the 2 CPUs. See the 'other dw_ programs' columns.")


def arm_order(runs):
    return ", ".join(MODES[m] for m in MODES if any(has(c, m) for c in runs.values()))


def churn_text(runs):
    if not any(k[0] == "churn" for k in runs):
        return []
    env = os.environ.get
    return [
        "Connection churn (`pingpong --churn`, issue 13): every call is a connection of its "
        "own. Each client thread connects to its own listener, sends 1 byte, reads the 1-byte "
        "answer, waits for the server's end of file and closes; calls/s are connections per "
        "second and the latency is connect() to close(). Each listener has one server thread "
        "(pinned with its client thread) that accepts, answers and closes first, so TIME_WAIT "
        "lands on the server side, where a SYN from a reused client port recycles it (with "
        "timestamps), and the client's ephemeral ports are not used up: at most "
        f"{env('TW_MAX', '?')} TIME_WAIT sockets were seen after a churn run (host-wide, "
        f"/proc/net/sockstat; net.ipv4.tcp_max_tw_buckets = {env('TW_BUCKETS', '?')}, "
        f"tcp_tw_reuse = {env('TW_REUSE', '?')}, ephemeral ports {env('PORT_RANGE', '?')}), and "
        f"{env('TW_OVERFLOW', '?')} server-side closes went without TIME_WAIT because the table "
        "was full (TcpExt TCPTimeWaitOverflow, over the churn runs). An unmeasured churn run "
        "before the rounds brings the table to that steady state, the same for every arm. "
        "Per connection the BPF programs see its state changes (dw_set_state) on both ends "
        "as well as the one call, and dw_enforce4 its connect().",
        "",
    ]


def pin_text(pin):
    if pin == "0":
        return "Threads are not pinned (PIN=0): the scheduler places them."
    return (
        "With `--pin`: client thread i and the server thread of its connection share the "
        "i-th CPU, so each call stays on one CPU (1 thread: one CPU busy; 2 threads: both). "
        "Unpinned single-connection runs on this VM swing several-fold between runs with the "
        "scheduler's placement (cross-CPU wake-ups), which would bury the effect measured."
    )


def budgets_lines(path):
    """bench/budgets.py's table (issue 46), first: its own run, at the start of this one."""
    if not path or not os.path.exists(path):
        return []
    with open(path) as f:
        return f.read().splitlines() + [""]


def main():
    runs_path, stats_path, decide_path, scale_path = sys.argv[1:5]
    env = os.environ.get
    runs = load_runs(runs_path)
    stats = load_stats(stats_path)
    dec = read_json(decide_path)
    scale = read_json(scale_path)
    fast = read_json(sys.argv[5]) if len(sys.argv) > 5 else None
    dd = load_dd(sys.argv[6] if len(sys.argv) > 6 else None)
    h2 = load_h2(sys.argv[7] if len(sys.argv) > 7 else None)
    h2s = load_h2_stats(sys.argv[8] if len(sys.argv) > 8 else None)
    _clean, clean_text = cleanliness(runs, stats, dec, scale, fast, h2, h2s)
    quick = env("BENCH_QUICK", "0") == "1"
    lines = [
        "# depwatch benchmark: overhead, decision speed, scale",
        "",
    ]
    if quick:
        lines += ["**BENCH_QUICK=1 smoke run: too few rounds and too short to judge anything by.**", ""]
    lines += [
        f"- Date: {env('DATE', '?')}",
        f"- Machine: {env('MACHINE', '?')}",
        f"- Command: `{env('CMDLINE', 'make bench')}` (as root, from the repository root)",
        f"- Build (sha256 prefix): {env('BUILD_ID', '?')}; the daemon's hooks, sock backend: "
        f"{env('ATTACHED_sock', '?')}; syscalls backend: {env('ATTACHED_syscalls', '?')}",
        f"- Peer: `bench/peer.bt` under {env('BPFTRACE_VERSION', '?')} (Debian package)",
        f"- Floor (arm 'floor', `bench/floor.bpf.c` through `{env('OUT', 'build')}/floor`): "
        f"{env('ATTACHED_floor', 'not run')}",
        f"- Before (arm '{MODES['P']}', `BEFORE=`): {env('BEFORE_ID', 'not run')}; its hooks: "
        f"{env('ATTACHED_before', 'not run')}",
        f"- Load average (1/5/15 min) before: {env('LOAD_BEFORE', '?')}, "
        f"after: {env('LOAD_AFTER', '?')}; whole run took {env('ELAPSED', '?')} s, "
        f"{env('QUIET_WAITED', '?')} s of it waiting for other dw_ programs to go",
        f"- {clean_text}",
        "",
        "Nothing here is a test assertion: the targets below are the issue's, and the figures "
        "are what this run measured.",
        "",
        *budgets_lines(env("BUDGETS_MD")),
        *summary_lines(runs, stats, floor_distance, spread, cfg_label),
        "## Targets",
        "",
        *targets_table(runs, stats, dec, scale),
        "",
        *analysis(runs, stats, dec, fast, scale),
        "",
        "## Distance to the floor (issue 17)",
        "",
        "Same rounds as the throughput table below. The floor (`bench/floor.bpf.c`) is one "
        "trivial program on every hook the sock backend attaches per event (see its hooks "
        "above; iter/tcp runs only at start), each bumping a per-CPU counter: the least any "
        "tracer on those hooks can cost. 'depwatch, daemon stopped' is depwatch (sock) "
        "SIGSTOPped once started: its programs run, its daemon neither polls nor wakes. Here "
        "each run's ratio is to the mean of the baselines around it (its round's, run first, "
        "and the next round's), median (min–max) over the rounds; a distance is the floor's "
        "ratio minus the other's in the same round, in points of baseline (+: costs more than "
        "the floor). The split configuration (`pingpong --split`) is 1 B × 2 threads with a "
        "listener per connection: no per-destination row is written from both CPUs.",
        "",
        *floor_table(runs),
        "",
        "## Throughput: loopback request/response",
        "",
        "Workload: `build/pingpong`, one process, 127.0.0.1 only. N client threads on "
        "persistent TCP connections each send a request of S bytes and block until the "
        "S-byte response has fully arrived; the server answers from one thread per "
        "connection. No think time. Latency is client-side, per call, exact percentiles. "
        + pin_text(env("PIN", "1")),
        "",
        f"Method: for each configuration, {env('PAIRS', '?')} rounds of runs alternating in "
        f"time ({arm_order(runs)}, baseline, ...), each run "
        f"{env('RUN_SECONDS', '?')} s after a {env('WARMUP_MS', '?')} ms warm-up. A fresh "
        "`depwatch run` (`--backend sock`, the default on this kernel; `--backend syscalls` for "
        "the 'depwatch syscalls' runs, the backend for kernels before 6.3) is started before "
        "and stopped (SIGTERM) after every depwatch run, and "
        "(with `BEFORE=`) likewise the old binary for the 'depwatch before' runs, in its own "
        "pin and run directories; "
        "a fresh `bpftrace bench/peer.bt` (attached: all its tracepoints show in `bpftool perf "
        "list`) before every bpftrace run, so baselines have nothing attached. Figures are "
        "medians over the runs; a ratio is median / median, and the range is the min–max of "
        "the per-round ratios. Ratio < 1 means the tracer costs throughput. The last column "
        "repeats depwatch / baseline over the rounds in which no run saw another loader's dw_ "
        "programs (shown when there are at least 3).",
        "",
        "The bpftrace peer (`bench/peer.bt`) keeps the same call model on the same "
        "tracepoints: outbound sockets marked at SYN_SENT, a call starts at the first send "
        "with none outstanding and completes at the first sk_data_ready or receive, a log2 "
        "`hist()` of latency, calls started and an in-flight `sum()` per destination "
        "(daddr, dport read through BTF from `struct sock`). It needs classic "
        "`tracepoint:sock:*` probes (perf-event attached, the record built before the "
        "program runs); depwatch uses `tp_btf` (raw, BTF-typed) tracepoints.",
        "",
        *throughput_table(runs),
        "",
        *churn_text(runs),
        "Latency and CPU. CPU µs/call is pingpong's own CPU time (user + system, all threads, "
        "both ends of every connection; BPF programs run in it) over the measured period per "
        "call: on a shared machine it is steadier than calls/s, which also moves with whoever "
        "else wants the CPUs. Ratios > 1 mean the tracer costs CPU.",
        "",
        *latency_table(runs),
        "",
        "## Cost per BPF program",
        "",
        "One extra run per configuration and tracer (not in the tables above) with it attached "
        "and `kernel.bpf_stats_enabled=1`, no warm-up; the sysctl is restored afterwards. "
        "Cells: average run time per invocation (run_time_ns / run_cnt, deltas over the "
        "run, from `bpftool prog show --json`) and invocations per pingpong call (or the "
        "number of invocations, when well under one per call). Counts include every TCP "
        "event on the host during the run, both ends of each loopback connection, and the "
        "connects and closes. 'Average per invocation' is all the programs' run time over "
        "all their invocations (the ≤ 150 ns target); the row after it is all their run "
        "time divided by the pingpong calls made. Enabling the statistics adds its own cost "
        "(two clock reads per invocation), so these runs are not used for throughput.",
        "",
    ]
    for mode in ("F", "B", "P", "S", "C"):
        if mode not in stats:
            continue
        lines += [f"### {MODES[mode]}", "", *stats_table(stats, mode), ""]
    if "C" in stats:
        lines += [
            "The bpftrace rows time only its programs: the classic tracepoint's own work "
            "(building the trace record for the program) is outside run_time_ns, and "
            "shows in the throughput and CPU columns above instead.",
            "",
        ]
    if "P" in stats and "B" in stats:
        lines += [
            "### Before / after: the BEFORE binary and this build, same rounds",
            "",
            "Per program and configuration, from the two stats runs above (one each, run "
            "back to back); the last rows repeat both arms' throughput ratios to the "
            "baseline of the same rounds, and now / before.",
            "",
            *before_after_table(runs, stats),
            "",
        ]
    lines += [
        "## Both backends on I/O that is not a socket",
        "",
        "`dd if=/dev/zero of=/dev/null bs=64 count=4194304`, wall time, in "
        f"{env('PAIRS', '?')} interleaved rounds ({', '.join(MODES[m] for m in 'ABPS' if dd[m])}), a "
        "fresh daemon per run. The sock backend's tracepoints fire only on sockets; the "
        "syscalls backend's entry and exit programs run on every read and write of every "
        "process, and leave at once when the descriptor is not a TCP socket.",
        "",
        *dd_table(dd),
        "",
        "## HTTP/2: h2load against nghttpd, a call per stream (issue 23)",
        "",
    ]
    if any(h2[m] for m in MODES):
        lines += [
            f"`{env('H2_VERSION', 'h2load')}`: `h2load -n {env('H2_REQUESTS', '?')} -c "
            f"{env('H2_CLIENTS', '?')} -m {env('H2_STREAMS', '?')} http://127.0.0.1:PORT/index.html` "
            "against one `nghttpd --no-tls` (cleartext HTTP/2 with prior knowledge, a 16-byte "
            "file), both on loopback, one thread each, unpinned, the server started once for the "
            f"phase (an unmeasured warm-up run first). {env('PAIRS', '?')} rounds, the arms "
            f"alternating ({', '.join(MODES[m] for m in MODES if h2[m])}), a fresh daemon per run; "
            "h2load's connections are new each run, so depwatch walks them as h2c and counts a "
            "call per stream, at both ends (h2load's outbound streams, nghttpd's inbound "
            "requests). Requests/s is h2load's; a ratio is median / median over the rounds, with "
            "the min–max of the per-round ratios; CPU per request is h2load's and nghttpd's user "
            "+ system time (the daemon's not included) over h2load's completed requests.",
            "",
            *h2_table(h2),
            "",
            f"BPF run time per stream: {env('STATS_RUNS', '1')} more run(s) per arm with "
            "`kernel.bpf_stats_enabled=1` (not in the table above: the statistics add two clock "
            "reads per invocation), the arms alternating; every program's run time over the whole "
            "h2load run (connects and closes included) divided by the streams h2load completed. "
            "Each stream is traced at both ends, so this is the client's and the server's work "
            "for one request together. 'Counted' is what the daemon's `status --json` showed "
            "after the run: the destination's streams and the inbound row's requests (— for a "
            "build without the stream layer, whose h2c connections are multiplexed bursts).",
            "",
            *h2_stats_table(h2s),
            "",
        ]
    else:
        lines += ["(not run)", ""]
    lines += [
        "## Decision speed",
        "",
    ]
    if dec:
        lines += [
            f"`bench/decide.py`, {len(dec['trials'])} trials. Each: a stand-in dependency on "
            "127.0.0.1 serves open-loop traffic (40 calls/s, pooled keep-alive connections) in "
            "20 ms; at T0 every call starts taking 3 s, with no errors. depwatch runs with "
            "slow_call = 500ms, slow_rate = 50%, sample = 20, min_calls = 5 and its default "
            "250 ms interval; the trial measures T0 → breaker `open` as `depwatch status` "
            "reports it (polled every 10 ms). The same calls, as the client logged them, are "
            "fed to a breaker that records calls only when they complete (resilience4j's "
            "count-based window, same thresholds) to see when it would have opened."
            + (f" The last row repeats {len(fast['trials'])} trials with `depwatch run --interval "
               "50ms`, to show the polling interval's share." if fast else ""),
            "",
            *decide_table(dec, fast),
            "",
        ]
    else:
        lines += ["(not run)", ""]
    lines += ["## Scale: the daemon's own cost", ""]
    if scale:
        env_s = scale["env"]
        lines += [
            "`bench/scale.py`. Per case, load processes (as many as the 20 000-descriptor limit "
            "needs) open one listener per destination — each a distinct (address, port), "
            "127.1.x.y ports 21000–21099 — and the client connections spread round-robin over "
            "them from explicitly bound source addresses (127.2.x.y, ports 23000+, outside the "
            "ephemeral range), then make one 16-byte call per connection every few seconds "
            "(answered at once). `depwatch run --max-dests N` (default 250 ms interval, "
            "embedded default config) starts before the connections are made. After "
            f"{env_s['settle']:.0f} s of traffic: {env_s['measure']:.0f} s with nothing asking "
            "the daemon anything — CPU = (utime + stime) / elapsed from /proc/PID/stat, peak "
            "RSS = VmHWM — then "
            f"{env_s['samples']} `depwatch status --json` calls a second apart for "
            "`kernel.poll_ms` (the last polling pass's duration) and VmHWM again. Setup is "
            "the wall time until every load process had all its connections. At the end the "
            "clients reset their connections (no TIME_WAIT) and the daemon gets SIGTERM. "
            "'destinations seen' includes whatever else on the host made connections.",
            "",
            *scale_table(scale),
            "",
        ]
    else:
        lines += ["(not run)", ""]
    lines += [
        "## Raw runs",
        "",
        "<details><summary>every ping-pong run, in the order run</summary>",
        "",
        *raw_table(runs),
        "",
        "</details>",
    ]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
