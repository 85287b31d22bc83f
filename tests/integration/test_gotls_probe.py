"""Go's TLS probe on the real kernel (issue 34's first part, doc/go.md): build/goattach
attaches bpf/tls/go/gotls.bpf.c's dw_go_tls_* programs at crypto/tls.(*Conn).Write and Read of a Go program
built here with Debian's golang-go (tests/go/gotls: a net/http client and server over
TLS in one process, which prints its sockets' fds), and checks every fd the probe read
through the struct offsets against the program's own; over HTTP/1.1 the writes are
exactly two a request; each Write returned through the RETs the finder listed
(dw_go_tls_write_ret) as often as it entered, with all its bytes written; Read's entry
and RETs likewise, and the bytes Read returned add up to those written (one process holds
both ends). Plain, stripped (-s -w, offsets from the table), -trimpath and PIE
builds. And the daemon reports the Go counters (its discovery attaches the programs:
test_gotls.py)."""

# Reads the host's uprobes and TLS processes: no daemon of make test's other pass lives while it runs
# (tests/integration/suitelock.py's SideBySide), since every daemon probes every TLS process.
RUNS_ALONE_ON_HOST = True

import os
import re
import subprocess
import unittest

import harness
from harness import DaemonTestCase

OUT = os.environ.get("OUT", os.path.join(harness.REPO, "build"))
GOATTACH = os.path.join(OUT, "goattach")
GOBIN = os.path.join(OUT, "go")


def goattach(binary, requests, *opts):
    p = subprocess.run([GOATTACH, os.path.join(GOBIN, binary), str(requests)] + list(opts),
                       capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


# goattach loads the Go programs alone, no daemon: the backend plays no part, so it runs in one pass of
# the suite (the sock pass where the kernel has it, else the syscalls one).
ONE_PASS = harness.BACKEND_IN_USE == "sock" or not harness.kernel_has_sock_tracepoints()


@unittest.skipUnless(ONE_PASS, "no daemon and no backend in it: run in the sock backend's pass")
@unittest.skipUnless(os.path.exists(os.path.join(GOBIN, "gotls")),
                     "no Go programs in %s (no `go`: scripts/deps.sh installs golang-go)" % GOBIN)
@unittest.skipUnless(os.path.exists(GOATTACH), "%s not built (make %s)" % (GOATTACH, GOATTACH))
class GoTLSProbeTest(unittest.TestCase):
    def check(self, binary, requests, *opts, source):
        rc, out, err = goattach(binary, requests, *opts)
        if rc == 77:
            self.skipTest("goattach cannot load or attach here: " + err.strip().splitlines()[-1])
        self.assertEqual(rc, 0, "goattach %s: %s\n%s" % (binary, out, err))
        m = re.search(r"fd chain from (\S+ ?\S*); (\d+) requests; go_tls_writes (\d+), \d+ goroutines' "
                      r"writes (\d+), returns (\d+), bytes asked (\d+) written (\d+), go_tls_fd_unread 0, "
                      r"(\d+) inside Write at exit, go_tls_reads (\d+), reads (\d+), returns (\d+) "
                      r"\(\d+ parked at exit\), bytes read (\d+), entries repeated (\d+) \(writes\) "
                      r"(\d+) \(reads\)", out)
        self.assertIsNotNone(m, out)
        (src, nreq, kwrites, writes, wrets, asked, written, _, kreads, reads, rrets, bread, wrep,
         rrep) = [m.group(1)] + [int(x) for x in m.groups()[1:]]
        self.assertEqual(src, source)
        self.assertEqual(nreq, requests)
        self.assertEqual(kwrites, writes + wrep, "go_tls_writes = the goroutines' entries")
        self.assertEqual(wrets, writes, "every Write returned through a probed RET")
        self.assertEqual(asked, written)
        self.assertEqual(kreads, reads + rrep, "go_tls_reads = the goroutines' entries")
        self.assertEqual(rrets, reads, "every Read returned through a probed RET")
        self.assertLessEqual(bread, written, "no more read than written")
        if "-h1" in opts:
            self.assertEqual(writes, 2 * requests, out)
            self.assertEqual(bread, written, "what one end wrote the other read")
        return out

    def test_http2_8_goroutines(self):
        self.check("gotls", 300, "-c", "8", source="DWARF")

    def test_http1(self):
        self.check("gotls", 200, "-h1", source="DWARF")

    def test_stripped(self):
        self.check("gotls-stripped", 200, "-h1", source="the table")
        self.check("gotls-stripped", 300, source="the table")

    def test_trimpath(self):
        self.check("gotls-trimpath", 200, "-h1", source="DWARF")
        self.check("gotls-stripped-trimpath", 200, "-h1", source="the table")

    def test_pie(self):
        self.check("gotls-pie-stripped", 200, "-h1", source="the table")

    def test_stack_growth(self):
        """Handlers that grow their goroutines' stacks (Go copies them) while requests run."""
        self.check("gotls", 200, "-deep", "2000", source="DWARF")
        self.check("gotls", 100, "-h1", "-deep", "2000", source="DWARF")

    def test_gomaxprocs(self):
        for procs in ("1", "8"):
            env = dict(os.environ, GOMAXPROCS=procs)
            p = subprocess.run([GOATTACH, os.path.join(GOBIN, "gotls"), "200", "-c", "8"],
                               capture_output=True, text=True, timeout=60, env=env)
            if p.returncode == 77:
                self.skipTest(p.stderr.strip())
            self.assertEqual(p.returncode, 0, "GOMAXPROCS=%s: %s\n%s" % (procs, p.stdout, p.stderr))


class GoTLSDaemonTest(DaemonTestCase):
    def test_daemon_reports_go_counters(self):
        """The daemon loads the Go programs (the discovery attaches them: test_gotls.py) and reports
        their counters; none is attached by the skeleton."""
        d = self.start_daemon()
        k = d.status()["kernel"]
        for name in ("go_tls_writes", "go_tls_reads", "go_tls_fd_unread"):
            self.assertIsInstance(k.get(name), int, k)


if __name__ == "__main__":
    unittest.main()
