"""`exam serve`, `exam worker` and `exam notify`: the service side of the command."""

from __future__ import annotations

import sys

import click

from exam.cli import InputError, _store, agents_option, db_option, fail_input, main, store_cmd
from exam.errors import ExamError


def line_settings():
    from exam.line import LineSettings

    try:
        return LineSettings.from_env()
    except ExamError as exc:
        raise fail_input(exc) from None


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


@main.group()
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
    store = _store(db)
    if resend:
        try:
            results = deliver(store, settings, resend)
        except ExamError as exc:
            raise fail_input(exc) from None
        for r in results:
            click.echo(f"LINE notification {r['id']}: {r['outcome']}")
        sys.exit(0 if all(r["status"] == "delivered" for r in results) else 1)
    if not run_ids:
        raise InputError("give --run RUN_ID (or --resend NOTIFICATION_ID)")
    try:
        for run_id in run_ids:
            store.get_run(run_id)
    except ExamError as exc:
        raise fail_input(exc) from None
    notify_line_runs(store, list(run_ids), compare_to, settings)


def _preview(run_ids, compare_to, out_path, db) -> None:
    import json
    import os
    from pathlib import Path

    from exam.line import build_messages, summaries_for
    from exam.web.share import secret_from_env

    if not run_ids:
        raise InputError("give --run RUN_ID")
    store = _store(db)
    try:
        messages = build_messages(summaries_for(store, list(run_ids), compare_to),
                                  (os.environ.get("EXAM_PUBLIC_URL") or "").rstrip("/"),
                                  secret_from_env(os.environ))
    except ExamError as exc:
        raise fail_input(exc) from None
    for i, m in enumerate(messages, 1):
        click.echo(f"message {i} altText: {m['altText'].replace(chr(10), ' / ')}")
    Path(out_path).parent.mkdir(parents=True, exist_ok=True)
    Path(out_path).write_text(json.dumps(messages, ensure_ascii=False, indent=2), encoding="utf-8")
    click.echo(f"{len(messages)} message(s), nothing sent; the Flex JSON is in {out_path} "
               f"(paste it into LINE's Flex Message Simulator to see it)")


@store_cmd.command("migrate")
@db_option
def store_migrate(db) -> None:
    """Bring the store's schema up to date, then exit (an upgrade's step between stopping the
    workers and starting the new version; any process that opens the store does it too).

    \b
    Exit status: 0 up to date · 2 the store cannot be opened or is newer than this version.
    """
    from exam.errors import StoreError
    from exam.store import Store

    try:
        store = Store.open(db)
    except StoreError as exc:
        raise fail_input(exc) from None
    try:  # the target is not echoed: a PostgreSQL URL may carry a password
        click.echo(f"the store is at schema version {store.schema_version()}")
    finally:
        store.close()


@main.command("worker")
@click.option("--once", is_flag=True, help="Finish at most one queued run, then exit.")
@click.option("--host-id", envvar="EXAM_HOST_ID", metavar="NAME",
              help="This machine's name in run owners (default: the host name, or "
                   "$EXAM_HOST_ID); unique per machine.")
@click.option("--lease", "lease_s", envvar="EXAM_LEASE_SECONDS", default=30.0, show_default=True,
              type=click.FloatRange(min=1.0), metavar="SECONDS",
              help="A run on another host without a heartbeat for this long is taken over "
                   "($EXAM_LEASE_SECONDS).")
@agents_option
@db_option
def worker_cmd(once, host_id, lease_s, agents, db) -> None:
    """Execute runs queued by the API or LINE; resumes runs whose worker died.

    \b
    Exit status: 0 stopped (Ctrl-C, or --once done) · 2 bad input (settings, the store).
    """
    import logging
    import os

    from exam.store import Store
    from exam.worker import work_forever, work_once

    if host_id:  # the store names run owners by it (exam.store.host_id)
        os.environ["EXAM_HOST_ID"] = host_id
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    if once:
        store = Store.open(db)
        run_id = work_once(store, agents, lease_s)
        click.echo(f"run {run_id} finished" if run_id else "nothing queued")
        return
    try:
        work_forever(db, agents, stale_after_s=lease_s)
    except KeyboardInterrupt:
        click.echo("worker stopped; an unfinished run will be resumed by the next worker", err=True)


@main.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (keep 127.0.0.1 behind a proxy).")
@click.option("--port", default=8000, show_default=True, type=int, help="Port to listen on.")
@click.option("--no-worker", is_flag=True, help="Do not start an in-process worker.")
@agents_option
@db_option
def serve_cmd(host, port, no_worker, agents, db) -> None:
    """Development server: the API, the dashboard, the LINE webhook, and a worker.

    Production: gunicorn "exam.app:create_app()" plus `exam worker` (docs/service.md).
    Needs EXAM_API_TOKEN (or EXAM_LOCAL_DEV=true on your own machine); the LINE webhook also
    LINE_CHANNEL_SECRET and LINE_CHANNEL_ACCESS_TOKEN (docs/line.md).

    \b
    Exit status: 0 stopped · 2 bad input (a missing token, a bad setting, the store).
    """
    import os

    from exam.app import create_app
    from exam.worker import start_in_thread

    overrides = {k: v for k, v in (("DB", db), ("AGENTS", agents)) if v}
    try:
        app = create_app(overrides)
    except ExamError as exc:
        raise fail_input(exc) from None
    if not no_worker and os.environ.get("WERKZEUG_RUN_MAIN") is None:
        start_in_thread(app.config["DB"], app.config["AGENTS"])
    app.run(host=host, port=port, threaded=True, use_reloader=False)
