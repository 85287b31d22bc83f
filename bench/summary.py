"""
The one table make bench prints first (issue 36): per configuration, the
throughput distance to the floor in points of baseline (same rounds) and
BPF run time per call against the floor's (kernel.bpf_stats_enabled); per
program, ns per invocation and per call; per feature, what its programs
cost on this plain TCP traffic, which none of them but the call model
serves. With the date and the kernel, so that a table pasted elsewhere
still says where it came from. report.py passes its own helpers in.
"""
import os

# A program's feature, by its name's prefix (bpf/*.bpf.c); the first match wins.
FEATURES = (
    ("dw_h2_", "HTTP/2 receive reader (skb_copy_datagram_iovec)"),
    # issue 46: the sock backend's query program (sock_send_length); its answers and the syscalls
    # backend's reads are branches of the call model's programs, counted there
    ("dw_dns_", "DNS over UDP (sock_send_length)"),
    ("dw_ssl_", "TLS uprobes"),
    ("dw_tls", "TLS uprobes"),
    ("dw_go", "TLS uprobes"),
    ("dw_enforce", "enforcement (cgroup connect, sendmsg)"),
    ("dw_", "call model (socket tracepoints)"),
)


def feature_of(name):
    for prefix, feature in FEATURES:
        if name.startswith(prefix):
            return feature
    return "other"


def per_call(stats, mode, key):
    """{program: (ns per invocation, invocations per call, ns per call)} of one mode's statistics."""
    _cfgs, cell, calls, progs, _f = stats[mode]
    n = calls.get(key) or 0
    out = {}
    for name in progs:
        t, c = cell[(name, key)]
        if c and n:
            out[name] = (t / c, c / n, t / n)
    return out


def summary_lines(runs, stats, floor_distance, spread, cfg_label):
    kernel = os.uname().release
    date = os.environ.get("DATE", "?")
    out = ["## Summary (issue 36)", "",
           f"- {date}, kernel {kernel}; depwatch = sock backend, every default hook attached; "
           "floor = `bench/floor.bpf.c`. Points: the floor's ratio to baseline minus depwatch's, "
           "same rounds, median (min–max); BPF ns: the statistics runs (run_time_ns / calls).", "",
           "| configuration | depwatch − floor, points | BPF ns per call: depwatch | floor | depwatch / floor |",
           "|---|---|---:|---:|---:|"]
    have = "B" in stats and "F" in stats
    for key, cfg in runs.items():
        d = floor_distance(cfg, "B") if "F" in cfg and "B" in cfg else []
        cells = [cfg_label(key), spread(d, "{:+.1f}") if d else "—"]
        if have and key in stats["B"][0] and key in stats["F"][0]:
            b = sum(v[2] for v in per_call(stats, "B", key).values())
            f = sum(v[2] for v in per_call(stats, "F", key).values())
            cells += [f"{b:.0f}", f"{f:.0f}", f"{b / f:.2f}×" if f else "—"]
        else:
            cells += ["—", "—", "—"]
        out.append("| " + " | ".join(cells) + " |")
    if not have:
        return out + [""]
    for key in stats["B"][0]:
        if key not in stats["F"][0]:
            continue
        out += ["", f"Per program, {cfg_label(key)}:", "",
                "| program | ns per invocation | invocations per call | ns per call |",
                "|---|---:|---:|---:|"]
        feats = {}
        for mode in ("B", "F"):
            for name, (inv, n, t) in sorted(per_call(stats, mode, key).items(), key=lambda x: -x[1][2]):
                out.append(f"| {name} | {inv:.0f} | {n:.2f} | {t:.0f} |")
                if mode == "B":
                    feats[feature_of(name)] = feats.get(feature_of(name), 0) + t
        out += ["", "| feature (depwatch's programs) | ns per call on this traffic |", "|---|---:|"]
        out += [f"| {f} | {t:.0f} |" for f, t in sorted(feats.items(), key=lambda x: -x[1])]
        break
    return out + [""]
