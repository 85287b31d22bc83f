"""The daemon's life on a host: the capabilities it keeps, what a clean stop
leaves behind (nothing, unless --keep-pinned), and configs it must not trust."""

import json
import os
import subprocess
import tempfile
import time
import unittest

from harness import DEPWATCH, Daemon, DaemonError, kernel_has_sock_destroy_kfunc

CAP_NET_ADMIN, CAP_PERFMON, CAP_BPF = 12, 38, 39
CAP_SYS_PTRACE, CAP_SYS_ADMIN = 19, 21


def capabilities(pid, which):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(which + ":"):
                return int(line.split()[1], 16)
    raise AssertionError("no %s line" % which)


def bpf_prog_ids(pid):
    """Ids of the BPF programs the process holds: its prog fds and the programs of its link fds."""
    ids = set()
    fd_dir = "/proc/%d/fdinfo" % pid
    for fd in os.listdir(fd_dir):
        try:
            with open(os.path.join(fd_dir, fd)) as f:
                for line in f:
                    if line.startswith("prog_id:"):
                        ids.add(int(line.split()[1]))
        except OSError:
            pass
    return ids


def loaded_prog_ids():
    out = subprocess.run(["bpftool", "--json", "prog", "show"], capture_output=True, text=True, check=True)
    return {p["id"] for p in json.loads(out.stdout)}


class LifecycleTest(unittest.TestCase):
    def setUp(self):
        self.cleanups = []

    def tearDown(self):
        for fn in reversed(self.cleanups):
            fn()

    def daemon(self, *extra):
        d = Daemon(extra_args=list(extra))
        self.cleanups.append(d.cleanup)
        return d

    def config(self, text, mode=0o600):
        fd, path = tempfile.mkstemp(prefix="dwtest-", suffix=".conf")
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(path, mode)
        self.cleanups.append(lambda: os.unlink(path))
        return path

    def test_keeps_only_cap_bpf_and_cap_perfmon(self):
        """... and CAP_NET_ADMIN where connections are aborted through sock_diag (no
        bpf_sock_destroy kfunc, or --without it), whose SOCK_DESTROY checks it; and
        CAP_SYS_PTRACE with CAP_SYS_ADMIN while the TLS discovery runs (doc/tls.md), so the
        cases without TLS show the rest alone."""
        tls = (1 << CAP_SYS_PTRACE) | (1 << CAP_SYS_ADMIN)
        ways = [(["--without", "tls"], kernel_has_sock_destroy_kfunc(), 0), ([], kernel_has_sock_destroy_kfunc(), tls)]
        if ways[0][1]:
            ways.append((["--without", "bpf_sock_destroy,tls"], False, 0))
        for extra, kfunc, kept in ways:
            with self.subTest(args=extra):
                d = self.daemon(*extra).start()
                want = (1 << CAP_BPF) | (1 << CAP_PERFMON) | (0 if kfunc else 1 << CAP_NET_ADMIN) | kept
                for which in ("CapEff", "CapPrm", "CapBnd"):
                    self.assertEqual(capabilities(d.proc.pid, which), want, which)
                self.assertIsNotNone(d.status())  # still answers with what it kept
                d.stop()

    def test_clean_stop_leaves_no_programs_and_no_pins(self):
        d = self.daemon().start()
        ours = bpf_prog_ids(d.proc.pid)
        self.assertGreaterEqual(len(ours), 5, "the daemon holds its programs through link fds")
        self.assertTrue(ours <= loaded_prog_ids())
        self.assertEqual(d.stop(), 0)
        # the kernel frees programs after an RCU grace period, not at close()
        deadline = time.monotonic() + 5
        while ours & loaded_prog_ids() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(ours & loaded_prog_ids(), set(), "programs left loaded after a clean stop")
        self.assertFalse(os.path.exists(d.pin_dir))

    def test_keep_pinned_leaves_maps_and_the_next_daemon_takes_over(self):
        d = self.daemon("--keep-pinned").start()
        self.assertEqual(d.stop(), 0)
        left = os.listdir(d.pin_dir)
        for m in ("breakers", "dest_slots", "dest_stats", "dest_details"):
            self.assertIn(m, left)
        again = Daemon(pin_dir=d.pin_dir)
        self.cleanups.append(again.cleanup)
        again.start()
        self.assertIn("removed %d pinned maps left in %s" % (len(left), d.pin_dir), again.stderr_text())
        self.assertEqual(again.stop(), 0)
        self.assertFalse(os.path.exists(d.pin_dir))

    def test_refuses_a_config_others_could_write(self):
        conf = self.config("[defaults]\nslow_call = 500ms\n", mode=0o664)
        r = subprocess.run([DEPWATCH, "check", "-c", conf], capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        self.assertIn("%s: group- or world-writable (mode 0664)" % conf, r.stderr)
        with self.assertRaises(DaemonError) as ctx:
            self.daemon("-c", conf).start()
        self.assertIn("group- or world-writable", str(ctx.exception))
        os.chmod(conf, 0o600)
        os.chown(conf, 65534, 65534)
        r = subprocess.run([DEPWATCH, "check", "-c", conf], capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        self.assertIn("owned by uid 65534, not root", r.stderr)

    def test_missing_and_directory_configs_are_clear_errors(self):
        for path, words in (("/nonexistent/depwatch.conf", "No such file or directory"),
                            ("/tmp", "is a directory")):
            r = subprocess.run([DEPWATCH, "check", "-c", path], capture_output=True, text=True)
            self.assertEqual(r.returncode, 1)
            self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
            self.assertIn(path, r.stderr)
            self.assertIn(words, r.stderr)


if __name__ == "__main__":
    unittest.main()
