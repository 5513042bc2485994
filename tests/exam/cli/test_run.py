"""`exam run` / `exam report scorecard` / `exam runs` end to end against a fake agent."""

from __future__ import annotations

import json

import yaml
from click.testing import CliRunner

from exam.cli.main import main
from tests.exam.helpers import write_bank
from tests.fakes.agent import FakeAgent


def invoke(*args, env=None):
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


def setup(tmp_path, url, behaviours, **agent):
    bank = write_bank(tmp_path, behaviours)
    registry = tmp_path / "agents.yaml"
    registry.write_text(yaml.safe_dump({"agents": {"T": {"url": url, "bank": str(bank),
                                                         "timeout_s": 30, **agent}}}))
    return {"EXAM_AGENTS": str(registry), "EXAM_DB": str(tmp_path / "exam.db")}


def test_run_prints_the_scorecard_json_shape(tmp_path):
    with FakeAgent() as fake:
        env = setup(tmp_path, fake.url, ["ok", "ok", "status-500"])
        result = invoke("run", "T", "--version", "v1", "--repeats", "2", "--format", "json",
                        env=env)
    assert result.exit_code == 3  # one question never answered: infrastructure, not content
    out = json.loads(result.output)
    card = out["scorecards"][0]
    assert out["grader_version"]
    assert {k: card[k] for k in ("agent", "version", "run_ids", "questions", "repeats")} == {
        "agent": "T", "version": "v1", "run_ids": [1], "questions": 3, "repeats": 2}
    assert card["verdicts"] == {"pass": 4, "needs_human": 0, "fail": 0, "not_graded": 0}
    assert card["run_status"]["http_error"] == 2 and card["run_status"]["ok"] == 4
    case = next(c for c in card["cases"] if c["case_no"] == "T-01")
    cell = case["cells"][0]
    assert {"repeat", "run_status", "verdict", "attempts", "model_calls", "tokens", "latency_ms",
            "checks"} <= set(cell)
    assert cell["model_calls"] == 2 and cell["tokens"] == 1000


def test_run_exit_1_on_a_failed_verdict(tmp_path):
    with FakeAgent() as fake:
        env = setup(tmp_path, fake.url, ["ok"])
        # the fake answers 備貨中; make the bank expect something else
        bank = json.loads((tmp_path / "T.json").read_text())
        bank["questions"][0]["expect_facts"] = ["已出貨"]
        (tmp_path / "T.json").write_text(json.dumps(bank, ensure_ascii=False))
        result = invoke("run", "T", "--version", "v1", env=env)
    assert result.exit_code == 1
    assert "FAIL       T-01" in result.output
    assert "- 已出貨" in result.output


def test_unknown_agent_is_a_clear_input_error(tmp_path):
    env = setup(tmp_path, "http://127.0.0.1:9/x", ["ok"])
    result = invoke("run", "W9", "--version", "v1", env=env)
    assert result.exit_code == 2
    assert "no agent named 'W9' (agents: T)" in result.output


def test_unknown_only_case_is_a_clear_input_error(tmp_path):
    env = setup(tmp_path, "http://127.0.0.1:9/x", ["ok"])
    result = invoke("run", "T", "--version", "v1", "--only", "T-99", env=env)
    assert result.exit_code == 2 and "no question 'T-99'" in result.output


def test_report_regrades_with_todays_bank_and_flags_the_change(tmp_path):
    with FakeAgent() as fake:
        env = setup(tmp_path, fake.url, ["ok"])
        invoke("run", "T", "--version", "v1", env=env)
    bank = json.loads((tmp_path / "T.json").read_text())
    bank["questions"][0]["expect_forbidden"] = ["備貨中"]
    (tmp_path / "T.json").write_text(json.dumps(bank, ensure_ascii=False))
    result = invoke("report", "scorecard", "--format", "json", env=env)
    card = json.loads(result.output)["scorecards"][0]
    assert card["verdicts"]["fail"] == 1  # today's rubric, not the stored grade
    assert card["changed_questions"] == ["T-01"]
    text = invoke("report", "scorecard", env=env).output
    assert "rubric changed since the run for T-01" in text


def test_runs_lists_runs(tmp_path):
    with FakeAgent() as fake:
        env = setup(tmp_path, fake.url, ["ok"])
        invoke("run", "T", "--version", "v1", env=env)
        invoke("run", "T", "--version", "v2", env=env)
    rows = json.loads(invoke("runs", "--format", "json", env=env).output)
    assert [(r["id"], r["version"], r["status"], r["cells"]) for r in rows] == [
        (2, "v2", "done", 1), (1, "v1", "done", 1)]


def test_scorecard_counts_replies_held_for_missing_steps(tmp_path):
    with FakeAgent() as fake:
        env = setup(tmp_path, fake.url, ["ok", "ok"])
        bank = json.loads((tmp_path / "T.json").read_text())
        bank["questions"][0]["expect_tools"] = ["query_order_sheet"]
        (tmp_path / "T.json").write_text(json.dumps(bank, ensure_ascii=False))
        result = invoke("run", "T", "--version", "v1", "--format", "json", env=env)
    card = json.loads(result.output)["scorecards"][0]
    assert card["held_no_steps"] == 1
    assert card["verdicts"] == {"pass": 1, "needs_human": 1, "fail": 0, "not_graded": 0}
    text = invoke("report", "scorecard", env=env).output
    assert "held at needs_human: 1 repl(ies) whose agent reports no tool steps" in text


def test_questions_added_since_the_run_are_flagged(tmp_path):
    with FakeAgent() as fake:
        env = setup(tmp_path, fake.url, ["ok", "ok"])
        invoke("run", "T", "--version", "v1", env=env)
    bank = json.loads((tmp_path / "T.json").read_text())
    bank["questions"].append({**bank["questions"][0], "case_no": "T-09"})
    (tmp_path / "T.json").write_text(json.dumps(bank, ensure_ascii=False))
    card = json.loads(invoke("report", "scorecard", "--format", "json", env=env).output)
    assert card["scorecards"][0]["not_in_runs"] == ["T-09"]
    assert "in today's bank but not in these runs: T-09" in invoke("report", "scorecard",
                                                                   env=env).output


def test_resume_completes_a_run_whose_missing_cells_are_hostile_replies(tmp_path):
    """Issue 13: a NaN or a 100,000-deep reply used to fail the run, and resume failed again."""
    from exam.pipeline.registry import load_registry
    from exam.pipeline.runner import create_run
    from exam.store import Store

    hostile = ["nan-usage", "1e999-usage", "bigint-usage", "deep-json", "charset-idna",
               "lone-surrogate", "ok"]
    with FakeAgent() as fake:
        env = setup(tmp_path, fake.url, hostile)
        store = Store(env["EXAM_DB"])
        run_id = create_run(store, load_registry(env["EXAM_AGENTS"]).get("T"), "v1",
                            status="interrupted")
        result = invoke("resume", str(run_id), "--format", "json", env=env)
    assert result.exit_code == 3  # five replies never arrived as answers
    assert store.get_run(run_id).status == "done"
    cells = {c.case_no: c.run_status for c in store.cells([run_id])}
    assert list(cells.values()) == ["bad_reply"] * 5 + ["ok", "ok"]
    card = json.loads(result.output)["scorecards"][0]
    assert card["run_status"]["bad_reply"] == 5 and card["verdicts"]["pass"] == 2


def test_resume_refused_midway_says_nothing_ran_and_what_becomes_of_the_runs_it_took(
        tmp_path, monkeypatch):
    # the second run is taken by another process between the check and the take
    from exam.errors import RunBusy
    from exam.pipeline.registry import load_registry
    from exam.pipeline.runner import create_run
    from exam.store import Store

    with FakeAgent() as fake:
        env = setup(tmp_path, fake.url, ["ok"])
        store = Store(env["EXAM_DB"])
        agent = load_registry(env["EXAM_AGENTS"]).get("T")
        first, second = (create_run(store, agent, "v1", status="interrupted") for _ in range(2))
        hold = Store.hold_run

        def racing(self, run_id, *args, **kwargs):
            if run_id == second:
                raise RunBusy(f"run {second} is still running in process host-b:7", second)
            return hold(self, run_id, *args, **kwargs)

        monkeypatch.setattr(Store, "hold_run", racing)
        result = invoke("resume", str(first), str(second), env=env)
    assert result.exit_code == 2
    assert f"run {second} is still running in process host-b:7" in result.output
    assert (f"nothing was sent; run {first}, taken by this command, reads interrupted again "
            "when the lease runs out (within 30 s)") in result.output
    assert store.count_cells(first, "ok") == 0


def test_a_bank_whose_agent_field_names_another_agent_is_a_warning_naming_file_and_field(
        tmp_path):
    """W2's bank attached to W1 sends W2's work orders to W1: said, not done silently."""
    with FakeAgent() as fake:
        env = setup(tmp_path, fake.url, ["ok"])
        registry = yaml.safe_load((tmp_path / "agents.yaml").read_text())
        registry["agents"]["W1"] = registry["agents"].pop("T")
        (tmp_path / "agents.yaml").write_text(yaml.safe_dump(registry))
        result = invoke("run", "W1", "--version", "v1", env=env)
    bank = tmp_path / "T.json"
    assert (f"warning: W1: {bank}: agent: the bank is for agent 'T', but agents.W1.bank "
            "points at it: T's questions are sent to W1 (point W1's bank: at its own file, or "
            "set \"agent\": \"W1\" in this one)") in result.stderr
    assert result.stderr.count(f"{bank}: agent:") == 1


def test_resume_of_a_finished_run_says_there_was_nothing_to_resume(tmp_path):
    with FakeAgent() as fake:
        env = setup(tmp_path, fake.url, ["ok", "ok"])
        assert invoke("run", "T", "--version", "v1", env=env).exit_code == 0
        result = invoke("resume", "1", env=env)
    assert result.exit_code == 0
    assert "run 1: nothing to resume, every cell is stored" in result.stderr
    assert "--retry-failed re-runs cells that did not arrive" in result.stderr
