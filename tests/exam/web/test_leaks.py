"""What a run's error tells each reader: a store URL's credentials never, in any form; and a
viewer (viewer token, viewer session, share link) no store at all, as the 503 page hides it."""

from __future__ import annotations

import pytest

from exam.errors import StoreError
from exam.store import Store
from tests.exam.web.conftest import signed_in, w1_app

ADMIN, VIEWER = "admin-token-81c2", "viewer-token-77ab"
PG = "postgresql://exam@db.internal:1/agent_exam?sslmode=disable&password=s3cret-pw"


def _store_error() -> str:
    """A worker's message for its store gone away, as the store words it."""
    with pytest.raises(StoreError) as caught:
        Store(PG.replace("db.internal", "127.0.0.1"))
    return str(caught.value).replace("127.0.0.1", "db.internal")


@pytest.fixture
def db(tmp_path):
    """A store holding runs failed with store errors: one as this code words it, one as an
    older version stored it (its URL in clear), one naming the store's own file."""
    path = str(tmp_path / "exam.db")
    s = Store(path)
    try:
        for error in (_store_error(), f"{PG}: server closed the connection unexpectedly",
                      f"{path}: database is locked"):
            run_id = s.create_run(agent="W1", version="v1", bank_path="bank/W1.json",
                                  bank_digest="b" * 64, repeats=1, plan=[("W1-01", "d1")], settings={})
            s.set_run_status(run_id, "failed", error)
    finally:
        s.close()
    return path


@pytest.fixture
def app(db, tmp_path):
    return w1_app(db, tmp_path, ADMIN, VIEWER)


def _errors(client, headers=None) -> tuple[str, str]:
    page = client.get("/runs")
    api = client.get("/api/runs", headers=headers or {})
    assert page.status_code == 200 and api.status_code == 200, (page.status_code, api.text)
    return page.text, api.text


def test_a_viewer_sees_no_store_in_run_errors(app, db):
    client = signed_in(app, VIEWER)
    for text in _errors(client, {"Authorization": f"Bearer {VIEWER}"}):
        assert "s3cret" not in text
        assert "db.internal" not in text and "exam@" not in text and "agent_exam" not in text
        assert db not in text and "exam.db" not in text
        assert "the store could not be used" in text  # still says what went wrong


def test_an_admin_sees_the_store_without_its_password(app, db):
    client = signed_in(app, ADMIN)
    for text in _errors(client, {"Authorization": f"Bearer {ADMIN}"}):
        assert "s3cret" not in text
        assert "db.internal:1/agent_exam" in text and "password=***" in text
        assert "sslmode=disable" in text  # a setting, not a credential


def test_a_viewer_token_is_not_told_where_a_broken_store_lives(app, db, monkeypatch):
    def broken(*_a, **_k):
        raise StoreError(f"{db}: database is locked")

    monkeypatch.setattr(Store, "list_runs", broken)
    viewer = app.test_client().get("/api/runs", headers={"Authorization": f"Bearer {VIEWER}"})
    admin = app.test_client().get("/api/runs", headers={"Authorization": f"Bearer {ADMIN}"})
    assert viewer.status_code == admin.status_code == 503
    assert db not in viewer.text and "cannot be read just now" in viewer.json["error"]
    assert db in admin.json["error"]  # the admin is told what to fix
