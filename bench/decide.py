#!/usr/bin/env python3
"""Decision speed: how long after a dependency slows down does the breaker open?

Each trial: a stand-in dependency serves open-loop traffic (40 calls/s) in
20 ms, then at T0 every call takes 3 s, with no errors. depwatch runs with
slow_call = 500ms, slow_rate = 50%, sample = 20, min_calls = 5; the trial
measures T0 -> breaker open as `depwatch status` reports it (polled every
10 ms). For comparison, the same calls (as the client logged them) are fed to
a breaker that records calls only when they complete -- resilience4j's
count-based sliding window with the same thresholds -- to see when it would
have opened.

usage: bench/decide.py [TRIALS] [--out FILE]   (root; prints a Markdown table;
       --out also writes every trial's figures as JSON)
DEPWATCH (environment) names the binary; default build/depwatch. DECIDE_INTERVAL
(environment, e.g. 50ms) passes --interval to the daemon; default: its own (250ms). Each trial
also counts the dw_ programs of other loaders (another depwatch) seen at its
start and when the breaker opened: those slow every TCP event a little.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
from openloop import OpenLoopClient, SlowServer  # noqa: E402
from scale import dw_progs_others  # noqa: E402

DEPWATCH = os.environ.get("DEPWATCH", os.path.join(HERE, "..", "build", "depwatch"))
INTERVAL = os.environ.get("DECIDE_INTERVAL")
SLOW_CALL, SAMPLE, MIN_CALLS, RATE = 0.5, 20, 5, 0.5


def completion_breaker_opens(log, t0):
    """resilience4j's rule: the newest SAMPLE *completed* calls, in completion order;
    open once at least MIN_CALLS are recorded and the slow share reaches RATE."""
    window = []
    for start, end, ok in sorted(log, key=lambda c: c[1]):
        window.append(end - start > SLOW_CALL or not ok)
        window = window[-SAMPLE:]
        if end > t0 and len(window) >= MIN_CALLS and sum(window) / len(window) >= RATE:
            return end - t0
    return None


def trial(run_dir, pin_dir):
    server = SlowServer(0.020)
    conf = tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False)
    conf.write("[defaults]\nslow_call = 500ms\nslow_rate = 50%%\nsample = %d\nmin_calls = %d\n"
               "open_for = 60s\n[dependency standin]\nmatch = 127.0.0.1:%d\n" % (SAMPLE, MIN_CALLS, server.port))
    conf.close()
    interval = ["--interval", INTERVAL] if INTERVAL else []
    daemon = subprocess.Popen([DEPWATCH, "run", "-c", conf.name, "--pin-dir", pin_dir, "--run-dir", run_dir]
                              + interval, stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = None
    try:
        while subprocess.run([DEPWATCH, "status", "--json", "--run-dir", run_dir],
                             capture_output=True).returncode:
            time.sleep(0.05)
        client = OpenLoopClient("127.0.0.1", server.port, 40).start()
        time.sleep(3)
        foreign = dw_progs_others(daemon.pid)
        t0 = time.monotonic()
        server.delay = 3.0
        opened = None
        while opened is None and time.monotonic() - t0 < 10:
            st = json.loads(subprocess.run([DEPWATCH, "status", "--json", "--run-dir", run_dir],
                                           capture_output=True).stdout)
            dep = next(d for d in st["dependencies"] if d["name"] == "standin")
            if dep["breaker"] == "open":
                opened = time.monotonic() - t0
            time.sleep(0.01)
        foreign = max(foreign, dw_progs_others(daemon.pid))
        time.sleep(4)  # let the slow calls complete, for the completion-only rule
        return opened, completion_breaker_opens(list(client.log), t0), foreign
    finally:
        if client:
            client.stop()
        server.close()
        daemon.terminate()
        daemon.wait()
        os.unlink(conf.name)


def ms(v):
    return "never" if v is None else "%.0f" % (v * 1000)


def main():
    args = sys.argv[1:]
    out = None
    if "--out" in args:
        i = args.index("--out")
        out = args[i + 1]
        del args[i:i + 2]
    trials = int(args[0]) if args else 20
    rows = []
    for i in range(trials):
        dw, r4j, foreign = trial("/tmp/depwatch-decide", "/sys/fs/bpf/depwatch-decide")
        rows.append((dw, r4j, foreign))
        print("trial %2d: depwatch open after %s ms, completion-only rule after %s ms%s" % (
            i + 1, ms(dw), ms(r4j), "  (other dw_ programs: %d)" % foreign if foreign else ""),
            file=sys.stderr)
    dws = [r[0] for r in rows if r[0] is not None]
    r4s = [r[1] for r in rows if r[1] is not None]
    print("| breaker (slow_call 500 ms, 40 calls/s, 20 ms -> 3 s) | median | worst | opened |")
    print("| --- | --- | --- | --- |")
    print("| depwatch (in-flight calls judged by start time) | %s ms | %s ms | %d/%d |" % (
        ms(statistics.median(dws)) if dws else "-", ms(max(dws)) if dws else "-", len(dws), trials))
    print("| completion-only rule (resilience4j count window) | %s ms | %s ms | %d/%d |" % (
        ms(statistics.median(r4s)) if r4s else "-", ms(max(r4s)) if r4s else "-", len(r4s), trials))
    if out:
        with open(out, "w") as f:
            json.dump({"trials": [{"depwatch_s": r[0], "completion_only_s": r[1], "foreign": r[2]}
                                  for r in rows],
                       "interval": INTERVAL or "250ms (default)", "slow_call_s": SLOW_CALL, "sample": SAMPLE, "min_calls": MIN_CALLS, "rate": RATE}, f)


if __name__ == "__main__":
    main()
