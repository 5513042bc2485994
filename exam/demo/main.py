"""``exam demo``: simulated specialists on 127.0.0.1, the exam on two versions, the reports."""

from __future__ import annotations

import os
import sysconfig
import threading
import time
from collections.abc import Callable
from pathlib import Path

import click
from werkzeug.serving import WSGIRequestHandler, make_server

from exam.bank import load_bank
from exam.demo.agents import Specialist, create_app
from exam.pipeline.registry import Agent
from exam.pipeline.runner import create_run, execute, job_for
from exam.reports import compare, discrimination, kinds, scorecard
from exam.reports.inputs import LOCAL, Inputs
from exam.reports.selection import select_runs
from exam.store import Store

AGENTS = ("W1", "W2", "W3")
VERSIONS = ("v1", "v2")
SHARED_BANK = Path("share") / "agent-exam" / "bank"  # where pip puts bank/*.json (pyproject data-files)
CHECKOUT = Path(__file__).resolve().parents[2]


def demo_bank_dir(checkout: Path = CHECKOUT) -> Path:
    """The demo's bank: the repository's ``bank/`` in a checkout (or ``pip install -e``), else the
    copy ``pip install`` puts under the environment's data folder, so ``exam demo`` works from any
    directory either way."""
    if (checkout / "bank").is_dir():
        return checkout / "bank"
    schemes = [sysconfig.get_default_scheme(), f"{os.name}_user"]
    found = [Path(sysconfig.get_path("data", scheme)) / SHARED_BANK for scheme in schemes]
    return next((p for p in found if p.is_dir()), found[0])


BANK_DIR = demo_bank_dir()


class QuietHandler(WSGIRequestHandler):
    """No access log: the demo prints the exam, not one line per work order."""

    def log_request(self, *args, **kwargs) -> None:
        pass


class DemoServer:
    """The demo agents in a background thread; ``url(agent, version)`` gives each webhook."""

    def __init__(self, latency_scale: float = 1.0, seed: int = 0, port: int = 0):
        specs = {(a, v): Specialist(a, v, seed, latency_scale) for a in AGENTS for v in VERSIONS}
        self.server = make_server("127.0.0.1", port, create_app(specs), threaded=True,
                                  request_handler=QuietHandler)
        self.port = self.server.server_port
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)

    def __enter__(self) -> DemoServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()

    def url(self, agent: str, version: str) -> str:
        return f"http://127.0.0.1:{self.port}/webhook/{version}/{agent}"

    def agent(self, name: str, version: str, bank_dir: Path = BANK_DIR) -> Agent:
        # W1 gets one retry: its W1-11 (an order number one digit short) needs a second attempt
        return Agent(name=name, url=self.url(name, version), bank=str(bank_dir / f"{name}.json"),
                     timeout_s=20, retries=1 if name == "W1" else 0, concurrency=4,
                     min_interval_s=0.01)


def write_registry(path: Path, server: DemoServer, version: str = "v2",
                   bank_dir: Path = BANK_DIR) -> None:
    """An agents.yaml pointing at the running demo agents (one version), for the README tour."""
    import yaml

    agents = {name: {"description": f"demo {name} ({version})", "url": server.url(name, version),
                     "bank": str(bank_dir / f"{name}.json"), "timeout_s": 20,
                     "retries": 1 if name == "W1" else 0, "concurrency": 4,
                     "min_interval_s": 0.01} for name in AGENTS}
    path.write_text("# written by `exam demo --serve`: the demo agents while it runs\n"
                    + yaml.safe_dump({"agents": agents}, allow_unicode=True, sort_keys=False),
                    encoding="utf-8")


def path_hint() -> str:
    """A line putting ``exam`` on PATH when the shell would not find this one (``make demo``
    runs .venv/bin/exam; the commands printed after it say plain ``exam``)."""
    import os
    import shutil
    import sys

    bin_dir = Path(sys.executable).parent
    found = shutil.which("exam")
    if found and Path(found).resolve().parent == bin_dir.resolve():
        return ""
    activate = bin_dir / "activate"
    if activate.is_file():
        where = os.path.relpath(activate) if not os.path.relpath(activate).startswith("..") \
            else str(activate)
        return f"  source {where}      # first: puts this exam on PATH\n"
    return f"  export PATH={bin_dir}:$PATH      # first: puts this exam on PATH\n"


def run_demo(db: str, repeats: int = 3, bank_dir: Path = BANK_DIR, echo=click.echo,
             serve: Callable[[DemoServer, str], None] | None = None,
             latency_scale: float = 1.0) -> int:
    """Run the demo exam and print its reports; with ``serve``, hand the running demo agents
    and the store to it before they stop (``exam demo --serve``). ``latency_scale`` scales
    the agents' simulated think time (DemoServer)."""

    for agent in AGENTS:
        load_bank(bank_dir / f"{agent}.json")  # a broken bank stops here, before any call
    for suffix in ("", "-wal", "-shm"):
        Path(db + suffix).unlink(missing_ok=True)
    store = Store(db)
    started = time.perf_counter()
    with DemoServer(latency_scale=latency_scale) as server:
        echo(f"demo agents W1, W2, W3 (versions v1 and v2) listening on 127.0.0.1:{server.port}")
        for version in VERSIONS:
            jobs = []
            for name in AGENTS:
                agent = server.agent(name, version, bank_dir)
                jobs.append(job_for(store, create_run(store, agent, version, repeats=repeats),
                                    agent))
            echo(f"running {version}: {sum(j.run.total_cells for j in jobs)} cells "
                 f"({len(jobs)} agents × 20 questions × {repeats} repeats) …")
            execute(store, jobs)
        elapsed = time.perf_counter() - started
        graded = Inputs(store, select_runs(store), LOCAL)  # graded once for every report
        echo(scorecard.render_text(kinds.ask_of("scorecard", graded).report(), details=False))
        _echo_reports(graded, echo)
        if serve is not None:
            serve(server, db)
            return 0
    echo(f"\n{elapsed:.1f} s. The store is {db}; try:\n{path_hint()}"
         f"  exam report scorecard --db {db} --agent W3 --version v1\n"
         f"  exam compare W3 v1 v2 --db {db} --format markdown\n"
         f"  exam report rebalance --db {db}\n"
         f"  exam review --db {db}           # the needs_human queue\n"
         f"  exam runs --db {db}\n"
         f"or keep the demo agents and the dashboard running for the README tour:\n"
         f"  exam demo --serve")
    return 0


def _echo_reports(graded, echo) -> None:
    """The whole story: what changed between the versions, and which questions earn their place."""

    for agent in AGENTS:
        echo("")
        echo(compare.text(kinds.ask_of("compare", graded, agent=agent, old="v1", new="v2",
                                       baseline=False).report()))
    echo("")
    echo(discrimination.text(kinds.ask_of("discrimination", graded).report()))
