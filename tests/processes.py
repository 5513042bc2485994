"""`exam serve` and `exam worker` as real processes on 127.0.0.1, for tests that need more
than one of each (several instances on one store, workers on several hosts)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import requests

from tests.conftest import ROOT


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Proc:
    """One `exam ...` process; its output goes to ``log`` (read in failure messages)."""

    args: list[str]
    env: dict[str, str]
    log: Path
    proc: subprocess.Popen | None = field(default=None, repr=False)

    def start(self) -> Proc:
        with open(self.log, "ab") as out:
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
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"exam serve exited ({self.proc.returncode}):\n"
                                     f"{self.output()}")
            try:
                if requests.get(f"{self.url}/healthz", timeout=10).status_code == 200:
                    return self
            except requests.RequestException:  # not listening yet
                pass
            time.sleep(0.05)
        raise AssertionError(f"exam serve did not answer within {timeout} s:\n{self.output()}")


def worker(env: dict[str, str], host_id: str, log: Path, lease_s: float | None = None) -> Proc:
    args = ["worker", "--host-id", host_id]
    if lease_s is not None:
        args += ["--lease", str(lease_s)]
    return Proc(args, env, log)
