"""Seeing the cascade coming, against the real kernel: a thread-per-request
front end (a pool of worker threads, open-loop arrivals) calls two
dependencies; one slows from 200 ms to 9 s. depwatch must forecast the pool's
exhaustion before it happens, say how many requests wait on which dependency
(the test counts its own workers), show retry_ratio for a client that retries,
and `check` must reject a timeout budget that overflows a deadline."""

import json
import os
import queue
import socket
import subprocess
import threading
import time
import unittest
import urllib.request

from harness import DEPWATCH, dependency, free_port, reloaded_daemon, write_config
from openloop import OpenLoopClient, SlowServer, accept_loop, loopback_listener, open_loop

POOL = 40
RATE = 20.0          # front-end requests per second
HEALTHY_S = 4.0


class FrontEnd:
    """A thread-per-request server: POOL worker threads; each takes one
    accepted connection, reads the request, calls each dependency in turn on
    its own keep-alive connection, answers and closes. It counts, as ground
    truth, its busy workers and how many of them wait on each dependency."""

    def __init__(self, pool, deps):
        self.pool = pool
        self.deps = deps      # [(name, port)], called in this order
        self.sock, self.port = loopback_listener(backlog=4096)
        self.accepted = queue.Queue()
        self.lock = threading.Lock()
        self.busy = 0
        self.waiting = {name: 0 for name, _ in deps}
        self.exhausted_at = None   # time.time() when the last free worker was taken
        self.stopped = threading.Event()
        threading.Thread(target=accept_loop, args=(self.sock, self.stopped, self.accepted.put),
                         daemon=True).start()
        for _ in range(pool):
            threading.Thread(target=self._worker, daemon=True).start()

    def _call(self, conns, name, port):
        if name not in conns:
            conns[name] = socket.create_connection(("127.0.0.1", port), timeout=60)
        with self.lock:
            self.waiting[name] += 1
        try:
            conns[name].sendall(b"call\n")
            if not conns[name].recv(64):
                raise OSError("dependency closed")
        finally:
            with self.lock:
                self.waiting[name] -= 1

    def _take(self):
        with self.lock:
            self.busy += 1
            if self.busy == self.pool and self.exhausted_at is None:
                self.exhausted_at = time.time()

    def _worker(self):
        conns = {}
        while not self.stopped.is_set():
            try:
                conn = self.accepted.get(timeout=0.2)
            except queue.Empty:
                continue
            self._take()
            try:
                if conn.recv(64):
                    for name, port in self.deps:
                        self._call(conns, name, port)
                    conn.sendall(b"ok\n")
            except OSError:
                for c in conns.values():
                    c.close()
                conns = {}
            finally:
                conn.close()
                with self.lock:
                    self.busy -= 1

    def waiting_on(self, name):
        with self.lock:
            return self.waiting[name]

    def close(self):
        self.stopped.set()
        self.sock.close()


class Arrivals:
    """Open loop: starts `rate` requests a second, each on a new connection,
    whether or not earlier ones were answered."""

    def __init__(self, port, rate):
        self.port = port
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=open_loop, args=(rate, self.stopped, self._one),
                                       daemon=True)
        self.thread.start()

    def _one(self):
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=30) as s:
                s.sendall(b"req\n")
                s.recv(64)
        except OSError:
            pass

    def stop(self):
        self.stopped.set()
        self.thread.join()


class RetryingClient(Arrivals):
    """Open loop at `rate` calls a second; each call makes up to `attempts`
    attempts, each on a new connection with `timeout`, closing the
    connection when it times out and trying again at once."""

    def __init__(self, port, rate, attempts, timeout):
        self.attempts, self.timeout = attempts, timeout
        self.lock = threading.Lock()
        self.originals = self.tries = 0
        super().__init__(port, rate)

    def _one(self):
        with self.lock:
            self.originals += 1
        for _ in range(self.attempts):
            with self.lock:
                self.tries += 1
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=self.timeout) as s:
                    s.sendall(b"call\n")
                    if s.recv(64):
                        return
            except OSError:
                pass     # timed out: the with block closed it; try again


def read_events(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def service(status, name):
    rows = [s for s in status["services"] if s["name"] == name]
    return rows[0] if rows else None


class CascadeTest(unittest.TestCase):
    # each test reads only its own dependencies', services' and ports' rows and its events and
    # neither stops nor signals the daemon: one daemon for the class, a reload per test
    # (harness.reloaded_daemon), with the metrics page test_retry_ratio reads
    RELOAD_SHARED = True
    METRICS_PORT = None

    def start_daemon(self, conf_text):
        if CascadeTest.METRICS_PORT is None:
            CascadeTest.METRICS_PORT = free_port()
        return reloaded_daemon(self, conf_text, ["--metrics", "127.0.0.1:%d" % CascadeTest.METRICS_PORT])

    def server(self, delay):
        s = SlowServer(delay)
        self.addCleanup(s.close)
        return s

    def test_forecast_and_who_waits_on_whom(self):
        auth, payments = self.server(0.02), self.server(0.2)
        fe = FrontEnd(POOL, [("auth", auth.port), ("payments", payments.port)])
        self.addCleanup(fe.close)
        d = self.start_daemon(
            "[dependency auth]\nmatch = 127.0.0.1:%d\ntimeout = 1s\n\n"
            "[dependency payments]\nmatch = 127.0.0.1:%d\nslow_call = 500ms\ntimeout = 10s\n\n"
            "[service frontend]\nlisten = %d\npool = %d\ndeadline = 12s\npath = auth, payments\n"
            % (auth.port, payments.port, fe.port, POOL))
        load = Arrivals(fe.port, RATE)
        self.addCleanup(load.stop)

        time.sleep(HEALTHY_S)
        st = d.status()
        svc = service(st, "frontend")
        self.assertIsNotNone(svc, json.dumps(st["services"]))
        self.assertEqual(svc["level"], "ok", json.dumps(svc))
        self.assertGreater(svc["requests"], RATE * HEALTHY_S * 0.5, json.dumps(svc))
        self.assertLess(svc["inflight"], POOL * 0.5, json.dumps(svc))
        self.assertLessEqual(svc["p50_ms"], 300, json.dumps(svc))
        self.assertGreaterEqual(svc["p50_ms"], 200, json.dumps(svc))
        self.assertEqual([e for e in read_events(d.events) if "service" in e], [],
                         "pool events while healthy")
        # every listener gets its inbound row, configured or not, with its process
        inbound = {r["port"]: r for r in st["inbound"]}
        self.assertEqual(inbound[fe.port]["service"], "frontend", json.dumps(st["inbound"]))
        self.assertIsNone(inbound[payments.port]["service"], json.dumps(st["inbound"]))
        self.assertGreater(inbound[payments.port]["requests"], RATE * HEALTHY_S * 0.5)
        self.assertEqual(inbound[payments.port]["process"]["pid"], os.getpid())

        payments.delay = 9.0
        slowed_at = time.time()
        deadline = time.monotonic() + 8
        while fe.exhausted_at is None and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertIsNotNone(fe.exhausted_at, "the pool never filled: busy %d" % fe.busy)
        time.sleep(1.0)   # every worker now waits on payments, for about 8 s more

        waiting_before = fe.waiting_on("payments")
        st = d.status()
        waiting_after = fe.waiting_on("payments")
        svc = service(st, "frontend")
        counts = {w["dependency"]: w["count"] for w in svc["waiting"]}
        self.assertEqual(svc["waiting"][0]["dependency"], "payments", json.dumps(svc))
        truth = (min(waiting_before, waiting_after), max(waiting_before, waiting_after))
        self.assertTrue(truth[0] - 1 <= counts["payments"] <= truth[1] + 1,
                        "payments waiters: depwatch %d, the front end's own count %r\n%s"
                        % (counts["payments"], truth, json.dumps(svc)))
        self.assertEqual(svc["summary"], "frontend: %d/%d waiting on payments"
                         % (counts["payments"], POOL))
        self.assertEqual(svc["level"], "exhausted", json.dumps(svc))
        top = subprocess.run([DEPWATCH, "top", "--run-dir", d.run_dir], capture_output=True,
                             text=True, timeout=10)
        self.assertRegex(top.stdout, r"(?m)^frontend: \d+/%d waiting on payments  \[pool exhausted\]$"
                         % POOL, top.stdout)
        text = subprocess.run([DEPWATCH, "status", "--run-dir", d.run_dir], capture_output=True,
                              text=True, timeout=10).stdout
        self.assertRegex(text, r"frontend: \d+/%d waiting on payments" % POOL, text)

        events = [e for e in read_events(d.events) if "service" in e]
        self.assertTrue(events, "no service event")
        first = events[0]
        self.assertEqual(first["reason"], "forecast", json.dumps(events))
        self.assertGreater(first["time"], slowed_at, json.dumps(first))
        self.assertLess(first["time"], fe.exhausted_at,
                        "the forecast came after the pool was exhausted: %s, exhausted at %.3f"
                        % (json.dumps(first), fe.exhausted_at))
        self.assertIsNotNone(first["exhausted_in_s"], json.dumps(first))
        self.assertEqual(first["waiting_on"], "payments", json.dumps(first))
        self.assertIn("exhausted", [e["reason"] for e in events], json.dumps(events))
        print("\n  forecast: %.2f s after the slowdown, %.2f s before the pool of %d was exhausted "
              "(exhausted %.2f s after the slowdown; forecast exhausted_in=%.2f s, inflight %d); "
              "attribution: %d waiting on payments, front end counted %r"
              % (first["time"] - slowed_at, fe.exhausted_at - first["time"], POOL,
                 fe.exhausted_at - slowed_at, first["exhausted_in_s"], first["inflight"],
                 counts["payments"], truth), flush=True)
        payments.delay = 0

    def test_retry_ratio(self):
        dep = self.server(1.0)
        d = self.start_daemon("[dependency flaky]\nmatch = 127.0.0.1:%d\n" % dep.port)
        metrics_port = CascadeTest.METRICS_PORT
        client = RetryingClient(dep.port, rate=8, attempts=3, timeout=0.3)
        self.addCleanup(client.stop)
        time.sleep(12)
        st = d.status()
        with client.lock:
            truth = client.tries / client.originals
        row = dependency(st, "flaky")
        self.assertIsNotNone(row, json.dumps(st["dependencies"]))
        self.assertAlmostEqual(row["retry_ratio"], truth, delta=0.15 * truth,
                               msg="retry_ratio %r, the client made %.2f attempts per call\n%s"
                               % (row["retry_ratio"], truth, json.dumps(row)))
        self.assertGreater(row["abandoned"], 0, json.dumps(row))
        body = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % metrics_port, timeout=5).read().decode()
        scraped = [float(line.split()[-1]) for line in body.splitlines()
                   if line.startswith('depwatch_retry_ratio{dependency="flaky"}')]
        self.assertEqual(len(scraped), 1, body)
        self.assertAlmostEqual(scraped[0], truth, delta=0.15 * truth)
        storms = [e for e in read_events(d.events) if e.get("reason") == "retry_storm"]
        self.assertTrue(storms, "no retry_storm alert: %s" % read_events(d.events))
        self.assertGreaterEqual(storms[0]["retry_ratio"], 1.5, json.dumps(storms[0]))
        print("\n  retry_ratio %.2f (client: %.2f attempts per call), retries %d, abandoned %d"
              % (row["retry_ratio"], truth, row["retries"], row["abandoned"]), flush=True)

    def test_path_p99_over_deadline(self):
        """Declared timeouts that fit the deadline, observed p99s that do not: a warning."""
        slow = self.server(0.2)
        d = self.start_daemon(
            "[dependency slowish]\nmatch = 127.0.0.1:%d\ntimeout = 50ms\n\n"
            "[service edge]\nlisten = 1\ndeadline = 100ms\npath = slowish\n" % slow.port)
        client = OpenLoopClient("127.0.0.1", slow.port, 20).start()
        self.addCleanup(client.stop)
        deadline = time.monotonic() + 10
        events = []
        while not events and time.monotonic() < deadline:
            time.sleep(0.25)
            events = [e for e in read_events(d.events) if e.get("reason") == "path_p99_over_deadline"]
        self.assertTrue(events, "no path_p99_over_deadline warning: %s" % read_events(d.events))
        self.assertGreater(events[0]["path_p99_ms"], 100, json.dumps(events[0]))
        self.assertEqual(events[0]["deadline_ms"], 100, json.dumps(events[0]))
        svc = service(d.status(), "edge")
        self.assertGreater(svc["path_p99_ms"], 190, json.dumps(svc))

    def test_check_budget(self):
        text = ("[dependency auth]\nmatch = 10.0.0.1:443\ntimeout = %s\n\n"
                "[dependency payments]\nmatch = 10.0.0.2:443\ntimeout = 800ms\n\n"
                "[service shop]\nlisten = 8080\ndeadline = 2s\npath = auth, payments\n")
        for auth_timeout, ok in (("1200ms", True), ("1500ms", False)):
            conf = write_config(text % auth_timeout)
            self.addCleanup(lambda conf=conf: os.unlink(conf))
            r = subprocess.run([DEPWATCH, "check", "-c", conf], capture_output=True, text=True)
            if ok:
                self.assertEqual(r.returncode, 0, r.stderr)
            else:
                self.assertNotEqual(r.returncode, 0, r.stdout)
                self.assertIn("%s:" % conf, r.stderr)
                self.assertIn("2.3s", r.stderr)
                self.assertIn("2s", r.stderr)


if __name__ == "__main__":
    unittest.main()
