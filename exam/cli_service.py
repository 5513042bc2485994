"""`exam serve`, `exam worker` and `exam notify`: the service side of the command."""

from __future__ import annotations

import sys

import click

from exam.cli import InputError, _store, agents_option, db_option, fail_input, main
from exam.errors import ExamError


def channel_settings(channel, *, sending: bool = True):
    """The channel's settings from the environment; a missing one is bad input (exit 2)."""
    import os

    try:
        return channel.settings(os.environ, sending=sending)
    except ExamError as exc:
        raise fail_input(exc) from None


def notify_channel_runs(store, name, run_ids, compare_to, settings=None) -> None:
    """Tell channel ``name`` about these runs; a failed send is reported and recorded, results
    are untouched."""
    from exam import notify

    channel = notify.get(name)
    settings = settings or channel_settings(channel)
    try:
        results = notify.notify_runs(store, channel, settings, run_ids, compare_to)
    except ExamError as exc:
        raise click.ClickException(f"{channel.label} notification not sent: {exc}") from None
    failed = [r for r in results if r["status"] != "delivered"]
    for r in results:
        click.echo(f"{channel.label} notification {r['id']}: {r['outcome']}", err=True)
    if failed:
        ids = " ".join(str(r["id"]) for r in failed)
        raise click.ClickException(f"{channel.label} notification failed (results are stored); "
                                   f"resend with: exam notify {channel.name} --resend {ids}")


class ChannelGroup(click.Group):
    """`exam notify CHANNEL`: one subcommand per registered channel (exam/notify), so a
    channel registered by a plugin or a test is offered without a change here."""

    @property
    def commands(self) -> dict[str, click.Command]:
        from exam import notify

        made = self.__dict__.setdefault("_made", {})
        return {n: made[n] if n in made else made.setdefault(n, _channel_command(n))
                for n in notify.names()}

    @commands.setter
    def commands(self, _value) -> None:  # click sets it in __init__; the registry decides
        pass


@main.group(cls=ChannelGroup)
def notify() -> None:
    """Send scorecards to where the team is."""


def _channel_command(name: str) -> click.Command:
    from exam import notify as notifications

    @click.command(name, help=notifications.get(name).help + """

    \b
    Exit status: 0 delivered (or previewed) · 1 a send failed (recorded; --resend it) ·
    2 bad input or missing settings.
    """)
    @click.option("--run", "run_ids", multiple=True, type=int, help="Runs to report (repeatable).")
    @click.option("--compare-to", metavar="VERSION",
                  help="Version to compare against (default: the previous one).")
    @click.option("--resend", "resend", multiple=True, type=int, metavar="NOTIFICATION_ID",
                  help="Resend recorded notifications with their original retry keys.")
    @click.option("--dry-run", is_flag=True,
                  help="Send nothing: print what would be sent and write it to --out.")
    @click.option("--out", "out_path", type=click.Path(dir_okay=False),
                  default=f"results/{name}-preview.json", show_default=True,
                  help="With --dry-run: where the messages are written (JSON).")
    @db_option
    def command(run_ids, compare_to, resend, dry_run, out_path, db) -> None:
        _notify(name, run_ids, compare_to, resend, dry_run, out_path, db)

    return command


def _notify(name, run_ids, compare_to, resend, dry_run, out_path, db) -> None:
    from exam import notify

    channel = notify.get(name)
    if dry_run:
        _preview(channel, run_ids, compare_to, out_path, db)
        return
    settings = channel_settings(channel)
    store = _store(db)
    if resend:
        try:
            results = notify.deliver(store, channel, settings, resend)
        except ExamError as exc:
            raise fail_input(exc) from None
        for r in results:
            click.echo(f"{channel.label} notification {r['id']}: {r['outcome']}")
        sys.exit(0 if all(r["status"] == "delivered" for r in results) else 1)
    if not run_ids:
        raise InputError("give --run RUN_ID (or --resend NOTIFICATION_ID)")
    try:
        for run_id in run_ids:
            store.get_run(run_id)
    except ExamError as exc:
        raise fail_input(exc) from None
    notify_channel_runs(store, name, list(run_ids), compare_to, settings)


def _preview(channel, run_ids, compare_to, out_path, db) -> None:
    import json
    from pathlib import Path

    from exam.notify.summary import summaries_for

    if not run_ids:
        raise InputError("give --run RUN_ID")
    store = _store(db)
    settings = channel_settings(channel, sending=False)
    try:
        payloads = channel.payloads(summaries_for(store, list(run_ids), compare_to), settings)
    except ExamError as exc:
        raise fail_input(exc) from None
    lines, document = channel.preview(payloads, out_path)
    Path(out_path).parent.mkdir(parents=True, exist_ok=True)
    Path(out_path).write_text(json.dumps(document, ensure_ascii=False, indent=2), encoding="utf-8")
    for line in lines:
        click.echo(line)


@main.command("worker")
@click.option("--once", is_flag=True, help="Finish at most one queued run, then exit.")
@agents_option
@db_option
def worker_cmd(once, agents, db) -> None:
    """Execute runs queued by the API or LINE; resumes runs whose worker died.

    \b
    Exit status: 0 stopped (Ctrl-C, or --once done) · 2 bad input (settings, the store).
    """
    import logging

    from exam.store import Store
    from exam.worker import work_forever, work_once

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    if once:
        store = Store.open(db)
        run_id = work_once(store, agents)
        click.echo(f"run {run_id} finished" if run_id else "nothing queued")
        return
    try:
        work_forever(db, agents)
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
