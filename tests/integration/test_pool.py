"""Issue 13, a small pool that hangs: a closed-loop pool of N callers, each
with one keep-alive connection, calls a stand-in dependency that goes from
20 ms to answering nothing. With N = 2, 4, 8, 32 and 200 the breaker must
open within slow_call + 500 ms of the change (doc/detection.md, the stall).
And the stall must not open a healthy dependency: (a) 40 calls/s open-loop,
5% of them at 700 ms, and (b) a closed-loop pool of 4 with 1% of calls at
2 x slow_call, both for DW_POOL_NULL_SECONDS (30 s: about 60 tail calls and 60 slow calls each,
enough to see a false stall, which would open within a second of one; run longer by hand),
concurrently against two dependencies of one daemon.

In the kernel stage's emulated guest (harness.EMULATED) the pool of 200 is
left out: its healthy calls alone took a median 587 ms there, over slow_call,
so the breaker opened on the emulation before any hang."""

import json
import os
import time
import unittest

from harness import EMULATED, dependency, reloaded_daemon
from workpool import PoolProcess, StandInProcess

SLOW_CALL = 0.5
DEADLINE = SLOW_CALL + 0.5       # the issue's: from the change to the breaker open
POLL = 0.05                      # the test reads status this often, no faster
POOLS = (2, 4, 8, 32) if EMULATED else (2, 4, 8, 32, 200)
DEFAULT_SAMPLE = 20             # [defaults] sample, which the test's config leaves as it is
NULL_SECONDS = float(os.environ.get("DW_POOL_NULL_SECONDS", "30"))


class PoolTest(unittest.TestCase):
    # each test reads only its own dependencies' rows and events and neither stops nor signals the
    # daemon: one daemon for both, a reload per test (harness.reloaded_daemon)
    RELOAD_SHARED = True

    def setUp(self):
        self.cleanups = []

    def tearDown(self):
        for fn in reversed(self.cleanups):
            fn()

    def start_daemon(self, conf_text):
        return reloaded_daemon(self, conf_text, add_cleanup=self.cleanups.append)

    def server(self, delay, share=0.0, slow=0.0, seed=13):
        s = StandInProcess(delay, share, slow, seed)
        self.cleanups.append(s.close)
        return s

    def transitions(self, d, name):
        with open(d.events) as f:
            evs = [json.loads(line) for line in f if line.strip()]
        return [(e["from"], e["state"], e.get("reason")) for e in evs
                if e["dependency"] == name and e["event"] == "transition"]

    def hang_and_time(self, d, name, srv, n):
        """Seconds from the change to the first status read that shows the
        breaker open (status read every POLL s), and the daemon's own figure:
        that read's time less its since_s. None, None: never within 3 s."""
        pool = PoolProcess(srv.port, n, SLOW_CALL)
        self.cleanups.append(pool.close)
        time.sleep(1.5)     # a full sample of fast calls, from every caller
        self.assertGreater(pool.counts()["answered"], 2 * n, "the pool of %d barely called" % n)
        dep = dependency(d.status(), name)
        self.assertEqual(dep["breaker"], "closed", dep)
        self.assertGreater(dep["calls"], 20, dep)

        t0 = time.monotonic()
        srv.hang()
        while time.monotonic() - t0 < 3.0:
            dep = dependency(d.status(), name)
            seen = time.monotonic()
            if dep["breaker"] == "open":
                self.assertEqual(dep["reason"], "slow_rate", dep)
                return seen - t0, seen - dep["since_s"] - t0, dep
            time.sleep(POLL)
        return None, None, dep

    def test_small_pools_hang_open_in_time(self):
        """Each N against its own dependency (one daemon); the stand-in of each
        hangs in turn. The assertion is the issue's deadline, on the test's
        own clock, from just before it tells the stand-in to hang to the
        moment of the open: the first status read that shows it (every
        50 ms), less that read's since_s. That read's own lag (the status
        command's round trip after the daemon answered) counts against the
        deadline, a late read by the test itself does not. The first read's
        figure is printed too."""
        servers = {n: self.server(0.020) for n in POOLS}
        conf = "[defaults]\nslow_call = %dms\n" % (SLOW_CALL * 1000)
        for n in POOLS:
            conf += "[dependency pool%d]\nmatch = 127.0.0.1:%d\n" % (n, servers[n].port)
        d = self.start_daemon(conf)
        figures = []
        for n in POOLS:
            with self.subTest(pool=n):
                polled, own, dep = self.hang_and_time(d, "pool%d" % n, servers[n], n)
                self.assertIsNotNone(polled, "pool of %d: never opened: %r" % (n, dep))
                figures.append("N=%d %.0f ms (first read %.0f ms)" % (n, own * 1000, polled * 1000))
                self.assertLessEqual(own, DEADLINE, "pool of %d: %r" % (n, dep))
                # A pool smaller than sample (20, the default) can only open through the stall
                # rule. A larger one fills sample with calls turned slow by themselves, and the
                # stall rule may stand aside: a call that began just after the oldest hanging one
                # and was answered as the stand-in switched says the dependency still answered
                # (with 200 callers, 10 calls start per millisecond). Either rule is in time.
                if n < DEFAULT_SAMPLE:
                    self.assertEqual(dep.get("stalled", True), True, dep)
                self.assertEqual(self.transitions(d, "pool%d" % n)[:1], [("closed", "open", "slow_rate")])
        print("\n  open after the hang (deadline %d ms): %s" % (DEADLINE * 1000, ", ".join(figures)))

    def test_healthy_tails_never_stall(self):
        """(a) open-loop 40 calls/s at 20 ms, 5% at 700 ms; (b) a closed-loop
        pool of 4 at 20 ms, 1% at 2 x slow_call. Neither breaker ever leaves
        closed: status every 50 ms, and the events file for anything between."""
        tail = self.server(0.020, 0.05, 0.700)
        pool_srv = self.server(0.020, 0.01, 2 * SLOW_CALL, seed=14)
        d = self.start_daemon("[defaults]\nslow_call = %dms\n"
                              "[dependency tail]\nmatch = 127.0.0.1:%d\n"
                              "[dependency pool4]\nmatch = 127.0.0.1:%d\n"
                              % (SLOW_CALL * 1000, tail.port, pool_srv.port))
        client = PoolProcess(tail.port, -40, SLOW_CALL)
        self.cleanups.append(client.close)
        pool = PoolProcess(pool_srv.port, 4, SLOW_CALL)
        self.cleanups.append(pool.close)
        worst = {"tail": 0.0, "pool4": 0.0}
        stalled = {"tail": 0, "pool4": 0}
        t0 = time.monotonic()
        while time.monotonic() - t0 < NULL_SECONDS:
            st = d.status()
            for name in worst:
                dep = dependency(st, name)
                self.assertEqual(dep["breaker"], "closed", "%s after %.1f s: %r"
                                 % (name, time.monotonic() - t0, dep))
                worst[name] = max(worst[name], dep["slow_rate"])
                stalled[name] += bool(dep.get("stalled"))
            time.sleep(POLL)
        st = d.status()
        for name in worst:
            self.assertEqual(self.transitions(d, name), [], name)
            self.assertEqual(stalled[name], 0, name)
        a, b = dependency(st, "tail"), dependency(st, "pool4")
        ca, cb = client.counts(), pool.counts()
        print("\n  %.0f s: (a) %d calls, %d slow (client: %d answered, %d slow), worst slow_rate %.2f;"
              " (b) %d calls, %d slow (client: %d answered, %d slow), worst slow_rate %.2f"
              % (NULL_SECONDS, a["calls"], a["slow"], ca["answered"], ca["slow"], worst["tail"],
                 b["calls"], b["slow"], cb["answered"], cb["slow"], worst["pool4"]))
        # the tails happened, or the test tested nothing
        self.assertGreater(a["slow"], 0, a)
        self.assertGreater(cb["slow"], 0, "pool of 4: no slow call in %.0f s" % NULL_SECONDS)
        self.assertGreater(b["slow"], 0, b)
        self.assertEqual((ca["errors"], cb["errors"]), (0, 0))


if __name__ == "__main__":
    unittest.main()
