"""Runs that went wrong: shown as blocked/incomplete, retried, excluded from every report."""

from __future__ import annotations

import json
import os

import yaml
from click.testing import CliRunner

from exam.cli.main import main
from exam.store import Store
from tests.exam.helpers import write_bank
from tests.fakes.agent import FakeAgent


def invoke(*args, env):
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


def setup(tmp_path, url, behaviours):
    bank = write_bank(tmp_path, behaviours)
    registry = tmp_path / "agents.yaml"
    registry.write_text(yaml.safe_dump({"agents": {"T": {
        "url": url, "bank": str(bank), "timeout_s": 30,
        "headers": {"X-Key": "${EXAM_TEST_SECRET_KEY}"}}}}))
    env = {k: v for k, v in os.environ.items() if k != "EXAM_TEST_SECRET_KEY"}
    return {**env, "EXAM_AGENTS": str(registry), "EXAM_DB": str(tmp_path / "exam.db")}


def test_a_forgotten_secret_is_blocked_then_retried_with_the_record_kept(tmp_path):
    with FakeAgent() as fake:
        env = setup(tmp_path, fake.url, ["ok", "ok"])
        first = invoke("run", "T", "--version", "v1", "--repeats", "2", env=env)
        assert first.exit_code == 3
        runs = json.loads(invoke("runs", "--format", "json", env=env).output)
        assert runs[0]["status"] == "blocked" and runs[0]["run_status"] == {"blocked": 4}
        assert "blocked" in invoke("runs", env=env).output
        again = invoke("resume", "1", "--retry-failed", env={**env, "EXAM_TEST_SECRET_KEY": "k"})
        assert again.exit_code == 0, again.output
        assert fake.calls["ok"] == 4
    runs = json.loads(invoke("runs", "--format", "json", env=env).output)
    assert runs[0]["status"] == "done" and runs[0]["run_status"] == {"ok": 4}
    store = Store(tmp_path / "exam.db")
    earlier = store.earlier_cells(1)
    assert len(earlier) == 4 and {c["run_status"] for c in earlier} == {"blocked"}
    store.close()


def test_resume_without_retry_leaves_failed_cells_alone(tmp_path):
    with FakeAgent() as fake:
        env = setup(tmp_path, fake.url, ["ok"])
        invoke("run", "T", "--version", "v1", env=env)
        invoke("resume", "1", env={**env, "EXAM_TEST_SECRET_KEY": "k"})
        assert fake.calls["ok"] == 0
    assert json.loads(invoke("runs", "--format", "json", env=env).output)[0]["status"] == "blocked"


def test_an_excluded_run_leaves_every_report_and_stays_listed(tmp_path):
    with FakeAgent() as fake:
        env = setup(tmp_path, fake.url, ["ok", "ok"])
        env_ok = {**env, "EXAM_TEST_SECRET_KEY": "k"}
        invoke("run", "T", "--version", "v1", "--repeats", "3", env=env_ok)
        invoke("run", "T", "--version", "v2", "--repeats", "3", env=env_ok)
        invoke("run", "T", "--version", "v2", "--repeats", "3", env=env)  # forgotten secret
    assert invoke("compare", "T", "v1", "v2", env=env).exit_code == 3
    out = invoke("runs", "exclude", "3", "--reason", "forgot the secret", env=env)
    assert out.exit_code == 0
    listed = json.loads(invoke("runs", "--format", "json", env=env).output)
    assert listed[0]["status"] == "excluded"
    assert listed[0]["excluded_reason"] == "forgot the secret"
    result = invoke("compare", "T", "v1", "v2", "--format", "json", env=env)
    report = json.loads(result.output)
    assert report["verdict"] == "ship" and report["new_run_ids"] == [2]
    card = json.loads(invoke("report", "scorecard", "--version", "v2", "--format", "json",
                             env=env).output)
    assert card["scorecards"][0]["run_ids"] == [2]
    invoke("runs", "include", "3", env=env)
    assert invoke("compare", "T", "v1", "v2", env=env).exit_code == 3


def test_exclude_needs_a_reason_and_a_known_run(tmp_path):
    env = {**os.environ, "EXAM_DB": str(tmp_path / "exam.db")}
    assert invoke("runs", "exclude", "9", "--reason", "x", env=env).exit_code == 2
    assert invoke("runs", "exclude", "9", "--reason", " ", env=env).exit_code == 2


def test_run_against_exits_with_the_verdict(tmp_path):
    with FakeAgent() as fake:
        env = setup(tmp_path, fake.url, ["ok", "ok"])
        env_ok = {**env, "EXAM_TEST_SECRET_KEY": "k"}
        assert invoke("run", "T", "-v", "v1", "-n", "3", env=env_ok).exit_code == 0
        blocked = invoke("run", "T", "-v", "v2", "-n", "3", "--against", "v1", env=env)
        assert blocked.exit_code == 3 and "VERDICT: INCOMPLETE" in blocked.output
        fine = invoke("run", "T", "-v", "v3", "-n", "3", "--against", "v1", env=env_ok)
        assert fine.exit_code == 0 and "VERDICT: SHIP" in fine.output
        bad = invoke("run", "T", "-v", "v4", "--against", "nope", env=env_ok)
        assert bad.exit_code == 2 and "no stored run of T version 'nope'" in bad.output


def test_run_against_its_own_label_is_refused_before_any_run(tmp_path):
    # a first run of v2 against v2 found itself as the stored v2 and compared every cell
    # with itself: ship, whatever it answered
    with FakeAgent() as fake:
        env = {**setup(tmp_path, fake.url, ["ok", "ok"]), "EXAM_TEST_SECRET_KEY": "k"}
        same = invoke("run", "T", "-v", "v2", "--against", "v2", env=env)
        assert same.exit_code == 2 and "VERDICT" not in same.output
        assert "version against itself" in same.output
        unknown = invoke("run", "T", "-v", "v2", "--against", "v1", env=env)
        assert unknown.exit_code == 2
        assert not fake.requests  # no agent call was spent
        # nothing left behind: an empty v2 run would make every later v2 compare incomplete
        assert json.loads(invoke("runs", "--format", "json", env=env).output) == []
