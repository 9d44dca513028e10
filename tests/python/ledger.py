"""A Python service for brunt's tests (127.0.0.1 only): one threading.Lock
held ~ms per request on /post (capacity about 1000/ms per second), a
CPU-bound /cpu (its threads wait on the GIL), threads per connection
(ThreadingHTTPServer, keep-alive). Prints `service=HOST:PORT` once it listens.

    python3 ledger.py
"""
import sys, threading, time
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
from urllib.parse import urlparse, parse_qs

class Ledger:
    def __init__(self):
        self.lock = threading.Lock()
        self.entries = 0
    def post(self, hold):
        with self.lock:
            time.sleep(hold)
            self.entries += 1
            return self.entries

LEDGER = Ledger()

def spin(n):
    x = 0
    for i in range(n):
        x += i
    return x

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_GET(self):
        q = parse_qs(urlparse(self.path).query)
        ms = float(q.get("ms", ["5"])[0]) / 1000
        if self.path.startswith("/post"):
            body = f"entry {LEDGER.post(ms)}\n".encode()
        elif self.path.startswith("/cpu"):
            body = f"{spin(int(q.get('n', ['200000'])[0]))}\n".encode()
        else:
            body = b"ok\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(f"service=127.0.0.1:{srv.server_address[1]}", flush=True)
srv.serve_forever()
