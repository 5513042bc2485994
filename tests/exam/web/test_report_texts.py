"""The service's reports read kept runs without the reply texts none of them shows (the CLI's
do the same: tests/exam/cli/test_report_texts.py); the review queue shows the needs_human
replies kept with their grades, and reads no other. Each report is the same as the one that
graded and kept the runs."""

from __future__ import annotations

import pytest

from exam.reports.graded_runs import LazyChecks
from exam.store import Store
from exam.web.app import create_app
from tests.exam.conftest import HUMAN
from tests.exam.reports.test_graded_runs import kept, small_history

TOKEN = "test-token-5f3a"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
API = ["/api/runs/1/scorecard", "/api/compare?agent=A&old=v1&new=v2",
       "/api/discrimination?agent=A"]
PAGES = ["/", "/runs", "/scorecard/A/v1", "/compare?agent=A&old=v1&new=v2",
         "/discrimination?agent=A"]


@pytest.fixture
def site(tmp_path):
    history = small_history(tmp_path)
    app = create_app({"API_TOKEN": TOKEN, "DB": str(history.store.path), "TESTING": True})
    return history, app.test_client()


def refuse_texts(monkeypatch) -> list[str]:
    calls: list[str] = []

    def refuse(*args, **kwargs):
        calls.append("cell_texts")
        raise AssertionError("every reply text was read")

    monkeypatch.setattr(Store, "cell_texts", refuse)
    return calls


@pytest.mark.parametrize("path", API + PAGES)
def test_a_service_report_over_kept_runs_reads_no_reply_texts(site, monkeypatch, path):
    history, client = site
    first = client.get(path, headers=AUTH)  # grades, and keeps the finished runs
    assert first.status_code == 200
    assert kept(history.store)
    with monkeypatch.context() as m:
        calls = refuse_texts(m)
        again = client.get(path, headers=AUTH)
    assert calls == [] and again.status_code == 200
    if path.startswith("/api/"):
        assert again.json == first.json


def test_the_review_queue_shows_its_replies_without_reading_every_text(site, monkeypatch):
    """The queue is needs_human replies, whose texts are kept with their grades: the page
    over kept runs reads no other reply text, and shows the same replies."""
    history, client = site
    first = client.get("/review", headers=AUTH)
    assert first.status_code == 200
    assert kept(history.store)
    with monkeypatch.context() as m:
        calls = refuse_texts(m)
        again = client.get("/review", headers=AUTH)
    assert calls == [] and again.status_code == 200
    shown = [html.count(HUMAN) for html in (first.get_data(as_text=True),
                                            again.get_data(as_text=True))]
    assert shown[0] == shown[1] > 0


def test_the_api_scorecard_shows_kept_checks_without_building_them(site, monkeypatch):
    """A kept run's checks go from their JSON to the response: no CheckResult is built for
    them (decoding every cell's checks was a third of a scorecard request)."""
    _, client = site
    first = client.get("/api/runs/1/scorecard", headers=AUTH)
    assert first.status_code == 200
    with monkeypatch.context() as m:
        def refuse(self):
            raise AssertionError("a kept cell's checks were decoded")

        m.setattr(LazyChecks, "_value", refuse)
        again = client.get("/api/runs/1/scorecard", headers=AUTH)
    assert again.status_code == 200 and again.json == first.json
