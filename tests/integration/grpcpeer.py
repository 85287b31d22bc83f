"""gRPC server and client for the HTTP/2 stream tests, on Debian's python3-grpcio
(generic handlers: no generated code). Run by the tests as a separate process
under Debian's own interpreter (/usr/bin/python3), which has the module.

  grpcpeer.py serve PORT DELAY_MS [HANG_FILE [SLOW_EVERY SLOW_MS [CERT KEY]]]
      answers /t.T/Echo after DELAY_MS; while HANG_FILE exists, holds every
      call it receives (answers none of them); every SLOW_EVERY-th call takes
      SLOW_MS; with CERT and KEY, over TLS. Prints "ready" once serving.
      GRPCPEER_ABORT=CODE (a grpc.StatusCode name) in the environment: every
      GRPCPEER_ABORT_EVERY-th call (default 1: all) ends with that status.
  grpcpeer.py cancel PORT AFTER_S
      one call, no deadline, cancelled by the client after AFTER_S (a
      RST_STREAM from the client); prints its JSON line as client does.
  grpcpeer.py client PORT THREADS SECONDS TIMEOUT_S [CERT]
      THREADS threads on one channel (one HTTP/2 connection), each calling
      in a loop for SECONDS, each call with deadline TIMEOUT_S. Prints one
      JSON line: {"ok": n, "failed": n, "codes": {...}, "p50_ms": x, "calls_ms": [...]}.
      With CERT, over TLS, trusting CERT for "localhost" (gRPC offers ALPN h2 alone).
"""

import json
import os
import sys
import threading
import time
from concurrent import futures

import grpc


def serve(port, delay_ms, hang_file=None, slow_every=0, slow_ms=0, cert=None, key=None):
    count = [0]
    lock = threading.Lock()
    abort = os.environ.get("GRPCPEER_ABORT")
    abort_every = int(os.environ.get("GRPCPEER_ABORT_EVERY", "1"))

    def handler(req, ctx):
        with lock:
            count[0] += 1
            n = count[0]
        while hang_file and os.path.exists(hang_file):
            time.sleep(0.005)
        time.sleep((slow_ms if slow_every and n % slow_every == 0 else delay_ms) / 1000.0)
        if abort and n % abort_every == 0:
            ctx.abort(getattr(grpc.StatusCode, abort), "grpcpeer says " + abort)
        return req

    methods = {"Echo": grpc.unary_unary_rpc_method_handler(handler)}
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=256))
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("t.T", methods),))
    if cert:
        with open(cert, "rb") as c, open(key, "rb") as k:
            creds = grpc.ssl_server_credentials([(k.read(), c.read())])
        server.add_secure_port("127.0.0.1:%d" % port, creds)
    else:
        server.add_insecure_port("127.0.0.1:%d" % port)
    server.start()
    print("ready", flush=True)
    server.wait_for_termination()


def client(port, threads, seconds, timeout, cert=None):
    if cert:
        with open(cert, "rb") as c:
            creds = grpc.ssl_channel_credentials(root_certificates=c.read())
        channel = grpc.secure_channel("127.0.0.1:%d" % port, creds,
                                      options=(("grpc.ssl_target_name_override", "localhost"),))
    else:
        channel = grpc.insecure_channel("127.0.0.1:%d" % port)
    grpc.channel_ready_future(channel).result(timeout=10)
    call = channel.unary_unary("/t.T/Echo")
    lock = threading.Lock()
    ok, codes, lat = [0], {}, []
    end = time.time() + seconds

    def loop():
        while time.time() < end:
            t0 = time.monotonic()
            try:
                call(b"x" * 16, timeout=timeout)
            except grpc.RpcError as e:
                with lock:
                    codes[e.code().name] = codes.get(e.code().name, 0) + 1
                continue
            dt = (time.monotonic() - t0) * 1000
            with lock:
                ok[0] += 1
                lat.append(dt)

    ts = [threading.Thread(target=loop) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    lat.sort()
    channel.close()
    print(json.dumps({"ok": ok[0], "failed": sum(codes.values()), "codes": codes,
                      "p50_ms": lat[len(lat) // 2] if lat else None, "calls_ms": lat}), flush=True)


def cancel(port, after):
    channel = grpc.insecure_channel("127.0.0.1:%d" % port)
    grpc.channel_ready_future(channel).result(timeout=10)
    fut = channel.unary_unary("/t.T/Echo").future(b"x" * 16)
    time.sleep(after)
    cancelled = fut.cancel()
    channel.close()
    print(json.dumps({"ok": 0, "failed": 1 if cancelled else 0,
                      "codes": {"CANCELLED": 1} if cancelled else {}}), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        a = sys.argv[2:]
        serve(int(a[0]), float(a[1]), a[2] if len(a) > 2 and a[2] != "-" else None,
              int(a[3]) if len(a) > 3 else 0, float(a[4]) if len(a) > 4 else 0,
              a[5] if len(a) > 6 else None, a[6] if len(a) > 6 else None)
    elif sys.argv[1] == "cancel":
        cancel(int(sys.argv[2]), float(sys.argv[3]))
    else:
        client(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]),
               sys.argv[6] if len(sys.argv) > 6 else None)
