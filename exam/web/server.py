"""Serving the app: gunicorn for `exam serve` and `exam demo --serve`, Flask's own server only
behind `--dev`.

gunicorn is the server the project runs in production (docs/service.md); `exam serve` starts it
in this process with one worker of several threads, so what a team tries first is what they will
deploy, without Werkzeug's "development server" banner. A queue worker (`exam worker` in
production) runs as a thread in gunicorn's worker process, started after the fork: a thread
started before it would not survive into the process that serves.
"""

from __future__ import annotations

import errno
import logging
import socket
from collections.abc import Callable

from flask import Flask

from exam.errors import ExamError

THREADS = 8
# a page whose grades must be redone may take a while on a big store: gunicorn's default of
# 30 s would kill the worker mid-page (and its queue worker with it)
TIMEOUT_S = 120


class ListenError(ExamError):
    """The address cannot be listened on (taken, not this machine's, not an address)."""


def check_listen(host: str, port: int) -> None:
    """Fail with one line before starting a server that could not bind.

    gunicorn would retry a taken port five times and then exit 1 with a log line; the user is
    told at once, with exit status 2, instead.
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise ListenError(f"--host {host}: not an address this machine has ({exc})") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            why = "in use" if exc.errno == errno.EADDRINUSE else (exc.strerror or str(exc))
            raise ListenError(f"--host {host} --port {port}: cannot listen ({why}); "
                              f"choose another with --port") from None


def serve(app: Flask, host: str, port: int, *, dev: bool = False,
          after_fork: Callable[[], None] | None = None) -> None:
    """Serve ``app`` on ``host:port`` until Ctrl-C or SIGTERM; ``after_fork`` runs once in the
    process that serves (a queue worker's thread, say)."""
    check_listen(host, port)
    if dev:
        if after_fork:
            after_fork()
        app.run(host=host, port=port, threaded=True, use_reloader=False)
        return
    from gunicorn.app.base import BaseApplication

    class _Gunicorn(BaseApplication):
        def load_config(self) -> None:
            settings = {
                "bind": f"[{host}]:{port}" if ":" in host else f"{host}:{port}",
                "workers": 1, "worker_class": "gthread", "threads": THREADS,
                "timeout": TIMEOUT_S, "graceful_timeout": 10, "accesslog": None,
                "loglevel": "warning",
            }
            if after_fork:
                settings["post_worker_init"] = lambda _worker: after_fork()
            for key, value in settings.items():
                self.cfg.set(key, value)

        def load(self) -> Flask:
            return app

    logging.getLogger("gunicorn.error").setLevel(logging.WARNING)
    try:
        _Gunicorn().run()
    except SystemExit as exc:  # gunicorn's master exits through sys.exit, Ctrl-C included
        if exc.code not in (0, None):
            raise ExamError(f"the server stopped with status {exc.code} (messages above)") from None
