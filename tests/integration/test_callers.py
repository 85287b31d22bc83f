"""Callers (issue 16) against the real kernel: client processes the test
places in cgroups it creates under the cgroup v2 mount, named like a systemd
unit and like a docker container, call one dependency a known number of
times; status --json must give each caller its exact calls and in-flight,
named and of the right kind. A cgroup removed while its connection stays
open shows as gone:<id>.
"""

import json
import os
import random
import subprocess
import sys
import time

import test_top
from harness import DEPWATCH, LoopbackServer, dependency, start_configured, unique_name
import unittest

# A client process: joins its cgroup, makes CALLS calls on one connection, then sends
# one request to the hold server and waits (that call stays in flight) until stdin closes.
CLIENT = r"""
import os, socket, sys
cg, host, port, hold_port, calls = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
with open(os.path.join(cg, "cgroup.procs"), "w") as f:
    f.write(str(os.getpid()))
def line(s):
    b = b""
    while not b.endswith(b"\n"):
        got = s.recv(4096)
        if not got:
            raise SystemExit("closed")
        b += got
s = socket.create_connection((host, port))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
for _ in range(calls):
    s.sendall(b"GET\n")
    line(s)
h = socket.create_connection((host, hold_port))
h.sendall(b"GET\n")
print("ready", flush=True)
sys.stdin.read()
"""


def cgroup2_mount():
    with open("/proc/self/mounts") as f:
        for l in f:
            parts = l.split()
            if len(parts) > 2 and parts[2] == "cgroup2":
                return parts[1]
    return None


def caller(dep, name):
    rows = [c for c in dep.get("callers", []) if c["caller"] == name]
    return rows[0] if rows else None


class TestCallers(unittest.TestCase):
    def setUp(self):
        self.root = cgroup2_mount()
        if not self.root or os.geteuid() != 0:
            self.skipTest("needs root and a cgroup v2 mount")
        self.slice = os.path.join(self.root, unique_name("callers") + ".slice")
        os.mkdir(self.slice)
        self.addCleanup(self.rmdir_tree, self.slice)

    def rmdir_tree(self, path):
        for sub in sorted((os.path.join(dp, d) for dp, dns, _ in os.walk(path) for d in dns),
                          key=len, reverse=True):
            self.evacuate(sub)
            os.rmdir(sub)
        if os.path.isdir(path):
            self.evacuate(path)
            os.rmdir(path)

    def evacuate(self, cg):
        """Moves any process left in cg to the root, so that cg can go."""
        try:
            with open(os.path.join(cg, "cgroup.procs")) as f:
                pids = f.read().split()
        except FileNotFoundError:
            return
        for pid in pids:
            try:
                with open(os.path.join(self.root, "cgroup.procs"), "w") as f:
                    f.write(pid)
            except OSError:
                pass

    def start_client(self, cg, host, srv, hold, calls):
        p = subprocess.Popen([sys.executable, "-c", CLIENT, cg, host, str(srv.port), str(hold.port), str(calls)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.addCleanup(self.stop_client, p)
        self.assertEqual(p.stdout.readline().strip(), "ready")
        return p

    @staticmethod
    def stop_client(p):
        if p.poll() is None:
            p.stdin.close()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def test_two_callers_named_and_counted(self):
        host = "127.%d.%d.%d" % (random.randint(80, 250), random.randint(1, 250), random.randint(2, 250))
        srv = LoopbackServer(host, mode="delay", delay=0.001)
        self.addCleanup(srv.close)
        hold = LoopbackServer(host, mode="hold")
        self.addCleanup(hold.close)
        # three calls held in flight open the breaker (max_inflight): the open line names the callers
        d = start_configured(self.addCleanup, "[dependency store]\nmatch = %s\nmax_inflight = 2\n" % host)
        unit = os.path.join(self.slice, "payments-api.service")
        cid = "%064x" % random.getrandbits(256)
        box = os.path.join(self.slice, "docker-%s.scope" % cid)
        gone = os.path.join(self.slice, "short-lived.service")
        for cg in (unit, box, gone):
            os.mkdir(cg)
        a = self.start_client(unit, host, srv, hold, 30)
        b = self.start_client(box, host, srv, hold, 7)
        c = self.start_client(gone, host, srv, hold, 3)
        gone_id = os.stat(gone).st_ino
        # the third caller's cgroup goes while its connections stay open
        with open(os.path.join(self.root, "cgroup.procs"), "w") as f:
            f.write(str(c.pid))
        os.rmdir(gone)
        want = {"payments-api.service": ("unit", 30), "docker:" + cid[:12]: ("container", 7),
                "gone:%d" % gone_id: ("path", 3)}

        def ready(st):
            dep = dependency(st, "store")
            if not dep:
                return None
            got = {c["caller"]: c for c in dep.get("callers", [])}
            if all(n in got and got[n]["calls"] == k and got[n]["inflight"] == 1 for n, (_, k) in want.items()):
                return dep
            return None

        dep = dependency(d.wait_for(ready, what="three callers with their calls and one in flight each"),
                         "store")
        self.assertEqual(len(dep["callers"]), 3, dep["callers"])
        for name, (kind, calls) in want.items():
            row = caller(dep, name)
            self.assertEqual(row["kind"], kind, row)
            self.assertEqual(row["failed"], 0, row)
            self.assertGreater(row["oldest_inflight_ms"], 0, row)
            self.assertIn("p50_ms", row)
            self.assertIn("p99_ms", row)
        self.assertEqual(caller(dep, "payments-api.service")["cgroup_id"], os.stat(unit).st_ino)
        # most in flight first, then most calls
        self.assertEqual([c["caller"] for c in dep["callers"]],
                         ["payments-api.service", "docker:" + cid[:12], "gone:%d" % gone_id])
        self.assertEqual(dep["calls"], 40)
        self.assertEqual(dep["callers_folded"], 0)
        self.assertEqual(d.status()["kernel"]["caller_map_full"], 0)
        # the status table: the top callers under the dependency's line
        text = subprocess.run([DEPWATCH, "status", "--run-dir", d.run_dir], capture_output=True, text=True,
                              timeout=10).stdout
        lines = text.splitlines()
        at = [i for i, l in enumerate(lines) if l.startswith("store ")]
        self.assertTrue(at, text)
        self.assertTrue(lines[at[0] + 1].startswith("  <- payments-api.service "), text)
        self.assertTrue(lines[at[0] + 2].startswith("  <- docker:%s " % cid[:12]), text)
        # top: 'c' shows each dependency's callers under its row
        t = test_top.Tmux([DEPWATCH, "top", "--run-dir", d.run_dir], 140, 30) if test_top.TMUX else None
        if t:
            self.addCleanup(t.close)
            t.wait_screen(lambda s: "store" in s)
            t.keys("c")
            screen = t.wait_screen(lambda s: "<- payments-api.service" in s)
            self.assertIn("<- payments-api.service", screen)
            self.assertIn("<- docker:%s" % cid[:12], screen)
            t.keys("q")
        opened = None
        deadline = time.monotonic() + 5
        while not opened and time.monotonic() < deadline:
            with open(d.events) as f:
                lines = [json.loads(l) for l in f if l.strip()]
            opened = [e for e in lines if e.get("event") == "transition" and e.get("state") == "open"]
            time.sleep(0.1)
        self.assertTrue(opened, "no open event")
        self.assertTrue(opened[0]["callers"].startswith("payments-api.service:1,docker:%s:1" % cid[:12]),
                        opened[0])
        hold.release()


if __name__ == "__main__":
    unittest.main()
