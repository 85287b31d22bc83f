"""Process names are chosen by whoever runs the process (prctl PR_SET_NAME):
one holding a newline, quotes, '=' and a terminal escape must not break or
forge a JSON field, a status table row or a top frame."""

import json
import subprocess
import threading
import unittest

import harness
from harness import DEPWATCH, Daemon, LoopbackServer, fmt_dest

EVIL = "a\nb\"c=d\x1b[31mX"  # 14 bytes: fits the kernel's 16-byte comm


class UntrustedNamesTest(unittest.TestCase):
    def setUp(self):
        self.d = Daemon().start()
        self.srv = LoopbackServer(delay=0.001)

    def tearDown(self):
        self.srv.close()
        self.d.cleanup()

    def calls_from_evil_thread(self, n):
        def work():
            harness.set_thread_comm(EVIL)
            c = harness.Client("127.0.0.1", self.srv.port)
            for _ in range(n):
                c.call()
            c.close()
        t = threading.Thread(target=work)
        t.start()
        t.join()

    def test_evil_comm_is_escaped_everywhere(self):
        self.calls_from_evil_thread(5)
        dest = fmt_dest("127.0.0.1", self.srv.port)
        row, _ = self.d.wait_dest(dest, lambda r: r["calls"] == 5)
        self.assertEqual(row["calls"], 5)
        # JSON: a valid document, and the name comes back exactly as the process set it
        self.assertEqual(row["last_caller"]["comm"], EVIL)
        raw = self.d.status_raw().stdout
        self.assertNotIn(b"\x1b", raw, "a raw ESC in the JSON text")
        self.assertEqual(raw.count(b"\n"), 1, "one JSON object on one line")

        text = subprocess.run([DEPWATCH, "status", "--run-dir", self.d.run_dir], capture_output=True).stdout
        self.assertNotIn(b"\x1b", text)
        rows = [l for l in text.split(b"\n") if l.startswith(dest.encode())]
        self.assertEqual(len(rows), 2, "its dependency row and its destination row: %r" % text)
        self.assertTrue(rows[1].endswith(b"/a\\x0ab\\x22c\\x3dd\\x1b[31mX"), rows[1])

        frame = subprocess.run([DEPWATCH, "top", "--run-dir", self.d.run_dir], capture_output=True)
        self.assertEqual(frame.returncode, 0, frame.stderr)
        self.assertNotIn(b"\x1b", frame.stdout)


if __name__ == "__main__":
    unittest.main()
