#!/usr/bin/env python3
"""The daemon's own cost at scale: CPU, peak RSS and polling-pass time with
many destinations and connections, all on loopback.

For each case (DESTS x CONNS), load processes -- as many as the file
descriptor limit (hard RLIMIT_NOFILE, 20 000 here, not raisable) needs, each
owning the destinations i with i % NWORKERS == WORKER and their connections --
open DESTS listeners, each a distinct (address, port): 127.1.X.Y, ports
21000-21099, and CONNS client connections spread round-robin over them (j to
destination j % DESTS), from explicitly bound source addresses 127.2.W.Y and
ports 23000-27999 (outside the ephemeral range, so the benchmark takes no
ephemeral port from anyone else on the host). Each connection then makes one
small call (16 bytes each way, answered at once) every PERIOD seconds (5 s,
longer so that all make at most 5 000 calls/s), staggered, so the daemon
always has live data.

depwatch runs with its default interval (250 ms) and --max-dests large
enough, started before the connections are made (it sees every connect).
After SETTLE seconds of trickle:
  1. MEASURE seconds with nothing else asking the daemon anything: its CPU
     (utime + stime from /proc/PID/stat) as a share of one core, and VmHWM
     (peak RSS) from /proc/PID/status at the end.
  2. SAMPLES `depwatch status --json` calls, one a second: kernel.poll_ms
     (how long the last polling pass took) and the destinations it reports.
     The daemon's VmHWM is read again afterwards (building a status reply for
     every destination costs memory too).
Then the connections are reset (SO_LINGER 0: no TIME_WAIT is left behind),
the listeners closed, and the daemon stopped with SIGTERM.

usage: bench/scale.py [--quick] [--out FILE]   (root; prints a Markdown table)
       bench/scale.py load DESTS CONNS PERIOD LIMIT_S WORKER NWORKERS   (a load process; internal)
Knobs (environment): DEPWATCH (the binary, default build/depwatch), SCALE_CASES
("1000x10000,10000x50000"; --quick: "200x1000"), SCALE_MEASURE (30; --quick 10),
SCALE_SETTLE (5; 2), SCALE_SAMPLES (10; 5), SCALE_LOGDIR (/tmp: dwscale.log, the
daemon's and the load processes' stderr).
Nothing here asserts on timing: the numbers are reported, never judged.
"""

import json
import os
import resource
import select
import signal
import socket
import statistics
import struct
import subprocess
import sys
import time

import bpfprogs

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PIN_DIR = "/sys/fs/bpf/dwscale"
RUN_DIR = "/tmp/dwscale"
LISTEN_PORT0, LISTEN_PORTS = 21000, 100  # listener ports per address
SRC_PORT0, SRC_PORTS = 23000, 5000  # client source ports per address
MSG = b"0123456789abcdef"
TICK = 0.02
SETUP_LIMIT = 600  # seconds the load process may take to connect everything


# ---------------------------------------------------------------- the load ---

def listen_addr(i):
    """Destination i: 127.1.X.Y, LISTEN_PORTS ports per address."""
    a = i // LISTEN_PORTS
    return "127.1.%d.%d" % (a // 250, 1 + a % 250), LISTEN_PORT0 + i % LISTEN_PORTS


def src_addrs(worker):
    """Candidate client source (address, port) pairs of one load process, in order."""
    for a in range(1, 251):
        for p in range(SRC_PORTS):
            yield "127.2.%d.%d" % (worker, a), SRC_PORT0 + p


def raise_nofile():
    """The soft limit up to the hard one (raising the hard one needs CAP_SYS_RESOURCE)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def make_listeners(dests, ndests):
    """One listener per destination index; a taken (address, port) moves to
    index + ndests, + 2 ndests, ... (still unique across load processes)."""
    listeners = {}
    for i in dests:
        for k in range(10):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind(listen_addr(i + k * ndests))
                s.listen(256)
            except OSError:
                s.close()
                if k == 9:
                    raise
                continue
            s.settimeout(10)
            listeners[i] = s
            break
    return listeners


def make_clients(listeners, conns, ndests, worker):
    """Connection j to destination j % ndests, for each j in conns; returns (clients, servers)."""
    clients, servers = [], []
    srcs = src_addrs(worker)
    linger0 = struct.pack("ii", 1, 0)
    for j in conns:
        lst = listeners[j % ndests]
        while True:
            c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            c.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger0)
            c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            c.settimeout(10)
            try:
                c.bind(next(srcs))
                c.connect(lst.getsockname())
                break
            except OSError as e:
                c.close()
                if e.errno not in (98, 99):  # EADDRINUSE, EADDRNOTAVAIL: next source
                    raise
        s, _ = lst.accept()
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger0)
        c.setblocking(False)
        s.setblocking(False)
        clients.append(c)
        servers.append(s)
    return clients, servers


def load_main(ndests, nconns, period, limit_s, worker, nworkers):
    """One load process: its share of the destinations (index % nworkers == worker)
    and of their connections; sets up, prints 'ready ...', trickles until stdin
    closes or limit_s."""
    t0 = time.monotonic()
    raise_nofile()
    listeners = make_listeners(range(worker, ndests, nworkers), ndests)
    conns = [j for j in range(nconns) if (j % ndests) % nworkers == worker]
    clients, servers = make_clients(listeners, conns, ndests, worker)
    nconns = len(clients)
    setup_s = time.monotonic() - t0
    ep = select.epoll()
    role = {}
    for c in clients:
        ep.register(c.fileno(), select.EPOLLIN)
        role[c.fileno()] = (0, c)
    for s in servers:
        ep.register(s.fileno(), select.EPOLLIN)
        role[s.fileno()] = (1, s)
    ep.register(sys.stdin.fileno(), select.EPOLLIN | select.EPOLLHUP)
    print("ready setup_s=%.1f dests=%d conns=%d" % (setup_s, len(listeners), len(clients)), flush=True)
    per_tick = nconns * TICK / period
    owed, nxt, calls, errors = 0.0, 0, 0, 0
    start = time.monotonic()
    due = start
    stop = False
    while not stop and time.monotonic() - start < limit_s:
        now = time.monotonic()
        if now >= due:
            owed += per_tick
            while owed >= 1:
                owed -= 1
                try:
                    clients[nxt].send(MSG)
                    calls += 1
                except OSError:
                    errors += 1
                nxt = (nxt + 1) % nconns
            due += TICK
            if due < now:
                due = now + TICK
        for fd, ev in ep.poll(max(0.0, due - time.monotonic())):
            if fd == sys.stdin.fileno():
                stop = True
                continue
            kind, sock = role[fd]
            try:
                data = sock.recv(4096)
                if kind == 1 and data:
                    sock.send(data)
                elif not data:
                    ep.unregister(fd)
                    errors += 1
            except OSError:
                errors += 1
    cpu = resource.getrusage(resource.RUSAGE_SELF)
    print("done calls=%d errors=%d seconds=%.1f cpu_s=%.1f" % (
        calls, errors, time.monotonic() - start, cpu.ru_utime + cpu.ru_stime), flush=True)
    for s in clients + servers + list(listeners.values()):  # clients first: RST, no TIME_WAIT
        s.close()
    ep.close()


# ------------------------------------------------------------ orchestration ---

def proc_cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_status_kib(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def dw_progs_others(ours):
    """How many dw_ programs are loaded that the given pid does not hold."""
    return bpfprogs.dw_others(bpfprogs.prog_ids(ours))


class Daemon:
    def __init__(self, binary, max_dests, log):
        self.log = log
        self.proc = subprocess.Popen(
            [binary, "run", "--max-dests", str(max_dests), "--pin-dir", PIN_DIR, "--run-dir", RUN_DIR],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        self.binary = binary
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("depwatch exited with status %d" % self.proc.returncode)
            if self.status() is not None:
                return
            time.sleep(0.1)
        raise RuntimeError("depwatch did not answer status in 30 s")

    def status(self):
        r = subprocess.run([self.binary, "status", "--json", "--run-dir", RUN_DIR],
                           capture_output=True, timeout=30)
        if r.returncode:
            return None
        return json.loads(r.stdout)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def start_loads(ndests, nconns, period, limit, logf):
    """Load processes enough for the file descriptor limit; waits for all to be
    ready. Returns (processes, wall-clock setup seconds, dests made, conns made)."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    per_proc = max(1000, hard - 1000)
    nworkers = -(-(2 * nconns + ndests) // per_proc)
    t0 = time.monotonic()
    loads = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "load", str(ndests), str(nconns),
                               str(period), str(limit), str(w), str(nworkers)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=logf, text=True)
             for w in range(nworkers)]
    dests = conns = 0
    for p in loads:
        left = SETUP_LIMIT - (time.monotonic() - t0)
        line = ""
        if left > 0 and select.select([p.stdout], [], [], left)[0]:
            line = p.stdout.readline()
        if not line.startswith("ready"):
            raise RuntimeError("a load process did not get ready (see %s): %r" % (logf.name, line))
        kv = dict(x.split("=") for x in line.split()[1:])
        dests += int(kv["dests"])
        conns += int(kv["conns"])
    return loads, time.monotonic() - t0, dests, conns


def stop_loads(loads):
    """Closes their stdin; returns the sum of their 'done' lines' counters."""
    total = {}
    for p in loads:
        p.stdin.close()
    for p in loads:
        out = p.stdout.read()
        p.wait(120)
        for line in out.splitlines():
            if line.startswith("done"):
                for kv in line.split()[1:]:
                    k, v = kv.split("=")
                    total[k] = max(total.get(k, 0), float(v)) if k == "seconds" else total.get(k, 0) + float(v)
    return total


def run_case(binary, ndests, nconns, period, env, logf):
    measure, settle, samples = env["measure"], env["settle"], env["samples"]
    max_dests = 4096
    while max_dests < ndests + ndests // 4 + 64:
        max_dests *= 2
    res = {"dests": ndests, "conns": nconns, "period": period, "max_dests": max_dests}
    t_start = time.monotonic()
    daemon = Daemon(binary, max_dests, logf)
    loads = []
    try:
        pid = daemon.proc.pid
        res["rss_start_kib"] = proc_status_kib(pid, "VmRSS")
        limit = settle + measure + samples * 2 + 120
        loads, res["setup_s"], res["dests_made"], res["conns_made"] = start_loads(
            ndests, nconns, period, limit, logf)
        res["load_procs"] = len(loads)
        time.sleep(settle)
        res["foreign_before"] = dw_progs_others(pid)
        c0, t0 = proc_cpu_s(pid), time.monotonic()
        time.sleep(measure)
        c1, t1 = proc_cpu_s(pid), time.monotonic()
        res["foreign_after"] = dw_progs_others(pid)
        res["cpu_pct"] = 100.0 * (c1 - c0) / (t1 - t0)
        res["hwm_kib"] = proc_status_kib(pid, "VmHWM")
        res["rss_kib"] = proc_status_kib(pid, "VmRSS")
        polls, st = [], None
        for _ in range(samples):
            t = time.monotonic()
            st = daemon.status()
            if st and st["kernel"].get("poll_ms") is not None:
                polls.append(st["kernel"]["poll_ms"])
            time.sleep(max(0.0, 1.0 - (time.monotonic() - t)))
        res["polls"] = polls
        res["hwm_after_status_kib"] = proc_status_kib(pid, "VmHWM")
        if st:
            k = st["kernel"]
            res["dests_used"] = k.get("dests_used")
            res["dest_map_full"] = k.get("dest_map_full")
            res["conn_storage_fail"] = k.get("conn_storage_fail")
        res["load"] = stop_loads(loads)
        loads = []
    finally:
        for p in loads:
            p.kill()
            p.wait()
        res["daemon_rc"] = daemon.stop()
    res["total_s"] = time.monotonic() - t_start
    return res


def kib_mib(k):
    return "%.1f" % (k / 1024.0)


def table(results, env):
    out = [
        "| destinations × connections | calls/s (trickle) | setup s | daemon CPU % of one core "
        "| peak RSS MiB (after status) | polling pass ms: median / max (n) | destinations seen "
        "| other dw_ programs | notes |",
        "|---|---:|---:|---:|---:|---|---:|---:|---|",
    ]
    for r in results:
        if "error" in r:
            out.append("| %s × %s | — | — | — | — | — | — | — | FAILED: %s |" % (
                format(r["dests"], ","), format(r["conns"], ","), r["error"]))
            continue
        polls = r.get("polls") or []
        poll = "%.1f / %.1f (%d)" % (statistics.median(polls), max(polls), len(polls)) if polls else "—"
        notes = ["--max-dests %d" % r["max_dests"]]
        if r.get("dest_map_full"):
            notes.append("dest_map_full %d" % r["dest_map_full"])
        if r.get("conn_storage_fail"):
            notes.append("conn_storage_fail %d" % r["conn_storage_fail"])
        if r.get("daemon_rc"):
            notes.append("daemon exit status %s" % r["daemon_rc"])
        load = r.get("load") or {}
        if load:
            notes.append("%d load processes: %d calls in %.0f s, %d errors, %.1f CPU s" % (
                r["load_procs"], load.get("calls", 0), load.get("seconds", 0), load.get("errors", 0),
                load.get("cpu_s", 0)))
        out.append("| %s × %s | %s | %.1f | %.2f | %s (%s) | %s | %s | %d / %d | %s |" % (
            format(r["dests"], ","), format(r["conns"], ","),
            format(round(r["conns"] / r["period"]), ","), r["setup_s"], r["cpu_pct"],
            kib_mib(r["hwm_kib"]), kib_mib(r["hwm_after_status_kib"]), poll,
            format(r.get("dests_used") or 0, ","), r["foreign_before"], r["foreign_after"],
            "; ".join(notes)))
    return out


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "load":
        load_main(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]),
                  int(sys.argv[6]), int(sys.argv[7]))
        return
    quick = "--quick" in sys.argv
    out_path = sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv else None
    binary = os.environ.get("DEPWATCH", os.path.join(ROOT, "build", "depwatch"))
    default_cases = "200x1000" if quick else "1000x10000,10000x50000"
    cases = [tuple(int(x) for x in c.split("x")) for c in os.environ.get("SCALE_CASES", default_cases).split(",")]
    env = {
        "measure": float(os.environ.get("SCALE_MEASURE", 10 if quick else 30)),
        "settle": float(os.environ.get("SCALE_SETTLE", 2 if quick else 5)),
        "samples": int(os.environ.get("SCALE_SAMPLES", 5 if quick else 10)),
    }
    logf = open(os.path.join(os.environ.get("SCALE_LOGDIR", "/tmp"), "dwscale.log"), "a")
    results = []
    for ndests, nconns in cases:
        # one call per connection every 5 s, at most 5000 calls/s in all
        period = max(5.0, nconns / 5000.0)
        print("scale: %d destinations x %d connections, one call per connection every %.0f s ..."
              % (ndests, nconns, period), file=sys.stderr, flush=True)
        try:
            r = run_case(binary, ndests, nconns, period, env, logf)
        except Exception as e:  # recorded in the table: what broke and where
            r = {"dests": ndests, "conns": nconns, "error": "%s: %s" % (type(e).__name__, e)}
        print("scale: %s" % json.dumps(r), file=sys.stderr, flush=True)
        results.append(r)
    lines = table(results, env)
    text = "\n".join(lines)
    print(text)
    if out_path:
        with open(out_path, "w") as f:
            json.dump({"env": env, "results": results}, f)


if __name__ == "__main__":
    main()
