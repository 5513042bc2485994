"""One place turns a user's mistake into one line: ExamGroup, under every `exam` command."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from exam.cli.common import ExamGroup
from exam.cli.main import main
from exam.errors import BankError, ExamError, Problem, RegistryError, StoreError


def _group_raising(exc: BaseException) -> click.Group:
    @click.group(cls=ExamGroup)
    def top() -> None:
        """A throwaway group."""

    @top.group()
    def inner() -> None:
        """A nested group, like `exam report`."""

    @inner.command()
    def boom() -> None:
        raise exc

    return top


@pytest.mark.parametrize("exc,line", [
    (ExamError("bad input"), "Error: bad input"),
    (StoreError("x.db: the store is damaged"), "Error: x.db: the store is damaged"),
    (RegistryError("agents.yaml: no agent named 'W9'"), "Error: agents.yaml: no agent named 'W9'"),
    (BankError([Problem("bank/W2.json", "W2-07.input", "missing")]),
     "Error: bank/W2.json: W2-07.input: missing"),
])
def test_an_exam_error_raised_in_a_nested_command_is_one_line_and_exit_2(exc, line):
    result = CliRunner().invoke(_group_raising(exc), ["inner", "boom"])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [line]
    assert "Traceback" not in result.output


def test_ctrl_c_in_a_command_exits_130_with_one_line():
    result = CliRunner().invoke(_group_raising(KeyboardInterrupt()), ["inner", "boom"])
    assert result.exit_code == 130
    assert result.output.strip() == "interrupted"


def test_other_errors_are_not_dressed_up_as_input_errors():
    result = CliRunner().invoke(_group_raising(ValueError("a bug")), ["inner", "boom"])
    assert result.exit_code == 1
    assert isinstance(result.exception, ValueError)


def test_the_exam_command_is_an_exam_group():
    assert isinstance(main, ExamGroup)


def test_a_store_error_from_a_real_command_is_one_line(tmp_path):
    db = tmp_path / "exam.db"
    db.write_bytes(b"not a database at all" * 200)
    result = CliRunner().invoke(main, ["runs", "--db", str(db)])
    assert result.exit_code == 2
    assert result.output.startswith(f"Error: {db}")
    assert len(result.output.strip().splitlines()) == 1
