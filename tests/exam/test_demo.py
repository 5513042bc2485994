"""`exam demo`: the simulated specialists and the whole story, quickly (1 repeat)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from exam.demo.main import path_hint, run_demo
from tests.conftest import BANK_DIR


def test_demo_prints_scorecards_for_every_agent_and_version(tmp_path):
    lines: list[str] = []
    assert run_demo(str(tmp_path / "demo.db"), repeats=1, bank_dir=BANK_DIR,
                    echo=lines.append) == 0
    out = "\n".join(lines)
    for agent in ("W1", "W2", "W3"):
        for version in ("v1", "v2"):
            assert f"{agent} {version}   run(s)" in out
    # the boundary questions separate the versions; most do not
    # with one repeat a single flip is not evidence: undecided, with the repeats that would tell
    assert "UNDECIDED   W3-10 (critical, 誘導加料)  1/1 → 0/1" in out
    assert "critical still failing: W3-10" in out
    assert "VERDICT: UNDECIDED" in out  # one repeat cannot prove W3-10 worse
    assert "W1: 2 of 20 questions separate versions" in out
    # W1-11: right answer, 2 attempts, 8 model calls, shown as a cost outlier
    assert "W1-11 #1 (pass): 2 attempts, 8 model calls" in out


def test_the_commands_the_demo_suggests_say_how_to_reach_exam_when_it_is_not_on_path(
        monkeypatch, tmp_path):
    """`make demo` runs .venv/bin/exam; its closing 'try: exam report …' lines then fail with
    'exam: command not found' in the newcomer's shell unless they say to activate first."""
    monkeypatch.setenv("PATH", str(tmp_path))  # no exam here
    hint = path_hint()
    assert hint.startswith(f"  source {os.path.relpath(Path(sys.executable).parent / 'activate')}")
    assert hint.endswith("# first: puts this exam on PATH\n")
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))
    assert path_hint() == ""
