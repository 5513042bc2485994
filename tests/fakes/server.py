"""One way to serve a fake on 127.0.0.1: bound at once on a free port (its URL is known before
it serves), served in a thread inside ``with``, shut down and closed when the block ends."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer, ThreadingHTTPServer


class Served:
    """A bound server; ``with`` serves it and gives its base URL (``http://127.0.0.1:PORT``)."""

    def __init__(self, server: HTTPServer):
        self.server = server
        self.url = f"http://127.0.0.1:{server.server_port}"
        # how often the serving loop looks for close(): what close() waits, half of it on
        # average (at 0.05 s, 25 ms a fake: seconds over the suite's hundreds of fakes)
        self._thread = threading.Thread(target=server.serve_forever,
                                        kwargs={"poll_interval": 0.005}, daemon=True)

    def start(self) -> Served:
        self._thread.start()
        return self

    def close(self) -> None:
        if self._thread.is_alive():
            self.server.shutdown()
            self._thread.join()
        self.server.server_close()  # else the listening socket is left to the GC's warning

    def __enter__(self) -> str:
        self.start()
        return self.url

    def __exit__(self, *exc) -> None:
        self.close()


class QuietHandler(BaseHTTPRequestHandler):
    """A fake's request handler: HTTP/1.1 (connections kept alive, as agents, n8n and LINE
    answer) and no access log on the test's output."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass


def serve(handler: type[BaseHTTPRequestHandler],
          server_class: type[HTTPServer] = ThreadingHTTPServer) -> Served:
    """``handler`` bound on 127.0.0.1 (each request in its own daemon thread)."""
    server = server_class(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    return Served(server)


def send_json(handler: BaseHTTPRequestHandler, status: int, body: object,
              headers: dict[str, str] | None = None) -> None:
    """Answer a request with ``body`` as JSON (UTF-8, with its length)."""
    data = json.dumps(body, ensure_ascii=False).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    for k, v in (headers or {}).items():
        handler.send_header(k, v)
    handler.end_headers()
    handler.wfile.write(data)
