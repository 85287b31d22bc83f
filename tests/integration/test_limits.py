"""More connections than the connection map holds (--max-conns): the
syscalls backend tracks what fits, counts the rest, and keeps exact figures
for the connections it tracks; the sock backend's socket storage has no size,
so --max-conns is refused there with a clear error."""

import json
import os
import subprocess
import time
import unittest

import harness
from harness import Client, DaemonError, DaemonTestCase, LoopbackServer

MAX = 8
CONNS = 20


class ConnLimitTest(DaemonTestCase):
    def backend_of_run(self):
        return harness.BACKEND or "sock"

    def test_more_connections_than_the_map_holds(self):
        if self.backend_of_run() == "sock":
            d = harness.Daemon(extra_args=["--max-conns", str(MAX)])
            self.addCleanup(d.cleanup)
            with self.assertRaises(DaemonError):
                d.start()
            self.assertEqual(d.proc.returncode, 1)
            self.assertIn("--max-conns: the sock backend keeps connection state in socket storage, "
                          "which has no size", d.stderr_text())
            return
        d = self.start_daemon(extra_args=["--max-conns", str(MAX)])
        self.assertEqual(d.status()["kernel"]["conns_max"], MAX)
        failed_before = d.status()["kernel"]["conn_storage_fail"]
        # One server per connection: a tracked connection is a row of its own, with figures
        # the test knows (connection i makes i + 1 calls); an untracked one has no row.
        servers = [LoopbackServer(mode="hold") for _ in range(CONNS)]
        for s in servers:
            self.addCleanup(s.close)
        clients = []
        self.addCleanup(lambda: [c.close() for c in clients])
        for s in servers:
            clients.append(Client("127.0.0.1", s.port))
        # Every connection is either tracked (a row) or counted as not tracked.
        st = d.wait_for(lambda st: sum(1 for s in servers if harness.find_dest(st, s.dest)) +
                        st["kernel"]["conn_storage_fail"] - failed_before >= CONNS)
        tracked = [i for i, s in enumerate(servers) if harness.find_dest(st, s.dest)]
        untracked = st["kernel"]["conn_storage_fail"] - failed_before
        print("\n  --max-conns %d, %d connections: %d tracked (connections %s), %d counted in "
              "conn_storage_fail" % (MAX, CONNS, len(tracked), tracked, untracked))
        self.assertLessEqual(len(tracked), MAX)
        self.assertGreaterEqual(untracked, CONNS - len(tracked))
        if not tracked:
            # Only on a shared host: other processes' connections held every entry.
            self.skipTest("other connections on this host held all %d entries: none of ours to compare" % MAX)

        # One call held open on every connection: in flight exactly 1 on each tracked row.
        for c in clients:
            c.send_request()
        for s in servers:
            self.assertTrue(s.wait_requests(1))
        st = d.wait_for(lambda st: all(harness.find_dest(st, servers[i].dest)["inflight"] == 1 for i in tracked))
        for i in tracked:
            self.assertRow(harness.find_dest(st, servers[i].dest), {"inflight": 1, "calls": 0}, "held %d" % i)
        for s in servers:
            s.release()
        for i, c in enumerate(clients):
            c.read_response()
            for _ in range(i):
                c.call()
        st = d.wait_for(lambda st: all(harness.find_dest(st, servers[i].dest)["calls"] == i + 1 for i in tracked))
        exact = 0
        for i in tracked:
            self.assertRow(harness.find_dest(st, servers[i].dest),
                           {"calls": i + 1, "failed": 0, "inflight": 0, "connects": 1}, "tracked %d" % i)
            exact += i + 1
        print("  tracked calls %d/%d exact, in flight 0" % (exact, exact))
        self.assertTrue(any("connection map full (%d connections)" % MAX in line and "raise --max-conns" in line
                            for line in d.stderr_lines), d.stderr_text())

        self.assertEqual(conn_map_ports(d), {servers[i].port for i in tracked})

        # Closed connections leave the map: no entry of ours stays (nothing stuck).
        for c in clients:
            c.close()
        clients.clear()
        d.wait_for(lambda st: all(harness.find_dest(st, servers[i].dest)["inflight"] == 0 for i in tracked))
        deadline = time.monotonic() + 5
        while conn_map_ports(d) & {s.port for s in servers} and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(conn_map_ports(d) & {s.port for s in servers}, set())


def conn_map_ports(d):
    """Destination ports in the daemon's connection map (conns_sk), read with bpftool."""
    maps = json.loads(subprocess.run(["bpftool", "--json", "map", "show"], capture_output=True,
                                     check=True).stdout)
    held = set()
    fdinfo = "/proc/%d/fdinfo" % d.proc.pid
    for fd in os.listdir(fdinfo):
        try:
            with open(os.path.join(fdinfo, fd)) as f:
                held |= {int(l.split()[1]) for l in f if l.startswith("map_id:")}
        except OSError:
            pass
    ids = [m["id"] for m in maps if m.get("name") == "conns_sk" and m["id"] in held]
    if len(ids) != 1:
        raise AssertionError("conns_sk maps of pid %d: %r" % (d.proc.pid, ids))
    dump = json.loads(subprocess.run(["bpftool", "--json", "map", "dump", "id", str(ids[0])],
                                     capture_output=True, check=True).stdout)
    return {e["formatted"]["value"]["dest"]["port"] for e in dump}


if __name__ == "__main__":
    unittest.main()
