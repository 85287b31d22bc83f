"""The systemd-resolved topology (issue 35): a stub resolver on 127.0.0.53 that forwards to an
upstream nameserver; the stub and its upstream are separate dependencies, and the callers tell who
asked: the client's cgroup for the stub, the stub's own cgroup for the upstream. Debian's unbound
stands in for systemd-resolved (installing resolved would take over the shared host's
/etc/resolv.conf); what depwatch sees is the same: UDP queries from a client to 127.0.0.53:53, and
from the stub's process to its upstream's port 53. In a network namespace of the test's own, with
two cgroups of its own under the cgroup v2 root."""

import os
import subprocess as sp
import sys
import tempfile
import unittest

from harness import dependency, start_configured
from dnsnet import NET, UPSTREAM_ADDR, Netns, Unbound

STUB = "127.0.0.53"
UPSTREAM = NET + ".21"
TAG = "dw45-%d" % os.getpid()

# dns_timeout 1s: readiness digs sent before the stub listens are done with soon
CONFIG = """[dependency resolved_stub]
match = {stub}:53
dns_timeout = 1s
[dependency upstream_ns]
match = {up}:53
dns_timeout = 1s
""".format(stub=STUB, up=UPSTREAM)

# The stub: unbound on 127.0.0.53 forwarding everything to the upstream. unbound's own
# do-not-query-localhost keeps it from asking 127/8; off here (the upstream is on 127/8).
STUB_CONF = """server:
  interface: {stub}
  port: 53
  do-daemonize: no
  use-syslog: no
  logfile: "{log}"
  log-queries: yes
  verbosity: 0
  chroot: ""
  username: ""
  directory: "{dir}"
  pidfile: ""
  do-not-query-localhost: no
  module-config: "iterator"
  qname-minimisation: no
  access-control: 127.0.0.0/8 allow
  num-threads: 1
  cache-max-ttl: 0
  cache-max-negative-ttl: 0
  # test. is one of unbound's default local zones (RFC 6761): the stub forwards it instead
  local-zone: "test." nodefault
forward-zone:
  name: "."
  forward-addr: {up}@53
remote-control:
  control-enable: no
"""

# Joins the cgroup argv[1], then execs argv[2:] (`ip netns exec ...`: it mounts a sysfs of the
# namespace's own, without the cgroup v2 tree, so the cgroup is joined before it).
JOIN = r'''
import os, sys
with open(os.path.join(sys.argv[1], "cgroup.procs"), "w") as f:
    f.write(str(os.getpid()))
os.execvp(sys.argv[2], sys.argv[2:])
'''


def cgroup2_mount():
    with open("/proc/self/mounts") as f:
        for line in f:
            parts = line.split()
            if len(parts) > 2 and parts[2] == "cgroup2":
                return parts[1]
    return None


@unittest.skipUnless(all(os.path.exists(p) for p in ("/usr/sbin/unbound", "/usr/bin/dig")),
                     "needs unbound and dig (scripts/deps.sh)")
class DnsStubTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls._cleanups = []
        try:
            root = cgroup2_mount()
            if not root or os.geteuid() != 0:
                raise unittest.SkipTest("needs root and a cgroup v2 mount")
            cls.root = root
            cls.cg = {}
            for kind in ("stub", "client"):
                cg = os.path.join(root, "%s-%s.service" % (TAG, kind))
                os.mkdir(cg)
                cls._cleanups.append(lambda cg=cg: cls.rmdir(cg))
                cls.cg[kind] = cg
            cls.ns = Netns([STUB])
            cls._cleanups.append(cls.ns.close)
            cls.up = Unbound(cls.ns, UPSTREAM, "%s@5300" % UPSTREAM_ADDR)
            cls._cleanups.append(cls.up.close)
            cls.dir = tempfile.mkdtemp(prefix="dwdns-stub-")
            conf = os.path.join(cls.dir, "stub.conf")
            cls.stub_log = os.path.join(cls.dir, "stub.log")
            with open(conf, "w") as f:
                f.write(STUB_CONF.format(stub=STUB, log=cls.stub_log, dir=cls.dir, up=UPSTREAM))
            cls.d = start_configured(cls._cleanups.append, CONFIG)
            cls.stub = sp.Popen([sys.executable, "-c", JOIN, cls.cg["stub"], "ip", "netns", "exec", cls.ns.name,
                                 "unbound", "-d", "-c", conf], stdout=sp.DEVNULL, stderr=sp.DEVNULL)
            cls._cleanups.append(lambda: (cls.stub.kill(), cls.stub.wait()))
            for _ in range(100):
                r = cls.ns.run(["dig", "+tries=1", "+time=1", "@" + STUB, "a.test"],
                               capture_output=True, text=True)
                if r.returncode == 0 and "status: NOERROR" in r.stdout:
                    break
            else:
                raise RuntimeError("the stub on %s does not answer" % STUB)
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def rmdir(cls, cg):
        with open(os.path.join(cg, "cgroup.procs")) as f:
            pids = f.read().split()
        for pid in pids:
            try:
                with open(os.path.join(cls.root, "cgroup.procs"), "w") as f:
                    f.write(pid)
            except OSError:
                pass
        os.rmdir(cg)

    @classmethod
    def tearDownClass(cls):
        for fn in reversed(cls._cleanups):
            try:
                fn()
            except Exception:
                pass

    def test_stub_and_upstream_are_separate_and_callers_tell_who_asked(self):
        # the readiness digs done with (answered, or failed at their dns_timeout)
        st = self.d.wait_for(lambda s: dependency(s, "resolved_stub")["calls"] >= 1
                             and dependency(s, "resolved_stub")["inflight"] == 0
                             and dependency(s, "upstream_ns")["calls"] >= 1
                             and dependency(s, "upstream_ns")["inflight"] == 0)
        was_stub, was_up = dependency(st, "resolved_stub"), dependency(st, "upstream_ns")
        was_up_log = self.up.queries()
        # getaddrinfo in the client's cgroup, through resolv.conf's nameserver 127.0.0.53:
        # A and AAAA of 20 lookups (the stub's cache is off: each is asked upstream)
        script = ("import socket\nfor i in range(20):\n"
                  "    socket.getaddrinfo('a.test', 80, 0, socket.SOCK_STREAM)\n")
        r = sp.run([sys.executable, "-c", JOIN, self.cg["client"], "ip", "netns", "exec", self.ns.name,
                    sys.executable, "-c", script], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        up_logged = self.up.queries() - was_up_log
        self.assertGreaterEqual(up_logged, 40, "the stub asked its upstream for each")
        st = self.d.wait_for(lambda s: dependency(s, "resolved_stub")["calls"] - was_stub["calls"] >= 40
                             and dependency(s, "upstream_ns")["calls"] - was_up["calls"] >= up_logged)
        stub, up = dependency(st, "resolved_stub"), dependency(st, "upstream_ns")
        print("\n  dns stub: client -> %s %d calls; stub -> upstream %d calls (the upstream logged %d)"
              % (STUB, stub["calls"] - was_stub["calls"], up["calls"] - was_up["calls"], up_logged))
        self.assertEqual(stub["calls"] - was_stub["calls"], 40, "A and AAAA of 20 lookups")
        self.assertEqual(up["calls"] - was_up["calls"], up_logged)
        names = lambda dep: {c["caller"] for c in dep["callers"]}
        client_name, stub_name = "%s-client.service" % TAG, "%s-stub.service" % TAG
        self.assertIn(client_name, names(stub), stub["callers"])
        self.assertNotIn(stub_name, names(stub))
        self.assertIn(stub_name, names(up), up["callers"])
        self.assertNotIn(client_name, names(up))
        rows = {r["dest"] for r in st["destinations"] if r["netns"] == self.ns.inode()}
        self.assertIn(STUB + ":53", rows)
        self.assertIn(UPSTREAM + ":53", rows)


if __name__ == "__main__":
    unittest.main()
