"""HTTP/2 and gRPC answers as call outcomes (issue 33): the server's header blocks decoded in the
daemon with nghttp2's HPACK inflater, against real servers on loopback, one daemon for every case:
- `grpcbad`: python3-grpcio over h2c whose handler aborts every call with UNAVAILABLE: depwatch's
  failed calls are within 1% of the client's failed count, counted by code (grpc.unavailable), and
  the breaker (failure_rate = 50%) opens with outcome grpc_unavailable.
- `grpcmiss`: the same server aborting with NOT_FOUND: counted by code, no call failed, closed.
- `grpctls`: the UNAVAILABLE server over TLS (the plaintext walker, bpf/tlsh2.bpf.h): the same, where
  the sock backend ties grpc-core's session (the syscalls backend does not: printed, not asserted).
- `grpclate`: the server ends every call with DEADLINE_EXCEEDED itself: failed, with that code.
- `web`: nginx `listen ... http2` (h2c), `location /fail { return 503; }`, under h2load on few
  connections (so the second and later answers' :status come from nginx's dynamic table): failed
  equals h2load's own count of 5xx (its "status codes" line), the breaker opens on failure_rate
  with outcome http_503; `/` answers count as 2xx, none failed.
The ground truth is the clients' own figures."""

import json
import os
import re
import unittest

from harness import dependency, find_dest, fmt_dest, free_port, start_configured
from realtraffic import make_cert, nginx_server, require, run_tool, start_nginx, tempdir
from test_h2 import GrpcClient, GrpcServer, have_grpc

OK_LOC = "            return 200 \"ok\\n\";\n"


def grpc_server(test, code, tls=None):
    os.environ["GRPCPEER_ABORT"] = code
    try:
        s = GrpcServer(0, tls=tls)
    finally:
        del os.environ["GRPCPEER_ABORT"]
    test.addClassCleanup(s.close)
    return s


def h2load_codes(out):
    m = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", out)
    if not m:
        raise AssertionError("no status codes in h2load's output:\n" + out[-2000:])
    return [int(x) for x in m.groups()]


class H2AnswersTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require("nginx", "h2load")
        if not have_grpc():
            raise AssertionError("python3-grpcio is not installed for /usr/bin/python3")
        cls.work = tempdir(cls)
        cls.bad = grpc_server(cls, "UNAVAILABLE")
        cls.miss = grpc_server(cls, "NOT_FOUND")
        cls.late = grpc_server(cls, "DEADLINE_EXCEEDED")
        cls.cert, key = make_cert(cls.work)
        cls.tls = grpc_server(cls, "UNAVAILABLE", tls=(cls.cert, key))
        cls.web = free_port()
        body = nginx_server("127.0.0.1:%d http2" % cls.web, OK_LOC,
                            "        location /fail {\n            return 503;\n        }\n")
        cls.nginx = start_nginx(cls, cls.work, body, [cls.web])
        conf = "[defaults]\nfailure_rate = 50%\nmin_calls = 10\nsample = 20\nopen_for = 30s\n"
        for name, port in (("grpcbad", cls.bad.port), ("grpcmiss", cls.miss.port), ("web", cls.web),
                           ("grpctls", cls.tls.port), ("grpclate", cls.late.port)):
            conf += "[dependency %s]\nmatch = 127.0.0.1:%d\n" % (name, port)
        cls.d = start_configured(cls.addClassCleanup, conf)

    addCleanup = classmethod(lambda cls, fn, *a: cls.addClassCleanup(fn, *a))

    def opened(self, name, outcome):
        """Waits for the breaker of name to open on failure_rate; the events file's transition."""
        st = self.d.wait_for(lambda s: dependency(s, name)["breaker"] == "open", timeout=5)
        dep = dependency(st, name)
        self.assertEqual((dep["breaker"], dep["reason"]), ("open", "failure_rate"), dep)
        with open(self.d.events) as f:
            ev = [json.loads(l) for l in f if l.strip()]
        ev = [e for e in ev if e.get("dependency") == name and e.get("event") == "transition"
              and e.get("state") == "open"]
        self.assertTrue(ev, name)
        self.assertEqual(ev[0].get("outcome"), outcome, ev[0])
        return dep

    def grpc_run(self, port, cert=None):
        c = GrpcClient(port, 4, 2, 5.0, cert=cert)
        self.addCleanup(c.close)
        res = c.result()
        dest = fmt_dest("127.0.0.1", port)
        total = res["ok"] + res["failed"]
        row, _ = self.d.wait_dest(dest, lambda r: r["inflight"] == 0 and r["calls"] + r["failed"] >= total
                                  and sum(r["grpc"].values()) >= total, timeout=10)
        return res, row

    def test_1_grpc_unavailable_fails_and_opens(self):
        res, row = self.grpc_run(self.bad.port)
        self.assertEqual(res["codes"].get("UNAVAILABLE", 0), res["failed"], res)
        self.assertGreater(res["failed"], 50, res)
        self.assertLessEqual(abs(row["failed"] - res["failed"]), res["failed"] * 0.01, (row, res))
        self.assertLessEqual(abs(row["grpc"].get("unavailable", 0) - res["failed"]), res["failed"] * 0.01,
                             (row, res))
        self.assertEqual(row["hpack_desync"], 0, row)
        dep = self.opened("grpcbad", "grpc_unavailable")
        print("\n  grpc UNAVAILABLE: client failed %d, depwatch failed %d, unavailable %d; breaker %s (%s)"
              % (res["failed"], row["failed"], row["grpc"].get("unavailable", 0), dep["breaker"],
                 dep.get("reason")), end="")

    def test_2_grpc_not_found_is_no_failure(self):
        res, row = self.grpc_run(self.miss.port)
        self.assertEqual(res["codes"].get("NOT_FOUND", 0), res["failed"], res)
        self.assertEqual(row["failed"], 0, row)
        self.assertLessEqual(abs(row["grpc"].get("not_found", 0) - res["failed"]), res["failed"] * 0.01,
                             (row, res))
        dep = dependency(self.d.status(), "grpcmiss")
        self.assertEqual(dep["breaker"], "closed", dep)

    def test_3_nginx_h2c_503_from_the_dynamic_table(self):
        dest = fmt_dest("127.0.0.1", self.web)
        out = run_tool(["h2load", "-n", "2000", "-c", "2", "-m", "4", "http://127.0.0.1:%d/fail" % self.web])
        codes = h2load_codes(out)
        self.assertEqual(codes[3], 2000, out)
        row, _ = self.d.wait_dest(dest, lambda r: r["inflight"] == 0 and r["answers"]["5xx"] >= codes[3],
                                  timeout=10)
        self.assertEqual(row["answers"]["5xx"], codes[3], row)
        self.assertEqual(row["failed"], codes[3], row)
        # the breaker judges the newest calls (sample = 20): before the 200s below
        self.opened("web", "http_503")
        out2 = run_tool(["h2load", "-n", "500", "-c", "1", "-m", "4", "http://127.0.0.1:%d/" % self.web])
        codes2 = h2load_codes(out2)
        row, _ = self.d.wait_dest(dest, lambda r: r["inflight"] == 0 and r["answers"]["2xx"] >= codes2[0],
                                  timeout=10)
        print("\n  nginx h2c: h2load 5xx %d 2xx %d; depwatch failed %d, 5xx %d, 2xx %d, desync %d"
              % (codes[3], codes2[0], row["failed"], row["answers"]["5xx"], row["answers"]["2xx"],
                 row["hpack_desync"]), end="")
        self.assertEqual(row["answers"]["2xx"], codes2[0], row)
        self.assertEqual(row["failed"], codes[3], row)
        self.assertEqual(row["hpack_desync"], 0, row)

    def test_4_grpc_unavailable_over_tls(self):
        c = GrpcClient(self.tls.port, 4, 2, 5.0, cert=self.cert)
        self.addCleanup(c.close)
        res = c.result()
        dest = fmt_dest("127.0.0.1", self.tls.port)
        tied = self.d.status()["kernel"]["backend"] == "sock"
        row, _ = self.d.wait_dest(dest, lambda r: r["inflight"] == 0 and (not tied or sum(r["grpc"].values())
                                                                          >= res["failed"]), timeout=10)
        print("\n  grpc TLS UNAVAILABLE: client failed %d, depwatch failed %d, unavailable %d, streams %d"
              % (res["failed"], row["failed"], row["grpc"].get("unavailable", 0), row["streams"]), end="")
        if not tied:
            return
        self.assertGreater(res["failed"], 50, res)
        self.assertLessEqual(abs(row["failed"] - res["failed"]), res["failed"] * 0.01, (row, res))
        self.assertEqual(row["hpack_desync"], 0, row)
        self.opened("grpctls", "grpc_unavailable")


    def test_5_server_deadline_exceeded_fails(self):
        res, row = self.grpc_run(self.late.port)
        self.assertEqual(res["codes"].get("DEADLINE_EXCEEDED", 0), res["failed"], res)
        self.assertLessEqual(abs(row["failed"] - res["failed"]), res["failed"] * 0.01, (row, res))
        self.assertLessEqual(abs(row["grpc"].get("deadline_exceeded", 0) - res["failed"]), res["failed"] * 0.01,
                             (row, res))
        self.assertEqual(row["failed_grpc"], row["grpc"].get("deadline_exceeded", 0), row)
        self.opened("grpclate", "grpc_deadline_exceeded")


if __name__ == "__main__":
    unittest.main()
