"""Real resolvers for the DNS tests (issue 35): a network namespace of the test's own, Debian's
unbound in it on addresses of 127.53.N.0/24 (lo holds all of 127/8), its log of queries the ground
truth, a slow upstream (Python, on a port that is no DNS port) that unbound forwards one zone to,
and clients run inside the namespace: glibc's getaddrinfo (Python's socket.getaddrinfo) and dig."""

import json
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time

# 127.53.N.x: N per run, so two runs on one host never share a resolver address
_N = random.randint(1, 254)
NET = "127.53.%d" % _N
# the slow upstream's address, added to lo: unbound queries no 127/8 address (do-not-query-localhost),
# which is what makes its forwarder for fail.example. (on 127/8) a SERVFAIL at once
UPSTREAM_ADDR = "10.253.%d.9" % _N

UNBOUND_CONF = """server:
  interface: {addr}
  port: {port}
  do-daemonize: no
  use-syslog: no
  logfile: "{log}"
  log-queries: yes
  verbosity: 0
  chroot: ""
  username: ""
  directory: "{dir}"
  pidfile: ""
  module-config: "iterator"
  qname-minimisation: no
  access-control: 127.0.0.0/8 allow
  num-threads: 1
  local-zone: "test." static
  local-data: "a.test. 60 IN A 10.1.2.3"
  local-data: "a.test. 60 IN AAAA fd00::3"
  local-zone: "refused.test." always_refuse
forward-zone:
  name: "fail.example."
  forward-addr: {net}.250@5399
forward-zone:
  name: "slow.example."
  forward-addr: {upstream}
remote-control:
  control-enable: no
"""


class Netns:
    """ip netns add NAME, lo up, /etc/netns/NAME/resolv.conf (ip netns exec binds it over /etc/resolv.conf)."""

    count = 0

    def __init__(self, nameservers, options="timeout:2 attempts:1"):
        Netns.count += 1
        self.name = "dwdns%d_%d" % (os.getpid(), Netns.count)
        subprocess.run(["ip", "netns", "add", self.name], check=True)
        subprocess.run(["ip", "-n", self.name, "link", "set", "lo", "up"], check=True)
        subprocess.run(["ip", "-n", self.name, "addr", "add", UPSTREAM_ADDR + "/32", "dev", "lo"], check=True)
        self.etc = "/etc/netns/%s" % self.name
        os.makedirs(self.etc, exist_ok=True)
        self.set_resolv(nameservers, options)
        self.ino = None

    def set_resolv(self, nameservers, options):
        with open(os.path.join(self.etc, "resolv.conf"), "w") as f:
            for ns in nameservers:
                f.write("nameserver %s\n" % ns)
            f.write("options %s\n" % options)

    def inode(self):
        """The namespace's inode number, as depwatch's rows give it (netns)."""
        return os.stat("/run/netns/%s" % self.name).st_ino

    def run(self, argv, **kw):
        return subprocess.run(["ip", "netns", "exec", self.name] + argv, **kw)

    def popen(self, argv, **kw):
        return subprocess.Popen(["ip", "netns", "exec", self.name] + argv, **kw)

    def close(self):
        subprocess.run(["ip", "netns", "del", self.name])
        shutil.rmtree(self.etc, ignore_errors=True)


class Unbound:
    """unbound -d in the namespace on addr:port, logging every query it receives."""

    def __init__(self, ns, addr, upstream, v6=None, port=53):
        self.ns, self.addr, self.port = ns, addr, port
        self.dir = tempfile.mkdtemp(prefix="dwdns-ub-")
        self.log = os.path.join(self.dir, "unbound.log")
        conf = os.path.join(self.dir, "unbound.conf")
        text = UNBOUND_CONF.format(addr=addr, port=port, log=self.log, dir=self.dir, net=NET, upstream=upstream)
        if v6:
            text = text.replace("  port: %d\n" % port, "  port: %d\n  interface: %s\n" % (port, v6))
        with open(conf, "w") as f:
            f.write(text)
        # ip netns exec execs unbound: the pid is unbound's (SIGSTOP makes it silent)
        self.proc = ns.popen(["unbound", "-d", "-c", conf], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            r = ns.run(["dig", "+short", "+tries=1", "+time=1", "-p", str(port), "@" + addr, "ready.a.test"],
                       capture_output=True, text=True)
            if r.returncode == 0 and self.queries() > 0:
                return
            if self.proc.poll() is not None:
                raise RuntimeError("unbound exited: %s" % self.proc.stderr.read().decode(errors="replace"))
            time.sleep(0.1)
        raise RuntimeError("unbound on %s does not answer" % addr)

    def queries(self):
        """Queries unbound logged ("info: CLIENT NAME TYPE IN"): its own count of what it received."""
        try:
            with open(self.log) as f:
                return sum(1 for line in f if (" info: 127." in line or " info: ::1 " in line)
                           and line.rstrip().endswith(" IN"))
        except FileNotFoundError:
            return 0

    def silence(self):
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self):
        os.kill(self.proc.pid, signal.SIGCONT)

    def close(self):
        try:
            os.kill(self.proc.pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
        self.proc.kill()
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class SlowUpstream:
    """A resolver unbound forwards slow.example. to: answers every A query after delay seconds,
    on a port that is no DNS port (its traffic is not depwatch's to count). Runs in the namespace
    through a child process (a socket opened in it stays in it)."""

    SCRIPT = r'''
import socket, struct, sys, threading, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2])))
delay = float(sys.argv[3])
print("ready", flush=True)
def answer(q, peer):
    time.sleep(delay)
    end = 12
    while q[end]:
        end += 1 + q[end]
    end += 5
    hdr = q[:2] + bytes([0x81, 0x80]) + b"\x00\x01\x00\x01\x00\x00\x00\x00"
    rr = b"\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x00\x00\x04\x0a\x00\x00\x01"
    s.sendto(hdr + q[12:end] + rr, peer)
while True:
    q, peer = s.recvfrom(4096)
    threading.Thread(target=answer, args=(q, peer), daemon=True).start()
'''

    def __init__(self, ns, addr, port, delay):
        self.addr, self.port = addr, port
        self.proc = ns.popen(["/usr/bin/python3", "-c", self.SCRIPT, addr, str(port), str(delay)],
                             stdout=subprocess.PIPE, text=True)
        if self.proc.stdout.readline().strip() != "ready":
            raise RuntimeError("the slow upstream did not start")

    def close(self):
        self.proc.kill()
        self.proc.wait()


# Lookups through glibc's getaddrinfo in the namespace: NTHREADS threads, each COUNT lookups
# (AF_UNSPEC: A and AAAA in parallel on one socket) of NAME (%d: the lookup's number), with
# PAUSE s between; prints one JSON line per lookup when it ends: [start, seconds, ok].
LOOKUPS = r'''
import json, socket, sys, threading, time
name, nthreads, count, pause = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
lock = threading.Lock()
def work(t):
    for i in range(count):
        t0 = time.monotonic()
        try:
            socket.getaddrinfo(name % (t * count + i) if "%d" in name else name, 80, 0, socket.SOCK_STREAM)
            ok = True
        except socket.gaierror:
            ok = False
        with lock:
            print(json.dumps([t0, time.monotonic() - t0, ok]), flush=True)
        if pause:
            time.sleep(pause)
ts = [threading.Thread(target=work, args=(t,)) for t in range(nthreads)]
for t in ts: t.start()
for t in ts: t.join()
print("done", flush=True)
'''


class Lookups:
    """getaddrinfo loops running in the namespace; results() once they end (or stop())."""

    def __init__(self, ns, name, nthreads=1, count=1, pause=0.0):
        self.proc = ns.popen(["/usr/bin/python3", "-c", LOOKUPS, name, str(nthreads), str(count), str(pause)],
                             stdout=subprocess.PIPE, text=True)
        self.rows = []
        self._t = threading.Thread(target=self._read, daemon=True)
        self._t.start()

    def _read(self):
        for line in self.proc.stdout:
            if line.startswith("["):
                self.rows.append(json.loads(line))

    def wait(self, timeout=60):
        self.proc.wait(timeout)
        self._t.join(5)
        return self.rows

    def stop(self):
        self.proc.kill()
        self.proc.wait()
        self._t.join(5)
        return self.rows


# Datagrams sent as the test says, from inside the namespace: a JSON list of [addr, port, hex, connect,
# wait] on stdin; each one on a socket of its own (connect: connect()ed first), kept open for wait s
# reading what comes (an answer must find its socket); prints, per datagram, "ok" or the errno name
# of the first call that failed.
SENDER = r'''
import errno, json, socket, sys
import time
for addr, port, hexmsg, conn, wait in json.load(sys.stdin):
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_DGRAM)
    try:
        if conn:
            s.connect((addr, port))
            s.send(bytes.fromhex(hexmsg))
        else:
            s.sendto(bytes.fromhex(hexmsg), (addr, port))
        end = time.monotonic() + wait
        while time.monotonic() < end:
            s.settimeout(max(0.001, end - time.monotonic()))
            try:
                s.recv(4096)
            except socket.timeout:
                break
        print("ok", flush=True)
    except OSError as e:
        print(errno.errorcode.get(e.errno, str(e.errno)), flush=True)
    s.close()
'''


# Queries as fast as one unconnected socket sends them: a JSON list of [addr, port, hex] on stdin.
FLOODER = r'''
import json, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for addr, port, hexmsg in json.load(sys.stdin):
    s.sendto(bytes.fromhex(hexmsg), (addr, port))
print("sent", flush=True)
'''


def flood(ns, items):
    r = ns.run(["/usr/bin/python3", "-c", FLOODER], input=json.dumps(items), capture_output=True, text=True)
    return r.stdout.split()


def send_datagrams(ns, items):
    r = ns.run(["/usr/bin/python3", "-c", SENDER], input=json.dumps(items), capture_output=True, text=True)
    return r.stdout.split()


def query(qid, name, qtype=1):
    """A DNS query (RD set) for name as bytes."""
    q = struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    for label in name.rstrip(".").split("."):
        q += bytes([len(label)]) + label.encode()
    return q + b"\0" + struct.pack("!HH", qtype, 1)


def dig_times(ns, server, names, port=53):
    """dig's own "Query time" (ms) of one query for each name, run one after the other."""
    out = []
    for n in names:
        r = ns.run(["dig", "+tries=1", "+time=3", "-p", str(port), "@" + server, n], capture_output=True, text=True)
        for line in r.stdout.splitlines():
            if line.startswith(";; Query time:"):
                out.append(float(line.split()[3]))
    return out
