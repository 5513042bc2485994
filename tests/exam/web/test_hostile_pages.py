"""The dashboard over a store whose every text is hostile, in a real headless browser.

An agent answers with markup (tags, attribute breakers, ``javascript:``, ``</script>``, bidi
and control characters, 5,000 characters without a space), its bank's category and case
number carry the same, and so do an exclusion reason and a review decision. Every page must
show it as text (no script runs) and never scroll sideways, on a desktop and on a phone.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote

import pytest
from werkzeug.serving import make_server

from exam.pipeline.registry import Agent
from exam.pipeline.runner import create_run, execute, job_for
from exam.store import Store
from exam.web.app import create_app
from tests.exam.web.test_dashboard_browser import chromium
from tests.fakes.server import Served

TOKEN = "hostile-pages-token"
MARKUP = " ".join([
    '<img src=x onerror="window.__ran=1">', '"><svg onload="window.__ran=2">',
    "'><script>window.__ran=3</script>", "</pre></textarea><script>window.__ran=4</script>",
    "javascript:window.__ran=5", "\u202e\u2066evil\u2069\u0007", "</title><script>window.__ran=6</script>",
])
# a name is at most 80 characters (exam.review): the markup that fits
REVIEWER = '"><svg onload="window.__ran=2"><script>window.__ran=3</script>\u202e'
LONG = "長" * 40 + "A" * 5000  # no space to break at
CASES = ["H-01", "H<b>'\"&-02", "H-03"]


class Hostile(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        order = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if order.get("behaviour") == "html":  # not JSON, with a content type that breaks out
            body, ctype = f"<html>{MARKUP}</html>".encode(), 'text/html"><script>x()</script>'
        else:  # "human": right, but 0 tokens for a model call, which a person must judge
            human = order.get("behaviour") == "human"
            said = "本店不提供貨到付款。" if human else "可以貨到付款。"
            body = json.dumps({"answer": f"{said} «{MARKUP}» {MARKUP} {LONG}", "usage": {
                "model_calls": 1, "total_tokens": 0 if human else 10}}).encode()
            ctype = "application/json"
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile")
    bank = tmp / "H.json"
    bank.write_text(json.dumps({"agent": "H", "questions": [
        {"case_no": case, "category": f"{MARKUP} {LONG[:300]}", "severity": "critical",
         "input": {"task_id": MARKUP, "question": MARKUP, "behaviour": behaviour},
         "expect_status": "ok", "expect_facts": ["不提供"],
         "expect_forbidden": ["可以貨到付款"], "budget": {"tokens": 3000}}
        for case, behaviour in zip(CASES, ["ok", "html", "human"], strict=True)]},
        ensure_ascii=False), encoding="utf-8")
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    store = Store(str(tmp / "exam.db"))
    try:
        agent = Agent(name="H", url=f"http://127.0.0.1:{server.server_port}/", bank=str(bank),
                      timeout_s=30)
        for version in ("v0", "v1", "v2"):  # v0: excluded below, with the markup as reason
            execute(store, [job_for(store, create_run(store, agent, version), agent)])
    finally:
        server.shutdown()
        server.server_close()
        store.close()
    registry = tmp / "agents.yaml"
    registry.write_text(f"agents:\n  H:\n    url: http://127.0.0.1:9/\n    bank: {bank}\n",
                        encoding="utf-8")
    app = create_app({"API_TOKEN": TOKEN, "DB": str(tmp / "exam.db"), "AGENTS": str(registry)})
    with Served(make_server("127.0.0.1", 0, app, threaded=True)) as url:
        yield url


@pytest.fixture(scope="module")
def browser(site):
    with chromium() as browser:
        yield browser


def log_in(browser, site, width: int):
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(f"{site}/login")
    page.fill("input[name=token]", TOKEN)
    page.click("button[type=submit]")
    return context, page, dialogs


@pytest.fixture(scope="module")
def planted(browser, site):
    """An exclusion reason and a review decision carrying the markup, through the forms."""
    context, page, _ = log_in(browser, site, 1280)
    page.goto(f"{site}/review")
    page.locator("input[name=reviewer]").first.fill(REVIEWER)
    page.locator("input[name=reason]").first.fill(MARKUP)
    page.locator("button[value=fail]").first.click()
    assert "stored" in page.locator("#message").inner_text()
    page.goto(f"{site}/runs")
    page.locator("form.exclude input[name=reason]").last.fill(MARKUP)  # run 1, v0
    page.locator("form.exclude button").last.click()
    context.close()


def pages() -> list[str]:
    out = ["/", "/runs", "/scorecard/H/v2", "/compare?agent=H&old=v1&new=v2", "/discrimination",
           "/review"]
    for case in CASES:
        out += [f"/reply/3/{quote(case, safe='')}/1", f"/question/H/{quote(case, safe='')}"]
    return out


@pytest.mark.parametrize("width", [1280, 390])
def test_hostile_text_runs_nothing_and_never_widens_a_page(browser, site, planted, width):
    context, page, dialogs = log_in(browser, site, width)
    wide, ran = [], []
    for path in pages():
        resp = page.goto(site + path)
        assert resp is not None and resp.status == 200, path
        if page.evaluate("window.__ran") is not None:
            ran.append(path)
        if page.evaluate("document.documentElement.scrollWidth") > width:
            wide.append(path)
    text = page.locator("main").inner_text()  # the last page: a question, shown as text
    context.close()
    assert ran == [] and dialogs == []
    assert wide == [], f"pages wider than {width} px: {wide}"
    assert "<script>window.__ran=3</script>" in text
    # bidi overrides would show the reviewer other words than the reply holds: made visible
    assert "\u202e" not in text and "\\u202e\\u2066evil\\u2069" in text
    assert re.search(r"A{1000}", text)  # the long word is there, wrapped
