"""One real n8n per test session, with a fake OpenAI-compatible model of our own behind it.

n8n missing or failing to start is a test **failure** with the way out in its message, in CI
and locally alike: these tests are how the exam learns what a real n8n does (compressed
replies, its 404 hint, AI Agent usage), so they are never skipped.
"""

from __future__ import annotations

import pytest

from tests.fakes.openai_model import FakeModel
from tests.n8n.real_n8n import N8nUnavailable, RealN8n, install_dir


@pytest.fixture(scope="session")
def fake_model():
    with FakeModel() as model:
        yield model


@pytest.fixture(scope="session")
def n8n(fake_model, tmp_path_factory):
    try:
        home = install_dir()
    except N8nUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    server = RealN8n(home, tmp_path_factory.mktemp("n8n"), fake_model.base_url)
    try:
        server.prepare()
        server.start()
    except N8nUnavailable as exc:
        server.stop()
        pytest.fail(f"the real n8n would not start: {exc}", pytrace=False)
    yield server
    server.stop()
