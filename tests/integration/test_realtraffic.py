"""depwatch against real servers and real clients: Debian's nginx, redis-server,
nghttpd and haproxy, loaded by ab, wrk, h2load and redis-benchmark. Nothing
we wrote is on either end of the connections. The ground truth is each
tool's own count (and the server's own, for redis); each case also prints
depwatch's figures next to the tool's own latency, the before/after evidence
of the call-model fixes.

One daemon per class; every case uses loopback ports of its own, so its
destination rows ("127.0.0.1:PORT") and inbound rows (port) are its own.
The tools are not optional: scripts/deps.sh installs them, and a missing one
fails the case with its package name.
"""

# Loads the machine: runs alone when make test's two passes go side by side (harness.runs_alone).
# wrk, ab and h2load at full speed against nginx, redis, haproxy and nghttpd.
RUNS_ALONE = True

import json
import os
import threading
import time
import unittest

from harness import BACKEND, INTERVAL_MS, Daemon, dependency, find_dest, free_port, own_netns, write_config
from realtraffic import (OK_LOCATION, ab, h2load, make_cert, nginx_server, redis_benchmark,
                         redis_info_stats, require, start_haproxy, start_nginx, start_nghttpd, start_redis,
                         tempdir, wait_closed, wrk)

# depwatch's histogram buckets are at most 6.25% wide: a percentile read from one is within that of
# the true value.
BUCKET = 0.0625
SETTLE_S = 5.0    # seconds for the daemon's next polls to show what the kernel counted (interval 250 ms)


def dest_text(port):
    return "127.0.0.1:%d" % port


def inbound_row(status, port):
    rows = [r for r in status.get("inbound", []) if r["port"] == port and r["netns"] == own_netns()]
    return rows[0] if rows else None


class RealTrafficCase(unittest.TestCase):
    """A daemon for the whole class (config from config_text(), if any), and per test a list of
    problems, so that one run reports every figure that differs rather than the first."""

    @classmethod
    def config_text(cls):
        return None

    @classmethod
    def setUpClass(cls):
        cls.conf = cls.events = None
        args = []
        text = cls.config_text()
        if text is not None:
            cls.conf = write_config(text)
            cls.events = cls.conf + ".events"
            args = ["-c", cls.conf, "--events", cls.events]
        cls.daemon = Daemon(extra_args=args)
        try:
            cls.daemon.start()
        except Exception:
            cls.daemon.cleanup()
            raise

    @classmethod
    def tearDownClass(cls):
        rc = cls.daemon.stop()
        stderr = cls.daemon.stderr_text()
        cls.daemon.cleanup()
        for p in (cls.conf, cls.events):
            if p and os.path.exists(p):
                os.unlink(p)
        if rc != 0:
            raise AssertionError("depwatch run exit status %s on SIGTERM; stderr:\n%s" % (rc, stderr))

    def setUp(self):
        self.problems = []
        self.figures = {}
        self.dir = tempdir(self)

    # ---- collecting

    def check(self, ok, what, got, want):
        if not ok:
            self.problems.append("%s: got %r, want %s" % (what, got, want))

    def eq(self, what, got, want):
        self.check(got == want, what, got, want)

    def record(self, case, **figs):
        figs.update(self.figures)
        self.figures = figs
        print("\n  [%s] %s %s" % (os.environ.get("DW_BACKEND") or "auto", case,
                                  " ".join("%s=%s" % (k, v) for k, v in figs.items())), end="")

    def verdict(self):
        self.assertFalse(self.problems, "\n  " + "\n  ".join(self.problems) + "\nfigures: "
                         + json.dumps(self.figures))

    # ---- reading the daemon

    def settled(self, ports, want_calls=None):
        """Waits until no connection to any of ports is open, then until each port's destination row
        has nothing in flight (and, given want_calls {port: n}, has counted n calls or failures)."""
        for p in ports:
            left = wait_closed(p)
            self.check(not left, "connections to %d still open 10 s after the load" % p, left, "none")

        def done(st):
            for p in ports:
                r = find_dest(st, dest_text(p))
                if r is None or r["inflight"] != 0:
                    return False
                if want_calls and r["calls"] + r["failed"] < want_calls.get(p, 0):
                    return False
                i = inbound_row(st, p)
                if i is not None and i["inflight"] != 0:
                    return False
            return True

        self.daemon.wait_for(done, timeout=SETTLE_S)
        # The status that satisfied done may come from a poll taken just before the last close was
        # counted: the figures asserted on are those of polls taken after it.
        time.sleep(2 * INTERVAL_MS / 1000)
        return self.daemon.status()

    def row(self, st, port):
        r = find_dest(st, dest_text(port))
        if r is None:
            self.fail("no destination row %s; daemon: %s" % (dest_text(port), self.daemon.summary()))
        return r

    def inbound(self, st, port):
        r = inbound_row(st, port)
        if r is None:
            self.fail("no inbound row for port %d: %s" % (port, json.dumps(st.get("inbound"))))
        return r

    def idle_after(self, st, port, prefix=""):
        """The common contract once every connection is closed: nothing in flight on either end."""
        r, i = self.row(st, port), self.inbound(st, port)
        self.eq(prefix + "outbound inflight after close", r["inflight"], 0)
        self.eq(prefix + "outbound oldest_inflight_ms after close", r["oldest_inflight_ms"], 0)
        self.eq(prefix + "inbound inflight after close", i["inflight"], 0)
        # Goodbyes (doc/callmodel.md) are counted apart: shown with the figures, not asserted.
        self.figures[prefix.replace(" ", "_") + "dropped"] = (r.get("dropped"), i.get("dropped"))
        return r, i

    def nginx_ok(self, port, extra_listen="", server_extra=""):
        return start_nginx(self, self.dir, nginx_server("127.0.0.1:%d%s" % (port, extra_listen), OK_LOCATION,
                                                        server_extra), [port])


class Test1KeepAlive(RealTrafficCase):
    """nginx, HTTP/1.1 keep-alive (keepalive_requests raised so nginx never closes a connection itself)."""

    def test_ab_keepalive(self):
        require("ab")
        port = free_port()
        self.nginx_ok(port)
        n = 20000
        res, out = ab(["-k", "-n", str(n), "-c", "4"], "http://127.0.0.1:%d/" % port)
        self.assertEqual((res["complete"], res["failed"], res["non2xx"]), (n, 0, 0), "ab's own result:\n" + out)
        st = self.settled([port], {port: n})
        r, i = self.idle_after(st, port)
        self.record("ab -k", calls=r["calls"], failed=r["failed"], inflight=r["inflight"],
                    in_requests=i["requests"], in_failed=i["failed"], dw_p50_ms=r["p50_ms"],
                    in_p50_ms=i["p50_ms"], ab_mean_ms=res["mean_ms"], ab_p50_ms=res["p50_ms"],
                    connects=r["connects"], multiplexed=r.get("multiplexed_conns"))
        self.eq("calls (ab completed %d)" % n, r["calls"], n)
        self.eq("failed", r["failed"], 0)
        self.eq("inbound requests", i["requests"], n)
        self.eq("inbound failed", i["failed"], 0)
        # One request at a time per connection: nothing to flag.
        self.eq("multiplexed_conns (plain keep-alive HTTP/1.1)", r.get("multiplexed_conns"), 0)
        # ab's "time per request" is its run time x concurrency / requests: every call depwatch
        # times lies inside one of ab's request spans, so the calls' mean is below it. The median is
        # below the mean for latencies (skewed to the right: a floor and a tail); a bucket (6.25%)
        # for depwatch's percentile, and 50 us for ab's own loop between its timestamp and its send.
        self.check(r["p50_ms"] is not None and r["p50_ms"] <= res["mean_ms"] * (1 + BUCKET) + 0.05,
                   "p50_ms vs ab's mean %.3f ms" % res["mean_ms"], r["p50_ms"], "<= mean + 6.25% + 50 us")
        self.verdict()

    def test_wrk_keepalive(self):
        require("wrk")
        port = free_port()
        self.nginx_ok(port)
        conns = 8
        res, out = wrk(["-t2", "-c%d" % conns, "-d5s"], "http://127.0.0.1:%d/" % port)
        self.assertEqual(res["errors"], 0, "wrk's own errors:\n" + out)
        st = self.settled([port], {port: res["requests"]})
        r, i = self.idle_after(st, port)
        self.record("wrk", calls=r["calls"], failed=r["failed"], wrk_requests=res["requests"],
                    wrk_timeouts=res["timeouts"],
                    in_requests=i["requests"], in_failed=i["failed"], dw_p50_ms=r["p50_ms"],
                    wrk_p50_ms=res["p50_ms"], wrk_mean_ms=res["mean_ms"], multiplexed=r.get("multiplexed_conns"))
        # wrk stops with up to one request outstanding per connection: those may have been answered
        # (a call wrk never counted) or be cut off by wrk's close (a failure).
        self.check(res["requests"] <= r["calls"] <= res["requests"] + conns,
                   "calls vs wrk's %d requests" % res["requests"], r["calls"], "within [wrk, wrk + %d]" % conns)
        self.check(r["failed"] <= conns, "failed", r["failed"], "<= %d (abandoned at wrk's stop)" % conns)
        self.check(r["calls"] + r["failed"] <= res["requests"] + conns, "calls + failed", r["calls"] + r["failed"],
                   "<= wrk + %d" % conns)
        # The server's end of the same requests: the abandoned ones at most fail there too.
        self.check(i["failed"] <= conns, "inbound failed", i["failed"], "<= %d (abandoned at wrk's stop)" % conns)
        self.check(res["requests"] <= i["requests"] <= res["requests"] + conns,
                   "inbound requests vs wrk's %d" % res["requests"], i["requests"], "within [wrk, wrk + %d]" % conns)
        self.eq("multiplexed_conns (plain keep-alive HTTP/1.1)", r.get("multiplexed_conns"), 0)
        # wrk's percentile is taken in user space around each request: the wire-level p50 cannot be
        # above it by more than a bucket (+ 50 us for wrk's own print resolution and event loop).
        self.check(r["p50_ms"] is not None and r["p50_ms"] <= res["p50_ms"] * (1 + BUCKET) + 0.05,
                   "p50_ms vs wrk's p50 %.3f ms" % res["p50_ms"], r["p50_ms"], "<= wrk p50 + 6.25% + 50 us")
        self.verdict()


class Test2ConnPerRequest(RealTrafficCase):
    def test_ab_connection_per_request(self):
        require("ab")
        port = free_port()
        self.nginx_ok(port)
        n = 5000
        res, out = ab(["-n", str(n), "-c", "4"], "http://127.0.0.1:%d/" % port)
        self.assertEqual((res["complete"], res["failed"], res["non2xx"]), (n, 0, 0), "ab's own result:\n" + out)
        st = self.settled([port], {port: n})
        r, i = self.idle_after(st, port)
        self.record("ab (no -k)", calls=r["calls"], failed=r["failed"], connects=r["connects"],
                    in_requests=i["requests"], in_failed=i["failed"], dw_p50_ms=r["p50_ms"],
                    in_p50_ms=i["p50_ms"], ab_mean_ms=res["mean_ms"], ab_p50_ms=res["p50_ms"])
        self.eq("calls (ab completed %d)" % n, r["calls"], n)
        self.eq("failed", r["failed"], 0)
        self.eq("inbound requests", i["requests"], n)
        self.eq("inbound failed", i["failed"], 0)
        # The same requests seen from both ends: the client's call spans the server's handling of
        # it, and both go through the same histogram, so the p50s keep that order exactly.
        self.check(r["p50_ms"] is not None and i["p50_ms"] is not None and r["p50_ms"] >= i["p50_ms"],
                   "outbound p50 vs inbound p50 %s ms" % i["p50_ms"], r["p50_ms"], ">= inbound p50")
        self.verdict()


class Test3TLS(RealTrafficCase):
    """nginx with a certificate made at test time. The breaker case's port is chosen before the
    daemon starts, so the class's config can make it a dependency with max_inflight = 50."""

    dep_port = None

    @classmethod
    def config_text(cls):
        cls.dep_port = free_port()
        return "[dependency tlsdep]\nmatch = 127.0.0.1:%d\nmax_inflight = 50\n" % cls.dep_port

    def nginx_tls(self, port):
        cert, key = make_cert(self.dir)
        return self.nginx_ok(port, " ssl", "        ssl_certificate %s;\n        ssl_certificate_key %s;\n"
                             % (cert, key))

    def test_ab_tls(self):
        require("ab", "openssl")
        port = free_port()
        self.nginx_tls(port)
        n = 500
        res, out = ab(["-n", str(n), "-c", "4"], "https://127.0.0.1:%d/" % port)
        self.assertEqual((res["complete"], res["failed"], res["non2xx"]), (n, 0, 0), "ab's own result:\n" + out)
        st = self.settled([port], {port: n})
        r, i = self.idle_after(st, port)
        self.record("ab https", calls=r["calls"], failed=r["failed"], inflight=r["inflight"],
                    oldest_ms=r["oldest_inflight_ms"], connects=r["connects"], in_requests=i["requests"],
                    in_failed=i["failed"], in_inflight=i["inflight"], dw_p50_ms=r["p50_ms"],
                    in_p50_ms=i["p50_ms"], ab_mean_ms=res["mean_ms"], ab_p50_ms=res["p50_ms"])
        # Read from the plaintext at OpenSSL (doc/callmodel.md, TLS): one call per request, the
        # handshake none; connections beyond ab's (the readiness probe) carry no request.
        self.eq("calls (ab completed %d)" % n, r["calls"], n)
        self.eq("inbound requests", i["requests"], n)
        self.check(r["p50_ms"] is not None and i["p50_ms"] is not None and r["p50_ms"] >= i["p50_ms"],
                   "outbound p50 vs inbound p50 %s ms" % i["p50_ms"], r["p50_ms"], ">= inbound p50")
        self.eq("inflight", r["inflight"], 0)
        self.eq("failed", r["failed"], 0)
        self.eq("inbound failed", i["failed"], 0)
        self.verdict()

    def test_wrk_tls_keepalive(self):
        require("wrk", "openssl")
        port = free_port()
        self.nginx_tls(port)
        conns = 8
        res, out = wrk(["-t2", "-c%d" % conns, "-d5s"], "https://127.0.0.1:%d/" % port)
        self.assertEqual(res["errors"], 0, "wrk's own errors:\n" + out)
        st = self.settled([port], {port: res["requests"]})
        r, i = self.idle_after(st, port)
        self.record("wrk https", calls=r["calls"], failed=r["failed"], inflight=r["inflight"],
                    wrk_requests=res["requests"], wrk_timeouts=res["timeouts"], in_requests=i["requests"],
                    in_failed=i["failed"],
                    dw_p50_ms=r["p50_ms"], wrk_p50_ms=res["p50_ms"], wrk_mean_ms=res["mean_ms"])
        # Every request wrk counted is a call; the handshake's round trips may be calls of their own
        # too (doc/callmodel.md), so no upper bound on calls here: the contract is the failures.
        # As in the plain case, up to one request per connection is outstanding at wrk's stop.
        self.check(r["calls"] >= res["requests"], "calls vs wrk's %d requests" % res["requests"], r["calls"],
                   ">= wrk's count")
        self.check(r["failed"] <= conns, "failed", r["failed"], "<= %d (abandoned at wrk's stop)" % conns)
        self.check(i["failed"] <= conns, "inbound failed", i["failed"], "<= %d (abandoned at wrk's stop)" % conns)
        self.verdict()

    def test_tls_breaker_stays_closed(self):
        require("ab", "openssl")
        port = self.dep_port
        self.nginx_tls(port)
        n = 300
        seen = {"states": set(), "max_inflight": 0}
        stop = threading.Event()

        def watch():
            while not stop.is_set():
                dep = dependency(self.daemon.status(), "tlsdep")
                if dep:
                    seen["states"].add(dep["breaker"])
                    seen["max_inflight"] = max(seen["max_inflight"], dep["inflight"])
                time.sleep(0.05)

        t = threading.Thread(target=watch, daemon=True)
        t.start()
        try:
            res, out = ab(["-n", str(n), "-c", "4"], "https://127.0.0.1:%d/" % port)
        finally:
            stop.set()
            t.join(10)
        self.assertEqual((res["complete"], res["failed"]), (n, 0), "ab's own result:\n" + out)
        st = self.settled([port], {port: n})
        r, i = self.idle_after(st, port)
        dep = dependency(st, "tlsdep")
        with open(self.events) as f:
            events = [json.loads(l) for l in f if l.strip()]
        transitions = [e for e in events if e.get("dependency") == "tlsdep" and e.get("event") == "transition"]
        self.record("ab https breaker", calls=r["calls"], failed=r["failed"], dep_inflight=dep["inflight"],
                    max_inflight_seen=seen["max_inflight"], states=sorted(seen["states"]),
                    breaker=dep["breaker"], reason=dep["reason"], transitions=len(transitions))
        # ab keeps at most 4 requests in flight: the dependency never nears its 50.
        self.eq("breaker states seen during the load", sorted(seen["states"]), ["closed"])
        self.eq("breaker after", dep["breaker"], "closed")
        self.eq("transitions in the events file", transitions, [])
        self.check(seen["max_inflight"] <= 4, "dependency inflight seen", seen["max_inflight"], "<= 4 (ab -c 4)")
        self.check(r["calls"] >= n, "calls", r["calls"], ">= ab's %d requests" % n)
        self.eq("failed", r["failed"], 0)
        self.verdict()


class Test4ReverseProxy(RealTrafficCase):
    DELAY_MS = 200

    def test_proxy_keepalive_pool(self):
        require("ab")
        front, up = free_port(), free_port()
        body = ("    upstream backend {\n        server 127.0.0.1:%d;\n        keepalive 8;\n    }\n" % up
                + nginx_server("127.0.0.1:%d" % front,
                               "            proxy_pass http://backend;\n            proxy_http_version 1.1;\n"
                               "            proxy_set_header Connection \"\";\n")
                + nginx_server("127.0.0.1:%d" % up,
                               "            echo_sleep %.3f;\n            echo ok;\n" % (self.DELAY_MS / 1000)))
        srv = start_nginx(self, self.dir, body, [front, up], echo=True)
        n = 200
        res, out = ab(["-k", "-n", str(n), "-c", "4"], "http://127.0.0.1:%d/" % front)
        self.assertEqual((res["complete"], res["failed"], res["non2xx"]), (n, 0, 0), "ab's own result:\n" + out)
        left = wait_closed(front)
        self.check(not left, "connections to the front still open", left, "none")
        # The upstream pool stays open, idle: nothing may be in flight on it.
        st = self.daemon.wait_for(lambda s: find_dest(s, dest_text(front))["calls"] >= n
                                  and find_dest(s, dest_text(up))["calls"] >= n
                                  and find_dest(s, dest_text(up))["inflight"] == 0, timeout=SETTLE_S)
        fr, ur = self.row(st, front), self.row(st, up)
        self.eq("upstream inflight with the pool idle", ur["inflight"], 0)
        self.record("proxy (pool open)", front_calls=fr["calls"], up_calls=ur["calls"], front_failed=fr["failed"],
                    up_failed=ur["failed"], up_connects=ur["connects"], up_p50_ms=ur["p50_ms"],
                    front_p50_ms=fr["p50_ms"], ab_mean_ms=res["mean_ms"], ab_p50_ms=res["p50_ms"])
        # nginx's exit closes the idle pool from the client side: no call was outstanding on it.
        srv.stop()
        st = self.settled([front, up])
        fr, fi = self.idle_after(st, front, "front ")
        ur, ui = self.idle_after(st, up, "upstream ")
        self.record("proxy (closed)", front_calls=fr["calls"], up_calls=ur["calls"], front_failed=fr["failed"],
                    up_failed=ur["failed"], up_in_requests=ui["requests"], up_in_failed=ui["failed"],
                    front_in_requests=fi["requests"], front_in_failed=fi["failed"])
        self.eq("front calls", fr["calls"], n)
        self.eq("upstream calls", ur["calls"], n)
        self.eq("front failed", fr["failed"], 0)
        self.eq("upstream failed", ur["failed"], 0)
        self.eq("upstream inbound requests", ui["requests"], n)
        self.eq("upstream inbound failed", ui["failed"], 0)
        self.eq("front inbound requests", fi["requests"], n)
        self.eq("front inbound failed", fi["failed"], 0)
        # echo_sleep holds each answer 200 ms (a timer; wire and loop add well under a millisecond):
        # the percentile read from a bucket is within its width, 6.25%, of the true value; 5% is
        # asked as the issue does, since the delay sits in one bucket.
        self.check(ur["p50_ms"] is not None and abs(ur["p50_ms"] - self.DELAY_MS) <= 0.05 * self.DELAY_MS,
                   "upstream p50_ms", ur["p50_ms"], "within 5%% of %d ms" % self.DELAY_MS)
        self.verdict()


class Test5Redis(RealTrafficCase):
    def test_redis_benchmark(self):
        require("redis-server", "redis-benchmark", "redis-cli")
        port = free_port()
        start_redis(self, self.dir, port)
        n = 20000
        res, _ = redis_benchmark(port, ["-t", "get,set", "-n", str(n), "-c", "4"])
        # total_commands_processed counts every command redis ran before this INFO, not the INFO
        # itself: one more call. Without -P every command is a call of its own, except the pair
        # redis-benchmark sends first on a connection of its own (getRedisConfig appends CONFIG GET
        # save and CONFIG GET appendonly, then reads both replies): one burst, so one call.
        redis_count, per_cmd = redis_info_stats(port)
        config_pair = per_cmd.get("config|get", 0)
        want = redis_count + 1 - max(config_pair - 1, 0)
        st = self.settled([port], {port: want})
        r, i = self.idle_after(st, port)
        self.record("redis-benchmark", calls=r["calls"], failed=r["failed"], redis_count=redis_count,
                    config_get=config_pair, want=want,
                    in_requests=i["requests"], in_failed=i["failed"], dw_p50_ms=r["p50_ms"],
                    in_p50_ms=i["p50_ms"], bench_p50_ms={k: v.get("p50_latency_ms") for k, v in res.items()},
                    multiplexed=r.get("multiplexed_conns"))
        self.eq("calls (redis total_commands_processed %d + the INFO - the CONFIG GET pair's 2nd)"
                % redis_count, r["calls"], want)
        self.eq("failed", r["failed"], 0)
        self.eq("inbound requests", i["requests"], want)
        # redis-benchmark closes its idle keep-alive connections: no request was outstanding.
        self.eq("inbound failed", i["failed"], 0)
        self.verdict()

    def test_redis_pipelined(self):
        require("redis-server", "redis-benchmark", "redis-cli")
        port = free_port()
        start_redis(self, self.dir, port)
        n = 20000
        res, _ = redis_benchmark(port, ["-P", "16", "-t", "get", "-n", str(n), "-c", "2"])
        redis_count, _ = redis_info_stats(port)
        st = self.settled([port])
        r, i = self.idle_after(st, port)
        self.record("redis-benchmark -P 16", calls=r["calls"], failed=r["failed"], redis_count=redis_count,
                    in_requests=i["requests"], in_failed=i["failed"], dw_p50_ms=r["p50_ms"],
                    bench_p50_ms={k: v.get("p50_latency_ms") for k, v in res.items()},
                    multiplexed=r.get("multiplexed_conns"), burst=r.get("burst_timings"))
        # redis-benchmark writes each batch of 16 in one send and waits for all 16 answers: on the
        # wire that is one request with a long answer, which depwatch cannot tell from one
        # (doc/callmodel.md, "Limits": missed). What holds: one call per batch, never more calls
        # than commands.
        batches = (n + 15) // 16
        self.check(batches <= r["calls"] <= batches + 16, "calls (one per batch of 16)", r["calls"],
                   "in [%d, %d]" % (batches, batches + 16))
        self.eq("failed", r["failed"], 0)
        self.eq("inbound failed", i["failed"], 0)
        self.verdict()


class Test6HTTP2(RealTrafficCase):
    """Cleartext HTTP/2 (h2c, prior knowledge) is counted per stream (doc/callmodel.md, "HTTP/2 and
    gRPC"): h2load's own request count, exactly, on both ends; over TLS too, the frames read from
    the plaintext at OpenSSL (doc/callmodel.md, TLS)."""

    def h2c_checks(self, name, port, res, conns):
        st = self.settled([port], {port: res["succeeded"]})
        r, i = self.idle_after(st, port)
        self.record(name, calls=r["calls"], failed=r["failed"], streams=r.get("streams"), h2_done=res["done"],
                    h2_conns=r.get("h2_conns"), h2_desync=r.get("h2_desync"), in_requests=i["requests"],
                    in_failed=i["failed"], dw_p50_ms=r["p50_ms"], in_p50_ms=i["p50_ms"],
                    h2load_mean_ms=res["mean_ms"], multiplexed=r.get("multiplexed_conns"),
                    in_streams=i.get("streams"), in_h2_conns=i.get("h2_conns"), in_h2_desync=i.get("h2_desync"),
                    in_untracked=i.get("streams_untracked"), in_multiplexed=i.get("multiplexed_conns"))
        self.eq("calls (h2load succeeded %d)" % res["succeeded"], r["calls"], res["succeeded"])
        self.eq("failed", r["failed"], 0)
        self.eq("streams", r.get("streams"), res["succeeded"])
        self.eq("h2_conns", r.get("h2_conns"), conns)
        self.eq("h2_desync", r.get("h2_desync"), 0)
        self.eq("multiplexed_conns (streams are calls, not bursts)", r.get("multiplexed_conns"), 0)
        self.eq("inbound h2_desync", i.get("h2_desync"), 0)
        self.eq("inbound requests", i["requests"], res["succeeded"])
        self.eq("inbound failed", i["failed"], 0)
        # a stream's first response byte comes inside h2load's request span (a bucket, 6.25%, for
        # the percentile, 50 us for h2load's own loop); and the server's end of a stream lies inside
        # the client's, through the same histogram: the p50s keep that order exactly
        self.check(r["p50_ms"] is not None and r["p50_ms"] <= res["mean_ms"] * (1 + BUCKET) + 0.05,
                   "p50_ms vs h2load's mean %.3f ms" % res["mean_ms"], r["p50_ms"], "<= mean + 6.25% + 50 us")
        self.check(r["p50_ms"] is not None and i["p50_ms"] is not None and r["p50_ms"] >= i["p50_ms"],
                   "outbound p50 vs inbound p50 %s ms" % i["p50_ms"], r["p50_ms"], ">= inbound p50")
        self.verdict()

    def test_nginx_h2c(self):
        require("h2load")
        port = free_port()
        self.nginx_ok(port, " http2")
        res, out = h2load(["-n", "20000", "-c", "2", "-m", "10"], "http://127.0.0.1:%d/" % port)
        self.assertEqual((res["succeeded"], res["failed"]), (20000, 0), "h2load's own result:\n" + out)
        self.h2c_checks("h2load nginx h2c", port, res, 2)

    def test_nghttpd(self):
        require("h2load", "nghttpd")
        port = free_port()
        docroot = os.path.join(self.dir, "www")
        os.mkdir(docroot)
        with open(os.path.join(docroot, "index.html"), "w") as f:
            f.write("ok\n")
        start_nghttpd(self, self.dir, port, docroot)
        res, out = h2load(["-n", "20000", "-c", "2", "-m", "10"], "http://127.0.0.1:%d/index.html" % port)
        self.assertEqual((res["succeeded"], res["failed"]), (20000, 0), "h2load's own result:\n" + out)
        self.h2c_checks("h2load nghttpd", port, res, 2)

    def tls_run(self, alpn):
        require("h2load", "openssl")
        port = free_port()
        cert, key = make_cert(self.dir)
        self.nginx_ok(port, " ssl http2", "        ssl_certificate %s;\n        ssl_certificate_key %s;\n"
                      % (cert, key))
        args = ["-n", "5000", "-c", "2", "-m", "10"] + (["--npn-list=" + alpn] if alpn else [])
        res, out = h2load(args, "https://127.0.0.1:%d/" % port)
        self.assertEqual((res["succeeded"], res["failed"]), (5000, 0), "h2load's own result:\n" + out)
        st = self.settled([port])
        r, i = self.idle_after(st, port)
        self.record("h2load nginx TLS h2 (ALPN %s)" % (alpn or "default"), calls=r["calls"], failed=r["failed"],
                    h2_done=res["done"], multiplexed=r.get("multiplexed_conns"), burst=r.get("burst_timings"),
                    burst_calls=r.get("burst_calls"), streams=r.get("streams"), in_requests=i["requests"])
        # the frames read from the plaintext at OpenSSL (doc/callmodel.md, TLS): one call per stream,
        # on both ends, none a burst
        self.eq("calls (h2load succeeded %d)" % res["succeeded"], r["calls"], res["succeeded"])
        self.eq("streams", r.get("streams"), res["succeeded"])
        self.eq("burst_calls", r.get("burst_calls"), 0)
        self.eq("inbound requests", i["requests"], res["succeeded"])
        self.eq("failed", r["failed"], 0)
        return r

    def test_nginx_tls_h2_only(self):
        """h2load offering h2 alone: every stream a call (the ClientHello still flags the
        connections multiplexed at the record level, which no call of theirs is timed by)."""
        self.tls_run("h2")
        self.verdict()

    def test_nginx_tls_h2_default_alpn(self):
        """h2load's default ALPN list (h2, ..., http/1.1): the plaintext says HTTP/2 whichever way
        the encrypted choice went, so the same counts as with h2 alone."""
        self.tls_run(None)
        self.verdict()


class Test7HaproxyTCP(RealTrafficCase):
    def test_haproxy_tcp(self):
        require("ab", "haproxy")
        back, front = free_port(), free_port()
        self.nginx_ok(back)
        start_haproxy(self, self.dir, front, back)
        n = 5000
        res, out = ab(["-k", "-n", str(n), "-c", "4"], "http://127.0.0.1:%d/" % front)
        self.assertEqual((res["complete"], res["failed"], res["non2xx"]), (n, 0, 0), "ab's own result:\n" + out)
        st = self.settled([front, back], {front: n, back: n})
        fr, fi = self.idle_after(st, front, "front ")
        br, bi = self.idle_after(st, back, "back ")
        self.record("haproxy tcp", front_calls=fr["calls"], back_calls=br["calls"], front_failed=fr["failed"],
                    back_failed=br["failed"], front_in_failed=fi["failed"], back_in_failed=bi["failed"],
                    front_p50_ms=fr["p50_ms"], back_p50_ms=br["p50_ms"], ab_mean_ms=res["mean_ms"])
        self.eq("front calls", fr["calls"], n)
        self.eq("back calls", br["calls"], n)
        self.eq("front failed", fr["failed"], 0)
        self.eq("back failed", br["failed"], 0)
        self.eq("front inbound failed", fi["failed"], 0)
        self.eq("back inbound failed", bi["failed"], 0)
        self.eq("front inbound requests", fi["requests"], n)
        self.eq("back inbound requests", bi["requests"], n)
        # Each call through haproxy spans its call to nginx; as in Test1, no wider than ab's mean.
        self.check(fr["p50_ms"] is not None and br["p50_ms"] is not None and fr["p50_ms"] >= br["p50_ms"],
                   "front p50 vs back p50 %s ms" % br["p50_ms"], fr["p50_ms"], ">= back p50")
        self.check(fr["p50_ms"] is not None and fr["p50_ms"] <= res["mean_ms"] * (1 + BUCKET) + 0.05,
                   "front p50_ms vs ab's mean %.3f ms" % res["mean_ms"], fr["p50_ms"], "<= mean + 6.25% + 50 us")
        self.verdict()


if __name__ == "__main__":
    unittest.main()
