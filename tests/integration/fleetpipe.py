"""The pieces of test_fleet's pipeline, from Debian's packages: the mixin rendered with a config
of the test's, Prometheus (agent or central), prometheus-alertmanager, and a webhook that records
what Alertmanager posts. Each process gets fresh ports (harness.free_port) and a temp dir, is
stopped by the test's cleanups, and every wait is bounded. Python 3 standard library only."""

import http.server
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.parse
import urllib.request

import harness

MIXIN = os.path.join(harness.REPO, "mixin")


def need(tc, exe, package):
    path = shutil.which(exe)
    tc.assertIsNotNone(path, "%s not installed: `make test` installs it (scripts/deps.sh test: Debian package %s)"
                       % (exe, package))
    return path


def render_mixin(tc, config):
    """The mixin rendered into a temp dir with config (a dict of config.libsonnet's keys) over
    its defaults: jsonnet's own multi-file output of mixin/render.jsonnet, as `make mixin`."""
    jsonnet = need(tc, "jsonnet", "jsonnet")
    out = tempfile.mkdtemp(prefix="dwtest-mixin-")
    tc.addCleanup(shutil.rmtree, out, True)
    os.makedirs(os.path.join(out, "dashboards"))
    r = subprocess.run([jsonnet, "-S", "-m", out, "--tla-code", "config=" + json.dumps(config),
                        os.path.join(MIXIN, "render.jsonnet")], capture_output=True, text=True, timeout=60)
    tc.assertEqual(r.returncode, 0, "jsonnet: " + r.stderr)
    return out


def get_json(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.load(r)


class Proc:
    """One server process with its log in a temp dir, stopped by the test's cleanups."""

    def __init__(self, tc, name, argv, ready_url, tmp, timeout=30):
        self.name = name
        self.log_path = os.path.join(tmp, name + ".log")
        log = open(self.log_path, "w")
        tc.addCleanup(log.close)
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        tc.addCleanup(self.stop)
        deadline = time.monotonic() + timeout
        while True:
            tc.assertIsNone(self.proc.poll(), "%s exited: %s" % (name, self.tail()))
            try:
                with urllib.request.urlopen(ready_url, timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            if time.monotonic() >= deadline:
                tc.fail("%s not ready within %d s: %s" % (name, timeout, self.tail()))
            time.sleep(0.1)

    def tail(self, n=20):
        with open(self.log_path) as f:
            return "".join(f.readlines()[-n:])

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def start_agent(tc, tmp, name, target, instance, central_port):
    """Prometheus in agent mode: scrapes one depwatch every second as job "depwatch" with its own
    instance label (a host's name), and remote-writes to the central Prometheus."""
    prom = need(tc, "prometheus", "prometheus")
    port = harness.free_port()
    conf = write(os.path.join(tmp, name + ".yml"), """global:
  scrape_interval: 1s
scrape_configs:
  - job_name: depwatch
    static_configs:
      - targets: ['%s']
        labels: {instance: '%s'}
remote_write:
  - url: http://127.0.0.1:%d/api/v1/write
    queue_config: {batch_send_deadline: 500ms, min_backoff: 100ms, max_backoff: 1s}
""" % (target, instance, central_port))
    return Proc(tc, name, [prom, "--enable-feature=agent", "--config.file=" + conf,
                           "--storage.agent.path=" + os.path.join(tmp, name + "-wal"),
                           "--web.listen-address=127.0.0.1:%d" % port],
                "http://127.0.0.1:%d/-/ready" % port, tmp)


class Central:
    """The central Prometheus: the remote-write receiver, evaluating the rendered rules every
    second and sending to Alertmanager."""

    def __init__(self, tc, tmp, mixin_dir, am_port):
        prom = need(tc, "prometheus", "prometheus")
        self.tc = tc
        self.port = harness.free_port()
        conf = write(os.path.join(tmp, "central.yml"), """global:
  evaluation_interval: 1s
rule_files:
  - %s
  - %s
alerting:
  alertmanagers:
    - static_configs:
        - targets: ['127.0.0.1:%d']
""" % (os.path.join(mixin_dir, "prometheus_rules.yaml"), os.path.join(mixin_dir, "prometheus_alerts.yaml"),
       am_port))
        self.proc = Proc(tc, "central", [prom, "--web.enable-remote-write-receiver", "--config.file=" + conf,
                                         "--storage.tsdb.path=" + os.path.join(tmp, "central-data"),
                                         "--web.listen-address=127.0.0.1:%d" % self.port],
                         "http://127.0.0.1:%d/-/ready" % self.port, tmp)

    def query_raw(self, expr):
        """The whole answer of an instant query (status, data, warnings)."""
        url = "http://127.0.0.1:%d/api/v1/query?%s" % (self.port, urllib.parse.urlencode({"query": expr}))
        try:
            return get_json(url)
        except urllib.error.HTTPError as e:     # 400/422: a bad query; the body says why
            return json.load(e)

    def query(self, expr):
        """The result list of an instant query; fails the test on an error."""
        res = self.query_raw(expr)
        self.tc.assertEqual(res.get("status"), "success", "%s: %s" % (expr, res))
        return res["data"]["result"]

    def first_time(self, expr, since):
        """The first timestamp since `since` (Unix s) at which expr had a sample, at 1 s steps
        (a range query), or None."""
        url = "http://127.0.0.1:%d/api/v1/query_range?%s" % (self.port, urllib.parse.urlencode(
            {"query": expr, "start": "%.3f" % since, "end": "%.3f" % time.time(), "step": "1s"}))
        res = get_json(url)
        self.tc.assertEqual(res.get("status"), "success", "%s: %s" % (expr, res))
        times = [float(t) for s in res["data"]["result"] for t, _ in s["values"]]
        return min(times) if times else None

    def value(self, expr):
        """The one value of an instant query, or None when it has no result."""
        r = self.query(expr)
        self.tc.assertLessEqual(len(r), 1, "%s: %r" % (expr, r))
        return float(r[0]["value"][1]) if r else None


class Alertmanager:
    def __init__(self, tc, tmp, webhook_port, inhibit_rules_file):
        am = need(tc, "prometheus-alertmanager", "prometheus-alertmanager")
        self.port = harness.free_port()
        with open(inhibit_rules_file) as f:
            inhibit = f.read()      # "inhibit_rules:\n  - ...": the shipped snippet, as it is
        # Every alert its own group ('...'), sent 1 s after it arrives: the test sees each
        # alert as soon as Alertmanager would route it.
        conf = write(os.path.join(tmp, "alertmanager.yml"), """route:
  receiver: webhook
  group_by: ['...']
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: webhook
    webhook_configs:
      - url: http://127.0.0.1:%d/
        send_resolved: false
%s""" % (webhook_port, inhibit))
        self.proc = Proc(tc, "alertmanager", [am, "--config.file=" + conf,
                                              "--storage.path=" + os.path.join(tmp, "am-data"),
                                              "--web.listen-address=127.0.0.1:%d" % self.port,
                                              "--cluster.listen-address="],
                         "http://127.0.0.1:%d/-/ready" % self.port, tmp)

    def alerts(self):
        """Every alert Alertmanager holds, with status.state (active, suppressed) and inhibitedBy."""
        return get_json("http://127.0.0.1:%d/api/v2/alerts" % self.port)


class Webhook:
    """An HTTP server recording each POST of Alertmanager: (wall time received, payload)."""

    def __init__(self, tc):
        self.posts = []
        self.lock = threading.Lock()
        hook = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with hook.lock:
                    hook.posts.append((time.time(), json.loads(body)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *a):
                pass

        self.port = harness.free_port()
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        t = threading.Thread(target=self.server.serve_forever, daemon=True)
        t.start()
        tc.addCleanup(self.server.server_close)
        tc.addCleanup(self.server.shutdown)

    def alerts(self):
        """Every alert posted so far: (received, alert), oldest first."""
        with self.lock:
            return [(t, a) for t, p in self.posts for a in p["alerts"]]

    def wait(self, cond, timeout):
        """Waits until cond(alerts()) holds or timeout s pass; returns the last alerts()."""
        deadline = time.monotonic() + timeout
        while True:
            got = self.alerts()
            if cond(got) or time.monotonic() >= deadline:
                return got
            time.sleep(0.2)


class Caller:
    """A host's callers of one dependency: a new connection and one call every 1/rate s, each in a
    thread of its own (open loop: a dependency that stops answering keeps being called, as
    requests keep coming to a service), at most `cap` outstanding."""

    def __init__(self, tc, port, rate=8.0, cap=500):
        self.port, self.period, self.cap = port, 1.0 / rate, cap
        self.outstanding = 0
        self.answered = 0
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()
        tc.addCleanup(self.thread.join, 10)
        tc.addCleanup(self.stop.set)

    def _call(self):
        try:
            c = harness.Client("127.0.0.1", self.port)
            # a hang lasts the whole test: no call gives up and ends it (Client's own is 30 s)
            c.sock.settimeout(300)
            try:
                c.call()
                with self.lock:
                    self.answered += 1
            finally:
                c.close()
        except OSError:
            pass            # the server closed at the test's end
        finally:
            with self.lock:
                self.outstanding -= 1

    def _loop(self):
        nxt = time.monotonic()
        while not self.stop.is_set():
            with self.lock:
                room = self.outstanding < self.cap
                if room:
                    self.outstanding += 1
            if room:
                threading.Thread(target=self._call, daemon=True).start()
            nxt += self.period
            self.stop.wait(max(0.0, nxt - time.monotonic()))
