"""`make install DESTDIR=...`: the files, their modes and owners; the unit
passes `systemd-analyze verify` with nothing printed; depwatch(8) renders with
`man -l` and no groff warning; every alert's runbook_url opens the installed
doc/runbooks.md at its section; an existing config is never overwritten; the
unit's CapabilityBoundingSet is enough for the daemon to start with every
hook attached; `make uninstall` removes what install put there but the config and the
mixin's rules in /etc/prometheus/depwatch (both the admin's); an edited rule file is kept."""

import os
import re
import shutil
import stat
import subprocess
import tempfile
import unittest

import harness
from harness import Daemon, DaemonTestCase

PREFIX = "/usr/local"
UNIT = PREFIX + "/lib/systemd/system/depwatch.service"
# The monitoring mixin, rendered (doc/fleet.md): rules an operator may edit, and dashboards.
RULES = ["/etc/prometheus/depwatch/" + f for f in ("prometheus_alerts.yaml", "prometheus_rules.yaml",
                                                  "alertmanager_inhibit_rules.yaml")]
DASHBOARDS = [PREFIX + "/share/depwatch/dashboards/depwatch-%s.json" % d for d in ("dependency", "fleet", "host")]
# doc/runbooks.md: the rules make install writes point every alert's runbook_url at it.
RUNBOOKS = PREFIX + "/share/doc/depwatch/runbooks.md"
# the unit as make install writes it, but for its paths (@SBINDIR@)
UNIT_SOURCE = os.path.join(harness.REPO, "dist", "depwatch.service.in")
RUNBOOKS_DEFAULT = "file:///usr/share/doc/depwatch/runbooks.md#"     # mixin/config.libsonnet's


def make(*args):
    return subprocess.run(["make", "-s", "-C", harness.REPO] + list(args), capture_output=True, text=True,
                          timeout=300)


class InstallTest(DaemonTestCase):
    def setUp(self):
        super().setUp()
        self.dest = tempfile.mkdtemp(prefix="dwtest-install-")
        self.addCleanup(shutil.rmtree, self.dest, True)
        r = make("install", "DESTDIR=" + self.dest, "PREFIX=" + PREFIX)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def path(self, p):
        return self.dest + p

    def owner_mode(self, p):
        st = os.stat(self.path(p))
        return st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)

    @harness.backend_independent
    def test_files_and_modes(self):
        want = {PREFIX + "/sbin/depwatch": 0o755, PREFIX + "/share/man/man8/depwatch.8": 0o644,
                UNIT: 0o644, "/etc/depwatch/depwatch.conf": 0o644, "/etc/depwatch": 0o755}
        want.update({p: 0o644 for p in RULES + DASHBOARDS + [RUNBOOKS]})
        for p, mode in want.items():
            self.assertEqual(self.owner_mode(p), (0, 0, mode), p)
        with open(self.path(RUNBOOKS)) as f, open(os.path.join(harness.REPO, "doc", "runbooks.md")) as g:
            runbooks = f.read()
            self.assertEqual(runbooks, g.read())
        # every alert's runbook_url is file://PREFIX/share/doc/depwatch/runbooks.md#its-name,
        # a section of the installed file
        with open(self.path(RULES[0])) as f:
            text = f.read()
        names = re.findall(r'(?m)^\s+- alert: "?(\w+)"?$', text)
        self.assertTrue(names)
        self.assertEqual(sorted(re.findall(r'(?m)^\s+runbook_url: "?([^"\n]+)"?$', text)),
                         sorted("file://%s#%s" % (RUNBOOKS, n.lower()) for n in names))
        sections = {n.lower() for n in re.findall(r"(?m)^## (\w+)$", runbooks)}
        self.assertEqual(sorted(n for n in names if n.lower() not in sections), [])
        with open(self.path(UNIT)) as f:
            self.assertIn("ExecStart=%s/sbin/depwatch run\n" % PREFIX, f.read())
        # the installed config is one the daemon accepts
        r = subprocess.run([self.path(PREFIX + "/sbin/depwatch"), "check", "-c",
                            self.path("/etc/depwatch/depwatch.conf")], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)

    @harness.backend_independent
    def test_existing_config_is_kept(self):
        conf = self.path("/etc/depwatch/depwatch.conf")
        with open(conf, "w") as f:
            f.write("[defaults]\nslow_call = 200ms\n")
        r = make("install", "DESTDIR=" + self.dest, "PREFIX=" + PREFIX)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("kept %s" % conf, r.stdout)
        with open(conf) as f:
            self.assertEqual(f.read(), "[defaults]\nslow_call = 200ms\n")

    @harness.backend_independent
    def test_edited_rules_are_kept(self):
        """An edited rule file stays; the new rendering goes beside it as FILE.new. An unedited one
        is replaced (make install again writes the same file: nothing is set aside)."""
        rules = self.path(RULES[0])
        with open(rules, "a") as f:
            f.write("# edited\n")
        r = make("install", "DESTDIR=" + self.dest, "PREFIX=" + PREFIX)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("kept %s (edited; the new rendering is prometheus_alerts.yaml.new)" % rules, r.stdout)
        with open(rules) as f:
            self.assertTrue(f.read().endswith("# edited\n"))
        # make mixin's rendering, its runbook_url pointed at the runbooks of this PREFIX
        with open(rules + ".new") as f, open(os.path.join(harness.REPO, "build", "mixin", "prometheus_alerts.yaml")) as g:
            rendered = g.read()
            self.assertIn(RUNBOOKS_DEFAULT, rendered)
            self.assertEqual(f.read(), rendered.replace(RUNBOOKS_DEFAULT, "file://%s#" % RUNBOOKS))
        self.assertFalse(os.path.exists(self.path(RULES[1]) + ".new"))

    @harness.backend_independent
    def test_systemd_analyze_verify_prints_nothing(self):
        # The unit names /usr/local/sbin/depwatch and man:depwatch(8): verify sees the
        # installed tree there, in a mount namespace of its own.
        r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                            'mount --bind "$0" %s && MANPATH=%s/share/man systemd-analyze verify %s'
                            % (PREFIX, PREFIX, UNIT), self.path(PREFIX)],
                           capture_output=True, text=True, timeout=60)
        print("\n  systemd-analyze verify: exit %d, output %r" % (r.returncode, r.stdout + r.stderr))
        self.assertEqual((r.returncode, r.stdout + r.stderr), (0, ""))

    @harness.backend_independent
    def test_man_page_renders_without_warnings(self):
        page = self.path(PREFIX + "/share/man/man8/depwatch.8")
        r = subprocess.run(["man", "--warnings", "-l", page], capture_output=True, text=True,
                           env=dict(os.environ, MANWIDTH="80", MANPAGER="cat", PAGER="cat"))
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        for section in ("NAME", "SYNOPSIS", "COMMANDS", "OPTIONS OF RUN", "CONFIGURATION", "FILES",
                        "SIGNALS", "EXIT STATUS"):
            self.assertRegex(r.stdout, r"(?m)^%s$" % section)
        # every option `run --help` lists is in the page
        usage = subprocess.run([harness.DEPWATCH, "run", "--help"], capture_output=True, text=True).stdout
        for opt in set(re.findall(r"--[a-z-]+", usage)) - {"--help"}:
            self.assertIn(opt, r.stdout.replace("\u2010", "-"), opt)

    @harness.backend_independent
    def test_unit_allows_the_daemons_address_families(self):
        """RestrictAddressFamilies= lets through every family the daemon opens a socket of (a
        family left out fails only at run time, under systemd: e.g. AF_NETLINK, sock_diag's, would
        silently leave a 6.1 host without its abort path)."""
        with open(self.path(UNIT)) as f:
            allowed = re.search(r"(?m)^RestrictAddressFamilies=(.*)$", f.read()).group(1).split()
        opened = set()
        # every source of user/, in its folders (user/kernel/sockdiag.c opens sock_diag's AF_NETLINK)
        for dirpath, _, names in os.walk(os.path.join(harness.REPO, "user")):
            for name in names:
                if name.endswith(".c"):
                    with open(os.path.join(dirpath, name)) as f:
                        opened |= set(re.findall(r"\bsocket\((AF_[A-Z0-9]+)", f.read()))
        # metrics.c opens the family of the address given (--metrics): AF_INET or AF_INET6
        opened |= {"AF_INET", "AF_INET6"}
        self.assertIn("AF_NETLINK", opened)
        self.assertEqual(sorted(opened - set(allowed)), [], "allowed: %s" % allowed)

    @harness.backend_independent
    def test_uninstall_keeps_the_config(self):
        r = make("uninstall", "DESTDIR=" + self.dest, "PREFIX=" + PREFIX)
        self.assertEqual(r.returncode, 0, r.stderr)
        left = sorted(os.path.relpath(os.path.join(dp, f), self.dest)
                      for dp, _, fs in os.walk(self.dest) for f in fs)
        self.assertEqual(left, sorted(["etc/depwatch/depwatch.conf"] + [r.lstrip("/") for r in RULES]))
        self.assertFalse(os.path.exists(self.path(PREFIX + "/share/depwatch")))
        self.assertFalse(os.path.exists(self.path(os.path.dirname(RUNBOOKS))))



class UnitCapabilitiesTest(DaemonTestCase):
    """The unit's capability set, read from its source (make install copies it with only
    @SBINDIR@ replaced), so that no `make install` runs for it: in the kernel stage's guest that
    make, stating every source over 9p under emulation, took 117 s of the test's 137 (2026-12-07)."""

    def test_unit_capabilities_are_enough(self):
        with open(UNIT_SOURCE) as f:
            caps = re.search(r"(?m)^CapabilityBoundingSet=(.*)$", f.read()).group(1).split()
        bounding = "-all," + ",".join("+" + c[4:].lower() for c in caps)

        class Bounded(Daemon):
            @property
            def argv(self):
                return ["setpriv", "--bounding-set", bounding, "--inh-caps", "-all"] + super().argv

        d = Bounded(extra_args=["--group", "nogroup"])
        self._daemons.append(d)
        self.addCleanup(d.cleanup)
        d.start()
        self.assertIn("not attached: none", d.stderr_text(), "with only %s: %s" % (caps, d.stderr_text()))
        # the TLS discovery after the start, with what the daemon kept of the set: a process
        # started now (its maps read, its libssl given uprobes) is traced
        libdir = tempfile.mkdtemp(prefix="dwtest-install-tls-")
        self.addCleanup(shutil.rmtree, libdir, True)
        shutil.copy("/usr/lib/x86_64-linux-gnu/libssl.so.3", libdir)
        lib = os.path.join(libdir, "libssl.so.3")
        p = subprocess.Popen(["/usr/bin/python3", "-c", "import ssl, sys; print(1, flush=True); sys.stdin.read()"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=dict(os.environ, LD_LIBRARY_PATH=libdir))
        self.addCleanup(p.wait)
        self.addCleanup(p.kill)
        p.stdout.readline()
        s = d.wait_for(lambda s: any(f["path"] == lib and f["attached"] for f in s["tls"]["files"]), timeout=5,
                       what="the private libssl attached")
        self.assertTrue(any(f["path"] == lib and f["attached"] for f in s["tls"]["files"]),
                        "with only %s: %s" % (caps, s["tls"]))


if __name__ == "__main__":
    unittest.main()
