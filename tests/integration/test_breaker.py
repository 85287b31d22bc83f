"""The breaker against the real kernel: a stand-in dependency under open-loop
load slows from 20 ms to 3 s with no errors, and the breaker must open within
1.2 s, say so to a real rsyslogd, and close again when the dependency
recovers; a healthy dependency with a slow tail must never open; max_inflight
opens on concurrency; the pinned map dumps with named fields; configs are
validated and reloaded all or nothing."""

import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest

import harness
import suitelock
from harness import Daemon, DEPWATCH, dependency, unique_name, write_config
from openloop import OpenLoopClient, SlowServer

RSYSLOGD = shutil.which("rsyslogd") or "/usr/sbin/rsyslogd"


class Rsyslog:
    """A real rsyslogd writing every message it gets on its own socket to a file.
    syslog(3) writes to /dev/log: when the host has none, this rsyslogd owns
    /dev/log for the test; when it has one, the daemon runs in a mount
    namespace where /dev/log is this rsyslogd's socket instead.
    Two of these at once (the two backends' passes side by side) would fight over /dev/log: the
    second's rsyslogd replaces the first's socket, the first's close unlinks the second's (and
    dissolves a bind mount on it in another namespace), and a daemon's lines go nowhere. So the
    choice and the socket are held under a machine-wide lock for this rsyslogd's life."""

    LOCK = os.path.join(os.path.dirname(suitelock.LOCK_FILE), "depwatch-devlog.lock")

    def __init__(self):
        os.makedirs(os.path.dirname(self.LOCK), exist_ok=True)
        self.lock = os.open(self.LOCK, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
        fcntl.flock(self.lock, fcntl.LOCK_EX)
        try:
            self._start()
        except BaseException:
            os.close(self.lock)
            raise

    def _start(self):
        self.dir = tempfile.mkdtemp(prefix="dwtest-syslog-")
        self.out = os.path.join(self.dir, "messages")
        self.own_dev_log = not os.path.exists("/dev/log")
        self.sock = "/dev/log" if self.own_dev_log else os.path.join(self.dir, "log.sock")
        conf = os.path.join(self.dir, "rsyslog.conf")
        with open(conf, "w") as f:
            f.write('global(workDirectory="%s")\n' % self.dir)
            f.write('module(load="imuxsock" SysSock.Use="off")\n')
            f.write('input(type="imuxsock" Socket="%s" CreatePath="on")\n' % self.sock)
            f.write('template(name="dw" type="string" '
                    'string="%syslogfacility-text%.%syslogseverity-text% %hostname% %syslogtag%%msg%\\n")\n')
            f.write('*.* action(type="omfile" file="%s" template="dw")\n' % self.out)
        self.proc = subprocess.Popen([RSYSLOGD, "-n", "-f", conf, "-i", os.path.join(self.dir, "pid")],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while not os.path.exists(self.sock):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError("rsyslogd did not create %s: %s" % (
                    self.sock, self.proc.stderr.read() if self.proc.poll() is not None else "timeout"))
            time.sleep(0.05)

    def wrap(self, argv):
        if self.own_dev_log:
            return argv
        return ["unshare", "-m", "--propagation", "private", "sh", "-c",
                'mount --bind "$0" /dev/log && exec "$@"', self.sock] + argv

    def lines(self):
        try:
            with open(self.out, errors="replace") as f:
                return f.read().splitlines()
        except FileNotFoundError:
            return []

    def wait_line(self, *needles, timeout=5.0):
        deadline = time.monotonic() + timeout
        while True:
            for line in self.lines():
                if all(n in line for n in needles):
                    return line
            if time.monotonic() > deadline:
                return None
            time.sleep(0.05)

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        if self.own_dev_log and os.path.exists("/dev/log"):
            os.unlink("/dev/log")
        shutil.rmtree(self.dir, ignore_errors=True)
        os.close(self.lock)


class SyslogDaemon(Daemon):
    def __init__(self, syslog, **kw):
        super().__init__(**kw)
        self.syslog = syslog

    @property
    def argv(self):
        return self.syslog.wrap(super().argv)


class BreakerTest(unittest.TestCase):
    def setUp(self):
        self.cleanups = []

    def tearDown(self):
        for fn in reversed(self.cleanups):
            fn()

    # the tests that neither log to syslog nor stop or signal their daemon read only their own
    # dependency's rows and events: one daemon, a reload per test (harness.reloaded_daemon)
    RELOAD_SHARED = True

    def start_daemon(self, conf_text, syslog=None, extra=(), own=False):
        if not syslog and not own:
            return harness.reloaded_daemon(self, conf_text, extra, self.cleanups.append)
        conf = write_config(conf_text)
        self.cleanups.append(lambda: os.unlink(conf))
        events = conf + ".events"
        self.cleanups.append(lambda: os.path.exists(events) and os.unlink(events))
        args = ["-c", conf, "--events", events] + list(extra)
        d = SyslogDaemon(syslog, extra_args=args) if syslog else Daemon(extra_args=args)
        self.cleanups.append(d.cleanup)
        d.start()
        d.conf, d.events = conf, events
        return d

    def server(self, delay, tail=None):
        s = SlowServer(delay, tail)
        self.cleanups.append(s.close)
        return s

    def load(self, port, rate):
        c = OpenLoopClient("127.0.0.1", port, rate).start()
        self.cleanups.append(c.stop)
        return c

    def events(self, d):
        with open(d.events) as f:
            return [json.loads(line) for line in f if line.strip()]

    def wait_state(self, d, name, state, timeout):
        """Seconds until the breaker of `name` is in `state` (status polled every 20 ms), or None."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            dep = dependency(d.status(), name)
            if dep and dep["breaker"] == state:
                return time.monotonic() - t0
            time.sleep(0.02)
        return None

    def test_slowdown_opens_fast_logs_and_recovers(self):
        syslog = Rsyslog()
        self.cleanups.append(syslog.close)
        srv = self.server(0.020)
        d = self.start_daemon(
            "[defaults]\nslow_call = 500ms\nmin_calls = 5\nopen_for = 2s\n"
            "[dependency standin]\nmatch = 127.0.0.1:%d\n" % srv.port, syslog=syslog)
        client = self.load(srv.port, 40)
        time.sleep(3)
        dep = dependency(d.status(), "standin")
        self.assertEqual(dep["breaker"], "closed", dep)
        self.assertGreater(dep["calls"], 80, dep)

        srv.delay = 3.0
        failed_before = client.call_failed
        opened = self.wait_state(d, "standin", "open", 5)
        failed_after = client.call_failed
        self.assertIsNotNone(opened, "never opened: %r" % dependency(d.last_status, "standin"))
        print("\n  slowdown 20ms -> 3s: breaker open after %.0f ms (target <= 1200)" % (opened * 1000))
        # The target is measured by bench/decide.py, not asserted here (a noisy machine must not
        # fail the tests). What must hold on any machine: it opened while the slow calls were
        # still hanging -- before the first of them completed, 3 s after the change.
        self.assertLess(opened, 2.9)
        dep = dependency(d.last_status, "standin")
        self.assertEqual(dep["reason"], "slow_rate")
        # no errors from the dependency; a call the machine itself broke is the client's to count
        self.assertTrue(failed_before <= dep["failed"] <= failed_after,
                        "failed calls: depwatch %d, the client %d..%d\n%s\n%s"
                        % (dep["failed"], failed_before, failed_after, dep,
                           d.dest("127.0.0.1:%d" % srv.port, d.last_status)))
        line = syslog.wait_line("dependency=standin", "state=open", "reason=slow_rate")
        self.assertIsNotNone(line, "no open line in syslog: %r" % syslog.lines()[-5:])
        self.assertTrue(line.startswith("daemon."), line)
        self.assertIn("depwatch[", line)
        self.assertIn("slow_call=500ms", line)

        srv.delay = 0.020
        closed = self.wait_state(d, "standin", "closed", 15)
        self.assertIsNotNone(closed, "never closed again: %r" % dependency(d.last_status, "standin"))
        self.assertIsNotNone(syslog.wait_line("dependency=standin", "state=closed"),
                             "no close line in syslog: %r" % syslog.lines()[-5:])
        kinds = [(e["from"], e["state"]) for e in self.events(d)
                 if e["dependency"] == "standin" and e["event"] == "transition"]
        self.assertIn(("closed", "open"), kinds)
        self.assertEqual(kinds[-1], ("half_open", "closed"), kinds)

    def test_healthy_tail_never_opens(self):
        seconds = float(os.environ.get("DW_TAIL_SECONDS", "30"))
        srv = self.server(0.020, tail=(0.05, 0.700))
        d = self.start_daemon("[defaults]\nslow_call = 500ms\nmin_calls = 5\n"
                              "[dependency tail]\nmatch = 127.0.0.1:%d\n" % srv.port)
        client = self.load(srv.port, 40)
        worst = 0.0
        t0 = time.monotonic()
        while time.monotonic() - t0 < seconds:
            dep = dependency(d.status(), "tail")
            self.assertEqual(dep["breaker"], "closed", dep)
            worst = max(worst, dep["slow_rate"])
            time.sleep(0.1)
        dep = dependency(d.status(), "tail")
        print("\n  healthy tail for %.0f s: %d calls, %d slow, worst slow_rate %.2f"
              % (seconds, dep["calls"], dep["slow"], worst))
        self.assertGreater(dep["slow"], 0, "the tail never showed: the test did not test anything")
        self.assertLess(worst, 0.5)
        self.assertEqual([e for e in self.events(d) if e["dependency"] == "tail" and e["event"] == "transition"], [])
        self.assertEqual(client.failed, 0, client.errors)

    def test_max_inflight_opens_on_concurrency(self):
        srv = self.server(30.0)  # answers nothing while the test runs
        d = self.start_daemon("[dependency pool]\nmatch = 127.0.0.1:%d\nmax_inflight = 10\n" % srv.port)
        conns = []
        self.cleanups.append(lambda: [c.close() for c in conns])
        for i in range(8):
            conns.append(socket.create_connection(("127.0.0.1", srv.port)))
            conns[-1].sendall(b"x\n")
        d.wait_for(lambda s: dependency(s, "pool")["inflight"] == 8)
        time.sleep(0.6)
        warned = [e for e in self.events(d) if e["event"] == "warning" and e["reason"] == "inflight"]
        self.assertEqual(len(warned), 1, self.events(d))
        self.assertEqual(dependency(d.status(), "pool")["breaker"], "closed")
        for i in range(2):
            conns.append(socket.create_connection(("127.0.0.1", srv.port)))
            conns[-1].sendall(b"x\n")
        st = d.wait_for(lambda s: dependency(s, "pool")["breaker"] == "open")
        dep = dependency(st, "pool")
        self.assertEqual((dep["breaker"], dep["reason"], dep["inflight"]), ("open", "concurrency", 10))

    def test_restart_rebuilds_breaker_state(self):
        """doc/status.md, restarts: a stop and start starts every breaker closed, and the new daemon
        learns an open again from new traffic only."""
        srv = self.server(30.0)  # answers nothing while the test runs
        conf_text = "[dependency pool]\nmatch = 127.0.0.1:%d\nmax_inflight = 4\n" % srv.port
        d = self.start_daemon(conf_text, own=True)
        conns = []
        self.cleanups.append(lambda: [c.close() for c in conns])

        def hold(n):
            for _ in range(n):
                conns.append(socket.create_connection(("127.0.0.1", srv.port)))
                conns[-1].sendall(b"x\n")

        hold(4)
        st = d.wait_for(lambda s: dependency(s, "pool")["breaker"] == "open")
        self.assertEqual((dependency(st, "pool")["breaker"], dependency(st, "pool")["reason"]),
                         ("open", "concurrency"))
        self.assertEqual(d.stop(), 0)
        # The 4 calls still hang; the new daemon adopts their connections but not their calls.
        again = Daemon(extra_args=["-c", d.conf])
        self.cleanups.append(again.cleanup)
        again.start()
        dep = dependency(again.status(), "pool")
        self.assertEqual((dep["breaker"], dep["reason"], dep["inflight"]), ("closed", "none", 0), dep)
        hold(3)
        st = again.wait_for(lambda s: dependency(s, "pool")["inflight"] == 3)
        self.assertEqual(dependency(st, "pool")["breaker"], "closed")
        hold(1)
        st = again.wait_for(lambda s: dependency(s, "pool")["breaker"] == "open")
        dep = dependency(st, "pool")
        self.assertEqual((dep["breaker"], dep["reason"], dep["inflight"]), ("open", "concurrency", 4), dep)
        self.assertEqual(again.stop(), 0)

    def test_breakers_map_dumps_named_fields(self):
        srv = self.server(0.0)
        d = self.start_daemon("[dependency named]\nmatch = 127.0.0.1:%d\nopen_for = 1m\n" % srv.port)
        path = os.path.join(d.pin_dir, "breakers")
        r = subprocess.run(["bpftool", "--json", "map", "dump", "pinned", path], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        # with BTF, bpftool's JSON has the raw bytes and a "formatted" view with the field names
        entries = [e.get("formatted", e) for e in json.loads(r.stdout)]
        mine = [e for e in entries if e["value"]["name"] == "named"]
        self.assertEqual(len(mine), 1, entries)
        value = mine[0]["value"]
        for field in ("state", "reason", "since_ns", "lease_expires_ns", "probes_left", "forced"):
            self.assertIn(field, value)
        self.assertEqual(value["state"], "DW_BREAKER_CLOSED")
        self.assertGreater(value["lease_expires_ns"], time.clock_gettime_ns(time.CLOCK_MONOTONIC))
        self.assertGreater(mine[0]["key"]["dep_id"], 0)

    def test_reload_keeps_old_config_on_error_and_applies_a_good_one(self):
        srv = self.server(0.0)
        d = self.start_daemon("[dependency first]\nmatch = 127.0.0.1:%d\n" % srv.port, own=True)
        with open(d.conf, "w") as f:
            f.write("[dependency first]\nmatch = 127.0.0.1:%d\nslow_cal = 1s\n" % srv.port)
        d.proc.send_signal(signal.SIGHUP)
        d.wait_for(lambda s: "reload rejected" in d.stderr_text(), timeout=3)
        self.assertIn("reload rejected", d.stderr_text())
        self.assertIn(":3: unknown key 'slow_cal'", d.stderr_text())
        self.assertIsNotNone(dependency(d.status(), "first"))
        with open(d.conf, "w") as f:
            f.write("[dependency second]\nmatch = 127.0.0.1:%d\nslow_call = 250ms\n" % srv.port)
        d.proc.send_signal(signal.SIGHUP)
        st = d.wait_for(lambda s: dependency(s, "second") is not None)
        self.assertIsNone(dependency(st, "first"))
        self.assertEqual(dependency(st, "second")["slow_call_ms"], 250.0)

    def test_check_and_run_refuse_a_bad_config(self):
        conf = write_config("[defaults]\nslow_call = 500ms\nslow_rate = 150%\n")
        self.cleanups.append(lambda: os.unlink(conf))
        r = subprocess.run([DEPWATCH, "check", "-c", conf], capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        self.assertIn("%s:3: slow_rate" % conf, r.stderr)
        d = Daemon(extra_args=["-c", conf])
        self.cleanups.append(d.cleanup)
        with self.assertRaises(harness.DaemonError) as ctx:
            d.start()
        self.assertIn("%s:3: slow_rate" % conf, str(ctx.exception))
        good = write_config("[defaults]\nslow_call = 500ms\n[dependency p]\nmatch = 10.0.3.0/24:443\n")
        self.cleanups.append(lambda: os.unlink(good))
        r = subprocess.run([DEPWATCH, "check", "-c", good], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("[dependency p]", r.stdout)
        self.assertIn("match = 10.0.3.0/24:443", r.stdout)


if __name__ == "__main__":
    unittest.main()
