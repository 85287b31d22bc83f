"""enforce = abort and abort_after against the real kernel (issue 15): a
keep-alive worker pool calling a dependency that starts hanging is released
with an error once its breaker opens (enforce = connect leaves it blocked),
a call older than abort_after has its connection aborted, and nothing else
is touched: idle connections by abort_after, other dependencies, inbound
connections. Real sockets; the ground truth is what the workers and the
stand-in server saw themselves.

Two abort paths: the bpf_sock_destroy kfunc (Linux 6.5+), and sock_diag's
SOCK_DESTROY for older kernels. AbortTest runs whichever the kernel has, the
kfunc where both are; SockDiagAbortTest runs its tests again with the kfunc
withheld (--without bpf_sock_destroy), so a host with the kfunc tests both."""

import errno
import itertools
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import unittest
import urllib.request

from loopback import bind_fresh_port
from harness import (DEPWATCH, EMULATED, Daemon, dependency, free_port, kernel_has_sock_destroy_kfunc,
                     reloaded_daemon, runs_alone, start_configured, write_config)
from realtraffic import nginx_server, start_nginx, tempdir
from workpool import StandIn, pool

SLOW_CALL = 0.5
# a worker's pause between its calls. One emulated CPU (the 6.1 stage) does not carry these 38
# threads at 0.02 s, each asking 50 times a second, with the stand-in's in the same process: pay's
# 20 ms calls were seen past slow_call in the warm-up (its own breaker opened, 12 of 180 calls
# slow, 2 runs of 12) and a release noted 2.02 s after the hang. At 0.1 s: released 508-631 ms.
PAUSE = 0.1 if EMULATED else 0.02


KFUNC = kernel_has_sock_destroy_kfunc()
# CapEff of a daemon that aborts in other namespaces: CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE, CAP_SYS_ADMIN
NETNS_CAPS = (1 << 39) | (1 << 38) | (1 << 21) | (1 << 19)
CAP_NET_ADMIN = 1 << 12


def failed_since(worker, t):
    """A worker's failed calls among those running at t or started after it."""
    return [c for c in list(worker.calls) if (c[0] <= t <= c[1] or c[0] >= t) and not c[2]]

class AbortPath:
    """Which abort path a test class's daemons use: the kernel's best, unless WITHOUT withholds it."""
    WITHOUT = []

    def path(self):
        return "kfunc" if KFUNC and "bpf_sock_destroy" not in self.WITHOUT else "sock_diag"

    def without(self):
        return ["--without", ",".join(self.WITHOUT)] if self.WITHOUT else []

    def assert_path(self, d):
        start = [l for l in d.stderr_text().splitlines() if l.startswith("depwatch: started (")][0]
        self.assertNotIn("sock_destroy", start.split("not attached")[1],
                         "the abort iterator is not attached: " + start)
        self.assertIn("sock_destroy(%s)" % self.path(), start.split("not attached")[0])


def unnice(d):
    """The daemon runs as a system service does, at nice 0: a `nice` test run must not make its
    wakeups (the abort_after deadline, the opening) late. It sleeps nearly all the time."""
    os.setpriority(os.PRIO_PROCESS, d.proc.pid, 0)


def request(sock, line=b"req\n"):
    """One call on sock: (seconds, errno or 0)."""
    t0 = time.monotonic()
    try:
        sock.sendall(line)
        data = sock.recv(64)
        return time.monotonic() - t0, 0 if data else errno.ECONNRESET
    except OSError as e:
        return time.monotonic() - t0, e.errno


class AbortTest(AbortPath, unittest.TestCase):
    # the tests that abort through self.daemon read only their own dependencies' rows and lines:
    # one daemon per class (per --without), a reload per test (harness.reloaded_daemon)
    RELOAD_SHARED = True

    def setUp(self):
        self.cleanups = []
        # 34 Python threads on 2 cores: a thread waiting for the GIL would add its 5 ms
        # switch interval to a call it is timing
        self.cleanups.append(lambda v=sys.getswitchinterval(): sys.setswitchinterval(v))
        sys.setswitchinterval(0.0002)

    def tearDown(self):
        for fn in reversed(self.cleanups):
            fn()

    def daemon(self, conf_text):
        d = reloaded_daemon(self, conf_text, self.without(), self.cleanups.append)
        unnice(d)
        self.assert_path(d)
        return d

    def server(self, **kw):
        s = StandIn(**kw)
        self.cleanups.append(s.close)
        return s

    def hanging_pool(self, enforce):
        """30 workers on `pay`, 4 on `other`; pay hangs at t_change. Returns the figures."""
        pay, other = self.server(), self.server()
        d = self.daemon("[defaults]\nslow_call = 500ms\nopen_for = 5s\nhalf_open_calls = 3\n"
                        "[dependency pay]\nmatch = 127.0.0.1:%d\nenforce = %s\n"
                        "[dependency other]\nmatch = 127.0.0.1:%d\nenforce = %s\n"
                        % (pay.port, enforce, other.port, enforce))
        workers = pool(self.cleanups, pay.port, 30, PAUSE)
        others = pool(self.cleanups, other.port, 4, PAUSE)
        time.sleep(1.5)
        # and every worker through 3 calls (at once on the host; under emulation, the 6.1 stage, a
        # worker thread was seen without its first call after 1.5 s)
        deadline = time.monotonic() + 15
        while not all(len(w.calls) >= 3 for w in workers + others) and time.monotonic() < deadline:
            time.sleep(0.1)
        for w in workers:
            if not (w.calls and all(c[2] for c in w.calls)):
                self.fail("warm-up calls failed (%s of %d: (start from the first, duration, errno)); pay: %s"
                          % ([(round(c[0] - w.calls[0][0], 3), round(c[1] - c[0], 3), c[3])
                              for c in w.calls if not c[2]][:5], len(w.calls),
                             json.dumps(dependency(d.status(), "pay"))))
        t_change = time.monotonic()
        pay.set_delay(None)
        return d, pay, workers, others, t_change

    def test_abort_releases_hanging_pool(self):
        d, pay, workers, others, t_change = self.hanging_pool("abort")
        # what a connect the kernel refuses without depwatch costs these threads (a closed port:
        # the kernel answers the SYN with a reset), measured beside the pool from now on
        control = pool(self.cleanups, free_port(), 4, PAUSE)
        # every worker's hanging call ends with an error within slow_call + 1 s
        deadline = t_change + SLOW_CALL + 1.0
        time.sleep(max(0, deadline + 0.3 - time.monotonic()))
        # a worker notes its call's end (the error) when it next runs: on one emulated CPU (the 6.1
        # stage) beside 37 other threads, some were seen without it 0.3 s past the deadline, their
        # calls aborted in time. The time asserted is still the one the worker noted.
        wait = time.monotonic() + (5 if EMULATED else 0)
        while time.monotonic() < wait and not all(failed_since(w, t_change) for w in workers):
            time.sleep(0.1)
        released = []
        for w in workers:
            failed = failed_since(w, t_change)
            # the status only for the failure's message: built before each assertion, it ran
            # `depwatch status` once per worker, 2.6 s each on one emulated CPU (the 6.1 stage):
            # 80-95 s in all, past 3-4 reopens of the breaker (open_for 5, 10, 20, 40 s) whose
            # open lines the alert rate limit then held back, the abort lines below outnumbering them
            if not failed:
                self.fail("a worker is still blocked %.1f s after the hang; status:\n%s"
                          % (time.monotonic() - t_change, json.dumps(dependency(d.status(), "pay"))))
            released.append(failed[0][1] - t_change)
            self.assertIn(failed[0][3], (errno.ECONNABORTED, errno.ECONNRESET, errno.EPIPE),
                          "released with errno %s" % failed[0][3])
        self.assertLessEqual(max(released), SLOW_CALL + 1.0)
        # later calls fail at once (the reconnect is refused), while the breaker stays open
        time.sleep(1.0)
        t_later = t_change + max(released) + 0.05
        later = [c for w in workers for c in list(w.calls) if c[0] >= t_later]
        st = d.status()
        row = dependency(st, "pay")
        self.assertEqual(row["breaker"], "open", json.dumps(row))
        self.assertTrue(later)
        self.assertFalse([c for c in later if c[2]], "a call succeeded against a hanging dependency")
        # refused at the connect, by the connect program (never sent, so never answered); or let
        # through, fail-open, while the daemon renewed its lease late (1 s: seen under emulation)
        # and aborted by the next pass (ECONNABORTED at a receive, EPIPE or ECONNRESET at a send)
        errnos = [c[3] for c in later]
        durations = sorted(c[1] - c[0] for c in later)
        refused = sorted(c[1] - c[0] for w in control for c in list(w.calls) if c[0] >= t_later)
        median, base = durations[len(durations) // 2], refused[len(refused) // 2]
        print("\n  abort: released %.0f..%.0f ms after the hang; %d later calls (%d refused, %d aborted), median "
              "%.2f ms, p99 %.2f ms, max %.2f ms; a connect to a closed port meanwhile: median %.2f ms"
              % (min(released) * 1e3, max(released) * 1e3, len(later), errnos.count(errno.ECONNREFUSED),
                 errnos.count(errno.ECONNABORTED), median * 1e3, durations[int(len(durations) * 0.99)] * 1e3,
                 durations[-1] * 1e3, base * 1e3))
        self.assertEqual(set(errnos) - {errno.ECONNREFUSED, errno.ECONNABORTED, errno.ECONNRESET, errno.EPIPE},
                         set(), "later calls' errnos")
        # at once: a refused call costs what a connect the kernel refuses without depwatch costs
        # the same threads at the same time. That cost is the machine's: 0.05 ms on the host, 16 ms
        # under emulation (the 6.1 stage: 38 threads on 2 emulated CPUs). The tolerance, 2x + 1 ms:
        # two samples of one scheduler's waits (the control's 4 threads against the pool's 30)
        self.assertLessEqual(median, 2 * base + 0.001, "later calls: median %.2f ms, a closed port's %.2f ms"
                             % (median * 1e3, base * 1e3))
        self.assertEqual(row["enforce_mode"], "abort")
        self.assertGreaterEqual(row["aborted_breaker"], 30, json.dumps(row))
        self.assertGreaterEqual(row["calls_aborted"], 30)
        self.assertEqual(row["aborted_timeout"], 0)
        # the other dependency's workers never saw an error: pay's aborts touch no one else. Unless
        # other's own breaker opened, on its own calls (under emulation, the 6.1 stage, its 20 ms
        # calls were seen slower than slow_call): then its own aborts are its own, and counted
        with open(d.events) as f:
            opened = [e for e in (json.loads(l) for l in f if l.strip())
                      if e.get("dependency") == "other" and e.get("event") == "transition"
                      and e.get("state") == "open"]
        if not opened:
            for w in others:
                self.assertTrue(all(c[2] for c in list(w.calls)), "the other dependency's worker failed")
            self.assertEqual(dependency(st, "other")["aborted_breaker"], 0)
        else:
            print("  other's own breaker opened (%s): its workers' errors are its own" % opened[0].get("reason"))
        # one syslog line for the open period, with what it aborted; as an event too
        # (a loaded machine may reach half_open, open_for = 5 s, and reopen on a hanging probe:
        # a second open period, with its own line). The transition lines share the dependency's
        # rate limit (5, then one per 12 s: user/logic/base/ratelimit.h), the abort lines do not: the
        # count holds while the log is read within the burst: 2.8 s after the hang on the host,
        # 3.1-3.7 s in the 6.1 stage; a test slow to come here (as above) finds more abort lines
        log = d.stderr_text().splitlines()
        lines = [l for l in log if "dependency=pay action=abort" in l]
        opens = [l for l in log if "dependency=pay" in l and " state=open from=" in l]
        print("  the log read %.1f s after the hang: %d open line(s), %d abort line(s)"
              % (time.monotonic() - t_change, len(opens), len(lines)))
        self.assertEqual(len(lines), len(opens), "\n".join(lines + opens))
        self.assertGreaterEqual(len(lines), 1)
        self.assertIn("dependency=pay action=abort reason=breaker state=open", lines[0])
        with open(d.events) as f:
            events = [json.loads(l) for l in f if '"abort"' in l]
        self.assertEqual(len(events), len(lines))
        self.assertGreaterEqual(events[0]["connections"], 30)
        # recovery: half_open admits probes, the breaker closes, the workers succeed again
        pay.set_delay(0.02)
        # the server's threads held the hanging requests: answering them meets the resets
        deadline = time.monotonic() + 2
        while pay.resets < 30 and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertGreaterEqual(pay.resets, 30, "the server saw %d resets" % pay.resets)
        # half_open's probes are the first calls on new connections: under emulation those were
        # seen at 0.32-1.07 s (calls on kept connections: p99 138 ms), past slow_call, and depwatch
        # rightly reopened, for 20 s then 40 s (open_for doubles): room for two such reopens there
        st = d.wait_for(lambda s: dependency(s, "pay")["breaker"] == "closed", timeout=75 if EMULATED else 15)
        self.assertEqual(dependency(st, "pay")["breaker"], "closed", json.dumps(dependency(st, "pay")))
        t_closed = time.monotonic()
        time.sleep(0.5)
        # each worker's first call after the close, on a new connection, as slow as a probe there
        wait = time.monotonic() + (5 if EMULATED else 0)
        while time.monotonic() < wait and not all(c[0] >= t_closed for w in workers for c in list(w.calls)[-1:]):
            time.sleep(0.1)
        for w in workers:
            after = [c for c in list(w.calls) if c[0] >= t_closed]
            if not (after and all(c[2] for c in after)):
                waiting = sum(1 for v in workers if not [c for c in list(v.calls) if c[0] >= t_closed])
                self.fail("a worker does not succeed after recovery (%.2f s after the close was read; %d of 30 "
                          "without a call since); its last calls (start, end from the close, ok, errno): %s; "
                          "status: %s" % (time.monotonic() - t_closed, waiting,
                                          [(round(c[0] - t_closed, 3), round(c[1] - t_closed, 3), c[2], c[3])
                                           for c in list(w.calls)[-4:]],
                                          json.dumps(dependency(d.status(), "pay"))))

    def test_connect_leaves_pool_blocked(self):
        """The same with enforce = connect: the keep-alive workers stay blocked until the server answers."""
        d, pay, workers, others, t_change = self.hanging_pool("connect")
        st = d.wait_for(lambda s: dependency(s, "pay")["breaker"] == "open", timeout=5)
        self.assertEqual(dependency(st, "pay")["breaker"], "open")
        time.sleep(max(0, t_change + SLOW_CALL + 1.5 - time.monotonic()))
        t_answer = time.monotonic()
        pay.set_delay(0.02)
        time.sleep(0.5)
        blocked = 0
        for w in workers:
            # its call made after the change (a call just before it may have been answered in time)
            hung = [c for c in list(w.calls) if c[0] >= t_change + 0.05]
            self.assertTrue(hung)
            # its hanging call ended only when the server answered, and without an error
            self.assertTrue(hung[0][2], "enforce = connect failed a call on an existing connection")
            self.assertGreaterEqual(hung[0][1], t_answer)
            blocked += 1
        self.assertEqual(dependency(d.status(), "pay")["aborted_breaker"], 0)
        print("\n  connect: %d of 30 workers blocked until the server answered (%.1f s after the hang)"
              % (blocked, t_answer - t_change))

    # Alone (harness.runs_alone), as test_reload_applies_abort_after: each slow call ends within
    # 50 ms of abort_after, the daemon's one-shot timer; side by side, a reload's call ended 501 ms
    # after its send (2026-12-07, syscalls pass, two other runners starting daemons): 200 ms late,
    # the cause not established. Alone it has held in every run.
    @runs_alone
    def test_abort_after(self):
        srv = self.server(delay=0.05, slow=2.0)
        d = self.daemon("[defaults]\nslow_call = 10s\n"
                        "[dependency pay]\nmatch = 127.0.0.1:%d\nabort_after = 300ms\n" % srv.port)
        idle = socket.create_connection(("127.0.0.1", srv.port))
        self.cleanups.append(idle.close)
        self.assertEqual(request(idle)[1], 0)
        errors = []
        for _ in range(5):
            s = socket.create_connection(("127.0.0.1", srv.port))
            self.cleanups.append(s.close)
            took, err = request(s, b"slow\n")
            errors.append((took, err))
            fast = socket.create_connection(("127.0.0.1", srv.port))
            self.cleanups.append(fast.close)
            for _ in range(3):
                took_fast, err_fast = request(fast)
                self.assertEqual(err_fast, 0, "a 50 ms call was aborted")
        # each pass of the iterator walks every TCP socket of the namespace, TIME_WAIT ones too
        with open("/proc/net/sockstat") as f:
            sockets = f.read().split("TCP:")[1].split("\n")[0].strip()
        for took, err in errors:
            self.assertIn(err, (errno.ECONNABORTED, errno.ECONNRESET), "errno %s" % err)
            self.assertLess(abs(took - 0.3), 0.05, "a slow call ended after %.0f ms (TCP sockets on the host: %s)"
                            % (took * 1e3, sockets))
        # the idle keep-alive connection (no call outstanding) is still usable
        time.sleep(0.7)
        self.assertEqual(request(idle)[1], 0, "the idle connection was aborted")
        st = d.wait_for(lambda s: dependency(s, "pay")["aborted_timeout"] >= 5)
        row = dependency(st, "pay")
        self.assertEqual(row["aborted_timeout"], 5, json.dumps(row))
        self.assertEqual(row["aborted_breaker"], 0)
        deadline = time.monotonic() + 3
        while srv.resets < 5 and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(srv.resets, 5, "the server saw %d resets" % srv.resets)
        lines = [l for l in d.stderr_text().splitlines() if "reason=abort_after" in l]
        self.assertTrue(lines and "abort_after=300ms" in lines[0], d.stderr_text())
        # rate-limited like the other alerts: 5 in a burst, the rest counted for the next line
        for _ in range(2):
            extra = socket.create_connection(("127.0.0.1", srv.port))
            self.cleanups.append(extra.close)
            self.assertNotEqual(request(extra, b"slow\n")[1], 0)
        d.wait_for(lambda s: dependency(s, "pay")["aborted_timeout"] >= 7)
        lines = [l for l in d.stderr_text().splitlines() if "reason=abort_after" in l]
        self.assertEqual(len(lines), 5, "\n".join(lines))
        print("\n  abort_after 300ms: slow calls ended after %s ms"
              % ", ".join("%.0f" % (t * 1e3) for t, _ in errors))

    @runs_alone
    def test_reload_applies_abort_after(self):
        """abort_after set by a reload (SIGHUP) applies to the connections already open."""
        srv = self.server(delay=0.05, slow=2.0)
        conf = write_config("[dependency pay]\nmatch = 127.0.0.1:%d\n" % srv.port)
        self.cleanups.append(lambda: os.unlink(conf))
        d = Daemon(extra_args=["-c", conf] + self.without())
        self.cleanups.append(d.cleanup)
        d.start()
        unnice(d)
        self.assert_path(d)
        s = socket.create_connection(("127.0.0.1", srv.port))
        self.cleanups.append(s.close)
        self.assertEqual(request(s)[1], 0)
        with open(conf, "w") as f:
            f.write("[dependency pay]\nmatch = 127.0.0.1:%d\nabort_after = 300ms\n" % srv.port)
        d.proc.send_signal(signal.SIGHUP)
        st = d.wait_for(lambda st: dependency(st, "pay")["abort_after_ms"] == 300)
        self.assertEqual(dependency(st, "pay")["abort_after_ms"], 300)
        took, err = request(s, b"slow\n")
        self.assertIn(err, (errno.ECONNABORTED, errno.ECONNRESET))
        self.assertLess(abs(took - 0.3), 0.05, "ended after %.0f ms" % (took * 1e3))

    def test_forced_open_only_what_was_asked(self):
        """A forced open aborts idle pooled connections of that dependency only:
        not another dependency's (enforce = connect), not inbound ones."""
        pay, other = self.server(), self.server()
        d = self.daemon("[dependency pay]\nmatch = 127.0.0.1:%d\nenforce = abort\n"
                        "[dependency other]\nmatch = 127.0.0.1:%d\nenforce = connect\n"
                        % (pay.port, other.port))
        idle = [socket.create_connection(("127.0.0.1", pay.port)) for _ in range(3)]
        kept = socket.create_connection(("127.0.0.1", other.port))
        for s in idle + [kept]:
            self.cleanups.append(s.close)
            self.assertEqual(request(s)[1], 0)
        # an inbound connection on a listener that is inside pay's match
        lst = bind_fresh_port(socket.socket, "127.0.0.1")
        lst.listen(4)
        self.cleanups.append(lst.close)
        r = subprocess.run([DEPWATCH, "breaker", "open", "pay", "--run-dir", d.run_dir],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        for s in idle:
            took, err = request(s)
            self.assertNotEqual(err, 0, "an idle pooled connection survived the forced open")
            self.assertLess(took, 0.010)
        self.assertEqual(request(kept)[1], 0, "another dependency's connection was aborted")
        with self.assertRaises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", pay.port))
        row = d.wait_for(lambda s: dependency(s, "pay")["aborted_breaker"] >= 3)
        self.assertEqual(dependency(row, "pay")["aborted_breaker"], 3)
        self.assertEqual(dependency(row, "pay")["calls_aborted"], 0)

    def test_metrics_and_events(self):
        """What a forced open aborted, in Prometheus and as an --events JSON line."""
        srv = self.server()
        port = free_port()
        conf = write_config("[dependency pay]\nmatch = 127.0.0.1:%d\nenforce = abort\n" % srv.port)
        self.cleanups.append(lambda: os.unlink(conf))
        events = conf + ".events"
        self.cleanups.append(lambda: os.path.exists(events) and os.unlink(events))
        d = Daemon(extra_args=["-c", conf, "--events", events, "--metrics", "127.0.0.1:%d" % port]
                   + self.without())
        self.cleanups.append(d.cleanup)
        d.start()
        self.assert_path(d)
        conns = [socket.create_connection(("127.0.0.1", srv.port)) for _ in range(2)]
        for s in conns:
            self.cleanups.append(s.close)
            self.assertEqual(request(s)[1], 0)
        r = subprocess.run([DEPWATCH, "breaker", "open", "pay", "--run-dir", d.run_dir],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        d.wait_for(lambda s: dependency(s, "pay")["aborted_breaker"] >= 2)
        want = {'depwatch_connections_aborted_total{dependency="pay",reason="breaker"} 2',
                'depwatch_connections_aborted_total{dependency="pay",reason="abort_after"} 0'}
        deadline = time.monotonic() + 5
        while True:
            body = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5).read().decode()
            if want <= set(body.splitlines()) or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        self.assertTrue(want <= set(body.splitlines()),
                        "\n".join(l for l in body.splitlines() if "aborted" in l))
        with open(events) as f:
            ev = [json.loads(l) for l in f if '"abort"' in l]
        self.assertEqual(len(ev), 1)
        self.assertEqual((ev[0]["dependency"], ev[0]["reason"], ev[0]["connections"], ev[0]["calls"]),
                         ("pay", "breaker", 2, 0))

    def test_without_sock_destroy_falls_back(self):
        """Without any abort path (--without sock_destroy, or both of its ways withheld) enforce =
        abort falls back to connect: one warning, open connections untouched, new ones refused."""
        for withheld in ("sock_destroy", "bpf_sock_destroy,sock_diag_destroy"):
            with self.subTest(without=withheld):
                self.falls_back(withheld)

    def falls_back(self, withheld):
        srv = self.server()
        conf = write_config("[dependency pay]\nmatch = 127.0.0.1:%d\nenforce = abort\n" % srv.port)
        self.cleanups.append(lambda: os.unlink(conf))
        d = Daemon(extra_args=["-c", conf, "--without", withheld])
        self.cleanups.append(d.cleanup)
        d.start()
        text = d.stderr_text()
        start = [l for l in text.splitlines() if l.startswith("depwatch: started (")][0]
        self.assertRegex(start.split("not attached:")[1], r"^ sock_destroy \((absent|kfunc bpf_sock_destroy absent|this kernel has no kfunc)")
        self.assertIn("absent (--without)", start.split("not attached:")[1])
        self.assertEqual(text.count("warning: cannot abort connections"), 1, text)
        self.assertEqual(dependency(d.status(), "pay")["enforce_mode"], "connect")
        s = socket.create_connection(("127.0.0.1", srv.port))
        self.cleanups.append(s.close)
        r = subprocess.run([DEPWATCH, "breaker", "open", "pay", "--run-dir", d.run_dir],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(request(s)[1], 0, "aborted without sock_destroy")
        with self.assertRaises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", srv.port))


@unittest.skipUnless(KFUNC, "this kernel has no bpf_sock_destroy: AbortTest runs the sock_diag path already")
class SockDiagAbortTest(AbortTest):
    """AbortTest's aborts again through sock_diag, the kfunc withheld. Its tests that do not abort
    (enforce = connect, the fallback) are AbortTest's alone: None is no test to unittest."""
    WITHOUT = ["bpf_sock_destroy"]
    test_connect_leaves_pool_blocked = None
    test_without_sock_destroy_falls_back = None


NETNS_CHILD = r"""
import socket, sys, threading
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(8)
def answer(c):
    try:
        while c.recv(64):
            c.sendall(b"ok\n")
    except OSError:
        pass
def serve():
    while True:
        c, _ = srv.accept()
        threading.Thread(target=answer, args=(c,), daemon=True).start()
threading.Thread(target=serve, daemon=True).start()
print(srv.getsockname()[1], flush=True)
sys.stdin.readline()
conn = socket.create_connection(("127.0.0.1", srv.getsockname()[1]))
conn.sendall(b"req\n")
conn.recv(64)
print("connected", flush=True)
sys.stdin.readline()
try:
    conn.sendall(b"req\n")
    print("answer" if conn.recv(64) else "closed", flush=True)
except OSError as e:
    print("errno", e.errno, flush=True)
"""


class NetnsAbortTest(AbortPath, unittest.TestCase):
    """A connection in another network namespace (a container's) is aborted too:
    the daemon enters the namespace the kernel's rows name to run the iterator there
    (and on the sock_diag path, to open its netlink socket there)."""

    def setUp(self):
        self.cleanups = []

    def tearDown(self):
        for fn in reversed(self.cleanups):
            fn()

    def test_other_netns(self):
        child = subprocess.Popen(["unshare", "-n", "sh", "-c", "ip link set lo up && exec python3 -c '%s'"
                                  % NETNS_CHILD.replace("'", "'\\''")],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.cleanups.append(lambda: child.kill() or child.wait())
        port = int(child.stdout.readline())
        d = start_configured(self.cleanups.append, "[dependency pay]\nmatch = 127.0.0.1:%d\nenforce = abort\n" % port,
                             self.without())
        self.assert_path(d)
        child.stdin.write("connect\n")
        child.stdin.flush()
        self.assertEqual(child.stdout.readline().strip(), "connected")
        d.wait_for(lambda s: dependency(s, "pay")["connections"] == 1)
        netns = os.stat("/proc/%d/ns/net" % child.pid).st_ino
        self.assertNotEqual(netns, os.stat("/proc/self/ns/net").st_ino)
        r = subprocess.run([DEPWATCH, "breaker", "open", "pay", "--run-dir", d.run_dir],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        child.stdin.write("go\n")
        child.stdin.flush()
        said = child.stdout.readline().split()
        self.assertEqual(said[0], "errno", "the connection in the other namespace was not aborted: %s" % said)
        st = d.wait_for(lambda s: dependency(s, "pay")["aborted_breaker"] >= 1)
        self.assertEqual(dependency(st, "pay")["aborted_breaker"], 1, d.stderr_text())
        # the privilege that keeps: CAP_SYS_ADMIN (setns) and CAP_SYS_PTRACE (/proc/PID/ns/net of any
        # process); on the sock_diag path CAP_NET_ADMIN too, which SOCK_DESTROY checks
        with open("/proc/%d/status" % d.proc.pid) as f:
            eff = int(re.search(r"CapEff:\s*([0-9a-f]+)", f.read()).group(1), 16)
        want = NETNS_CAPS | (CAP_NET_ADMIN if self.path() == "sock_diag" else 0)
        self.assertEqual(eff, want, "%x" % eff)


@unittest.skipUnless(KFUNC, "this kernel has no bpf_sock_destroy: NetnsAbortTest runs the sock_diag path already")
class SockDiagNetnsAbortTest(NetnsAbortTest):
    WITHOUT = ["bpf_sock_destroy"]


class HttpStandIn(StandIn):
    """The stand-in as an HTTP/1.1 keep-alive server (for nginx's upstream pool).
    Remembers the X-Id of each request it received and of each it answered:
    which requests it held is its own knowledge, not a guess from the clock."""

    END = b"\r\n\r\n"  # a request is its head: GETs have no body
    ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n"

    def __init__(self, **kw):
        self.received, self.answered = set(), set()
        super().__init__(**kw)

    def _received(self, head):
        self.received.add(request_id(head))

    def _answered(self, head):
        self.answered.add(request_id(head))


def request_id(head):
    """The X-Id header of a request head (nginx passes it on to the upstream); -1 if none."""
    m = re.search(rb"\r\nx-id: *(\d+)", head, re.IGNORECASE)
    return int(m.group(1)) if m else -1


def http_get(port, rid, path=b"/"):
    """One GET through nginx on a new connection, X-Id: rid: (start, end, status or 0, rid)."""
    t0 = time.monotonic()
    try:
        s = socket.create_connection(("127.0.0.1", port))
        try:
            s.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\nX-Id: %d\r\nConnection: close\r\n\r\n" % (path, rid))
            data = b""
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
        finally:
            s.close()
        status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/") else 0
    except OSError:
        status = 0
    return t0, time.monotonic(), status, rid


class NginxAbortTest(unittest.TestCase):
    """A real, unmodified frontend: nginx with a keep-alive upstream pool to a
    stand-in that starts hanging. With enforce = abort its clients get a 502 once
    the breaker opens, instead of waiting out the hang (nginx's proxy_read_timeout, 60 s)."""

    def setUp(self):
        self.cleanups = []
        # as AbortTest's: a client thread waiting for the GIL adds its 5 ms switch interval
        self.cleanups.append(lambda v=sys.getswitchinterval(): sys.setswitchinterval(v))
        sys.setswitchinterval(0.0002)

    def tearDown(self):
        for fn in reversed(self.cleanups):
            fn()

    def test_nginx_clients_get_fast_502(self):
        up = HttpStandIn(delay=0.02)
        self.cleanups.append(up.close)
        front = free_port()
        d = start_configured(self.cleanups.append,
                             "[dependency upstream]\nmatch = 127.0.0.1:%d\nenforce = abort\n"
                             "slow_call = 500ms\nopen_for = 30s\n" % up.port)
        unnice(d)
        work = tempdir(self)
        access = os.path.join(work, "access.log")
        # nginx's own time for each request, its X-Id to match the client's
        body = ("    log_format dw '$http_x_id $status $request_time';\n"
                "    upstream backend {\n        server 127.0.0.1:%d;\n        keepalive 16;\n    }\n" % up.port
                + nginx_server("127.0.0.1:%d" % front,
                               "            proxy_pass http://backend;\n            proxy_http_version 1.1;\n"
                               "            proxy_set_header Connection \"\";\n",
                               "        access_log %s dw;\n"
                               # nginx's own 502, no upstream: the control of what a 502 costs here
                               "        location = /local {\n            return 502;\n        }\n" % access))
        # a frontend runs as a service, at nice 0 like the daemon: at the test's nice 10 on a loaded
        # machine it was seen reaching a refused request 50-130 ms late, then answering it in 0 ms
        unnice(start_nginx(self, work, body, [front]))
        results, local, stop, ids = [], [], threading.Event(), itertools.count()

        def client(into=results, path=b"/"):
            while not stop.is_set():
                into.append(http_get(front, next(ids), path))
                stop.wait(0.02)

        threads = [threading.Thread(target=client, daemon=True) for _ in range(8)]
        threads.append(threading.Thread(target=client, args=(local, b"/local"), daemon=True))
        for t in threads:
            t.start()
        self.cleanups.append(lambda: [stop.set()] + [t.join(5) for t in threads])
        time.sleep(1.5)
        self.assertTrue(results and all(r[2] == 200 for r in list(results)), "warm-up through nginx failed")
        t_change = time.monotonic()
        up.set_delay(None)
        st = d.wait_for(lambda s: dependency(s, "upstream")["breaker"] == "open", timeout=5)
        self.assertEqual(dependency(st, "upstream")["breaker"], "open")
        t_open = time.monotonic()
        time.sleep(2.0)
        stop.set()
        for t in threads:
            t.join(5)
        self.assertFalse([t for t in threads if t.is_alive()], "a client is still waiting for nginx")
        # hung: what the stand-in received and never answered. Not a window on the clock: a
        # request it answered just before the change may reach its client after it, with its 200
        held = up.received - up.answered
        hung = [r for r in results if r[3] in held]
        after = [r for r in results if r[0] >= t_open]
        self.assertTrue(hung and after)
        # the requests that hung: a 502 within slow_call + 1 s of the change, not at nginx's 60 s timeout
        for r in hung:
            self.assertEqual(r[2], 502, "a request the upstream never answered got %d" % r[2])
            self.assertLess(r[1] - t_change, SLOW_CALL + 1.0)
        # and every request the upstream did not answer: a 502 (nginx's own or at the refused
        # connect), never a reset or an empty answer
        self.assertEqual(set(r[2] for r in results if r[3] not in up.answered), {502})
        # every later request: a fast 502, refused before it reached the upstream
        self.assertEqual(set(r[2] for r in after), {502})
        self.assertFalse([r for r in after if r[3] in up.received], "a request reached the upstream after the open")
        # fast: nginx itself spent under 10 ms on each (its $request_time, from reading the request
        # to its answer: a wait on the upstream or an abort pass would show). Its clients' wait
        # adds this process's scheduling: on a loaded, shared 2-core machine a nice'd client
        # thread was seen waking 50-170 ms late for 1-3% of them: theirs is held by its median
        with open(access) as f:
            took = dict((int(l.split()[0]), float(l.split()[2])) for l in f if l[0].isdigit())
        self.assertEqual([r[3] for r in after if r[3] not in took], [], "requests nginx did not log")
        slowest_ngx = max(took[r[3]] for r in after)
        self.assertLess(slowest_ngx, 0.010, "nginx took %.0f ms over a request once the breaker was open"
                        % (slowest_ngx * 1e3))
        durations = sorted(r[1] - r[0] for r in after)
        median, p99, slowest = durations[len(durations) // 2], durations[int(len(durations) * 0.99)], durations[-1]
        # and to its clients as fast as nginx's own 502 (/local, no upstream) at the same time: the
        # cost of a request to this process's threads is the machine's (0.5 ms on the host, tens of
        # ms under emulation); 2x + 1 ms for two samples of one scheduler's waits (1 thread and 8)
        own = sorted(r[1] - r[0] for r in local if r[0] >= t_open)
        base = own[len(own) // 2]
        self.assertEqual(set(r[2] for r in local), {502})
        self.assertLessEqual(median, 2 * base + 0.001, "requests once the breaker was open: median %.1f ms, "
                             "nginx's own 502: %.1f ms" % (median * 1e3, base * 1e3))
        row = dependency(d.status(), "upstream")
        # at least the upstream connections that carried a hung request: one request at a time each
        self.assertGreaterEqual(row["aborted_breaker"], len(hung), json.dumps(row))
        self.assertGreaterEqual(row["calls_aborted"], len(hung), json.dumps(row))
        print("\n  nginx: %d requests the upstream held got 502, %.0f..%.0f ms after the change; %d later requests, 502 in median %.1f ms, p99 %.1f ms, max %.1f ms (nginx: max %.0f ms; its own 502: median %.1f ms)"
              % (len(hung), min(r[1] - t_change for r in hung) * 1e3, max(r[1] - t_change for r in hung) * 1e3,
                 len(after), median * 1e3, p99 * 1e3, slowest * 1e3, slowest_ngx * 1e3, base * 1e3))


if __name__ == "__main__":
    unittest.main()
