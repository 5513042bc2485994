"""`exam notify line`: send scorecards to where the team is; `exam run --notify` uses it too."""

from __future__ import annotations

import sys

import click

from exam.cli.common import InputError, db_option, open_store
from exam.errors import ExamError


def line_settings():
    from exam.line import LineSettings

    return LineSettings.from_env()


def notify_line_runs(store, run_ids, compare_to, settings=None) -> None:
    """Push scorecards to LINE; a failed push is reported and recorded, results are untouched."""
    from exam.line import notify_runs

    settings = settings or line_settings()
    try:
        results = notify_runs(store, settings, run_ids, compare_to)
    except ExamError as exc:
        raise click.ClickException(f"LINE notification not sent: {exc}") from None
    failed = [r for r in results if r["status"] != "delivered"]
    for r in results:
        click.echo(f"LINE notification {r['id']}: {r['outcome']}", err=True)
    if failed:
        ids = " ".join(str(r["id"]) for r in failed)
        raise click.ClickException(f"LINE notification failed (results are stored); resend with: "
                                   f"exam notify line --resend {ids}")


@click.group("notify")
def notify() -> None:
    """Send scorecards to where the team is."""


@notify.command("line")
@click.option("--run", "run_ids", multiple=True, type=int, help="Runs to report (repeatable).")
@click.option("--compare-to", metavar="VERSION",
              help="Version to compare against (default: the previous one).")
@click.option("--resend", "resend", multiple=True, type=int, metavar="NOTIFICATION_ID",
              help="Resend recorded notifications with their original retry keys.")
@click.option("--dry-run", is_flag=True,
              help="Send nothing: print each message's altText and write the Flex JSON to --out.")
@click.option("--out", "out_path", type=click.Path(dir_okay=False), default="results/line-preview.json",
              show_default=True, help="With --dry-run: where the Flex messages are written.")
@db_option
def notify_line(run_ids, compare_to, resend, dry_run, out_path, db) -> None:
    """Push per-agent scorecards to the LINE group (LINE_* settings from the environment).

    Needs LINE_CHANNEL_ACCESS_TOKEN and LINE_GROUP_ID (not with --dry-run); EXAM_PUBLIC_URL
    makes the buttons open the dashboard (docs/line.md).

    \b
    Exit status: 0 delivered (or previewed) · 1 a push failed (recorded; --resend it) ·
    2 bad input or missing settings.
    """
    from exam.line import deliver

    if dry_run:
        _preview(run_ids, compare_to, out_path, db)
        return
    settings = line_settings()
    store = open_store(db)
    if resend:
        results = deliver(store, settings, resend)
        for r in results:
            click.echo(f"LINE notification {r['id']}: {r['outcome']}")
        sys.exit(0 if all(r["status"] == "delivered" for r in results) else 1)
    if not run_ids:
        raise InputError("give --run RUN_ID (or --resend NOTIFICATION_ID)")
    for run_id in run_ids:
        store.get_run(run_id)
    notify_line_runs(store, list(run_ids), compare_to, settings)


def _preview(run_ids, compare_to, out_path, db) -> None:
    import json
    import os
    from pathlib import Path

    from exam.line import build_messages, summaries_for
    from exam.web.share import secret_from_env

    if not run_ids:
        raise InputError("give --run RUN_ID")
    store = open_store(db)
    messages = build_messages(summaries_for(store, list(run_ids), compare_to),
                              (os.environ.get("EXAM_PUBLIC_URL") or "").rstrip("/"),
                              secret_from_env(os.environ))
    for i, m in enumerate(messages, 1):
        click.echo(f"message {i} altText: {m['altText'].replace(chr(10), ' / ')}")
    Path(out_path).parent.mkdir(parents=True, exist_ok=True)
    Path(out_path).write_text(json.dumps(messages, ensure_ascii=False, indent=2), encoding="utf-8")
    click.echo(f"{len(messages)} message(s), nothing sent; the Flex JSON is in {out_path} "
               f"(paste it into LINE's Flex Message Simulator to see it)")
