"""`exam demo`: the simulated specialists and the whole story, quickly (1 repeat)."""

from __future__ import annotations

from exam.demo.main import run_demo
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
    assert "W2-16: v1 0/1 pass → v2 1/1 pass" in out
    assert "W3-10: v1 1/1 pass → v2 0/1 pass" in out
    # seed 003's W1-11: right answer, 2 attempts, 8 model calls, shown as a cost outlier
    assert "W1-11 #1 (pass): 2 attempts, 8 model calls" in out
