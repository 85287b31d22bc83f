#!/usr/bin/env python3
"""The TLS discovery's cost (issue 32, doc/tls.md): one scan of every process's maps, in ms, as the
daemon measures it (status --json tls.last_full_scan_ms), the first at start (every distinct mapped
file read for its symbols) and a later one (every 30 s: the maps only, the files known); with the
same machine's own reference beside it: reading every /proc/PID/maps once from Python (the floor
of any scan). N extra idle processes (python3 with ssl imported, mapping libssl) may be added.

    sudo python3 bench/tlsscan.py [EXTRA_PROCS]

Prints one Markdown table row per measurement."""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
import harness  # noqa: E402


def read_all_maps():
    t0 = time.monotonic()
    n = 0
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open("/proc/%s/maps" % pid) as f:
                    f.read()
                n += 1
            except OSError:
                pass
    return (time.monotonic() - t0) * 1e3, n


def main():
    extra = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    procs = [subprocess.Popen(["/usr/bin/python3", "-c", "import ssl, sys; sys.stdin.read()"],
                              stdin=subprocess.PIPE) for _ in range(extra)]
    time.sleep(1 + extra / 50)
    d = harness.Daemon()
    try:
        d.start()
        first = d.status()["tls"]
        ref_ms, ref_n = read_all_maps()
        later = d.wait_for(lambda s: s["tls"]["full_scans"] >= 2, timeout=45, what="the second full scan")["tls"]
        print("| processes | first scan (ms, files read) | later scan (ms) | reading every maps file once, Python (ms) | files with uprobes |")
        print("| --- | --- | --- | --- | --- |")
        print("| %d | %.1f | %.1f | %.1f (%d processes) | %d |" % (
            first["last_full_scan_processes"], first["last_full_scan_ms"], later["last_full_scan_ms"],
            ref_ms, ref_n, later["files_attached"]))
    finally:
        d.stop()
        d.cleanup()
        for p in procs:
            p.kill()
            p.wait()


if __name__ == "__main__":
    main()
