"""Loopback servers and clients of the integration tests (split from harness.py, which re-exports
them): a server with delays and modes the test chooses, a keep-alive client that times its calls,
client threads under names of their own, and ports never handed out twice in a run (a shared
daemon keeps the rows of the tests before it)."""

import ctypes
import os
import socket
import struct
import threading
import time

_PR_SET_NAME = 15
_libc = ctypes.CDLL(None, use_errno=True)


def fmt_dest(host, port):
    """The daemon's text for a destination: "127.0.0.1:80" or "[::1]:443"."""
    return "[%s]:%d" % (host, port) if ":" in host else "%s:%d" % (host, port)


def set_thread_comm(name):
    """Sets the calling thread's command name (what the kernel reports as comm)."""
    buf = ctypes.create_string_buffer(name.encode()[:15])
    if _libc.prctl(_PR_SET_NAME, buf, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NAME)")


def thread_comm():
    tid = threading.get_native_id()
    with open("/proc/self/task/%d/comm" % tid) as f:
        return f.read().rstrip("\n")



# make test runs the two backends' passes side by side (tests/run-all.sh), each pass with daemons that
# watch, judge and may refuse or abort every process's connections by destination port. A port one
# pass had and released, the other could bind next while the first's daemon still holds a rule or
# the rows for it: DW_PORT_SLICE="i/n" gives pass i the loopback ports p with (p // PORT_BLOCK) % n
# == i, blocks of 8 so that a few consecutive ports stay in one slice. Unset: every port.
PORT_BLOCK = 8


def _port_slice():
    text = os.environ.get("DW_PORT_SLICE", "")
    if not text:
        return 0, 1
    i, n = (int(x) for x in text.split("/"))
    if not 0 <= i < n:
        raise ValueError("DW_PORT_SLICE=%r: want i/n with 0 <= i < n" % text)
    return i, n


PORT_SLICE = _port_slice()


def in_slice(port, count=1):
    """Whether port (and the count - 1 after it) are this pass's to use."""
    i, n = PORT_SLICE
    return all((p // PORT_BLOCK) % n == i for p in range(port, port + count))


def first_in_slice(port):
    """The first port from `port` on that is this pass's."""
    while not in_slice(port):
        port += 1
    return port


# Every port free_port and LoopbackServer handed out in this run. A shared daemon (DaemonTestCase's
# SHARED_DAEMON) keeps the rows of the tests before: a port must not come back, or a later test
# would read an earlier one's counts as its own.
_handed_ports = set()
_handed_lock = threading.Lock()


def bind_fresh_port(make_socket, host):
    """make_socket() bound to (host, 0), on a port of this pass's slice this run never handed out
    before; returns it."""
    held = []
    try:
        for _ in range(100 * PORT_SLICE[1]):
            s = make_socket()
            s.bind((host, 0))
            port = s.getsockname()[1]
            with _handed_lock:
                if port not in _handed_ports and in_slice(port):
                    _handed_ports.add(port)
                    return s
            held.append(s)      # kept bound while we retry: the kernel cannot offer it again
        raise OSError("no loopback port left that this run has not used")
    finally:
        for h in held:
            h.close()


def reusable_socket():
    """A TCP/IPv4 socket with SO_REUSEADDR (a listener that binds again over TIME_WAIT)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    return s


def free_port(host="127.0.0.1"):
    """A loopback port nobody listens on (bound, read back, released), new to this run."""
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = bind_fresh_port(lambda: socket.socket(fam, socket.SOCK_STREAM), host)
    try:
        return s.getsockname()[1]
    finally:
        s.close()


# --------------------------------------------------------------------------
# Servers

REQ = b"REQ\n"
RESP = b"RESP\n"


def recv_line(sock, buf=b""):
    """Reads until a newline; returns (line, rest). Raises ConnectionError on EOF."""
    while b"\n" not in buf:
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionError("end of file")
        buf += chunk
    line, _, rest = buf.partition(b"\n")
    return line + b"\n", rest


class LoopbackServer:
    """A threaded TCP server on a loopback port the kernel chooses.

    Each request is one line; what the server does with it is the mode:
      "delay": answers each request after `delay` seconds (from its receipt)
      "hold":  reads the request and answers only once release() is called
      "rst":   reads the request and closes with SO_LINGER {1, 0} (RST)
      "fin":   reads the request and closes cleanly (FIN) without answering
      "split": answers in two segments, `delay` and 2 x `delay` after the request
      "answer_close": answers, then closes its sending side (FIN) 20 ms later
      "answer_close_corked": answers and closes its sending side in one segment
      "answer_rst": answers, then resets the connection 20 ms later
    """

    def __init__(self, host="127.0.0.1", mode="delay", delay=0.0):
        self.host = host
        self.mode = mode
        self.delay = delay
        fam = socket.AF_INET6 if ":" in host else socket.AF_INET
        def make_socket():
            s = socket.socket(fam, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            return s
        self.lsock = bind_fresh_port(make_socket, host)
        self.lsock.listen(128)
        self.port = self.lsock.getsockname()[1]
        self.dest = fmt_dest(host, self.port)
        self._release = threading.Event()
        self._stop = threading.Event()
        self._threads = []
        self._conns = []
        self._lock = threading.Lock()
        self.requests = 0           # requests fully received
        self.answered = 0
        self.accepted = 0
        self.peer_ports = []        # the clients' ports, as the server saw them
        self.errors = []
        self._acceptor = threading.Thread(target=self._accept_loop, daemon=True)
        self._acceptor.start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def release(self):
        self._release.set()

    def stop_listening(self):
        """Closes the listening socket for real (shutdown wakes the thread blocked in accept,
        which would otherwise keep it open) and waits until the acceptor is gone."""
        self._stop.set()
        try:
            self.lsock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._acceptor.join(5)
        self.lsock.close()

    def _accept_loop(self):
        while not self._stop.is_set():
            try:
                conn, addr = self.lsock.accept()
            except OSError:
                return
            with self._lock:
                self.accepted += 1
                self.peer_ports.append(addr[1])
                self._conns.append(conn)
            t = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self._threads.append(t)
            t.start()

    def _serve(self, conn):
        buf = b""
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while True:
                try:
                    _, buf = recv_line(conn, buf)
                except ConnectionError:
                    break
                got = time.monotonic()
                with self._lock:
                    self.requests += 1
                if self.mode == "hold":
                    self._release.wait()
                elif self.mode == "rst":
                    self._linger0(conn)
                    break
                elif self.mode == "fin":
                    conn.shutdown(socket.SHUT_RDWR)
                    break
                elif self.delay:
                    self._sleep_until(got + self.delay)
                with self._lock:         # counted before the client can see the answer
                    self.answered += 1
                if self.mode == "split":
                    # The response in two segments, `delay` apart: the call ends at the first.
                    conn.sendall(RESP[:2])
                    self._sleep_until(got + 2 * self.delay)
                    conn.sendall(RESP[2:])
                elif self.mode == "answer_close_corked":
                    # Response bytes and FIN in one segment.
                    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
                    conn.sendall(RESP)
                    conn.shutdown(socket.SHUT_WR)
                    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 0)
                else:
                    conn.sendall(RESP)
                if self.mode == "answer_close":
                    time.sleep(0.02)
                    conn.shutdown(socket.SHUT_WR)
                elif self.mode == "answer_rst":
                    time.sleep(0.02)
                    self._linger0(conn)
                    break
        except OSError as e:
            if not self._stop.is_set():
                self.errors.append(repr(e))
        finally:
            conn.close()
            with self._lock:
                if conn in self._conns:
                    self._conns.remove(conn)

    @staticmethod
    def _sleep_until(t):
        left = t - time.monotonic()
        if left > 0:
            time.sleep(left)

    @staticmethod
    def _linger0(conn):
        """The close that follows sends RST instead of FIN."""
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    def wait_requests(self, n, timeout=5.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if self.requests >= n:
                    return True
            time.sleep(0.005)
        return False

    def close(self):
        self._release.set()
        self.stop_listening()
        with self._lock:
            conns = list(self._conns)
        for conn in conns:       # wake serving threads blocked in recv
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for t in self._threads:
            t.join(5)


# --------------------------------------------------------------------------
# Clients


class Client:
    """One keep-alive connection making request/response calls."""

    def __init__(self, host, port, family=None):
        fam = family or (socket.AF_INET6 if ":" in host else socket.AF_INET)
        self.sock = socket.socket(fam, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.settimeout(30)
        self.sock.connect((host, port))
        self.local_port = self.sock.getsockname()[1]
        self.buf = b""
        self.latencies = []
        self.first_send = None

    def send_request(self):
        t = time.monotonic()
        if self.first_send is None:
            self.first_send = t
        self.sock.sendall(REQ)
        return t

    def send_request_in_parts(self, gap=0.002):
        """The request line in one send per byte, `gap` seconds apart."""
        t = time.monotonic()
        if self.first_send is None:
            self.first_send = t
        for i in range(len(REQ)):
            if i:
                time.sleep(gap)
            self.sock.sendall(REQ[i:i + 1])
        return t

    def read_response(self):
        line, self.buf = recv_line(self.sock, self.buf)
        if line != RESP:
            raise AssertionError("unexpected response %r" % line)

    def call(self):
        t = self.send_request()
        self.read_response()
        self.latencies.append(time.monotonic() - t)

    def close(self):
        self.sock.close()


def run_client_threads(host, port, nthreads, calls_each, comm=None, family=None):
    """nthreads threads, each with one connection making calls_each calls.

    Returns (clients, comms, errors): the Client objects (closed by the
    caller), each thread's comm as the kernel had it, and any exceptions."""
    clients = [None] * nthreads
    comms = [None] * nthreads
    errors = []
    barrier = threading.Barrier(nthreads)

    def work(i):
        try:
            if comm:
                set_thread_comm(comm)
            comms[i] = thread_comm()
            c = Client(host, port, family=family)
            clients[i] = c
            barrier.wait(10)
            for _ in range(calls_each):
                c.call()
        except Exception as e:  # reported by the test
            errors.append("thread %d: %r" % (i, e))
            try:
                barrier.abort()
            except Exception:
                pass

    threads = [threading.Thread(target=work, args=(i,)) for i in range(nthreads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return [c for c in clients if c], comms, errors


def median(xs):
    s = sorted(xs)
    n = len(s)
    if n == 0:
        return None
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
