"""The dashboard in a real headless browser: Debian's Chromium driven by Playwright.

`.ci/run` installs chromium, so in CI this always runs: there (``CI=true``) a missing browser
is a failure, never a silent skip. Elsewhere the browser tests skip with the reason. The login
check needs no browser, and every page is also rendered through Flask's test client
(test_dashboard_pages.py).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from werkzeug.serving import make_server

from exam.web.app import create_app
from tests.conftest import BANK_DIR, ROOT
from tests.exam.helpers import demo_copy
from tests.fakes.server import Served

TOKEN = "browser-token"
VIEWER = "browser-viewer-token"
DB: dict[str, str] = {}
ARTIFACTS = ROOT / "tests" / "artifacts"
CHROMIUM = os.environ.get("EXAM_CHROMIUM") or shutil.which("chromium") or shutil.which(
    "chromium-browser")


def need_browser(chromium: str | None, env=os.environ) -> None:
    """Skip without a browser, except in CI, where not checking the pages is a failure."""
    if chromium:
        return
    why = "no Chromium found (apt-get install chromium, or set EXAM_CHROMIUM)"
    if env.get("CI", "").lower() in ("true", "1"):
        pytest.fail(f"{why}: in CI (CI=true) the dashboard must be checked in a real browser; "
                    ".ci/run installs chromium", pytrace=False)
    pytest.skip(f"{why}; .ci/run installs it, and in CI a missing browser fails")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    folder = tmp_path_factory.mktemp("dash")
    db = demo_copy(folder)
    registry = folder / "agents.yaml"  # a run queued from the page is never executed here
    registry.write_text(f"agents:\n  W1:\n    url: http://127.0.0.1:9/\n"
                        f"    bank: {BANK_DIR / 'W1.json'}\n", encoding="utf-8")
    DB["path"] = str(db)
    app = create_app({"API_TOKEN": TOKEN, "VIEWER_TOKEN": VIEWER, "DB": str(db),
                      "AGENTS": str(registry)})
    with Served(make_server("127.0.0.1", 0, app, threaded=True)) as url:
        yield url


@contextmanager
def chromium() -> Iterator:
    """Debian's Chromium, headless, driven by Playwright; missing, the test fails (never skips)."""
    need_browser(CHROMIUM)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"])
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def browser(site):
    with chromium() as browser:
        yield browser


@pytest.fixture(scope="module")
def page(browser, site):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{site}/login")
    page.fill("input[name=token]", TOKEN)
    page.click("button[type=submit]")
    yield page
    page.close()


def test_login_is_required(site):  # over real HTTP, no browser needed
    import requests

    resp = requests.get(f"{site}/", allow_redirects=False, timeout=30)
    assert resp.status_code == 302 and "/login" in resp.headers["Location"]


@pytest.mark.parametrize(("chromium", "env", "outcome"), [
    ("/usr/bin/chromium", {"CI": "true"}, None),
    (None, {"CI": "true"}, pytest.fail.Exception),
    (None, {}, pytest.skip.Exception),
])
def test_a_missing_browser_fails_in_ci_and_skips_elsewhere(chromium, env, outcome):
    if outcome is None:
        need_browser(chromium, env)
        return
    with pytest.raises(outcome, match="no Chromium found"):
        need_browser(chromium, env)


def test_runs_page_lists_the_demo_runs(page, site):
    page.goto(f"{site}/runs")
    assert page.locator("#runs tr").count() == 7  # header + 6 runs
    assert page.locator("#runs").get_by_text("W3").first.is_visible()


def test_scorecard_page(page, site):
    page.goto(f"{site}/scorecard/W3/v2")
    assert "Critical failing: W3-10" in page.locator(".critical").inner_text()
    assert page.locator("#cost tr").count() == 5


def test_compare_puts_the_verdict_first(page, site):
    page.goto(f"{site}/compare?agent=W3&old=v1&new=v2")
    # one repeat: W3-10's 1/1 → 0/1 is not evidence, and v2 leaves nothing to review
    assert page.locator("#verdict").get_attribute("data-verdict") == "undecided"
    assert "Verdict: UNDECIDED" in page.locator("#verdict").inner_text()
    headings = page.locator("h2").all_inner_texts()
    assert headings[0] == "Undecided (too few repeats)"
    assert "W3-10" in page.locator("#undecided").inner_text()


def test_heatmap_renders(page, site):
    ARTIFACTS.mkdir(exist_ok=True)
    page.goto(f"{site}/discrimination?agent=W2")
    cells = page.locator("#heatmap-W2 td.cell")
    assert cells.count() == 40  # 20 questions × 2 versions
    colours = {cells.nth(i).evaluate("e => getComputedStyle(e).backgroundColor")
               for i in range(cells.count())}
    assert len(colours) >= 2  # passing and failing cells are painted differently
    assert "discriminating" in page.locator("#heatmap-W2").inner_text()
    page.screenshot(path=str(ARTIFACTS / "discrimination-heatmap.png"), full_page=True)
    assert (ARTIFACTS / "discrimination-heatmap.png").stat().st_size > 10_000


def test_a_review_decision_from_the_page_is_stored(page, site):
    # the form's CSRF token and the browser's own Origin header let it through
    page.goto(f"{site}/review")
    first = page.locator(".item").first
    case = first.locator("b").inner_text()
    first.locator("input[name=reviewer]").fill("Mei")
    first.locator("button[value=pass]").click()
    assert page.locator("#message").inner_text() == f"{case.split()[1]}: pass stored"


def test_log_out_from_the_page(browser, site):
    page = browser.new_page()
    page.goto(f"{site}/login")
    page.fill("input[name=token]", TOKEN)
    page.click("button[type=submit]")
    page.goto(f"{site}/runs")
    page.click("header button")
    assert page.url.endswith("/login")
    page.goto(f"{site}/")
    assert "/login" in page.url
    page.close()


# -- every page, at desktop and phone width -------------------------------------------

PAGES = {
    "overview": "/",
    "runs": "/runs",
    "runs-filtered": "/runs?agent=W3&version=v2",
    "scorecard": "/scorecard/W3/v2",
    "compare": "/compare?agent=W3&old=v1&new=v2",
    "discrimination": "/discrimination",
    "review": "/review",
    "reply": "/reply/{run}/W3-10/1",
    "question": "/question/W3/W3-10?old=v1&new=v2",
    "login": "/login",
}


def _watch(page) -> list[str]:
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    return errors


@pytest.fixture(scope="module")
def w3_v2_run(site):
    import requests

    runs = requests.get(f"{site}/api/runs?agent=W3", timeout=5,
                        headers={"Authorization": f"Bearer {TOKEN}"}).json()["runs"]
    return next(r["run_id"] for r in runs if r["version"] == "v2")


@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize("name", list(PAGES))
def test_every_page_opens_cleanly(browser, site, w3_v2_run, name, width):
    ARTIFACTS.mkdir(exist_ok=True)
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    errors = _watch(page)
    page.goto(f"{site}/login")
    page.fill("input[name=token]", TOKEN)
    page.click("button[type=submit]")
    resp = page.goto(site + PAGES[name].format(run=w3_v2_run))
    assert resp is not None and resp.status == 200
    page.wait_for_load_state("load")
    # usable on a phone: the page itself never scrolls sideways (wide tables scroll inside)
    overflow = page.evaluate("document.documentElement.scrollWidth")
    assert overflow <= width, f"{name} is {overflow} px wide at {width} px"
    header = page.locator("header").bounding_box()
    assert header is not None and header["width"] <= width
    page.screenshot(path=str(ARTIFACTS / f"{name}-{width}.png"), full_page=True)
    context.close()
    assert errors == []


def test_overview_shows_each_version_with_interval_verdict_and_charts(page, site):
    page.goto(f"{site}/")
    table = page.locator("#agent-W3 table.versions")
    rows = table.locator("tr")
    assert rows.count() == 3  # header + v1 + v2
    v2 = rows.nth(2).inner_text()
    assert "v2" in v2 and "–" in v2 and "vs v1" in v2
    assert page.locator("#agent-W3 figure.chart svg").count() == 4
    assert page.locator("#agent-W3 .verdict").count() == 1


def test_reply_viewer_marks_the_deciding_words_and_shows_chinese(page, site, w3_v2_run):
    page.goto(f"{site}/scorecard/W3/v2")
    page.locator("#cases tr", has_text="W3-10").locator("a").first.click()
    assert "/reply/" in page.url
    assert page.locator(".reply mark").count() >= 1
    order = page.locator("#work-order").inner_text()
    assert "\\u" not in order and any("\u4e00" <= ch <= "\u9fff" for ch in order)
    page.locator("#attempts summary").first.click()
    assert page.locator("#attempts pre.raw").first.is_visible()


def test_compare_links_old_and_new_replies_side_by_side(page, site):
    page.goto(f"{site}/compare?agent=W3&old=v1&new=v2")
    page.locator("#undecided a", has_text="W3-10").click()
    assert page.locator("#version-v1 .reply").count() >= 1
    assert page.locator("#version-v2 .reply").count() >= 1
    left = page.locator("#version-v1").bounding_box()
    right = page.locator("#version-v2").bounding_box()
    assert left and right and right["x"] > left["x"] + 100  # beside, not below


def test_heatmap_links_to_the_replies(page, site):
    page.goto(f"{site}/discrimination?agent=W2")
    page.locator("#heatmap-W2 td.cell a").first.click()
    assert "/question/W2/" in page.url and page.locator(".reply").count() >= 1


def test_a_share_link_opens_the_scorecard_on_a_phone_without_a_token(browser, site):
    """What the LINE Scorecard button does: a signed link, no login, read-only."""
    from exam.share import make_link, secret_key

    link = make_link(secret_key(None, TOKEN), site, "/scorecard/W3/v2", days=1)
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    page = context.new_page()
    errors = _watch(page)
    page.goto(link)
    assert page.url == f"{site}/scorecard/W3/v2"
    assert page.locator("h1").first.inner_text().startswith("W3")
    assert page.locator("#role").inner_text() == "shared"
    assert page.locator("#share").count() == 0  # a share link cannot mint links
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.screenshot(path=str(ARTIFACTS / "share-link-scorecard-390.png"))
    page.locator("#cases a").first.click()  # a reply the scorecard links to opens
    assert "/reply/" in page.url and page.locator("#verdict").count() == 1
    opened = list(errors)  # the 403 below is logged as a failed load: it is meant
    assert page.goto(f"{site}/runs").status == 403  # the rest of the dashboard does not
    context.close()
    assert opened == []


def test_a_leaked_link_revoked_from_the_scorecard_page_closes_on_the_phone(page, browser, site):
    """The admin pastes the leaked link into the scorecard page's form; the phone that opened
    it is shown why at its next load, and the admin's page says what was revoked."""
    from exam.share import make_link, secret_key

    link = make_link(secret_key(None, TOKEN), site, "/scorecard/W1/v2", days=1)
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    phone = context.new_page()
    phone.goto(link)
    assert phone.locator("#role").inner_text() == "shared"
    assert phone.locator("#revoke").count() == 0  # a share link cannot revoke either
    page.goto(f"{site}/scorecard/W1/v2")
    page.locator("#revoke summary").click()
    page.fill("#revoke-link input[name=link]", link)
    page.fill("#revoke-link input[name=reason]", "forwarded outside the group")
    page.locator("#revoke-link button").click()
    assert page.url == f"{site}/scorecard/W1/v2"
    assert "is revoked, on every instance" in page.locator("#message").inner_text()
    page.locator("#revoke summary").click()
    assert "(forwarded outside the group)" in page.locator("#revoked").inner_text()
    assert phone.reload().status == 403
    assert phone.locator("h1").inner_text() == "Link revoked"
    assert "forwarded" not in phone.content()
    phone.screenshot(path=str(ARTIFACTS / "share-link-revoked-390.png"))
    context.close()


def test_a_viewer_reads_but_has_no_forms(browser, site):
    context = browser.new_context(viewport={"width": 390, "height": 800})
    page = context.new_page()
    errors = _watch(page)
    page.goto(f"{site}/login")
    page.fill("input[name=token]", VIEWER)
    page.click("button[type=submit]")
    page.goto(f"{site}/runs")
    assert page.locator("#role").inner_text() == "viewer"
    assert page.locator("#runs tr").count() >= 7
    assert page.locator("#start-run").count() == 0
    page.goto(f"{site}/review")
    assert page.locator("form[method=post]").count() == 1  # only "Log out"
    page.screenshot(path=str(ARTIFACTS / "runs-viewer-390.png"), full_page=True)
    context.close()
    assert errors == []


# markup that runs a script wherever one may run: what a reply that slipped past escaping
# would be. An image that fails to load fires onerror (blocked by the CSP or a 404 alike).
INJECTED = """document.body.insertAdjacentHTML('beforeend',
    '<img id="injected" src="x.png" onerror="window.__ran = 1">'); 0"""


def _runs_nothing_injected(page) -> bool:
    page.evaluate(INJECTED)
    page.wait_for_function("document.getElementById('injected').complete")
    page.wait_for_timeout(100)  # the error event, had its handler been allowed
    return page.evaluate("window.__ran") is None


def test_the_browser_runs_no_script_a_page_did_not_mean(page, site):
    """The CSP (default-src 'none'): markup injected into a dashboard page runs nothing."""
    page.goto(f"{site}/runs")
    assert _runs_nothing_injected(page)


@pytest.mark.parametrize("kind,args", [
    ("scorecard", ["report", "scorecard", "--agent", "W3", "--version", "v2"]),
    ("compare", ["compare", "W3", "v1", "v2", "--fail-on", "never"]),
    ("discrimination", ["report", "discrimination", "--agent", "W2"]),
    ("rebalance", ["report", "rebalance", "--agent", "W2"]),
])
def test_the_html_report_opens_from_a_file_offline_with_its_charts(browser, site, tmp_path,
                                                                    kind, args):
    from click.testing import CliRunner

    from exam.cli.main import main

    db = DB["path"]
    result = CliRunner().invoke(main, [*args, "--format", "html", "--db", db])
    assert result.exit_code == 0, result.output
    path = tmp_path / f"{kind}.html"
    path.write_text(result.output, encoding="utf-8")
    context = browser.new_context(offline=True, viewport={"width": 1280, "height": 900})
    requested: list[str] = []
    context.on("request", lambda r: requested.append(r.url))
    page = context.new_page()
    errors = _watch(page)
    page.goto(path.as_uri())
    assert page.locator("figure.chart svg").count() >= 1
    box = page.locator("figure.chart svg").first.bounding_box()
    assert box and box["width"] > 200 and box["height"] > 80
    assert page.locator("figure.chart svg rect, figure.chart svg path").count() > 5
    assert page.locator("script").count() == 0  # the charts' too: "no script" is true
    page.screenshot(path=str(ARTIFACTS / f"report-{kind}.png"), full_page=True)
    opened = list(errors)  # the refusal below is logged as an error: it is meant
    assert _runs_nothing_injected(page)  # the file's own CSP, wherever it is opened or served
    context.close()
    assert [u for u in requested if not u.startswith("file://")] == []
    assert opened == []


def test_an_admin_starts_a_run_from_the_runs_page(page, site):
    # last in this file: it adds a queued run to the shared store
    page.goto(f"{site}/runs")
    before = page.locator("#runs tr").count()
    page.locator("#start-run summary").click()
    page.select_option("#start-run select[name=agent]", "W1")
    page.fill("#start-run input[name=version]", "v9")
    page.fill("#start-run input[name=repeats]", "2")
    page.locator("#start-run button").click()
    assert page.locator("#message").inner_text().endswith("queued: W1 v9 × 2")
    assert page.locator("#runs tr").count() == before + 1
    assert "queued" in page.locator("#runs tr").nth(1).inner_text()
