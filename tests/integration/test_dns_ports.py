"""dns_ports (issue 35): a resolver on a port other than 53 is seen only while the config lists its
port. Debian's unbound in a network namespace of the test's own on 45053 beside one on 53, dig as the
client: with dns_ports = 53, 45053 its queries are calls (the counts unbound logged) and enforcement
refuses it while its breaker is open; a reload to the default (53 alone) stops them being calls while
the resolver on 53 still counts. `depwatch check` shows the list."""

import os
import signal
import subprocess as sp
import unittest

from harness import DEPWATCH, dependency, start_configured
from dnsnet import NET, UPSTREAM_ADDR, Netns, Unbound, dig_times, query, send_datagrams

ALT_PORT = 45053  # this test's own port range (45000-45999)
STD, ALT = NET + ".11", NET + ".12"

CONFIG = """[defaults]
dns_ports = 53, {alt}
[dependency dns_std]
match = {std}:53
[dependency dns_alt]
match = {altaddr}:{alt}
dns_timeout = 2s
enforce = connect
"""


def config(ports_line=True):
    text = CONFIG.format(alt=ALT_PORT, std=STD, altaddr=ALT)
    return text if ports_line else text.replace("dns_ports = 53, %d\n" % ALT_PORT, "")


@unittest.skipUnless(all(os.path.exists(p) for p in ("/usr/sbin/unbound", "/usr/bin/dig")),
                     "needs unbound and dig (scripts/deps.sh)")
class DnsPortsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls._cleanups = []
        try:
            cls.ns = Netns([STD])
            cls._cleanups.append(cls.ns.close)
            # upstream: nothing answers there; these tests ask only the local zone
            cls.std = Unbound(cls.ns, STD, "%s@5300" % UPSTREAM_ADDR)
            cls._cleanups.append(cls.std.close)
            cls.alt = Unbound(cls.ns, ALT, "%s@5300" % UPSTREAM_ADDR, port=ALT_PORT)
            cls._cleanups.append(cls.alt.close)
            cls.d = start_configured(cls._cleanups.append, config())
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        for fn in reversed(cls._cleanups):
            try:
                fn()
            except Exception:
                pass

    def dep(self, name, st=None):
        return dependency(st or self.d.status(), name)

    def digs(self, n):
        """n digs to each resolver, interleaved, and one more to the one on 53 last (once depwatch
        counts that one, it has counted the others: the kernel counts at the send); returns how
        many queries each logged meanwhile."""
        was_std, was_alt = self.std.queries(), self.alt.queries()
        for i in range(n):
            self.assertEqual(len(dig_times(self.ns, STD, ["a.test"])), 1)
            self.assertEqual(len(dig_times(self.ns, ALT, ["a.test"], port=ALT_PORT)), 1)
        self.assertEqual(len(dig_times(self.ns, STD, ["a.test"])), 1)
        return self.std.queries() - was_std, self.alt.queries() - was_alt

    def test_check_shows_the_list(self):
        r = sp.run([DEPWATCH, "check", "-c", self.conf_path()], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("\ndns_ports = 53, %d\n" % ALT_PORT, r.stdout)

    def conf_path(self):
        return self.d.events[: -len(".events")]  # start_configured's events file is the config's name + .events

    def test_counts_on_a_listed_port(self):
        was_std, was_alt = self.dep("dns_std"), self.dep("dns_alt")
        n_std, n_alt = self.digs(20)
        self.assertGreaterEqual(n_alt, 20)
        st = self.d.wait_for(lambda s: self.dep("dns_alt", s)["calls"] - was_alt["calls"] >= n_alt
                             and self.dep("dns_std", s)["calls"] - was_std["calls"] >= n_std)
        now = self.dep("dns_alt", st)
        print("\n  dns_ports: unbound on %d logged %d queries; depwatch %d queries, %d calls"
              % (ALT_PORT, n_alt, now["dns_queries"] - was_alt["dns_queries"], now["calls"] - was_alt["calls"]))
        self.assertEqual(now["dns_queries"] - was_alt["dns_queries"], n_alt)
        self.assertEqual(now["calls"] - was_alt["calls"], n_alt)
        self.assertEqual(now["failed"] - was_alt["failed"], 0)
        self.assertEqual(self.dep("dns_std", st)["calls"] - was_std["calls"], n_std)
        rows = [r for r in st["destinations"] if r["dest"] == "%s:%d" % (ALT, ALT_PORT)
                and r["netns"] == self.ns.inode()]
        self.assertEqual(len(rows), 1, "the resolver on %d is a destination" % ALT_PORT)

    def test_enforce_on_a_listed_port(self):
        r = sp.run([DEPWATCH, "breaker", "open", "dns_alt", "--run-dir", self.d.run_dir], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        try:
            self.d.wait_for(lambda s: self.dep("dns_alt", s)["breaker"] == "open")
            q = query(0x4545, "a.test").hex()
            said = send_datagrams(self.ns, [[ALT, ALT_PORT, q, True, 0], [ALT, ALT_PORT, q, False, 0]])
            self.assertEqual(said, ["ECONNREFUSED", "ECONNREFUSED"], "connect() and sendto() refused")
        finally:
            sp.run([DEPWATCH, "breaker", "auto", "dns_alt", "--run-dir", self.d.run_dir], capture_output=True)
        self.d.wait_for(lambda s: self.dep("dns_alt", s)["breaker"] == "closed")

    # named to run last: it takes the port away
    def test_z_reload_without_the_key(self):
        with open(self.conf_path(), "w") as f:
            f.write(config(ports_line=False))
        self.d.proc.send_signal(signal.SIGHUP)
        self.d.wait_for(lambda s: "reloaded" in self.d.stderr_text(), timeout=10)
        self.assertIn("reloaded", self.d.stderr_text())
        r = sp.run([DEPWATCH, "check", "-c", self.conf_path()], capture_output=True, text=True)
        self.assertIn("\ndns_ports = 53\n", r.stdout)
        was_std, was_alt = self.dep("dns_std"), self.dep("dns_alt")
        n_std, n_alt = self.digs(10)
        self.assertGreaterEqual(n_alt, 10, "unbound on %d still answers" % ALT_PORT)
        st = self.d.wait_for(lambda s: self.dep("dns_std", s)["calls"] - was_std["calls"] >= n_std)
        self.assertEqual(self.dep("dns_std", st)["calls"] - was_std["calls"], n_std)
        now = self.dep("dns_alt", st)
        self.assertEqual(now["dns_queries"] - was_alt["dns_queries"], 0, "port %d is no DNS port now" % ALT_PORT)
        self.assertEqual(now["calls"] - was_alt["calls"], 0)


if __name__ == "__main__":
    unittest.main()
