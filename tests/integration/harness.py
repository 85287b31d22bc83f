"""Helpers for depwatch's integration tests: the daemon as a fixture, loopback
servers that answer after a delay the test chooses (or hold, reset, close),
and clients that count what they did. Python 3 standard library only.

Every daemon gets its own pin dir under /sys/fs/bpf and its own run dir under
/tmp, so the tests never touch /sys/fs/bpf/depwatch or /run/depwatch, where
another daemon may be running.
"""

import atexit
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import unittest

# the loopback servers and clients, re-exported: tests import them from here
from loopback import (REQ, RESP, Client, LoopbackServer, bind_fresh_port, fmt_dest, free_port,  # noqa: F401
                      median, recv_line, run_client_threads, set_thread_comm, thread_comm)

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILT = os.environ.get("DEPWATCH", os.path.join(REPO, "build", "depwatch"))
# The whole run uses one copy of the binary, so a rebuild in the middle of it
# cannot mix two versions (or catch a half-written file).
_SCRATCH = "/tmp/dwtest-%d" % os.getpid()
DEPWATCH = os.path.join(_SCRATCH, "depwatch")


def _copy_binary():
    os.makedirs(_SCRATCH, exist_ok=True)
    if os.path.exists(BUILT):
        shutil.copy2(BUILT, DEPWATCH)
        os.chmod(_SCRATCH, 0o755)  # the non-root test runs it as another user


_copy_binary()
BPFFS = "/sys/fs/bpf"

# The tracing backend every daemon of the run uses (--backend), when set: the suite runs once per backend.
BACKEND = os.environ.get("DW_BACKEND") or None



# The kernel stage's guest (tests/vm/kernels.sh sets DW_VM=tcg): an emulated machine, 3-4x slower
# than the host, on which a test sized for the host's load (a 200-thread pool) measures the
# emulation. Only such sizes look at it; no tolerance does.
EMULATED = os.environ.get("DW_VM") == "tcg"

# The kernel stage's guest beside the integration passes (tests/vm/kernels.sh passes DW_VM_PART):
# SCHED_IDLE on the host, it may get no CPU for minutes while the host's tests load both cores. Its
# items assert nothing such a gap could change (kernels.sh's "beside"), but the deadlines that
# bound a hang (a daemon's start and stop, a status condition) would expire on the host's clock:
# on 2026-12-07 CI saw a guest daemon start take over 60 s there (10 s quiet). They are PATIENCE
# times longer there; a daemon that never starts, or a condition that never holds, still fails.
PATIENCE = 5.0 if os.environ.get("DW_VM_PART") == "beside" else 1.0


def kernel_has_sock_tracepoints():
    """What the daemon probes for its backend: the BTF typedef of the sock_send_length tracepoint."""
    with open("/sys/kernel/btf/vmlinux", "rb") as f:
        return b"btf_trace_sock_send_length\0" in f.read()


# The backend the daemons of this run use: DW_BACKEND's, else the one the probe picks on this kernel
# (the kernel stage, tests/vm/kernels.sh, leaves the choice to the daemon).
BACKEND_IN_USE = BACKEND or ("sock" if kernel_has_sock_tracepoints() else "syscalls")


def backend_independent(test):
    """A test class or method that runs no daemon with --backend (the package, the install tree,
    top against a fake daemon), or whose assertions are about what lies above the daemon's figures
    (the /metrics page's HTTP and folding, Prometheus reading it, the mixin's pipeline), the
    figures themselves being asserted on both backends elsewhere (test_metrics' Test01, test_calls):
    its outcome is the same in both passes of make test, so it runs in one, the sock pass where
    the kernel has it, else the syscalls one (test_gotls_probe's rule; issue 36: the second pass
    waited on the same lintian, make install and tmux runs; issue 45: on the same Prometheus
    pipelines, while the other pass waited for the host)."""
    once = BACKEND_IN_USE == "sock" or not kernel_has_sock_tracepoints()
    return unittest.skipUnless(once, "backend-independent: run in the sock backend's pass")(test)


def runs_alone(test):
    """A test class or method that loads the machine (a load generator at full speed, thousands of
    connections, valgrind): when make test runs the two backends' passes side by side, it runs
    while the other pass waits (tests/integration/suitelock.py's SideBySide). A whole module says
    so with RUNS_ALONE = True."""
    test.RUNS_ALONE = True
    return test


def kernel_has_sock_destroy_kfunc():
    """What the daemon probes for its abort path: the kfunc bpf_sock_destroy in the kernel's BTF
    (Linux 6.5+). Without it, aborts go through sock_diag (and the daemon keeps CAP_NET_ADMIN)."""
    with open("/sys/kernel/btf/vmlinux", "rb") as f:
        return b"\0bpf_sock_destroy\0" in f.read()

# seconds to wait for "depwatch: started": under emulation the verifier's walk of the stream
# layer's programs is slow, and a start was seen past 20 s on one emulated CPU of a busy host;
# on the host too, with six suites beside it (load 8-19), starts took 17-36 s (2026-12-04). Only
# a daemon that never starts waits this out.
START_TIMEOUT = 60.0
# How long each daemon start of the run took, to its start line (mostly the verifier): what
# run.py --durations sums, since every test that starts a daemon waits on it (issue 36).
START_TIMES = []
STOP_TIMEOUT = 10.0
STATUS_DEADLINE = 5.0     # default deadline for a status condition to hold
DW_TOPN_OTHER = "~other"  # the line a --max-series cap sums the rest into (logic/view/topn.h)
INTERVAL_MS = 250         # the daemon's default refresh interval

_counter = 0
_counter_lock = threading.Lock()
_live_daemons = []


def unique_name(what):
    global _counter
    with _counter_lock:
        _counter += 1
        n = _counter
    return "dwtest-%d-%s-%d" % (os.getpid(), what, n)


def own_netns():
    """Inode of this process's network namespace, as the daemon reports it."""
    return os.stat("/proc/self/ns/net").st_ino


TCP_STATES = {"01": "ESTABLISHED", "02": "SYN_SENT", "03": "SYN_RECV", "04": "FIN_WAIT1",
              "05": "FIN_WAIT2", "06": "TIME_WAIT", "07": "CLOSE", "08": "CLOSE_WAIT",
              "09": "LAST_ACK", "0A": "LISTEN", "0B": "CLOSING"}


def tcp_sockets():
    """(local port, remote port, state name) of every TCP socket in this netns, from /proc/net/tcp{,6},
    each once. The kernel hands the file out a page per read and walks its hash tables again from
    the last position at the next: with other tests' sockets coming and going meanwhile, a socket
    can be listed twice (make test, 2026-12-07: 2 ESTABLISHED and 2 SYN_SENT for one of each).
    A socket is its addresses and inode (TIME_WAIT's inode 0: its addresses alone are unique)."""
    out = []
    seen = set()
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name) as f:
                lines = f.read().splitlines()[1:]
        except FileNotFoundError:
            continue
        for line in lines:
            fields = line.split()
            key = (name, fields[1], fields[2], fields[9])
            if key in seen:
                continue
            seen.add(key)
            lport = int(fields[1].rsplit(":", 1)[1], 16)
            rport = int(fields[2].rsplit(":", 1)[1], 16)
            out.append((lport, rport, TCP_STATES.get(fields[3], fields[3])))
    return out


# --------------------------------------------------------------------------
# The daemon


class DaemonError(Exception):
    pass


class Daemon:
    """One `depwatch run` with its own pin dir and run dir."""

    def __init__(self, pin_dir=None, run_dir=None, extra_args=()):
        self.pin_dir = pin_dir or os.path.join(BPFFS, unique_name("pin"))
        self.run_dir = run_dir or os.path.join("/tmp", unique_name("run"))
        self.extra_args = list(extra_args)
        self.proc = None
        self.stderr_lines = []
        self._lines_lock = threading.Lock()
        self._started = threading.Event()
        self._reader = None
        self.returncode = None
        self._own_run_dir = run_dir is None

    @property
    def argv(self):
        backend = ["--backend", BACKEND] if BACKEND else []
        return [DEPWATCH, "run", "--pin-dir", self.pin_dir, "--run-dir", self.run_dir] + backend + self.extra_args

    def _read_stderr(self):
        for raw in self.proc.stderr:
            line = raw.decode(errors="replace").rstrip("\n")
            with self._lines_lock:
                self.stderr_lines.append(line)
            if line.startswith("depwatch: started ("):
                self._started.set()
        self._started.set()  # EOF: wake the waiter, it looks at the process

    def stderr_text(self):
        with self._lines_lock:
            return "\n".join(self.stderr_lines)

    def start(self, timeout=START_TIMEOUT):
        began = time.monotonic()
        if not getattr(self, "shared", False):
            # A test's own daemon starts and stops alone, as before shared daemons: each daemon
            # attached beside it made its exit slower (Test09TwoDaemons' stops passed 10 s).
            for key in list(_shared_daemons):
                _stop_shared(key)
        if not os.path.exists(DEPWATCH):
            raise DaemonError("%s does not exist: run `make` first" % BUILT)
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        _live_daemons.append(self)
        self._reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._reader.start()
        timeout *= PATIENCE
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._started.wait(0.05)
            with self._lines_lock:
                if any(l.startswith("depwatch: started (") for l in self.stderr_lines):
                    START_TIMES.append(time.monotonic() - began)
                    return self
            if self.proc.poll() is not None:
                self._reader.join(2)
                raise DaemonError("depwatch run exited with %s before starting; stderr:\n%s"
                                  % (self.proc.returncode, self.stderr_text()))
        self.kill()
        raise DaemonError("depwatch run did not log its start line within %.0f s; stderr:\n%s"
                          % (timeout, self.stderr_text()))

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout=STOP_TIMEOUT):
        """SIGTERM, wait; returns the exit status (None if it had to be killed)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout * PATIENCE)
            except subprocess.TimeoutExpired:
                self.kill()
                return None
        if self._reader:
            self._reader.join(2)
        self.returncode = self.proc.returncode
        return self.returncode

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def cleanup(self):
        """Leaves nothing behind, whatever state the daemon is in (no assertions)."""
        self.kill()
        if self in _live_daemons:
            _live_daemons.remove(self)
        if os.path.isdir(self.pin_dir) and os.path.basename(self.pin_dir).startswith("dwtest-"):
            for name in os.listdir(self.pin_dir):
                try:
                    os.unlink(os.path.join(self.pin_dir, name))
                except OSError:
                    pass
            try:
                os.rmdir(self.pin_dir)
            except OSError:
                pass
        if self._own_run_dir:
            shutil.rmtree(self.run_dir, ignore_errors=True)

    # ---- status

    def status_raw(self, timeout=10):
        return subprocess.run([DEPWATCH, "status", "--json", "--run-dir", self.run_dir],
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)

    def status(self):
        r = self.status_raw()
        if r.returncode != 0:
            raise DaemonError("depwatch status exited %d: %s\nthe daemon (pid %s) is %s; its stderr:\n%s" % (
                r.returncode, r.stderr.decode(errors="replace").strip(), self.proc.pid if self.proc else None,
                "running" if self.running() else "gone, exit status %s" % (self.proc and self.proc.returncode),
                self.stderr_text()))
        try:
            st = json.loads(r.stdout)
        except ValueError as e:
            raise DaemonError("depwatch status printed no JSON object (%s): %r" % (e, r.stdout[:2000]))
        self.last_status = st
        return st

    def summary(self):
        """The last status, shortened, for failure messages."""
        st = getattr(self, "last_status", None)
        if st is None:
            return "(no status read)"
        rows = ["%s netns=%s calls=%s failed=%s inflight=%s connects=%s" %
                (r.get("dest"), r.get("netns"), r.get("calls"), r.get("failed"), r.get("inflight"),
                 r.get("connects")) for r in st.get("destinations", [])]
        more = "" if len(rows) <= 40 else "\n  ... %d more rows" % (len(rows) - 40)
        return "kernel: %s\n  %s%s" % (json.dumps(st.get("kernel")), "\n  ".join(rows[:40]), more)

    def status_text(self, timeout=10):
        """`depwatch status`: the table, as text."""
        r = subprocess.run([DEPWATCH, "status", "--run-dir", self.run_dir], stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            raise DaemonError("depwatch status exited %d: %s" % (r.returncode, r.stderr.strip()))
        return r.stdout

    def status_json_capped(self, cap):
        """`depwatch status --json --max-series CAP`."""
        r = subprocess.run([DEPWATCH, "status", "--json", "--max-series", str(cap), "--run-dir", self.run_dir],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=10)
        if r.returncode != 0:
            raise DaemonError("depwatch status --json --max-series %d exited %d: %s" % (cap, r.returncode,
                                                                                       r.stderr.strip()))
        return json.loads(r.stdout)

    def same_poll(self, ask, tries=40):
        """(status, ask(), status) with ask() between two JSON statuses of one poll (the same
        uptime_s, the poll's time) whose calls and failed are the same for every row (HTTP/2
        answers are also drained between polls when their ring fills), so that what ask() read
        is those figures too; tries are spent on a poll or a drain that came in between."""
        def figures(st):
            return ([(r["dest"], r.get("netns"), r["calls"], r["failed"]) for r in st["destinations"]],
                    [(r["name"], r["calls"], r["failed"]) for r in st["dependencies"]])

        for _ in range(tries):
            before = self.status()
            got = ask()
            after = self.status()
            if before["uptime_s"] == after["uptime_s"] and figures(before) == figures(after):
                return before, got, after
        raise AssertionError("no two statuses of one poll with the same figures in %d tries" % tries)

    def dest(self, dest_text, status=None):
        """The row of one destination (in this process's netns), or None."""
        st = status if status is not None else self.status()
        return find_dest(st, dest_text)

    def wait_for(self, cond, timeout=STATUS_DEADLINE, what="condition"):
        """Polls status (every 50 ms) until cond(status) is true; returns that status.

        On timeout returns the last status read, so that the test's own
        assertions then say what differed. A cond that raises KeyError or
        TypeError (a missing row or field) counts as false."""
        deadline = time.monotonic() + timeout * PATIENCE
        st = None
        while True:
            st = self.status()
            try:
                ok = cond(st)
            except (KeyError, TypeError):
                ok = False
            if ok:
                return st
            if time.monotonic() >= deadline:
                return st
            time.sleep(0.05)

    def wait_dest(self, dest_text, cond, timeout=STATUS_DEADLINE):
        """Polls until the row of dest_text exists and cond(row) holds; returns the row (or the last
        one, maybe None)."""
        st = self.wait_for(lambda s: (lambda r: r is not None and cond(r))(find_dest(s, dest_text)), timeout)
        return find_dest(st, dest_text), st


def write_config(text, prefix="dwtest-"):
    """A config file with text (mode 0600, root's: the daemon refuses others); the caller unlinks it."""
    fd, path = tempfile.mkstemp(prefix=prefix, suffix=".conf")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return path


def start_configured(add_cleanup, conf_text, extra_args=()):
    """A started daemon on a config file holding conf_text, with --events to conf + ".events"
    (d.events) and extra_args; add_cleanup(fn) takes what undoes each step, to be run last first."""
    conf = write_config(conf_text)
    add_cleanup(lambda: os.unlink(conf))
    events = conf + ".events"
    add_cleanup(lambda: os.path.exists(events) and os.unlink(events))
    d = Daemon(extra_args=["-c", conf, "--events", events] + list(extra_args))
    add_cleanup(d.cleanup)
    d.start()
    d.events = events
    return d


def dependency(status, name):
    """The row of the dependency called name in a status, or None."""
    rows = [d for d in status["dependencies"] if d["name"] == name]
    return rows[0] if rows else None


def find_dest(status, dest_text):
    rows = [r for r in status["destinations"] if r["dest"] == dest_text and r["netns"] == own_netns()]
    if len(rows) > 1:
        raise AssertionError("destination %s listed %d times: %r" % (dest_text, len(rows), rows))
    return rows[0] if rows else None


def status_table(text):
    """`depwatch status`'s table: {"dependencies": {name: (calls, failed)}, "destinations":
    [(dest, calls, failed)], "other_dests": (calls, failed) of the ~other line or None}. Rows of
    another netns share a dest text (the table has no netns column): a list, not a dict."""
    out = {"dependencies": {}, "destinations": [], "other_dests": None}
    section = None
    for line in text.splitlines():
        if line.startswith("DEPENDENCY "):
            section = "deps"
        elif line.startswith("DEST "):
            section = "dests"
        elif not line.strip() or line.startswith(("  <- ", "warning: ", "answers: ", "failed: ", "dns: ", "* ")):
            if not line.strip() and section == "deps":
                section = None
        elif section == "deps" and not line.startswith(DW_TOPN_OTHER + " "):
            # NAME BREAKER [REASON] SLOW% FAIL% CALLS FAILED INFL OLDEST P50 P99: from the right
            tail = line.split()[-8:]
            out["dependencies"][line[:24].rstrip()] = (int(tail[2]), int(tail[3]))
        elif section == "dests":
            f = line.split()
            if f[0] == DW_TOPN_OTHER:
                out["other_dests"] = (int(f[1]), int(f[2]))
            else:
                out["destinations"].append((f[0], int(f[1]), int(f[2])))
    return out


def dest_port(dest_text):
    """Port of "127.0.0.1:80" / "[::1]:80"; None for rows like "overflow"."""
    head, sep, port = dest_text.rpartition(":")
    return int(port) if sep and port.isdigit() else None


@atexit.register
def _cleanup_all():
    for d in list(_live_daemons):
        d.cleanup()
    shutil.rmtree(_SCRATCH, ignore_errors=True)


# The shared daemons of each test module (SHARED_DAEMON), by (module name, config text or None).
_shared_daemons = {}


def _drop_shared(key):
    """Forgets a shared daemon and leaves nothing of it behind (no assertions)."""
    d = _shared_daemons.pop(key, None)
    if d is not None:
        d.cleanup()
        for f in d.files:
            if os.path.exists(f):
                os.unlink(f)


def _stop_shared(key):
    """The module's end: its shared daemon must exit 0 on SIGTERM and remove its pin dir."""
    d = _shared_daemons.get(key)
    if d is None:
        return
    try:
        rc = d.stop()
        left = os.listdir(d.pin_dir) if os.path.isdir(d.pin_dir) else None
        if rc != 0 or os.path.exists(d.pin_dir):
            raise AssertionError("the shared daemon of %s: exit status %s on SIGTERM (None: had to be killed), "
                                 "pin dir left behind: %r; stderr:\n%s" % (key[0], rc, left, d.stderr_text()))
    finally:
        _drop_shared(key)


def _start_shared(test, key, d):
    """d, the shared daemon of key from now on, started; stopped and checked at the module's end.
    The test fails if it does not start."""
    d.shared = True
    _shared_daemons[key] = d
    unittest.addModuleCleanup(_stop_shared, key)
    try:
        d.start()
    except DaemonError as e:
        _drop_shared(key)
        test.fail(str(e))


def _tables_filling(d):
    """Whether a shared daemon's tables are half full or any of them overflowed (the host's other
    traffic counts too: on a machine shared with other suites, thousands of destinations)."""
    try:
        k = d.status()["kernel"]
    except DaemonError:
        return True
    full = [n for n, v in k.items() if (n.endswith("_full") or n.endswith("_fail")) and v]
    return bool(full) or 2 * k.get("dests_used", 0) > k.get("dests_max", 1 << 30)


class _SharedView:
    """What a test sees of a reload-shared daemon (DaemonTestCase.reloaded_daemon): the daemon,
    but its stderr from this test's reload on and its events file emptied at that reload."""

    def __init__(self, d):
        self._d = d
        with d._lines_lock:
            self._mark = len(d.stderr_lines)

    def __getattr__(self, name):
        return getattr(self._d, name)

    def stderr_text(self):
        """The daemon's start (up to its start line, which tests check) and this test's lines."""
        with self._d._lines_lock:
            lines = self._d.stderr_lines
            n = next((i + 1 for i, l in enumerate(lines) if l.startswith("depwatch: started (")), 0)
            return "\n".join(lines[:min(n, self._mark)] + lines[self._mark:])


def _reload(d, conf_text, timeout=10.0):
    """Gives d conf_text by SIGHUP; waits for its "reloaded" line. False if it did not take it."""
    def reloads():
        with d._lines_lock:
            return sum(1 for l in d.stderr_lines if l.startswith("depwatch: reloaded "))
    before = reloads()
    tmp = d.conf + ".new"
    with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        f.write(conf_text)
    os.rename(tmp, d.conf)
    d.proc.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and d.running():
        if reloads() > before:
            return True
        with d._lines_lock:
            if any("reload" in l and ("rejected" in l or "failed" in l or "restart" in l)
                   for l in d.stderr_lines[-5:]):
                return False
        time.sleep(0.02)
    return False


def _polled_since(d, timeout=10.0):
    """Waits until d's figures are two intervals newer than now (status's uptime_s is the time of
    its last poll): a poll came after whatever d did before this call. False if it did not answer
    or poll in that time."""
    try:
        st = d.status()
        until = st["uptime_s"] + 2 * st["interval_ms"] / 1000.0
        deadline = time.monotonic() + timeout
        while d.status()["uptime_s"] < until:
            if time.monotonic() >= deadline or not d.running():
                return False
            time.sleep(0.05)
        return True
    except (DaemonError, KeyError, ValueError):
        return False


def reloaded_daemon(test, conf_text, extra_args=(), add_cleanup=None):
    """start_configured's daemon for this test (conf_text, --events to d.events, extra_args):
    with RELOAD_SHARED one daemon per module and extra_args, handed from test to test by a
    reload (issue 45: a start is seconds of the verifier; a reload, milliseconds). Each test
    gets the daemon first reloaded with no dependency (the last test's go, breakers and all:
    a name a test uses again starts afresh), then, a poll later, with conf_text; its view
    shows stderr from then on, and the events file is emptied. (The poll between: what the
    first reload ended is said at the next poll, a destination's ejection there; after the
    second reload, under the new dependency of the same name, it was a line of the last test's
    in this one's events and stderr.) Its tests read only their own dependencies
    and their own servers' rows, never signal, stop or restart the daemon, and need no setting
    a reload cannot change (enforce_cgroup: a fresh daemon then)."""
    if not getattr(test, "RELOAD_SHARED", False):
        return start_configured(add_cleanup or test.addCleanup, conf_text, extra_args)
    key = (type(test).__module__, "reload", tuple(extra_args))
    d = _shared_daemons.get(key)
    if d is not None and (not d.running() or _tables_filling(d) or not _reload(d, "[defaults]\n")
                          or not _polled_since(d) or not _reload(d, conf_text)):
        if d.running():
            _stop_shared(key)
        else:
            _drop_shared(key)
        d = None
    if d is None:
        for other in list(_shared_daemons):
            _stop_shared(other)
        conf = write_config(conf_text)
        d = Daemon(extra_args=["-c", conf, "--events", conf + ".events"] + list(extra_args))
        d.conf, d.events, d.files = conf, conf + ".events", [conf, conf + ".events"]
        _start_shared(test, key, d)
    else:
        open(d.events, "w").close()
    if isinstance(test, DaemonTestCase):
        test._daemons.append(d)     # its tearDown checks that the daemon outlived the test
    else:
        test.addCleanup(lambda: test.assertTrue(d.running(), "the shared daemon exited during this test "
                                                "(status %s); stderr:\n%s" % (d.proc.poll(), d.stderr_text())))
    return _SharedView(d)


class DaemonTestCase(unittest.TestCase):
    """Gives each test fresh daemons; at the end each must exit 0 on SIGTERM
    and remove its pin dir.

    A class with SHARED_DAEMON = True gets, from start_daemon() without arguments, one daemon
    for all such tests of its module (issue 36: a start is mostly the verifier's, seconds a
    test), stopped and checked the same way after the module's last test. Its tests must
    not care what the tests before them did: each reads the rows of its own servers' ports
    (never handed out twice in a run, bind_fresh_port) and no table-wide figure but the
    kernel's failure counters. A test that ends with the shared daemon gone fails. A daemon of a
    test's own stops the shared ones first (checked as at the module's end); the next test that
    shares starts a new one."""

    SHARED_DAEMON = False
    RELOAD_SHARED = False

    def setUp(self):
        self._daemons = []

    def shared_daemon(self, conf_text=None):
        """The module's shared daemon on the built-in config, or on conf_text as start_configured
        starts it (-c, --events to d.events: the events of every test that shared it)."""
        key = (type(self).__module__, conf_text)
        d = _shared_daemons.get(key)
        if d is not None and d.running() and _tables_filling(d):
            _stop_shared(key)       # a fresh one: this test's rows must find room, as in its own daemon
            d = None
        if d is None or not d.running():
            _drop_shared(key)       # gone during an earlier test, which failed for it
            if conf_text is None:
                d = Daemon()
                d.files = []
            else:
                conf = write_config(conf_text)
                d = Daemon(extra_args=["-c", conf, "--events", conf + ".events"])
                d.events = conf + ".events"
                d.files = [conf, d.events]
            _start_shared(self, key, d)
        self._daemons.append(d)
        return d

    def reloaded_daemon(self, conf_text, extra_args=(), add_cleanup=None):
        return reloaded_daemon(self, conf_text, extra_args, add_cleanup)

    def start_daemon(self, **kw):
        if self.SHARED_DAEMON and not kw:
            return self.shared_daemon()
        d = Daemon(**kw)
        self._daemons.append(d)
        self.addCleanup(d.cleanup)
        try:
            d.start()
        except DaemonError as e:
            self.fail(str(e))
        return d

    def stop_daemon(self, d):
        """Stops d and checks the shutdown contract."""
        rc = d.stop()
        self.assertEqual(rc, 0, "depwatch run exit status on SIGTERM (None: had to be killed); stderr:\n"
                         + d.stderr_text())
        self.assertFalse(os.path.exists(d.pin_dir), "pin dir %s left behind: %r"
                         % (d.pin_dir, os.listdir(d.pin_dir) if os.path.isdir(d.pin_dir) else None))

    def tearDown(self):
        for d in self._daemons:
            if getattr(d, "shared", False):
                self.assertTrue(d.running(), "the shared daemon exited during this test (status %s); stderr:\n%s"
                                % (d.proc.poll(), d.stderr_text()))
            elif d.running():
                self.stop_daemon(d)

    # ---- common assertions

    def assertRow(self, row, expected, context=""):
        """Compares the given fields of a status row; one message with all differences."""
        if row is None:
            self.fail("no status row %s (own netns %d); last status of each daemon:\n%s" % (
                context, own_netns(), "\n".join("%s: %s" % (d.pin_dir, d.summary()) for d in self._daemons)))
        diffs = {k: (row.get(k), v) for k, v in expected.items() if row.get(k) != v}
        self.assertFalse(diffs, "%s fields (got, want): %r\nrow: %s" % (context, diffs, json.dumps(row)))
