"""A fixed-latency agent for the benchmarks, run as its own process on 127.0.0.1.

python bench/agent.py LATENCY_MS prints its port and serves until killed. When
$BENCH_ARRIVALS names a file, every request arrival (time.monotonic) is appended to it:
the pacing figure is measured on the server side.

It is one asyncio event loop reading HTTP/1.1 by hand (keep-alive, Content-Length bodies,
which is all the harness sends): the benchmarks measure the harness, and the agent shares
the machine's cores with it. The ``http.server`` agent it replaces (a thread per connection,
its headers parsed by ``email``) cost ~0.3 ms of CPU per request, ~3 s of a 10,000-cell run
taken from the harness on a 2-core machine; a real agent runs elsewhere (docs/performance.md).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time

BODY = json.dumps({"answer": "訂單 A10302 目前備貨中，預計 2026-09-16 到貨。", "status": "ok",
                   "usage": {"model_calls": 2, "total_tokens": 1200}}, ensure_ascii=False).encode()
REPLY = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
         + str(len(BODY)).encode() + b"\r\n\r\n" + BODY)
BAD = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
HEAD_CAP = 65_536


class Agent(asyncio.Protocol):
    """One connection: each request read whole is answered ``latency`` seconds later, in the
    order the requests came (a client sends the next only after its reply)."""

    def __init__(self, latency: float, sink) -> None:
        self.latency, self.sink = latency, sink
        self.buf = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buf) > HEAD_CAP:
                    self._refuse()
                return
            length = 0
            for line in self.buf[:end].split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    try:
                        length = int(value)
                    except ValueError:
                        return self._refuse()
            if len(self.buf) < end + 4 + length:
                return
            self.buf = self.buf[end + 4 + length:]
            if self.sink:
                self.sink.write(f"{time.monotonic()}\n")
            asyncio.get_running_loop().call_later(self.latency, self._answer)

    def _answer(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(REPLY)

    def _refuse(self) -> None:
        self.transport.write(BAD)
        self.transport.close()

    def connection_lost(self, exc) -> None:
        self.transport = None


async def serve(latency: float) -> None:
    arrivals = os.environ.get("BENCH_ARRIVALS")
    sink = open(arrivals, "a", buffering=1) if arrivals else None  # noqa: SIM115
    loop = asyncio.get_running_loop()
    # TCP_NODELAY is asyncio's default for TCP sockets: no Nagle delay on the reply
    server = await loop.create_server(lambda: Agent(latency, sink), "127.0.0.1", 0, backlog=128)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()


def main() -> None:
    try:
        asyncio.run(serve(float(sys.argv[1]) / 1000))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
