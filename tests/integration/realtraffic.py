"""Helpers for test_realtraffic.py: Debian's own servers (nginx, redis-server,
nghttpd, haproxy) started on loopback high ports with their own config in a
temp dir, Debian's own load tools (ab, wrk, h2load, redis-benchmark) run
against them, and parsers for what those tools print. Python 3 standard
library only. Nothing here touches /etc or the system's services: every
config, pid file, log and temp path lives in the test's temp dir, and every
server is stopped by its pid.
"""

import glob
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from harness import tcp_sockets

# The packages scripts/deps.sh installs for these tests, by the program the test runs.
PACKAGE_OF = {
    "nginx": "nginx-light", "wrk": "wrk", "ab": "apache2-utils", "redis-server": "redis-server",
    "redis-cli": "redis-tools", "redis-benchmark": "redis-tools", "h2load": "nghttp2-client",
    "nghttpd": "nghttp2-server", "haproxy": "haproxy", "openssl": "openssl",
    "mariadbd": "mariadb-server", "mariadb-install-db": "mariadb-server", "mariadb": "mariadb-client",
    "mysqlslap": "mariadb-client", "memcached": "memcached",
}
ECHO_MODULE = "/usr/lib/nginx/modules/ngx_http_echo_module.so"
SBIN_PATH = os.environ.get("PATH", "") + ":/usr/sbin:/sbin"

START_TIMEOUT = 10.0      # seconds for a server to listen on its port
LOAD_TIMEOUT = 60.0       # seconds a load tool may run (each case asks for at most 10 s of load)


class ToolError(AssertionError):
    pass


def which(tool):
    return shutil.which(tool, path=SBIN_PATH)


def require(*tools):
    """Raises ToolError naming each missing program and its package (never skips: deps.sh installs them)."""
    missing = [t for t in tools if which(t) is None]
    if missing:
        raise ToolError("missing %s (Debian packages %s): run scripts/deps.sh as root" % (
            ", ".join(missing), ", ".join(sorted({PACKAGE_OF.get(t, t) for t in missing}))))
    if "nginx" in tools and not os.path.exists(ECHO_MODULE):
        raise ToolError("%s missing (Debian package libnginx-mod-http-echo, pulled by nginx-light): "
                        "run scripts/deps.sh as root" % ECHO_MODULE)


def listening(port):
    return any(l == port and st == "LISTEN" for l, _, st in tcp_sockets())


def open_conns(port):
    """Sockets of connections to or from port that are not closed yet (LISTEN and TIME_WAIT aside)."""
    return [(l, r, st) for l, r, st in tcp_sockets()
            if (l == port or r == port) and st not in ("LISTEN", "TIME_WAIT")]


def wait_closed(port, timeout=10.0):
    """Waits until no connection to or from port is open; returns those still open (empty: all closed)."""
    deadline = time.monotonic() + timeout
    while True:
        left = open_conns(port)
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.05)


class Server:
    """One server process, in the foreground, its output in a log file of the temp dir."""

    def __init__(self, name, argv, ports, workdir):
        self.name = name
        self.argv = argv
        self.ports = ports
        self.log = os.path.join(workdir, name + ".out")
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                         cwd=workdir)
        deadline = time.monotonic() + START_TIMEOUT
        while not all(listening(p) for p in ports):
            if self.proc.poll() is not None:
                raise ToolError("%s exited with %s before listening on %s; its output:\n%s" % (
                    name, self.proc.returncode, ports, self.output()))
            if time.monotonic() >= deadline:
                self.stop()
                raise ToolError("%s did not listen on %s within %.0f s; its output:\n%s" % (
                    name, ports, START_TIMEOUT, self.output()))
            time.sleep(0.02)

    @property
    def pid(self):
        return self.proc.pid

    def output(self):
        try:
            with open(self.log, errors="replace") as f:
                return f.read()[-4000:]
        except OSError:
            return ""

    def stop(self):
        """SIGTERM by pid, then SIGKILL after 5 s; idempotent."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def tempdir(test):
    d = tempfile.mkdtemp(prefix="dwtest-rt-")
    os.chmod(d, 0o755)  # nginx may drop to another user for some paths; reading is all it needs
    test.addCleanup(shutil.rmtree, d, True)
    return d


def make_cert(workdir):
    """A self-signed certificate for localhost made now; returns (cert, key) paths."""
    cert, key = os.path.join(workdir, "cert.pem"), os.path.join(workdir, "key.pem")
    r = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                        "-subj", "/CN=localhost", "-keyout", key, "-out", cert],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise ToolError("openssl req exited %d: %s" % (r.returncode, r.stderr))
    return cert, key


# --------------------------------------------------------------------------
# nginx

NGINX_MAIN = """\
daemon off;
master_process off;
worker_processes 1;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
{modules}
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {dir}/client_body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    keepalive_requests 1000000;
    keepalive_timeout 75s;
{body}
}}
"""


def nginx_server(listen, location, extra=""):
    """One server block; listen is e.g. "127.0.0.1:8080" or "127.0.0.1:8443 ssl"."""
    return "    server {\n        listen %s;\n%s        location / {\n%s        }\n    }\n" % (
        listen, extra, location)


OK_LOCATION = "            return 200 \"ok\\n\";\n"


def start_nginx(test, workdir, body, ports, echo=False):
    """nginx in the foreground (one process, no master) with the server blocks in body."""
    require("nginx")
    conf = os.path.join(workdir, "nginx.conf")
    modules = "load_module %s;" % ECHO_MODULE if echo else ""
    with open(conf, "w") as f:
        f.write(NGINX_MAIN.format(dir=workdir, modules=modules, body=body))
    srv = Server("nginx", [which("nginx"), "-p", workdir, "-c", conf, "-e", os.path.join(workdir, "error.log")],
                 ports, workdir)
    test.addCleanup(srv.stop)
    return srv


# --------------------------------------------------------------------------
# The other servers


def start_redis(test, workdir, port):
    require("redis-server")
    srv = Server("redis", [which("redis-server"), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                           "--appendonly", "no", "--daemonize", "no", "--dir", workdir,
                           "--logfile", os.path.join(workdir, "redis.log")], [port], workdir)
    test.addCleanup(srv.stop)
    return srv


def start_mariadb(test, workdir, port):
    """MariaDB's server on a data dir made now in workdir (root's password empty, over TCP too);
    as root, so --user=root; no unix socket, log or pid file outside workdir."""
    require("mariadbd", "mariadb-install-db")
    data = os.path.join(workdir, "data")
    r = subprocess.run([which("mariadb-install-db"), "--no-defaults", "--user=root", "--datadir=" + data,
                        "--auth-root-authentication-method=normal", "--skip-test-db"],
                       capture_output=True, text=True, timeout=LOAD_TIMEOUT)
    if r.returncode != 0:
        raise ToolError("mariadb-install-db exited %d: %s" % (r.returncode, r.stdout[-2000:] + r.stderr[-2000:]))
    srv = Server("mariadbd", [which("mariadbd"), "--no-defaults", "--user=root", "--datadir=" + data,
                              "--port=%d" % port, "--bind-address=127.0.0.1",
                              "--socket=" + os.path.join(workdir, "mysqld.sock"),
                              "--pid-file=" + os.path.join(workdir, "mysqld.pid"),
                              "--log-error=" + os.path.join(workdir, "mysqld.err"), "--skip-log-bin",
                              "--innodb-buffer-pool-size=32M", "--skip-name-resolve"], [port], workdir)
    test.addCleanup(srv.stop)
    return srv


def mariadb(port, *args, timeout=LOAD_TIMEOUT):
    """Debian's mariadb client as root over TCP to 127.0.0.1:port; its output (raises on failure)."""
    require("mariadb")
    r = subprocess.run([which("mariadb"), "--no-defaults", "-h", "127.0.0.1", "-P", str(port), "-u", "root"]
                       + list(args), capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise ToolError("mariadb %s exited %d: %s" % (" ".join(args), r.returncode, r.stderr[-2000:]))
    return r.stdout


def mysqlslap(port, args):
    return run_tool(["mysqlslap", "--no-defaults", "-h", "127.0.0.1", "-P", str(port), "-u", "root"]
                    + list(args))


def pg_bin(tool):
    """A PostgreSQL server program (Debian keeps them under /usr/lib/postgresql/VERSION/bin)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/" + tool))
    if not found:
        raise unittest.SkipTest("%s not installed (Debian's postgresql: make deps)" % tool)
    return found[-1]


def as_postgres(argv):
    """argv run as the postgres user (initdb and postgres refuse root); setpriv execs, no fork, so
    Server.stop()'s signal reaches the server itself."""
    return ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--"] + argv


def start_postgres(test, workdir, port, ssl=True):
    """PostgreSQL's server on a cluster made now in workdir (trust authentication, user postgres),
    on 127.0.0.1:port, its unix socket in workdir; with ssl, a self-signed certificate made now."""
    require("openssl", "setpriv")
    pgdir = os.path.join(workdir, "pg")
    os.makedirs(pgdir)
    shutil.chown(workdir, "postgres")
    shutil.chown(pgdir, "postgres")
    data = os.path.join(pgdir, "data")
    r = subprocess.run(as_postgres([pg_bin("initdb"), "-D", data, "-U", "postgres", "--auth=trust",
                                    "--no-sync", "-E", "UTF8"]),
                       capture_output=True, text=True, timeout=LOAD_TIMEOUT)
    if r.returncode != 0:
        raise ToolError("initdb exited %d: %s" % (r.returncode, r.stdout[-2000:] + r.stderr[-2000:]))
    opts = ["-c", "listen_addresses=127.0.0.1", "-p", str(port), "-c", "unix_socket_directories=" + pgdir,
            "-c", "fsync=off", "-c", "logging_collector=off"]
    if ssl:
        key, crt = os.path.join(pgdir, "server.key"), os.path.join(pgdir, "server.crt")
        run_tool(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", crt,
                  "-subj", "/CN=localhost", "-days", "1"])
        for f in (key, crt):
            shutil.chown(f, "postgres")
        os.chmod(key, 0o600)
        opts += ["-c", "ssl=on", "-c", "ssl_cert_file=" + crt, "-c", "ssl_key_file=" + key]
    srv = Server("postgres", as_postgres([pg_bin("postgres"), "-D", data] + opts), [port], workdir)
    test.addCleanup(srv.stop)
    return srv


def psql(port, sql, sslmode="require", timeout=LOAD_TIMEOUT):
    """Debian's psql over TCP to 127.0.0.1:port as postgres, running sql (a file's text: one
    query message per statement, psql -f), without a psqlrc; its output (raises on failure)."""
    require("psql")
    r = subprocess.run([which("psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", "-",
                        "host=127.0.0.1 port=%d user=postgres dbname=postgres sslmode=%s" % (port, sslmode)],
                       input=sql, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise ToolError("psql exited %d: %s" % (r.returncode, r.stderr[-2000:]))
    return r.stdout


def start_memcached(test, workdir, port):
    require("memcached")
    srv = Server("memcached", [which("memcached"), "-u", "root", "-l", "127.0.0.1", "-p", str(port), "-U", "0",
                               "-m", "16"], [port], workdir)
    test.addCleanup(srv.stop)
    return srv


def start_nghttpd(test, workdir, port, docroot):
    require("nghttpd")
    srv = Server("nghttpd", [which("nghttpd"), "--no-tls", "-d", docroot, str(port)], [port], workdir)
    test.addCleanup(srv.stop)
    return srv


HAPROXY_CONF = """\
global
    pidfile {dir}/haproxy.pid
defaults
    mode tcp
    timeout connect 5s
    timeout client 60s
    timeout server 60s
frontend fe
    bind 127.0.0.1:{front}
    default_backend be
backend be
    server s1 127.0.0.1:{back}
"""


def start_haproxy(test, workdir, front, back):
    require("haproxy")
    conf = os.path.join(workdir, "haproxy.cfg")
    with open(conf, "w") as f:
        f.write(HAPROXY_CONF.format(dir=workdir, front=front, back=back))
    srv = Server("haproxy", [which("haproxy"), "-db", "-f", conf], [front], workdir)
    test.addCleanup(srv.stop)
    return srv


# --------------------------------------------------------------------------
# Load tools and what they print


def run_tool(argv, timeout=LOAD_TIMEOUT):
    require(argv[0])
    r = subprocess.run([which(argv[0])] + argv[1:], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=timeout)
    if r.returncode != 0:
        raise ToolError("%s exited %d\nstdout:\n%s\nstderr:\n%s" % (" ".join(argv), r.returncode, r.stdout[-3000:],
                                                                    r.stderr[-3000:]))
    return r.stdout


_UNITS_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}


def duration_ms(text):
    """ "95.21us" / "1.20ms" / "2.00s" -> milliseconds."""
    m = re.fullmatch(r"([0-9.]+)(us|ms|s|m)", text.strip())
    if not m:
        raise ToolError("not a duration: %r" % text)
    return float(m.group(1)) * _UNITS_MS[m.group(2)]


def _find(pattern, text, what, conv=int, default=None):
    m = re.search(pattern, text, re.M)
    if not m:
        if default is not None:
            return default
        raise ToolError("no %s in the tool's output:\n%s" % (what, text[-3000:]))
    return conv(m.group(1))


def parse_ab(out):
    """ab's own figures: complete, failed, non2xx, keepalive, mean_ms (per request, across the concurrency),
    p50_ms (whole milliseconds: ab's resolution)."""
    return {
        "complete": _find(r"^Complete requests:\s+(\d+)", out, "Complete requests"),
        "failed": _find(r"^Failed requests:\s+(\d+)", out, "Failed requests"),
        "non2xx": _find(r"^Non-2xx responses:\s+(\d+)", out, "Non-2xx", default=0),
        "keepalive": _find(r"^Keep-Alive requests:\s+(\d+)", out, "Keep-Alive requests", default=0),
        "mean_ms": _find(r"^Time per request:\s+([0-9.]+) \[ms\] \(mean\)$", out, "Time per request", float),
        "p50_ms": _find(r"^\s+50%\s+(\d+)", out, "50% percentile", float),
    }


def ab(args, url):
    out = run_tool(["ab", "-q"] + args + [url])
    return parse_ab(out), out


def parse_wrk(out):
    """wrk's own figures: requests (responses completed), errors (connect, read and write errors and
    non-2xx answers), timeouts (requests slower than wrk's --timeout, 2 s: a latency figure, not an
    error on the wire; a loaded 2-core machine may show some), p50_ms, mean_ms."""
    errs = timeouts = 0
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    if m:
        errs += sum(int(x) for x in m.groups()[:3])
        timeouts = int(m.group(4))
    errs += _find(r"Non-2xx or 3xx responses: (\d+)", out, "non-2xx", default=0)
    return {
        "requests": _find(r"^\s*(\d+) requests in ", out, "request count"),
        "errors": errs,
        "timeouts": timeouts,
        "mean_ms": _find(r"^\s+Latency\s+(\S+)", out, "mean latency", duration_ms),
        "p50_ms": _find(r"^\s+50%\s+(\S+)", out, "50% latency", duration_ms),
    }


def wrk(args, url):
    out = run_tool(["wrk", "--latency"] + args + [url])
    return parse_wrk(out), out


def parse_h2load(out):
    """h2load's own figures: done, succeeded, failed, errored, mean_ms (time for request)."""
    m = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, "
                  r"(\d+) errored, (\d+) timeout", out)
    if not m:
        raise ToolError("no request counts in h2load's output:\n" + out[-3000:])
    total, started, done, ok, failed, errored, tmo = (int(x) for x in m.groups())
    return {
        "done": done, "succeeded": ok, "failed": failed + errored + tmo,
        "mean_ms": _find(r"^time for request:\s+\S+\s+\S+\s+(\S+)", out, "time for request", duration_ms),
    }


def h2load(args, url):
    out = run_tool(["h2load"] + args + [url])
    return parse_h2load(out), out


def parse_redis_benchmark_csv(out):
    """redis-benchmark --csv: {test: {"rps", "avg_latency_ms", "p50_latency_ms", ...}}."""
    rows = [l.strip() for l in out.splitlines() if l.strip().startswith('"')]
    if not rows:
        raise ToolError("no CSV in redis-benchmark's output:\n" + out[-3000:])
    head = [h.strip('"') for h in rows[0].split(",")]
    res = {}
    for line in rows[1:]:
        vals = [v.strip('"') for v in line.split(",")]
        res[vals[0]] = {k: float(v) for k, v in zip(head[1:], vals[1:])}
    return res


def redis_benchmark(port, args):
    out = run_tool(["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "--csv"] + args)
    return parse_redis_benchmark_csv(out), out


def redis_info_stats(port):
    """What redis counts, from one INFO (one connection, one command): total_commands_processed and
    the calls per command ({"get": n, "config|get": n, ...}). The INFO itself is in neither yet: redis
    counts a command once it has run."""
    out = run_tool(["redis-cli", "-h", "127.0.0.1", "-p", str(port), "info", "stats", "commandstats"], timeout=10)
    per_cmd = {m.group(1): int(m.group(2)) for m in re.finditer(r"^cmdstat_(\S+?):calls=(\d+),", out, re.M)}
    return _find(r"^total_commands_processed:(\d+)", out, "total_commands_processed"), per_cmd
