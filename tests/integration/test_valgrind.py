"""The daemon under valgrind --leak-check=full, through a short session with
traffic (both ends: a dependency and a service), status requests (JSON and
table), an ejection by hand, a forced breaker, a reload and a clean stop: no
memory errors, no definite leaks."""

# Loads the machine: runs alone when make test's two passes go side by side (harness.runs_alone).
# valgrind runs a daemon session at a fraction of its speed, on a CPU of its own.
RUNS_ALONE = True

import os
import re
import shutil
import subprocess
import tempfile
import unittest

import harness
from harness import DEPWATCH, Daemon, LoopbackServer

SUPP = os.path.join(harness.REPO, "tests", "valgrind.supp")


class ValgrindDaemon(Daemon):
    def __init__(self, log, **kw):
        super().__init__(**kw)
        self.log = log

    @property
    def argv(self):
        return ["valgrind", "--leak-check=full", "--errors-for-leak-kinds=definite", "--suppressions=" + SUPP,
                "--log-file=" + self.log] + super().argv


@unittest.skipUnless(shutil.which("valgrind"), "valgrind is not installed")
class ValgrindTest(unittest.TestCase):
    def test_short_session_is_clean(self):
        work = tempfile.mkdtemp(prefix="dwtest-vg-")
        self.addCleanup(shutil.rmtree, work, True)
        conf = os.path.join(work, "depwatch.conf")
        srv = LoopbackServer(delay=0.001)
        self.addCleanup(srv.close)
        with open(conf, "w") as f:
            # the server's side is a service too: the inbound rows, services and forecast run
            f.write("[dependency vg]\nmatch = 127.0.0.1:%d\nenforce = connect\ntimeout = 500ms\neject = on\n"
                    "[service vgsvc]\nlisten = %d\npool = 10\ndeadline = 1s\npath = vg\n"
                    % (srv.port, srv.port))
        os.chmod(conf, 0o600)
        log = os.path.join(work, "valgrind.log")
        d = ValgrindDaemon(log, extra_args=["-c", conf])
        self.addCleanup(d.cleanup)
        d.start(timeout=180)  # BTF parsing under valgrind takes a while

        c = harness.Client("127.0.0.1", srv.port)
        for _ in range(20):
            c.call()
        c.close()
        row, _ = d.wait_dest("127.0.0.1:%d" % srv.port, lambda r: r["calls"] == 20, timeout=20)
        self.assertEqual(row["calls"], 20)
        subprocess.run([DEPWATCH, "status", "--run-dir", d.run_dir], capture_output=True, check=True)
        st = d.status()
        self.assertEqual(st["services"][0]["requests"], 20, st["services"])
        # an ejection by hand: its entry, its line after the abort pass, status with it, its return
        dest = "127.0.0.1:%d" % srv.port
        subprocess.run([DEPWATCH, "breaker", "eject", "vg", dest, "--run-dir", d.run_dir], capture_output=True,
                       check=True)
        self.assertTrue(d.dest(dest)["ejected"])
        subprocess.run([DEPWATCH, "status", "--run-dir", d.run_dir], capture_output=True, check=True)
        subprocess.run([DEPWATCH, "breaker", "return", "vg", dest, "--run-dir", d.run_dir], capture_output=True,
                       check=True)
        subprocess.run([DEPWATCH, "breaker", "open", "vg", "--run-dir", d.run_dir], capture_output=True, check=True)
        d.proc.send_signal(1)  # SIGHUP: reload the same file
        d.wait_for(lambda s: "reloaded" in d.stderr_text(), timeout=20)
        self.assertEqual(d.stop(timeout=120), 0, d.stderr_text())

        with open(log) as f:
            text = f.read()
        summary = re.search(r"ERROR SUMMARY: (\d+) errors", text)
        self.assertIsNotNone(summary, text[-2000:])
        self.assertEqual(summary.group(1), "0", text[-4000:])
        self.assertRegex(text, r"definitely lost: 0 bytes|no leaks are possible")


if __name__ == "__main__":
    unittest.main()
