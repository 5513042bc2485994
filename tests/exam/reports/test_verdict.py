"""The verdict of a change: the word, its evidence, and the figures docs/reports.md states."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner

from exam.cli.main import main
from exam.decide.settle import settle
from exam.reports import compare, verdict
from exam.reports.regrade import regrade
from exam.reports.selection import select_runs
from exam.reports.stats import discrete_bh, fisher_worse, fisher_worse_min, power_worse

V = verdict


def q(case_no, old, new, severity="major", trouble=None):
    """old/new: (passes, answered)."""
    b = V.Tally(old[0], old[1] - old[0])
    n = V.Tally(new[0], new[1] - new[0], trouble=trouble or {})
    return V.Compared(case_no, severity, "c", n, b, b, ("v1",))


def test_strong_evidence_holds():
    d = V.decide([q("Q-01", (20, 20), (1, 20))])
    assert d["word"] == "hold" and d["exit_code"] == 1
    assert d["hold"][0]["case_no"] == "Q-01" and d["hold"][0]["q"] < 1e-6


@pytest.mark.parametrize("severity", ["critical", "major", "minor"])
def test_thin_evidence_never_holds(severity):
    d = V.decide([q("Q-01", (1, 3), (0, 3), severity)])
    assert d["word"] != "hold"
    assert d["word"] == "undecided" and d["undecided"][0]["case_no"] == "Q-01"


@pytest.mark.parametrize("status", ["timeout", "blocked", "http_error", "harness_error"])
def test_nothing_arrived_is_incomplete(status):
    qs = [q(f"Q-{i:02d}", (3, 3), (0, 0), trouble={status: 3}) for i in range(5)]
    d = V.decide(qs)
    assert d["word"] == "incomplete" and d["exit_code"] == 3
    assert {x["case_no"] for x in d["incomplete"]["questions"]} == {f"Q-{i:02d}" for i in range(5)}
    assert status in V.summary_line(d)


def test_half_answered_is_incomplete_and_names_the_questions():
    qs = [q(f"Q-{i:02d}", (3, 3), (3, 3)) for i in range(10)]
    qs += [q(f"Q-{i:02d}", (3, 3), (0, 0), trouble={"timeout": 3}) for i in range(10, 20)]
    d = V.decide(qs)
    assert d["word"] == "incomplete"
    assert d["incomplete"]["versions"][0]["answered"] == 30
    assert len(d["incomplete"]["questions"]) == 10


def test_needs_human_is_pending_with_the_count():
    b = V.Tally(3, 0)
    qs = [V.Compared("Q-01", "critical", "c", V.Tally(0, 0, needs_human=3), b, b, ("v1",))]
    d = V.decide(qs)
    assert d["word"] == "pending" and d["pending"]["needs_human"] == 3
    assert "exam review" in V.summary_line(d)


def test_a_guard_that_never_failed_is_tested_against_the_old_version_alone():
    # pooling the history *because* it never failed chose the baseline by its outcome
    hist = [("v1", V.Tally(3, 0)), ("v2", V.Tally(3, 0)), ("v3", V.Tally(3, 0))]
    base, used = V.baseline_for(hist, "v3")
    assert (base.passes, base.answered, used) == (3, 3, ("v3",))


@pytest.mark.slow  # against scipy: importing scipy.stats costs a worker ~1.5 s
def test_one_sided_fisher_and_its_bound_match_scipy():
    from scipy import stats
    rng = random.Random(1)
    for _ in range(200):
        on, nn = rng.randint(1, 25), rng.randint(1, 25)
        op, np_ = rng.randint(0, on), rng.randint(0, nn)
        ref = stats.fisher_exact([[op, on - op], [np_, nn - np_]], alternative="greater").pvalue
        assert fisher_worse(op, on, np_, nn) == pytest.approx(ref, rel=1e-9, abs=1e-12)
        total = op + np_
        x = min(on, total)
        best = stats.fisher_exact([[x, on - x], [total - x, nn - total + x]],
                                  alternative="greater").pvalue
        assert fisher_worse_min(op, on, np_, nn) == pytest.approx(best, rel=1e-9)


def test_bh_runs_only_over_questions_that_can_move():
    # 9/20 vs 18/20 among 19 saturated questions: the saturated ones cannot differ
    p = [fisher_worse(18, 20, 9, 20)] + [1.0] * 19
    minp = [fisher_worse_min(18, 20, 9, 20)] + [fisher_worse_min(20, 20, 20, 20)] * 19
    qv, testable = discrete_bh(p, minp)
    assert testable == 1 and qv[0] == pytest.approx(p[0]) and qv[0] < 0.05
    assert all(x is None for x in qv[1:])


@pytest.mark.slow  # against scipy: importing scipy.stats costs a worker ~1.5 s
def test_repeats_needed_are_true_under_the_method():
    """Recompute every stated repeats-needed figure with scipy: the power it claims holds."""
    from scipy import stats
    qs = [q("Q-01", (30, 30), (7, 10)), q("Q-02", (27, 30), (4, 6)), q("Q-03", (40, 40), (2, 3))]
    qs += [q(f"G-{i}", (10, 10), (10, 10)) for i in range(7)]
    d = V.decide(qs)
    stated = [u for u in d["undecided"] if u["repeats_needed"] is not None]
    assert stated
    for u in stated:
        t = next(t for t in d["tests"] if t["case_no"] == u["case_no"])
        bp, bn = t["baseline"]["passes"], t["baseline"]["answered"]
        n, p_alt, level = u["repeats_needed"], u["assumed_new_rate"], u["level_for_repeats"]
        power = sum(stats.binom.pmf(x, n, p_alt) for x in range(n + 1)
                    if stats.fisher_exact([[bp, bn - bp], [x, n - x]],
                                          alternative="greater").pvalue <= level * (1 + 1e-9))
        assert power >= 0.8
        # and the level is --settle's: alpha / the questions that could get worse, 1% of it
        # at each look before the last (at 40 repeats) spends the rest
        assert level == pytest.approx(0.05 / 10 * 0.01) or n == V.SETTLE_MAX_REPEATS
        assert power_worse(bp, bn, p_alt, n, level) == pytest.approx(power, abs=1e-9)


@pytest.mark.slow  # simulated comparisons (~1.5 s)
def test_identical_behaviour_rarely_holds():
    """20 questions at 70%, 3 repeats each side, no true change: false hold ≤ 5%."""
    rng = random.Random(20261130)
    holds, runs = 0, 2000
    for _ in range(runs):
        qs = []
        for i in range(20):
            o = sum(rng.random() < 0.7 for _ in range(3))
            n = sum(rng.random() < 0.7 for _ in range(3))
            qs.append(q(f"Q-{i:02d}", (o, 3), (n, 3)))
        holds += V.decide(qs, figures=False)["word"] == "hold"
    assert holds / runs <= 0.05


def _simulate_settle(seed, settings=None, *, questions=5, old_n=40, new_n=5, drop=True):
    settings = settings or V.Settings()
    rng = random.Random(seed)
    rates_new = [0.5 if drop else 0.9] + [0.9] * (questions - 1)

    def draw(p, k):
        x = sum(rng.random() < p for _ in range(k))
        return V.Tally(x, k - x)

    state = {f"Q{i}": (draw(0.9, old_n), draw(rates_new[i], new_n)) for i in range(questions)}

    def compare_at(levels):
        qs = [V.Compared(c, "major", "c", n, o, o, ("v1",)) for c, (o, n) in state.items()]
        return {"decision": V.decide(qs, settings, levels or None)}

    def run_more(cases, k):
        for c in cases:
            o, n = state[c]
            state[c] = (o, n + draw(rates_new[int(c[1:])], k))
        return len(cases) * k

    return settle(compare_at, run_more, settings, bank_size=questions, budget=10_000,
                  step=3, max_repeats=30)


@pytest.mark.slow  # simulated settles (~1 s)
def test_settle_finds_a_real_drop():
    """A true 90% → 50% drop on one of 5 questions (old version 40 repeats, new 5), --settle
    step 3 up to 30 answered repeats: hold in ≥ 80% of simulations; calls saved reported."""
    sims, holds = 200, 0
    for seed in range(sims):
        out = _simulate_settle(seed)
        d = out.report["decision"]
        holds += any(h["case_no"] == "Q0" for h in d["hold"])
        assert out.report["settle"]["calls_saved"] == out.saved
        assert out.report["settle"]["calls_spent"] == out.spent
    assert holds / sims >= 0.8


@pytest.mark.slow  # simulated settles (~2 s)
def test_settle_keeps_false_holds_rare():
    sims = 200
    false = sum(_simulate_settle(seed, drop=False).report["decision"]["word"] == "hold"
                for seed in range(sims))
    assert false / sims <= 0.05


def test_a_question_nothing_could_grade_in_new_is_incomplete():
    # the old version reported a status the question checks; the new one stopped reporting
    # it: every reply arrived, none could be graded, nothing shows it is not worse
    b = V.Tally(3, 0)
    qs = [V.Compared("Q-01", "critical", "c", V.Tally(not_graded=3), b, b, ("v1",)),
          V.Compared("Q-02", "major", "c", V.Tally(3, 0), b, b, ("v1",))]
    d = V.decide(qs)
    assert d["word"] == "incomplete" and d["exit_code"] == 3
    assert d["incomplete"]["questions"] == [
        {"case_no": "Q-01", "side": "new", "arrived": 3, "planned": 3, "why": "3 not_graded"}]
    assert "Q-01 (3 not_graded)" in V.summary_line(d)


def test_a_question_never_graded_on_either_side_does_not_block():
    # nothing graded before the change either (an ignore-only question): no change to decide
    nothing = V.Tally(not_graded=3)
    d = V.decide([V.Compared("Q-01", "major", "c", nothing, nothing, V.Tally(), ("v1",)),
                  V.Compared("Q-02", "major", "c", V.Tally(3, 0), V.Tally(3, 0), V.Tally(3, 0),
                             ("v1",))])
    assert d["word"] == "ship"


def test_old_needs_human_as_the_whole_baseline_of_a_failing_question_is_pending():
    # nobody decided the old version's replies, the new one fails every repeat: a reviewer's
    # pass on the old ones makes it 3/3 → 0/3, so the review decides it, not "same"
    old = V.Tally(needs_human=3)
    qs = [V.Compared("Q-01", "critical", "c", V.Tally(0, 3), old, V.Tally(), ("v1",))]
    d = V.decide(qs)
    assert d["word"] == "pending" and d["exit_code"] == 5
    assert d["pending"]["questions"] == ["Q-01"] and d["pending"]["old_needs_human"] == 3
    assert "of the old version's" in V.summary_line(d)
    # the new version passing it cannot be a drop, whatever the review says
    qs = [V.Compared("Q-01", "critical", "c", V.Tally(3, 0), old, V.Tally(), ("v1",))]
    assert V.decide(qs)["word"] == "ship"


@pytest.mark.parametrize("old", [V.Tally(trouble={"timeout": 3}), V.Tally(not_graded=3)])
def test_a_failing_question_the_old_version_never_answered_is_incomplete(old):
    # 20 questions: one timed out in every old repeat is above the coverage floor, and the
    # new version fails it: unknown, not "same"
    ok = V.Tally(3, 0)
    qs = [V.Compared(f"Q-{i:02d}", "major", "c", ok, ok, ok, ("v1",)) for i in range(2, 21)]
    qs.append(V.Compared("Q-01", "critical", "c", V.Tally(0, 3), old, V.Tally(), ("v1",)))
    d = V.decide(qs)
    assert d["word"] == "incomplete"
    assert [(x["case_no"], x["side"]) for x in d["incomplete"]["questions"]] == [("Q-01", "old")]
    # passing it in the new version cannot be a drop: no wait
    qs[-1] = V.Compared("Q-01", "critical", "c", ok, old, V.Tally(), ("v1",))
    assert V.decide(qs)["word"] == "ship"


def test_a_critical_question_that_lost_cells_is_not_averaged_away_by_the_floor():
    # 20 questions × 3: two lost cells are above the 95% floor; on a critical question they
    # left 1/1, which is no evidence: incomplete, naming it
    ok = V.Tally(3, 0)
    qs = [V.Compared(f"Q-{i:02d}", "major", "c", ok, ok, ok, ("v1",)) for i in range(2, 21)]
    lost = V.Tally(1, 0, trouble={"timeout": 2})
    d = V.decide([*qs, V.Compared("Q-01", "critical", "c", lost, ok, ok, ("v1",))])
    assert d["word"] == "incomplete" and not d["incomplete"]["versions"]
    assert d["incomplete"]["questions"][0]["case_no"] == "Q-01"
    assert "Q-01 (2 timeout)" in V.summary_line(d)
    # a major question losing the same is left to the floor; a critical one that kept most
    # of its cells (one timeout of three) is decided on them
    assert V.decide([*qs, V.Compared("Q-01", "major", "c", lost, ok, ok, ("v1",))])["word"] \
        == "ship"
    kept = V.Tally(2, 0, trouble={"timeout": 1})
    assert V.decide([*qs, V.Compared("Q-01", "critical", "c", kept, ok, ok, ("v1",))])["word"] \
        == "ship"


# -- the surfaces: CLI exit codes, API JSON, LINE text, the n8n branch -----------------------

CASES = [("Q-01", "c", "critical"), ("Q-02", "c", "major"), ("Q-03", "c", "major")]


def _cli(history, *args):
    env = {"EXAM_DB": str(history.tmp / "exam.db")}
    return CliRunner().invoke(main, ["compare", *args], env=env, catch_exceptions=False)


def test_all_timeout_new_version_is_incomplete_in_the_cli(history):
    history.bank("A", CASES)
    history.run("A", "v1", {c: "ppp" for c, _, _ in CASES})
    history.run("A", "v2", {c: "ttt" for c, _, _ in CASES})
    for fail_on in ("verdict", "regression", "any-fail"):
        result = _cli(history, "A", "v1", "v2", "--fail-on", fail_on)
        assert result.exit_code == 3, result.output
        assert "VERDICT: INCOMPLETE" in result.output and "3 timeout" in result.output
    out = json.loads(_cli(history, "A", "v1", "v2", "--format", "json").output)
    assert out["verdict"] == "incomplete"


def test_added_question_is_new_and_failing_it_is_not_a_ship(history):
    history.bank("A", CASES[:2])
    history.run("A", "v1", {"Q-01": "ppp", "Q-02": "ppp"})
    history.bank("A", CASES)
    history.run("A", "v2", {"Q-01": "ppp", "Q-02": "ppp", "Q-03": "fff"})
    r = compare.build(regrade(history.store, select_runs(history.store)), "A", "v1", "v2")
    # added to the bank after v1 ran (not skipped by v1): new, with no baseline, and failed
    # 0/3: nothing shows it did not get worse (issue 32)
    assert r["verdict"] != "ship"
    assert [x["case_no"] for x in r["only_new"]] == ["Q-03"]
    assert r["decision"]["new_questions"] == ["Q-03"] and r["decision"]["not_asked_in_old"] == []
    assert "Q-03 new question, v2 fails it (0/3 passed" in r["decision"]["reason"]


def test_more_repeats_alone_is_not_newly_flaky(history):
    history.bank("A", CASES[:2])
    history.run("A", "v1", {"Q-01": "ppp", "Q-02": "fff"})
    history.run("A", "v2", {"Q-01": "ppppppppfp", "Q-02": "ffffpfffff"})
    r = compare.build(regrade(history.store, select_runs(history.store)), "A", "v1", "v2")
    assert r["flaky"] == [] and r["regressions"] == []


def test_all_needs_human_is_pending_not_a_regression(history):
    history.bank("A", CASES[:1])
    history.run("A", "v1", {"Q-01": "ppp"})
    history.run("A", "v2", {"Q-01": "hhh"})
    result = _cli(history, "A", "v1", "v2")
    assert result.exit_code == 5 and "VERDICT: PENDING" in result.output
    assert "exam review" in result.output
    assert _cli(history, "A", "v1", "v2", "--fail-on", "any-fail").exit_code == 5


def test_api_dashboard_line_and_n8n_read_the_same_word(history):
    from exam.notify.summary import agent_summary, summary_text
    from exam.web.app import create_app
    from tests.conftest import ROOT

    history.bank("A", CASES)
    history.run("A", "v1", {c: "ppp" for c, _, _ in CASES})
    history.run("A", "v2", {"Q-01": "ttt", "Q-02": "ppp", "Q-03": "t"})
    app = create_app({"TESTING": True, "DB": str(history.tmp / "exam.db"), "API_TOKEN": "tok",
                      "SECRET_KEY": "k"})
    with app.test_client() as client:
        api = client.get("/api/compare?agent=A&old=v1&new=v2",
                         headers={"Authorization": "Bearer tok"}).json
        page = client.get("/compare?agent=A&old=v1&new=v2",
                          headers={"Authorization": "Bearer tok"}).get_data(as_text=True)
    assert api["verdict"] == "incomplete" and api["exit_code"] == 3
    assert 'data-verdict="incomplete"' in page
    report = compare.build(regrade(history.store, select_runs(history.store)), "A", "v1", "v2")
    card = {"agent": "A", "version": "v2", "verdicts": {"pass": 3, "needs_human": 0, "fail": 0},
            "run_status": {"timeout": 4}, "critical_failures": [], "cost": {}}
    text = summary_text(agent_summary(card, report))
    assert "verdict vs v1: INCOMPLETE" in text
    wf = json.loads((ROOT / "webhooks" / "n8n" / "run-exam-after-change.json").read_text())
    node = next(n for n in wf["nodes"] if n["type"] == "n8n-nodes-base.if"
                and "verdict" in json.dumps(n["parameters"]))
    cond = node["parameters"]["conditions"]["conditions"][0]
    assert cond["leftValue"] == "={{ $json.verdict }}" and cond["operator"]["operation"] == "equals"
    safe = wf["connections"][node["name"]]["main"][0][0]["node"]
    taken = 0 if api["verdict"] == cond["rightValue"] else 1
    assert wf["connections"][node["name"]]["main"][taken][0]["node"] != safe


def test_questions_new_never_asked_are_incomplete_not_ship(history):
    # the candidate run with --only (or --category): the questions it skipped were not
    # examined, which is missing data, never a ship
    history.bank("A", CASES)
    history.run("A", "v1", {c: "ppp" for c, _, _ in CASES})
    history.run("A", "v2", {"Q-02": "ppp"})
    result = _cli(history, "A", "v1", "v2")
    assert result.exit_code == 3, result.output
    assert "Q-01 (3 not_asked), Q-03 (3 not_asked)" in result.output
    out = json.loads(_cli(history, "A", "v1", "v2", "--format", "json").output)
    assert out["verdict"] == "incomplete"
    assert [x["case_no"] for x in out["only_old"]] == ["Q-01", "Q-03"]


def test_a_version_against_itself_is_bad_input_everywhere(history):
    from exam.web.app import create_app

    history.bank("A", CASES)
    history.run("A", "v1", {c: "ppp" for c, _, _ in CASES})
    history.run("A", "v2", {c: "fff" for c, _, _ in CASES})
    result = _cli(history, "A", "v2", "v2")
    assert result.exit_code == 2 and "VERDICT" not in result.output
    assert "cannot compare A v2 with itself" in result.output
    app = create_app({"TESTING": True, "DB": str(history.tmp / "exam.db"), "API_TOKEN": "tok",
                      "SECRET_KEY": "k"})
    with app.test_client() as client:
        got = client.get("/api/compare?agent=A&old=v2&new=v2",
                         headers={"Authorization": "Bearer tok"})
    assert got.status_code == 400 and "with itself" in got.json["error"]


def _two_rubrics(history) -> int:
    """v1 run against bank A, v2 (failing everything) against a lenient copy of it: the run
    id of v2."""
    history.bank("A", CASES)
    history.run("A", "v1", {c: "ppp" for c, _, _ in CASES})
    lenient = [{"case_no": c, "category": cat, "severity": sev, "input": {"question": f"{c}?"},
                "expect_facts": ["已出貨|備貨中"]} for c, cat, sev in CASES]
    copy = history.tmp / "A-lenient.json"
    copy.write_text(json.dumps({"agent": "A", "questions": lenient}, ensure_ascii=False),
                    encoding="utf-8")
    history.banks["A"] = str(copy)
    return history.run("A", "v2", {c: "fff" for c, _, _ in CASES})


def test_two_rubrics_for_one_question_are_bad_input(history):
    # the new version run against a lenient copy of the bank: its fails would pass there
    _two_rubrics(history)
    result = _cli(history, "A", "v1", "v2")
    assert result.exit_code == 2 and "VERDICT" not in result.output
    assert "Q-01 reads differently" in result.output and "A-lenient.json" in result.output


def test_the_overview_names_two_rubrics_not_comparable_never_pending(history):
    # "pending" is a verdict (cells for exam review); a change that cannot be compared has none
    from exam.reports import overview

    _two_rubrics(history)
    (row,) = [v for v in overview.build(regrade(history.store, select_runs(history.store)))[
        "agents"][0]["versions"] if v["version"] == "v2"]
    assert row["change"]["verdict"] not in verdict.VERDICTS
    assert "Q-01 reads differently" in row["change"]["error"]


def test_a_notification_of_two_rubrics_says_not_comparable_not_a_first_version(history):
    # previous: null reads "no earlier version" (docs/webhook.md); the change was not compared
    from exam.notify.line import bubble
    from exam.notify.summary import summaries_for, summary_text

    run_id = _two_rubrics(history)
    (s,) = summaries_for(history.store, [run_id])
    assert (s.previous, s.verdict) == ("v1", None)
    text = summary_text(s)
    assert "vs v1: not comparable: cannot compare A v1 → v2: Q-01 reads differently" in text
    assert "0 regression(s)" not in text
    assert "not comparable" in json.dumps(bubble(s, None), ensure_ascii=False)


def test_the_same_questions_in_two_bank_files_compare(history):
    first = history.bank("A", CASES)
    history.run("A", "v1", {c: "ppp" for c, _, _ in CASES})
    copy = history.tmp / "A-copy.json"
    copy.write_bytes(Path(first).read_bytes())
    history.banks["A"] = str(copy)
    history.run("A", "v2", {c: "ffffff" for c, _, _ in CASES})
    result = _cli(history, "A", "v1", "v2")
    assert result.exit_code == 1 and "VERDICT: HOLD" in result.output


@pytest.mark.parametrize("status", ["running", "interrupted"])
def test_a_run_with_cells_yet_to_come_is_incomplete_whatever_the_floor(history, status):
    # 58 of 60 cells in is above the 95% floor, but the last two are still to come (or wait
    # for exam resume): the verdict waits for them instead of shipping on the rest
    cases = [(f"Q-{i:02d}", "c", "major") for i in range(1, 21)]
    history.bank("A", cases)
    history.run("A", "v1", {c: "ppp" for c, _, _ in cases})
    run_id = history.run("A", "v2", {**{c: "ppp" for c, _, _ in cases}, "Q-20": "p"})
    history.store.set_run_status(run_id, status)
    result = _cli(history, "A", "v1", "v2")
    assert result.exit_code == 3, result.output
    assert f"run 2 (v2) {status}: 58/60 cells arrived" in result.output
    # waiting finishes a running run; an interrupted one (its process gone) needs a resume
    assert ("finish it: exam resume 2" in result.output) == (status == "interrupted")
    history.store.set_run_status(run_id, "done")  # finished with two cells lost: the floor
    assert _cli(history, "A", "v1", "v2").exit_code == 0


def test_a_running_run_whose_cells_all_arrived_does_not_wait(history):
    history.bank("A", CASES)
    history.run("A", "v1", {c: "ppp" for c, _, _ in CASES})
    run_id = history.run("A", "v2", {c: "ppp" for c, _, _ in CASES})
    history.store.set_run_status(run_id, "running")
    assert _cli(history, "A", "v1", "v2").exit_code == 0


def test_old_needs_human_then_reviewed_decides_the_change(history):
    from exam import review

    history.bank("A", CASES)
    history.run("A", "v1", {"Q-01": "hhh", "Q-02": "ppp", "Q-03": "ppp"})
    history.run("A", "v2", {"Q-01": "fff", "Q-02": "ppp", "Q-03": "ppp"})
    result = _cli(history, "A", "v1", "v2")
    assert result.exit_code == 5 and "VERDICT: PENDING" in result.output
    assert "Q-01" in result.output
    (item,) = review.queue(regrade(history.store, select_runs(history.store)), "A", "v1")
    review.decide(history.store, item, "pass", "tester")
    result = _cli(history, "A", "v1", "v2")
    assert result.exit_code == 1 and "hold: Q-01 3/3 → 0/3" in result.output


@pytest.mark.parametrize("severity", ["critical", "major"])
def test_more_questions_dropping_the_same_way_never_weaken_the_verdict(severity):
    # one question 3/3 → 0/3 holds; five of them must hold too (Tarone's smallest K screened
    # all five out: 5 questions could reach alpha, none alpha/2)
    one = V.decide([q("Q-00", (3, 3), (0, 3), severity)])
    assert one["word"] == "hold"
    for k in range(2, 8):
        many = V.decide([q(f"Q-{i:02d}", (3, 3), (0, 3), severity) for i in range(k)])
        assert many["word"] == "hold", k
        assert len(many["hold"]) == k


def test_a_fix_on_the_side_does_not_hide_a_hold_among_saturated_guards():
    # a saturated guard cannot move and never dilutes; a drop among them still holds
    qs = [q("Q-00", (3, 3), (0, 3))] + [q(f"G-{i}", (3, 3), (3, 3)) for i in range(15)]
    assert V.decide(qs)["word"] == "hold"


def test_more_evidence_never_weakens_a_hold_randomised():
    """Adding a question at least as strong as a held one keeps every hold (BH's monotony,
    kept by a screen that reads each question's own margins only)."""
    rng = random.Random(7)
    for _ in range(300):
        qs = []
        for i in range(rng.randint(1, 6)):
            on, nn = rng.choice([3, 5, 10]), rng.choice([3, 5, 10])
            qs.append(q(f"Q-{i:02d}", (rng.randint(0, on), on), (rng.randint(0, nn), nn)))
        d = V.decide(qs, figures=False)
        if not d["hold"]:
            continue
        strongest = min(d["hold"], key=lambda h: h["p"])
        t = next(x for x in qs if x.case_no == strongest["case_no"])
        more = V.decide(qs + [replace_case(t, "Q-99")], figures=False)
        assert {h["case_no"] for h in d["hold"]} <= {h["case_no"] for h in more["hold"]}


def replace_case(question, case_no):
    return V.Compared(case_no, question.severity, question.category, question.new, question.old,
                      question.baseline, question.baseline_versions)


# -- questions OLD skipped (--only, --category) are not new in the bank ---------------------

def _skipped_by_old(history, new_q03):
    history.bank("A", CASES)
    history.run("A", "v0", {c: "ppp" for c, _, _ in CASES})
    history.run("A", "v1", {"Q-01": "ppp", "Q-02": "ppp"})  # --only: Q-03 was in its bank
    history.run("A", "v2", {"Q-01": "ppp", "Q-02": "ppp", "Q-03": new_q03})
    return compare.build(regrade(history.store, select_runs(history.store)), "A", "v1", "v2")


def test_a_question_old_skipped_and_new_fails_is_incomplete_not_a_new_question(history):
    r = _skipped_by_old(history, "fff")
    assert r["verdict"] == "incomplete", r["decision"]["reason"]
    d = r["decision"]
    assert d["new_questions"] == [] and d["not_asked_in_old"] == ["Q-03"]
    assert {"case_no": "Q-03", "side": "old", "arrived": 0, "planned": 0,
            "why": "not_asked"} in d["incomplete"]["questions"]
    assert "Q-03 (not asked in v1)" in d["reason"]
    assert "exam run A --version v1 --only Q-03" in d["reason"]
    assert [x["case_no"] for x in r["only_new"]] == []
    assert [x["case_no"] for x in r["not_asked_in_old"]] == ["Q-03"]
    # the page (the dashboard's and the HTML report's) says the same, with what to run
    from exam.reports.formats import render

    page = render("compare", r, "html")
    assert "Q-03: not asked in v1, though in its bank when it ran" in page
    assert "<code>exam run A --version v1 --only Q-03</code>" in page
    assert "Not asked in v1 (in its bank when it ran): Q-03" in page
    assert "0/0 arrived" not in page


def test_a_question_old_skipped_that_new_passes_still_ships(history):
    r = _skipped_by_old(history, "ppp")
    assert r["verdict"] == "ship", r["decision"]["reason"]
    assert r["decision"]["new_questions"] == [] and r["decision"]["not_asked_in_old"] == ["Q-03"]


def test_a_run_from_before_banks_were_kept_never_calls_a_skipped_question_new(history):
    # schema 11 and before kept no bank with a run: whether Q-03 was in v1's bank is unknown,
    # so it is not called new (a regression could hide there); v2 failing it is incomplete
    history.bank("A", CASES)
    v1 = history.run("A", "v1", {"Q-01": "ppp", "Q-02": "ppp"})
    history.run("A", "v2", {"Q-01": "ppp", "Q-02": "ppp", "Q-03": "fff"})
    with history.store.tx() as db:
        from exam.db.schema import run_banks
        db.execute(run_banks.delete().where(run_banks.c.run_id == v1))
    r = compare.build(regrade(history.store, select_runs(history.store)), "A", "v1", "v2")
    assert r["verdict"] == "incomplete" and r["decision"]["not_asked_in_old"] == ["Q-03"]


def test_the_cli_names_a_question_old_skipped(history):
    _skipped_by_old(history, "fff")
    result = _cli(history, "A", "v1", "v2")
    assert result.exit_code == 3, result.output
    assert "Q-03 (not asked in v1)" in result.output
    assert "not asked in v1 (in its bank): Q-03" in result.output


# -- a rubric changed since the baseline ran ------------------------------------------------

def _with_budget(history, tokens):
    path = history.bank("A", CASES[:2])
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    data["questions"][0]["budget"] = {"tokens": tokens}
    Path(path).write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


def _loosened(history, new_tokens):
    _with_budget(history, 1500)
    history.run("A", "v1", {"Q-01": "ppp", "Q-02": "ppp"})  # 1,000 tokens a reply
    _with_budget(history, 6000)  # loosened in the same change as the agent
    history.run("A", "v2", {"Q-01": "ppp", "Q-02": "ppp"},
                figures={"Q-01": {"tokens": new_tokens}})
    return compare.build(regrade(history.store, select_runs(history.store)), "A", "v1", "v2")


def test_a_budget_loosened_that_the_new_version_needs_is_not_a_silent_ship(history):
    r = _loosened(history, 5000)
    d = r["decision"]
    assert r["verdict"] == "pending", d["reason"]
    assert d["rubric_changed"] == [{
        "case_no": "Q-01", "runs": r["old_run_ids"], "recorded": True, "loosened": True,
        "changes": [{"field": "budget.tokens", "then": 1500, "now": 6000,
                     "direction": "looser"}],
        "under_old_rubric": {"new": "0/3", "old": "3/3", "word": "hold"}}]
    assert d["pending"]["rubric_loosened"] == ["Q-01"]
    assert "Q-01 budget.tokens 1500 → 6000 (looser)" in d["reason"]
    assert "under v1's rubric v2 is 0/3" in d["reason"]


def test_a_budget_loosened_the_new_version_does_not_need_ships_and_says_so(history):
    r = _loosened(history, 1200)  # within the old budget too: nothing rests on the loosening
    d = r["decision"]
    assert r["verdict"] == "ship", d["reason"]
    assert d["rubric_changed"][0]["changes"][0]["direction"] == "looser"
    assert "rubric changed since v1 ran: Q-01 budget.tokens 1500 → 6000 (looser)" in d["reason"]


def test_an_agent_budget_loosened_between_the_runs_is_one_rubric_too(history):
    # the registry's budget is kept with each run and graded with it: v1 under 1,500 tokens,
    # v2 under 6,000 would be two rubrics; the verdict reads it like a loosened question
    history.bank("A", CASES[:1])
    history.run("A", "v1", {"Q-01": "ppp"}, budget={"tokens": 1500})
    history.run("A", "v2", {"Q-01": "ppp"}, figures={"Q-01": {"tokens": 5000}},
                budget={"tokens": 6000})
    r = compare.build(regrade(history.store, select_runs(history.store)), "A", "v1", "v2")
    assert r["verdict"] == "pending", r["decision"]["reason"]
    assert "agent budget.tokens 1500 → 6000 (looser)" in r["decision"]["reason"]


def test_a_fact_loosened_is_named_with_how(history):
    history.bank("A", CASES[:1])
    history.run("A", "v1", {"Q-01": "ppp"})
    path = history.banks["A"]
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    data["questions"][0]["expect_facts"] = ["備貨中|處理中"]
    Path(path).write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    history.run("A", "v2", {"Q-01": "ppp"})
    d = compare.build(regrade(history.store, select_runs(history.store)), "A", "v1", "v2")[
        "decision"]
    (change,) = d["rubric_changed"][0]["changes"]
    assert change["field"] == "expect_facts" and change["direction"] == "looser"
    assert "rubric changed since v1 ran: Q-01 expect_facts" in d["reason"]


def test_a_severity_lowered_in_the_same_change_cannot_wave_a_critical_question_through(history):
    # critical: 2 of 3 repeats timing out is named (incomplete); as minor the floor lets it by
    history.bank("A", [("Q-01", "c", "critical")] + [(f"Q-{i:02d}", "c", "major")
                                                     for i in range(2, 22)])
    history.run("A", "v1", {f"Q-{i:02d}": "ppp" for i in [1, *range(2, 22)]})
    history.bank("A", [("Q-01", "c", "minor")] + [(f"Q-{i:02d}", "c", "major")
                                                  for i in range(2, 22)])
    history.run("A", "v2", {"Q-01": "ptt", **{f"Q-{i:02d}": "ppp" for i in range(2, 22)}})
    r = compare.build(regrade(history.store, select_runs(history.store)), "A", "v1", "v2")
    d = r["decision"]
    assert r["verdict"] == "pending", d["reason"]
    assert "Q-01 severity \"critical\" → \"minor\" (looser)" in d["reason"]
    assert d["rubric_changed"][0]["under_old_rubric"]["word"] == "incomplete"


def test_a_question_too_thin_to_hold_does_not_dilute_a_hold():
    # 10/10 → 0/1 can never hold (1 answered repeat < min_answered 3: its margins say so),
    # so it is screened out like a saturated one and 3/3 → 0/3 still holds
    qs = [q("Q-00", (3, 3), (0, 3)), q("Q-01", (10, 10), (0, 1), "critical")]
    d = V.decide(qs)
    assert d["word"] == "hold" and [h["case_no"] for h in d["hold"]] == ["Q-00"]
    assert d["questions_testable"] == 1
