"""Outlier ejection against the real kernel (doc/enforcement.md, "Ejection"):
a dependency of three stand-in replicas, one of which turns slow with no
errors, called open-loop round-robin over fresh connections. The slow one is
ejected within slow_call + 1 s: its hanging calls end with an error, its
connects are refused, the other two see no error; it comes back through
probes, and a second ejection lasts longer. max_ejected holds when two go
slow, and a replica with only a heavier tail is never ejected."""

import errno
import json
import os
import signal
import socket
import subprocess
import threading
import time
import unittest
import urllib.request

from harness import DEPWATCH, dependency, find_dest, fmt_dest, free_port, own_netns, reloaded_daemon
from openloop import SlowServer, open_loop

SLOW_CALL = 0.5
FAST = 0.02
HANG = 9.0


class RoundRobinClient:
    """Starts `rate` calls a second, each on a fresh connection to the next
    replica in turn, whether or not earlier ones came back. calls[i]: the
    (start, end, ok, errno) of every finished call to replica i."""

    def __init__(self, ports, rate):
        self.ports = ports
        self.rate = rate
        self.stopped = threading.Event()
        self.lock = threading.Lock()
        self.next = 0
        self.calls = [[] for _ in ports]
        self.thread = threading.Thread(target=open_loop, args=(rate, self.stopped, self._call),
                                       daemon=True)

    def start(self):
        self.thread.start()
        return self

    def _call(self):
        with self.lock:
            i = self.next
            self.next = (self.next + 1) % len(self.ports)
        start = time.monotonic()
        err = 0
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(30)
        try:
            s.connect(("127.0.0.1", self.ports[i]))
            s.sendall(b"call\n")
            if not s.recv(64):
                err = errno.ECONNRESET
        except OSError as e:
            err = e.errno or errno.EIO
        finally:
            s.close()
        with self.lock:
            self.calls[i].append((start, time.monotonic(), err == 0, err))

    def since(self, i, t):
        with self.lock:
            return [c for c in self.calls[i] if c[0] >= t]

    def stop(self):
        self.stopped.set()
        self.thread.join()


def events_of(d, kind):
    with open(d.events) as f:
        return [e for e in (json.loads(l) for l in f if l.strip()) if e.get("event") == kind]


class EjectCase(unittest.TestCase):
    """What both classes' tests use; a daemon of the test's own unless its class is RELOAD_SHARED."""

    def setUp(self):
        self.cleanups = []

    def tearDown(self):
        for fn in reversed(self.cleanups):
            fn()

    def replicas(self, n=3, delay=FAST, tails=None):
        servers = [SlowServer(delay, tail=(tails or {}).get(i)) for i in range(n)]
        for s in servers:
            self.cleanups.append(s.close)
        return servers

    @staticmethod
    def conf(servers, extra="", eject="on"):
        return ("[dependency pay]\n" + "".join("match = 127.0.0.1:%d\n" % s.port for s in servers) +
                "slow_call = 500ms\neject = %s\nenforce = abort\n" % eject + extra)

    def daemon(self, servers, extra="", args=()):
        d = reloaded_daemon(self, self.conf(servers, extra), args, self.cleanups.append)
        d.conf = d.events[:-len(".events")]
        return d

    def reload(self, d, text):
        before = d.stderr_text().count("reload")
        with open(d.conf, "w") as f:
            f.write(text)
        d.proc.send_signal(signal.SIGHUP)
        d.wait_for(lambda st: d.stderr_text().count("reload") > before, timeout=5, what="reload")

    def breaker(self, d, *args):
        return subprocess.run([DEPWATCH, "breaker"] + list(args) + ["--run-dir", d.run_dir],
                              capture_output=True, text=True)

    def client(self, servers, rate=40):
        c = RoundRobinClient([s.port for s in servers], rate).start()
        self.cleanups.append(c.stop)
        return c

    def dest(self, d, server, st=None):
        return find_dest(st or d.status(), fmt_dest("127.0.0.1", server.port))

    def wait_ejected(self, d, server, ejected, timeout):
        return d.wait_for(lambda st: (self.dest(d, server, st) or {}).get("ejected") == ejected,
                          timeout=timeout, what="%s ejected=%s" % (server.port, ejected))


class EjectTest(EjectCase):
    # each test reads only its own replicas' rows, its dependency's row and events and its own lines,
    # and neither reloads, stops nor signals the daemon: one daemon for the class, a reload per test
    # (harness.reloaded_daemon), with the metrics page test_manual_eject_and_return reads
    RELOAD_SHARED = True
    METRICS_PORT = None

    def daemon(self, servers, extra=""):
        if EjectTest.METRICS_PORT is None:
            EjectTest.METRICS_PORT = free_port()
        return super().daemon(servers, extra, args=["--metrics", "127.0.0.1:%d" % EjectTest.METRICS_PORT])

    def test_slow_replica_ejected_aborted_refused_and_back(self):
        servers = self.replicas()
        d = self.daemon(servers, "eject_for = 3s\neject_probe_calls = 3\n")
        c = self.client(servers)
        time.sleep(3.0)
        slow = servers[1]
        t_change, w_change = time.monotonic(), time.time()
        slow.delay = HANG
        self.wait_ejected(d, slow, True, timeout=SLOW_CALL + 3)
        ev = events_of(d, "eject")
        self.assertEqual(len(ev), 1, ev)
        ev = ev[0]
        # ejected within slow_call + 1 s of the change (the events' times are wall clock)
        took = ev["time"] - w_change
        print("\n  eject: %.0f ms after the change; %s" % (took * 1e3, json.dumps(ev)))
        self.assertLessEqual(took, SLOW_CALL + 1.0)
        self.assertEqual(ev["destination"], fmt_dest("127.0.0.1", slow.port))
        self.assertEqual(ev["reason"], "slow_rate")
        self.assertEqual(ev["enforce"], "abort")
        self.assertGreaterEqual(ev["slow_rate"], 0.5)
        self.assertLess(ev["siblings_slow_rate"], 0.5)
        self.assertAlmostEqual(ev["for_ms"], 3000, delta=1)
        t_eject = t_change + took
        time.sleep(1.0)
        st = d.status()
        row, dest = dependency(st, "pay"), self.dest(d, slow, st)
        self.assertEqual(row["breaker"], "closed", json.dumps(row))
        self.assertEqual(row["ejected_dests"], 1)
        self.assertEqual(dest["ejected_reason"], "slow_rate")
        self.assertEqual(dest["ejections"], 1)
        self.assertIsNotNone(dest["ejected_until"])
        # in flight back under 5: the hanging calls were aborted, no new ones start there
        self.assertLess(row["inflight"], 5, json.dumps(row))
        # its hanging calls ended with an error, at the ejection's abort, not after 9 s
        hung = [x for x in c.since(1, t_change) if x[0] < t_eject - SLOW_CALL]
        self.assertTrue(hung)
        for start, end, ok, err in hung:
            self.assertFalse(ok)
            self.assertIn(err, (errno.ECONNABORTED, errno.ECONNRESET, errno.EPIPE), err)
            self.assertLessEqual(end, t_eject + 0.5)
        self.assertGreaterEqual(dest["aborted_eject"], 1)
        # connects to it are refused at once
        later = c.since(1, t_eject + 0.1)
        self.assertTrue(later)
        self.assertEqual({x[3] for x in later if x[1] < t_eject + 0.9}, {errno.ECONNREFUSED})
        self.assertGreater(dest["rejected"], 0)
        # the other two replicas saw no error
        for i in (0, 2):
            self.assertTrue(all(x[2] for x in c.since(i, 0)), "replica %d failed" % i)
        # recovered: back through its probes within eject_for + probe
        slow.delay = FAST
        self.wait_ejected(d, slow, False, timeout=3.0 + 3.0)
        back = events_of(d, "return")
        self.assertEqual(len(back), 1, back)
        self.assertEqual(back[0]["reason"], "probes")
        self.assertGreater(back[0]["refused"], 0)
        self.assertGreaterEqual(back[0]["aborted"], len(hung))
        print("  return: %s" % json.dumps(back[0]))
        t_back = time.monotonic()
        time.sleep(1.0)
        self.assertTrue(all(x[2] for x in c.since(1, t_back)), "calls after the return failed")
        # slow again: its second ejection lasts twice as long
        slow.delay = HANG
        self.wait_ejected(d, slow, True, timeout=SLOW_CALL + 3)
        ev = events_of(d, "eject")
        self.assertEqual(len(ev), 2, ev)
        self.assertEqual(ev[1]["ejections"], 2)
        self.assertAlmostEqual(ev[1]["for_ms"], 6000, delta=1)
        log = d.stderr_text()
        lines = [l for l in log.splitlines() if "dependency=pay destination=" in l]
        self.assertEqual(len([l for l in lines if " action=eject " in l]), 2, "\n".join(lines))
        self.assertEqual(len([l for l in lines if " action=return " in l]), 1, "\n".join(lines))
        self.assertIn("refused=", lines[0])
        self.assertIn("aborted=", lines[0])

    def test_max_ejected_two_slow_of_three(self):
        # slow_rate 75%: with two of three slow the dependency stays below it (round-robin puts 13
        # or 14 of any 20 calls in a row on the slow two: 70% would be reached, and the breaker
        # rightly open, a third of the time, seen in the 6.1 guest), so both are outliers;
        # max_ejected 50% of three is one
        servers = self.replicas()
        d = self.daemon(servers, "slow_rate = 75%\n")
        c = self.client(servers)
        time.sleep(3.0)
        servers[0].delay = servers[2].delay = HANG
        d.wait_for(lambda st: dependency(st, "pay")["ejected_dests"] >= 1, timeout=SLOW_CALL + 3,
                   what="one ejected")
        deadline = time.monotonic() + 4.0
        while time.monotonic() < deadline:
            st = d.status()
            row = dependency(st, "pay")
            self.assertEqual(row["ejected_dests"], 1, json.dumps(row))
            out = [s for s in servers if self.dest(d, s, st)["ejected"]]
            self.assertEqual(len(out), 1)
            self.assertIn(out[0], (servers[0], servers[2]))
            time.sleep(0.25)
        self.assertEqual(len(events_of(d, "eject")), 1)
        # the dependency's own breaker is judged as usual, on the slow one still in
        self.assertGreater(row["slow_rate"], 0)
        self.assertTrue(all(x[2] for x in c.since(1, 0)), "the healthy replica failed")

    def test_heavier_tail_never_ejected(self):
        """A healthy replica whose tail is twice its siblings' (5% of its calls at 200 ms against
        100 ms, all under slow_call) is no outlier: nothing is ejected in 45 s (about 180 judgements
        of each replica, each over its recent calls; it was 2 minutes, issue 45 sized it: an outlier
        is ejected within seconds, as the slow-replica test shows, not after minutes), the breaker stays
        closed, and depwatch refuses and aborts nothing. A call the stand-ins' own trouble failed
        (depwatch having done nothing) is printed with its errno; more than 2 of a replica's ~600
        would make it no healthy replica, and the test fails."""
        servers = self.replicas(tails={0: (0.05, 0.1), 1: (0.05, 0.2), 2: (0.05, 0.1)})
        d = self.daemon(servers)
        c = self.client(servers)
        t0 = time.monotonic()
        end = t0 + 45
        while time.monotonic() < end:
            row = dependency(d.status(), "pay")
            self.assertEqual(row["ejected_dests"], 0, json.dumps(row))
            self.assertEqual(row["breaker"], "closed", json.dumps(row))
            time.sleep(1.0)
        st = d.status()
        row = dependency(st, "pay")
        rows = [self.dest(d, s, st) for s in servers]
        self.assertEqual(events_of(d, "eject"), [])
        acted = {k: row[k] for k in ("rejected", "aborted_breaker", "aborted_timeout", "aborted_eject",
                                     "calls_aborted")}
        self.assertEqual(set(acted.values()), {0}, json.dumps(acted))
        # the tail really was twice as heavy, as the client saw each replica's calls
        p99, nfailed = [], []
        for i in range(3):
            calls = c.since(i, 0)
            failed = ["at %.3f s: %s after %.0f ms" % (x[0] - t0, errno.errorcode.get(x[3], x[3]),
                                                        (x[1] - x[0]) * 1e3) for x in calls if not x[2]]
            if failed:
                print("\n  replica %d (port %d): %d of %d calls failed: %s"
                      % (i, servers[i].port, len(failed), len(calls), "; ".join(failed[:10])))
            self.assertLessEqual(len(failed), 2, "replica %d: depwatch %s\n%s"
                                 % (i, json.dumps(rows[i]), d.stderr_text()[-3000:]))
            nfailed.append(len(failed))
            took = sorted(x[1] - x[0] for x in calls if x[2])
            p99.append(took[int(len(took) * 0.99)] * 1e3)
        print("\n  tails: p99 %.0f / %.0f / %.0f ms (client), %s ms (depwatch, last window); "
              "failed calls %d / %d / %d; nothing ejected"
              % (p99[0], p99[1], p99[2], " / ".join("%.0f" % (r["p99_ms"] or 0) for r in rows),
                 nfailed[0], nfailed[1], nfailed[2]))
        self.assertGreaterEqual(p99[1], 1.5 * max(p99[0], p99[2]))
        self.assertLess(p99[1], SLOW_CALL * 1e3)

    def test_manual_eject_and_return(self):
        servers = self.replicas()
        d = self.daemon(servers)
        mport = EjectTest.METRICS_PORT
        c = self.client(servers, rate=20)
        time.sleep(1.5)
        target = fmt_dest("127.0.0.1", servers[2].port)

        def breaker(*args):
            return self.breaker(d, *args)

        r = breaker("eject", "pay", target)
        self.assertEqual(r.returncode, 0, r.stderr)
        t_out = time.monotonic()
        st = d.status()
        self.assertTrue(self.dest(d, servers[2], st)["ejected"])
        self.assertEqual(self.dest(d, servers[2], st)["ejected_reason"], "forced")
        # Prometheus (the page of the next poll): 1 for the ejected one, 0 for its siblings;
        # one ejection counted
        want = ['depwatch_destination_ejected{dependency="pay",destination="127.0.0.1:%d",netns="%d"} %d'
                % (srv.port, own_netns(), srv is servers[2]) for srv in servers]
        want.append('depwatch_ejections_total{dependency="pay",destination="%s",netns="%d"} 1'
                    % (target, own_netns()))
        deadline = time.monotonic() + 2
        while True:
            body = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % mport, timeout=5).read().decode()
            missing = [w for w in want if w not in body]
            if not missing or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        self.assertEqual(missing, [], "\n".join(l for l in body.splitlines() if "eject" in l))
        # the table says so too
        table = subprocess.run([DEPWATCH, "status", "--run-dir", d.run_dir], capture_output=True,
                               text=True).stdout
        self.assertIn("warning: pay: %s ejected (forced, ejection 1), probed in" % target, table)
        time.sleep(1.0)
        later = c.since(2, t_out + 0.05)
        self.assertTrue(later)
        self.assertEqual({x[3] for x in later}, {errno.ECONNREFUSED})
        r = breaker("return", "pay", target)
        self.assertEqual(r.returncode, 0, r.stderr)
        t_in = time.monotonic()
        self.assertFalse(self.dest(d, servers[2])["ejected"])
        time.sleep(1.0)
        self.assertTrue(all(x[2] for x in c.since(2, t_in + 0.05)))
        # what an operator gets wrong is an error naming it
        r = breaker("eject", "pay", "127.0.0.1:1")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("no dependency named 'pay' with destination 127.0.0.1:1", r.stdout + r.stderr)
        r = breaker("eject", "pay", "nothost")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("is not ADDR:PORT", r.stderr)


class EjectReloadTest(EjectCase):
    """A daemon of its own: the test reloads it (a rejected config too) and kills it."""

    def test_reload_keeps_or_ends_and_a_dead_daemon_refuses_nothing(self):
        servers = self.replicas()
        d = self.daemon(servers)
        target = servers[2]
        # a destination is known once something connected to it
        self.assertEqual(try_connect(target.port), 0)
        d.wait_for(lambda st: self.dest(d, target, st) is not None, timeout=2)
        r = self.breaker(d, "eject", "pay", fmt_dest("127.0.0.1", target.port))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(try_connect(target.port), errno.ECONNREFUSED)
        # a reload that keeps eject = on keeps the ejection; a rejected one changes nothing
        self.reload(d, self.conf(servers, "slow_call = 600ms\n"))
        self.assertTrue(self.dest(d, target)["ejected"])
        self.assertEqual(try_connect(target.port), errno.ECONNREFUSED)
        self.reload(d, self.conf(servers, "eject_fro = 1s\n"))
        self.assertIn("reload rejected", d.stderr_text())
        self.assertTrue(self.dest(d, target)["ejected"])
        self.assertEqual(try_connect(target.port), errno.ECONNREFUSED)
        # eject = off ends it at once, in the kernel with the reload itself
        self.reload(d, self.conf(servers, eject="off"))
        self.assertEqual(try_connect(target.port), 0)
        d.wait_for(lambda st: events_of(d, "return"), timeout=2, what="the return's line")
        self.assertFalse(self.dest(d, target)["ejected"])
        back = events_of(d, "return")
        self.assertEqual([e["reason"] for e in back], ["reload"])
        r = self.breaker(d, "eject", "pay", fmt_dest("127.0.0.1", target.port))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("dependency 'pay' has eject = off", r.stdout + r.stderr)
        # fail-open: a daemon killed with an ejection in force refuses nothing
        self.reload(d, self.conf(servers))
        r = self.breaker(d, "eject", "pay", fmt_dest("127.0.0.1", target.port))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(try_connect(target.port), errno.ECONNREFUSED)
        d.proc.send_signal(signal.SIGKILL)
        deadline = time.monotonic() + 3
        while try_connect(target.port) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(try_connect(target.port), 0)


def try_connect(port):
    """0, or the errno of a connect to 127.0.0.1:port."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.connect(("127.0.0.1", port))
        return 0
    except OSError as e:
        return e.errno
    finally:
        s.close()


if __name__ == "__main__":
    unittest.main()
