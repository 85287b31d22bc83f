"""A protocol's goodbye is no call (issue 50, doc/callmodel.md "Goodbyes are no calls"), against
Debian's own MariaDB and memcached on loopback, and depwatch's own processes are never TLS
processes to its discovery.

- MariaDB: the `mariadb` client 50 times (`-e "SELECT 1"`, a fresh connection each) and
  `mysqlslap` (4 clients, 25 rounds, a fresh connection per client and round): each connection
  ends with COM_QUIT, which the server answers by closing. depwatch counts failed 0, one dropped
  call per connection (its goodbye), calls = the queries + one per connection (its login: the
  client's handshake response, answered by the server's OK; the greeting is the server's and no
  call), and nothing in flight after. The server's inbound row the same, mirrored (MariaDB's
  server reads COM_QUIT's packet in two, its header then its body: see expect_inbound_mysql).
- memcached: 50 connections, each `set`, `get`, `quit` (text), and 10 with the binary protocol's
  Version then QuitQ: calls = the requests, failed 0, one dropped per connection.
- A server of ours that closes after a request without answering: a 5-byte request that is no
  goodbye (MySQL's COM_PING) fails, as it always did, and its reason is named: failed_closed, the
  connection ended under it (the caller's and the server's rows, and status's `failed:` line; its
  /metrics family is test_metrics.py's); COM_QUIT's 5 bytes to the same server are dropped, failed_closed 0. Every case above
  has failed_closed 0 too.
- `depwatch top` beside the daemon: not in status's TLS figures (its binary's .rodata holds the
  texts the discovery looks for, and it links GnuTLS).

The ground truth is what the test did: its own connection and query counts, checked against the
servers' (mysqlslap's summary) where they have one.
"""

# Not alone on the host in make test's side-by-side run: test_top_is_no_tls_process reads only its
# own daemon's view of its own two processes (by pid), which other daemons on the host do not change.

import os
import pty
import socket
import struct
import subprocess
import threading
import time
import unittest

import harness
from harness import DaemonTestCase, find_dest, free_port, own_netns
from realtraffic import mariadb, mysqlslap, start_mariadb, start_memcached, tempdir, wait_closed

SETTLE_S = 10.0   # seconds for the daemon's polls to show what the kernel counted

COM_QUIT = b"\x01\x00\x00\x00\x01"
COM_PING = b"\x01\x00\x00\x00\x0e"


def dest_text(port):
    return "127.0.0.1:%d" % port


def inbound_row(status, port):
    rows = [r for r in status.get("inbound", []) if r["port"] == port and r["netns"] == own_netns()]
    return rows[0] if rows else None


FIELDS = ("calls", "failed", "failed_closed", "dropped", "inflight", "connects")
IN_FIELDS = ("requests", "failed", "failed_closed", "dropped", "inflight")


class GoodbyeTest(DaemonTestCase):
    SHARED_DAEMON = True

    def setUp(self):
        super().setUp()
        self.d = self.start_daemon()
        self.dir = tempdir(self)

    # ---- reading the daemon

    def rows(self, port):
        st = self.d.status()
        r = find_dest(st, dest_text(port))
        i = inbound_row(st, port)
        return ({k: r[k] for k in FIELDS} if r else dict.fromkeys(FIELDS, 0),
                {k: i[k] for k in IN_FIELDS} if i else dict.fromkeys(IN_FIELDS, 0))

    def settle(self, port, ended):
        """Waits until every connection to port is closed and the port's rows have ended (calls,
        failed and dropped summed) `ended` calls with nothing in flight; returns the rows then."""
        left = wait_closed(port)
        self.assertFalse(left, "connections to %d still open 10 s after the clients" % port)

        def done(st):
            r = find_dest(st, dest_text(port))
            i = inbound_row(st, port)
            return (r is not None and r["inflight"] == 0 and r["calls"] + r["failed"] + r["dropped"] >= ended
                    and (i is None or (i["inflight"] == 0 and i["requests"] + i["failed"] + i["dropped"] >= ended)))

        try:
            self.d.wait_for(done, timeout=SETTLE_S, what="%d calls ended on port %d" % (ended, port))
        except AssertionError:
            pass            # the comparison below names what differs
        time.sleep(0.6)     # a poll more: nothing counted late
        return self.rows(port)

    def expect(self, case, got, want):
        print("\n  [%s] %s: %s" % (harness.BACKEND or "auto", case, got), end="")
        self.assertEqual(got, want, case)

    # ---- MariaDB

    def expect_inbound_mysql(self, case, got, requests, conns):
        """The server's row: MariaDB's server reads a packet's 4-byte header, then its body; COM_QUIT
        read so is a goodbye too (doc/callmodel.md): dropped, never failed."""
        self.expect(case, got, {"requests": requests, "failed": 0, "failed_closed": 0, "dropped": conns,
                                "inflight": 0})

    def test_mariadb_client_loop(self):
        port = free_port()
        start_mariadb(self, self.dir, port)
        runs = 50
        for _ in range(runs):
            self.assertEqual(mariadb(port, "-N", "-e", "SELECT 1").strip(), "1")
        out, inb = self.settle(port, 2 * runs + runs)
        # each run: its login and its query are calls; its COM_QUIT, answered by the close, is dropped
        self.expect("mariadb x%d, outbound" % runs, out,
                    {"calls": 2 * runs, "failed": 0, "failed_closed": 0, "dropped": runs, "inflight": 0,
                     "connects": runs})
        self.expect_inbound_mysql("mariadb x%d, inbound" % runs, inb, 2 * runs, runs)

    def test_mysqlslap_fresh_connections(self):
        port = free_port()
        start_mariadb(self, self.dir, port)
        mariadb(port, "-e", "CREATE DATABASE dwslap")
        before, before_in = self.settle(port, 3)
        clients, rounds = 4, 25
        text = mysqlslap(port, ["--concurrency=%d" % clients, "--iterations=%d" % rounds, "--query=SELECT 1",
                                "--create-schema=dwslap"])
        self.assertIn("Number of clients running queries: %d" % clients, text)
        queries = clients * rounds
        # one connection per client and round, and mysqlslap's own first one (its login only)
        conns = clients * rounds + 1
        after, after_in = self.settle(port, sum(before[k] for k in ("calls", "failed", "dropped"))
                                      + queries + 2 * conns)
        out = {k: after[k] - before[k] for k in FIELDS if k != "inflight"}
        out["inflight"] = after["inflight"]
        inb = {k: after_in[k] - before_in[k] for k in IN_FIELDS if k != "inflight"}
        inb["inflight"] = after_in["inflight"]
        self.expect("mysqlslap -c %d -i %d, outbound" % (clients, rounds), out,
                    {"calls": queries + conns, "failed": 0, "failed_closed": 0, "dropped": conns, "inflight": 0,
                     "connects": conns})
        self.expect_inbound_mysql("mysqlslap -c %d -i %d, inbound" % (clients, rounds), inb, queries + conns, conns)

    # ---- memcached

    @staticmethod
    def read_until(s, end):
        buf = b""
        while not buf.endswith(end):
            got = s.recv(4096)
            if not got:
                raise AssertionError("memcached closed before %r; had %r" % (end, buf))
            buf += got
        return buf

    def test_memcached_quit(self):
        port = free_port()
        start_memcached(self, self.dir, port)
        text_conns, bin_conns = 50, 10
        for i in range(text_conns):
            with socket.create_connection(("127.0.0.1", port)) as s:
                s.sendall(b"set dw%d 0 0 2\r\nok\r\n" % i)
                self.read_until(s, b"STORED\r\n")
                s.sendall(b"get dw%d\r\n" % i)
                self.read_until(s, b"END\r\n")
                s.sendall(b"quit\r\n")
                self.assertEqual(s.recv(100), b"", "memcached answers quit by closing")
        for _ in range(bin_conns):
            with socket.create_connection(("127.0.0.1", port)) as s:
                # binary protocol: Version (0x0b), answered; then QuitQ (0x17), answered by the close
                s.sendall(struct.pack(">BBHBBHIIQ", 0x80, 0x0b, 0, 0, 0, 0, 0, 0, 0))
                hdr = self.read_until_len(s, 24)
                self.assertEqual(hdr[0], 0x81)
                self.read_until_len(s, struct.unpack(">I", hdr[8:12])[0])
                s.sendall(struct.pack(">BBHBBHIIQ", 0x80, 0x17, 0, 0, 0, 0, 0, 0, 0))
                self.assertEqual(s.recv(100), b"", "memcached answers QuitQ by closing")
        conns = text_conns + bin_conns
        requests = 2 * text_conns + bin_conns
        out, inb = self.settle(port, requests + conns)
        self.expect("memcached %d text + %d binary connections, outbound" % (text_conns, bin_conns), out,
                    {"calls": requests, "failed": 0, "failed_closed": 0, "dropped": conns, "inflight": 0,
                     "connects": conns})
        self.expect("memcached, inbound", inb,
                    {"requests": requests, "failed": 0, "failed_closed": 0, "dropped": conns, "inflight": 0})

    @staticmethod
    def read_until_len(s, n):
        buf = b""
        while len(buf) < n:
            got = s.recv(n - len(buf))
            if not got:
                raise AssertionError("closed after %d of %d bytes" % (len(buf), n))
            buf += got
        return buf

    # ---- a request that is no goodbye, answered by a close

    def close_after_request(self, request, conns):
        """A server of ours reads each connection's 5-byte request and closes without answering;
        our client sends it and waits for the end of file, then closes: the server's close is
        what ends the call. Returns the port."""
        ls = socket.socket()
        ls.bind(("127.0.0.1", free_port()))
        ls.listen(64)
        port = ls.getsockname()[1]
        self.addCleanup(ls.close)

        def serve():
            for _ in range(conns):
                c, _ = ls.accept()
                with c:
                    self.read_until_len(c, len(request))
                    c.shutdown(socket.SHUT_RDWR)

        t = threading.Thread(target=serve, daemon=True)
        t.start()
        for _ in range(conns):
            with socket.create_connection(("127.0.0.1", port)) as s:
                s.sendall(request)
                self.assertEqual(s.recv(100), b"")
                time.sleep(0.002)   # blocked in recv, then closes well after its request: no goodbye by time
        t.join(10)
        return port

    def failed_note(self, port):
        """status's line naming the close as the reason, for the dependency of port's destination."""
        name = find_dest(self.d.status(), dest_text(port))["dependency"]
        return [l for l in self.d.status_text().splitlines() if l.startswith("failed: %s: " % name)]

    def test_not_a_goodbye_fails(self):
        conns = 20
        port = self.close_after_request(COM_PING, conns)
        out, inb = self.settle(port, conns)
        # the reason named: the server's close ended them (not the caller's: abandoned)
        self.expect("COM_PING answered by a close", out,
                    {"calls": 0, "failed": conns, "failed_closed": conns, "dropped": 0, "inflight": 0,
                     "connects": conns})
        self.expect("COM_PING answered by a close, inbound", inb,
                    {"requests": 0, "failed": conns, "failed_closed": conns, "dropped": 0, "inflight": 0})
        self.assertEqual(self.failed_note(port),
                         ["failed: %s: %d of %d failed calls ended by their connection's close (failed_closed)"
                          % (find_dest(self.d.last_status, dest_text(port))["dependency"], conns, conns)])
        port = self.close_after_request(COM_QUIT, conns)
        out, inb = self.settle(port, conns)
        self.expect("COM_QUIT answered by a close", out,
                    {"calls": 0, "failed": 0, "failed_closed": 0, "dropped": conns, "inflight": 0,
                     "connects": conns})
        self.expect("COM_QUIT answered by a close, inbound", inb,
                    {"requests": 0, "failed": 0, "failed_closed": 0, "dropped": conns, "inflight": 0})
        self.assertEqual(self.failed_note(port), [])

    # ---- depwatch's own processes and the TLS discovery

    def test_top_is_no_tls_process(self):
        tls = self.d.status()["tls"]
        if not tls["on"]:
            self.skipTest("TLS discovery off: %s" % tls.get("why"))
        master, slave = pty.openpty()
        top = subprocess.Popen([harness.DEPWATCH, "top", "--run-dir", self.d.run_dir], stdin=slave, stdout=slave,
                               stderr=slave, env=dict(os.environ, TERM="xterm", NO_COLOR="1"))
        os.close(slave)

        def stop():
            top.kill()
            top.wait()
            os.close(master)

        self.addCleanup(stop)
        # the exec's scans: at once, then 10 ms to 5 s after (doc/tls.md, "When")
        time.sleep(2.5)
        self.assertIsNone(top.poll(), "depwatch top exited")
        tls = self.d.status()["tls"]
        mine = [o for o in tls["opaque"] if o["pid"] in (top.pid, self.d.proc.pid)]
        self.assertEqual(mine, [], "depwatch's own processes among the opaque TLS processes: %r" % tls)
        line = [l for l in subprocess.run([harness.DEPWATCH, "status", "--run-dir", self.d.run_dir],
                                          capture_output=True, text=True, timeout=10).stdout.splitlines()
                if l.startswith("tls:")]
        print("\n  [%s] %s" % (harness.BACKEND or "auto", line), end="")


if __name__ == "__main__":
    unittest.main()
