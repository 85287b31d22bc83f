"""depwatch top: the live table of dependencies. Against a real daemon (root):
one plain frame when stdout is a pipe; under tmux at 80 and 120 columns, with
calls per second, `q` and Ctrl-C ending it and leaving the terminal as it
was; a forced-open breaker first, in red unless NO_COLOR is set. Against a
stand-in daemon on the control socket (no root): hostile names and malformed
lines, the row order, an exact calls-per-second, a daemon that goes away,
and the errors. Python 3 standard library and tmux.
"""

import os
import re
import shlex
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import unittest

import harness
from harness import Client, DaemonTestCase, LoopbackServer

TMUX = shutil.which("tmux")
NAME = "topweb"
TITLES_80 = ["DEPENDENCY", "CALLS/S", "P50", "P99", "SLOW%", "INFLIGHT", "OLDEST", "BREAKER"]
WIDE_ONLY = ["DESTS", "FAIL%", "REJECTED", "CONNS", "CALLS"]
LEFT_ALIGNED = ("DEPENDENCY", "BREAKER")
DURATION = re.compile(r"^\d+(\.\d+)?(us|ms|s|h)$")
HEADER = re.compile(r"^depwatch top  \d\d:\d\d:\d\d  (\d+) dependenc(y|ies), (\d+) open")
# SGR that sets the foreground to red (tmux writes "\x1b[31m", maybe among other parameters).
RED = re.compile(r"\x1b\[(?:[0-9;]*;)?31(?:;[0-9;]*)?m")
TSV_HEADER_OLD = ("name\tdests\tcalls\tfailed\tp50_ms\tp99_ms\tslow_rate\tfailure_rate\tinflight\t"
                  "max_inflight\toldest_ms\tbreaker\treason\trejected\tconns\tforced\n")
# a daemon with multiplexed-connection counters appends two fields
TSV_HEADER = TSV_HEADER_OLD.replace("\n", "\tmultiplexed_conns\tburst_timings\n")
# below the table when a row's P50 carries the burst mark '*'
LEGEND = "* P50/P99 of multiplexed or pipelined connections: burst timings, not one request's"


def top_env(**extra):
    """The environment for top: NO_COLOR only when a test sets it."""
    env = dict(os.environ)
    env.pop("NO_COLOR", None)
    env.update(extra)
    return env


def run_top(run_dir, *args, timeout=10):
    """depwatch top with stdout a pipe."""
    return subprocess.run([harness.DEPWATCH, "top", "--run-dir", run_dir] + list(args),
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, env=top_env())


def token_ending_at(line, end):
    """The space-free text ending just before column end, and where it starts; "" when blank."""
    if end > len(line) or end == 0 or line[end - 1] == " ":
        return "", end
    start = end
    while start > 0 and line[start - 1] != " ":
        start -= 1
    return line[start:end], start


def cells(titles, row):
    """A row's cells by column title. Numbers are right-aligned under their title's
    end; the name and the breaker are left-aligned under their title's start and
    reach up to the next column's cell."""
    spans = [(m.group(), m.start(), m.end()) for m in re.finditer(r"\S+", titles)]
    out = {}
    for i, (title, start, end) in enumerate(spans):
        if title not in LEFT_ALIGNED:
            out[title] = token_ending_at(row, end)[0]
        elif i + 1 < len(spans):
            out[title] = row[start:token_ending_at(row, spans[i + 1][2])[1]].strip()
        else:
            out[title] = row[start:].strip()
    return out


def parse_frame(text):
    """(header, titles line, {name: cells}, rows in order) of one frame."""
    lines = text.rstrip("\n").split("\n")
    header, titles = lines[0], lines[1]
    rows = [l for l in lines[2:] if l.strip() and not l.startswith(("... ", "* "))]
    by_name = {}
    for r in rows:
        c = cells(titles, r)
        by_name[c["DEPENDENCY"]] = c
    return header, titles, by_name, rows


def dependency(status, name):
    rows = [d for d in status["dependencies"] if d["name"] == name]
    return rows[0] if rows else None


class Tmux:
    """A private tmux server (its own socket, no user config, no status line)
    running one command in a window of the given size.

    The command runs under a shell that writes its exit status to a file:
    tmux itself may never learn it, as it sets SIGCHLD to SIG_DFL while
    libutempter's helper runs, just when a pane's command exits, and a
    SIGCHLD that arrives then is lost. The trap keeps the shell alive
    through Ctrl-C (the command gets SIGINT, with the default handling)."""

    def __init__(self, argv, width, height=24, env=None):
        self.dir = tempfile.mkdtemp(prefix="dwtest-tmux-")
        os.chmod(self.dir, 0o755)
        conf = os.path.join(self.dir, "tmux.conf")
        with open(conf, "w") as f:
            f.write("set -g status off\nset -g remain-on-exit on\n")
        self.status_file = os.path.join(self.dir, "status")
        self.base = [TMUX, "-S", os.path.join(self.dir, "sock"), "-f", conf]
        self.env = env if env is not None else top_env()
        wrapped = ["sh", "-c", 'trap : INT; "$@"; echo $? > "$0.tmp" && mv "$0.tmp" "$0"', self.status_file] + argv
        self.cmd(["new-session", "-d", "-s", "top", "-x", str(width), "-y", str(height),
                  " ".join(shlex.quote(a) for a in wrapped)])

    def cmd(self, args):
        r = subprocess.run(self.base + args, stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=10, env=self.env)
        if r.returncode:
            raise AssertionError("tmux %s: exit %d: %s" % (args[0], r.returncode, r.stderr.decode(errors="replace")))
        return r.stdout.decode(errors="replace")

    def screen(self, escapes=False, history=False):
        """The pane's text; history: with the lines scrolled off, wrapped lines joined."""
        return self.cmd(["capture-pane", "-p", "-t", "top"] + (["-e"] if escapes else []) +
                        (["-J", "-S", "-"] if history else []))

    def pane(self, fmt):
        return self.cmd(["display-message", "-p", "-t", "top", fmt]).strip()

    def status(self):
        """The command's exit status, or None while it runs."""
        try:
            with open(self.status_file) as f:
                return int(f.read())
        except FileNotFoundError:
            return None

    def wait_exit(self, timeout):
        """The exit status, or None if the command is still running after timeout seconds."""
        deadline = time.monotonic() + timeout
        while self.status() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.status()

    def wait_screen(self, cond, timeout=5.0):
        """Polls the screen until cond(text) holds; returns the last text either way."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.screen()
            if cond(text) or time.monotonic() >= deadline:
                return text
            time.sleep(0.1)

    def keys(self, *keys):
        self.cmd(["send-keys", "-t", "top"] + list(keys))

    def close(self):
        subprocess.run(self.base + ["kill-server"], stdin=subprocess.DEVNULL, capture_output=True,
                       timeout=10, env=self.env)
        shutil.rmtree(self.dir, ignore_errors=True)


class TmuxMixin:
    def tmux(self, argv, width, height=24, env=None):
        if not TMUX:
            self.skipTest("tmux is not installed (bash scripts/deps.sh)")
        t = Tmux(argv, width, height, env)
        self.addCleanup(t.close)
        return t

    def assertQuits(self, t, *keys):
        """keys end top within 2 s, with exit status 0 and the terminal out of the alternate screen."""
        self.assertIsNone(t.status(), "top exited before %r; screen:\n%s" % (keys, t.screen(history=True)))
        self.assertEqual(t.pane("#{alternate_on}"), "1", "top is not drawing on the alternate screen")
        t.keys(*keys)
        status = t.wait_exit(2.0)
        self.assertIsNotNone(status, "top still running 2 s after %r; screen:\n%s" % (keys, t.screen()))
        self.assertEqual(status, 0, "top's exit status after %r" % (keys,))
        self.assertEqual(t.pane("#{alternate_on}"), "0", "the terminal was left on the alternate screen")


# top draws the daemon's figures, asserted on both backends elsewhere (test_calls): one pass (issue 45).
@harness.backend_independent
@unittest.skipUnless(os.geteuid() == 0, "needs root: starts depwatch run")
class TopDaemonTest(TmuxMixin, DaemonTestCase):
    """Against a real daemon: one configured dependency with two destinations,
    a few completed calls and one held in flight. [defaults] ignore = yes, so
    the host's other traffic never opens a breaker in this daemon, and the held
    call ranks the row above the idle destinations of other tests."""

    CALLS = 3

    def setUp(self):
        super().setUp()
        self.fast = LoopbackServer(mode="delay", delay=0.0)
        self.addCleanup(self.fast.close)
        self.hold = LoopbackServer(mode="hold")
        self.addCleanup(self.hold.close)
        fd, self.conf = tempfile.mkstemp(prefix="dwtest-top-", suffix=".conf")
        self.addCleanup(os.unlink, self.conf)
        with os.fdopen(fd, "w") as f:
            f.write("[defaults]\nignore = yes\n\n[dependency %s]\nmatch = 127.0.0.1:%d\nmatch = 127.0.0.1:%d\n"
                    "ignore = no\nslow_call = 60s\nmax_inflight = 5\n" % (NAME, self.fast.port, self.hold.port))
        self.d = self.start_daemon(extra_args=["-c", self.conf])
        self.client = Client("127.0.0.1", self.fast.port)
        self.addCleanup(self.client.close)
        for _ in range(self.CALLS):
            self.client.call()
        self.held = Client("127.0.0.1", self.hold.port)
        self.addCleanup(self.held.close)
        self.addCleanup(self.hold.release)
        self.held.send_request()
        self.assertTrue(self.hold.wait_requests(1), "the held request did not arrive")
        st = self.d.wait_for(lambda s: dependency(s, NAME)["calls"] == self.CALLS and
                             dependency(s, NAME)["inflight"] == 1, what="calls and the held call")
        self.dep = dependency(st, NAME)
        self.assertIsNotNone(self.dep, "no dependency %s in status" % NAME)
        self.assertEqual((self.dep["calls"], self.dep["inflight"]), (self.CALLS, 1), "status: %r" % self.dep)

    def top_argv(self):
        return [harness.DEPWATCH, "top", "--run-dir", self.d.run_dir]

    def test_pipe_prints_one_plain_frame(self):
        r = run_top(self.d.run_dir)
        out = r.stdout.decode("ascii", errors="replace")
        self.assertEqual(r.returncode, 0, "exit status; stderr: %r" % r.stderr)
        self.assertEqual(r.stderr, b"")
        bad = sorted({b for b in r.stdout if (b < 0x20 and b != 0x0a) or b >= 0x7f})
        self.assertEqual(bad, [], "control or non-ASCII bytes in the plain frame:\n%r" % r.stdout)
        self.assertTrue(all(len(l) <= 120 for l in out.splitlines()), "a line wider than 120:\n" + out)
        header, titles, rows, _ = parse_frame(out)
        m = HEADER.match(header)
        self.assertTrue(m, "header: %r" % header)
        self.assertEqual(titles.split(), TITLES_80[:1] + ["DESTS"] + TITLES_80[1:5] + ["FAIL%"] +
                         TITLES_80[5:] + ["REJECTED", "CONNS", "CALLS"], "the columns at 120")
        self.assertEqual(int(m.group(1)), len(rows), "dependencies counted in the header:\n" + out)
        self.assertIn(NAME, rows, "no row for %s:\n%s" % (NAME, out))
        c = rows[NAME]
        st = dependency(self.d.status(), NAME)
        self.assertEqual(c["DESTS"], "2")
        self.assertEqual(c["CALLS/S"], "", "calls/s is blank on the first frame")
        self.assertRegex(c["P50"], DURATION)
        self.assertRegex(c["P99"], DURATION)
        self.assertEqual((c["SLOW%"], c["FAIL%"]), ("0.0", "0.0"))
        self.assertEqual(c["INFLIGHT"], "%d/5" % st["inflight"])
        self.assertRegex(c["OLDEST"], DURATION, "a call is in flight")
        self.assertEqual(c["BREAKER"], "closed")
        self.assertEqual(c["REJECTED"], str(st["rejected"]))
        self.assertEqual(c["CONNS"], str(st["connections"]))
        self.assertEqual(c["CALLS"], str(self.CALLS))

    def test_tmux_80_columns_then_q(self):
        t = self.tmux(self.top_argv(), 80)
        stop = threading.Event()
        # about 20 calls a second while top runs, for its calls/s column
        pacer = threading.Thread(target=self._pace, args=(stop,), daemon=True)
        pacer.start()
        self.addCleanup(pacer.join, 5)
        self.addCleanup(stop.set)
        time.sleep(2.0)
        text = t.screen()
        self.assertRegex(text.split("\n")[0], HEADER, "no header after 2 s:\n" + text)
        self.assertIn("\n%s " % NAME, text, "no row for %s after 2 s:\n%s" % (NAME, text))
        # the first frames may fall before the pacer got going: wait for one that shows its rate
        text = t.wait_screen(lambda s: 5 <= self._rate(s) <= 40, timeout=6)
        stop.set()
        header, titles, rows, _ = parse_frame(text)
        self.assertRegex(header, HEADER)
        self.assertIn("q quits", header)
        self.assertEqual(titles.split(), TITLES_80, "the columns at 80:\n" + text)
        self.assertIn(NAME, rows, "no row for %s:\n%s" % (NAME, text))
        c = rows[NAME]
        self.assertRegex(c["INFLIGHT"], r"^[12]/5$")
        self.assertEqual(c["BREAKER"], "closed")
        rate = float(c["CALLS/S"])
        self.assertTrue(5 <= rate <= 40, "calls/s %s for about 20 calls a second:\n%s" % (rate, text))
        self.assertQuits(t, "q")

    def test_tmux_ctrl_c_restores_the_terminal(self):
        t = self.tmux(self.top_argv(), 80)
        text = t.wait_screen(lambda s: NAME in s)
        self.assertIn(NAME, text)
        self.assertEqual(t.pane("#{cursor_flag}"), "0", "the cursor is not hidden while top draws")
        self.assertQuits(t, "C-c")
        self.assertNotIn(NAME, t.screen(), "the table is still on the screen after Ctrl-C")

    def test_tmux_120_columns_shows_more(self):
        t = self.tmux(self.top_argv(), 120)
        text = t.wait_screen(lambda s: NAME in s)
        _, titles, rows, _ = parse_frame(text)
        for title in WIDE_ONLY:
            self.assertIn(title, titles.split(), "no %s column at 120 columns:\n%s" % (title, text))
        self.assertIn(NAME, rows)
        self.assertEqual(rows[NAME]["CALLS"], str(self.CALLS))
        self.assertEqual(rows[NAME]["DESTS"], "2")
        # and back to 80 on a resize
        t.cmd(["resize-window", "-t", "top", "-x", "80", "-y", "24"])
        # tmux cuts the old lines at once; wait for top's own redraw
        text = t.wait_screen(lambda s: (s.split("\n") + [""])[1].split() == TITLES_80, timeout=3)
        self.assertEqual(parse_frame(text)[1].split(), TITLES_80, "after resizing to 80:\n" + text)
        self.assertQuits(t, "q")

    def force_open(self):
        r = subprocess.run([harness.DEPWATCH, "breaker", "open", NAME, "--run-dir", self.d.run_dir],
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=10)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_forced_open_is_first(self):
        self.force_open()
        r = run_top(self.d.run_dir)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout.decode()
        header, _, rows, order = parse_frame(out)
        self.assertEqual(HEADER.match(header).group(3), "1", "open count in the header:\n" + out)
        self.assertTrue(order and order[0].startswith(NAME + " "), "the forced-open row is not first:\n" + out)
        self.assertEqual(rows[NAME]["BREAKER"], "open forced")

    def test_open_row_red_unless_no_color(self):
        self.force_open()
        for no_color, colored in ((None, True), ("", True), ("1", False)):
            with self.subTest(NO_COLOR=no_color):
                env = top_env() if no_color is None else top_env(NO_COLOR=no_color)
                t = self.tmux(self.top_argv(), 80, env=env)
                t.wait_screen(lambda s: NAME in s)
                lines = [l for l in t.screen(escapes=True).splitlines() if NAME in l]
                self.assertEqual(len(lines), 1, t.screen(escapes=True))
                self.assertEqual(bool(RED.search(lines[0])), colored, "NO_COLOR=%r: %r" % (no_color, lines[0]))
                t.close()

    def _pace(self, stop):
        c = Client("127.0.0.1", self.fast.port)
        try:
            while not stop.wait(0.05):
                c.call()
        finally:
            c.close()

    @staticmethod
    def _rate(text):
        """The calls/s of NAME on the screen; -1 when there is none (yet)."""
        try:
            return float(parse_frame(text)[2][NAME]["CALLS/S"])
        except (IndexError, KeyError, ValueError):
            return -1


class FakeDaemon:
    """Stands in for the daemon on <dir>/depwatch.sock: each client's request
    line is recorded and answered with answer(request) after its length line
    (raw: as it is), then closed."""

    def __init__(self, answer, raw=False):
        self.answer = answer
        self.raw = raw
        self.run_dir = tempfile.mkdtemp(prefix="dwtest-fake-")
        self.path = os.path.join(self.run_dir, "depwatch.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(self.path)
        self.sock.listen(16)
        self.requests = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                buf = b""
                while b"\n" not in buf:
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    buf += chunk
                req = buf.decode(errors="replace").strip()
                self.requests.append(req)
                body = self.answer(req)
                conn.sendall(body if self.raw else b"depwatch-answer %d\n" % len(body) + body)

    def stop(self):
        """Gone, as a crashed daemon: nobody listens on the socket any more."""
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        self._thread.join(5)
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def close(self):
        self.stop()
        shutil.rmtree(self.run_dir, ignore_errors=True)


def tsv_row(name, calls=10, breaker="closed", reason="none", slow="0.0000", inflight=0, forced=0,
            p50="1.500", max_inflight=0, mux="0", burst="0", old=False):
    row = "%s\t1\t%d\t0\t%s\t2.000\t%s\t0.0000\t%d\t%d\t0.0\t%s\t%s\t0\t1\t%d" % (
        name, calls, p50, slow, inflight, max_inflight, breaker, reason, forced)
    return row + ("\n" if old else "\t%s\t%s\n" % (mux, burst))


@harness.backend_independent
class TopFakeDaemonTest(TmuxMixin, unittest.TestCase):
    def fake(self, answer, raw=False):
        f = FakeDaemon(answer, raw)
        self.addCleanup(f.close)
        return f

    def test_hostile_and_malformed_lines(self):
        answer = (TSV_HEADER +
                  tsv_row("e\x1b[2J\x9b") +                                  # terminal escapes in names
                  tsv_row("t\x1b]0;x\x07\x7f") +
                  tsv_row("ok") +
                  "short\t1\t2\n" +                                          # too few fields
                  tsv_row("extra").replace("\n", "\textra\n") +              # more fields than the header
                  tsv_row("nan", p50="nan") +                                 # not a plain decimal
                  tsv_row("hex", p50="0x10") +
                  tsv_row("rate", slow="1.5000") +                           # a rate above 1
                  tsv_row("neg").replace("\t1\t10\t", "\t-1\t10\t", 1) +     # a negative count
                  tsv_row("big").replace("\t10\t", "\t99999999999999999999999\t", 1) +
                  tsv_row("state", breaker="OPEN\x1b") +
                  tsv_row("forced", forced=2) +
                  tsv_row("burst", burst="2") +                              # burst_timings is 0 or 1
                  tsv_row("mux", mux="-1") +
                  tsv_row("") +                                              # no name
                  tsv_row("x" * 300) +                                       # longer than any name
                  "\t\t\t\n\x00garbage\n")
        f = self.fake(lambda req: answer.encode("latin-1"))
        r = run_top(f.run_dir)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(f.requests, ["top tsv"])
        bad = sorted({b for b in r.stdout if (b < 0x20 and b != 0x0a) or b >= 0x7f})
        self.assertEqual(bad, [], "control or non-ASCII bytes reached the output:\n%r" % r.stdout)
        out = r.stdout.decode()
        header, _, rows, _ = parse_frame(out)
        self.assertIn("3 dependencies", header)
        self.assertIn("15 malformed lines skipped", header)
        self.assertEqual(sorted(rows), sorted(["ok", "e\\x1b[2J\\x9b", "t\\x1b]0;x\\x07\\x7f"]), out)

    def test_worst_first(self):
        answer = (TSV_HEADER +
                  tsv_row("a-idle") +
                  tsv_row("b-busy", inflight=3, max_inflight=4) +
                  tsv_row("c-slowish", slow="0.2000") +
                  tsv_row("d-half", breaker="half_open", reason="failure_rate") +
                  tsv_row("e-open", breaker="open", reason="concurrency") +
                  tsv_row("f-slower", slow="0.4000", inflight=1) +
                  tsv_row("g-forced", breaker="open", reason="forced", forced=1) +
                  tsv_row("h-closed-forced", reason="forced", forced=1))
        f = self.fake(lambda req: answer.encode())
        r = run_top(f.run_dir)
        self.assertEqual(r.returncode, 0, r.stderr)
        header, _, rows, order = parse_frame(r.stdout.decode())
        self.assertIn("8 dependencies, 2 open, 1 half_open", header)
        self.assertEqual([l.split()[0] for l in order],
                         ["e-open", "g-forced", "d-half", "f-slower", "c-slowish", "b-busy", "a-idle",
                          "h-closed-forced"])
        self.assertEqual(rows["e-open"]["BREAKER"], "open concurrency")
        self.assertEqual(rows["g-forced"]["BREAKER"], "open forced")
        self.assertEqual(rows["d-half"]["BREAKER"], "half_open failure_rate")
        self.assertEqual(rows["h-closed-forced"]["BREAKER"], "closed forced")
        self.assertEqual(rows["b-busy"]["INFLIGHT"], "3/4")
        self.assertEqual(rows["a-idle"]["INFLIGHT"], "0")
        self.assertEqual(rows["a-idle"]["P50"], "1.5ms")
        self.assertEqual(rows["a-idle"]["OLDEST"], "-")

    def test_burst_timings_marked(self):
        """A row whose percentiles are burst timings gets a '*' by its P50 and the legend below the
        table; an older daemon's answer without the two fields still reads, unmarked."""
        answer = (TSV_HEADER + tsv_row("plain", mux="0") + tsv_row("h2", mux="3", burst="1") +
                  tsv_row("h2-idle", mux="2", burst="1", p50="-1.000") +
                  tsv_row("h2-slow", mux="1", burst="1", p50="12.340"))
        f = self.fake(lambda req: answer.encode())
        r = run_top(f.run_dir)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout.decode()
        header, titles, rows, order = parse_frame(out)
        self.assertNotIn("malformed", header)
        self.assertEqual(sorted(rows), ["h2", "h2-idle", "h2-slow", "plain"], out)
        self.assertEqual(rows["h2"]["P50"], "1.5ms*")
        self.assertEqual(rows["h2-slow"]["P50"], "12ms*", "the mark fits the column: one digit less")
        self.assertEqual(rows["h2"]["P99"], "2.0ms")
        self.assertEqual(rows["plain"]["P50"], "1.5ms")
        self.assertEqual(rows["h2-idle"]["P50"], "-", "no calls in the window: nothing to mark")
        self.assertEqual(out.rstrip("\n").split("\n")[-1], LEGEND, out)
        self.assertTrue(all(len(l) <= 120 for l in out.splitlines()), out)
        self.assertEqual(titles.split(), TITLES_80[:1] + ["DESTS"] + TITLES_80[1:5] + ["FAIL%"] +
                         TITLES_80[5:] + ["REJECTED", "CONNS", "CALLS"], "the columns at 120")

        old = TSV_HEADER_OLD + tsv_row("plain", old=True) + tsv_row("other", old=True)
        f = self.fake(lambda req: old.encode())
        r = run_top(f.run_dir)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout.decode()
        header, _, rows, _ = parse_frame(out)
        self.assertNotIn("malformed", header)
        self.assertEqual(sorted(rows), ["other", "plain"], out)
        self.assertEqual(rows["plain"]["P50"], "1.5ms")
        self.assertNotIn(LEGEND, out)

        # wide enough, the MUX column shows the multiplexed connections
        f = self.fake(lambda req: answer.encode())
        t = self.tmux([harness.DEPWATCH, "top", "--run-dir", f.run_dir], 140)
        text = t.wait_screen(lambda s: "h2-idle" in s and LEGEND in s)
        _, titles, rows, _ = parse_frame(text)
        self.assertEqual(titles.split()[-3:], ["FAILED", "MUX", "ABORTED"], text)
        self.assertEqual((rows["h2"]["MUX"], rows["plain"]["MUX"]), ("3", "0"), text)
        self.assertIn(LEGEND, text)
        self.assertQuits(t, "q")

    def test_calls_per_second(self):
        """calls grows 1000 per second of real time, whenever top asks: top must show 1000/s."""
        t0 = time.monotonic()
        f = self.fake(lambda req: (TSV_HEADER + tsv_row("steady", calls=int(1000 * (time.monotonic() - t0)))
                                   + tsv_row("reset", calls=10 ** 6 - len(f.requests) * 1000)).encode())
        t = self.tmux([harness.DEPWATCH, "top", "--run-dir", f.run_dir, "--interval", "500ms"], 80)
        text = t.wait_screen(lambda s: len(f.requests) >= 4 and "steady" in s, timeout=5)
        rows = parse_frame(text)[2]
        self.assertIn("steady", rows, text)
        rate = float(rows["steady"]["CALLS/S"])
        self.assertTrue(900 <= rate <= 1100, "calls/s %s, want about 1000:\n%s" % (rate, text))
        self.assertEqual(rows["reset"]["CALLS/S"], "", "a count that went back has no rate")
        self.assertQuits(t, "q")

    def test_daemon_gone_while_running(self):
        answer = (TSV_HEADER + tsv_row("still-here")).encode()
        f = self.fake(lambda req: answer)
        t = self.tmux([harness.DEPWATCH, "top", "--run-dir", f.run_dir, "--interval", "200ms"], 100)
        t.wait_screen(lambda s: "still-here" in s)
        f.stop()
        text = t.wait_screen(lambda s: "cannot reach the daemon" in s, timeout=3)
        self.assertIn("cannot reach the daemon", text.splitlines()[0], "the header says so:\n" + text)
        self.assertIn("still-here", text, "the last table stays")
        self.assertNotIn("depwatch: cannot reach", text, "stderr written over the table")
        self.assertQuits(t, "q")

    def test_no_daemon(self):
        run_dir = tempfile.mkdtemp(prefix="dwtest-none-")
        self.addCleanup(shutil.rmtree, run_dir, True)
        r = run_top(run_dir)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stdout, b"")
        lines = r.stderr.decode().splitlines()
        self.assertEqual(len(lines), 1, lines)
        self.assertIn("cannot reach the daemon", lines[0])
        # a terminal too: no curses, the same one line
        t = self.tmux([harness.DEPWATCH, "top", "--run-dir", run_dir], 80)
        self.assertEqual(t.wait_exit(3), 1, "exit status without a daemon:\n" + t.screen(history=True))
        self.assertEqual(t.pane("#{alternate_on}"), "0")
        lines = [l for l in t.screen(history=True).splitlines() if l.strip() and not l.startswith("Pane is dead")]
        self.assertEqual(len(lines), 1, lines)
        self.assertIn("cannot reach the daemon", lines[0])

    def test_not_a_top_answer(self):
        f = self.fake(lambda req: b"error: unknown request\x1b[2J\n")
        r = run_top(f.run_dir)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stdout, b"")
        self.assertIn(b"not a top table: error: unknown request\\x1b[2J", r.stderr)
        self.assertNotIn(b"\x1b", r.stderr)

    def test_cut_answer(self):
        """An answer that ends before its length line says: an error, no frame; and in the live
        view the header says so and the last table stays."""
        whole = (TSV_HEADER + tsv_row("a") + tsv_row("b")).encode()
        cut = b"depwatch-answer %d\n" % len(whole) + whole[:len(whole) // 2]
        f = self.fake(lambda req: cut, raw=True)
        r = run_top(f.run_dir)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stdout, b"")
        self.assertEqual(r.stderr.decode().splitlines(),
                         ["depwatch: the daemon's answer was cut: %d of %d bytes arrived (the daemon "
                          "closes a client that reads nothing for 2 s)" % (len(whole) // 2, len(whole))])
        answers = [b"depwatch-answer %d\n" % len(whole) + whole, cut]
        f = self.fake(lambda req: answers[min(len(f.requests), 2) - 1], raw=True)
        t = self.tmux([harness.DEPWATCH, "top", "--run-dir", f.run_dir, "--interval", "200ms"], 100)
        text = t.wait_screen(lambda s: "answer was cut" in s, timeout=3)
        self.assertIn("the daemon's answer was cut", text.splitlines()[0], text)
        self.assertIn("b", parse_frame(text)[2], "the last table stays:\n" + text)
        self.assertQuits(t, "q")

    def test_no_length_line(self):
        """A daemon older than the client (no length line): an error naming that."""
        f = self.fake(lambda req: (TSV_HEADER + tsv_row("a")).encode(), raw=True)
        r = run_top(f.run_dir)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stdout, b"")
        self.assertIn(b"has no length line: not a depwatch daemon, or one older than this client",
                      r.stderr)

    def test_bad_arguments(self):
        for args in (["--interval", "0s"], ["--interval", "abc"], ["--interval", "61m"], ["extra"],
                     ["--bogus"]):
            with self.subTest(args=args):
                r = run_top("/nonexistent", *args)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertEqual(r.stdout, b"")


if __name__ == "__main__":
    unittest.main()
