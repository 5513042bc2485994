"""Which stored runs a report reads: written once for the CLI, the API and the dashboard.

A report never reads runs still waiting for their first start (nothing arrived yet) nor
excluded ones (a person left them out); a run given back to the queue after it started (its
worker stopped, the store went away for a moment) is read with what arrived, as unfinished;
a run asked for by id is read as asked. A version label may cover several runs: every one of
them counts. A compare selects every version of the agent, not only the two compared: which one had
shipped before NEW is found by walking them; its verdict reads OLD's and NEW's cells alone.
Asking for what is not stored raises one ``SelectionError`` whose message every surface shows
as it is (CLI exit 2, API 404, a line on the page).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from exam.errors import ExamError
from exam.records import RunState
from exam.store import Run, Store


class SelectionError(ExamError):
    """Nothing stored matches what was asked for (an agent, a version, a date)."""


WATCH_KEY = "watch"  # a run's settings key marking a round of `exam watch` (exam/decide/watch.py)


def watch_round(run: Run) -> bool:
    """A run `exam watch` made: the shipped version asked again under its own label. Never one
    of the version's counted runs: it is compared with them, and would else move them (and the
    shipped-version walk). Read only by the watch, or by id."""
    return bool(run.settings.get(WATCH_KEY))


def watch_of(run: Run) -> dict[str, int] | None:
    """{"watch": the watch's id (its first round's run id), "round": n} for a round of
    `exam watch`; None for any other run."""
    mark = run.settings.get(WATCH_KEY)
    if not mark:
        return None
    return {"watch": mark.get("first", run.id), "round": mark.get("round")}


def select_runs(store: Store, agent: str | None = None, version: str | None = None,
                run_ids: Iterable[int] = ()) -> list[Run]:
    """The runs a report reads: runs queued and never started, excluded runs and the rounds
    of a watch are left out (a run asked for by id is read as asked). Empty when nothing
    matches."""
    ids = list(run_ids)
    if ids:
        return [store.get_run(i) for i in ids]
    return [r for r in store.list_runs(agent, version)
            if not never_started(r) and not r.excluded_reason and not watch_round(r)]


def never_started(run: Run) -> bool:
    """Queued and never claimed: nothing of it can have arrived. A run given back to the queue
    keeps its start time (and its cells)."""
    return run.status == RunState.QUEUED and run.started_at is None


def report_runs(store: Store, agent: str | None = None, version: str | None = None,
                run_ids: Iterable[int] = (), since: dt.datetime | None = None) -> list[Run]:
    """The runs of a scorecard, a discrimination or a rebalance; ``SelectionError`` when none."""
    runs = select_runs(store, agent, version, run_ids)
    if since is not None:
        runs = [r for r in runs if r.created_at >= since.timestamp()]
    if not runs:
        what = " ".join(x for x in (agent and f"agent {agent}", version and f"version {version}",
                                    since and f"since {since:%Y-%m-%d}") if x)
        gone = excluded_runs(store, agent, version, since)
        if gone:
            raise SelectionError(f"every run that matches {what or 'anything'} is excluded: "
                                 + excluded_words(gone))
        raise SelectionError("no stored runs" + (f" match {what}" if what else "")
                             + ": start one with exam run AGENT --version LABEL")
    return runs


def versions(runs: Iterable[Run]) -> list[str]:
    """Version labels in the order of their first run."""
    out: list[str] = []
    for r in sorted(runs, key=lambda r: r.id):
        if r.version not in out:
            out.append(r.version)
    return out


def compare_runs(store: Store, agent: str, old: str | None, new: str) -> list[Run]:
    """Every counted run of ``agent`` (each version: the walk to the shipped one), after
    checking that ``old`` (None: the shipped version, found later) and ``new`` both have one."""
    every = report_runs(store, agent)
    known = versions(every)
    for label in (old, new):
        if label is not None and label not in known:
            gone = excluded_runs(store, agent, label)
            if gone:
                raise SelectionError(f"every run of {agent} version {label!r} is excluded: "
                                     + excluded_words(gone))
            raise SelectionError(f"no stored run of {agent} version {label!r} "
                                 f"(versions: {', '.join(known)})")
    return every


def excluded_runs(store: Store, agent: str | None = None, version: str | None = None,
                  since: dt.datetime | None = None) -> list[Run]:
    """The excluded runs that match (oldest first): what a report that found nothing says."""
    runs = [r for r in store.list_runs(agent, version) if r.excluded_reason
            and not never_started(r)]
    if since is not None:
        runs = [r for r in runs if r.created_at >= since.timestamp()]
    return sorted(runs, key=lambda r: r.id)


def excluded_words(runs: Iterable[Run]) -> str:
    """Excluded runs said the one way: each with its reason, and how to put it back."""
    runs = list(runs)
    said = "; ".join(f"run {r.id} ({r.agent} {r.version}): {r.excluded_reason}" for r in runs[:5])
    more = f" and {len(runs) - 5} more" if len(runs) > 5 else ""
    how = (f"exam runs include {runs[0].id}" if len(runs) == 1 else
           "exam runs include RUN_ID, for " + ", ".join(str(r.id) for r in runs[:5]) + more)
    return f"{said}{more} (to count it again: {how})"


def latest_pair(store: Store, agent: str | None) -> tuple[str | None, str | None]:
    """(old, new) when none is asked for: the agent's last two versions with a counted run (a
    version only queued, or only excluded, has nothing to compare yet: the Compare page would
    open on an error while a run waits)."""
    known = versions(select_runs(store, agent)) if agent else []
    return (known[-2] if len(known) >= 2 else None), (known[-1] if known else None)
