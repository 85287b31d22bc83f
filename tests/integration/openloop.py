"""Open-loop load on loopback: a stand-in dependency whose delay the caller
controls, and a client that starts calls at a fixed rate whether or not
earlier ones have come back (as real traffic does), on pooled keep-alive
connections. Used by the breaker tests and by `make demo`."""

import errno
import queue
import random
import socket
import sys
import threading
import time

from loopback import bind_fresh_port


def loopback_listener(host="127.0.0.1", backlog=1024):
    """A listening TCP socket on a free port of host that this run never handed out before (a
    daemon shared by reloads keeps the rows of the tests before), and that port."""
    def make_socket():
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        return s
    sock = bind_fresh_port(make_socket, host)
    sock.listen(backlog)
    return sock, sock.getsockname()[1]


# accept() errors that end one connection or pass (accept(2): pending network errors are passed
# on by accept; descriptors or memory short for a moment), not the listener
PASSING_ACCEPT_ERRORS = (errno.ECONNABORTED, errno.EPROTO, errno.EINTR, errno.EMFILE, errno.ENFILE,
                         errno.ENOBUFS, errno.ENOMEM)


def accept_loop(sock, stopped, on_conn):
    """Hands each accepted connection to on_conn until `stopped` or the socket closes. A passing
    accept() error is said on stderr and the loop goes on: a stand-in that stopped accepting would
    fail its callers' later calls for the test's own reason, not depwatch's."""
    port = sock.getsockname()[1]
    while not stopped.is_set():
        try:
            conn, _ = sock.accept()
        except OSError as e:
            if e.errno not in PASSING_ACCEPT_ERRORS or stopped.is_set():
                return
            print("stand-in on port %d: accept: %s, going on" % (port, e),
                  file=sys.stderr)
            stopped.wait(0.01)
            continue
        on_conn(conn)


def open_loop(rate, stopped, start_one):
    """Runs start_one() in a new thread `rate` times a second until `stopped`
    is set, whether or not earlier ones have finished."""
    interval = 1.0 / rate
    next_at = time.monotonic()
    while not stopped.is_set():
        threading.Thread(target=start_one, daemon=True).start()
        next_at += interval
        stopped.wait(max(0.0, next_at - time.monotonic()))


class SlowServer:
    """Answers each request after `delay` seconds (changeable at any time);
    `tail` = (fraction, delay) makes that share of calls take the other delay."""

    def __init__(self, delay, tail=None, host="127.0.0.1"):
        self.delay = delay
        self.tail = tail
        self.sock, self.port = loopback_listener(host)
        self.stopped = threading.Event()
        self.rng = random.Random(42)
        self.conns = []
        threading.Thread(target=accept_loop, args=(self.sock, self.stopped, self._serve_new),
                         daemon=True).start()

    def _serve_new(self, conn):
        self.conns.append(conn)
        try:
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()
        except RuntimeError as e:	# no thread for it: that caller fails, the listener goes on
            print("stand-in on port %d: %s" % (self.port, e), file=sys.stderr)
            conn.close()

    def _pick_delay(self):
        if self.tail and self.rng.random() < self.tail[0]:
            return self.tail[1]
        return self.delay

    def _serve(self, conn):
        try:
            while not self.stopped.is_set():
                if not conn.recv(4096):
                    return
                delay = self._pick_delay()
                if self.stopped.wait(delay):
                    return
                conn.sendall(b"ok\n")
        except OSError:
            pass
        finally:
            conn.close()

    def close(self):
        self.stopped.set()
        self.sock.close()
        for c in self.conns:
            try:
                c.close()
            except OSError:
                pass


class OpenLoopClient:
    """Starts `rate` calls a second to (host, port) until stop(); each call
    takes an idle pooled connection or opens one."""

    def __init__(self, host, port, rate):
        self.addr = (host, port)
        self.rate = rate
        self.pool = queue.LifoQueue()
        self.stopped = threading.Event()
        self.lock = threading.Lock()
        self.started = self.completed = self.failed = 0
        self.call_failed = 0  # of the failed: the connection was up, the call itself failed
        self.log = []  # (start, end, ok) of every finished call, monotonic seconds
        self.errors = []  # (seconds from start(), "connect" or "call", the error) of every failed call
        self.t0 = None
        self.thread = threading.Thread(target=self._arrivals, daemon=True)

    def start(self):
        self.t0 = time.monotonic()
        self.thread.start()
        return self

    def _arrivals(self):
        open_loop(self.rate, self.stopped, self._call)

    def _conn(self):
        try:
            return self.pool.get_nowait()
        except queue.Empty:
            return socket.create_connection(self.addr, timeout=30)

    def _call(self):
        with self.lock:
            self.started += 1
        conn = None
        start = time.monotonic()
        try:
            conn = self._conn()
            start = time.monotonic()
            conn.sendall(b"call\n")
            if not conn.recv(64):
                raise OSError("closed")
            end = time.monotonic()
            self.pool.put(conn)
            with self.lock:
                self.completed += 1
                self.log.append((start, end, True))
        except OSError as e:
            if conn is not None:
                conn.close()
            with self.lock:
                self.failed += 1
                self.call_failed += conn is not None
                self.log.append((start, time.monotonic(), False))
                self.errors.append((round(start - self.t0, 3), "call" if conn else "connect", repr(e)))

    def stop(self):
        self.stopped.set()
        self.thread.join()
        while True:
            try:
                self.pool.get_nowait().close()
            except queue.Empty:
                return
