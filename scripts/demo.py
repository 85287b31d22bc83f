#!/usr/bin/env python3
"""`make demo`: the slow-dependency story on loopback, in about 40 seconds.

A stand-in dependency serves open-loop traffic (40 calls/s) in 20 ms. At
t=5s it slows to 3 s and returns no errors; at t=15s it recovers. depwatch
sees the calls hang, opens the breaker, says so to syslog (shown here from
the daemon's own log), and closes it again after the recovery.

Then the cascade (issue 15, bench/pool.py, about 45 seconds more): a
frontend's pool of 50 keep-alive workers against a dependency going from
200 ms to 9 s, with depwatch off, enforce = connect, enforce = abort.
"""

import json
import os
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
from openloop import OpenLoopClient, SlowServer  # noqa: E402

DEPWATCH = os.path.join(HERE, "..", "build", "depwatch")
PIN_DIR = "/sys/fs/bpf/depwatch-demo"
RUN_DIR = "/tmp/depwatch-demo"


def status():
    out = subprocess.run([DEPWATCH, "status", "--json", "--run-dir", RUN_DIR], capture_output=True)
    return json.loads(out.stdout) if out.returncode == 0 else None


def show_log(proc, t0):
    for raw in proc.stderr:
        line = raw.decode(errors="replace").rstrip()
        if "dependency=payments " in line:
            print("%6.2fs  syslog: %s" % (time.monotonic() - t0, line.split("depwatch: ", 1)[-1]))


def main():
    server = SlowServer(0.020)
    conf = tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False)
    conf.write("[defaults]\nslow_call = 500ms\nmin_calls = 5\nopen_for = 5s\n"
               "[dependency payments]\nmatch = 127.0.0.1:%d\n" % server.port)
    conf.close()
    daemon = subprocess.Popen([DEPWATCH, "run", "-c", conf.name, "--pin-dir", PIN_DIR, "--run-dir", RUN_DIR],
                              stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
    t0 = time.monotonic()
    threading.Thread(target=show_log, args=(daemon, t0), daemon=True).start()
    while status() is None:
        if daemon.poll() is not None:
            sys.exit("depwatch run exited with %d" % daemon.returncode)
        time.sleep(0.1)
    print("stand-in dependency 'payments' on 127.0.0.1:%d, 40 calls/s, slow_call = 500ms" % server.port)
    print("%7s %8s %9s %8s %9s %10s %s" % ("time", "delay", "inflight", "oldest", "slow", "p99", "breaker"))
    client = OpenLoopClient("127.0.0.1", server.port, 40).start()
    t0 = time.monotonic()
    try:
        while time.monotonic() - t0 < 40:
            t = time.monotonic() - t0
            server.delay = 3.0 if 5 <= t < 15 else 0.020
            st = status()
            dep = next((d for d in st["dependencies"] if d["name"] == "payments"), None) if st else None
            if dep:
                print("%6.2fs %7.0fms %9d %6.0fms %8.0f%% %8sms %s%s" % (
                    t, server.delay * 1000, dep["inflight"], dep["oldest_inflight_ms"],
                    100 * dep["slow_rate"], "-" if dep["p99_ms"] is None else "%.0f" % dep["p99_ms"],
                    dep["breaker"], " (%s)" % dep["reason"] if dep["breaker"] != "closed" else ""))
            time.sleep(0.5)
    finally:
        client.stop()
        server.close()
        daemon.terminate()
        daemon.wait()
        os.unlink(conf.name)


def pool_story():
    """Three arms of bench/pool.py, 12 s each: does the pool survive?"""
    sys.path.insert(0, os.path.join(HERE, "..", "bench"))
    import pool  # noqa: E402

    pool.DEPWATCH = DEPWATCH
    print("\nthe cascade: a pool of %d workers, each with a keep-alive connection to 'payments', %.0f requests/s "
          "(40%% of the pool at 200 ms) and a health check served by the same pool; at t=%.0fs payments takes 9 s"
          % (pool.POOL, pool.RATE, pool.CHANGE))
    print("%-20s %12s %8s %18s %16s" % ("", "exhausted at", "peak", "health p99 after", "failed fast"))
    for name in ("off", "connect", "abort"):
        s = pool.summary(pool.run_arm(name, 12.0, PIN_DIR, RUN_DIR))
        print("%-20s %12s %7.0f%% %15s ms %16d" % (
            "depwatch off" if name == "off" else "enforce = " + name,
            pool.fmt(s["exhausted_s"], "+%.2fs", "never"), s["peak_pct"],
            pool.fmt(s["health_p99_after"], "%.1f", "-"), s["failed"]))


if __name__ == "__main__":
    main()
    pool_story()
