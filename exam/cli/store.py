"""`exam store`: look after the store (prune the grade cache, keep what the pages read, copy
between backends, migrate)."""

from __future__ import annotations

import click

from exam.cli.common import db_option, open_store


@click.group("store")
def store_cmd() -> None:
    """Look after the store (a SQLite file or a PostgreSQL database)."""


@store_cmd.command("prune")
@db_option
def store_prune(db) -> None:
    """Drop cached grades and graded runs made under other grader rules (never read again).

    \b
    Exit status: 0 pruned · 2 bad input (an unreadable store).
    """
    from exam.grading.keys import rules_key

    store = open_store(db)
    rules = rules_key()
    gone = store.prune_grade_cache(rules)
    kept = store.grade_cache_counts().get(rules, 0)
    click.echo(f"dropped {gone} cached grade(s) of older grader rules; kept {kept} of today's")


@store_cmd.command("keep")
@db_option
def store_keep(db) -> None:
    """Make what the pages read, for every agent's versions: after an upgrade.

    What a page shows of finished runs is kept under a key that holds the code's digest, so
    the first view of each page after an upgrade makes it again (seconds at a year of
    history). The worker makes it as each run ends; this makes it for every counted version
    at once, right after `exam store migrate` (docs/deployment.md, "Upgrades").

    \b
    Exit status: 0 kept (or nothing to keep) · 2 bad input (an unreadable store).
    """
    import time

    from exam.records import RunState
    from exam.reports.kept import keep_finished
    from exam.reports.selection import select_runs

    store = open_store(db)
    latest: dict[tuple[str, str], int] = {}
    for r in select_runs(store):
        if r.shown_status == RunState.DONE:
            latest[(r.agent, r.version)] = max(r.id, latest.get((r.agent, r.version), 0))
    t0, failed = time.monotonic(), 0
    for _, run_id in sorted(latest.items()):  # agent by agent, versions in label order
        failed += not keep_finished(store, run_id)
    agents = len({a for a, _ in latest})
    click.echo(f"kept what the pages read for {len(latest)} version(s) of {agents} agent(s) "
               f"in {time.monotonic() - t0:.1f} s"
               + (f"; {failed} could not be kept (the log says why), their first views make "
                  "them" if failed else ""))


@store_cmd.command("copy")
@click.argument("src")
@click.argument("dst")
@click.option("--replace", is_flag=True, help="Delete what DST holds first (refused otherwise).")
@click.option("--while-running", is_flag=True,
              help="Copy even while a run in SRC is still running (refused otherwise): what it "
                   "stores after the copy is not in DST.")
def store_copy(src, dst, replace, while_running) -> None:
    """Copy every table of the store SRC into DST (a SQLite path or a postgresql:// URL), then
    compare each table's row count and content digest, and the cells each review decision
    applies to. Into PostgreSQL, a NUL in a text is stored as U+FFFD (said, per table).

    DST already holding exactly SRC's rows (a copy stopped after it committed and before its
    check, run again) is compared and said so, not refused. A SQLite SRC's snapshot in TMPDIR
    is deleted on every way out (an error, Ctrl-C, SIGTERM, SIGHUP; one left by a kill -9 by
    the next copy).

    \b
    Exit status: 0 copied (or already there) and equal · 2 bad input (DST not empty and not a
    copy of SRC, a run in SRC still running without --while-running, unreadable, a
    difference).
    """
    from exam.store.copy import copy_store

    def running(runs) -> None:
        for r in runs:
            click.echo(f"warning: run {r.id} ({r.agent} {r.version}) is still running in "
                       f"{r.owner or 'another process'}: what it stores from now on is not in "
                       f"DST; there it reads interrupted once its lease runs out, and `exam "
                       f"resume {r.id}` finishes it", err=True)

    tables = copy_store(src, dst, replace=replace, while_running=while_running,
                        on_running=running)
    for t in tables:
        click.echo(f"{t.table:<20} {t.src_rows:>9} rows  {t.src_digest[:16]}  = "
                   f"{t.dst_rows:>9} rows  {t.dst_digest[:16]}")
    for t in tables:  # what PostgreSQL could not keep as it was (SRC's digests count it in)
        if t.nul_texts:
            click.echo(f"{t.table}: {t.nul_texts} text(s) held NUL, stored as U+FFFD")
        if t.rekeyed:
            click.echo(f"{t.table}: {t.rekeyed} review decision(s) re-keyed to their reply "
                       f"as stored (NUL as U+FFFD); each applies to the same cells as in SRC")
    if tables and not tables[0].copied:  # a copy stopped after it committed, run again
        click.echo(f"DST already held this copy ({sum(t.src_rows for t in tables)} row(s) in "
                   f"{len(tables)} tables): nothing written; every count and digest equal")
        return
    click.echo(f"copied {sum(t.src_rows for t in tables)} row(s) in {len(tables)} tables; "
               f"every count and digest equal")


@store_cmd.command("migrate")
@db_option
def store_migrate(db) -> None:
    """Bring the store's schema up to date, then exit (an upgrade's step between stopping the
    workers and starting the new version; any process that opens the store does it too).

    \b
    Exit status: 0 up to date · 2 the store cannot be opened or is newer than this version.
    """
    store = open_store(db)
    try:  # the target is not echoed: a PostgreSQL URL may carry a password
        click.echo(f"the store is at schema version {store.schema_version()}")
    finally:
        store.close()
