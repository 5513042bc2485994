"""An excluded run is one story everywhere: it is said to be excluded, with its reason and
`exam runs include N`; never "no stored run", never a 404, never a scorecard that hides it."""

from __future__ import annotations

import os

from click.testing import CliRunner

from exam.cli.main import main
from exam.web.app import create_app

CASES = [("Q-01", "c", "critical"), ("Q-02", "c", "major")]
REASON = "agent pointed at staging"
BACK = "exam runs include 3"


def _excluded(history):
    history.bank("A", CASES)
    history.run("A", "v1", {"Q-01": "ppp", "Q-02": "ppp"})
    history.run("A", "v2", {"Q-01": "ppp", "Q-02": "ppp"})
    run_id = history.run("A", "v3", {"Q-01": "ppp", "Q-02": "ppp"})
    history.store.set_excluded(run_id, REASON)
    return run_id


def _cli(history, *args):
    env = {**os.environ, "EXAM_DB": str(history.tmp / "exam.db")}
    return CliRunner().invoke(main, list(args), env=env)


def test_compare_says_the_version_is_excluded(history):
    _excluded(history)
    for args in (("compare", "A", "v1", "v3"), ("compare", "A", "v3")):
        result = _cli(history, *args)
        assert result.exit_code == 2, result.output
        assert "no stored run" not in result.output
        assert f"run 3 (A v3): {REASON}" in result.output and BACK in result.output


def test_a_scorecard_of_an_excluded_version_says_so(history):
    _excluded(history)
    result = _cli(history, "report", "scorecard", "--agent", "A", "--version", "v3")
    assert result.exit_code == 2
    assert "is excluded" in result.output and REASON in result.output and BACK in result.output
    assert "no stored runs match" not in result.output
    by_id = _cli(history, "report", "scorecard", "--run", "3")
    assert by_id.exit_code == 0 and REASON in by_id.stderr and BACK in by_id.stderr


def test_a_notification_of_an_excluded_run_says_so_and_draws_no_verdict(history):
    run_id = _excluded(history)
    out = history.tmp / "line.json"
    result = _cli(history, "notify", "line", "--run", str(run_id), "--dry-run", "--out", str(out))
    assert result.exit_code == 0, result.output
    sent = out.read_text(encoding="utf-8")
    assert "EXCLUDED from every report" in sent and REASON in sent and BACK in sent
    assert "verdict" not in sent.lower()  # a ship drawn from an excluded run would read as one
    assert "EXCLUDED" in result.output  # the altText the preview prints


def test_the_dashboard_link_of_an_excluded_run_says_so(history):
    _excluded(history)
    app = create_app({"API_TOKEN": "t", "DB": str(history.tmp / "exam.db"), "TESTING": True})
    with app.test_client() as client:
        auth = {"Authorization": "Bearer t"}
        runs = client.get("/runs", headers=auth).text
        assert "/scorecard/A/v3" in runs
        page = client.get("/scorecard/A/v3", headers=auth)
        assert page.status_code == 200
        assert "Every run of A v3 is excluded" in page.text and REASON in page.text
        assert BACK in page.text
        overview = client.get("/", headers=auth).text
        row = overview.split('data-version="v3"', 1)[1].split("</tr>", 1)[0]
        assert "every run excluded" in row and REASON in row and BACK in row
        api = client.get("/api/compare?agent=A&new=v3", headers=auth)
        assert api.status_code == 404 and BACK in api.json["error"]


def test_a_notification_compared_to_an_excluded_version_says_so(history):
    _excluded(history)
    out = history.tmp / "line.json"
    result = _cli(history, "notify", "line", "--run", "2", "--compare-to", "v3", "--dry-run",
                  "--out", str(out))
    assert result.exit_code == 0, result.output
    sent = out.read_text(encoding="utf-8")
    assert "is excluded" in sent and BACK in sent and "no stored run" not in sent


def test_the_line_scorecard_command_says_every_run_is_excluded(history):
    from exam.notify.line_chat import command

    history.bank("A", CASES)
    run_id = history.run("A", "v1", {"Q-01": "ppp", "Q-02": "ppp"})
    history.store.set_excluded(run_id, REASON)
    said = command(history.store, ["scorecard", "A"], None, {})
    assert said.startswith("Every run of A is excluded") and REASON in said
    assert f"exam runs include {run_id}" in said
