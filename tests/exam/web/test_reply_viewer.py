"""The reply viewer and the side-by-side question page, through Flask's test client."""

from __future__ import annotations

import html
import json
import re
import time

import pytest

from exam.records import AttemptRow, CellRow
from exam.web.app import create_app

HOSTILE = '答案：備貨中 <img src=x onerror="alert(1)"> 已出貨'
AUTH = {"Authorization": "Bearer t"}


@pytest.fixture
def site(history):
    history.bank("A", [("Q-01", "c", "critical"), ("Q-02", "c", "major")])
    old = history.run("A", "v1", {"Q-01": "p", "Q-02": "p"})
    new = history.run("A", "v2", {"Q-01": "t", "Q-02": "p"})
    # a third run whose reply carries markup, in the reply text and in the raw body
    from exam.bank import load_bank
    from exam.pipeline.registry import Agent
    from exam.pipeline.runner import create_run

    a = Agent(name="A", url="http://127.0.0.1:9/x", bank=history.banks["A"])
    hostile = create_run(history.store, a, "v3", repeats=1, only=["Q-01"])
    digest = load_bank(history.banks["A"]).by_case()["Q-01"].digest
    body = json.dumps({"answer": HOSTILE, "secret": "</pre><script>x()</script>"},
                      ensure_ascii=False)
    history.store.record_cell(
        CellRow(hostile, "Q-01", 1, digest, "ok", "", HOSTILE, None, False, None, 2, 3, 1234,
                456.0, time.time()),
        [AttemptRow(1, time.time(), 500, 10.0, "HTTP 500", "text/plain", "oops", 4, False),
         AttemptRow(2, time.time(), 200, 446.0, "", "application/json", body, len(body),
                    False)])
    history.store.set_run_status(hostile, "done")
    app = create_app({"API_TOKEN": "t", "DB": str(history.tmp / "exam.db"), "TESTING": True})
    return app.test_client(), {"old": old, "new": new, "hostile": hostile}


def test_the_reply_is_escaped_and_its_deciding_words_marked(site):
    client, runs = site
    page = client.get(f"/reply/{runs['hostile']}/Q-01/1", headers=AUTH).text
    assert '<img src=x' not in page and "<script>x()" not in page
    assert "&lt;img src=x onerror=" in page
    assert "<mark>已出貨</mark>" in page  # the forbidden words that failed it
    assert "HTTP 500" in page and "446" in page  # every attempt, with its timing
    assert "&lt;/pre&gt;&lt;script&gt;x()" in page  # the raw body, escaped
    assert '"question": "Q-01?"' in html.unescape(page)  # the work order as text


def test_a_timed_out_cell_shows_why_it_has_no_reply(site):
    client, runs = site
    page = client.get(f"/reply/{runs['new']}/Q-01/1", headers=AUTH).text
    assert "timeout" in page and "no reply within 60 s" in page


@pytest.mark.parametrize("path", ["/reply/999/Q-01/1", "/reply/1/Q-99/1", "/reply/1/Q-01/7",
                                  "/question/A/Q-99", "/question/NOPE/Q-01"])
def test_an_unknown_cell_or_question_is_404(site, path):
    client, _ = site
    assert client.get(path, headers=AUTH).status_code == 404


def test_old_and_new_side_by_side(site):
    client, _ = site
    page = client.get("/question/A/Q-01?old=v1&new=v2", headers=AUTH).text
    assert page.index('id="version-v1"') < page.index('id="version-v2"')
    assert 'class="side"' in page
    assert "備貨中" in page and "no reply within 60 s" in page


def test_a_case_number_with_a_slash_opens_its_reply_and_question(history):
    """A bank may number its questions FAQ/03: the scorecard's links to it were 404s."""
    history.bank("A", [("FAQ/03", "c", "major"), ("W2 07?#", "c", "minor")])
    history.run("A", "v1", {"FAQ/03": "p", "W2 07?#": "p"})
    app = create_app({"API_TOKEN": "t", "DB": str(history.tmp / "exam.db"), "TESTING": True})
    client = app.test_client()
    card = client.get("/scorecard/A/v1", headers=AUTH).get_data(as_text=True)
    links = [html.unescape(h) for h in re.findall(r'href="(/reply/[^"]+)"', card)]
    assert len(links) == 2
    for link in links:
        page = client.get(link, headers=AUTH)
        assert page.status_code == 200, link
        question = re.search(r'href="(/question/[^"]+)"', page.get_data(as_text=True))
        assert client.get(html.unescape(question.group(1)), headers=AUTH).status_code == 200


def test_bidi_overrides_are_shown_not_obeyed(history):
    """U+202E would show a reviewer 'gnippihs eerf' as 'free shipping': shown as \\u202e,
    as the terminal shows it, on the page and in the HTML report."""
    from exam.reports import html as report_html

    history.bank("A", [("Q-01", "c", "major")])
    history.run("A", "v1", {"Q-01": "p"}, texts={"Q-01": "備貨中 \u202egnippihs eerf\u202c"})
    app = create_app({"API_TOKEN": "t", "DB": str(history.tmp / "exam.db"), "TESTING": True})
    run_id = history.store.list_runs("A")[0].id
    page = app.test_client().get(f"/reply/{run_id}/Q-01/1", headers=AUTH).get_data(as_text=True)
    assert "\u202e" not in page and "\\u202egnippihs eerf\\u202c" in page
    out = report_html.environment().from_string("<p>{{ t }}</p>").render(t="\u2066x\u2069")
    assert out == "<p>\\u2066x\\u2069</p>"
