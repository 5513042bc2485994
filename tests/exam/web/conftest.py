from __future__ import annotations

import pytest
import yaml

from exam.app import create_app
from tests.exam.helpers import write_bank
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
