"""The question page over a long history: only that question's cells and reply texts are
read, each version's most common replies come first, ten different ones at a time with a link
to the next, and a reply given hundreds of times lists fifty of its cells and counts the rest."""

from __future__ import annotations

import re
import sqlite3

import pytest

from exam.reports import reply_view
from exam.store import Store
from exam.web.app import create_app
from tests.exam.conftest import FAIL, PASS
from tests.exam.reports.test_graded_runs import add_cell, small_history

TOKEN = "question-page-token-71ac"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def site(tmp_path):
    history = small_history(tmp_path)
    store = history.store
    v2 = max(r.id for r in store.list_runs("A", "v2"))
    for repeat in range(4, 29):  # 25 different failing replies, each once
        add_cell(store, v2, "A-01", repeat, f"{FAIL}（第 {repeat} 次）")
    for repeat in range(29, 129):  # one passing reply given 100 times
        add_cell(store, v2, "A-01", repeat, PASS)
    store.set_run_status(v2, "done")
    app = create_app({"API_TOKEN": TOKEN, "DB": str(tmp_path / "exam.db"), "TESTING": True})
    yield history, app.test_client(), v2
    store.close()


def test_the_question_page_reads_that_questions_cells_and_texts_alone(site, monkeypatch):
    history, _, _ = site
    store = history.store
    whole = reply_view.question(store, "A", "A-01")  # keeps the runs
    asked = []
    real = Store.cell_texts

    def texts(self, run_ids, case_no=None):
        asked.append(case_no)
        return real(self, run_ids, case_no)

    def refuse(*args, **kwargs):
        raise AssertionError("a whole kept row was read")

    monkeypatch.setattr(Store, "cell_texts", texts)
    monkeypatch.setattr(Store, "graded_runs", refuse)  # the question's block alone
    assert reply_view.question(store, "A", "A-01") == whole
    assert asked == ["A-01"]
    v2 = max(r.id for r in store.list_runs("A", "v2"))
    one = reply_view.cell(store, store.get_run(v2), "A-01", 40)
    assert one["graded"]["verdict"] == "pass" and asked == ["A-01", "A-01"]
    assert sum(len(col["cells"]) for col in whole["columns"]) == 3 + 128


def test_ten_different_replies_at_a_time_the_most_common_first(site):
    _, client, v2 = site
    page = client.get("/question/A/A-01?new=v2", headers=AUTH).text
    groups = re.findall(r'class="card reply-group" data-same="(\d+)"', page)
    assert len(groups) == 10 and groups[0] == "103"  # 3 earlier passes + 100, the same reply
    assert "×103, same reply" in page and "and 52 more, the same" in page
    more = re.search(r'id="more-v2">(\d+) more different replies: <a href="([^"]+)"', page)
    assert more and more.group(1) == "16"
    following = client.get(more.group(2).replace("&amp;", "&"), headers=AUTH).text
    assert len(re.findall(r'class="card reply-group"', following)) == 10
    last = client.get("/question/A/A-01?new=v2&start=20", headers=AUTH).text
    assert len(re.findall(r'class="card reply-group"', last)) == 6
    assert 'id="more-v2"' not in last
    assert client.get("/question/A/A-01?new=v2&start=x", headers=AUTH).status_code == 200


def test_the_scorecard_page_shows_each_questions_most_common_evidence_and_links_the_rest(site):
    """A page (a phone, from LINE) lists five pieces of evidence per question, the most common
    first, and links to the question page for the rest; the HTML file, kept for reading
    later, lists every one."""
    from exam.reports import html, kinds
    from exam.reports.inputs import LOCAL

    history, client, _ = site
    page = client.get("/scorecard/A/v2", headers=AUTH).text
    row = page[page.index('<td class="lead">A-01'):]
    row = row[:row.index("</tr>")]
    assert row.count(" fail: ") == 5
    more = re.search(r'id="more-A-01">and (\d+) other pieces of evidence: <a href="([^"]+)"',
                     row)
    assert more and more.group(2) == "/question/A/A-01"
    report = kinds.build("scorecard", history.store, LOCAL, agent="A", version="v2")
    whole = html.render("scorecard", report)
    row = whole[whole.index('<td class="lead">A-01'):]
    row = row[:row.index("</tr>")]
    assert row.count(" fail: ") == 5 + int(more.group(1)) and 'id="more-A-01"' not in row


def test_the_question_and_reply_pages_say_each_versions_verdict(site):
    """Every page that shows a version says its verdict, as the overview does."""
    from exam.reports import kinds
    from exam.reports.inputs import LOCAL

    history, client, v2 = site
    report = kinds.build("overview", history.store, LOCAL, agent="A")
    verdict = {v["version"]: v["change"]["verdict"] for v in report["agents"][0]["versions"]}
    assert verdict["v1"] == "—" and verdict["v2"] in ("ship", "hold", "incomplete", "undecided")
    page = client.get("/question/A/A-01", headers=AUTH).text
    column = page[page.index('id="version-v2"'):]
    assert f'data-verdict="{verdict["v2"]}"' in column[:column.index("</h2>")]
    first = page[page.index('id="version-v1"'):page.index('id="version-v2"')]
    assert "data-verdict" not in first  # the first version: nothing to compare it with
    reply = client.get(f"/reply/{v2}/A-01/1", headers=AUTH).text
    said = re.search(r'<p id="version-verdict">.*?</p>', reply, re.S)
    assert said and f'data-verdict="{verdict["v2"]}"' in said.group(0) and "vs v1" in said.group(0)


def test_a_question_page_seen_again_reads_its_kept_view_until_what_it_shows_changes(site,
                                                                                  monkeypatch):
    """Made once (grouped and marked) and kept: a later view, in this process or another,
    reads no reply; a new cell, or a person's decision, gives another view."""
    from exam.reports import answer_cache

    history, client, v2 = site
    first = client.get("/question/A/A-01?new=v2", headers=AUTH).text
    answer_cache.clear()  # another process: the store's kept answer

    def refuse(*args, **kwargs):
        raise AssertionError("the question's replies were read again")

    with monkeypatch.context() as m:
        m.setattr(reply_view, "question", refuse)
        assert client.get("/question/A/A-01?new=v2", headers=AUTH).text == first
    add_cell(history.store, v2, "A-01", 129, FAIL + "（新的）")
    after = client.get("/question/A/A-01?new=v2", headers=AUTH).text
    assert re.search(r'id="summary-v2">129 replies', first) is None
    assert re.search(r'id="summary-v2">129 replies', after)
    # a page past the first is kept by the process alone (its slots are a visitor's to make)
    with sqlite3.connect(history.store.path) as con:
        before = con.execute("SELECT COUNT(*) FROM kept_answers").fetchone()[0]
        for query in ("new=v2&start=10", "new=v2&start=20", "new=v2&start=99999",
                      "old=v1&new=v2"):
            assert client.get(f"/question/A/A-01?{query}", headers=AUTH).status_code == 200
        assert con.execute("SELECT COUNT(*) FROM kept_answers").fetchone()[0] == before > 0
