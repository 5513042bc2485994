"""What the pages read of a run, made once when the run finishes rather than on the first
view after it (issue 35: a page's first view at a year of history in ≤ 1 s).

A finished run's graded cells are kept whole with their counts and cost in its head
(exam/reports/graded_runs.py), and its agent's walk over every version is kept
(exam/reports/changes.py). Both are made lazily by the first report that needs them; the
worker and ``exam run`` make them here as each run ends, so the overview, the runs page and
discrimination read what is kept. Never fatal: the run is stored and done whatever happens
here, and a report makes whatever is missing on its own.
"""

from __future__ import annotations

import logging

from exam.errors import StoreError
from exam.reports import kinds
from exam.reports.inputs import LOCAL
from exam.store import Store

log = logging.getLogger("exam.reports.kept")


def keep_finished(store: Store, run_id: int) -> bool:
    """Keep the graded cells of ``run_id`` and its agent's walk; False when they could not be
    made (said in the log: a report makes them on its first view instead)."""
    try:
        run = store.get_run(run_id)
        kinds.build("overview", store, LOCAL, agent=run.agent)
        return True
    except StoreError as exc:  # the store went away meanwhile: the worker's own loop says so
        log.warning("run %s: what its pages read is not kept yet (%s); the first view makes it",
                    run_id, exc)
    except Exception:  # a bug here never costs the run: logged, and the pages make it later
        log.exception("run %s: what its pages read could not be kept; the first view makes it",
                      run_id)
    return False
