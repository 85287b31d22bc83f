"""A kernel without a hook depwatch uses, simulated with --without HOOK: the
daemon logs one line naming what is missing and what that costs, and the rest
still works (checked with traffic whose figures the test knows); without a
hook it cannot do without, it refuses to start with one clear error."""

import errno
import os
import re
import socket
import subprocess
import tempfile
import time
import unittest

from loopback import bind_fresh_port
import harness
from harness import Client, DEPWATCH, Daemon, DaemonError, DaemonTestCase, LoopbackServer
from dnsnet import query

BACKEND = harness.BACKEND_IN_USE


class WithoutTest(DaemonTestCase):
    def without_lines(self, d):
        return [l for l in d.stderr_lines if l.startswith("depwatch: warning: running without ")]

    def config(self, text):
        fd, path = tempfile.mkstemp(prefix="dwtest-", suffix=".conf")
        with os.fdopen(fd, "w") as f:
            f.write(text)
        self.addCleanup(os.unlink, path)
        return path

    def exact_calls(self, d, n=7):
        """n calls on a new connection: counted exactly, nothing left in flight."""
        srv = LoopbackServer()
        self.addCleanup(srv.close)
        c = Client("127.0.0.1", srv.port)
        self.addCleanup(c.close)
        for _ in range(n):
            c.call()
        row, _ = d.wait_dest(srv.dest, lambda r: r["calls"] == n)
        self.assertRow(row, {"calls": n, "failed": 0, "inflight": 0, "connects": 1}, srv.dest)

    def test_without_an_optional_tracing_hook(self):
        hook, loss = {"sock": ("sk_data_ready", "calls complete at the receive, not at data arrival"),
                      "syscalls": ("syscalls/readv", "calls made with readv() are not seen")}[BACKEND]
        d = self.start_daemon(extra_args=["--without", hook])
        self.assertEqual(self.without_lines(d),
                         ["depwatch: warning: running without %s: %s; everything else works" % (hook, loss)])
        programs = d.status()["kernel"]["programs"]
        attached, not_attached = programs.split("; not attached:")
        self.assertNotRegex(attached, r"[ {,]%s[ },]" % hook.split("/")[-1])
        self.assertIn("%s (absent (--without): %s)" % (hook, loss), not_attached)
        self.exact_calls(d)

    def test_without_the_cgroup_connect_hooks(self):
        lst = bind_fresh_port(socket.socket, "127.0.0.1")
        lst.listen(16)
        self.addCleanup(lst.close)
        port = lst.getsockname()[1]
        conf = self.config("[dependency pay]\nmatch = 127.0.0.1:%d\nenforce = connect\n" % port)
        d = self.start_daemon(extra_args=["-c", conf, "--without", "cgroup/connect4,cgroup/connect6"])
        lines = self.without_lines(d)
        self.assertEqual(len(lines), 1, d.stderr_text())
        self.assertIn("cgroup/connect4: IPv4 connects are not refused while a breaker is open "
                      "(breakers are still judged); cgroup/connect6: IPv6", lines[0])
        r = subprocess.run([DEPWATCH, "breaker", "open", "pay", "--run-dir", d.run_dir],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        st = d.status()
        self.assertEqual([x["breaker"] for x in st["dependencies"] if x["name"] == "pay"], ["open"])
        # With the hooks this connect fails with ECONNREFUSED (test_enforce); without, it goes through.
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.close()
        self.exact_calls(d)

    def test_without_the_dns_hooks(self):
        """DNS withheld (issue 46: its reads are the sock backend's sock_send_length program and
        sk_data_ready's UDP branch, the syscalls backend's system call programs; one name, dns):
        none of it is loaded, and the close program goes with it."""
        d = self.start_daemon(extra_args=["--without", "dns"])
        self.assertEqual(self.without_lines(d), [
            "depwatch: warning: running without dns: DNS queries over UDP are not calls; everything else works"])
        not_attached = d.status()["kernel"]["programs"].split("; not attached:")[1]
        self.assertIn("dns (absent (--without): DNS queries over UDP are not calls)", not_attached)
        self.assertIn("cgroup/sock_release (absent (--without): DNS queries over UDP are not calls)", not_attached)
        self.exact_calls(d)

    def test_without_the_dns_close_path(self):
        """The close program withheld (issue 48): DNS queries are still calls, but one whose socket
        closes unanswered stays in flight until its dns_timeout (5 s) instead of failing at the close
        (test_dns's test_given_up_queries_fail_at_close: within a poll)."""
        loss = "a DNS query whose socket closes unanswered fails at its dns_timeout, not at the close"
        d = self.start_daemon(extra_args=["--without", "cgroup/sock_release"])
        self.assertEqual(self.without_lines(d), [
            "depwatch: warning: running without cgroup/sock_release: %s; everything else works" % loss])
        attached, not_attached = d.status()["kernel"]["programs"].split("; not attached:")
        self.assertIn(" dns ", attached)
        self.assertIn("cgroup/sock_release (absent (--without): %s)" % loss, not_attached)
        # nothing listens on 127.9.9.9:53: the query is never answered, and its socket closes at once
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.sendto(query(0x4848, "gone.test"), ("127.9.9.9", 53))
        s.close()
        d.wait_dest("127.9.9.9:53", lambda r: r["dns_queries"] == 1)
        time.sleep(1)   # four polls after the close
        self.assertRow(d.dest("127.9.9.9:53"), {"dns_queries": 1, "failed": 0, "inflight": 1}, "127.9.9.9:53")
        self.exact_calls(d)

    def test_without_the_adopting_iterator(self):
        before = LoopbackServer()
        self.addCleanup(before.close)
        old = Client("127.0.0.1", before.port)   # open before the daemon starts
        self.addCleanup(old.close)
        d = self.start_daemon(extra_args=["--without", "iter/tcp"])
        self.assertEqual(self.without_lines(d), [
            "depwatch: warning: running without iter/tcp: connections open before the start are "
            "not watched, only new ones; everything else works"])
        for _ in range(3):
            old.call()
        self.exact_calls(d)   # a new connection is watched; by then the old one's calls are in too
        self.assertIsNone(d.dest(before.dest), "a connection open before the start was adopted")

    def test_without_tls_names_its_own_reason(self):
        """The TLS hook explains itself with its own loss (issue 47: it read the table's row [6],
        the sendmsg4 hook's since DNS added rows before it): the whole text, on the start line
        and in status. The kernel cannot be made to refuse the TLS programs honestly; the
        refusal's text, made by the same function, is checked whole in tests/unit/test_hooks.c."""
        loss = "TLS libraries get no uprobes: calls over TLS are timed from their records (doc/tls.md)"
        why = "absent (--without): " + loss
        d = self.start_daemon(extra_args=["--without", "tls"])
        self.assertEqual(self.without_lines(d),
                         ["depwatch: warning: running without tls: %s; everything else works" % loss])
        st = d.status()
        self.assertEqual(st["tls"]["why"], why, st["tls"])
        not_attached = st["kernel"]["programs"].split("; not attached:")[1]
        self.assertRegex(not_attached, r"(^| )tls \(%s\)( |$)" % re.escape(why), not_attached)
        start = [l for l in d.stderr_lines if "; not attached:" in l]
        self.assertEqual(len(start), 1, d.stderr_text())
        self.assertRegex(start[0].split("; not attached:")[1], r"(^| )tls \(%s\)( |$)" % re.escape(why))
        self.exact_calls(d)

    def refused(self, *args):
        d = Daemon(extra_args=list(args))
        self.addCleanup(d.cleanup)
        with self.assertRaises(DaemonError):
            d.start()
        errors = [l for l in d.stderr_lines if l.startswith("depwatch: error: ")]
        self.assertEqual(len(errors), 1, d.stderr_text())
        self.assertEqual(d.proc.returncode, 1)
        return errors[0]

    def test_without_a_required_hook_refuses_to_start(self):
        line = self.refused("--without", "inet_sock_set_state")
        self.assertIn("lacks the tracepoint inet_sock_set_state (simulated by --without), which depwatch "
                      "needs: it is how connects and closes are seen", line)
        if BACKEND == "sock":
            # (sock_send_length is needed only where tcp_sendmsg_locked is missing; receives always)
            line = self.refused("--backend", "sock", "--without", "sock_recv_length")
            self.assertIn("lacks the tracepoint sock_recv_length (simulated by --without), which the sock "
                          "backend needs", line)
        else:
            line = self.refused("--without", "syscalls/read")
            self.assertIn("cannot run without syscalls/read (simulated by --without)", line)

    def test_unknown_hook_is_an_error(self):
        line = self.refused("--without", "tcp_retransmit_skb,no_such_hook")
        self.assertIn("--without no_such_hook: not a hook of the %s backend" % BACKEND, line)

    @unittest.skipUnless(BACKEND == "sock", "the automatic choice is tested once, in the sock run")
    def test_without_sock_send_length_the_probe_falls_back_to_syscalls(self):
        class AutoDaemon(Daemon):
            @property
            def argv(self):
                return [harness.DEPWATCH, "run", "--pin-dir", self.pin_dir, "--run-dir", self.run_dir,
                        "--without", "sock_send_length"]
        d = AutoDaemon()
        self._daemons.append(d)
        self.addCleanup(d.cleanup)
        d.start()
        self.assertIn("started (backend syscalls (kernel lacks sock_send_length (simulated by --without))",
                      d.stderr_text())
        self.assertEqual(len(self.without_lines(d)), 1, d.stderr_text())
        self.assertEqual(d.status()["kernel"]["backend"], "syscalls")
        self.exact_calls(d)


if __name__ == "__main__":
    unittest.main()
