"""Every dashboard page rendered through Flask's test client on the demo store.

The browser test (test_dashboard_browser.py) needs Chromium; these need nothing, so every
template is exercised on every machine.
"""

from __future__ import annotations

import re

import pytest
from flask import template_rendered

from exam.web.app import create_app
from tests.conftest import ROOT
from tests.exam.helpers import demo_copy

TOKEN = "pages-token"
TEMPLATES = ROOT / "exam" / "templates"
PAGES = ["/", "/runs", "/scorecard/W3/v2", "/compare?agent=W3&old=v1&new=v2",
         "/discrimination?agent=W2", "/review", "/login", "/reply/6/W3-10/1",
         "/question/W3/W3-10?old=v1&new=v2"]


@pytest.fixture(scope="module")
def demo_app(tmp_path_factory):
    db = demo_copy(tmp_path_factory.mktemp("pages"))
    return create_app({"API_TOKEN": TOKEN, "DB": db})


def log_in(client, token: str = TOKEN):
    form = client.get("/login").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', form)
    assert csrf, "the login form carries no CSRF token"
    return client.post("/login", data={"token": token, "csrf_token": csrf.group(1)})


@pytest.fixture
def client(demo_app):
    client = demo_app.test_client()
    resp = log_in(client)
    assert resp.status_code == 302 and resp.headers["Location"] == "/"
    return client


def page(client, path: str) -> str:
    resp = client.get(path)
    assert resp.status_code == 200, (path, resp.status_code)
    return resp.get_data(as_text=True)


def rows(html: str, table_id: str) -> list[str]:
    table = re.search(rf'<table[^>]*id="{table_id}"[^>]*>(.*?)</table>', html, re.S)
    assert table, f"no table #{table_id}"
    return re.findall(r"<tr>(.*?)</tr>", table.group(1), re.S)


def test_login_is_required(demo_app):
    client = demo_app.test_client()
    resp = client.get("/")
    assert resp.status_code == 302 and "/login" in resp.headers["Location"]
    wrong = log_in(client, "nope")
    assert wrong.status_code == 401 and "wrong token" in wrong.get_data(as_text=True)
    assert client.get("/").status_code == 302


def test_runs_page_lists_the_demo_runs(client):
    html = page(client, "/runs")
    assert len(rows(html, "runs")) == 7  # header + 6 runs
    for agent in ("W1", "W2", "W3"):
        for version in ("v1", "v2"):
            assert f'href="/scorecard/{agent}/{version}"' in html


def test_scorecard_page(client):
    html = page(client, "/scorecard/W3/v2")
    assert re.search(r'<div class="critical">\s*Critical failing: <span class="nowrap">W3-10</span>'
                     r'\s*</div>', html)
    assert len(rows(html, "cost")) == 5  # header + attempts, model calls, tokens, latency


def test_compare_puts_what_decides_the_verdict_first(client):
    html = page(client, "/compare?agent=W3&old=v1&new=v2")
    assert html.index('id="verdict"') < html.index("<h2")
    headings = re.findall(r"<h2[^>]*>(.*?)</h2>", html, re.S)
    # one repeat: W3-10's 3/3 → 0/3 story is 1/1 → 0/1 here, not evidence for a hold
    assert headings[0].strip() == "Undecided (too few repeats)"
    assert 'data-verdict="undecided"' in html
    assert "W3-10" in "".join(rows(html, "undecided"))


def test_heatmap_paints_every_cell(client):
    html = page(client, "/discrimination?agent=W2")
    section = html.split('id="heatmap-W2"', 1)[1].split("</table>", 1)[0]
    cells = re.findall(r'<td class="cell" style="background: (hsl\([^)]*\))"', section)
    assert len(cells) == 40  # 20 questions × 2 versions
    assert len(set(cells)) >= 2  # passing and failing cells are painted differently
    assert "discriminating" in section


def test_review_page_shows_the_waiting_reply_with_its_evidence(client):
    html = page(client, "/review")
    assert "review queue: 1 distinct reply in 1 cell waiting" in html
    assert '<div class="item" id="item-1">' in html and "<mark>打折</mark>" in html


def test_every_template_is_rendered(demo_app, client):
    rendered: list[str] = []

    def record(sender, template, context, **extra):
        rendered.append(template.name)

    template_rendered.connect(record, demo_app)
    try:
        for path in PAGES:
            html = page(client, path)
            assert "<header" in html and "</html>" in html  # through base.html
        refused = client.get("/share/not-a-link")  # error.html
        assert refused.status_code == 403 and "<header" in refused.get_data(as_text=True)
    finally:
        template_rendered.disconnect(record, demo_app)
    # partials (_*.html) are included, not rendered; report.html is the --format html file
    # (tests/exam/reports/test_formats.py); report_page.html the page of a report kind with
    # none of its own, which no shipped kind is (tests/exam/reports/test_report_surfaces.py)
    pages = {p.name for p in TEMPLATES.glob("*.html")} - {"base.html", "report.html",
                                                           "report_page.html"}
    pages = {p for p in pages if not p.startswith("_")}
    assert set(rendered) == pages
