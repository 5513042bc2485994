"""`exam store`: look after the store file."""

from __future__ import annotations

import click

from exam.cli.common import db_option, open_store


@click.group("store")
def store_cmd() -> None:
    """Look after the store file."""


@store_cmd.command("prune")
@db_option
def store_prune(db) -> None:
    """Drop cached grades made under other grader rules (never read again by this version).

    \b
    Exit status: 0 pruned · 2 bad input (an unreadable store).
    """
    from exam.reports.regrade import rules_key

    store = open_store(db)
    rules = rules_key()
    gone = store.prune_grade_cache(rules)
    kept = store.grade_cache_counts().get(rules, 0)
    click.echo(f"dropped {gone} cached grade(s) of older grader rules; kept {kept} of today's")
