"""Worker pools against a stand-in dependency, in one place for the tests
(test_abort.py, test_pool.py) and bench/pool.py: a caller with one
keep-alive connection (KeepAlive), a pool worker calling through one
(Worker, pool), a stand-in server in this process (StandIn) or in a process
of its own (StandInProcess), and a closed-loop pool of callers in a process
of its own (PoolProcess). A stand-in's delay changes while the pool calls:
that is the story of each of them. The ground truth is what the callers and
the stand-in saw themselves."""

import errno
import json
import os
import socket
import subprocess
import sys
import threading
import time

from loopback import free_port
from openloop import loopback_listener

HERE = os.path.dirname(os.path.abspath(__file__))


class KeepAlive:
    """One keep-alive connection to 127.0.0.1:port: a call sends a line and reads the answer up to
    its newline; on an error the connection is closed and the next call connects again."""

    def __init__(self, port, connect=False):
        self.port = port
        self.sock = None
        if connect:
            self.connect()

    def connect(self):
        self.sock = socket.create_connection(("127.0.0.1", self.port))

    def call(self, line=b"req\n"):
        """(True, 0), or (False, errno) when the connect, the send or the answer failed (a refused
        connect included)."""
        try:
            if self.sock is None:
                self.connect()
            self.sock.sendall(line)
            data = b""
            while not data.endswith(b"\n"):
                chunk = self.sock.recv(64)
                if not chunk:
                    raise OSError(errno.ECONNRESET, "closed by the peer")
                data += chunk
            return True, 0
        except OSError as e:
            self.close()
            return False, e.errno

    def close(self):
        if self.sock is not None:
            self.sock.close()
        self.sock = None


class StandIn:
    """A keep-alive server: answers each line after `delay` seconds (None: never,
    until the delay changes); a line "slow" waits `slow` seconds instead.
    Counts the resets its connections saw. A subclass may speak another
    protocol (test_abort.py's HttpStandIn): END ends a request, ANSWER is the
    answer to each, and _received / _answered see each request as it comes
    and once it is answered."""

    END = b"\n"
    ANSWER = b"ok\n"

    def __init__(self, delay=0.02, slow=None):
        self.delay = delay
        self.slow = slow
        self.changed = threading.Condition()
        self.resets = 0
        self.stopped = False
        self.sock, self.port = loopback_listener(backlog=256)   # a port new to the run
        self.conns = []
        threading.Thread(target=self._accept, daemon=True).start()

    def set_delay(self, delay):
        with self.changed:
            self.delay = delay
            self.changed.notify_all()

    def _accept(self):
        while not self.stopped:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _wait(self, line):
        start = time.monotonic()
        with self.changed:
            while not self.stopped:
                delay = self.slow if line.startswith(b"slow") and self.slow else self.delay
                left = None if delay is None else start + delay - time.monotonic()
                if left is not None and left <= 0:
                    return True
                self.changed.wait(left)
        return False

    def _received(self, request):
        pass

    def _answered(self, request):
        pass

    def _serve(self, c):
        buf = b""
        try:
            while True:
                data = c.recv(4096)
                if not data:
                    return
                buf += data
                while self.END in buf:
                    request, buf = buf.split(self.END, 1)
                    self._received(request)
                    if not self._wait(request):
                        return
                    c.sendall(self.ANSWER)
                    self._answered(request)
        except (ConnectionResetError, BrokenPipeError):
            with self.changed:
                self.resets += 1
        except OSError:
            pass
        finally:
            c.close()

    def close(self):
        with self.changed:
            self.stopped = True
            self.changed.notify_all()
        self.sock.close()
        for c in self.conns:
            try:
                c.close()
            except OSError:
                pass


class Worker(threading.Thread):
    """One pool worker: one keep-alive connection, a call every `pause` s;
    on an error it closes and reconnects (refused connects count as failed calls).
    Records (start, end, ok, errno) per call."""

    def __init__(self, port, pause=0.02):
        super().__init__(daemon=True)
        self.port = port
        self.pause = pause
        self.calls = []
        self.stop = threading.Event()
        self.conn = KeepAlive(port)

    def _call(self):
        t0 = time.monotonic()
        ok, err = self.conn.call()
        self.calls.append((t0, time.monotonic(), ok, err))

    def run(self):
        while not self.stop.is_set():
            self._call()
            self.stop.wait(self.pause)

    def close(self):
        self.stop.set()
        self.join(5)
        self.conn.close()


def pool(cleanups, port, n, pause=0.02):
    """n Workers against port, each pausing `pause` s between its calls, started; their closing
    goes to cleanups."""
    ws = [Worker(port, pause) for _ in range(n)]
    for w in ws:
        w.start()
        cleanups.append(w.close)
    return ws


# The stand-in dependency in a process of its own, at nice NICE (-10 for the
# tests): the callers' threads (and the machine's other load) must not add
# latency the test did not choose, or a pool-wide pause of the test process
# would be a real stall. argv: delay, tail share, tail delay, seed, nice, port
# (free_port's: one new to the run, as StandIn's).
# Prints its port. On stdin, a line "hang" makes every request received from
# then on wait forever; "delay S" makes those received from then on take S
# seconds; EOF ends it.
STANDIN = r"""
import os, random, socket, sys, threading
delay, share, slow, seed = [float(sys.argv[1])], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
os.nice(int(sys.argv[5]))
rng, lock, hang, forever = random.Random(seed), threading.Lock(), threading.Event(), threading.Event()
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", int(sys.argv[6])))
ls.listen(1024)

def serve(conn):
    try:
        answer(conn)
    except OSError:
        pass  # the caller went away

def answer(conn):
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buf = b""
    while True:
        while b"\n" not in buf:
            got = conn.recv(4096)
            if not got:
                return
            buf += got
        buf = buf[buf.index(b"\n") + 1:]
        if hang.is_set():
            forever.wait()
        with lock:
            d = slow if rng.random() < share else delay[0]
        forever.wait(d)
        conn.sendall(b"ok\n")

def accept():
    while True:
        c, _ = ls.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()

threading.Thread(target=accept, daemon=True).start()
print(ls.getsockname()[1], flush=True)
for line in sys.stdin:
    if line.strip() == "hang":
        hang.set()
    elif line.startswith("delay "):
        with lock:
            delay[0] = float(line.split()[1])
os._exit(0)
"""


class Child:
    """A script above in a process of its own, driven line by line on its standard input."""

    def command(self, line):
        self.proc.stdin.write(line)
        self.proc.stdin.flush()

    def close(self):
        """End of input: the script exits; killed if it has not within 5 s."""
        self.proc.stdin.close()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class StandInProcess(Child):
    """The STANDIN above: `delay` s per request, `share` of them `slow` s instead."""

    def __init__(self, delay, share=0.0, slow=0.0, seed=13, nice=-10):
        self.proc = subprocess.Popen([sys.executable, "-c", STANDIN, str(delay), str(share), str(slow),
                                      str(seed), str(nice), str(free_port())],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.port = int(self.proc.stdout.readline())

    def hang(self):
        self.command(b"hang\n")

    def set_delay(self, delay):
        self.command(b"delay %f\n" % delay)


# The callers, in a process of their own at nice -10 too: a pause of this
# process (status reads, thread switches) must not look like callers that
# stopped asking. argv: port, callers, slow, this directory. Each caller has
# one keep-alive connection and calls back to back (closed loop); callers < 0:
# openloop.py's client at -callers calls a second instead. A line on
# stdin asks for the counts (answered, of them slower than slow, errors) as a
# JSON line; EOF ends it.
CLIENT = r"""
import json, os, socket, sys, threading, time
port, n, slow = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
os.nice(-10)
lock, counts = threading.Lock(), {"answered": 0, "slow": 0, "errors": 0}
if n < 0:
    # open loop instead, -n calls a second (openloop.py's client)
    sys.path.insert(0, sys.argv[4])
    from openloop import OpenLoopClient
    c = OpenLoopClient("127.0.0.1", port, -n).start()
    print("ready", flush=True)
    for line in sys.stdin:
        with c.lock:
            done = [e - s for s, e, ok in c.log if ok]
            print(json.dumps({"answered": len(done), "slow": sum(d > slow for d in done),
                              "errors": c.failed}), flush=True)
    os._exit(0)

def work(sock):
    while True:
        t = time.monotonic()
        try:
            sock.sendall(b"call\n")
            if not sock.recv(64):
                raise OSError("closed")
        except OSError:
            with lock:
                counts["errors"] += 1
            return
        took = time.monotonic() - t
        with lock:
            counts["answered"] += 1
            counts["slow"] += took > slow

socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(n)]
for s in socks:
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    threading.Thread(target=work, args=(s,), daemon=True).start()
print("ready", flush=True)
for line in sys.stdin:
    with lock:
        print(json.dumps(counts), flush=True)
os._exit(0)
"""


class PoolProcess(Child):
    """The CLIENT above: n callers against port, a call slower than `slow` s counted slow;
    n < 0: -n calls a second, open loop."""

    def __init__(self, port, n, slow):
        self.proc = subprocess.Popen([sys.executable, "-c", CLIENT, str(port), str(n), str(slow), HERE],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        if self.proc.stdout.readline() != b"ready\n":
            raise RuntimeError("the pool of %d did not start" % n)

    def counts(self):
        self.command(b"?\n")
        return json.loads(self.proc.stdout.readline())
