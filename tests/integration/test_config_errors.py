"""Bad configs, through the real binary: `check` and `run` give the same one
line naming FILE:LINE and what is wrong, exit non-zero, and a running
daemon sent a bad file on SIGHUP keeps the config it had."""

import os
import signal
import subprocess
import tempfile
import unittest

import harness
from harness import DEPWATCH, Daemon, DaemonError

# (name, file content, the line the error must name, words the message must hold)
CASES = [
    ("no equals sign", "[defaults]\nslow_call 1s\n", 2, "expected 'key = value'"),
    ("unterminated section", "[defaults\n", 1, "section"),
    ("unknown section", "[defaultz]\n", 1, "defaultz"),
    ("unknown key", "[defaults]\nslow_cal = 1s\n", 2, "unknown key 'slow_cal'"),
    ("bad duration", "[defaults]\nslow_call = 1 sec\n", 2, "slow_call"),
    ("duration without unit", "[defaults]\nwindow = 10\n", 2, "window"),
    ("bad percentage", "[defaults]\nslow_rate = 150%\n", 2, "slow_rate"),
    ("percentage without %", "[defaults]\nfailure_rate = 0.5\n", 2, "failure_rate"),
    ("out of range", "[defaults]\nsample = 0\n", 2, "sample"),
    ("min_calls above sample", "[defaults]\nsample = 5\nmin_calls = 10\n", 3, "min_calls"),
    ("bad enforce word", "[defaults]\nenforce = always\n", 2, "enforce"),
    ("bad abort_after", "[defaults]\nabort_after = soon\n", 2, "abort_after"),
    ("abort_after with ignore", "[dependency a]\nmatch = 10.0.0.0/8\nignore = yes\nabort_after = 1s\n", 4,
     "abort_after = 1s with ignore = yes"),
    ("invalid CIDR", "[dependency a]\nmatch = 10.0.0.300/8\n", 2, "10.0.0.300"),
    ("host bits set", "[dependency a]\nmatch = 10.0.3.7/24\n", 2, "host bits"),
    ("bad port range", "[dependency a]\nmatch = 10.0.0.0/8:90-80\n", 2, "90-80"),
    ("port out of range", "[dependency a]\nmatch = 10.0.0.0/8:70000\n", 2, "70000"),
    ("unbracketed IPv6", "[dependency a]\nmatch = 2001:db8::/32:443\n", 2, "IPv6"),
    ("overlap without winner", "[dependency a]\nmatch = 10.0.0.0/8:1-100\n"
     "[dependency b]\nmatch = 10.1.0.0/16:50-200\n", 4, "overlaps"),
    ("same match twice", "[dependency a]\nmatch = 10.0.0.0/8\n[dependency b]\nmatch = 10.0.0.0/8\n", 4,
     "overlaps"),
    ("duplicate name", "[dependency a]\nmatch = 10.0.0.0/8\n[dependency a]\nmatch = 11.0.0.0/8\n", 3,
     "duplicate"),
    ("dependency without match", "[dependency a]\nslow_call = 1s\n", 1, "match"),
    ("match in defaults", "[defaults]\nmatch = 10.0.0.0/8\n", 2, "match"),
    ("bad name", "[dependency a b]\nmatch = 10.0.0.0/8\n", 1, "a b"),
    ("binary content", "[defaults]\nslow_call = 1s\x00\x01\x02\n", 2, "binary"),
]


# The config's parser and reload, the same whichever backend measures: one pass (issue 45).
@harness.backend_independent
class ConfigErrorsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="dwtest-conf-")

    def tearDown(self):
        subprocess.run(["rm", "-rf", self.tmp])

    def write(self, name, content):
        path = os.path.join(self.tmp, name.replace(" ", "_") + ".conf")
        with open(path, "wb") as f:
            f.write(content.encode("latin-1") if isinstance(content, str) else content)
        os.chmod(path, 0o600)
        return path

    def check(self, path):
        return subprocess.run([DEPWATCH, "check", "-c", path], capture_output=True, text=True,
                              errors="replace")

    def run_error(self, path):
        d = Daemon(extra_args=["-c", path])
        try:
            d.start()
        except DaemonError:
            return d.proc.returncode, d.stderr_text()
        finally:
            d.cleanup()
        self.fail("run accepted %s" % path)

    def test_table_check_and_run_agree(self):
        for name, content, line, words in CASES:
            with self.subTest(name):
                path = self.write(name, content)
                r = self.check(path)
                self.assertEqual(r.returncode, 1, "check accepted it: %r" % r.stdout)
                self.assertEqual(r.stderr.count("\n"), 1, "one line: %r" % r.stderr)
                self.assertIn("%s:%d: " % (path, line), r.stderr)
                self.assertIn(words, r.stderr)
                rc, text = self.run_error(path)
                self.assertNotEqual(rc, 0)
                self.assertIn(r.stderr.strip().replace("depwatch: ", "", 1), text)

    def test_whole_file_errors(self):
        big = self.write("big", b"# padding\n" * (1024 * 1024))  # 10 MiB
        for path, words in ((big, "larger than"), (os.path.join(self.tmp, "missing.conf"), "No such file"),
                            (self.tmp, "is a directory")):
            with self.subTest(path):
                r = self.check(path)
                self.assertEqual(r.returncode, 1)
                self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
                self.assertIn(path, r.stderr)
                self.assertIn(words, r.stderr)

    def test_empty_file_is_the_defaults(self):
        r = self.check(self.write("empty", ""))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("slow_call = 1s", r.stdout)

    def test_bad_reload_changes_nothing(self):
        path = self.write("good", "[dependency keep]\nmatch = 127.0.0.1:1\nslow_call = 300ms\n")
        d = Daemon(extra_args=["-c", path])
        self.addCleanup(d.cleanup)
        d.start()
        before = [x for x in d.status()["dependencies"] if x["name"] == "keep"]
        for name, content, line, words in CASES[:6]:
            with open(path, "w") as f:
                f.write(content)
            d.proc.send_signal(signal.SIGHUP)
            d.wait_for(lambda s: d.stderr_text().count("reload rejected") >= 1 + CASES.index(
                (name, content, line, words)), timeout=3)
        self.assertEqual(d.stderr_text().count("reload rejected"), 6, d.stderr_text())
        after = [x for x in d.status()["dependencies"] if x["name"] == "keep"]
        self.assertEqual(len(after), 1)
        self.assertEqual(after[0]["slow_call_ms"], before[0]["slow_call_ms"])


if __name__ == "__main__":
    unittest.main()
