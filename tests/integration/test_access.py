"""Who may read what: by default the pinned maps and the control socket are
root's only (modes and owners checked, and a non-root user refused); with
--group NAME a member of that group can run `depwatch status` and open the
pinned maps read-only, but cannot force a breaker, and a non-member still
cannot do either. The group and users are created for the test."""

import ctypes
import os
import stat
import subprocess
import sys
import unittest

import harness
from harness import DEPWATCH, DaemonError, DaemonTestCase

# root's own python may live under /root, where the test users cannot go
SYSTEM_PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
PINS = ("breakers", "conns", "dest_slots", "dest_stats", "dest_details", "globals")

# Run as the test user: BPF_OBJ_GET read-only on a pinned map, then one
# BPF_MAP_GET_NEXT_KEY (the read permission is checked before the walk:
# ENOENT is an empty map read, dest_slots before any connect; socket storage
# has no keys to walk, ENOTSUPP: the open is what counts there). Prints 0 or
# the negative errno.
READ_PIN = r'''
import ctypes, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
NR_BPF, OBJ_GET, GET_NEXT_KEY, F_RDONLY = 321, 7, 4, 1 << 3
path = ctypes.create_string_buffer(sys.argv[1].encode())
attr = ctypes.create_string_buffer(struct.pack("QII", ctypes.addressof(path), 0, F_RDONLY), 128)
fd = libc.syscall(NR_BPF, OBJ_GET, attr, 128)
if fd < 0:
    print(-ctypes.get_errno()); sys.exit()
key = ctypes.create_string_buffer(256)
attr = ctypes.create_string_buffer(struct.pack("IIQQ", fd, 0, 0, ctypes.addressof(key)), 128)
ok = libc.syscall(NR_BPF, GET_NEXT_KEY, attr, 128) == 0 or ctypes.get_errno() in (2, 524)
print(0 if ok else -ctypes.get_errno())
'''


def run(*argv):
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=30)


@unittest.skipUnless(os.uname().machine == "x86_64", "the read-only open uses the x86_64 bpf() number")
# Modes, owners and the control socket's refusals, the same whichever backend measures: one pass
# (issue 45).
@harness.backend_independent
class AccessTest(DaemonTestCase):
    @classmethod
    def setUpClass(cls):
        tag = "%d" % os.getpid()
        cls.group = "dwtest-g%s" % tag
        cls.member = "dwtest-m%s" % tag
        cls.outsider = "dwtest-o%s" % tag
        subprocess.run(["groupadd", cls.group], check=True)
        for user, groups in ((cls.member, [cls.group]), (cls.outsider, [])):
            subprocess.run(["useradd", "-M", "-N", "-s", "/usr/sbin/nologin"] +
                           (["-G", ",".join(groups)] if groups else []) + [user], check=True)

    @classmethod
    def tearDownClass(cls):
        for user in (cls.member, cls.outsider):
            subprocess.run(["userdel", user], capture_output=True)
        subprocess.run(["groupdel", cls.group], capture_output=True)

    def as_user(self, user, *argv):
        return run("runuser", "-u", user, "--", *argv)

    def read_pin(self, user, path):
        r = self.as_user(user, SYSTEM_PYTHON, "-c", READ_PIN, path)
        self.assertEqual(r.returncode, 0, r.stderr)
        return int(r.stdout)

    def owner_mode(self, path):
        st = os.stat(path)
        return st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)

    def test_root_only_by_default(self):
        d = self.start_daemon()
        self.assertEqual(self.owner_mode(d.pin_dir), (0, 0, 0o700))
        for name in PINS:
            self.assertEqual(self.owner_mode(os.path.join(d.pin_dir, name)), (0, 0, 0o600), name)
        self.assertEqual(self.owner_mode(d.run_dir), (0, 0, 0o700))
        self.assertEqual(self.owner_mode(os.path.join(d.run_dir, "depwatch.sock")), (0, 0, 0o600))
        r = self.as_user(self.member, DEPWATCH, "status", "--run-dir", d.run_dir)
        self.assertEqual(r.returncode, 1)
        self.assertIn("Permission denied", r.stderr)
        self.assertEqual(self.read_pin(self.member, os.path.join(d.pin_dir, "dest_stats")), -13)  # EACCES

    def test_group_reads_status_and_pins_but_cannot_force(self):
        conf = os.path.join(harness._SCRATCH, "access.conf")
        with open(conf, "w") as f:
            f.write("[dependency pay]\nmatch = 127.0.0.1:9\n")
        os.chmod(conf, 0o600)
        self.addCleanup(os.unlink, conf)
        d = self.start_daemon(extra_args=["--group", self.group, "-c", conf])
        gid = int(run("getent", "group", self.group).stdout.split(":")[2])
        self.assertEqual(self.owner_mode(d.pin_dir), (0, gid, 0o750))
        for name in PINS:
            self.assertEqual(self.owner_mode(os.path.join(d.pin_dir, name)), (0, gid, 0o640), name)
        self.assertEqual(self.owner_mode(d.run_dir), (0, gid, 0o750))
        self.assertEqual(self.owner_mode(os.path.join(d.run_dir, "depwatch.sock")), (0, gid, 0o660))
        self.assertEqual(self.owner_mode(os.path.join(d.run_dir, "depwatch.lock")), (0, 0, 0o600))

        r = self.as_user(self.member, DEPWATCH, "status", "--json", "--run-dir", d.run_dir)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('"name":"pay"', r.stdout)
        for name in PINS:
            self.assertEqual(self.read_pin(self.member, os.path.join(d.pin_dir, name)), 0, name)
        r = self.as_user(self.member, DEPWATCH, "breaker", "open", "pay", "--run-dir", d.run_dir)
        self.assertEqual((r.returncode, r.stderr),
                         (1, "error: forcing a breaker needs root (--group grants reading only)\n"))
        self.assertEqual([x["breaker"] for x in d.status()["dependencies"] if x["name"] == "pay"], ["closed"])

        r = self.as_user(self.outsider, DEPWATCH, "status", "--run-dir", d.run_dir)
        self.assertEqual(r.returncode, 1)
        self.assertIn("Permission denied", r.stderr)
        self.assertEqual(self.read_pin(self.outsider, os.path.join(d.pin_dir, "dest_stats")), -13)

    def test_unknown_group_is_a_usage_error(self):
        r = run(DEPWATCH, "run", "--group", "dwtest-no-such-group")
        self.assertEqual((r.returncode, r.stderr), (2, "depwatch: --group: no group named 'dwtest-no-such-group'\n"))


if __name__ == "__main__":
    unittest.main()
