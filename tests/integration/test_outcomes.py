"""HTTP/1 status lines as call outcomes (issue 33), against a real nginx on loopback.

One nginx (four server blocks) and one daemon serve every case:
- `web`: nginx `location /fail { return 503; }` and `location / { return 200; }`. wrk on /fail:
  depwatch's failed calls (and answers of class 5xx) are within 1% of wrk's own non-2xx count, and
  the breaker (failure_rate = 50%) opens within 1 s of the first failing answer, by the events file's
  clock against the time the first 503 came back to a client of ours. Then only 200s: it closes
  through half_open (open_for = 1s).
- `pool`: three replicas on consecutive ports, one answering 503, eject = on: that one is ejected,
  its siblings are not, and their answers count as 2xx.
The ground truth is the clients' own figures (wrk's summary, our client's status codes)."""

import http.client
import json
import os
import socket
import subprocess
import threading
import time
import unittest

from harness import DEPWATCH, dependency, find_dest, fmt_dest, start_configured, write_config
from loopback import in_slice
from realtraffic import nginx_server, parse_wrk, require, run_tool, start_nginx, tempdir

FAIL_LOC = "            return 503;\n"
OK_LOC = "            return 200 \"ok\\n\";\n"

# Ports of this file (the range the suite gives it): web, then three consecutive replicas.
PORT_LO, PORT_HI = 22100, 22900


def free_run(n):
    """n consecutive loopback ports nobody listens on, from this file's range."""
    for base in range(PORT_LO, PORT_HI - n):
        if not in_slice(base, n):
            continue
        socks = []
        try:
            for p in range(base, base + n):
                s = socket.socket()
                s.bind(("127.0.0.1", p))
                socks.append(s)
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise AssertionError("no %d free consecutive ports in %d-%d" % (n, PORT_LO, PORT_HI))


def get(port, path, conn=None):
    """One GET (keep-alive on conn if given); its status code."""
    c = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    c.request("GET", path)
    r = c.getresponse()
    r.read()
    if conn is None:
        c.close()
    return r.status


class OutcomeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require("nginx", "wrk")
        cls.work = tempdir(cls)
        base = free_run(4)
        cls.web, cls.replicas = base, [base + 1, base + 2, base + 3]
        body = nginx_server("127.0.0.1:%d" % cls.web, OK_LOC,
                            "        location /fail {\n%s        }\n" % FAIL_LOC)
        body += nginx_server("127.0.0.1:%d" % cls.replicas[0], FAIL_LOC)
        for p in cls.replicas[1:]:
            body += nginx_server("127.0.0.1:%d" % p, OK_LOC)
        cls.nginx = start_nginx(cls, cls.work, body, [cls.web] + cls.replicas)
        conf = ("[dependency web]\nmatch = 127.0.0.1:%d\nfailure_rate = 50%%\nmin_calls = 10\n"
                "sample = 20\nopen_for = 1s\nhalf_open_calls = 5\n"
                "[dependency pool]\nmatch = 127.0.0.1:%d-%d\neject = on\nfailure_rate = 50%%\n"
                "min_calls = 10\nsample = 20\nmax_ejected = 34%%\neject_for = 30s\n"
                % (cls.web, cls.replicas[0], cls.replicas[-1]))
        cls.metrics_port = free_run(1)
        cls.d = start_configured(cls.addClassCleanup, conf,
                                 extra_args=["--metrics", "127.0.0.1:%d" % cls.metrics_port])

    # unittest's tempdir helper takes a test's addCleanup: the class's serves here
    addCleanup = classmethod(lambda cls, fn, *a: cls.addClassCleanup(fn, *a))

    def events(self):
        with open(self.d.events) as f:
            return [json.loads(l) for l in f if l.strip()]

    def transitions(self, dep):
        return [e for e in self.events() if e["dependency"] == dep and e["event"] == "transition"]

    def test_1_503_fails_calls_and_opens_the_breaker(self):
        dest = fmt_dest("127.0.0.1", self.web)
        before = find_dest(self.d.status(), dest) or {"failed": 0, "answers": {"5xx": 0}}
        # the first failing answer, as a client saw it: the breaker's clock starts here
        self.assertEqual(get(self.web, "/fail"), 503)
        first_503 = time.time()
        out = run_tool(["wrk", "--latency", "-t1", "-c4", "-d2s", "http://127.0.0.1:%d/fail" % self.web])
        w = parse_wrk(out)
        truth = w["errors"] + 1  # wrk counts non-2xx answers as errors; no socket error expected
        self.assertIn("Non-2xx or 3xx responses: %d" % w["requests"], out, out)
        # wrk's last requests may still be on the wire when it stops (no answer: failed too): poll
        row, _ = self.d.wait_dest(dest, lambda r: r["answers"]["5xx"] - before["answers"]["5xx"] >= truth,
                                  timeout=10)
        failed = row["failed"] - before["failed"]
        fives = row["answers"]["5xx"] - before["answers"]["5xx"]
        self.assertLessEqual(abs(fives - truth), truth * 0.01, (fives, truth, row))
        self.assertLessEqual(abs(failed - truth), truth * 0.01, (failed, truth, row))
        self.assertEqual(row["failed_status"] - before.get("failed_status", 0), fives)
        dep = dependency(self.d.status(), "web")
        self.assertEqual(dep["reason"], "failure_rate", dep)
        opened = [e for e in self.transitions("web") if e["state"] == "open"]
        self.assertTrue(opened, self.events())
        self.assertEqual(opened[0]["reason"], "failure_rate")
        self.assertEqual(opened[0].get("outcome"), "http_503", opened[0])
        self.assertLess(opened[0]["time"] - first_503, 1.0, (opened[0], first_503))
        text = subprocess.run([DEPWATCH, "status", "--run-dir", self.d.run_dir], capture_output=True,
                              text=True, timeout=10).stdout
        # the classes read, in order; "unknown" too when wrk stopped with answers on the wire
        self.assertRegex(text, r"answers: web: (\w+ \d+ )*5xx \d+( \w+ \d+)* \(failed by status \d+\)", text)
        c = http.client.HTTPConnection("127.0.0.1", self.metrics_port, timeout=10)
        c.request("GET", "/metrics")
        page = c.getresponse().read().decode()
        c.close()
        line = [l for l in page.splitlines()
                if l.startswith('depwatch_answers_total{dependency="web",class="5xx"}')]
        self.assertEqual(len(line), 1, page[-3000:])
        self.assertGreaterEqual(int(line[0].split()[-1]), fives)
        print("outcomes: wrk %d non-2xx (+1 ours), depwatch failed %d, 5xx %d; opened %.3f s after the "
              "first 503" % (w["requests"], failed, fives, opened[0]["time"] - first_503))

        # 200 again: open -> half_open (open_for 1 s) -> closed on its probes
        c = http.client.HTTPConnection("127.0.0.1", self.web, timeout=5)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            self.assertEqual(get(self.web, "/", c), 200)
            if dependency(self.d.status(), "web")["breaker"] == "closed":
                break
            time.sleep(0.02)
        c.close()
        path = [(e["from"], e["state"]) for e in self.transitions("web")]
        self.assertIn(("open", "half_open"), path, path)
        self.assertEqual(path[-1], ("half_open", "closed"), path)

    def test_2_one_replica_answering_503_is_ejected(self):
        conns = [http.client.HTTPConnection("127.0.0.1", p, timeout=5) for p in self.replicas]
        codes = {p: {} for p in self.replicas}
        bad = fmt_dest("127.0.0.1", self.replicas[0])
        deadline = time.monotonic() + 20
        ejected = None
        while time.monotonic() < deadline and not ejected:
            for p, c in zip(self.replicas, conns):
                s = get(p, "/", c)
                codes[p][s] = codes[p].get(s, 0) + 1
            st = self.d.status()
            row = find_dest(st, bad)
            if row and row.get("ejected_state") == "out":
                ejected = st
            time.sleep(0.01)
        for c in conns:
            c.close()
        self.assertIsNotNone(ejected, (codes, find_dest(self.d.status(), bad)))
        self.assertEqual(find_dest(ejected, bad)["ejected_reason"], "failure_rate")
        for p in self.replicas[1:]:
            row = find_dest(ejected, fmt_dest("127.0.0.1", p))
            self.assertEqual(row["ejected_state"], "in", row)
            # the status read lags the last answers by a poll
            row, _ = self.d.wait_dest(fmt_dest("127.0.0.1", p), lambda r: r["answers"]["2xx"] >= codes[p][200])
            self.assertEqual(row["failed"], 0, row)
            self.assertEqual(row["answers"]["2xx"], codes[p][200], (row, codes))
            self.assertEqual(row["calls"], codes[p][200], (row, codes))
        row, _ = self.d.wait_dest(bad, lambda r: r["answers"]["5xx"] >= codes[self.replicas[0]][503])
        self.assertEqual(row["answers"]["5xx"], codes[self.replicas[0]][503], row)
        self.assertEqual(row["failed"], codes[self.replicas[0]][503], row)
        print("outcomes: replica %d ejected after %s of its answers, siblings %s" % (
            self.replicas[0], codes[self.replicas[0]], [codes[p] for p in self.replicas[1:]]))

    def test_3_check_shows_the_effective_lists(self):
        conf = write_config("[defaults]\nfailure_status = 503 5xx, 429\n[dependency a]\nmatch = 10.0.0.1:80\n"
                            "[dependency b]\nmatch = 10.0.0.2:80\nfailure_status = none\n")
        self.addCleanup(os.unlink, conf)
        r = subprocess.run([DEPWATCH, "check", "-c", conf], capture_output=True, text=True, timeout=10)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.count("failure_status = 5xx, 429\n"), 2, r.stdout)  # [defaults], a
        self.assertIn("failure_status = none\n", r.stdout)
        bad = write_config("[dependency a]\nmatch = 10.0.0.1:80\nfailure_status = 5xx, 6xx\n")
        self.addCleanup(os.unlink, bad)
        r = subprocess.run([DEPWATCH, "check", "-c", bad], capture_output=True, text=True, timeout=10)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("%s:3: failure_status: '5xx, 6xx' is not a list of HTTP statuses" % bad, r.stderr)


if __name__ == "__main__":
    unittest.main()
