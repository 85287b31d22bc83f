#!/usr/bin/env python3
"""
What DNS's close program costs (issue 48): dw_dns_release (cgroup/sock_release) runs at every
socket's release in the host's cgroup. With kernel.bpf_stats_enabled on and a depwatch daemon
(sock backend, built-in config), its run time per invocation for two arms of N sockets each:
TCP connections opened and closed on loopback (both ends released: the traffic it does not
serve), and connected UDP sockets that send one A query to 127.0.0.9:53 (nobody answers) and
close with it outstanding (the traffic it serves: the query fails at the close).

    sudo python3 bench/dnsrelease.py [-n 5000]

Prints one JSON line: {arm: [invocations, ns per invocation]}.
"""
import argparse
import json
import os
import socket
import struct
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEPWATCH = os.path.join(ROOT, "build", "depwatch")
STATS = "/proc/sys/kernel/bpf_stats_enabled"


def prog_stats(name):
    for p in json.loads(subprocess.run(["bpftool", "prog", "show", "-j"], capture_output=True,
                                       text=True, check=True).stdout):
        if p.get("name") == name:
            return p.get("run_cnt", 0), p.get("run_time_ns", 0)
    raise SystemExit("no program %s loaded (the daemon withheld it?)" % name)


def query(i):
    hdr = struct.pack(">HHHHHH", i & 0xffff, 0x0100, 1, 0, 0, 0)
    return hdr + b"\x01a\x04test\x00" + struct.pack(">HH", 1, 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=5000)
    n = ap.parse_args().n
    with open(STATS) as f:
        was = f.read().strip()
    with open(STATS, "w") as f:
        f.write("1")
    d = tempfile.mkdtemp(prefix="dwrel-")
    p = subprocess.Popen([DEPWATCH, "run", "--run-dir", d + "/run", "--pin-dir", "/sys/fs/bpf/dwrel"],
                         stderr=subprocess.PIPE, text=True)
    try:
        while True:
            line = p.stderr.readline()
            if not line:
                raise SystemExit("the daemon did not start")
            if "started" in line:
                break
        srv = socket.socket()
        srv.bind(("127.0.0.1", 0))
        srv.listen(512)
        port = srv.getsockname()[1]
        res = {}
        for arm in ("tcp", "udp_dns_outstanding"):
            a = prog_stats("dw_dns_release")
            for i in range(n):
                if arm == "tcp":
                    c = socket.create_connection(("127.0.0.1", port))
                    s, _ = srv.accept()
                    c.close()
                    s.close()
                else:
                    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                    u.connect(("127.0.0.9", 53))
                    u.send(query(i))
                    u.close()
            b = prog_stats("dw_dns_release")
            runs = b[0] - a[0]
            res[arm] = [runs, round((b[1] - a[1]) / max(1, runs), 1)]
        print(json.dumps(res))
    finally:
        p.terminate()
        p.wait()
        with open(STATS, "w") as f:
            f.write(was)


if __name__ == "__main__":
    main()
