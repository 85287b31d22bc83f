"""The Debian package (`make deb`, debian/): its files (the monitoring mixin's
rules in /etc/prometheus/depwatch as conffiles, its dashboards in
/usr/share/depwatch/dashboards, doc/runbooks.md uncompressed in
/usr/share/doc/depwatch), its Depends as dpkg-shlibdeps computed them, lintian
with nothing left but the overrides debian/ explains; then installed on this
machine with `dpkg -i`: `depwatch --version` prints the package's version,
`depwatch check` accepts the installed config, promtool the installed rules,
every alert's runbook_url opens the installed runbooks at its section,
`systemd-analyze verify` passes the unit, which is neither enabled nor started; `dpkg -r` keeps the config (a conffile), `dpkg
-P` removes it.

The package is `make test`'s (DW_DEB, built once for both backend runs), or
built here into a scratch directory (about a minute). Whatever the package
would overwrite on this machine is moved aside first and put back after the
purge; a machine where a depwatch package is installed already is left alone
(skipped)."""

import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest

import harness

CONF = "/etc/depwatch/depwatch.conf"
UNIT = "/lib/systemd/system/depwatch.service"
BINARY = "/usr/sbin/depwatch"
WANTS = "/etc/systemd/system/multi-user.target.wants/depwatch.service"
# The monitoring mixin (doc/fleet.md): its rendered rules, conffiles an operator may edit, and dashboards.
RULES_DIR = "/etc/prometheus/depwatch"
RULES = [RULES_DIR + "/" + f for f in ("prometheus_alerts.yaml", "prometheus_rules.yaml", "alertmanager_inhibit_rules.yaml")]
DASHBOARDS = ["/usr/share/depwatch/dashboards/depwatch-%s.json" % d for d in ("dependency", "fleet", "host")]
# doc/runbooks.md, uncompressed: every alert's runbook_url opens it (file://RUNBOOKS#alertname).
RUNBOOKS = "/usr/share/doc/depwatch/runbooks.md"


def check_runbook_urls(tc, alerts_file, runbooks):
    """Every alert in alerts_file has runbook_url file://RUNBOOKS#anchor, where anchor is its
    name in lower case and runbooks has a section "## Name" (the anchor a Markdown viewer makes)."""
    with open(alerts_file) as f:
        text = f.read()
    names = re.findall(r'(?m)^\s+- alert: "?(\w+)"?$', text)
    urls = re.findall(r'(?m)^\s+runbook_url: "?([^"\n]+)"?$', text)
    tc.assertEqual(len(urls), len(names), "one runbook_url per alert")
    tc.assertTrue(names)
    with open(runbooks) as f:
        sections = {n.lower() for n in re.findall(r"(?m)^## (\w+)$", f.read())}
    tc.assertEqual(sorted(urls), sorted("file://%s#%s" % (runbooks, n.lower()) for n in names))
    tc.assertEqual(sorted(n for n in names if n.lower() not in sections), [])


def run(argv, timeout=120, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)


def changelog_version():
    with open(os.path.join(harness.REPO, "debian", "changelog")) as f:
        return re.match(r"depwatch \(([^)]+)\) ", f.readline()).group(1)


def package_status():
    r = run(["dpkg-query", "-W", "-f=${Status}", "depwatch"])
    return r.stdout if r.returncode == 0 else ""


def running(exe):
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink("/proc/%s/exe" % pid) == exe:
                pids.append(int(pid))
        except OSError:
            pass
    return pids


def dpkg(*args):
    """dpkg, waiting out another dpkg or apt that holds the lock (up to a minute)."""
    deadline = time.monotonic() + 60
    while True:
        r = run(["dpkg"] + list(args), timeout=300)
        if r.returncode == 0 or "lock" not in r.stderr or time.monotonic() > deadline:
            return r
        time.sleep(2)


@harness.backend_independent
@unittest.skipIf(os.geteuid() != 0, "not root: installs and removes a package with dpkg")
class DebTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.version = changelog_version()
        cls.arch = run(["dpkg", "--print-architecture"]).stdout.strip()
        cls.built_here = None
        cls.deb = os.environ.get("DW_DEB")
        if not cls.deb:
            cls.built_here = tempfile.mkdtemp(prefix="dwtest-deb-")
            start = time.monotonic()
            # nocheck: the unit tests are make test's (and `make deb` runs them otherwise)
            r = run(["make", "-s", "-C", harness.REPO, "OUT=" + cls.built_here, "deb"], timeout=900,
                    env=dict(os.environ, DEB_BUILD_OPTIONS="nocheck"))
            print("\n  make deb: exit %d in %.0f s" % (r.returncode, time.monotonic() - start))
            if r.returncode != 0:
                shutil.rmtree(cls.built_here, True)
                raise AssertionError("make deb failed:\n" + r.stdout + r.stderr)
            cls.deb = os.path.join(cls.built_here, "depwatch_%s_%s.deb" % (cls.version, cls.arch))

    @classmethod
    def tearDownClass(cls):
        if cls.built_here:
            shutil.rmtree(cls.built_here, True)

    def field(self, name):
        return run(["dpkg-deb", "-f", self.deb, name]).stdout.strip()

    def test_name_version_and_tree_left_clean(self):
        self.assertEqual(os.path.basename(self.deb), "depwatch_%s_%s.deb" % (self.version, self.arch))
        self.assertEqual(self.field("Version"), self.version)
        if self.built_here and os.path.isdir(os.path.join(harness.REPO, ".git")):
            # dpkg-buildpackage's leftovers (debian/build, debian/depwatch, debian/files...) are gone
            r = run(["git", "-C", harness.REPO, "status", "--porcelain", "--ignored", "--", "debian"])
            self.assertEqual(r.stdout, "")

    def test_contents(self):
        r = run(["dpkg-deb", "-c", self.deb])
        self.assertEqual(r.returncode, 0, r.stderr)
        files = {}
        for line in r.stdout.splitlines():
            mode, owner, _, _, _, path = line.split(None, 5)
            if not mode.startswith("d"):
                files[path.lstrip(".")] = (mode, owner)
        want = {BINARY: "-rwxr-xr-x", CONF: "-rw-r--r--", UNIT: "-rw-r--r--",
                "/usr/share/man/man8/depwatch.8.gz": "-rw-r--r--",
                "/usr/share/doc/depwatch/copyright": "-rw-r--r--",
                "/usr/share/doc/depwatch/changelog.gz": "-rw-r--r--",
                "/usr/share/lintian/overrides/depwatch": "-rw-r--r--"}
        want.update({p: "-rw-r--r--" for p in RULES + DASHBOARDS + [RUNBOOKS]})
        self.assertEqual({p: m for p, (m, _) in files.items()}, want)
        self.assertEqual({o for _, o in files.values()}, {"root/root"})
        with tempfile.TemporaryDirectory() as d:
            self.assertEqual(run(["dpkg-deb", "-e", self.deb, d]).returncode, 0)
            with open(os.path.join(d, "conffiles")) as f:
                self.assertEqual(sorted(f.read().split()), sorted([CONF] + RULES))
            # neither enabled nor started (dh_installsystemd --no-enable --no-start)
            with open(os.path.join(d, "postinst")) as f:
                postinst = f.read()
            self.assertNotIn("deb-systemd-invoke", postinst)

    def test_depends_computed_by_dpkg_shlibdeps(self):
        depends = self.field("Depends")
        print("\n  Depends: " + depends)
        names = {d.strip().split()[0] for d in depends.split(",")}
        for lib in ("libbpf1", "libmicrohttpd12", "libncursesw6", "libc6"):
            self.assertIn(lib, names)
        # libelf1 and zlib1g: the binary calls none of theirs (no DT_NEEDED, so dpkg-shlibdeps
        # names neither); they are libbpf's, and come with libbpf1's own Depends.
        r = run(["dpkg-query", "-W", "-f=${Depends}", "libbpf1"])
        self.assertEqual(r.returncode, 0, r.stderr)
        for lib in ("libelf1", "zlib1g"):
            self.assertRegex(r.stdout, r"(^|, )%s( |,|$)" % lib)

    def test_lintian_clean_but_the_explained_overrides(self):
        r = run(["lintian", "--info", "--display-info", "--pedantic", "--show-overrides", self.deb],
                timeout=300)
        # the tags and overrides, without lintian's notes (N:)
        print("\n  lintian: exit %d\n%s" % (r.returncode, "\n".join(
            "  " + l for l in r.stdout.splitlines() if not l.startswith("N:"))))
        tags = [l for l in r.stdout.splitlines() if re.match(r"[EWIPXC]: ", l)]
        self.assertEqual(tags, [])
        self.assertEqual(r.returncode, 0, r.stderr)
        # every override is explained by a comment just above it
        with open(os.path.join(harness.REPO, "debian", "depwatch.lintian-overrides")) as f:
            lines = [l.rstrip("\n") for l in f if l.strip()]
        for i, l in enumerate(lines):
            if not l.startswith("#"):
                self.assertTrue(i > 0 and lines[i - 1].startswith("#"), "override without a comment: " + l)

    def test_install_check_verify_remove_purge(self):
        if package_status():
            self.skipTest("a depwatch package is installed on this machine (%s): not replacing it"
                          % package_status())
        self._set_aside()
        self.addCleanup(self._purge)

        r = dpkg("-i", self.deb)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(package_status(), "install ok installed")

        r = run([BINARY, "--version"])
        self.assertEqual((r.returncode, r.stdout), (0, "depwatch %s\n" % self.version))

        r = run([BINARY, "check", "-c", CONF])
        self.assertEqual(r.returncode, 0, r.stderr)
        st = os.stat(CONF)
        self.assertEqual((st.st_uid, st.st_gid, st.st_mode & 0o7777), (0, 0, 0o644))

        r = run(["systemd-analyze", "verify", UNIT], timeout=60)
        print("\n  systemd-analyze verify: exit %d, output %r" % (r.returncode, r.stdout + r.stderr))
        self.assertEqual((r.returncode, r.stdout + r.stderr), (0, ""))
        with open(UNIT) as f:
            self.assertIn("ExecStart=%s run\n" % BINARY, f.read())
        self.assertFalse(os.path.lexists(WANTS), "enabled on install")
        self.assertEqual(running(BINARY), [], "started on install")

        r = run(["dpkg-query", "-W", "-f=${Conffiles}", "depwatch"])
        self.assertEqual(sorted(r.stdout.split()[0::2]), sorted([CONF] + RULES))
        # the rules as installed are the ones promtool accepts
        r = run(["promtool", "check", "rules"] + RULES[:2])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        # every alert's runbook_url opens the installed runbooks, at a section of its alert
        check_runbook_urls(self, RULES[0], RUNBOOKS)
        with open(RUNBOOKS) as f, open(os.path.join(harness.REPO, "doc", "runbooks.md")) as g:
            self.assertEqual(f.read(), g.read())

        # the admin edits the config; dpkg -r keeps it, as edited
        with open(CONF, "a") as f:
            f.write("# edited by test_deb\n")
        with open(CONF) as f:
            edited = f.read()
        r = dpkg("-r", "depwatch")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(package_status(), "deinstall ok config-files")
        for p in [BINARY, UNIT, "/usr/share/man/man8/depwatch.8.gz", RUNBOOKS] + DASHBOARDS:
            self.assertFalse(os.path.lexists(p), p)
        for p in RULES:     # conffiles too
            self.assertTrue(os.path.exists(p), p)
        with open(CONF) as f:
            self.assertEqual(f.read(), edited)

        r = dpkg("-P", "depwatch")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(package_status(), "")
        self.assertFalse(os.path.lexists("/etc/depwatch"))
        self.assertFalse(os.path.lexists(RULES_DIR))
        self.assertFalse(os.path.lexists("/usr/share/depwatch"))

    def _set_aside(self):
        """Moves what the package would overwrite (a `make install` into /usr, say) to a scratch
        directory; _purge puts it back."""
        self.aside = tempfile.mkdtemp(prefix="dwtest-deb-aside-")
        self.moved = []
        for p in ("/etc/depwatch", BINARY, UNIT, "/usr/share/man/man8/depwatch.8.gz",
                  "/usr/share/doc/depwatch", "/usr/share/lintian/overrides/depwatch", RULES_DIR, "/usr/share/depwatch"):
            if os.path.lexists(p):
                dst = os.path.join(self.aside, p.strip("/").replace("/", "%"))
                shutil.move(p, dst)
                self.moved.append((dst, p))

    def _purge(self):
        if package_status():
            r = dpkg("-P", "depwatch")
            if r.returncode != 0:
                print("\n  cleanup: dpkg -P depwatch: %s" % (r.stdout + r.stderr))
        for src, dst in self.moved:
            if os.path.lexists(dst):  # whatever the purge left (it should leave nothing)
                if os.path.isdir(dst) and not os.path.islink(dst):
                    shutil.rmtree(dst)
                else:
                    os.unlink(dst)
            shutil.move(src, dst)
        shutil.rmtree(self.aside, True)


if __name__ == "__main__":
    unittest.main()
