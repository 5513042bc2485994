"""A corpus of broken bank files and registries, each bad in one way: one clear line each."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml
from click.testing import CliRunner

from exam.cli.main import main
from tests.conftest import ROOT

Q = {"case_no": "W2-07", "category": "c", "input": {"question": "可以貨到付款嗎"},
     "expect_facts": ["不提供貨到付款"]}

BANKS = [
    ("invalid JSON", '[{"case_no": "W2-07",', "invalid JSON at line 1, column"),
    ("trailing comma", '[{"case_no": "W2-07", "input": {},}]', "invalid JSON at line 1"),
    ("not UTF-8", b"\xff\xfe[]", "cannot read"),
    ("empty file", "", "invalid JSON at line 1, column 1"),
    ("a number", "7", "expected a JSON array of questions or an object"),
    ("duplicate case_no", [Q, Q], "W2-07.case_no: duplicate case_no 'W2-07'"),
    ("missing input", [{k: v for k, v in Q.items() if k != "input"}], "W2-07: missing 'input'"),
    ("missing case_no", [{k: v for k, v in Q.items() if k != "case_no"}],
     "questions[0]: missing 'case_no'"),
    ("misspelt key", [{**Q, "expect_fact": ["x"]}], "did you mean 'expect_facts'?"),
    ("misspelt bank key", {"question": [Q]}, "did you mean 'questions'?"),
    ("invalid regex", [{**Q, "expect_forbidden": ["re:(提供"]}],
     "W2-07.expect_forbidden[0]: invalid regex"),
    ("huge repeat regex", [{**Q, "expect_forbidden": ["re:a{99999999999}"]}],
     "W2-07.expect_forbidden[0]: invalid regex"),
    ("empty-matching regex", [{**Q, "expect_facts": ["re:x?"]}], "matches the empty string"),
    ("empty alternative", [{**Q, "expect_facts": ["a||b"]}], "empty alternative #2"),
    ("trailing bar", [{**Q, "expect_facts": ["a|"]}], "empty alternative #2"),
    ("non-string pattern", [{**Q, "expect_facts": [42]}], "expect_facts[0]: expected string"),
    ("patterns not a list", [{**Q, "expect_facts": "不提供"}], "expect_facts: expected array"),
    ("nothing to grade", [{"case_no": "W2-07", "input": {}}], "W2-07: nothing to grade"),
    ("bad severity", [{**Q, "severity": "high"}], "W2-07.severity: expected one of critical"),
    ("bad budget key", [{**Q, "budget": {"token": 1}}], "did you mean 'tokens'?"),
    ("negative budget", [{**Q, "budget": {"tokens": -5}}], "budget.tokens: expected a number"),
    ("bad field mode", [{**Q, "fields": {"f": {"mode": "fuzzy"}}}], "fields.f.mode: expected one of"),
    ("exact_set without values", [{**Q, "fields": {"f": {"mode": "exact_set"}}}],
     "needs 'values'"),
    ("input not an object", [{**Q, "input": []}], "W2-07.input: expected object"),
    ("question not an object", [Q, "W2-08"], "questions[1]: expected object"),
    ("bad defaults", {"defaults": {"severity": "x"}, "questions": [Q]}, "defaults.severity"),
    ("bad option", {"options": {"fold": True}, "questions": [Q]},
     "did you mean 'fold_script'?"),
    ("tool_args not lists", [{**Q, "tool_args": {"t": {"a": "x"}}}], "tool_args.t.a: expected array"),
]

REGISTRIES = [
    ("invalid YAML", "agents: [", "invalid YAML at line"),
    ("no agents key", {"agent": {}}, "expected a mapping with 'agents:'"),
    ("agent without url", {"agents": {"W1": {}}}, "agents.W1: missing 'url'"),
    ("misspelt key", {"agents": {"W1": {"url": "http://x/y", "retry": 1}}},
     "agents.W1.retry: unknown key 'retry' (did you mean 'retries'?)"),
    ("bad url", {"agents": {"W1": {"url": "localhost:5678"}}}, "agents.W1.url: expected an http"),
    ("zero concurrency", {"agents": {"W1": {"url": "http://x/y", "concurrency": 0}}},
     "agents.W1.concurrency: expected a whole number ≥ 1"),
    ("string timeout", {"agents": {"W1": {"url": "http://x/y", "timeout_s": "60s"}}},
     "agents.W1.timeout_s: expected a number > 0"),
    ("bad reply key", {"agents": {"W1": {"url": "http://x/y", "reply": {"tokens_": "x"}}}},
     "agents.W1.reply.tokens_"),
    ("headers as list", {"agents": {"W1": {"url": "http://x/y", "headers": ["a"]}}},
     "agents.W1.headers: expected a mapping"),
]


def write(path, content):
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_text(json.dumps(content, ensure_ascii=False), encoding="utf-8")


@pytest.mark.parametrize(("name", "content", "expected"), BANKS, ids=[b[0] for b in BANKS])
def test_broken_bank(tmp_path, name, content, expected):
    path = tmp_path / "W2.json"
    write(path, content)
    result = CliRunner().invoke(main, ["bank", "check", "-q", str(path)])
    assert isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code in (1, 2)
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"{path}:") and expected in lines[0]


@pytest.mark.parametrize(("name", "content", "expected"), REGISTRIES,
                         ids=[r[0] for r in REGISTRIES])
def test_broken_registry(tmp_path, name, content, expected):
    path = tmp_path / "agents.yaml"
    path.write_text(content if isinstance(content, str) else yaml.safe_dump(content))
    result = CliRunner().invoke(main, ["run", "W1", "--version", "v1", "--agents", str(path),
                                       "--db", str(tmp_path / "x.db")])
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit)
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: {path}:") and expected in lines[0]


def test_corpus_through_the_real_command_has_no_traceback(tmp_path, table):
    """The whole corpus once more through the installed command, as a user would run it."""
    tracebacks = 0
    for i, (_, content, _) in enumerate(BANKS):
        d = tmp_path / f"b{i}"
        d.mkdir()
        write(d / "W2.json", content)
    proc = subprocess.run([sys.executable, "-m", "exam", "bank", "check", "-q",
                           *(str(tmp_path / f"b{i}") for i in range(len(BANKS)))],
                          capture_output=True, text=True, cwd=ROOT)
    tracebacks += proc.stderr.count("Traceback") + proc.stdout.count("Traceback")
    problems = [ln for ln in proc.stdout.splitlines() if "W2.json" in ln]
    assert proc.returncode == 2 and tracebacks == 0
    assert len(problems) == len(BANKS)
    table("bad input", "broken bank files, each bad in one way (invalid JSON, duplicate case_no, "
                       "unknown key, bad regex, empty alternative, …)", len(BANKS),
          f"{len(problems)} one-line messages naming file, question and field; 0 tracebacks")
    table("bad input", "broken registries, each bad in one way", len(REGISTRIES),
          f"{len(REGISTRIES)} one-line messages naming file and key; 0 tracebacks")
