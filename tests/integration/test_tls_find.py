"""The TLS discovery (issue 32, doc/tls.md), with real processes: a process
that loads its own copy of libssl.so.3 (LD_LIBRARY_PATH) after the daemon
started is traced within a second (the stub or real uprobes count its
SSL_write calls in tls_writes); a file many processes map gets its uprobes
once; a GnuTLS client is opaque and says why; --without tls attaches nothing;
kill -9 of the daemon leaves no uprobe behind.

Ground truth: the uprobes the kernel holds (bpftool perf: one line per
perf-event attachment, with its file), and the client's own count of writes."""

# Reads the host's uprobes and TLS processes: no daemon of make test's other pass lives while it runs
# (tests/integration/suitelock.py's SideBySide), since every daemon probes every TLS process.
RUNS_ALONE_ON_HOST = True

import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest

from loopback import bind_fresh_port, reusable_socket
import harness
from harness import Daemon, DaemonTestCase

PY = "/usr/bin/python3"
SYSTEM_LIBSSL = "/usr/lib/x86_64-linux-gnu/libssl.so.3"
# The contract's table (user/discovery/tls/attach.c) on Debian's OpenSSL 3 libssl: SSL_free's entry, SSL_do_handshake's
# entry and return, and an entry and a return on each of the inner read and write functions both API forms call
# (ssl_read_internal, ssl_write_internal: tests/unit/test_sslinner.c finds them against objdump), not on the 4 wrappers
PROBES_PER_FILE = 7
WRITES = 2000

# A TLS client that has its libssl mapped, says so, waits for "go", writes WRITES records, says "done".
CLIENT = r"""
import socket, ssl, sys
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
print("ready", flush=True)
if sys.stdin.readline().strip() != "go":
    sys.exit(0)
s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[1]))))
for _ in range(int(sys.argv[2])):
    s.write(b"x")
s.close()
print("done", flush=True)
sys.stdin.readline()
"""


def uprobes_on(path, daemon=None):
    """The kernel's uprobe attachments on path, from bpftool perf: [(pid, prog_id)], of daemon's
    process only if given (other daemons on the machine may run a TLS discovery too). The file name is
    the one given at attach: the daemon opens a file through its process's root, /proc/PID/root/..."""
    r = subprocess.run(["bpftool", "-j", "perf"], capture_output=True, text=True, timeout=30)
    out = []
    for e in json.loads(r.stdout or "[]"):
        if e.get("fd_type") in ("uprobe", "uretprobe") and (e.get("filename") == path or
                                                               e.get("filename", "").endswith("/root" + path)):
            if daemon is None or e["pid"] == daemon.proc.pid:
                out.append((e["pid"], e["prog_id"]))
    return out


def loaded_prog_ids():
    shown = json.loads(subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True,
                                      timeout=30).stdout or "[]")
    return {q["id"] for q in shown}


def cap_eff(pid):
    with open("/proc/%d/status" % pid) as f:
        return int([l for l in f if l.startswith("CapEff:")][0].split()[1], 16)


class TlsSink:
    """A TLS server on loopback that reads whatever comes (its reads are SSL_read: no tls_writes)."""

    def __init__(self, cert, key):
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(cert, key)
        self.lst = bind_fresh_port(reusable_socket, "127.0.0.1")
        self.lst.listen(64)
        self.port = self.lst.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.lst.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c):
        try:
            with self.ctx.wrap_socket(c, server_side=True) as s:
                while s.recv(65536):
                    pass
        except (OSError, ssl.SSLError):
            pass

    def close(self):
        self.lst.close()


class Test01TlsFind(DaemonTestCase):
    """The cases share one daemon (started once: its start scans every process), in the order of
    their numbers: the first starts a --without tls daemon beside it, the last kills it with SIGKILL."""

    @classmethod
    def setUpClass(cls):
        if not os.path.exists(SYSTEM_LIBSSL):
            raise unittest.SkipTest("no %s" % SYSTEM_LIBSSL)
        cls.tmp = tempfile.mkdtemp(prefix="dwtest-tls-")
        os.chmod(cls.tmp, 0o755)
        cls.cert, cls.key = os.path.join(cls.tmp, "cert.pem"), os.path.join(cls.tmp, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                        "-subj", "/CN=localhost", "-keyout", cls.key, "-out", cls.cert],
                       check=True, capture_output=True, timeout=60)
        cls.sink = TlsSink(cls.cert, cls.key)
        cls.shared = Daemon()
        cls.shared.start()

    @classmethod
    def tearDownClass(cls):
        cls.shared.stop()
        cls.shared.cleanup()
        cls.sink.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def private_libssl(self, name):
        """A copy of the system's libssl.so.3 of its own (another inode), made now: after the daemon's start."""
        d = os.path.join(self.tmp, name)
        os.makedirs(d)
        shutil.copy(SYSTEM_LIBSSL, d)
        return d, os.path.join(d, "libssl.so.3")

    def client(self, libdir, writes=WRITES):
        p = subprocess.Popen([PY, "-c", CLIENT, str(self.sink.port), str(writes)], text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             env=dict(os.environ, LD_LIBRARY_PATH=libdir))
        self.addCleanup(self.end, p)
        self.assertEqual(p.stdout.readline().strip(), "ready")
        return p

    @staticmethod
    def end(p):
        if p.poll() is None:
            p.kill()
        p.wait()

    def tls(self, d=None):
        return (d or self.shared).status()["tls"]

    def file_entry(self, path, d=None):
        entries = [f for f in self.tls(d)["files"] if f["path"] == path]
        self.assertLessEqual(len(entries), 1, entries)
        return entries[0] if entries else None

    def test_0_without_tls_attaches_nothing(self):
        libdir, lib = self.private_libssl("without")
        early = self.client(libdir)  # mapped before the start: the start scan would see it
        d = self.start_daemon(extra_args=["--without", "tls"])
        err = d.stderr_text()
        self.assertIn("running without tls: TLS libraries get no uprobes", err)
        self.assertRegex(err, r"not attached:.* tls \(absent \(--without\)")
        late = self.client(libdir)
        s = d.status()
        self.assertEqual((s["tls"]["on"], "--without" in s["tls"]["why"]), (False, True), s["tls"])
        self.assertEqual(uprobes_on(lib, d), [])
        # and it keeps no capability for TLS (CAP_SYS_PTRACE 19, CAP_SYS_ADMIN 21), which the shared one does
        self.assertEqual(cap_eff(d.proc.pid) & (1 << 19 | 1 << 21), 0)
        self.assertEqual(cap_eff(self.shared.proc.pid) & (1 << 19 | 1 << 21), 1 << 19 | 1 << 21)
        self.assertEqual(uprobes_on(SYSTEM_LIBSSL, d), [])
        late.stdin.write("go\n")
        late.stdin.flush()
        self.assertEqual(late.stdout.readline().strip(), "done")
        # past a poll (the counters are read at each): still none, no program was loaded to count them
        polled = d.status()["uptime_s"]
        s = d.wait_for(lambda s: s["uptime_s"] >= polled + 1.5, timeout=5, what="a poll")
        self.assertEqual(s["kernel"]["tls_writes"], 0)
        self.assertIsNotNone(early)
        self.stop_daemon(d)

    def test_1_private_copy_started_after_the_daemon_is_traced_within_1s(self):
        libdir, lib = self.private_libssl("late")
        t0 = time.monotonic()
        p = self.client(libdir)
        with open("/proc/%d/maps" % p.pid) as f:
            self.assertIn(lib, f.read(), "the client maps its own copy")
        entry = None
        while time.monotonic() - t0 < 3 and not (entry and entry["processes"] >= 1):
            entry = self.file_entry(lib)
            time.sleep(0.02)
        took = time.monotonic() - t0
        print("\n  private libssl.so.3: traced %.0f ms after the client's exec" % (took * 1e3))
        self.assertTrue(entry and entry["attached"] and entry["processes"] >= 1, entry)
        self.assertLessEqual(took, 1.0, "traced %.0f ms after exec" % (took * 1e3))
        self.assertEqual(entry["probes"], PROBES_PER_FILE)
        self.assertEqual(len(uprobes_on(lib, self.shared)), PROBES_PER_FILE)
        before = self.shared.status()["kernel"]["tls_writes"]
        p.stdin.write("go\n")
        p.stdin.flush()
        self.assertEqual(p.stdout.readline().strip(), "done")
        # the counters are read at each poll (--interval)
        after = self.shared.wait_for(lambda s: s["kernel"]["tls_writes"] >= before + WRITES, timeout=5,
                                     what="tls_writes")["kernel"]["tls_writes"]
        print("  client: %d SSL writes; tls_writes rose by %d" % (WRITES, after - before))
        # other processes on the machine may write TLS too: at least the client's
        self.assertGreaterEqual(after - before, WRITES)

    def test_2_one_file_shared_by_many_processes_is_attached_once(self):
        libdir, lib = self.private_libssl("shared")
        procs = [self.client(libdir) for _ in range(5)]
        entry = self.shared.wait_for(lambda s: any(f["path"] == lib and f["processes"] == len(procs)
                                                   for f in s["tls"]["files"]),
                                     timeout=5, what="the shared file with its 5 processes")
        entry = self.file_entry(lib)
        self.assertEqual((entry["attached"], entry["probes"], entry["processes"]), (True, PROBES_PER_FILE, 5))
        st = os.stat(lib)
        self.assertEqual(entry["inode"], st.st_ino)
        # the kernel holds one set of uprobes for the file, not one per process
        attached = uprobes_on(lib, self.shared)
        self.assertEqual(len(attached), PROBES_PER_FILE, attached)
        self.assertEqual(len(procs), 5)

    def test_3_gnutls_client_is_opaque_with_its_reason(self):
        if not shutil.which("gnutls-cli"):
            self.skipTest("no gnutls-cli (gnutls-bin)")
        p = subprocess.Popen(["gnutls-cli", "--insecure", "-p", str(self.sink.port), "127.0.0.1"],
                             stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addCleanup(self.end, p)
        s = self.shared.wait_for(lambda s: any(o["pid"] == p.pid for o in s["tls"]["opaque"]),
                                 timeout=5, what="gnutls-cli among the opaque processes")
        o = [o for o in s["tls"]["opaque"] if o["pid"] == p.pid][0]
        self.assertEqual((o["comm"], o["kind"]), ("gnutls-cli", "gnutls"))
        self.assertIn("GnuTLS", o["reason"])
        self.assertGreaterEqual(s["tls"]["opaque_by_kind"]["gnutls"], 1)
        text = subprocess.run([harness.DEPWATCH, "status", "--run-dir", self.shared.run_dir],
                              capture_output=True, text=True, timeout=10).stdout
        self.assertRegex(text, r"(?m)^tls: \d+ files with uprobes, \d+ processes traced, \d+ opaque.*gnutls \d+")


    @harness.backend_independent
    def test_3_lib_no_process_maps_comes_off_then_back(self):
        """A file no process maps any more loses its uprobes at the next full scan (every 30 s), the
        host's own libssl keeps them, and the file's next process gets them again (doc/tls.md).
        The discovery is the daemon's user space, the uprobes the same on both backends, and the
        wait for a full scan up to 30 s: run once."""
        libdir, lib = self.private_libssl("gone")
        p = self.client(libdir)
        self.shared.wait_for(lambda s: any(f["path"] == lib and f["processes"] == 1 for f in s["tls"]["files"]),
                             timeout=5, what="the client's libssl traced")
        self.assertEqual(len(uprobes_on(lib, self.shared)), PROBES_PER_FILE)
        before = self.tls()["files_detached"]
        self.end(p)
        t0 = time.monotonic()
        # the next full scan: within 30 s (DW_TLS_RESCAN_FULL_NS) and the time it takes
        s = self.shared.wait_for(lambda s: s["tls"]["files_detached"] > before, timeout=40,
                                 what="a full scan that detaches the file")
        print("\n  a file no process maps: uprobes off %.1f s after its last process ended" % (time.monotonic() - t0))
        self.assertIsNone(self.file_entry(lib), s["tls"]["files"])
        self.assertEqual(uprobes_on(lib, self.shared), [])
        system = self.file_entry(SYSTEM_LIBSSL)
        self.assertTrue(system and system["attached"], "the host's own libssl keeps its uprobes: %s" % system)
        self.assertEqual(len(uprobes_on(SYSTEM_LIBSSL, self.shared)), PROBES_PER_FILE)
        # mapped again: read and attached again at the process's start
        p = self.client(libdir)
        self.shared.wait_for(lambda s: any(f["path"] == lib and f["processes"] == 1 and f["attached"]
                                           for f in s["tls"]["files"]),
                             timeout=5, what="the file attached again")
        self.assertEqual(len(uprobes_on(lib, self.shared)), PROBES_PER_FILE)
        before = self.shared.status()["kernel"]["tls_writes"]
        p.stdin.write("go\n")
        p.stdin.flush()
        self.assertEqual(p.stdout.readline().strip(), "done")
        self.shared.wait_for(lambda s: s["kernel"]["tls_writes"] >= before + WRITES, timeout=5, what="tls_writes")

    def test_4_kill_9_leaves_no_uprobe_behind(self):
        libdir, lib = self.private_libssl("kill9")
        p = self.client(libdir)
        d = self.shared
        self.shared.wait_for(lambda s: any(f["path"] == lib and f["processes"] == 1 for f in s["tls"]["files"]),
                             timeout=5, what="the client's libssl traced")
        ours = uprobes_on(lib, d)
        self.assertEqual(len(ours), PROBES_PER_FILE, ours)
        prog_ids = {pid_prog[1] for pid_prog in ours}
        d.proc.send_signal(signal.SIGKILL)
        d.proc.wait()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and uprobes_on(lib, d):
            time.sleep(0.05)
        self.assertEqual(uprobes_on(lib, d), [])
        with open("/sys/kernel/tracing/uprobe_events") as f:
            self.assertNotIn(lib, f.read())
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and prog_ids & loaded_prog_ids():
            time.sleep(0.05)
        self.assertEqual(prog_ids & loaded_prog_ids(), set(), "programs left loaded")
        # the traced process goes on as it was
        p.stdin.write("go\n")
        p.stdin.flush()
        self.assertEqual(p.stdout.readline().strip(), "done")



if __name__ == "__main__":
    unittest.main()
