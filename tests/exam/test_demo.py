"""`exam demo`: the simulated specialists and the whole story, quickly (1 repeat)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from exam.demo.main import path_hint
from tests.conftest import BANK_DIR
from tests.exam.helpers import demo_said


def test_demo_prints_scorecards_for_every_agent_and_version():
    status, lines = demo_said()  # the test run's `run_demo(…, repeats=1)`, made once
    assert status == 0
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


def test_demo_serve_never_prints_a_token_from_the_environment(tmp_path, monkeypatch, capsys):
    """`exam demo --serve` run with the team's environment (EXAM_API_TOKEN set) says to sign
    in with that token, never prints it; without one it prints the token it made."""
    import pytest

    from exam.cli.demo import _serve_demo
    from exam.pipeline import worker
    from exam.web import server

    class Agents:  # where the demo agents listen (write_registry asks)
        def url(self, name: str, version: str) -> str:
            return f"http://127.0.0.1:9/{name}/{version}"

    served: list[str] = []
    monkeypatch.setattr(server, "serve", lambda app, *a, **kw: served.append(
        app.config["API_TOKEN"]))
    monkeypatch.setattr(worker, "start_in_thread", lambda *a, **kw: None)
    for token in ("team-admin-token-3f9c2a", None):
        if token:
            monkeypatch.setenv("EXAM_API_TOKEN", token)
        else:
            monkeypatch.delenv("EXAM_API_TOKEN", raising=False)
        with pytest.raises(SystemExit):
            _serve_demo(0)(Agents(), str(tmp_path / "demo.db"))
        out = capsys.readouterr().out
        assert served[-1] == (token or served[-1])  # the service takes the team's token
        if token:
            assert token not in out and "your EXAM_API_TOKEN" in out
        else:
            assert f"API token    {served[-1]}" in out


def test_demo_w3_v3_is_compared_with_v1_the_last_shipped_and_the_overview_says_why(tmp_path):
    """W3 v2 is no ship against v1 (W3-10 3/3 → 0/3, critical); v3, the same agent again,
    still fails W3-10. Compared with v2 it read a green ship; v2 never shipped, so v3 is
    compared with v1, and is no ship either."""
    import json
    import re

    from click.testing import CliRunner

    from exam.cli.main import main
    from exam.demo.main import DemoServer
    from exam.pipeline.runner import create_run, execute, job_for
    from exam.store import Store
    from exam.web.app import create_app

    db = str(tmp_path / "demo.db")
    store = Store(db)
    # the demo's W3, three repeats of each version as `exam demo` runs them, without the
    # simulated think time (nothing here reads latency) and without W1 and W2 (nothing here
    # reads them): a tenth of the demo's cells, none waited for
    with DemoServer(latency_scale=0.0) as server:
        for version, as_agent in (("v1", "v1"), ("v2", "v2"), ("v3", "v2")):
            agent = server.agent("W3", as_agent, BANK_DIR)  # the tour's v3: the v2 agent again
            execute(store, [job_for(store, create_run(store, agent, version, repeats=3), agent)])
    store.close()
    held = json.loads(CliRunner().invoke(main, ["compare", "W3", "v1", "v2", "--format", "json",
                                                "--db", db]).stdout)
    word = held["verdict"]
    assert word in ("hold", "undecided") and "W3-10 3/3 → 0/3" in held["decision"]["reason"]
    result = CliRunner().invoke(main, ["compare", "W3", "v3", "--db", db])
    assert f"VERDICT: {word.upper()} vs v1, last shipped" in result.output
    assert result.exit_code != 0 and "W3-10 3/3 → 0/3" in result.output
    app = create_app({"API_TOKEN": "t", "DB": db, "TESTING": True})
    with app.test_client() as client:
        page = client.get("/?agent=W3", headers={"Authorization": "Bearer t"}).text
    row = page.split('data-version="v3"', 1)[1].split("</tr>", 1)[0]
    row = re.sub(r'<span class="nowrap">([^<]*)</span>', r"\1", row)  # W3-10 kept on a line
    assert re.search(r'data-verdict="(\w+)"', row)[1] == word
    assert "vs v1, last shipped" in row and "W3-10 3/3 → 0/3" in row
    assert 'id="shipped-W3">Shipped: <b>v1</b>' in page
