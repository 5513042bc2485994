"""The dashboard in a real headless browser: Debian's Chromium driven by Playwright.

`.ci/run` installs chromium, so in CI this always runs: there (``CI=true``) a missing browser
is a failure, never a silent skip. Elsewhere the browser tests skip with the reason. The login
check needs no browser, and every page is also rendered through Flask's test client
(test_dashboard_pages.py).
"""

from __future__ import annotations

import os
import shutil
import threading

import pytest
from werkzeug.serving import make_server

from exam.app import create_app
from exam.demo.main import run_demo
from tests.conftest import BANK_DIR, ROOT

TOKEN = "browser-token"
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
    db = tmp_path_factory.mktemp("dash") / "demo.db"
    run_demo(str(db), repeats=1, bank_dir=BANK_DIR, echo=lambda *_: None)
    app = create_app({"API_TOKEN": TOKEN, "DB": str(db)})
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def page(site):
    need_browser(CHROMIUM)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(f"{site}/login")
        page.fill("input[name=token]", TOKEN)
        page.click("button[type=submit]")
        yield page
        browser.close()


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
    page.goto(f"{site}/")
    assert page.locator("#runs tr").count() == 7  # header + 6 runs
    assert page.get_by_text("W3").first.is_visible()


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


def test_log_out_from_the_page(page, site):
    page.goto(f"{site}/")
    page.click("header button")
    assert page.url.endswith("/login")
    page.goto(f"{site}/")
    assert "/login" in page.url
