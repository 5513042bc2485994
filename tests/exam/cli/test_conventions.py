"""Every command says its exit codes, shows its defaults and explains every flag."""

from __future__ import annotations

import click
import pytest

from exam.cli.main import main


def leaf_commands(group: click.Group, prefix: str = "exam") -> list[tuple[str, click.Command]]:
    out = []
    for name, cmd in sorted(group.commands.items()):
        full = f"{prefix} {name}"
        out.extend(leaf_commands(cmd, full) if isinstance(cmd, click.Group) else [(full, cmd)])
    return out


COMMANDS = leaf_commands(main)


@pytest.mark.parametrize("name,command", COMMANDS, ids=[n for n, _ in COMMANDS])
def test_help_lists_the_exit_codes(name, command):
    text = command.help or ""
    assert "Exit status" in text, f"`{name} --help` does not list its exit codes"
    assert "0" in text.split("Exit status", 1)[1]


@pytest.mark.parametrize("name,command", COMMANDS, ids=[n for n, _ in COMMANDS])
def test_every_option_has_help_and_shows_its_default(name, command):
    for param in command.params:
        if not isinstance(param, click.Option) or param.hidden:
            continue
        flag = param.opts[-1]
        assert param.help, f"`{name} {flag}` has no help text"
        has_default = (param.default is not None and repr(param.default) != "Sentinel.UNSET"
                       and not param.is_flag and not param.multiple)
        if has_default and not param.envvar and not param.required:
            assert param.show_default, f"`{name} {flag}` does not show its default ({param.default!r})"
