from __future__ import annotations

import functools
import itertools
import os
import re
import signal
import sys
import tempfile
from pathlib import Path
from types import ModuleType

import pytest

from tests import templates
from tests.backends import DROPPER, STORE_BACKENDS, store_at
from tests.reliability import table as reliability
from tests.templates import new_stores_copied

ROOT = Path(__file__).resolve().parent.parent
BANK_DIR = ROOT / "bank"

# The fast tier (`make check`: `pytest -m "not slow"`) is what is left once every test that needs
# a real part beyond SQLite and 127.0.0.1 HTTP is marked `slow` (real deadlines waited out,
# Python processes started or stopped by a real signal or kill -9, checks against scipy, and
# long computations — simulations of the statistics, a step timed at two sizes, hundreds of
# generated examples — are marked by hand, where they are). Marked here from what a test uses,
# so a new test lands in the right tier without a list to keep:
SLOW_DIRS = ("tests/n8n/", "tests/reliability/")  # a real n8n; kill -9, load, faults, several hosts
SLOW_FIXTURES = {
    "postgres_url", "pg_url",  # a PostgreSQL database (tests/backends.py)
    "n8n", "chromium", "browser",  # a real n8n, a real headless Chromium
}
SLOW_PARAM = "postgresql"  # the PostgreSQL variant of a test run on both backends
SLOW_MODULES = ("tests.processes",)  # `exam serve`, `exam worker`, gunicorn as real processes


def why_slow(item: pytest.Item) -> str | None:
    """Why ``item`` is left out of the fast tier (None: it is in it)."""
    path = item.path.as_posix().removeprefix(f"{ROOT.as_posix()}/")
    if path.startswith(SLOW_DIRS):
        return f"in {path.split('/')[1]}/"
    if used := SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ())):
        return f"uses {', '.join(sorted(used))}"
    callspec = getattr(item, "callspec", None)
    if callspec is not None and any(isinstance(v, str) and v == SLOW_PARAM
                                    for v in callspec.params.values()):
        return "on PostgreSQL"
    module = getattr(item, "module", None)
    if module is not None and _uses_slow_module(module):
        return "starts real service processes (tests/processes.py)"
    return None


@functools.cache
def _uses_slow_module(module: ModuleType) -> bool:
    """Whether a test module uses one of SLOW_MODULES (looked at once per module, not once
    per test: 3% of collecting the suite)."""
    return any(_defined_in(v) in SLOW_MODULES for v in vars(module).values())


def _defined_in(value: object) -> str | None:
    """The module a test module's global comes from (itself, for a module)."""
    if isinstance(value, ModuleType):
        return value.__name__
    return getattr(value, "__module__", None) if callable(value) else None


def pytest_configure(config):
    """Two settings of the test process, made before any test or worker starts:

    - Test folders in memory: a test's stores, logs and files go to /dev/shm (tmpfs) unless
      TMPDIR says where. On this VM's disk a new SQLite store waits ~60 ms for fsync (the
      switch to WAL, the checkpoint at close), on tmpfs ~6 ms; nothing a test checks needs
      the disk (a process killed with -9 leaves its writes in the page cache either way).
    - SIGINT as at a terminal: a shell starts background jobs (`make test &`) with SIGINT
      ignored, which every child inherits across exec, so the tests that stop a process with
      Ctrl-C (SIGINT) would wait for it in vain.
    """
    if "TMPDIR" not in os.environ and os.access("/dev/shm", os.W_OK | os.X_OK):
        os.environ["TMPDIR"] = "/dev/shm"  # inherited by xdist's workers and every process
        tempfile.tempdir = None  # read again by tempfile and pytest's tmp_path_factory
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_sessionfinish(session, exitstatus):
    """The test databases given back during the session are dropped before it ends; the
    reliability table is written (by the controller, when pytest-xdist runs the tests)."""
    for failed in DROPPER.wait(kept_too=True):
        print(f"\ntests/backends.py: a test database was not dropped: {failed}", file=sys.stderr)
    if hasattr(session.config, "workeroutput"):  # an xdist worker: its controller writes
        session.config.workeroutput["reliability"] = reliability.ROWS
    elif reliability.ROWS:
        reliability.write(reliability.ROWS, ROOT / "tests" / "artifacts")


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """An xdist worker finished: its rows of the reliability table join the controller's."""
    reliability.ROWS.extend(getattr(node, "workeroutput", {}).get("reliability", []))


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("slow") is None and why_slow(item):
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config):
    """``-n auto`` for the fast tier (`make check`, ``-m "not slow"``): a worker more than the
    cores. Its tests wait a third of their time (replies from fakes on 127.0.0.1, threads
    handing work over, process pools, the demo's store made by one worker while the others
    wait for it), and a core left idle meanwhile is what bounds the wall time: on 2 cores, 3
    workers took 49–58 s where 2 took 67–71 s (4 took longer: the CPU of starting and
    collecting in each). The slow tier keeps one worker a core (real processes, n8n, Chromium
    and deadlines that a busier machine would make late). PYTEST_XDIST_AUTO_NUM_WORKERS still
    says, as xdist documents."""
    if config.getoption("markexpr") != "not slow" or "PYTEST_XDIST_AUTO_NUM_WORKERS" in os.environ:
        return None  # xdist's own: one a core
    return len(os.sched_getaffinity(0)) + 1


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup`` (the slow tier, make test): a test file to a worker, as ``--dist
    loadfile`` would (module fixtures made once), except that every test of tests/n8n/ goes
    to one worker, so one n8n is started for the session, not one per worker. Done as a
    scheduler of its own: xdist's loadgroup renames each test with its ``xdist_group``, which
    pytest 9's node ids no longer allow (the tests of a file were spread over the workers)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from collections import OrderedDict

    from xdist.scheduler import LoadScopeScheduling

    class ByGroup(LoadScopeScheduling):
        ordered = False

        def _split_scope(self, nodeid: str) -> str:
            return _group(nodeid.split("::", 1)[0])

        def _assign_work_unit(self, node) -> None:
            if not self.ordered:  # the first assignment: the queue is whole, longest first
                self.workqueue = OrderedDict(sorted(
                    self.workqueue.items(), key=lambda unit: -_group_weight(*unit)))
                self.ordered = True
            super()._assign_work_unit(node)

    return ByGroup(config, log)


# What a group of the slow tier takes on one worker of this 2-core machine (s, measured with
# --durations, rounded; a group not listed: 1 s a test). The groups are handed out longest
# first, so the last ones given out are short and both workers end together: in collection
# order (xdist's default is most tests first) a 60 s file of 2 tests came last and one worker
# waited on it alone. A wrong figure costs balance, never a test.
GROUP_SECONDS = {
    "tests/n8n": 130, "tests/reliability/test_multi_host.py": 70,
    "tests/exam/pipeline/test_shard.py": 60, "tests/exam/web/test_dashboard_browser.py": 50,
    "tests/reliability/test_page_scaling.py": 50, "tests/reliability/test_security.py": 45,
    "tests/test_tour.py": 40, "tests/exam/web/test_line_sweep.py": 35,
    "tests/reliability/test_agent_faults.py": 35, "tests/exam/web/test_several_instances.py": 30,
    "tests/reliability/test_what_users_have.py": 30, "tests/reliability/test_secret_redaction.py": 25,
    "tests/exam/store/test_pg_trouble.py": 25, "tests/exam/web/test_gunicorn.py": 25,
}


def _group_weight(group: str, tests: dict) -> float:
    return GROUP_SECONDS.get(group, len(tests))


def _group(path: str) -> str:
    """A test file's group under ``--dist loadgroup``: the file, or tests/n8n for its files."""
    return "tests/n8n" if path.startswith("tests/n8n/") else path


@pytest.fixture(scope="session", autouse=True)
def _store_template(tmp_path_factory):
    """New SQLite stores are copies of one migrated once per session (tests/templates.py);
    ``templates.run_folder()`` is the folder the session's xdist workers share."""
    base = tmp_path_factory.getbasetemp()
    templates.RUN_FOLDER[:] = [base.parent if "PYTEST_XDIST_WORKER" in os.environ else base]
    with new_stores_copied(tmp_path_factory.mktemp("store-template")) as copier:
        yield copier


@pytest.fixture(scope="session", autouse=True)
def _pages_compiled_once():
    """Every app a test builds compiles the same Jinja templates again (a third of a page's
    time in the web tests); a service process compiles each once. The apps of the session
    share one in-memory bytecode cache: each template is compiled once, from its text (a
    changed text is compiled again), and rendered by each app as before."""
    flask = sys.modules.get("flask")
    if flask is None:  # no test of this session builds an app
        yield
        return
    import jinja2

    class Kept(jinja2.BytecodeCache):
        def __init__(self) -> None:
            self.code: dict[str, bytes] = {}

        def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
            if (code := self.code.get(bucket.key)) is not None:
                bucket.bytecode_from_string(code)

        def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
            self.code[bucket.key] = bucket.bytecode_to_string()

    kept, made = Kept(), flask.Flask.create_jinja_environment

    def create_jinja_environment(app):
        env = made(app)
        env.bytecode_cache = kept
        return env

    flask.Flask.create_jinja_environment = create_jinja_environment
    try:
        yield
    finally:
        flask.Flask.create_jinja_environment = made


@pytest.fixture(scope="session", autouse=True)
def _url_builders_compiled_once():
    """Every app a test builds compiles two URL builders per route again (Python code made
    from an AST: ~18 ms of the 23 ms an app takes to make); a service process makes its app
    once. The apps of the session share them: a builder is made from the rule's text and
    parts alone, and reads the rule's converters through the rule it is bound to, so the one
    compiled for an equal rule is the same function. (A rule with defaults has one resolved
    into its code by its converter: compiled for itself, as before.)"""
    rules = sys.modules.get("werkzeug.routing.rules")
    if rules is None:  # no test of this session builds an app
        yield
        return
    made = rules.Rule._compile_builder
    kept: dict[tuple, object] = {}

    def _compile_builder(rule, append_unknown: bool = True):
        if rule.defaults:
            return made(rule, append_unknown)
        key = (rule.rule, tuple(rule._trace), append_unknown)
        if (builder := kept.get(key)) is None:
            builder = kept[key] = made(rule, append_unknown)
        return builder

    rules.Rule._compile_builder = _compile_builder
    try:
        yield
    finally:
        rules.Rule._compile_builder = made


@pytest.fixture(scope="session", autouse=True)
def _sql_compiled_once():
    """Each test's SQLite store is a file of its own, so an engine of its own, and SQLAlchemy
    keeps the SQL it compiled per engine (its cache is keyed by the engine's dialect): every
    store compiled the same few hundred statements again (a tenth of a web test's time); a
    service's store is opened once. The session's SQLite engines share the first one's dialect
    and compiled-statement cache: the same driver, the same arguments (exam/db/engine.py
    makes every SQLite engine alike), so the same SQL."""
    engines = sys.modules.get("exam.db.engine")
    if engines is None:  # no test of this session opens a store
        yield
        return
    made = engines.create_engine
    first: list = []

    def create_engine(url, **kwargs):
        engine = made(url, **kwargs)
        if engine.dialect.name != "sqlite":
            return engine
        if not first:
            first.append(engine)
        else:  # (its own dialect is left to its pool, which only opens and closes with it)
            engine.dialect = first[0].dialect
            engine._compiled_cache = first[0]._compiled_cache
        return engine

    engines.create_engine = create_engine
    try:
        yield
    finally:
        engines.create_engine = made


@pytest.fixture
def real_migrations():
    """Every new store of the test is migrated by Alembic, not copied (tests of migrations)."""
    with templates.real_migrations():
        yield


_FOLDERS = itertools.count()


@pytest.fixture
def tmp_path(request, tmp_path_factory) -> Path:
    """A new, empty folder of the test's own, as pytest's ``tmp_path`` (kept under the session's
    base folder), made in O(1): pytest's reads every folder made so far to number the next
    one, ~2 ms a test by the end of a worker's 1,600 (3 s of CPU a worker)."""
    name = re.sub(r"\W", "_", request.node.name)[:30]
    path = tmp_path_factory.getbasetemp() / f"{name}{next(_FOLDERS)}"
    path.mkdir()
    return path


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch, tmp_path):
    """No test reads the developer's real store, registry or LINE credentials, nor the
    reports an earlier test kept."""
    for key in list(os.environ):
        if key.startswith(("EXAM_", "LINE_")):
            monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("EXAM_DB", str(tmp_path / "exam.db"))
    monkeypatch.setenv("NO_COLOR", "1")
    # reports kept by the process under a key of their content (exam/reports/answer_cache.py),
    # not of the store: another test's copy of the same demo store would be answered from them
    kept = sys.modules.get("exam.reports.answer_cache")
    if kept is not None:
        kept.clear()
    yield
    # a review decision keeps its agent's pages in a background thread (exam/reports/kept.py):
    # done before the next test, whose patches it would otherwise run under
    behind = sys.modules.get("exam.reports.kept")
    if behind is not None:
        behind.kept_behind()


@pytest.fixture(params=STORE_BACKENDS)
def store_url(request, tmp_path):
    """What EXAM_DB is set to: a SQLite file, or a fresh PostgreSQL database (dropped after).

    tests/backends.py says which backends run; PostgreSQL that cannot be reached fails."""
    with store_at(request.param, tmp_path) as url:
        yield url
