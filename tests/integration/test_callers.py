"""Callers (issue 16) against the real kernel: client processes the test
places in cgroups it creates under the cgroup v2 mount, named like a systemd
unit and like a docker container, call one dependency a known number of
times; status --json must give each caller its exact calls and in-flight,
named and of the right kind. A cgroup removed while its connection stays
open shows as gone:<id>. A caller's percentiles are over the window, as its
dependency's: slow calls the window has moved past no longer count in them.
"""

import json
import os
import random
import subprocess
import sys
import time

import test_top
from harness import (DEPWATCH, INTERVAL_MS, Daemon, LoopbackServer, dependency, find_dest, fmt_dest,
                     start_configured, unique_name, write_config)
import unittest

# What both client processes share: joining their cgroup, reading one answer line.
PRELUDE = r"""
import os, socket, sys, time
def join(cg):
    with open(os.path.join(cg, "cgroup.procs"), "w") as f:
        f.write(str(os.getpid()))
def line(s):
    b = b""
    while not b.endswith(b"\n"):
        got = s.recv(4096)
        if not got:
            raise SystemExit("closed")
        b += got
"""

# A client process: joins its cgroup, makes CALLS calls on one connection, then sends
# one request to the hold server and waits (that call stays in flight) until stdin closes.
CLIENT = PRELUDE + r"""
cg, host, port, hold_port, calls = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
join(cg)
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

# A client process in phases: joins its cgroup, then for each line "N" read on stdin makes N
# calls on one connection and prints "done"; ends at end of input.
PHASED = PRELUDE + r"""
cg, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
join(cg)
s = socket.create_connection((host, port))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
for req in sys.stdin:
    took = []
    for _ in range(int(req)):
        t = time.monotonic()
        s.sendall(b"GET\n")
        line(s)
        took.append(time.monotonic() - t)
    print("done " + " ".join("%.6f" % t for t in took), flush=True)
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
            opened = [e for e in lines if e.get("event") == "transition" and e.get("state") == "open"
                      and e.get("dependency") == "store"]
            time.sleep(0.1)
        self.assertTrue(opened, "no open event")
        self.assertTrue(opened[0]["callers"].startswith("payments-api.service:1,docker:%s:1" % cid[:12]),
                        opened[0])
        hold.release()

    def test_open_between_polls_names_callers_new_since_the_poll(self):
        """A breaker that opens on a re-read between polls names the callers of the calls that
        re-read found, a caller whose first calls came after the poll included. One caller's held
        call is seen by a poll; a second caller starts and holds its call; the re-read when the
        first call turns slow (before the next poll) finds two in flight and opens the breaker
        (max_inflight = 2): its open line names both.
        The second caller has slow_call - interval (3 s) after the poll to hold its call, and the
        first call's slow time comes 5 s before the next poll: room for python's start on a busy
        host (with 5 and 6, 1 s, the syscalls pass failed once in CI)."""
        interval, slow_call = 8, 11
        host = "127.%d.%d.%d" % (random.randint(80, 250), random.randint(1, 250), random.randint(2, 250))
        srv = LoopbackServer(host, mode="delay", delay=0.001)
        self.addCleanup(srv.close)
        hold = LoopbackServer(host, mode="hold")
        self.addCleanup(hold.close)
        d = start_configured(self.addCleanup, "[dependency store]\nmatch = %s\nmax_inflight = 2\n"
                             "slow_call = %ds\n" % (host, slow_call), ["--interval", "%ds" % interval])
        first, second = (os.path.join(self.slice, n + ".service") for n in ("first", "second"))
        for cg in (first, second):
            os.mkdir(cg)

        def next_poll(after):
            """Waits for the poll after the one status showed as `after` (its kernel's polls); its
            status. Not uptime_s: a re-read between polls (another process's call turning slow,
            the other pass's in make test) moves it, with only the hot rows read again."""
            deadline = time.monotonic() + interval + 5
            while time.monotonic() < deadline:
                st = d.status()
                if st["kernel"]["polls"] > after:
                    return st
                time.sleep(0.05)
            raise AssertionError("no poll within %d s" % (interval + 5))

        # the first caller's held call begins just after a poll: the next poll sees it, not yet slow
        st = next_poll(d.status()["kernel"]["polls"])
        t0 = time.monotonic()
        self.start_client(first, host, srv, hold, 4)
        took = {"first_ready_s": round(time.monotonic() - t0, 3)}
        before = st["uptime_s"]
        st = next_poll(st["kernel"]["polls"])
        took["poll_uptimes_s"] = (before, st["uptime_s"])
        self.assertEqual(dependency(st, "store")["inflight"], 1, (dependency(st, "store"), took))
        # the second caller's calls all come after that poll, ~3 s before the first call turns slow
        took["poll_s"] = round(time.monotonic() - t0, 3)
        self.start_client(second, host, srv, hold, 2)
        seen = time.monotonic()
        took["second_ready_s"] = round(seen - t0, 3)
        opened = []
        while not opened and time.monotonic() < seen + interval:
            time.sleep(0.1)
            with open(d.events) as f:
                opened = [e for e in map(json.loads, filter(str.strip, f))
                          if e.get("event") == "transition" and e.get("state") == "open"
                             and e.get("dependency") == "store"]
        self.assertTrue(opened, "no open event %s" % took)
        self.assertEqual(opened[0]["inflight"], 2, (opened[0], took))
        # the re-read comes as the first call turns slow, the next poll ~5 s after
        self.assertLess(opened[0]["oldest_ms"], slow_call * 1000 + 2000,
                        ("opened on a poll, not the re-read", opened[0], took))
        self.assertEqual(opened[0]["callers"].split(","), ["first.service:1", "second.service:1"],
                         (opened[0], took))
        hold.release()

    @staticmethod
    def table_caller(d, name):
        """The cells of a caller's line in the status table (the last two: p50, p99)."""
        text = subprocess.run([DEPWATCH, "status", "--run-dir", d.run_dir], capture_output=True, text=True,
                              timeout=10).stdout
        lines = [l for l in text.splitlines() if l.startswith("  <- %s " % name)]
        if not lines:
            raise AssertionError("no caller line for %s in:\n%s" % (name, text))
        return lines[0].split()

    def test_percentiles_over_the_window(self):
        """Slow calls, a window's wait, fast calls: the caller's p50/p99 are the fast calls',
        as its dependency's are, window_calls counts the fast calls only, calls every one."""
        SLOW, FAST = 5, 20
        slow_s, fast_s, window_s = 0.2, 0.02, 2
        host = "127.%d.%d.%d" % (random.randint(80, 250), random.randint(1, 250), random.randint(2, 250))
        srv = LoopbackServer(host, mode="delay", delay=slow_s)
        self.addCleanup(srv.close)
        conf = write_config("[dependency store]\nmatch = %s\n" % host)
        self.addCleanup(os.unlink, conf)
        d = Daemon(extra_args=["-c", conf, "--window", "%ds" % window_s])
        self.addCleanup(d.cleanup)
        d.start()
        unit = os.path.join(self.slice, "checkout.service")
        os.mkdir(unit)
        p = subprocess.Popen([sys.executable, "-c", PHASED, unit, host, str(srv.port)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.addCleanup(self.stop_client, p)

        def phase(n):
            """n calls; the seconds each took, as the client saw it."""
            p.stdin.write("%d\n" % n)
            p.stdin.flush()
            said = p.stdout.readline().split()
            self.assertEqual(said[:1], ["done"])
            return sorted(float(t) for t in said[1:])

        phase(SLOW)
        # the slow calls as the old code showed them: in the caller's percentiles
        st = d.wait_for(lambda st: caller(dependency(st, "store"), "checkout.service")["calls"] == SLOW,
                        what="the slow calls counted")
        row = caller(dependency(st, "store"), "checkout.service")
        self.assertEqual(row["calls"], SLOW, row)
        self.assertGreater(row["p99_ms"], 1000 * slow_s * 0.85, row)
        # the window moves past them (two intervals of slack for the last poll's slot)
        time.sleep(window_s + 2 * INTERVAL_MS / 1000)
        st = d.wait_for(lambda st: caller(dependency(st, "store"), "checkout.service")["window_calls"] == 0,
                        what="the slow calls out of the window")
        row = caller(dependency(st, "store"), "checkout.service")
        self.assertEqual(row["window_calls"], 0, row)
        self.assertIsNone(row["p50_ms"], row)
        self.assertIsNone(row["p99_ms"], row)
        self.assertIsNone(dependency(st, "store")["p99_ms"], dependency(st, "store"))
        self.assertEqual(row["calls"], SLOW, row)
        # the table shows no percentiles as it does for a dependency with none: "-"
        self.assertEqual(self.table_caller(d, "checkout.service")[-2:], ["-", "-"])
        srv.delay = fast_s
        t0 = time.monotonic()
        seen = phase(FAST)
        took = time.monotonic() - t0
        # every fast call inside the window (they took well under it): window_calls is exact
        self.assertLess(took, window_s / 2, "the fast calls took %.2f s" % took)

        def fast_in(st):
            r = caller(dependency(st, "store"), "checkout.service")
            return r["window_calls"] == FAST and r["calls"] == SLOW + FAST

        st = d.wait_for(fast_in, what="the fast calls in the window")
        dep = dependency(st, "store")
        row = caller(dep, "checkout.service")
        dest = find_dest(st, fmt_dest(host, srv.port))
        print("\n    caller p50 %s p99 %s window_calls %s calls %s; dependency p50 %s p99 %s; dest window_calls %s"
              % (row["p50_ms"], row["p99_ms"], row["window_calls"], row["calls"], dep["p50_ms"], dep["p99_ms"],
                 dest["window_calls"]))
        self.assertEqual(row["window_calls"], FAST, row)
        self.assertEqual(dest["window_calls"], FAST, dest)
        self.assertEqual(row["calls"], SLOW + FAST, row)
        self.assertEqual(row["failed"], 0, row)
        fast_ms = 1000 * fast_s
        # what the client saw of the fast calls: its median and its slowest (p99 of 20 is the
        # slowest). A call as the kernel times it took at least the delay and no longer than the
        # client saw: the bucket's middle within 12.5% of those (the host: the delay + < 5 ms;
        # under emulation, the 6.1 stage, up to +11 ms: the machine's own)
        client = {"p50_ms": 1000 * seen[len(seen) // 2], "p99_ms": 1000 * seen[-1]}
        for q in ("p50_ms", "p99_ms"):
            self.assertGreaterEqual(row[q], fast_ms * 0.875, row)
            self.assertLessEqual(row[q], client[q] * 1.125, (row, client))
            # two histograms of 12.5% each over the same calls
            self.assertLessEqual(abs(row[q] - dep[q]), 0.25 * dep[q] + 1, (row, dep))
        # the status table shows the same: the caller's p99 is no longer the slow calls'
        cell = self.table_caller(d, "checkout.service")[-1]
        self.assertRegex(cell, r"^[0-9.]+ms$")
        self.assertLess(float(cell[:-2]), 1000 * slow_s / 2, cell)
        p.stdin.close()
        p.wait(10)


if __name__ == "__main__":
    unittest.main()
