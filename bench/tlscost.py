#!/usr/bin/env python3
"""
What the TLS uprobes cost (issue 32), not in make bench:

    sudo python3 bench/tlscost.py [--rounds 3] [--port 47500] [--backend sock|syscalls ...]

One nginx (TLS with HTTP/2 on --port, TLS HTTP/1.1 on port+1, cleartext HTTP/2 on port+2) runs
throughout; each round runs each arm in turn: no daemon, `depwatch run --without tls`, and
`depwatch run` (TLS on), for each backend. In each arm:

- h2load over TLS (-n 20000 -c 1 -m 8): its own req/s;
- an HTTPS client paced at 1 000 requests per second for 3 s (Python http.client, one
  keep-alive connection): the rate it kept and its p50;
- h2load over cleartext HTTP/2 (-n 20000 -c 1 -m 8): the TLS hooks' cost on TCP traffic that
  is not TLS (gated by dw_tls_on and the connection's tls flag: should be ~0);

and, with kernel.bpf_stats_enabled, the run time of the daemon's dw_ssl_* programs over the h2load
TLS run's requests (ns per request, both ends of each stream traced) and per invocation.
Medians over the rounds. Single host, others' load included: compare arms of one run only.
"""
import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bpfprogs  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

NGINX = """daemon off;
master_process off;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    keepalive_requests 1000000;
    client_body_temp_path {d}/cb; proxy_temp_path {d}/px; fastcgi_temp_path {d}/fc;
    uwsgi_temp_path {d}/uw; scgi_temp_path {d}/sc;
    ssl_certificate {d}/cert.pem;
    ssl_certificate_key {d}/key.pem;
    server {{ listen 127.0.0.1:{p0} ssl http2; location / {{ return 200 "ok\\n"; }} }}
    server {{ listen 127.0.0.1:{p1} ssl; location / {{ return 200 "ok\\n"; }} }}
    server {{ listen 127.0.0.1:{p2} http2; location / {{ return 200 "ok\\n"; }} }}
}}
"""

PACED = """
import http.client, json, ssl, sys, time
port, rate, secs = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
c = http.client.HTTPSConnection("127.0.0.1", port, context=ctx); c.connect()
t0 = time.monotonic(); n = 0; lat = []
while time.monotonic() - t0 < secs:
    due = t0 + n / rate
    now = time.monotonic()
    if due > now:
        time.sleep(due - now)
    t = time.monotonic(); c.request("GET", "/"); c.getresponse().read(); lat.append(time.monotonic() - t); n += 1
took = time.monotonic() - t0
lat.sort()
print(json.dumps({"rate": n / took, "p50_ms": lat[len(lat) // 2] * 1000}))
"""


def start_nginx(port, cpu=None):
    """NGINX on port (HTTP/2 over TLS), port+1 (HTTPS/1.1), port+2 (h2c), a fresh self-signed
    certificate, in a directory of its own; on CPU cpu if given. Its process."""
    d = tempfile.mkdtemp(prefix="tlscost-")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
                    "/CN=127.0.0.1", "-keyout", d + "/key.pem", "-out", d + "/cert.pem"],
                   check=True, capture_output=True)
    with open(d + "/nginx.conf", "w") as f:
        f.write(NGINX.format(d=d, p0=port, p1=port + 1, p2=port + 2))
    ngx = subprocess.Popen((["taskset", "-c", str(cpu)] if cpu is not None else []) +
                           ["nginx", "-p", d, "-c", d + "/nginx.conf", "-e", d + "/error.log"])
    time.sleep(1)
    return ngx


def h2load(url, n=20000, h1=False, cpu=None):
    """h2load's req/s over one connection: n requests, 8 streams at once (HTTP/2) or one after the
    other on a keep-alive connection (h1); on CPU cpu if given. Exits unless all n succeeded."""
    argv = (["taskset", "-c", str(cpu)] if cpu is not None else []) + \
        ["h2load", "-n", str(n), "-c", "1"] + (["--h1"] if h1 else ["-m", "8"]) + [url]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=300).stdout
    m = re.search(r"finished in [\d.]+\w+, ([\d.]+) req/s", out)
    ok = re.search(r"(\d+) succeeded", out)
    if not m or not ok or int(ok.group(1)) != n:
        raise SystemExit("h2load failed:\n" + out)
    return float(m.group(1))


def ssl_progs(pid):
    return {p["id"]: (p.get("run_time_ns", 0), p.get("run_cnt", 0)) for p in bpfprogs.loaded()
            if p["id"] in bpfprogs.prog_ids(pid) and p.get("name", "").startswith("dw_ssl")}


def start_daemon(backend, tls, tag):
    log = tempfile.NamedTemporaryFile("w+", prefix="tlscost-", suffix=".log", delete=False)
    argv = [os.path.join(ROOT, "build", "depwatch"), "run", "--backend", backend,
            "--pin-dir", "/sys/fs/bpf/tlscost-" + tag, "--run-dir", "/run/tlscost-" + tag]
    if not tls:
        argv += ["--without", "tls"]
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    for _ in range(1800):
        with open(log.name) as f:
            if "depwatch: started" in f.read():
                return proc
        if proc.poll() is not None:
            raise SystemExit(open(log.name).read())
        time.sleep(0.1)
    raise SystemExit("no start line in 180 s")


def arm(args, backend, tls):
    proc = start_daemon(backend, tls, "%d" % os.getpid()) if backend else None
    try:
        before = ssl_progs(proc.pid) if proc and tls else {}
        h2tls = h2load("https://127.0.0.1:%d/" % args.port)
        after = ssl_progs(proc.pid) if proc and tls else {}
        paced = json.loads(subprocess.run(["python3", "-c", PACED, str(args.port + 1), "1000", "3"],
                                          capture_output=True, text=True, check=True).stdout)
        h2c = h2load("http://127.0.0.1:%d/" % (args.port + 2))
    finally:
        if proc:
            proc.send_signal(signal.SIGTERM)
            proc.wait()
    ns = sum(after[i][0] - before.get(i, (0, 0))[0] for i in after)
    cnt = sum(after[i][1] - before.get(i, (0, 0))[1] for i in after)
    return {"h2tls": h2tls, "paced_rate": paced["rate"], "paced_p50": paced["p50_ms"], "h2c": h2c,
            "ssl_ns_per_req": ns / 20000 if cnt else None, "ssl_ns_per_run": ns / cnt if cnt else None}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--port", type=int, default=47500)
    ap.add_argument("--backend", action="append", default=None)
    args = ap.parse_args()
    backends = args.backend or ["sock", "syscalls"]
    ngx = start_nginx(args.port)
    stats = open("/proc/sys/kernel/bpf_stats_enabled").read().strip()
    open("/proc/sys/kernel/bpf_stats_enabled", "w").write("1")
    arms = [("none", None, False)] + [(b + (" tls" if t else " --without tls"), b, t)
                                      for b in backends for t in (False, True)]
    res = {a[0]: [] for a in arms}
    try:
        for r in range(args.rounds):
            for name, b, t in arms:
                res[name].append(arm(args, b, t))
                print("round %d %s: %s" % (r, name, res[name][-1]), file=sys.stderr)
    finally:
        open("/proc/sys/kernel/bpf_stats_enabled", "w").write(stats)
        ngx.kill()
        ngx.wait()

    def med(name, k):
        v = [x[k] for x in res[name] if x[k] is not None]
        return statistics.median(v) if v else None

    print("| arm | h2load TLS req/s | paced HTTPS rate (1 000/s asked) | its p50 ms | h2load h2c req/s "
          "| dw_ssl_* ns per h2load TLS request | ns per uprobe run |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, _, _ in arms:
        f = lambda k, fmt: (fmt % med(name, k)) if med(name, k) is not None else "-"  # noqa: E731
        print("| %s | %s | %s | %s | %s | %s | %s |" % (name, f("h2tls", "%.0f"), f("paced_rate", "%.0f"),
                                                        f("paced_p50", "%.3f"), f("h2c", "%.0f"),
                                                        f("ssl_ns_per_req", "%.0f"), f("ssl_ns_per_run", "%.0f")))


if __name__ == "__main__":
    main()
