"""`exam demo`: simulated specialists on 127.0.0.1, examined on two versions."""

from __future__ import annotations

import sys

import click

from exam.cli.common import INTERRUPTED, InputError


@click.command("demo")
@click.option("--db", type=click.Path(dir_okay=False), default="results/demo.db", show_default=True,
              help="The demo store: rebuilt from scratch by every `exam demo`.")
@click.option("--repeats", type=click.IntRange(min=1), default=3, show_default=True,
              help="Repeats of every question per version.")
@click.option("--serve", is_flag=True,
              help="Afterwards keep the demo agents and the dashboard running (Ctrl-C stops), "
                   "so every command of the README tour works on the demo data.")
@click.option("--port", type=click.IntRange(1, 65535), default=8000, show_default=True,
              help="With --serve: the dashboard's port on 127.0.0.1.")
# the tests' own (hidden): the tour test waits on the demo agents' simulated think time alone
@click.option("--think-scale", type=click.FloatRange(min=0), default=1.0, hidden=True,
              help="Scale the demo agents' simulated think time (1: as a model would take).")
def demo_cmd(db, repeats, serve, port, think_scale) -> None:
    """Start simulated W1/W2/W3 specialists on 127.0.0.1 and run the exam on two versions.

    \b
    Exit status: 0 done · 2 bad input (a broken demo bank) · 130 interrupted.
    """
    from exam.demo.main import run_demo

    sys.exit(run_demo(db, repeats, serve=_serve_demo(port) if serve else None,
                      latency_scale=think_scale))


def _serve_demo(port: int):
    """What ``exam demo --serve`` does once the demo exam is done: serve until Ctrl-C."""

    def serve(server, db: str) -> None:
        import os
        import secrets
        from pathlib import Path

        from exam.demo.main import write_registry
        from exam.pipeline.worker import start_in_thread
        from exam.reports.kept import keep_finished
        from exam.web.app import create_app
        from exam.web.server import ListenError
        from exam.web.server import serve as serve_app

        registry = Path(db).with_name("demo-agents.yaml")
        write_registry(registry, server)
        # a token of the team's own (this shell's environment) is never printed: a terminal's
        # scroll-back and a CI log keep what they are shown; a token made here is the demo's
        token = os.environ.get("EXAM_API_TOKEN")
        shown = "your EXAM_API_TOKEN (from the environment, not shown)" if token else None
        token = token or secrets.token_urlsafe(16)
        # `exam share show` and `exam run --against` read the service's token: a token made
        # here is the demo's own, so the second terminal gets it too; the team's is theirs
        made = "" if shown else f" EXAM_API_TOKEN={token}"
        app = create_app({"DB": db, "AGENTS": str(registry), "API_TOKEN": token})
        click.echo(
            f"\n{'=' * 72}\nServing the demo until Ctrl-C (every `exam demo` rebuilds {db}):\n"
            f"  dashboard    http://127.0.0.1:{port}/   (sign in with the token below)\n"
            f"  API token    {shown or token}\n"
            f"  demo agents  {server.url('W1', 'v2')} (and W2, W3; v1 as well)\n\n"
            f"In another terminal, point the exam at them and follow the README tour:\n"
            f"  source .venv/bin/activate\n"
            f"  export EXAM_DB={db} EXAM_AGENTS={registry}{made}\n"
            f"  exam runs\n"
            f"  exam run W1 W2 W3 --version v3 --repeats 3")
        try:
            serve_app(app, "127.0.0.1", port, after_fork=lambda: start_in_thread(
                db, str(registry), after=keep_finished))
        except ListenError as exc:
            raise InputError(str(exc)) from None
        click.echo("demo stopped", err=True)  # the server returns only on Ctrl-C
        sys.exit(INTERRUPTED)

    return serve
