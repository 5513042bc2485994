"""The ``exam`` group: it only gathers the commands; ``exam.cli.common`` holds what they share.

Each command module imports only click and ``exam.cli.common`` at the top, so building the
group (and ``exam --help``) stays instant.
"""

from __future__ import annotations

import click

from exam.cli import (
    agents,
    bank,
    capture,
    demo,
    grade,
    notify,
    reports,
    review,
    run,
    service,
    share,
    store,
    watch,
)
from exam.cli.common import ExamGroup


@click.group(cls=ExamGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="agent-exam")
def main() -> None:
    """Exam LLM specialist agents behind webhooks, before and after every change."""


for command in (
    bank.bank, grade.grade_cmd,
    run.run_cmd, run.resume_cmd, run.runs_cmd, store.store_cmd, demo.demo_cmd,
    reports.report, reports.compare_cmd, reports.ship_cmd, review.review_cmd,
    notify.notify, share.share_cmd, service.worker_cmd, service.serve_cmd,
    agents.agents_group, agents.init_cmd, capture.capture_cmd, watch.watch_cmd,
):
    main.add_command(command)

if __name__ == "__main__":  # pragma: no cover
    main()
