"""`exam serve`, `exam worker` and gunicorn as real processes on 127.0.0.1, for tests that
need the production shape or more than one of each (several instances on one store, workers on
several hosts)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import requests

from tests.conftest import ROOT
from tests.exam.helpers import sigint_reaches_children


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_up(url: str, proc: subprocess.Popen, log: Path, timeout: float = 90) -> None:
    """Wait for a server to answer 200; a busy machine may take its time to import the app."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the server exited: {log.read_text()}")
        try:
            if requests.get(url, timeout=10).status_code == 200:
                return
        except requests.RequestException:  # not listening yet, or a worker still booting
            pass
        time.sleep(0.1)
    raise AssertionError(f"the server did not come up within {timeout} s: {log.read_text()}")


def gunicorn_command() -> list[str]:
    """How to start the gunicorn installed with this Python (a runtime dependency): the script
    beside ``sys.executable`` (a venv's bin/, wherever it is), else ``python -m gunicorn``.
    Not installed: the test fails saying so, not with a bare FileNotFoundError."""
    beside = shutil.which("gunicorn", path=str(Path(sys.executable).parent))
    if beside:
        return [beside]
    if importlib.util.find_spec("gunicorn") is not None:
        return [sys.executable, "-m", "gunicorn"]
    pytest.fail(f"gunicorn is not installed for {sys.executable}: these tests serve the app with "
                f"it as docs/deployment.md does (pip install -e '.[test]' installs it)",
                pytrace=False)


@contextmanager
def gunicorn(env: dict[str, str], log: Path, *, workers: int, threads: int | None = None,
             cwd: Path = ROOT, stop_timeout: float = 10, extra: tuple[str, ...] = ()
             ) -> Iterator[str]:
    """gunicorn serving ``create_app()`` on a free port, as docs/deployment.md runs it (plus
    ``extra`` arguments); yields its base URL once /healthz answers, and stops it with SIGTERM
    (then kill) afterwards."""
    port = free_port()
    args = [*gunicorn_command(), "--bind", f"127.0.0.1:{port}", "--workers", str(workers)]
    if threads:
        args += ["--threads", str(threads)]
    args += extra
    server = subprocess.Popen([*args, "--error-logfile", str(log), "exam.web.app:create_app()"],
                              env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_up(f"{base}/healthz", server, log)
        yield base
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=stop_timeout)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@dataclass
class Proc:
    """One `exam ...` process; its output goes to ``log`` (read in failure messages)."""

    args: list[str]
    env: dict[str, str]
    log: Path
    proc: subprocess.Popen | None = field(default=None, repr=False)

    def start(self) -> Proc:
        # SIGINT (``stop``) reaches it under `make test &` too, where the shell ignores it
        with open(self.log, "ab") as out, sigint_reaches_children():
            self.proc = subprocess.Popen([sys.executable, "-m", "exam", *self.args],
                                         env=self.env, cwd=ROOT, stdout=out,
                                         stderr=subprocess.STDOUT)
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def kill(self) -> None:
        """kill -9, and reap it."""
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait()

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.kill()

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""


def exam_env(db: str, agents: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EXAM_", "LINE_"))}
    return {**env, "EXAM_DB": db, "EXAM_AGENTS": str(agents), "NO_COLOR": "1", **extra}


class Serve(Proc):
    """`exam serve --no-worker` on a free port; ``url`` once it answers /healthz."""

    def __init__(self, env: dict[str, str], log: Path):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        super().__init__(["serve", "--no-worker", "--port", str(self.port)], env, log)

    def start(self, timeout: float = 90) -> Serve:
        super().start()
        wait_up(f"{self.url}/healthz", self.proc, self.log, timeout)
        return self


def worker(env: dict[str, str], host_id: str, log: Path, lease_s: float | None = None) -> Proc:
    args = ["worker", "--host-id", host_id]
    if lease_s is not None:
        args += ["--lease", str(lease_s)]
    return Proc(args, env, log)
