"""Every CLI command, config key, bank key, registry key and check has its place in docs/."""

from __future__ import annotations

import functools
import re

import click
import pytest

from exam.bank import FILE_KEYS, question_keys
from exam.channels import BUILT_IN as CHANNELS
from exam.cli.main import main
from exam.pipeline.registry import AGENT_KEYS, REPLY_KEYS
from exam.web.app import DEFAULTS
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


# how code reads a variable: os.environ.get("X"), env["X"], envvar="X", "X" in os.environ, or a
# literal EXAM_/LINE_ name handed to one of those (LineSettings lists the ones it needs)
ENV_ACCESS = (r'(?:environ(?:\.get)?\(|environ\[|\benv(?:\.get)?\(|\benv\[|envvar=|'
              r'getenv\()\s*"([A-Z][A-Z0-9_]+)"|"([A-Z][A-Z0-9_]+)"\s+(?:not\s+)?in\s+'
              r'(?:os\.)?environ')
ENV_READ = re.compile(ENV_ACCESS + r'|"((?:EXAM|LINE)_[A-Z0-9_]+)"')
ENV_ACCESSED = re.compile(ENV_ACCESS)  # only a read by the name itself, not a mention
NOT_SETTINGS = {"WERKZEUG_RUN_MAIN"}  # set by werkzeug's reloader for its child, not by people


@functools.cache  # the code does not change during a session: read once, not once a test
def env_vars_read(pattern: re.Pattern[str] = ENV_READ) -> list[str]:
    found = {f"EXAM_{key}" for key in DEFAULTS} | {"EXAM_CONFIG"}  # from_prefixed_env("EXAM")
    for path in [*(ROOT / "exam").rglob("*.py"), *(ROOT / "graders").rglob("*.py")]:
        for groups in pattern.findall(path.read_text(encoding="utf-8")):
            found.update(g for g in groups if g and g not in DEFAULTS)  # not config keys
    return sorted(found - NOT_SETTINGS)


def test_the_env_var_scan_finds_what_each_part_reads():
    """The scan is not empty-handed: the variables of the service, the worker and LINE."""
    assert {"EXAM_DB", "EXAM_HOST_ID", "LINE_CHANNEL_SECRET", "LINE_GROUP_ID", "NO_COLOR",
            "EXAM_REVIEWER", "EXAM_TRUSTED_PROXIES"} <= set(env_vars_read())


def channel_pages() -> dict[str, str]:
    """A variable a shipped channel's own module reads (exam/channels.py: where it is) → that
    channel's page, docs/<name>.md, which may hold its row instead of deployment.md's table
    (deployment.md sends readers there)."""
    out = {}
    for name, entry in CHANNELS.items():
        path = ROOT / (entry.where.split(":")[0].replace(".", "/") + ".py")
        for groups in ENV_READ.findall(path.read_text(encoding="utf-8")):
            out.update({g: f"{name}.md" for g in groups if g})
    return out


@pytest.mark.parametrize("var", env_vars_read())
def test_every_env_var_is_in_the_deployment_settings_table(var):
    section = DOCS["deployment.md"].split("## 9. Every setting", 1)[1]
    page = channel_pages().get(var, "")
    if f"| `{var}` |" in DOCS.get(page, ""):
        return  # a channel's own setting, in the channel's page
    assert f"| `{var}` |" in section, f"{var} is read by the code but not in deployment.md's table"


def settings_table() -> list[str]:
    """The variables deployment.md's settings table has a row for."""
    section = DOCS["deployment.md"].split("## 9. Every setting", 1)[1]
    return re.findall(r"^\| `([A-Z][A-Z0-9_]*)` \|", section, re.M)


def test_the_settings_table_is_found():
    assert {"EXAM_DB", "EXAM_HOST_ID", "LINE_CHANNEL_SECRET", "MALLOC_ARENA_MAX"} <= set(
        settings_table())


@pytest.mark.parametrize("var", settings_table())
def test_every_variable_in_the_deployment_settings_table_is_read_by_the_code(var):
    """An operator sets what the table lists: each is read by its name (os.environ, a click
    envvar, the environment a part is handed) or is a configuration key (EXAM_ + a key of
    DEFAULTS, read by from_prefixed_env), not only mentioned in a message."""
    assert var in env_vars_read(ENV_ACCESSED), f"deployment.md's table lists {var}; no code reads it"


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


def test_deployment_md_states_the_current_schema_version():
    """What an operator compares `exam store migrate` and `/healthz` with is today's version."""
    from exam.db.schema import SCHEMA_VERSION

    text = DOCS["deployment.md"]
    stated = re.findall(r"schema version (\d+)", text) + re.findall(r'"schema": (\d+)', text)
    assert stated, "deployment.md no longer shows the schema version migrate and /healthz print"
    assert set(stated) == {str(SCHEMA_VERSION)}, (stated, SCHEMA_VERSION)


def test_the_install_steps_copy_the_banks_again_in_place_when_run_again(tmp_path):
    # `cp -r bank /etc/agent-exam/bank` run a second time (new banks deployed the way they
    # were installed) wrote /etc/agent-exam/bank/bank/ and left every old bank in use
    import subprocess

    block = re.search(r"## 1\. Install.*?```sh\n(.*?)```", DOCS["deployment.md"], re.S).group(1)
    lines = [line.split("#")[0].replace("sudo ", "").replace("/etc/agent-exam", str(tmp_path))
             for line in block.splitlines() if "/etc/agent-exam" in line]
    assert any("bank" in line for line in lines), "section 1 no longer copies the banks"
    script = "set -e\n" + "\n".join(lines)
    subprocess.run(["bash", "-c", script], cwd=ROOT, check=True)
    (tmp_path / "bank" / "W1.json").write_text("{}")  # the bank as it was before an edit
    (tmp_path / "agents.yaml").write_text("# edited for this site\n")  # section 1's next step
    subprocess.run(["bash", "-c", script], cwd=ROOT, check=True)
    # the registry a site edited (its agents' urls, its ${VAR}s) is not overwritten
    assert (tmp_path / "agents.yaml").read_text() == "# edited for this site\n"
    installed = {p.relative_to(tmp_path / "bank").as_posix() for p in (tmp_path / "bank").rglob("*")}
    assert installed == {p.name for p in (ROOT / "bank").glob("*.json")}
    assert (tmp_path / "bank" / "W1.json").read_bytes() == (ROOT / "bank" / "W1.json").read_bytes()
