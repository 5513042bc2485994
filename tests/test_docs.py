"""Every CLI command, config key, bank key, registry key and check has its place in docs/."""

from __future__ import annotations

import click
import pytest

from exam.app import DEFAULTS
from exam.bank import FILE_KEYS, question_keys
from exam.cli.main import main
from exam.pipeline.registry import AGENT_KEYS, REPLY_KEYS
from graders import RULE_VERSIONS
from tests.conftest import ROOT

DOCS = {p.name: p.read_text(encoding="utf-8") for p in (ROOT / "docs").glob("*.md")}
ALL = "\n".join(DOCS.values()) + (ROOT / "README.md").read_text(encoding="utf-8")


def commands(group: click.Group, prefix: str = "exam") -> list[str]:
    out = []
    for name, cmd in group.commands.items():
        full = f"{prefix} {name}"
        out.extend(commands(cmd, full) if isinstance(cmd, click.Group) else [full])
    return out


@pytest.mark.parametrize("command", commands(main))
def test_every_command_is_documented(command):
    assert command in ALL, f"`{command}` appears nowhere in docs/ or the README"


@pytest.mark.parametrize("key", list(DEFAULTS))
def test_every_config_key_is_documented(key):
    assert f"`{key}`" in DOCS["service.md"]


@pytest.mark.parametrize("key", question_keys() + FILE_KEYS)  # registered check kinds' too
def test_every_bank_key_is_documented(key):
    assert f"`{key}`" in DOCS["bank.md"]


@pytest.mark.parametrize("key", [k for k in AGENT_KEYS if k != "description"]
                         + [f"reply.{k}" for k in REPLY_KEYS])
def test_every_registry_key_is_documented(key):
    assert f"`{key}`" in DOCS["agents.md"] or f"`{key.split('.')[-1]}`" in DOCS["agents.md"]


@pytest.mark.parametrize("kind", sorted(RULE_VERSIONS))
def test_every_check_kind_is_documented(kind):
    """A row of the checks table in graders.md: the kind, then its name in reports."""
    section = DOCS["graders.md"].split("## The checks", 1)[1].split("\n## ", 1)[0]
    rows = [[c.strip() for c in line.split("|")[1:-1]] for line in section.splitlines()
            if line.startswith("|")]
    names = {row[0]: row[1] for row in rows if len(row) >= 2}
    label = kind.replace("_", " ")
    assert label in names, f"no row for {label!r} in graders.md's checks table"
    assert names[label].startswith(f"`{kind}"), (kind, names[label])
