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
    problem, server = "", None
    try:
        server = RealN8n(install_dir(), tmp_path_factory.mktemp("n8n"), fake_model.base_url)
        server.prepare()
        server.start()
    except N8nUnavailable as exc:
        problem = str(exc)
    if problem:  # outside the except: one clear message, not a chained traceback
        if server is not None:
            server.stop()
        pytest.fail(problem, pytrace=False)
    yield server
    server.stop()
