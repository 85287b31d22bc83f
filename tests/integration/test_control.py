"""Control clients never hold the daemon's loop: clients that send nothing,
half a request, or never read their answer are held in their own slots,
with deadlines, while other clients are answered; each is closed at its
deadline (200 ms for the request, 2 s without progress for the answer), and
a client beyond the table's 16 is closed at once, logged, and counted in
status --json (control.refused) and /metrics (depwatch_control_refused_total).
Every answer opens with its length ("depwatch-answer LEN"), so a client the
daemon gave up on knows its answer was cut, and the CLI says so and fails.

Before, the daemon read each request for up to 200 ms and wrote each answer
for up to 1 s per write inside its one loop: 12 silent clients held it about
2.4 s, 4 clients that never read about 4 s. The bound below is what the
held clients may add to the same status requests asked alone just before,
on the same machine, beyond the daemon's own work on the held clients'
requests (its speed is not the test's: under emulation, the 6.1 stage, the
4 answers of ~1.4 MB alone take it over a second to make); the rest is
ground truth: answers, closes, counts."""

import json
import os
import re
import select
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import unittest

from loopback import bind_fresh_port, reusable_socket
import harness
from harness import DEPWATCH, DaemonTestCase, free_port
from test_metrics import http_get, samples

SILENT = 12            # the old daemon: 12 x 200 ms in its loop
STUCK = 4              # the old daemon: 4 x 1 s
ASKS = 5               # status requests that must all be answered ...
ASK_EXTRA = 1.0        # ... with the others held, within this many seconds more than alone: under one
                       # client's 1 s hold, the old daemon's 2.4 s and 4 s
TABLE = 16
HOLD = 3               # silent clients held while status counts the clients
DESTS = 1000           # ~1.4 KB of status JSON each: an answer no socket buffer holds
ANSWER_S = 2           # the daemon closes a client that reads nothing of its answer this long
ANSWER_LINE = re.compile(rb"depwatch-answer (\d+)\n")


def connect(d):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(os.path.join(d.run_dir, "depwatch.sock"))
    return s


def unframe(raw):
    """What the daemon sent: the length its first line says, and the answer after the line."""
    m = ANSWER_LINE.match(raw)
    assert m, "no length line: %r" % raw[:80]
    return int(m.group(1)), raw[m.end():]


def ask(d, request):
    """The daemon's whole answer to one request line, without its length line."""
    s = connect(d)
    try:
        s.sendall(request.encode() + b"\n")
        want, answer = unframe(read_rest(s))
        assert len(answer) == want, "%d bytes of an answer of %d" % (len(answer), want)
        return answer
    finally:
        s.close()


def ask_several(d, n):
    """Seconds that n status requests in a row took; each must be answered."""
    t = time.monotonic()
    for _ in range(n):
        st = json.loads(ask(d, "status json 1"))
        assert "dependencies" in st, st
    return time.monotonic() - t


def first_byte_after(d, request):
    """Seconds from sending request to the first byte of its answer: the daemon's work to make
    it (a whole status is made before its first write), read alone; the rest is dropped."""
    s = connect(d)
    try:
        t = time.monotonic()
        s.sendall(request.encode() + b"\n")
        s.recv(1)
        return time.monotonic() - t
    finally:
        s.close()


def closed_by_daemon(s, timeout):
    """Whether the daemon closed s within timeout, without reading what it sent (POLLHUP)."""
    p = select.poll()
    p.register(s, select.POLLHUP)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(ev & select.POLLHUP for _, ev in p.poll(100)):
            return True
    return False


def read_rest(s):
    """What is left to read on s, up to the daemon's close."""
    s.settimeout(10)
    chunks = []
    while True:
        b = s.recv(65536)
        if not b:
            return b"".join(chunks)
        chunks.append(b)


def wait_line(d, text, timeout):
    deadline = time.monotonic() + timeout
    while text not in d.stderr_text():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


# What the control socket does with its clients lies above the daemon's figures: one pass (issue 45).
@harness.backend_independent
class ControlClientsTest(DaemonTestCase):
    def open_silent(self, d, n, first=b""):
        socks = [connect(d) for _ in range(n)]
        self.addCleanup(lambda: [s.close() for s in socks])
        for i, s in enumerate(socks):
            if i % 2:
                s.sendall(first)
        return socks

    def test_control_silent_clients_hold_nothing(self):
        d = self.start_daemon()
        alone = ask_several(d, ASKS)
        # half send nothing, half half a request line
        silent = self.open_silent(d, SILENT, b"status js")
        took = ask_several(d, ASKS)
        self.assertLess(took - alone, ASK_EXTRA, "%d status requests behind %d silent clients: %.2f s, alone %.2f s"
                        % (ASKS, SILENT, took, alone))
        for i, s in enumerate(silent):
            self.assertTrue(closed_by_daemon(s, 10), "silent client %d not closed" % i)
            self.assertEqual(read_rest(s), b"", "an unfinished request is closed unanswered")
        self.assertTrue(d.running())
        self.assertIn("dependencies", json.loads(ask(d, "status json")))

    def test_control_client_that_never_reads(self):
        d = self.start_daemon()
        self.many_destinations(d)
        full = ask(d, "status json")
        self.assertGreater(len(full), 4 * int(open("/proc/sys/net/core/wmem_default").read()),
                           "the answer must not fit the socket buffers for this test")
        alone = ask_several(d, ASKS)
        # what making the stuck clients' answers costs the loop, whoever reads them
        making = STUCK * first_byte_after(d, "status json")
        stuck = []
        self.addCleanup(lambda: [s.close() for s in stuck])
        for _ in range(STUCK):
            s = connect(d)
            s.sendall(b"status json\n")
            stuck.append(s)
        took = ask_several(d, ASKS)
        self.assertLess(took - alone - making, ASK_EXTRA, "%d status requests beside %d clients that do not read: "
                        "%.2f s, alone %.2f s, making their answers %.2f s" % (ASKS, STUCK, took, alone, making))
        for i, s in enumerate(stuck):
            self.assertTrue(closed_by_daemon(s, 20), "client %d that never reads not closed" % i)
            got = read_rest(s)
            self.assertGreater(len(got), 0)
            self.assertLess(len(got), len(full), "client %d: the daemon gave up, part of the answer" % i)
            want, answer = unframe(got)
            self.assertLess(len(answer), want, "client %d: the length line tells it was cut" % i)
            self.assertTrue(answer.startswith(b"{"))
        self.assertTrue(d.running())
        self.assertGreaterEqual(len(json.loads(ask(d, "status json"))["destinations"]), DESTS)

    def test_control_table_full_refuses_logged(self):
        mport = free_port()
        d = self.start_daemon(extra_args=["--metrics", "127.0.0.1:%d" % mport])
        line = "control socket: 16 clients connected, closed one more unanswered (1 so far)"
        refused = 0
        # The 16 slots held by silent clients for 200 ms; one more in that time is refused. A
        # daemon kept off the CPU for those 200 ms (a loaded machine) frees them first: try again.
        for attempt in range(5):
            held = self.open_silent(d, TABLE)
            extra = connect(d)
            self.addCleanup(extra.close)
            try:
                extra.sendall(b"status json\n")
                got = read_rest(extra)
            except (BrokenPipeError, ConnectionResetError):    # closed with the request unread
                got = b""
            refused += got == b""
            for s in held:
                self.assertTrue(closed_by_daemon(s, 10))
            if wait_line(d, line, 2 if got == b"" else 0.2):
                break
        self.assertIn(line, d.stderr_text())
        self.assertEqual(got, b"", "the refused client is closed unanswered")
        st = json.loads(ask(d, "status json"))
        self.assertIn("dependencies", st)
        self.assertEqual(list(st)[list(st).index("kernel") + 1], "control")
        self.assertEqual(st["control"]["refused"], refused, "every client the test saw refused, no more")
        self.assertGreaterEqual(refused, 1)
        self.assertIn("warning: control socket full: %d clients closed unanswered" % refused,
                      ask(d, "status text").decode())
        # /metrics: rendered at each poll
        deadline = time.monotonic() + 10
        while True:
            status, _, body = http_get(mport, "/metrics")
            m = samples(body)
            if m.get(("depwatch_control_refused_total", "")) == refused or time.monotonic() >= deadline:
                break
            time.sleep(0.05)
        self.assertEqual(status, 200)
        self.assertEqual(m.get(("depwatch_control_refused_total", "")), refused, body)
        self.assertIn(("depwatch_control_clients", ""), m)
        # The clients now: HOLD silent ones and the status request asking. The silent ones
        # are closed 200 ms after their connect; a daemon kept off the CPU longer: try again.
        for attempt in range(5):
            held = self.open_silent(d, HOLD)
            clients = json.loads(ask(d, "status json"))["control"]["clients"]
            self.assertLessEqual(clients, HOLD + 1, "only the test's clients are connected")
            for s in held:
                self.assertTrue(closed_by_daemon(s, 10))
            if clients == HOLD + 1:
                break
        self.assertEqual(clients, HOLD + 1, "the held clients and the one asking")
        self.assertEqual(json.loads(ask(d, "status json"))["control"], {"clients": 1, "refused": refused})

    def test_control_cut_answer_is_an_error(self):
        """status --json behind a client that stops reading (a proxy that waits past the daemon's
        answer deadline before it passes on what came): the daemon cuts the answer, and the CLI
        says so on stderr and exits 1, with nothing on stdout. Before, it printed the part that
        came, broken JSON, and exited 0."""
        d = self.start_daemon()
        self.many_destinations(d)
        proxy = StallingProxy(d, 5 * ANSWER_S)
        self.addCleanup(proxy.close)
        r = subprocess.run([DEPWATCH, "status", "--json", "--run-dir", proxy.run_dir],
                           capture_output=True, timeout=30)
        proxy.join()
        self.assertTrue(proxy.closed_by_daemon, "the daemon kept the stalled client")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertEqual(r.stdout, b"", "no part of a cut answer is printed")
        lines = r.stderr.decode().splitlines()
        self.assertEqual(len(lines), 1, lines)
        m = re.match(r"depwatch: the daemon's answer was cut: (\d+) of (\d+) bytes arrived "
                     r"\(the daemon closes a client that reads nothing for 2 s\)$", lines[0])
        self.assertTrue(m, lines[0])
        self.assertEqual(int(m.group(1)) + len(b"depwatch-answer %s\n" % m.group(2).encode()),
                         proxy.passed_on, "what arrived is what the proxy passed on")
        self.assertLess(int(m.group(1)), int(m.group(2)))
        # the same request, read at once: whole
        r = subprocess.run([DEPWATCH, "status", "--json", "--run-dir", d.run_dir],
                           capture_output=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertGreaterEqual(len(json.loads(r.stdout)["destinations"]), DESTS)

    def many_destinations(self, d):
        """DESTS destinations: connects to 127.0.x.y, one listener on all of them."""
        ls = bind_fresh_port(reusable_socket, "0.0.0.0")
        ls.listen(4096)
        port = ls.getsockname()[1]

        def accept():
            while True:
                try:
                    c, _ = ls.accept()
                except OSError:
                    return
                c.close()

        t = threading.Thread(target=accept, daemon=True)
        t.start()
        self.addCleanup(ls.close)
        self.addCleanup(lambda: ls.shutdown(socket.SHUT_RDWR))
        for i in range(DESTS):
            s = socket.socket()
            s.connect(("127.0.%d.%d" % (2 + i // 250, 1 + i % 250), port))
            s.close()
        st = d.wait_for(lambda st: len(st["destinations"]) >= DESTS, timeout=20)
        self.assertGreaterEqual(len(st["destinations"]), DESTS)


class StallingProxy:
    """A run dir whose control socket passes one client's request to d, then reads nothing of
    the answer until the daemon closes it (its deadline: within timeout seconds), then passes on
    what the socket held."""

    def __init__(self, d, timeout):
        self.d, self.timeout = d, timeout
        self.run_dir = tempfile.mkdtemp(prefix="dwtest-proxy-")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(os.path.join(self.run_dir, "depwatch.sock"))
        self.sock.listen(1)
        self.closed_by_daemon = False
        self.passed_on = 0
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        client, _ = self.sock.accept()
        with client:
            client.settimeout(10)
            req = b""
            while not req.endswith(b"\n"):
                chunk = client.recv(256)
                if not chunk:
                    return
                req += chunk
            daemon = connect(self.d)
            with daemon:
                daemon.sendall(req)
                self.closed_by_daemon = closed_by_daemon(daemon, self.timeout)
                got = read_rest(daemon)
            client.sendall(got)
            self.passed_on = len(got)

    def join(self):
        self._thread.join(30)

    def close(self):
        self.sock.close()
        shutil.rmtree(self.run_dir, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
