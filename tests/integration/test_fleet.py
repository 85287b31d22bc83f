"""The fleet layer (issue 49, doc/fleet.md): the monitoring mixin's rules, alerts and dashboards.

Test01MixinRules (backend-independent: no daemon): `make mixin` renders from a fresh clone (a
copy of the files git tracks, as they are in the tree: no build/, nothing untracked), and
`promtool check rules` and `promtool test rules` pass on what it rendered (mixin/tests.yaml: series
for every alert, where it fires and where it stays silent). Here rather than in `make check`,
which promises no installed packages: promtool and jsonnet are Debian packages `make deps` installs.

Test02Pipeline: a real pipeline from Debian's packages. Two depwatch daemons stand in for two hosts
(instances host-a and host-b), each scraped by its own Prometheus in agent mode that remote-writes
to a central Prometheus (its remote-write receiver on), which evaluates the mixin rendered with
short `for` durations and sends to prometheus-alertmanager (the mixin's inhibit_rules in its
config), which posts to a webhook the test serves. The dependency "pay" of each host is a server
of its own (host-a's and host-b's replica); the test makes them hang, the ground truth it knows:
first host-a's alone (host-a's alerts arrive, no fleet alert, nothing of host-b), then host-b's too
(one DepwatchDependencySlowFleetWide arrives, for pay, "2 of 2"; host-b's per-host alerts reach
Alertmanager and are inhibited by it). Then every dashboard panel's query runs on the central
Prometheus and returns series, pay's among them.

Both daemons run on one kernel, so each sees the other's calls too. Each host's config says what is
its own: `[dependency pay]` matches its replica alone, and `[defaults] ignore = yes` makes every
other destination (the other host's replica, the pipeline's own traffic, anything else on the
machine) a dependency the daemon traces but never judges, which the mixin never judges either
(depwatch_dependency_ignored, mixin/lib.libsonnet). So each host judges exactly the dependency the
test controls, and the isolation is itself under test: in phase 1 host-b's daemon sees host-a's
replica hang, as an ignored dependency, and no alert of host-b may arrive. (Isolating them with
--max-series 1 instead, as this test did first, left no caller series at all: under a cap of 1 the
callers' one line is their ~other as soon as there are two, so the Callers panel had nothing.)
Every option else is the daemon's default, --max-series 150 among them.
"""

# Its prometheus and alertmanager are Go programs every daemon on the host probes, and it counts its own
# two daemons' alerts: no daemon of make test's other pass lives while it runs (tests/integration/suitelock.py).
RUNS_ALONE_ON_HOST = True

import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
import unittest

import harness
from harness import Daemon, DaemonTestCase, LoopbackServer, free_port
import fleetpipe

# The mixin as the pipeline test renders it: config.libsonnet's defaults but for the windows and
# `for` durations, short enough for a test and in the order the inhibition needs: the fleet
# alert (2 s) fires before the per-host alerts of the second host (8 s) reach Alertmanager.
CONFIG = {
    "rateInterval": "20s",
    "breakerOpenFor": "8s",
    "highSlowRateFor": "8s",
    "callsHangingFor": "8s",
    "inflightNearLimitFor": "8s",
    "retryStormFor": "8s",
    "downFor": "8s",
    "fleetSlowFor": "2s",
}
SLOW_CALL = "300ms"
# What a host's daemon raises about a dependency that stops answering (open-loop callers):
# the breaker opens, the breaker's slow share counts the hanging calls, the oldest call ages.
HOST_ALERTS = {"DepwatchBreakerOpen", "DepwatchHighSlowRate", "DepwatchCallsHanging"}
FLEET = "DepwatchDependencySlowFleetWide"
ALERT_WAIT = 60         # s: a hang to the webhook takes about 15 s (8 s of `for`, scrape, write, eval)


def iso(t):
    return time.strftime("%H:%M:%S", time.gmtime(t)) + ".%03d" % (t % 1 * 1000)


@harness.backend_independent
class Test01MixinRules(unittest.TestCase):
    def test_make_mixin_promtool_check_and_test(self):
        promtool = fleetpipe.need(self, "promtool", "prometheus")
        fleetpipe.need(self, "jsonnet", "jsonnet")
        out = tempfile.mkdtemp(prefix="dwtest-mixin-make-")
        self.addCleanup(shutil.rmtree, out, True)
        clone = os.path.join(out, "clone")
        ls = subprocess.run(["git", "-C", harness.REPO, "ls-files", "-z"], capture_output=True, timeout=60)
        self.assertEqual(ls.returncode, 0, ls.stderr)
        tracked = [p for p in ls.stdout.decode().split("\0") if p]
        self.assertIn("mixin/mixin.libsonnet", tracked)
        for p in tracked:
            if os.path.lexists(os.path.join(harness.REPO, p)):     # not one deleted in the tree
                os.makedirs(os.path.dirname(os.path.join(clone, p)), exist_ok=True)
                shutil.copy2(os.path.join(harness.REPO, p), os.path.join(clone, p), follow_symlinks=False)
        r = subprocess.run(["make", "-s", "-C", clone, "OUT=" + out, "mixin"], capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        mixin = os.path.join(out, "mixin")
        self.assertEqual(sorted(os.listdir(os.path.join(mixin, "dashboards"))),
                         ["depwatch-dependency.json", "depwatch-fleet.json", "depwatch-host.json"])
        r = subprocess.run([promtool, "check", "rules", os.path.join(mixin, "prometheus_rules.yaml"),
                            os.path.join(mixin, "prometheus_alerts.yaml")], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("SUCCESS: 10 rules found", r.stdout)      # the alerts file
        with open(os.path.join(mixin, "prometheus_alerts.yaml")) as f:
            names = re.findall(r'(?m)^\s+- alert: "?(\w+)"?$', f.read())
        self.assertEqual(sorted(names), sorted([
            "DepwatchBreakerOpen", "DepwatchHighSlowRate", "DepwatchInflightNearLimit", "DepwatchConnectsRejected",
            "DepwatchPoolExhaustionForecast", "DepwatchRetryStorm", "DepwatchDown",
            "DepwatchCallsHanging", "DepwatchDataLoss", FLEET]))
        # every alert has a case in the unit tests
        with open(os.path.join(mixin, "tests.yaml")) as f:
            tested = set(re.findall(r"alertname: (\w+)", f.read()))
        self.assertEqual(sorted(set(names) - tested), [])
        r = subprocess.run([promtool, "test", "rules", os.path.join(mixin, "tests.yaml")], capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("SUCCESS", r.stdout)
        # each runbook_url has its section in doc/runbooks.md (GitHub's anchor of "## Name")
        with open(os.path.join(harness.REPO, "doc", "runbooks.md")) as f:
            sections = {s.lower() for s in re.findall(r"(?m)^## (\w+)$", f.read())}
        self.assertEqual(sorted(n.lower() for n in names if n.lower() not in sections), [])


@harness.backend_independent
class Test02Pipeline(DaemonTestCase):
    def start_host(self, name, server, tmp):
        """A host: its depwatch (dependency pay = its own replica, every other destination
        ignored), with /metrics; not started."""
        conf = harness.write_config("[defaults]\nignore = yes\n\n[dependency pay]\nmatch = 127.0.0.1:%d\n"
                                    "slow_call = %s\nignore = no\n" % (server.port, SLOW_CALL))
        self.addCleanup(os.unlink, conf)
        mport = free_port()
        d = Daemon(extra_args=["-c", conf, "--metrics", "127.0.0.1:%d" % mport])
        d.host, d.mport = name, mport
        self._daemons.append(d)
        self.addCleanup(d.cleanup)
        return d

    def test_hang_on_one_host_then_both(self):
        began = time.monotonic()
        tmp = tempfile.mkdtemp(prefix="dwtest-fleet-")
        self.addCleanup(shutil.rmtree, tmp, True)
        mixin = fleetpipe.render_mixin(self, CONFIG)
        srv = {h: LoopbackServer("127.0.0.1", mode="delay", delay=0.02) for h in ("host-a", "host-b")}
        for s in srv.values():
            self.addCleanup(s.close)
        daemons = {h: self.start_host(h, srv[h], tmp) for h in srv}
        # both daemons start at once: a start is mostly the verifier's, seconds each
        errors = []

        def start(d):
            try:
                d.start()
            except harness.DaemonError as e:
                errors.append(str(e))
        threads = [threading.Thread(target=start, args=(d,)) for d in daemons.values()]
        for t in threads:
            t.start()
        for t in threads:
            t.join(harness.START_TIMEOUT + 5)
        self.assertEqual(errors, [])
        self.assertTrue(all(d.running() for d in daemons.values()),
                        "daemons: " + " / ".join(d.stderr_text() for d in daemons.values()))
        hook = fleetpipe.Webhook(self)
        am = fleetpipe.Alertmanager(self, tmp, hook.port, os.path.join(mixin, "alertmanager_inhibit_rules.yaml"))
        central = fleetpipe.Central(self, tmp, mixin, am.port)
        for h, d in daemons.items():
            fleetpipe.start_agent(self, tmp, "agent-" + h, "127.0.0.1:%d" % d.mport, h, central.port)
        # 16 calls/s: a hang fills the breaker's sample (20 calls) in little more than a second.
        callers = {h: fleetpipe.Caller(self, srv[h].port, rate=16, cap=1200) for h in srv}
        ready = time.monotonic()

        # Both hosts call pay, through the whole pipeline: the fleet rule counts them.
        calling = 'dependency:depwatch_hosts_calling:count{dependency="pay"}'
        deadline = time.monotonic() + 40
        while central.value(calling) != 2 and time.monotonic() < deadline:
            time.sleep(0.5)
        self.assertEqual(central.value(calling), 2, "hosts calling pay, as the central Prometheus has it; "
                         "agents: %s" % central.query('count by (instance) (up{job="depwatch"})'))
        self.assertEqual(central.value('dependency:depwatch_hosts_slow:sum{dependency="pay"}'), 0)

        # Phase 1: host-a's pay stops answering (no error: it holds every request).
        hang_a = time.time()
        srv["host-a"].mode = "hold"

        def host_alerts(got, host):
            return {a["labels"]["alertname"] for _, a in got
                    if a["labels"].get("instance") == host and a["labels"].get("dependency") == "pay"}
        got = hook.wait(lambda g: host_alerts(g, "host-a") >= HOST_ALERTS, ALERT_WAIT)
        phase1 = time.time()
        self.assertEqual(host_alerts(got, "host-a"), HOST_ALERTS,
                         "host-a's alerts at the webhook %.0f s after its pay hung: %s" % (phase1 - hang_a, got))
        # host-a has judged pay slow for longer than the fleet alert's `for` by now (its own alerts
        # wait 8 s): one host of two, and no fleet alert, not even pending, nor anything of host-b.
        self.assertEqual(central.value('dependency:depwatch_hosts_slow:sum{dependency="pay"}'), 1)
        self.assertEqual(central.value(calling), 2)
        self.assertEqual(central.query('ALERTS{alertname="%s"}' % FLEET), [])
        self.assertEqual(central.query('count_over_time(ALERTS{alertname="%s"}[10m])' % FLEET), [])
        # host-b's daemon has seen host-a's replica hang too, as a dependency of its own that its
        # config ignores (older than hangingFactor x slow_call, marked ignored): the mixin judges
        # it not, so nothing of host-b arrived above.
        a_dest = 'instance="host-b",dependency="127.0.0.1:%d"' % srv["host-a"].port
        self.assertEqual(central.value('depwatch_dependency_ignored{%s}' % a_dest), 1)
        self.assertGreater(central.value('depwatch_oldest_inflight_seconds{%s}' % a_dest), 3 * 0.3)
        self.assertEqual(central.query('instance_dependency:depwatch_calling:bool{%s}' % a_dest), [])
        others = [a["labels"] for _, a in got if a["labels"].get("instance") != "host-a"
                  or a["labels"].get("dependency") != "pay"]
        self.assertEqual(others, [], "alerts beside host-a's about pay")

        # Every dashboard panel's query, as Grafana would send it for job depwatch, host-b and pay,
        # runs on the central Prometheus and returns series; where they name dependencies, pay.
        # Now, while host-b's calls to pay end.
        checked = self.check_dashboards(central, mixin, "host-b")

        # Phase 2: host-b's pay hangs too.
        hang_b = time.time()
        srv["host-b"].mode = "hold"
        got = hook.wait(lambda g: any(a["labels"]["alertname"] == FLEET for _, a in g), ALERT_WAIT)
        fleet = [(t, a) for t, a in got if a["labels"]["alertname"] == FLEET]
        self.assertEqual(len(fleet), 1, "fleet alerts at the webhook %.0f s after host-b's pay hung: %s"
                         % (time.time() - hang_b, got))
        received, alert = fleet[0]
        self.assertEqual(alert["labels"], {"alertname": FLEET, "job": "depwatch", "dependency": "pay",
                                           "severity": "critical"})
        ann = alert["annotations"]
        self.assertEqual((ann["slow_hosts"], ann["calling_hosts"]), ("2", "2"), ann)
        self.assertEqual(ann["summary"], "pay is slow from 2 of 2 hosts calling it")
        self.assertTrue(ann["runbook_url"].endswith("runbooks.md#depwatchdependencyslowfleetwide"), ann)

        # host-b's own alerts about pay reach Alertmanager and stay there, inhibited by the fleet
        # alert (Alertmanager's own API says so), and the webhook never gets them.
        def am_state():
            alerts = am.alerts()
            src = [a["fingerprint"] for a in alerts if a["labels"]["alertname"] == FLEET]
            b = {a["labels"]["alertname"]: a["status"] for a in alerts
                 if a["labels"].get("instance") == "host-b" and a["labels"].get("dependency") == "pay"}
            return src, b
        deadline = time.monotonic() + 30
        while True:
            src, b = am_state()
            if set(b) >= HOST_ALERTS or time.monotonic() >= deadline:
                break
            time.sleep(0.5)
        self.assertEqual(len(src), 1, src)
        self.assertTrue(set(b) >= HOST_ALERTS, "host-b's alerts in Alertmanager: %s" % b)
        for name, status in b.items():
            self.assertEqual((status["state"], status["inhibitedBy"]), ("suppressed", src), name)
        time.sleep(2)       # a group_wait and a group_interval: what Alertmanager would have sent by now
        self.assertEqual(host_alerts(hook.alerts(), "host-b"), set(), "host-b's pay alerts at the webhook")
        self.assertEqual(len([1 for _, a in hook.alerts() if a["labels"]["alertname"] == FLEET]), 1)

        # The path of the fleet alert, from host-b's hang to the webhook: host-b's depwatch says
        # the call hangs (a scrape of its agent), its breaker opens, the central Prometheus judges
        # it (the recording rule), the alert is pending, fires, and the webhook has it.
        b = 'instance="host-b",dependency="pay"'
        hanging = central.first_time('depwatch_oldest_inflight_seconds{%s} > 0.9' % b, hang_b)
        opened = central.first_time('depwatch_breaker_state{%s,state="open"} == 1' % b, hang_b)
        judged = central.first_time('instance_dependency:depwatch_judged_slow:bool{%s} == 1' % b, hang_b)
        active = central.query('ALERTS_FOR_STATE{alertname="%s",dependency="pay"}' % FLEET)
        starts = alert["startsAt"]
        print("\n    pipeline: daemons and pipeline up in %.1f s; %d dashboard queries checked"
              % (ready - began, checked))
        print("    host-a hung %s; its alerts at the webhook by %s (+%.1f s)"
              % (iso(hang_a), iso(phase1), phase1 - hang_a))
        t = lambda x: "%s (+%.1f s)" % (iso(x), x - hang_b) if x else "?"
        print("    host-b's pay hung %s; scraped with a call older than 3 x slow_call %s; breaker open %s; "
              "judged slow by the recording rule %s; %s pending since %s, firing (startsAt) %s; webhook received %s"
              % (iso(hang_b), t(hanging), t(opened), t(judged), FLEET,
                 t(float(active[0]["value"][1])) if active else "?", starts, t(received)))
        print("    wall time %.1f s" % (time.monotonic() - began))

    def check_dashboards(self, central, mixin, instance):
        n = 0
        for name in sorted(os.listdir(os.path.join(mixin, "dashboards"))):
            with open(os.path.join(mixin, "dashboards", name)) as f:
                dash = json.load(f)
            names = {v["name"] for v in dash["templating"]["list"]}
            self.assertIn("datasource", names, name)
            for p in dash["panels"]:
                for t in p["targets"]:
                    expr = (t["expr"].replace("$job", "depwatch").replace("$instance", instance)
                            .replace("$dependency", "pay").replace("$__rate_interval", "20s"))
                    self.assertNotIn("$", expr, "a variable the test does not know: %s" % expr)
                    res = central.query_raw(expr)
                    where = "%s / %s: %s" % (name, p["title"], expr)
                    self.assertEqual(res.get("status"), "success", "%s: %s" % (where, res))
                    self.assertNotIn("warnings", res, where)
                    series = res["data"]["result"]
                    self.assertTrue(series, "no series: " + where)
                    deps = {s["metric"]["dependency"] for s in series if "dependency" in s["metric"]}
                    if deps:
                        self.assertIn("pay", deps, where)
                    n += 1
        return n
