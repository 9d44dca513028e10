"""A WebSocket test server for brunt's WebSocket steps (PyPI `websockets` 17).

Listens on 127.0.0.1 (port 0 unless given) and prints `service=HOST:PORT`.
Paths:
  /echo?delay_ms=N   echoes every message after N ms (JSON messages keep
                     their `id`, so replies correlate by field or by order)
  /stall             echoes; every STALL_EVERY s it stalls STALL_FOR s (the
                     upgrade and replies wait the stall out)
  /shed              reads one message, then closes with 1013 (try again later)
  /drop              reads one message, then drops the TCP connection (no close frame)
  /serial?work_ms=M  echoes each message after M ms of work under one lock
                     for the whole server: capacity 1000/M messages a second
  /limited?capacity=N&work_ms=M
                     echoes after M ms with at most N messages at work; one
                     past that closes at once with 1013 (load shedding)
  /login?user=U      HTTP: {"token": "tok-U"}
  /chat              needs `Authorization: Bearer tok-…` (else HTTP 401);
                     {"type":"hello","id":N} -> {"type":"welcome","id":N,"room":"room-U"};
                     {"type":"say","room":R,"id":N} -> {"type":"ok"|"wrong-room","id":N}
  /stats             HTTP: the counters as JSON
With --cert and --key it speaks wss:// (TLS).
Usage: python3 ws_server.py [--port P] [--stall-every S] [--stall-for S] [--cert PEM --key PEM]
"""

import argparse
import asyncio
import json
import ssl
import sys
import time
import urllib.parse
from http import HTTPStatus

from websockets.asyncio.server import serve

STATS = {
    "connections": 0,
    "messages": {},
    "closed_1013": 0,
    "bad_auth": 0,
    "wrong_room": 0,
    "stalled": 0,
    "room_logins": 0,
    "limited_ok": 0,
    "limited_refused": 0,
}
AT_WORK = {"limited": 0}
LOCK = None
TOKENS = {}
ARGS = None
STARTED = time.monotonic()


def count(path):
    STATS["messages"][path] = STATS["messages"].get(path, 0) + 1


async def stall_out():
    """Wait out the current stall, if one is under way."""
    t = time.monotonic() - STARTED
    into = t % ARGS.stall_every
    if into < ARGS.stall_for:
        STATS["stalled"] += 1
        await asyncio.sleep(ARGS.stall_for - into)


async def process_request(connection, request):
    url = urllib.parse.urlsplit(request.path)
    query = urllib.parse.parse_qs(url.query)
    if url.path == "/stats":
        return connection.respond(HTTPStatus.OK, json.dumps(STATS) + "\n")
    if url.path == "/login":
        user = query.get("user", ["anon"])[0]
        if user.startswith("room-"):
            STATS["room_logins"] += 1
        token = "tok-" + user
        TOKENS[token] = user
        return connection.respond(HTTPStatus.OK, json.dumps({"token": token}) + "\n")
    if url.path == "/chat":
        auth = request.headers.get("Authorization", "")
        if not auth.startswith("Bearer ") or auth[7:] not in TOKENS:
            STATS["bad_auth"] += 1
            return connection.respond(HTTPStatus.UNAUTHORIZED, "no token\n")
    if url.path == "/stall":
        await stall_out()
    return None


async def handler(connection):
    STATS["connections"] += 1
    url = urllib.parse.urlsplit(connection.request.path)
    query = urllib.parse.parse_qs(url.query)
    path = url.path
    delay = int(query.get("delay_ms", ["0"])[0]) / 1000.0
    user = None
    if path == "/chat":
        user = TOKENS.get(connection.request.headers.get("Authorization", "")[7:])
    try:
        async for message in connection:
            count(path)
            if path == "/drop":
                connection.transport.abort()
                return
            if path == "/shed":
                STATS["closed_1013"] += 1
                await connection.close(code=1013, reason="try again later")
                return
            if path == "/serial":
                work = int(query.get("work_ms", ["10"])[0]) / 1000.0
                async with LOCK:
                    await asyncio.sleep(work)
                await connection.send(message)
            elif path == "/limited":
                capacity = int(query.get("capacity", ["4"])[0])
                if AT_WORK["limited"] >= capacity:
                    STATS["limited_refused"] += 1
                    await connection.close(code=1013, reason="over capacity")
                    return
                AT_WORK["limited"] += 1
                try:
                    await asyncio.sleep(int(query.get("work_ms", ["20"])[0]) / 1000.0)
                finally:
                    AT_WORK["limited"] -= 1
                STATS["limited_ok"] += 1
                await connection.send(message)
            elif path == "/stall":
                await stall_out()
                await connection.send(message)
            elif path == "/chat":
                m = json.loads(message)
                if m.get("type") == "hello":
                    reply = {"type": "welcome", "id": m.get("id"), "room": "room-" + user}
                elif m.get("room") == "room-" + user:
                    reply = {"type": "ok", "id": m.get("id")}
                else:
                    STATS["wrong_room"] += 1
                    reply = {"type": "wrong-room", "id": m.get("id")}
                await connection.send(json.dumps(reply))
            else:
                if delay:
                    await asyncio.sleep(delay)
                await connection.send(message)
    except Exception:  # a client that drops mid-way
        pass


async def main():
    global LOCK
    LOCK = asyncio.Lock()
    tls = None
    if ARGS.cert:
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(ARGS.cert, ARGS.key)
    async with serve(
        handler,
        "127.0.0.1",
        ARGS.port,
        process_request=process_request,
        compression=None,
        ssl=tls,
    ) as server:
        port = server.sockets[0].getsockname()[1]
        print(f"service=127.0.0.1:{port}", flush=True)
        await asyncio.get_running_loop().create_future()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--stall-every", type=float, default=5.0)
    p.add_argument("--stall-for", type=float, default=0.5)
    p.add_argument("--cert")
    p.add_argument("--key")
    ARGS = p.parse_args()
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
