"""The dashboard in a real headless browser: Debian's Chromium driven by Playwright.

`.ci/run` installs chromium, so in CI this always runs; elsewhere it skips with the reason
when no browser is found.
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


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    if CHROMIUM is None:
        pytest.skip("no Chromium found (apt-get install chromium, or set EXAM_CHROMIUM); "
                    ".ci/run installs it so CI always runs this test")
    db = tmp_path_factory.mktemp("dash") / "demo.db"
    run_demo(str(db), repeats=1, bank_dir=BANK_DIR, echo=lambda *_: None)
    app = create_app({"API_TOKEN": TOKEN, "DB": str(db)})
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


@pytest.fixture(scope="module")
def page(site):
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


def test_login_is_required(site):
    import requests

    resp = requests.get(f"{site}/", allow_redirects=False, timeout=5)
    assert resp.status_code == 302 and "/login" in resp.headers["Location"]


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
    # one repeat: W3-10's 1/1 → 0/1 is not evidence; W3-07's needs_human decides it first
    assert page.locator("#verdict").get_attribute("data-verdict") == "pending"
    assert "Verdict: PENDING" in page.locator("#verdict").inner_text()
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
