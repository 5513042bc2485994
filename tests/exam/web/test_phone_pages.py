"""What a LINE link opens, said first and once: the verdict (a ship never green over a
critical failure), identical replies grouped, a run page that follows the run, and a 404 for
what no route takes whatever the method. Through Flask's test client; the same pages in a
real browser at 390 px are in test_phone_browser.py."""

from __future__ import annotations

import re

import pytest

from exam.web.app import create_app

AUTH = {"Authorization": "Bearer t"}
CASES = [("Q-01", "c", "critical"), ("Q-02", "c", "major")]


def get(client, path: str) -> str:
    """The page's HTML, its words kept on one line (``<span class="nowrap">``) unwrapped."""
    resp = client.get(path, headers=AUTH)
    assert resp.status_code == 200, (path, resp.status_code)
    return re.sub(r'<span class="nowrap">([^<]*)</span>', r"\1", resp.text)


def app_of(history):
    return create_app({"API_TOKEN": "t", "DB": str(history.tmp / "exam.db"), "TESTING": True})


def verdict_pill(html: str) -> tuple[str, str, str]:
    """(painted class, machine word, text) of the first verdict pill on a page."""
    m = re.search(r'<span class="verdict ([a-z]+)" data-verdict="([a-z—]+)">([^<]*)</span>', html)
    assert m, "no verdict on the page"
    return m.group(1), m.group(2), m.group(3)


@pytest.fixture
def ship_over_critical(history):
    """A change the verdict rule lets ship (40/40 → 39/40 on a critical question: a fall its
    repeats rule out) with a critical failure in the new version."""
    history.bank("A", CASES)
    history.run("A", "v1", {"Q-01": "p" * 40, "Q-02": "p" * 40})
    history.run("A", "v2", {"Q-01": "p" * 39 + "f", "Q-02": "p" * 40})
    return app_of(history).test_client()


def test_the_rule_ships_this_change(ship_over_critical):
    """The fixture's premise, from the API (the verdict machinery itself)."""
    resp = ship_over_critical.get("/api/compare?agent=A&old=v1&new=v2", headers=AUTH)
    assert resp.status_code == 200 and resp.json["verdict"] == "ship"
    assert resp.json["critical_failing"] == ["Q-01"]


@pytest.mark.parametrize("path", ["/", "/runs", "/scorecard/A/v2",
                                  "/compare?agent=A&old=v1&new=v2"])
def test_a_ship_is_never_green_over_a_critical_failure(ship_over_critical, path):
    html = get(ship_over_critical, path)
    if path == "/":
        html = html.split('data-version="v2"', 1)[1]
    elif path == "/runs":
        html = html.split('<td class="lead" data-label="run">2</td>', 1)[1]
    painted, word, text = verdict_pill(html)
    assert word == "ship"  # the word the verdict machinery gave, never another
    assert painted != "ship" and text == "ship · critical failing"
    assert re.search(r"critical failing: Q-01", html, re.I)


def test_a_ship_with_nothing_critical_failing_is_green(history):
    history.bank("A", CASES)
    history.run("A", "v1", {"Q-01": "p" * 3, "Q-02": "p" * 3})
    history.run("A", "v2", {"Q-01": "p" * 3, "Q-02": "p" * 3})
    client = app_of(history).test_client()
    for path in ("/scorecard/A/v2", "/compare?agent=A&old=v1&new=v2"):
        html = get(client, path)
        assert verdict_pill(html) == ("ship", "ship", "ship"), path
        assert "critical failing" not in html.lower()


def test_the_scorecard_says_the_verdict_the_compare_page_gives(history):
    history.bank("A", CASES)
    history.run("A", "v1", {"Q-01": "ppp", "Q-02": "ppp"})
    history.run("A", "v2", {"Q-01": "fff", "Q-02": "ppp"})
    client = app_of(history).test_client()
    card = get(client, "/scorecard/A/v2")
    compare = client.get("/compare?agent=A&new=v2", headers=AUTH).text
    word = re.search(r'<div id="verdict" class="verdict-line card" data-verdict="(\w+)"',
                     card).group(1)
    assert word == re.search(r'<div id="verdict" data-verdict="(\w+)"', compare).group(1)
    assert word != "ship"
    # the critical failure right after the verdict, then the pass rate
    assert card.index('id="verdict"') < card.index("Critical failing: Q-01") < card.index(
        'id="pass-rate"') < card.index('id="cases"')
    assert re.search(r'pass rate <b>50%</b>', card)
    first = get(client, "/scorecard/A/v1")
    assert 'data-verdict=""' in first and "No verdict: A v1 is the first version" in first


def test_identical_replies_are_one_reply_said_thirty_times(history):
    history.bank("A", CASES)
    history.run("A", "v1", {"Q-01": "p" * 30, "Q-02": "p" * 30})
    history.run("A", "v2", {"Q-01": "p" * 28 + "ff", "Q-02": "p" * 30})
    html = app_of(history).test_client().get("/question/A/Q-01", headers=AUTH).text
    assert html.count('class="reply"') == 3  # v1: one reply; v2: one passing, one failing
    assert "×30, same reply" in html and "×28, same reply" in html and "×2, same reply" in html
    assert len(re.findall(r'href="/reply/\d+/Q-01/\d+"', html)) == 60  # every reply linked
    assert re.search(r'id="outcomes">v1: <b class="pass">30/30</b> passed · v2: '
                     r'<b class="fail">28/30</b> passed', html)


def test_the_scorecard_says_each_failing_evidence_once_with_its_repeats(history):
    history.bank("A", CASES)
    history.run("A", "v1", {"Q-01": "fff", "Q-02": "ppp"})
    html = app_of(history).test_client().get("/scorecard/A/v1", headers=AUTH).text
    row = html.split("<td class=\"lead\">Q-01", 1)[1].split("</tr>", 1)[0]
    assert re.search(r'<b class="fail">fail ×3</b>', row)
    assert re.search(r'<a class="fail" href="/reply/1/Q-01/1"[^>]*>#1</a> <a[^>]*>#2</a> '
                     r'<a[^>]*>#3</a>', row)  # every reply linked once, beside its outcome
    evidence = row.split('class="evidence">', 1)[1]
    for line in ("fact[0] fail: not found in the reply", "forbidden[0] fail: asserted"):
        assert evidence.count(line) == 1, line  # said once, for the three repeats
        assert re.search(r'title="every repeat">×3</span> ' + re.escape(line), evidence)


def test_evidence_of_some_repeats_names_them(history):
    history.bank("A", CASES)
    history.run("A", "v1", {"Q-01": "fpf", "Q-02": "ppp"})
    html = app_of(history).test_client().get("/scorecard/A/v1", headers=AUTH).text
    evidence = html.split("<td class=\"lead\">Q-01", 1)[1].split('class="evidence">', 1)[1]
    assert re.match(r'<a class="fail" href="/reply/1/Q-01/1"[^>]*>#1</a> '
                    r'<a class="fail" href="/reply/1/Q-01/3"[^>]*>#3</a> fact\[0\] fail',
                    evidence)


@pytest.mark.parametrize("status", ["running", "queued"])
def test_a_page_with_a_run_not_done_reloads_itself_until_it_is(history, status):
    history.bank("A", CASES)
    run_id = history.run("A", "v1", {"Q-01": "p", "Q-02": "p"})
    history.store.set_run_status(run_id, status)
    client = app_of(history).test_client()
    page = client.get("/runs", headers=AUTH).text
    assert '<meta http-equiv="refresh" content="10">' in page
    assert re.search(rf'id="refresh">Run {run_id} .*reloads every 10 s until it is done', page,
                     re.S)
    stopped = client.get("/runs?refresh=0", headers=AUTH).text
    assert "http-equiv" not in stopped and "Reload the page to follow it" in stopped
    if status == "running":  # a scorecard reads it as it arrives: followed the same way
        card = client.get("/scorecard/A/v1", headers=AUTH).text
        assert '<meta http-equiv="refresh" content="10">' in card
    history.store.set_run_status(run_id, "done")
    done = client.get("/runs", headers=AUTH).text
    assert "http-equiv" not in done and 'id="refresh"' not in done


@pytest.mark.parametrize("method", ["GET", "POST", "PUT", "PATCH", "DELETE"])
@pytest.mark.parametrize("path", ["/no-such-page", "/scorecard/A/v1/extra", "/api/nope"])
def test_an_unknown_path_is_a_404_whatever_the_method(history, method, path):
    """Not a 400 "Form refused": no form is checked on a path no route takes."""
    client = app_of(history).test_client()
    for headers in ({}, AUTH):
        resp = client.open(path, method=method, headers=headers, data={"a": "b"})
        assert resp.status_code == 404, (method, path, resp.status_code)
    deep = client.open(path, method=method, data="[" * 1000, content_type="application/json")
    assert deep.status_code == 404


def test_a_known_path_asked_by_a_method_it_does_not_take_is_a_405(history):
    client = app_of(history).test_client()
    resp = client.post("/scorecard/A/v1", data={"a": "b"})
    assert resp.status_code == 405 and "GET" in resp.headers["Allow"]
    # a form sent to a route that takes it is still checked
    assert client.post("/runs", data={"agent": "A"}).status_code == 400


@pytest.mark.parametrize(("text", "shown"), [
    ("undecided: W3-10 3/3 → 0/3", 'undecided: <span class="nowrap">W3-10</span> 3/3 → 0/3'),
    ("<b>Q-01</b>", '&lt;b&gt;<span class="nowrap">Q-01</span>&lt;/b&gt;'),  # escaped first
    ("a-" * 20 + "b", "a-" * 20 + "b"),  # a long word may break where it must
    ("無連字號", "無連字號"),
])
def test_short_hyphenated_words_are_kept_on_one_line(text, shown):
    from markupsafe import Markup

    from exam.reports.html import unbroken

    assert unbroken(text) == Markup(shown)
    assert unbroken(Markup('<span class="still-failing">x</span>')) == Markup(
        '<span class="still-failing">x</span>')  # markup is left as it is
