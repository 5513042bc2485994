"""A cold report page is made once for everyone asking at the same time, as the API's answers
are (exam.reports.answer_cache): ten views of a scorecard whose grades must be redone each waited
51 s, each building it (issue 33). A kept report renders the page a fresh one does."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

import pytest

from exam.reports import answer_cache
from exam.web.app import create_app
from tests.exam.conftest import HUMAN
from tests.exam.reports.test_graded_runs import add_cell, small_history

TOKEN = "page-memo-token-3d1e"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
PAGES = {"/scorecard/A/v1": "exam.reports.scorecard.build",
         # the compare page builds its pair against the kept baseline walk (once)
         "/compare?agent=A&old=v1&new=v2": "exam.reports.changes.against_kept",
         "/discrimination?agent=A": "exam.reports.discrimination.build"}


@pytest.fixture
def site(tmp_path):
    answer_cache.clear()
    history = small_history(tmp_path)
    app = create_app({"API_TOKEN": TOKEN, "DB": str(tmp_path / "exam.db"), "TESTING": True})
    yield history, app
    answer_cache.clear()
    history.store.close()


def _page(client, path: str) -> str:
    resp = client.get(path, headers=AUTH)
    assert resp.status_code == 200, resp.text[:300]
    # what differs by view, not by report: a chart's fresh id (exam.reports.charts), the
    # share link made for this view, the form's CSRF token
    return re.sub(r'chart-[0-9a-f-]{36}|/share/[\w.-]+|name="csrf_token" value="[^"]*"', "",
                  resp.text)


@pytest.mark.parametrize("path", PAGES)
def test_ten_views_of_a_cold_page_at_once_build_it_once(site, monkeypatch, path):
    history, app = site
    module_name, _, attr = PAGES[path].rpartition(".")
    module = __import__(module_name, fromlist=[attr])
    real, built, started, release = getattr(module, attr), [], threading.Event(), \
        threading.Event()

    def slow_build(*args, **kwargs):
        built.append(1)
        started.set()
        assert release.wait(30)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, attr, slow_build)
    keyed, all_keyed, real_key = [], threading.Event(), answer_cache.key

    def counted_key(*args, **kwargs):
        k = real_key(*args, **kwargs)
        keyed.append(1)
        if len(keyed) >= 10:
            all_keyed.set()
        return k

    monkeypatch.setattr(answer_cache, "key", counted_key)
    pages: list[str] = []

    def view() -> None:
        pages.append(_page(app.test_client(), path))

    threads = [threading.Thread(target=view) for _ in range(10)]
    for t in threads:
        t.start()
    # all ten have asked while the first is still building: without waiting for it, each
    # would build its own
    try:
        assert started.wait(30) and all_keyed.wait(30)
    finally:
        release.set()
        for t in threads:
            t.join(60)
    assert len(pages) == 10 and len(set(pages)) == 1
    assert built == [1]
    built.clear()
    assert _page(app.test_client(), path) == pages[0]  # kept: the next view builds nothing
    assert built == []


def test_a_kept_page_is_the_page_built_afresh_after_every_change(site):
    history, app = site
    client = app.test_client()

    def views() -> dict[str, str]:
        return {path: _page(client, path) for path in PAGES}

    def afresh() -> dict[str, str]:
        answer_cache.clear()
        return views()

    seen = views()
    assert seen == views() == afresh()
    path = Path(history.banks["A"])
    bank = json.loads(path.read_text(encoding="utf-8"))
    bank["questions"][1]["category"] = "renamed <b>"
    path.write_text(json.dumps(bank, ensure_ascii=False), encoding="utf-8")
    now = views()
    assert now == afresh() and now["/scorecard/A/v1"] != seen["/scorecard/A/v1"]
    assert "renamed &lt;b&gt;" in now["/scorecard/A/v1"]
    first = min(r.id for r in history.store.list_runs())
    assert history.store.retire_failed_cells(first) >= 1
    add_cell(history.store, first, "A-02", 2, HUMAN)
    later = views()
    assert later == afresh() and later["/scorecard/A/v1"] != now["/scorecard/A/v1"]


def test_a_new_process_reads_the_answer_the_store_keeps_and_never_one_made_from_else(site,
                                                                                  monkeypatch):
    """Below each process's answers the store keeps the latest one per report and arguments:
    a process that never built it (another instance, a restart) shows it without building; a
    cell that arrives, or another code digest, gives a key nothing is kept under."""
    from exam.grading import keys
    from exam.reports import scorecard

    history, app = site
    path = "/scorecard/A/v1"
    client = app.test_client()
    first = _page(client, path)
    answer_cache.clear()  # a new process
    real = scorecard.build

    def refuse(*args, **kwargs):
        raise AssertionError("built again")

    monkeypatch.setattr(scorecard, "build", refuse)
    assert _page(client, path) == first
    answer_cache.clear()
    monkeypatch.setattr(keys, "code_digest", lambda: "an upgrade")
    with pytest.raises(AssertionError, match="built again"):
        client.get(path, headers=AUTH)
    monkeypatch.setattr(scorecard, "build", real)
    upgraded = _page(client, path)
    assert upgraded == first
    answer_cache.clear()
    monkeypatch.setattr(scorecard, "build", refuse)
    add_cell(history.store, min(r.id for r in history.store.list_runs("A", "v1")), "A-02", 9,
             HUMAN)
    with pytest.raises(AssertionError, match="built again"):
        client.get(path, headers=AUTH)
