"""HTTP/2 and gRPC answers as call outcomes (issue 33): the server's header blocks decoded in the
daemon with nghttp2's HPACK inflater, against real servers on loopback, one daemon for every case:
- `grpcbad`: python3-grpcio over h2c whose handler aborts every call with UNAVAILABLE: depwatch's
  failed calls are within 1% of the client's failed count, counted by code (grpc.unavailable), and
  the breaker (failure_rate = 50%) opens with outcome grpc_unavailable.
- `grpcmiss`: the same server aborting with NOT_FOUND: counted by code, no call failed, closed.
- `grpctls`: the UNAVAILABLE server over TLS (the plaintext walker, bpf/tls/tlsh2.bpf.h): the same, where
  the sock backend ties grpc-core's session (the syscalls backend does not: printed, not asserted).
- `grpclate`: the server ends every call with DEADLINE_EXCEEDED itself: failed, with that code.
- `web`: nginx `listen ... http2` (h2c), `location /fail { return 503; }`, under h2load on few
  connections (so the second and later answers' :status come from nginx's dynamic table): failed
  equals h2load's own count of 5xx (its "status codes" line), the breaker opens on failure_rate
  with outcome http_503; `/` answers count as 2xx, none failed.
The ground truth is the clients' own figures. Then (issue 47) `status`'s table and `status --json`
give the same calls and failed for every destination and dependency, those the daemon moved to
failed by their decoded answers included; and a `~other` line sums the same figures: the daemon runs
with --max-series 1 (the table's cap; the JSON's is asked for), which folds every destination of no
configured dependency, a `stray` UNAVAILABLE server's among them."""

import json
import os
import re
import unittest

from harness import DW_TOPN_OTHER, dependency, find_dest, fmt_dest, free_port, own_netns, start_configured, \
    status_table
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
        cls.stray = grpc_server(cls, "UNAVAILABLE")   # of no configured dependency: folded by the cap
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
        # --max-series 1: the table (and /metrics) fold every destination of no configured dependency
        # into ~other (configured ones are pinned); the JSON is capped only when asked (test_6)
        cls.d = start_configured(cls.addClassCleanup, conf, extra_args=["--max-series", "1"])

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

    def test_6_status_table_and_json_agree(self):
        """Issue 47: the table's calls and failed were the kernel's, the JSON's had the calls whose
        decoded answer failed them moved to failed: one figure, two values. Both from one poll."""
        bad, stray = fmt_dest("127.0.0.1", self.bad.port), fmt_dest("127.0.0.1", self.stray.port)
        row = find_dest(self.d.status(), bad)
        if not row or not row["failed_grpc"]:   # run alone: some failing answers first
            self.grpc_run(self.bad.port)
        self.grpc_run(self.stray.port)
        ours = {fmt_dest("127.0.0.1", p) for p in (self.bad.port, self.miss.port, self.web, self.tls.port,
                                                     self.late.port)}
        st, text, _ = self.d.same_poll(self.d.status_text)
        table = status_table(text)
        rows = [r for r in st["destinations"] if r["dest"] != DW_TOPN_OTHER]
        mine = {r["dest"]: r for r in rows if r["dest"] in ours and r["netns"] == own_netns()}
        self.assertGreater(mine[bad]["failed_grpc"], 0, mine[bad])   # calls the daemon moved to failed
        strays = [r for r in rows if r["dest"] == stray and r["netns"] == own_netns()]
        self.assertEqual(len(strays), 1, rows)
        self.assertGreater(strays[0]["failed_grpc"], 0, strays)
        shown = {}
        for dest, calls, failed in table["destinations"]:
            shown.setdefault(dest, []).append((calls, failed))
        for dest, r in sorted(mine.items()):
            # one row per netns: ours is one of those of its text (fresh ports: in practice the only one)
            self.assertIn((r["calls"], r["failed"]), shown.get(dest, []), (dest, r, text))
        for name in ("grpcbad", "grpcmiss", "web", "grpctls", "grpclate"):
            dep = dependency(st, name)
            self.assertEqual(table["dependencies"].get(name), dep and (dep["calls"], dep["failed"]), (name, text))
        # every row with its ~other line (the table's --max-series cap) against the JSON's rows
        self.assertNotIn(stray, shown, text)
        self.assertIsNotNone(table["other_dests"], text)
        other = table["other_dests"]
        self.assertEqual((sum(c for _, c, _ in table["destinations"]) + other[0],
                          sum(f for _, _, f in table["destinations"]) + other[1]),
                         (sum(r["calls"] for r in rows), sum(r["failed"] for r in rows)), text)
        # the JSON's own fold: status --json --max-series 1 keeps ours and sums the rest, the stray among them
        st, cap, _ = self.d.same_poll(lambda: self.d.status_json_capped(1))
        kept = {(r["dest"], r["netns"]) for r in cap["destinations"] if r["dest"] != DW_TOPN_OTHER}
        folded = [r for r in cap["destinations"] if r["dest"] == DW_TOPN_OTHER]
        rest = [r for r in st["destinations"] if (r["dest"], r["netns"]) not in kept]
        self.assertEqual(len(folded), 1, cap["destinations"])
        self.assertIn(stray, [r["dest"] for r in rest])
        self.assertEqual((folded[0]["calls"], folded[0]["failed"]),
                         (sum(r["calls"] for r in rest), sum(r["failed"] for r in rest)), (folded, rest))
        print("\n  status and --json: %d of our destinations, %d failed by decoded answers at %s, the same "
              "in both; ~other of %d rows (%d failed by decoded answers at the stray): %s in the table, %s in "
              "the JSON" % (len(mine), mine[bad]["failed_grpc"], bad, len(rest), strays[0]["failed_grpc"],
                            table["other_dests"], (folded[0]["calls"], folded[0]["failed"])), end="")


if __name__ == "__main__":
    unittest.main()
