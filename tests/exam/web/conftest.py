from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
import yaml

from exam.web.app import create_app
from tests.conftest import BANK_DIR
from tests.exam.helpers import demo_copy, write_bank
from tests.fakes.agent import FakeAgent

TOKEN = "test-token-5f3a"


@pytest.fixture
def fake_agent():
    with FakeAgent() as fake:
        yield fake


@pytest.fixture
def registry_path(tmp_path, fake_agent):
    bank = write_bank(tmp_path, ["ok", "ok", "status-500"])
    path = tmp_path / "agents.yaml"
    path.write_text(yaml.safe_dump({"agents": {"T": {"url": fake_agent.url, "bank": str(bank),
                                                     "timeout_s": 30}}}))
    return path


@pytest.fixture
def app(tmp_path, registry_path):
    return create_app({"API_TOKEN": TOKEN, "DB": str(tmp_path / "exam.db"),
                       "AGENTS": str(registry_path), "TESTING": True})


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def auth():
    return {"Authorization": f"Bearer {TOKEN}"}


class Clock:
    """``time.time`` moved on by the test instead of slept through."""

    def __init__(self) -> None:
        self.ahead = 0.0

    def time(self) -> float:
        return time.time() + self.ahead

    def advance(self, seconds: float) -> None:
        self.ahead += seconds


@pytest.fixture
def share_clock(monkeypatch) -> Clock:
    """The clock share links are made and judged by (exam/share.py reads ``time.time``;
    the dashboard the store's clock, ``Store.now``, moved with it): ``share_clock.advance(2)``
    expires a 1-second link without waiting for it."""
    from exam import share
    from exam.store import Store

    clock = Clock()
    monkeypatch.setattr(share, "time", clock)
    real_now = Store.now
    monkeypatch.setattr(Store, "now", lambda self: real_now(self) + clock.ahead)
    return clock


def demo_store(tmp_path_factory, name: str) -> str:
    """A store the demo filled (one repeat), for a module's pages to read: a copy of the
    session's (tests/exam/helpers.py)."""
    return demo_copy(tmp_path_factory.mktemp(name))


def w1_registry(folder: Path) -> Path:
    """An agents.yaml in ``folder`` with agent W1 alone (the repository's bank, no agent behind
    its URL): enough for pages and forms that read the registry."""
    path = folder / "agents.yaml"
    path.write_text(f"agents:\n  W1:\n    url: http://127.0.0.1:9/\n"
                    f"    bank: {BANK_DIR / 'W1.json'}\n", encoding="utf-8")
    return path


def login_csrf(client) -> str:
    """The CSRF token of the login form, as a browser would read it."""
    return re.search(r'name="csrf_token" value="([^"]+)"', client.get("/login").text).group(1)


def w1_app(db: str, folder: Path, admin: str, viewer: str | None = None):
    """The service (TESTING) on store ``db`` with the W1 registry, an admin token and perhaps
    a viewer token: what the page tests read."""
    from exam.web.app import create_app

    config = {"API_TOKEN": admin, "DB": db, "AGENTS": str(w1_registry(folder)), "TESTING": True}
    if viewer is not None:
        config["VIEWER_TOKEN"] = viewer
    return create_app(config)


def sign_in(client, token: str) -> None:
    """Log ``client`` in with ``token`` through the login form."""
    assert client.post("/login", data={"token": token, "csrf_token": login_csrf(client)}
                       ).status_code == 302


def signed_in(app, token: str):
    """A test client of ``app`` signed in with ``token`` (through the login form)."""
    client = app.test_client()
    sign_in(client, token)
    return client
