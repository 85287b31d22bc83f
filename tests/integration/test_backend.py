"""The tracing backends: which one runs and why, every system call a socket can be
driven by (the syscalls backend has a program per call family), and the one
documented difference, a caller that reads its response late.

The suite runs once per backend (DW_BACKEND, see tests/run-all.sh); these
tests hold for both, with the same counts.
"""

import os
import socket
import struct
import subprocess
import tempfile
import time
import unittest

from harness import (BACKEND, RESP, REQ, Client, Daemon, DaemonTestCase, LoopbackServer, kernel_has_sock_tracepoints,
                     run_client_threads)


def expected_backend():
    if BACKEND:
        return BACKEND, "forced by --backend"
    if kernel_has_sock_tracepoints():
        return "sock", "kernel has sock_send_length"
    return "syscalls", "kernel lacks sock_send_length"


def start_line(d):
    return next(l for l in d.stderr_lines if l.startswith("depwatch: started ("))


class Test01WhichBackend(DaemonTestCase):
    def test_start_line_and_status_name_the_backend(self):
        name, why = expected_backend()
        d = self.start_daemon()
        line = start_line(d)
        self.assertIn("started (backend %s (%s), pid %d," % (name, why, d.proc.pid), line)
        kernel = d.status()["kernel"]
        self.assertEqual(kernel["backend"], name)
        attached = kernel["programs"].split("; not attached:")[0]
        self.assertIn("inet_sock_set_state", attached)
        if name == "syscalls":
            for call in ("sendto", "sendmsg", "write", "recvfrom", "recvmsg", "read"):
                self.assertRegex(attached, r"syscalls/\{[a-z0-9,]*\b%s\b" % call)
            self.assertNotIn("sock_send_length", attached)
            self.assertNotIn("sk_data_ready", kernel["programs"])
        else:
            # calls start at tcp_sendmsg_locked where the kernel has it; sock_send_length stands in otherwise
            with open("/sys/kernel/btf/vmlinux", "rb") as f:
                has_sendmsg = b"btf_trace_tcp_sendmsg_locked" in f.read()
            send_hook = "tcp_sendmsg_locked" if has_sendmsg else "sock_send_length"
            self.assertIn(send_hook, attached)
            if has_sendmsg:
                self.assertNotIn("sock_send_length", kernel["programs"])
            self.assertIn("sock_recv_length", attached)
            self.assertNotIn("syscalls/", kernel["programs"])
        self.assertEqual(kernel["thread_map_full"], 0)

    def test_unknown_backend_is_a_usage_error(self):
        d = Daemon(extra_args=["--backend", "kprobes"])
        self.addCleanup(d.cleanup)
        r = subprocess.run(d.argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=20)
        err = r.stderr.decode(errors="replace")
        self.assertEqual(r.returncode, 2, "exit status; stderr:\n" + err)
        self.assertIn("--backend: 'kprobes'", err)
        self.assertNotIn("started", err)


class Test02EverySyscall(DaemonTestCase):
    """One connection per way of driving a socket, CALLS calls each: exact counts on both backends."""

    SHARED_DAEMON = True

    CALLS = 5
    DELAY = 0.002

    def _drive(self, send, recv):
        d = self.start_daemon()
        srv = LoopbackServer("127.0.0.1", mode="delay", delay=self.DELAY)
        self.addCleanup(srv.close)
        c = Client("127.0.0.1", srv.port)
        self.addCleanup(c.close)
        c.sock.settimeout(None)       # a blocking descriptor for os.read and friends, with a receive timeout
        c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", 10, 0))
        fd = c.sock.fileno()
        for _ in range(self.CALLS):
            send(fd)
            got = b""
            while not got.endswith(b"\n"):
                chunk = recv(fd)
                self.assertTrue(chunk, "end of file before the response")
                got += chunk
            self.assertEqual(got, RESP)
        self.assertEqual(srv.answered, self.CALLS)
        row, _ = d.wait_dest(srv.dest, lambda r: r["calls"] >= self.CALLS and r["inflight"] == 0)
        self.assertRow(row, {"calls": self.CALLS, "failed": 0, "inflight": 0, "connects": 1,
                             "window_calls": self.CALLS}, srv.dest)
        return row

    def test_write_read(self):
        self._drive(lambda fd: os.write(fd, REQ), lambda fd: os.read(fd, 100))

    def test_writev_readv(self):
        def readv(fd):
            buf = bytearray(100)
            n = os.readv(fd, [buf])
            return bytes(buf[:n])
        self._drive(lambda fd: os.writev(fd, [REQ[:2], REQ[2:]]), readv)

    def test_sendmsg_recvmsg(self):
        def sendmsg(fd):
            with socket.socket(fileno=os.dup(fd)) as s:
                s.sendmsg([REQ])

        def recvmsg(fd):
            with socket.socket(fileno=os.dup(fd)) as s:
                return s.recvmsg(100)[0]
        self._drive(sendmsg, recvmsg)

    def test_sendto_recvfrom(self):
        def sendto(fd):
            with socket.socket(fileno=os.dup(fd)) as s:
                s.send(REQ)

        def recvfrom(fd):
            with socket.socket(fileno=os.dup(fd)) as s:
                return s.recv(100)
        self._drive(sendto, recvfrom)

    def test_sendfile_and_splice(self):
        f = tempfile.TemporaryFile()
        self.addCleanup(f.close)
        f.write(REQ)
        f.flush()
        r, w = os.pipe()
        self.addCleanup(os.close, r)
        self.addCleanup(os.close, w)

        def splice_in(fd):
            n = os.splice(fd, w, 100)
            return os.read(r, n) if n else b""
        self._drive(lambda fd: os.sendfile(fd, f.fileno(), 0, len(REQ)), splice_in)

    def test_splice_out(self):
        r, w = os.pipe()
        self.addCleanup(os.close, r)
        self.addCleanup(os.close, w)

        def splice_out(fd):
            os.write(w, REQ)
            os.splice(r, fd, len(REQ))
        self._drive(splice_out, lambda fd: os.read(fd, 100))

    def test_fast_open(self):
        # sendto(MSG_FASTOPEN) connects and sends in one system call.
        with open("/proc/sys/net/ipv4/tcp_fastopen") as f:
            if not int(f.read()) & 1:
                raise unittest.SkipTest("TCP Fast Open is off for clients (net.ipv4.tcp_fastopen)")
        d = self.start_daemon()
        srv = LoopbackServer("127.0.0.1", mode="delay", delay=self.DELAY)
        self.addCleanup(srv.close)
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.addCleanup(s.close)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", 10, 0))
        s.sendto(REQ, socket.MSG_FASTOPEN, ("127.0.0.1", srv.port))
        got = b""
        while not got.endswith(b"\n"):
            got += s.recv(100)
        row, _ = d.wait_dest(srv.dest, lambda r: r["calls"] >= 1 and r["inflight"] == 0)
        self.assertRow(row, {"calls": 1, "failed": 0, "inflight": 0, "connects": 1}, srv.dest)

    def test_files_pipes_and_untracked_sockets_count_nothing(self):
        d = self.start_daemon()
        with tempfile.TemporaryFile() as f:
            for _ in range(200):
                os.write(f.fileno(), b"x" * 64)
            os.lseek(f.fileno(), 0, os.SEEK_SET)
            while os.read(f.fileno(), 4096):
                pass
        a, b = socket.socketpair()
        with a, b:
            for _ in range(50):
                a.send(REQ)
                b.recv(100)
        srv = LoopbackServer("127.0.0.1", mode="delay", delay=self.DELAY)
        self.addCleanup(srv.close)
        clients, _, errors = run_client_threads("127.0.0.1", srv.port, 2, 10)
        for c in clients:
            self.addCleanup(c.close)
        self.assertEqual(errors, [])
        row, st = d.wait_dest(srv.dest, lambda r: r["calls"] >= 20 and r["inflight"] == 0)
        self.assertRow(row, {"calls": 20, "failed": 0, "inflight": 0, "connects": 2}, srv.dest)
        self.assertEqual(st["kernel"]["thread_map_full"], 0)


class Test03LateReader(DaemonTestCase):
    """The response arrives after DELAY, the caller reads it LATE after sending. The sock
    backend ends the call when the bytes reach the socket (sk_data_ready); the syscalls
    backend, which has no such hook, at the receive: the documented difference."""

    SHARED_DAEMON = True

    DELAY_MS = 20
    LATE_MS = 300
    CALLS = 5

    def test_late_reader(self):
        d = self.start_daemon()
        backend = d.status()["kernel"]["backend"]
        data_ready = "sk_data_ready" in d.status()["kernel"]["programs"].split("; not attached:")[0]
        srv = LoopbackServer("127.0.0.1", mode="delay", delay=self.DELAY_MS / 1000)
        self.addCleanup(srv.close)
        c = Client("127.0.0.1", srv.port)
        self.addCleanup(c.close)
        for _ in range(self.CALLS):
            t = c.send_request()
            time.sleep(max(0, t + self.LATE_MS / 1000 - time.monotonic()))
            c.read_response()
        row, _ = d.wait_dest(srv.dest, lambda r: r["calls"] >= self.CALLS and r["inflight"] == 0)
        self.assertRow(row, {"calls": self.CALLS, "failed": 0, "inflight": 0}, srv.dest)
        p50 = row["p50_ms"]
        print("\n    backend %s: response after %d ms, read after %d ms: p50_ms %s"
              % (backend, self.DELAY_MS, self.LATE_MS, p50), flush=True)
        if backend == "sock" and data_ready:
            self.assertLess(abs(p50 - self.DELAY_MS) / self.DELAY_MS, 0.15,
                            "sock backend: the call ends when the response reaches the socket")
        else:
            self.assertLess(abs(p50 - self.LATE_MS) / self.LATE_MS, 0.07,
                            "%s backend without sk_data_ready: the call ends at the receive" % backend)
