from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import unquote

from exam.pipeline.registry import Agent
from exam.share import ShareError, decode_token

FACTS = ["備貨中"]


def write_bank(tmp_path: Path, behaviours: list[str], name: str = "T", **extra) -> Path:
    questions = [
        {"case_no": f"{name}-{i + 1:02d}", "category": "test",
         "input": {"task_id": f"{name}-{i + 1:02d}", "behaviour": b, "question": "查 A10302"},
         "expect_status": "ok", "expect_facts": FACTS, **extra}
        for i, b in enumerate(behaviours)
    ]
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"agent": name, "questions": questions}, ensure_ascii=False),
                    encoding="utf-8")
    return path


def agent_for(url: str, bank: Path, **kw) -> Agent:
    kw.setdefault("timeout_s", 30.0)  # generous: a busy machine may be slow to answer
    return Agent(name=bank.stem, url=url, bank=str(bank), **kw)


def registry_env(tmp_path: Path, url: str, bank: Path, **agent) -> dict[str, str]:
    """An agents.yaml with one agent T, and the environment pointing `exam` at it."""
    import os

    import yaml

    registry = tmp_path / "agents.yaml"
    registry.write_text(yaml.safe_dump({"agents": {"T": {
        "url": url, "bank": str(bank), "timeout_s": 5, **agent}}}))
    return {**os.environ, "EXAM_DB": str(tmp_path / "exam.db"), "EXAM_AGENTS": str(registry)}


def wait_for(predicate, what: str, timeout: float = 60.0) -> None:
    """Poll ``predicate`` until it holds; fail naming ``what`` after ``timeout`` seconds.

    A deadline, not a sleep: on a quiet machine this returns in milliseconds, on a busy one
    it waits as long as it must.
    """
    import time

    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.02)


def stored_cells(db: Path) -> int:
    """Cells in a store another process is writing (0 while it does not exist yet)."""
    import sqlite3

    if not db.exists():
        return 0
    con = sqlite3.connect(db, timeout=5)
    try:
        return con.execute("SELECT COUNT(*) FROM cells").fetchone()[0]
    except sqlite3.OperationalError:  # the schema is not there yet
        return 0
    finally:
        con.close()


def run_status(db: Path, run_id: int = 1) -> str | None:
    import sqlite3

    if not db.exists():
        return None
    con = sqlite3.connect(db, timeout=5)
    try:
        row = con.execute("SELECT status FROM runs WHERE id=?", (run_id,)).fetchone()
    except sqlite3.OperationalError:
        return None
    finally:
        con.close()
    return row[0] if row else None


# The demo's stores, made once per test run and copied for each caller: the SQLite file (made
# by the first pytest-xdist worker that needs it, read by the others), the PostgreSQL database
# used as a template (one per worker: a template is copied only with no one connected).
_DEMO: dict[str, str] = {}


def _demo_made(backend: str) -> str:
    """The test run's demo store on ``backend`` (made the first time): a path or a database
    name. Never handed out itself: callers get copies."""
    from exam.db import engine as db_engine
    from exam.demo.main import run_demo
    from tests.backends import session_database
    from tests.conftest import BANK_DIR

    if backend not in _DEMO:
        if backend == "sqlite":
            _DEMO[backend] = str(_sqlite_demo()[0])
        else:
            url = session_database()
            run_demo(url, repeats=1, bank_dir=BANK_DIR, echo=lambda *_: None)
            db_engine.dispose(url)  # a template is copied only with no one connected
            _DEMO[backend] = url.rsplit("/", 1)[1]
    return _DEMO[backend]


def _sqlite_demo() -> tuple[Path, Path]:
    """The demo's SQLite store of this test run, and what the demo printed making it (JSON:
    its exit status and lines): made by the first worker to ask, under a lock the others wait
    on, in the folder every worker of the run shares. Its agents answer without the simulated
    think time (``latency_scale=0``, as elsewhere in the tests): 1.3 s rather than 4 s, which
    every worker that wants a copy early waited out; no test reads the demo's latencies (they
    are the machine's, never the same twice), and its answers, repeats and printed reports are
    those of `exam demo`."""
    import fcntl
    import functools
    import json

    import pytest

    from exam.db import engine as db_engine
    from exam.demo import main as demo
    from exam.demo.main import run_demo
    from tests.conftest import BANK_DIR
    from tests.templates import run_folder

    home = run_folder() / "demo"
    home.mkdir(exist_ok=True)
    db, said = home / "demo.db", home / "demo.json"
    with open(home / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed
        if not said.exists():
            lines: list[str] = []
            with pytest.MonkeyPatch.context() as m:
                m.setattr(demo, "DemoServer", functools.partial(demo.DemoServer,
                                                                latency_scale=0.0))
                status = run_demo(str(db), repeats=1, bank_dir=BANK_DIR, echo=lines.append)
            db_engine.dispose(str(db))  # its last connection closed: the WAL checkpointed
            said.write_text(json.dumps({"status": status, "lines": lines}, ensure_ascii=False),
                            encoding="utf-8")
    return db, said


def demo_said() -> tuple[int, list[str]]:
    """What ``exam demo``'s run made for the test run printed (one repeat): its exit status and
    its lines (test_demo reads them rather than running the demo again)."""
    import json

    said = json.loads(_sqlite_demo()[1].read_text(encoding="utf-8"))
    return said["status"], said["lines"]


def demo_copy(folder: Path) -> str:
    """A copy of the demo's store (every agent and version, one repeat) as ``folder``/demo.db,
    the caller's own to read and change; the demo itself runs once per session."""
    import sqlite3

    db = folder / "demo.db"
    source, copy = sqlite3.connect(_demo_made("sqlite")), sqlite3.connect(db)
    try:
        source.backup(copy)  # a consistent copy, WAL and all
    finally:
        source.close()
        copy.close()
    return str(db)


@contextmanager
def demo_store(backend: str, folder: Path) -> Iterator[str]:
    """The demo's store (every agent and version, one repeat) on ``backend``: a copy made in
    ``folder``, or a throwaway PostgreSQL database copied from the session's (a template);
    its EXAM_DB."""
    from tests.backends import postgres_database

    if backend == "sqlite":
        yield demo_copy(folder)
    else:
        with postgres_database(template=_demo_made(backend), drop="later") as url:
            yield url


@contextmanager
def sigint_reaches_children() -> Iterator[None]:
    """Children started inside get SIGINT as at a terminal, so a test's Ctrl-C reaches them.

    A shell starts background jobs (`make test &`) with SIGINT ignored, and an ignored signal
    is inherited across exec; a handler is not (the child gets the default).
    """
    import signal

    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


TOKENISH = re.compile(r"[A-Za-z0-9_=.-]{16,}")
BASE64ISH = re.compile(r"[A-Za-z0-9+/_=-]{24,}")


def _decoded(text: str) -> list[str]:
    """``text`` and what it reads as %-decoded or base64-decoded (standard or URL-safe, each
    long run of base64 characters in it), and what those read as in turn (up to 200 forms)."""
    forms, seen = [text], {text}
    for form in forms:
        if len(forms) > 200:
            break
        more = [unquote(form)]
        for run in BASE64ISH.findall(form):
            for decode in (base64.b64decode, base64.urlsafe_b64decode):
                try:
                    more.append(decode(run + "=" * (-len(run) % 4)).decode("utf-8", "ignore"))
                except (binascii.Error, ValueError):
                    pass
        for m in more:
            if m not in seen:
                seen.add(m)
                forms.append(m)
    return forms


def accepted_tokens(text: str, secret: str) -> list[str]:
    """Every token in ``text`` (plain, %-encoded or base64) that exam.share accepts as
    signed with ``secret``, expired or not: a share link, or enough to rebuild one."""
    found = set()
    for form in _decoded(text):
        for run in TOKENISH.findall(form):
            parts = run.split(".")
            for i in range(len(parts)):
                for j in range(i + 2, len(parts) + 1):
                    try:
                        decode_token(secret, ".".join(parts[i:j]))
                    except ShareError:
                        continue
                    found.add(".".join(parts[i:j]))
    return sorted(found)
