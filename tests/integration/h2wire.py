"""A small HTTP/2 peer of our own, standard library only, for the cases the
real servers and clients cannot be made to produce on demand: a server that
resets a stream, answers 503 in each :status encoding, sends GOAWAY and
closes, hangs, or turns to garbage; and a client that writes the preface and
its frames a byte at a time, or opens more streams than depwatch tracks.

Frames are built by hand (RFC 9113 4.1). Header blocks use only HPACK's
static table and literals (RFC 7541), so neither end needs a header table:
the client's requests are ':method GET, :scheme http, :path /', the
server's answers ':status 200' (indexed) or a literal ':status' value.
"""

import socket
import struct
import threading
import time

from harness import bind_fresh_port

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE = range(9)
END_STREAM, ACK, END_HEADERS = 0x1, 0x1, 0x4

# The client's request: :method GET (2), :scheme http (6), :path / (4), all indexed.
REQUEST_BLOCK = b"\x82\x86\x84"
STATUS_200 = b"\x88"                   # indexed, static table 8
STATUS_500 = b"\x8e"                   # indexed, static table 14
STATUS_503_LITERAL = b"\x08\x03503"    # literal without indexing, name 8
STATUS_503_HUFFMAN = b"\x48\x83\x6c\x0c\xff"   # literal with indexing, Huffman "503"


def frame(ftype, flags, stream, payload=b""):
    n = len(payload)
    return struct.pack(">BHBBI", n >> 16, n & 0xFFFF, ftype, flags, stream & 0x7FFFFFFF) + payload


def read_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError("peer closed after %d of %d bytes" % (len(buf), n))
        buf += chunk
    return buf


def read_frame(sock):
    """(type, flags, stream, payload) of the next frame."""
    h = read_exact(sock, 9)
    n = (h[0] << 16) | (h[1] << 8) | h[2]
    stream = struct.unpack(">I", h[5:9])[0] & 0x7FFFFFFF
    return h[3], h[4], stream, read_exact(sock, n) if n else b""


class H2Server:
    """A cleartext HTTP/2 server: answers each new stream as answer(stream_id) says, one of
    ('ok', delay_s), ('status', block, delay_s), ('rst', delay_s), ('hang',),
    ('goaway', last_id): GOAWAY naming last_id, then close; ('garbage',): a frame no peer sends;
    ('big', n): 200 and n bytes of DATA in one sendmsg() of two iovecs.
    Counts what it received (streams) and answered."""

    def __init__(self, answer):
        self.answer = answer
        self.lock = threading.Lock()
        self.streams = 0
        self.answered = 0
        self.conns = []
        self.stopping = False
        def make_socket():
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            return s
        # a port new to the run: a shared daemon may hold an earlier test's row (harness.py)
        self.lsock = bind_fresh_port(make_socket, "127.0.0.1")
        self.lsock.listen(64)
        self.port = self.lsock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stopping:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self.lock:
                self.conns.append(c)
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _send(self, c, data, wlock):
        with wlock:
            c.sendall(data)

    def _serve(self, c):
        wlock = threading.Lock()
        try:
            if read_exact(c, len(PREFACE)) != PREFACE:
                return
            self._send(c, frame(SETTINGS, 0, 0), wlock)
            while True:
                ftype, flags, stream, _ = read_frame(c)
                if ftype == SETTINGS and not flags & ACK:
                    self._send(c, frame(SETTINGS, ACK, 0), wlock)
                elif ftype == PING and not flags & ACK:
                    self._send(c, frame(PING, ACK, 0, b"\0" * 8), wlock)
                elif ftype == HEADERS and stream & 1:
                    with self.lock:
                        self.streams += 1
                    how = self.answer(stream)
                    threading.Thread(target=self._answer, args=(c, stream, how, wlock), daemon=True).start()
        except (EOFError, OSError):
            pass

    def _answer(self, c, stream, how, wlock):
        try:
            kind = how[0]
            if kind in ("ok", "status", "rst"):
                time.sleep(how[-1])
            if kind == "ok":
                self._send(c, frame(HEADERS, END_HEADERS, stream, STATUS_200) +
                           frame(DATA, END_STREAM, stream, b"ok\n"), wlock)
            elif kind == "status":
                self._send(c, frame(HEADERS, END_HEADERS | END_STREAM, stream, how[1]), wlock)
            elif kind == "rst":
                self._send(c, frame(RST_STREAM, 0, stream, struct.pack(">I", 2)), wlock)
            elif kind == "goaway":
                self._send(c, frame(GOAWAY, 0, 0, struct.pack(">II", how[1], 0)), wlock)
                time.sleep(0.05)
                # shutdown, not close: the serving thread's recv() holds the socket open
                c.shutdown(socket.SHUT_RDWR)
                return
            elif kind == "big":
                # HEADERS and how[1] bytes of DATA in one sendmsg() of two iovecs, as a server's
                # writev of a frame and a body: the kernel copies a send this large in several
                # passes (page fragments, skbs), each an event of its own at tcp_sendmsg_locked
                head = frame(HEADERS, END_HEADERS, stream, STATUS_200)
                body, left = b"", how[1]
                while left:
                    n = min(left, 16000)
                    left -= n
                    body += frame(DATA, 0 if left else END_STREAM, stream, b"x" * n)
                with wlock:
                    sent = c.sendmsg([head, body])
                    c.sendall((head + body)[sent:])
            elif kind == "garbage":
                # a PING of 7 bytes: no HTTP/2 peer sends one (its length is fixed at 8)
                self._send(c, frame(PING, 0, 0, b"\0" * 7), wlock)
                return
            else:
                return      # hang
            with self.lock:
                self.answered += 1
        except OSError:
            pass

    def close(self):
        self.stopping = True
        self.lsock.close()
        with self.lock:
            conns, self.conns = self.conns, []
        for c in conns:
            try:
                c.close()
            except OSError:
                pass


class H2Client:
    """One cleartext HTTP/2 connection: opens streams, reads what comes back. piece: the bytes per
    send() of everything it writes (1: byte by byte), with TCP_NODELAY so each goes out alone."""

    def __init__(self, port, piece=None):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.piece = piece
        self.next_id = 1
        self.outcomes = {}      # stream id -> 'ok', 'status:<block hex>', 'rst'
        self.goaway = None
        self.closed = False
        self.data = 0           # DATA payload bytes read
        self.write(PREFACE + frame(SETTINGS, 0, 0))

    def write(self, data):
        if not self.piece:
            self.sock.sendall(data)
            return
        for i in range(0, len(data), self.piece):
            self.sock.sendall(data[i:i + self.piece])

    def open(self, n=1):
        """Opens n streams (one request each); their ids."""
        ids = []
        out = b""
        for _ in range(n):
            ids.append(self.next_id)
            out += frame(HEADERS, END_HEADERS | END_STREAM, self.next_id, REQUEST_BLOCK)
            self.next_id += 2
        self.write(out)
        return ids

    def reset(self, stream):
        self.write(frame(RST_STREAM, 0, stream, struct.pack(">I", 8)))   # CANCEL

    def read_until(self, done, timeout=10.0):
        """Reads frames until done(self) or the peer closes; acknowledges SETTINGS and PINGs."""
        self.sock.settimeout(timeout)
        end = time.time() + timeout
        while not done(self) and time.time() < end:
            try:
                ftype, flags, stream, payload = read_frame(self.sock)
            except (EOFError, OSError):
                self.closed = True
                return
            if ftype == SETTINGS and not flags & ACK:
                self.write(frame(SETTINGS, ACK, 0))
            elif ftype == HEADERS and stream not in self.outcomes:
                self.outcomes[stream] = "ok" if payload[:1] == STATUS_200 else "status:" + payload.hex()
            elif ftype == DATA:
                self.data += len(payload)
            elif ftype == RST_STREAM:
                self.outcomes[stream] = "rst"
            elif ftype == GOAWAY:
                self.goaway = struct.unpack(">I", payload[:4])[0] & 0x7FFFFFFF

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass
