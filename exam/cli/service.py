"""`exam serve` and `exam worker`: the service side of the command."""

from __future__ import annotations

import click

from exam.cli.common import agents_option, db_option, open_store


@click.command("worker")
@click.option("--once", is_flag=True, help="Finish at most one queued run, then exit.")
@click.option("--host-id", envvar="EXAM_HOST_ID", metavar="NAME",
              help="This machine's name in run owners (default: the host name, or "
                   "$EXAM_HOST_ID); unique per machine.")
@click.option("--lease", "lease_s", envvar="EXAM_LEASE_SECONDS", type=click.FloatRange(min=1.0),
              metavar="SECONDS",
              help="How long a claim holds a run without a renewal before any worker may take "
                   "it over (default: the store's lease, 30 s; $EXAM_LEASE_SECONDS).")
@agents_option
@db_option
def worker_cmd(once, host_id, lease_s, agents, db) -> None:
    """Execute runs queued by the API or LINE; resumes runs whose worker died.

    \b
    Exit status: 0 stopped (Ctrl-C or SIGTERM: its run goes back to the queue; --once done) ·
    2 bad input (settings, the store).
    """
    import logging
    import os
    import signal

    from exam.pipeline.worker import work_forever, work_once
    from exam.reports.kept import keep_finished
    from exam.store import LEASE_S

    lease_s = lease_s or LEASE_S
    if host_id:  # the store names run owners by it (exam.store.host_id)
        os.environ["EXAM_HOST_ID"] = host_id
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    if once:
        store = open_store(db)
        run_id = work_once(store, agents, lease_s, after=keep_finished)
        click.echo(f"run {run_id} finished" if run_id else "nothing queued")
        return
    signal.signal(signal.SIGTERM, _stop)  # systemd's stop, a deploy: like Ctrl-C
    try:
        work_forever(db, agents, stale_after_s=lease_s, after=keep_finished)
    except KeyboardInterrupt:  # a run it held is handed back and logged as such ("given back")
        click.echo("worker stopped", err=True)


def _stop(_signum, _frame) -> None:
    raise KeyboardInterrupt


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (keep 127.0.0.1 behind a proxy).")
@click.option("--port", default=8000, show_default=True, type=int, help="Port to listen on.")
@click.option("--no-worker", is_flag=True, help="Do not start an in-process worker.")
@click.option("--dev", is_flag=True,
              help="Flask's development server instead of gunicorn (one process, for debugging).")
@agents_option
@db_option
def serve_cmd(host, port, no_worker, dev, agents, db) -> None:
    """The API, the dashboard, the LINE webhook, and a worker, served by gunicorn.

    Several instances or more gunicorn workers: gunicorn "exam.web.app:create_app()" plus
    `exam worker` (docs/service.md).
    Needs EXAM_API_TOKEN (or EXAM_LOCAL_DEV=true on your own machine); the LINE webhook also
    LINE_CHANNEL_SECRET and LINE_CHANNEL_ACCESS_TOKEN (docs/line.md).

    \b
    Exit status: 0 stopped · 2 bad input (a missing token, a bad setting, the store).
    """
    from exam.pipeline.worker import start_in_thread
    from exam.reports.kept import keep_finished
    from exam.web.app import create_app
    from exam.web.server import serve

    overrides = {k: v for k, v in (("DB", db), ("AGENTS", agents)) if v}
    app = create_app(overrides)
    queue_worker = None if no_worker else (
        lambda: start_in_thread(app.config["DB"], app.config["AGENTS"], after=keep_finished))
    click.echo(f"serving on http://{host}:{port}/ (Ctrl-C stops)", err=True)
    serve(app, host, port, dev=dev, after_fork=queue_worker)
