"""Share links are signed and judged by the store's clock, as leases are (exam/db/clock.py):
an instance whose clock runs ahead or behind neither refuses a live link nor opens an expired
one, and the links it signs last as long as on any other instance. On both backends.

A host's wrong clock is this process with ``time.time`` set off (as in
tests/exam/store/test_clock_skew.py); the store's clock is the database's own."""

from __future__ import annotations

import re
import time

import pytest

from exam.share import make_token
from exam.web.app import create_app
from tests.exam.web.conftest import signed_in, w1_registry

ADMIN = "admin-token-clock-1"
DAY = 86400.0
PAGE = "/scorecard/W1/v1"


@pytest.fixture
def app(store_url, tmp_path):
    return create_app({"API_TOKEN": ADMIN, "DB": store_url, "TESTING": True,
                       "AGENTS": str(w1_registry(tmp_path))})


@pytest.fixture
def off_by(monkeypatch):
    real = time.time

    def set_off(seconds: float) -> None:
        monkeypatch.setattr(time, "time", lambda: real() + seconds)
    return set_off


def _opens(app, token: str) -> int:
    return app.test_client().get(f"/share/{token}").status_code


def test_a_host_whose_clock_runs_ahead_opens_a_live_link(app, off_by):
    token = make_token(app.config["SECRET_KEY"], PAGE, days=7)  # made now, for 7 days
    off_by(8 * DAY)
    assert _opens(app, token) == 302


def test_a_host_whose_clock_runs_behind_refuses_an_expired_link(app, off_by):
    token = make_token(app.config["SECRET_KEY"], PAGE, days=7, now=time.time() - 8 * DAY)
    off_by(-2 * DAY)
    assert _opens(app, token) == 403


def test_a_link_signed_on_a_host_behind_lasts_its_days(tmp_path, off_by):
    """The scorecard's share link, made on an instance whose clock is 8 days behind, works on
    the others for SHARE_LINK_DAYS (it was dead on arrival)."""
    from tests.exam.helpers import demo_copy

    db = demo_copy(tmp_path)  # the demo's store (one repeat), made once per session
    app = create_app({"API_TOKEN": ADMIN, "DB": db, "TESTING": True,
                      "AGENTS": str(w1_registry(tmp_path))})
    off_by(-8 * DAY)
    page = signed_in(app, ADMIN).get("/scorecard/W1/v2")
    assert page.status_code == 200, page.text[:300]
    link = re.search(r"/share/([A-Za-z0-9_.=-]+)", page.text).group(1)
    off_by(0)
    assert _opens(app, link) == 302
