"""What LINE links open, on a phone: the pages in Debian's Chromium at 390 px.

Each page must hold three things a person reading it on a phone meets at once: no short
token (a status, a figure like 0/30, a content type) broken inside itself across two lines;
nothing wider than the screen, in a table that scrolls sideways or not; and no more than
300 KB of HTML (the whole page: styles and charts are inline, the CSP loads nothing else).
The checks themselves are shown to catch each fault on a page made to have it.
"""

from __future__ import annotations

import time
from dataclasses import replace

import pytest
from werkzeug.serving import make_server

from exam.web.app import create_app
from tests.conftest import BANK_DIR, ROOT
from tests.exam.helpers import demo_copy
from tests.exam.web.test_dashboard_browser import chromium
from tests.fakes.server import Served

TOKEN = "phone-token"
WIDTH = 390
WEIGHT_BUDGET = 300 * 1024  # bytes of HTML a page may weigh (issue 35)
ARTIFACTS = ROOT / "tests" / "artifacts"
SAME = 30  # identical replies to one question in the added run

# short words (needs_human, 0/30, application/json, W3-10, 1,386: a run of characters between
# spaces, not Chinese, of 2 to 24) never wrap inside themselves. A longer one (a digest, a
# URL, a raw body's escapes) may break where it must; Chinese breaks between characters.
BROKEN_TOKENS = r"""() => {
  const found = [];
  const token = /[^\s\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef]{2,}/g;
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.data;
    token.lastIndex = 0;
    for (let m = token.exec(text); m; m = token.exec(text)) {
      if (m[0].length > 24) continue;
      const range = document.createRange();
      let firstTop = null;
      for (let i = 0; i < m[0].length; i++) {
        range.setStart(node, m.index + i);
        range.setEnd(node, m.index + i + 1);
        const box = Array.from(range.getClientRects()).find(r => r.width > 0);
        if (!box) continue;  // not laid out (a closed <details>, display:none)
        if (firstTop === null) { firstTop = box.top; continue; }
        if (Math.abs(box.top - firstTop) > 2) {
          const prev = m[0][i - 1], next = m[0][i];
          // a break after a hyphen before a letter is a hyphenation point (non-empty)
          if (!(prev === '-' && /[A-Za-z]/.test(next))) {
            found.push(m[0].slice(0, i) + '|' + m[0].slice(i));
          }
          break;
        }
      }
    }
  }
  return found;
}"""

# every element laid out beyond the screen's edges: what a person would have to scroll
# sideways to read, whether the page scrolls or a table inside it does
TOO_WIDE = r"""(width) => {
  const found = [];
  for (const el of document.querySelectorAll('body *')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    if (r.right > width + 1 || r.left < -1) {
      const name = el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
        (el.className && typeof el.className === 'string' ? '.' + el.className.split(' ').join('.') : '');
      found.push(`${name} ${Math.round(r.left)}..${Math.round(r.right)}: ` +
                 (el.textContent || '').trim().slice(0, 40));
    }
  }
  return found;
}"""


def phone_faults(page, body: bytes) -> list[str]:
    """What is wrong with the page now open in ``page`` at WIDTH px (``body``: its HTML)."""
    faults = []
    wide = page.evaluate("document.documentElement.scrollWidth")
    if wide > WIDTH:
        faults.append(f"the page is {wide} px wide")
    faults += [f"wider than the screen: {x}" for x in page.evaluate(TOO_WIDE, WIDTH)[:10]]
    faults += [f"broken inside a word: {x}" for x in page.evaluate(BROKEN_TOKENS)[:10]]
    if len(body) > WEIGHT_BUDGET:
        faults.append(f"{len(body) / 1024:.0f} KB of HTML, over the {WEIGHT_BUDGET // 1024} KB "
                      "budget")
    return faults


def _same_replies_run(db: str) -> int:
    """W3 v3: W3-10 asked SAME times, every reply the words v2 gave (copied from its cell)."""
    from exam.pipeline.registry import Agent
    from exam.pipeline.runner import create_run
    from exam.records import AttemptRow
    from exam.store import Store

    store = Store(db)
    try:
        v2 = next(r for r in store.list_runs("W3") if r.version == "v2")
        cell = next(c for c in store.cells([v2.id]) if c.case_no == "W3-10")
        agent = Agent(name="W3", url="http://127.0.0.1:9/", bank=str(BANK_DIR / "W3.json"))
        run_id = create_run(store, agent, "v3", repeats=SAME, only=["W3-10"],
                            source="dashboard")  # a word that broke as dashboar|d at 1280 px
        for n in range(1, SAME + 1):
            store.record_cell(
                replace(cell, run_id=run_id, repeat=n, latency_ms=150.0 + n,
                        completed_at=time.time()),
                [AttemptRow(1, time.time(), 200, 150.0 + n, "", "application/json",
                            '{"answer": "same"}', 18, False)])
        store.set_run_status(run_id, "done")
        return run_id
    finally:
        store.close()


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    folder = tmp_path_factory.mktemp("phone")
    db = demo_copy(folder)
    runs = {"v3": _same_replies_run(db)}
    app = create_app({"API_TOKEN": TOKEN, "DB": db})
    with Served(make_server("127.0.0.1", 0, app, threaded=True)) as url:
        yield url, runs


@pytest.fixture(scope="module")
def browser(site):
    with chromium() as browser:
        yield browser


@pytest.fixture(scope="module")
def phone(browser, site):
    url, _ = site
    context = browser.new_context(viewport={"width": WIDTH, "height": 844}, is_mobile=True)
    page = context.new_page()
    page.goto(f"{url}/login")
    page.fill("input[name=token]", TOKEN)
    page.click("button[type=submit]")
    yield page
    context.close()


PAGES = {
    "overview": "/",
    "runs": "/runs",
    "scorecard": "/scorecard/W3/v2",
    "compare": "/compare?agent=W3&old=v1&new=v2",
    "question": "/question/W3/W3-10?old=v1&new=v2",
    "question-30-same": "/question/W3/W3-10?old=v2&new=v3",
    "reply": "/reply/6/W3-10/1",
}


@pytest.mark.parametrize("name", list(PAGES))
def test_a_page_reads_on_a_phone(phone, site, name):
    url, _ = site
    resp = phone.goto(url + PAGES[name])
    assert resp is not None and resp.status == 200
    faults = phone_faults(phone, resp.body())
    ARTIFACTS.mkdir(exist_ok=True)
    phone.screenshot(path=str(ARTIFACTS / f"phone-{name}.png"), full_page=True)
    assert faults == [], f"{name} at {WIDTH} px: " + "; ".join(faults)


def test_no_word_breaks_at_desktop_width_either(browser, site):
    url, _ = site
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(f"{url}/login")
    page.fill("input[name=token]", TOKEN)
    page.click("button[type=submit]")
    broken = {}
    for name, path in PAGES.items():
        page.goto(url + path)
        broken[name] = page.evaluate(BROKEN_TOKENS)
    context.close()
    assert broken == {name: [] for name in PAGES}


def _on_first_screen(page, selector: str) -> bool:
    box = page.locator(selector).first.bounding_box()
    return box is not None and box["y"] + box["height"] <= 844 and box["x"] + box["width"] <= WIDTH


@pytest.mark.parametrize(("path", "verdict"), [
    ("/scorecard/W3/v2", "#verdict .verdict"),
    ("/compare?agent=W3&old=v1&new=v2", "#verdict .verdict"),
    ("/", "#agent-W1 tr[data-version=v2] .verdict"),
    ("/runs", "#runs .verdict"),
])
def test_the_verdict_is_on_the_first_screen(phone, site, path, verdict):
    url, _ = site
    phone.goto(url + path)
    assert _on_first_screen(phone, verdict), f"{path}: {verdict} is not on the first screen"


def test_the_scorecard_says_verdict_critical_failure_and_pass_rate_first(phone, site):
    url, _ = site
    phone.goto(f"{url}/scorecard/W3/v2")
    for selector in ("#verdict", ".critical", "#pass-rate"):
        assert _on_first_screen(phone, selector), selector
    assert phone.locator("#verdict").get_attribute("data-verdict") == "undecided"
    assert "Critical failing: W3-10" in phone.locator(".critical").inner_text()


def test_thirty_identical_replies_are_one_reply_on_a_phone(phone, site):
    url, _ = site
    phone.goto(f"{url}/question/W3/W3-10?old=v2&new=v3")
    column = phone.locator("#version-v3")
    assert column.locator(".reply").count() == 1
    assert f"×{SAME}, same reply" in column.inner_text()
    height = phone.evaluate("document.documentElement.scrollHeight")
    assert height < 4000, f"the page is {height} px tall"  # 30 replies in full: ~15,000
    column.locator("details.same summary").click()  # the other 29, each a link
    assert column.locator("details.same li a").count() == SAME - 1
    column.locator("details.same li a").first.click()
    assert "/reply/" in phone.url and phone.locator("#verdict").count() == 1


def test_a_share_link_opens_the_scorecard_readable_on_a_phone(browser, site):
    """What a LINE Scorecard button opens: no login; verdict first; nothing to scroll."""
    from exam.share import make_link, secret_key

    url, _ = site
    link = make_link(secret_key(None, TOKEN), url, "/scorecard/W3/v2", days=1)
    context = browser.new_context(viewport={"width": WIDTH, "height": 844}, is_mobile=True)
    page = context.new_page()
    resp = page.goto(link)
    assert page.url == f"{url}/scorecard/W3/v2" and page.locator("#role").inner_text() == "shared"
    assert phone_faults(page, resp.body()) == []
    assert _on_first_screen(page, "#verdict") and page.locator("#verdict a").count() == 0
    page.locator("#cases a").first.click()  # a reply it links to: readable too
    reply = page.goto(page.url)
    assert phone_faults(page, reply.body()) == []
    context.close()


# -- the checks catch what they are for -------------------------------------------------

FAULTY = """<!doctype html><html><head><meta name="viewport" content="width=device-width">
<style>body { margin: 0; font: 14px sans-serif; } td { border: 1px solid; }</style></head><body>
<table><tr><td style="overflow-wrap: anywhere; width: 1px">{cell}</td>
<td style="white-space: nowrap">{wide}</td></tr></table>{extra}</body></html>"""


@pytest.mark.parametrize(("cell", "wide", "extra", "fault"), [
    ("incomplete", "", "", "broken inside a word: "),
    ("0/30", "", "", "broken inside a word: "),
    ("ok", "x" * 200, "", "wider than the screen: "),
    ("ok", "", "<p>" + "y" * (WEIGHT_BUDGET + 1) + "</p>", "KB of HTML, over the 300 KB"),
])
def test_the_phone_checks_catch_each_fault(browser, cell, wide, extra, fault):
    context = browser.new_context(viewport={"width": WIDTH, "height": 844}, is_mobile=True)
    page = context.new_page()
    html = FAULTY.replace("{cell}", cell).replace("{wide}", wide).replace("{extra}", extra)
    page.set_content(html)
    faults = phone_faults(page, html.encode())
    context.close()
    assert any(fault in f for f in faults), faults


def test_the_phone_checks_pass_a_page_without_faults(browser):
    context = browser.new_context(viewport={"width": WIDTH, "height": 844}, is_mobile=True)
    page = context.new_page()
    html = FAULTY.replace("{cell}", "needs_human").replace("{wide}", "0/30").replace(
        "{extra}", "<p>non-" + "empty " * 200 + "</p>").replace("width: 1px", "")
    page.set_content(html)
    assert phone_faults(page, html.encode()) == []
    context.close()
