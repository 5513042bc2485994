"""`exam notify CHANNEL`: send scorecards to where the team is (one subcommand per registered
channel, exam/notify); `exam run --notify` uses it too."""

from __future__ import annotations

import sys

import click

from exam.cli.common import InputError, db_option, open_store
from exam.errors import ExamError


def channel_settings(channel, *, sending: bool = True):
    """The channel's settings from the environment; a missing one is bad input (exit 2)."""
    import os

    return channel.settings(os.environ, sending=sending)  # an ExamError is bad input (exit 2)


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


@click.group("notify", cls=ChannelGroup)
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
                  help="Version to compare against (default: the last version shipped before "
                       "it: exam ship AGENT).")
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
    store = open_store(db)
    if resend:
        results = notify.deliver(store, channel, settings, resend)
        for r in results:
            click.echo(f"{channel.label} notification {r['id']}: {r['outcome']}")
        sys.exit(0 if all(r["status"] == "delivered" for r in results) else 1)
    if not run_ids:
        raise InputError("give --run RUN_ID (or --resend NOTIFICATION_ID)")
    for run_id in run_ids:
        store.get_run(run_id)
    notify_channel_runs(store, name, list(run_ids), compare_to, settings)


def _preview(channel, run_ids, compare_to, out_path, db) -> None:
    import json
    from pathlib import Path

    from exam.notify.summary import summaries_for

    if not run_ids:
        raise InputError("give --run RUN_ID")
    store = open_store(db)
    settings = channel_settings(channel, sending=False)
    payloads = channel.payloads(summaries_for(store, list(run_ids), compare_to), settings)
    lines, document = channel.preview(payloads, out_path)
    try:  # the default is relative: a service user's cwd is often not theirs to write
        Path(out_path).parent.mkdir(parents=True, exist_ok=True)
        Path(out_path).write_text(json.dumps(document, ensure_ascii=False, indent=2),
                                  encoding="utf-8")
    except OSError as exc:
        raise InputError(f"--out {out_path}: cannot write the preview "
                         f"({exc.strerror or exc}); give --out a path you may write") from None
    for line in lines:
        click.echo(line)
