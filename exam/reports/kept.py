"""What the pages read of a run, made once when the run finishes rather than on the first
view after it (issue 35: a page's first view at a year of history in ≤ 1 s).

A finished run's graded cells are kept whole with their counts and cost in its head
(exam/reports/graded_runs.py), its agent's walk over every version is kept
(exam/reports/changes.py), and the answers its LINE links and the dashboard open first are
kept in the store (exam/reports/answer_cache.py): its version's scorecard and that version's
verdict against the last version shipped before it, as a page and as the API gives them, and
discrimination. Each is made lazily by the first view that needs it; the worker and
``exam run`` make them here as each run ends, so those first views read what is kept. Never
fatal: the run is stored and done whatever happens here, and a view makes whatever is missing
on its own.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor

from exam.errors import ExamError, StoreError
from exam.reports import answer_cache, kinds
from exam.reports.inputs import LOCAL
from exam.reports.selection import report_runs
from exam.store import Store

log = logging.getLogger("exam.reports.kept")


PAGE, API = "page", "api"


def _asked_first(run_id: int, agent: str, version: str) -> list[tuple[str, dict, tuple]]:
    """The reports a finished run's links ask for first, with the arguments they ask with
    (kinds.parse of what their query holds, and the API's own, so the keys are the views'
    own), and on which surfaces."""
    def parsed(name: str, **query: str) -> dict:
        return kinds.parse(kinds.get(name), lambda n: [query[n]] if n in query else [])

    def api(name: str, **fixed) -> dict:
        return kinds.get(name).api_args | parsed(name) | fixed

    return [("scorecard", parsed("scorecard") | {"agent": agent, "version": version}, (PAGE,)),
            ("scorecard", api("scorecard", run_id=(run_id,)), (API,)),
            ("compare", parsed("compare", agent=agent, new=version) | {"old": None}, (PAGE, API)),
            ("discrimination", parsed("discrimination"), (PAGE, API)),
            ("discrimination", parsed("discrimination", agent=agent), (PAGE, API))]


def keep_finished(store: Store, run_id: int) -> bool:
    """Keep the graded cells of ``run_id``, its agent's walk and the answers its pages ask for
    first (``_asked_first``); False when they could not be made (said in the log: a view
    makes them instead)."""
    try:
        run = store.get_run(run_id)
        # the overview grades and keeps what is not kept yet, and keeps the agent's walk
        kinds.build("overview", store, LOCAL, agent=run.agent)
        for name, args, surfaces in _asked_first(run.id, run.agent, run.version):
            try:
                asked = kinds.ask(name, store, LOCAL, **args)
                if PAGE in surfaces:
                    answer_cache.page_answer(asked)
                if API in surfaces and kinds.get(name).api_path is not None:
                    answer_cache.api_answer(asked)
            except StoreError:
                raise
            except ExamError:  # nothing to compare with yet (the first version), and the like
                continue
        return True
    except StoreError as exc:  # the store went away meanwhile: the worker's own loop says so
        log.warning("run %s: what its pages read is not kept yet (%s); the first view makes it",
                    run_id, exc)
    except Exception:  # a bug here never costs the run: logged, and the pages make it later
        log.exception("run %s: what its pages read could not be kept; the first view makes it",
                      run_id)
    return False


def keep_decided(store: Store, agent: str) -> bool:
    """What the pages read of ``agent`` made again after a review decision on its replies
    (its walk and its newest version's answers are keyed by the decisions on its questions):
    as ``keep_finished`` of its newest counted run. False when there is none or it failed."""
    try:
        newest = max(report_runs(store, agent), key=lambda r: r.id)
    except ExamError:  # no counted run left (excluded meanwhile)
        return False
    return keep_finished(store, newest.id)


# -- after a decision on the dashboard: kept in the background, one agent at a time --------
_behind = ThreadPoolExecutor(max_workers=1, thread_name_prefix="exam-keep")
_asked: set[tuple[str, str]] = set()  # (store, agent) waiting for the thread
_asked_lock = threading.Lock()


def keep_later(target: str, agent: str) -> Future | None:
    """``keep_decided`` of ``agent`` in this process's background thread, on its own
    connection to the store at ``target``: the decision's page answers at once, and the next
    view of the overview or the agent's scorecard reads what is kept instead of walking every
    version again (2–4 s at 100,000 replies). Asked again while waiting, it is one keep; asked
    while one runs, another follows (that one may have read before the decision). None when
    one is waiting already."""
    with _asked_lock:
        if (target, agent) in _asked:
            return None
        _asked.add((target, agent))
    return _behind.submit(_keep_now, target, agent)


def _keep_now(target: str, agent: str) -> bool:
    with _asked_lock:
        _asked.discard((target, agent))
    try:
        store = Store.open(target)
    except StoreError as exc:
        log.warning("%s: what its pages read is not kept yet (%s); the first view makes it",
                    agent, exc)
        return False
    try:
        return keep_decided(store, agent)
    finally:
        store.close()


def kept_behind() -> None:
    """Wait until every keep asked of the background thread so far is done (tests; a
    process shutting down)."""
    _behind.submit(lambda: None).result()
