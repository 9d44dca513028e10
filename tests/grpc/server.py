"""The gRPC test service for brunt's tests and shipped gRPC profiles.

Serves profiles/load_test.proto's `brunt.test.Load` on 127.0.0.1 with grpcio's
generic handlers (messages from the .proto at start, through grpcio-tools).
Prints `grpc=127.0.0.1:PORT` once listening; on SIGTERM (or SIGINT) writes
what it served, per method, as JSON to `--stats FILE` and exits.

    python3 tests/grpc/server.py [--port 50051] [--capacity 8 --work 0.02]
        [--stall-every 5 --stall-for 1] [--tls-dir DIR] [--stats served.json]
"""

import argparse
import json
import os
import signal
import sys
import threading
import time
from concurrent import futures

import grpc

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "profiles"))
protos = grpc.protos("load_test.proto")

args = argparse.ArgumentParser()
args.add_argument("--port", type=int, default=0)
args.add_argument("--capacity", type=int, default=8)
args.add_argument("--work", type=float, default=0.02)
args.add_argument("--stall-every", type=float, default=0.0)
args.add_argument("--stall-for", type=float, default=0.0)
args.add_argument("--threads", type=int, default=64)
args.add_argument("--stats", default="")
args.add_argument("--tls-dir", default="", help="serve TLS with DIR/cert.pem and DIR/key.pem")
opts = args.parse_args()

lock = threading.Lock()
served = {}  # method -> calls answered OK (streams: also messages)
names = set()  # distinct `name`s Unary saw (templated messages vary)
limit = threading.BoundedSemaphore(opts.capacity)
started = time.monotonic()


def count(key, n=1):
    with lock:
        served[key] = served.get(key, 0) + n


def unary(req, ctx):
    count("Unary")
    with lock:
        names.add(req.name)
    return protos.Pong(text="hello " + req.name, seq=req.count)


def stream(req, ctx):
    n = req.count or 3
    for i in range(n):
        if i and req.delay_ms:
            time.sleep(req.delay_ms / 1000.0)
        count("Stream.messages")
        yield protos.Pong(text=req.name, seq=i)
    count("Stream")


def slow(req, ctx):
    time.sleep(req.delay_ms / 1000.0)
    if not ctx.is_active():
        count("Slow.expired")
        return protos.Pong()
    count("Slow")
    return protos.Pong(text="slow")


def limited(req, ctx):
    if not limit.acquire(blocking=False):
        count("Limited.refused")
        ctx.set_trailing_metadata((("grpc-retry-pushback-ms", "100"),))
        ctx.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "over capacity")
    try:
        time.sleep(opts.work)
    finally:
        limit.release()
    count("Limited")
    return protos.Pong(text="done")


def stall(req, ctx):
    if opts.stall_every > 0:
        t = time.monotonic() - started
        into = t % opts.stall_every
        if into < opts.stall_for:
            count("Stall.stalled")
            time.sleep(opts.stall_for - into)
    count("Stall")
    return protos.Pong(text="ok")


def handler(fn, streaming=False):
    make = grpc.unary_stream_rpc_method_handler if streaming else grpc.unary_unary_rpc_method_handler
    return make(
        fn,
        request_deserializer=protos.Ping.FromString,
        response_serializer=protos.Pong.SerializeToString,
    )


service = grpc.method_handlers_generic_handler(
    "brunt.test.Load",
    {
        "Unary": handler(unary),
        "Stream": handler(stream, streaming=True),
        "Slow": handler(slow),
        "Limited": handler(limited),
        "Stall": handler(stall),
    },
)

server = grpc.server(
    futures.ThreadPoolExecutor(max_workers=opts.threads),
    options=[("grpc.so_reuseport", 0)],
)
server.add_generic_rpc_handlers((service,))
if opts.tls_dir:
    read = lambda name: open(os.path.join(opts.tls_dir, name), "rb").read()
    creds = grpc.ssl_server_credentials([(read("key.pem"), read("cert.pem"))])
    port = server.add_secure_port("127.0.0.1:%d" % opts.port, creds)
else:
    port = server.add_insecure_port("127.0.0.1:%d" % opts.port)
server.start()
print("grpc=127.0.0.1:%d" % port, flush=True)

done = threading.Event()


def stop(*_):
    done.set()


signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
done.wait()
server.stop(0.5).wait()
if opts.stats:
    with lock:
        served["Unary.names"] = len(names)
        with open(opts.stats, "w") as f:
            json.dump(served, f)
