"""Per-CPU rows of the per-call counters (issue 17): exact figures with calls from several CPUs.

The kernel counts each call's start slice and histogram bucket in a row of
the CPU it runs on, folded into the destination's shared row now and then
(bpf/depwatch.h, struct dw_cpu_row); the daemon adds the rows to the shared
row when it reads it. Here client processes pinned one per CPU make many
short calls to one destination at once, so starts, ends, folds and flushes
of several CPUs interleave, and every figure built from those counters must
equal what the clients know: calls, the window's histogram (window_calls),
the cumulative histogram (/metrics _count), the slices the slow-rate is
judged from (decided, slow_rate), the caller rows' calls (struct
dw_caller_cpu_row), and the same on the server's inbound row.
"""

# Loads the machine: runs alone when make test's two passes go side by side (harness.runs_alone).
# calls from every CPU at once.
RUNS_ALONE = True

import os
import subprocess
import sys
import tempfile
import time

from harness import REQ, RESP, DaemonTestCase, LoopbackServer, dependency, free_port
from test_metrics import http_get, samples

CALLS_EACH = 3000

# One client: pinned to its CPU, one keep-alive connection, CALLS_EACH calls; prints how many it made.
CLIENT = r'''
import os, socket, sys
cpu, port, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
os.sched_setaffinity(0, {cpu})
s = socket.create_connection(("127.0.0.1", port))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
s.settimeout(30)
sys.stdin.readline()  # every client connected: go
done = 0
for _ in range(n):
    s.sendall(%r)
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = s.recv(64)
        if not chunk:
            raise SystemExit("closed after %%d calls" %% done)
        buf += chunk
    if buf != %r:
        raise SystemExit("unexpected answer %%r" %% buf)
    done += 1
print(done)
s.close()
''' % (REQ, RESP)


def cpus():
    return sorted(os.sched_getaffinity(0))


class Test01PerCpuExact(DaemonTestCase):
    def run_clients(self, port, n):
        """One client per allowed CPU (at least 2 processes), started together; the calls each made."""
        on = cpus()
        procs = [subprocess.Popen([sys.executable, "-c", CLIENT, str(on[i % len(on)]), str(port), str(n)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True) for i in range(max(2, len(on)))]
        time.sleep(0.3)  # connected (the go line waits in the pipe otherwise)
        for p in procs:
            p.stdin.write("\n")
            p.stdin.flush()
        made = []
        for p in procs:
            out, err = p.communicate(timeout=120)
            self.assertEqual(p.returncode, 0, "client: " + err)
            made.append(int(out))
        return made

    def test_many_calls_from_every_cpu_to_one_destination(self):
        if len(cpus()) < 2:
            self.skipTest("needs 2 CPUs")
        srv = LoopbackServer("127.0.0.1", mode="delay", delay=0)
        self.addCleanup(srv.close)
        mport = free_port()
        fd, conf = tempfile.mkstemp(prefix="dwtest-percpu-", suffix=".conf")
        with os.fdopen(fd, "w") as f:
            # every call within the window's sample: decided counts them all
            f.write("[dependency pc]\nmatch = 127.0.0.1:%d\nslow_call = 1s\nsample = 10000\n" % srv.port)
        self.addCleanup(os.unlink, conf)
        d = self.start_daemon(extra_args=["-c", conf, "--metrics", "127.0.0.1:%d" % mport])

        made = self.run_clients(srv.port, CALLS_EACH)
        total = sum(made)
        self.assertEqual(made, [CALLS_EACH] * len(made))
        self.assertEqual(srv.answered, total, "server answered")

        def settled(st):
            dep = dependency(st, "pc")
            return dep is not None and dep["calls"] >= total and dep["inflight"] == 0 and dep["decided"] >= total

        st = d.wait_for(settled, timeout=10, what="every call counted and decided")
        row = d.dest(srv.dest, st)
        self.assertRow(row, {"calls": total, "failed": 0, "inflight": 0, "window_calls": total}, srv.dest)
        dep = dependency(st, "pc")
        self.assertRow(dep, {"calls": total, "failed": 0, "slow": 0, "inflight": 0, "decided": total,
                             "slow_rate": 0, "failure_rate": 0}, "dependency pc")
        # the caller rows (issue 16) count per CPU too: the clients' cgroup has every call
        callers = dep.get("callers", [])
        self.assertEqual(sum(c["calls"] for c in callers), total, "callers: %r" % callers)
        self.assertEqual(sum(c["failed"] for c in callers), 0)
        inbound = [r for r in st["inbound"] if r["port"] == srv.port]
        self.assertEqual(len(inbound), 1, "inbound rows of port %d: %r" % (srv.port, st["inbound"]))
        self.assertRow(inbound[0], {"requests": total, "failed": 0, "inflight": 0}, "inbound")
        self.assertEqual(st["kernel"]["hist_map_full"], 0)

        status, _, body = http_get(mport, "/metrics")
        self.assertEqual(status, 200, body)
        s = samples(body)
        key = ("depwatch_call_duration_seconds_count", '{dependency="pc"}')
        self.assertEqual(s.get(key), total, "the cumulative histogram's count")
        self.assertEqual(s.get(("depwatch_calls_total", '{dependency="pc"}')), total)
        print("\n    %d clients x %d calls: calls %d, window_calls %d, decided %d, inbound %d, p50 %s ms"
              % (len(made), CALLS_EACH, row["calls"], row["window_calls"], dep["decided"],
                 inbound[0]["requests"], row["p50_ms"]), end="", flush=True)
