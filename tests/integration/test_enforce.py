"""Enforcement against the real kernel: connect() to an enforced dependency
whose breaker is open fails at once with ECONNREFUSED, everything else still
connects, half_open lets exactly the probes through, an operator can force
and release a breaker, and a dead daemon never leaves a host refusing."""

import errno
import json
import os
import signal
import socket
import subprocess
import time
import unittest

from harness import DEPWATCH, bind_fresh_port, dependency, reloaded_daemon
from openloop import SlowServer


def listener():
    """A listener on a port new to the run: a reload-shared daemon keeps the rows of the tests before."""
    s = bind_fresh_port(lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM), "127.0.0.1")
    s.listen(128)
    return s


def try_connect(port, family=socket.AF_INET, host="127.0.0.1"):
    """(errno or 0, seconds it took)"""
    s = socket.socket(family, socket.SOCK_STREAM)
    t0 = time.monotonic()
    try:
        s.connect((host, port))
        return 0, time.monotonic() - t0
    except OSError as e:
        return e.errno, time.monotonic() - t0
    finally:
        s.close()


class EnforceCase(unittest.TestCase):
    """What both classes' tests use; a daemon of the test's own unless its class is RELOAD_SHARED."""

    def setUp(self):
        self.cleanups = []

    def tearDown(self):
        for fn in reversed(self.cleanups):
            fn()

    def daemon(self, conf_text):
        d = reloaded_daemon(self, conf_text, add_cleanup=self.cleanups.append)
        self.assertIn("cgroup/connect4 cgroup/connect6", d.stderr_text().split("not attached")[0],
                      "enforcement not attached: " + d.stderr_text())
        return d

    def breaker(self, d, verb, name):
        r = subprocess.run([DEPWATCH, "breaker", verb, name, "--run-dir", d.run_dir],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)

    def forced_open(self):
        """A daemon enforcing dependency `pay` on a fresh listener, forced open: (daemon, port)."""
        lst = listener()
        self.cleanups.append(lst.close)
        port = lst.getsockname()[1]
        d = self.daemon("[dependency pay]\nmatch = 127.0.0.1:%d\nenforce = connect\n" % port)
        self.breaker(d, "open", "pay")
        self.assertEqual(try_connect(port)[0], errno.ECONNREFUSED)
        return d, port

    def seconds_until_connects(self, port, when):
        t0 = time.monotonic()
        while try_connect(port)[0] != 0:
            self.assertLess(time.monotonic() - t0, 3.0, "still refused 3 s " + when)
            time.sleep(0.01)
        return time.monotonic() - t0


class EnforceTest(EnforceCase):
    # each test reads only its own dependency's row and events and neither stops nor signals the
    # daemon: one daemon for the class, a reload per test (harness.reloaded_daemon; enforcement's
    # cgroup programs are attached whatever the config)
    RELOAD_SHARED = True

    def test_forced_open_rejects_fast_and_auto_lifts(self):
        enforced, other = listener(), listener()
        self.cleanups += [enforced.close, other.close]
        port, other_port = enforced.getsockname()[1], other.getsockname()[1]
        d = self.daemon("[dependency pay]\nmatch = 127.0.0.1:%d\nenforce = connect\n" % port)
        keepalive = socket.create_connection(("127.0.0.1", port))
        self.cleanups.append(keepalive.close)
        self.assertEqual(try_connect(port)[0], 0)

        self.breaker(d, "open", "pay")
        took = []
        for _ in range(20):
            err, t = try_connect(port)
            self.assertEqual(err, errno.ECONNREFUSED, "connect to an open enforced dependency")
            took.append(t)
        took.sort()
        print("\n  rejected connect: median %.3f ms, worst %.3f ms of 20" % (took[10] * 1000, took[-1] * 1000))
        self.assertLess(took[10], 0.010, "refused at once, not after a timeout")
        self.assertEqual(try_connect(port, socket.AF_INET6, "::ffff:127.0.0.1")[0], errno.ECONNREFUSED)
        self.assertEqual(try_connect(other_port)[0], 0, "a destination that is not enforced")

        st = d.wait_for(lambda s: dependency(s, "pay")["rejected"] >= 21)
        dep = dependency(st, "pay")
        self.assertEqual((dep["breaker"], dep["reason"], dep["forced"]), ("open", "forced", True))
        self.assertEqual(dep["rejected"], 21)
        self.assertGreaterEqual(dep["connections"], 1, "the keep-alive connection is still open")
        with open(d.events) as f:
            firsts = [json.loads(l) for l in f if "rejecting_connects" in l]
        self.assertEqual(len(firsts), 1, "exactly one line for the first rejection of the open period")

        self.breaker(d, "auto", "pay")
        self.assertEqual(try_connect(port)[0], 0)
        self.assertEqual(dependency(d.status(), "pay")["forced"], False)

    def test_not_enforced_dependency_is_never_refused(self):
        lst = listener()
        self.cleanups.append(lst.close)
        port = lst.getsockname()[1]
        d = self.daemon("[dependency watchonly]\nmatch = 127.0.0.1:%d\n" % port)
        self.breaker(d, "open", "watchonly")
        self.assertEqual(try_connect(port)[0], 0)

    def test_half_open_lets_exactly_the_probes_through(self):
        srv = SlowServer(30.0)
        self.cleanups.append(srv.close)
        d = self.daemon("[dependency pool]\nmatch = 127.0.0.1:%d\nenforce = connect\n"
                        "max_inflight = 2\nopen_for = 1s\nhalf_open_calls = 3\n" % srv.port)
        hanging = [socket.create_connection(("127.0.0.1", srv.port)) for _ in range(2)]
        for c in hanging:
            c.sendall(b"x\n")
        st = d.wait_for(lambda s: dependency(s, "pool")["breaker"] == "open")
        self.assertEqual(dependency(st, "pool")["reason"], "concurrency")
        self.assertEqual(try_connect(srv.port)[0], errno.ECONNREFUSED)
        for c in hanging:
            c.close()
        st = d.wait_for(lambda s: dependency(s, "pool")["breaker"] == "half_open", timeout=5)
        self.assertEqual(dependency(st, "pool")["breaker"], "half_open")
        results = [try_connect(srv.port)[0] for _ in range(6)]
        self.assertEqual(results.count(0), 3, results)
        self.assertEqual(results.count(errno.ECONNREFUSED), 3, results)

    def test_unknown_dependency_is_an_error(self):
        d = self.daemon("[defaults]\n")
        r = subprocess.run([DEPWATCH, "breaker", "open", "nosuch", "--run-dir", d.run_dir],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        self.assertIn("no dependency named 'nosuch'", r.stderr)


class FailOpenTest(EnforceCase):
    """A daemon of each test's own: it is killed, stopped (SIGSTOP) or stopped cleanly."""

    def test_kill_9_fails_open_within_3_seconds(self):
        d, port = self.forced_open()
        d.proc.send_signal(signal.SIGKILL)
        took = self.seconds_until_connects(port, "after kill -9")
        print("\n  kill -9: connects succeed again after %.0f ms" % (took * 1000))

    def test_sigstop_fails_open_when_the_lease_runs_out(self):
        """A hung daemon keeps its programs attached: the lease is what lets traffic through."""
        d, port = self.forced_open()
        d.proc.send_signal(signal.SIGSTOP)
        self.cleanups.insert(0, lambda: d.proc.send_signal(signal.SIGCONT))
        took = self.seconds_until_connects(port, "after the daemon hung")
        print("\n  SIGSTOP: lease expired, connects succeed after %.0f ms" % (took * 1000))

    def test_clean_stop_lifts_at_once(self):
        d, port = self.forced_open()
        self.assertEqual(d.stop(), 0)
        self.assertEqual(try_connect(port)[0], 0)
        self.assertFalse(os.path.exists(d.pin_dir))


if __name__ == "__main__":
    unittest.main()
