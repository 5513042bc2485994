"""A fixed-latency agent for the benchmarks, run as its own process on 127.0.0.1.

python bench/agent.py LATENCY_MS prints its port and serves until killed. When
$BENCH_ARRIVALS names a file, every request arrival (time.monotonic) is appended to it:
the pacing figure is measured on the server side.
"""

from __future__ import annotations

import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BODY = json.dumps({"answer": "訂單 A10302 目前備貨中，預計 2026-09-16 到貨。", "status": "ok",
                   "usage": {"model_calls": 2, "total_tokens": 1200}}, ensure_ascii=False).encode()


def main() -> None:
    latency = float(sys.argv[1]) / 1000
    arrivals = os.environ.get("BENCH_ARRIVALS")
    sink = open(arrivals, "a", buffering=1) if arrivals else None  # noqa: SIM115

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # headers and body are two writes: without TCP_NODELAY, Nagle's algorithm and the
        # client's delayed ACK add ~40 ms to every reply, which is not the harness's time
        disable_nagle_algorithm = True

        def log_message(self, *args):
            pass

        def do_POST(self):
            if sink:
                sink.write(f"{time.monotonic()}\n")
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            time.sleep(latency)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(BODY)))
            self.end_headers()
            self.wfile.write(BODY)

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 128

    server = Server(("127.0.0.1", 0), Handler)
    print(server.server_port, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
