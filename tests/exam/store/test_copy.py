"""``exam store copy``: SQLite → PostgreSQL → SQLite keeps every row of every table."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from click.testing import CliRunner

from exam.cli.main import main
from exam.db.schema import TABLES
from exam.errors import StoreError
from exam.store import Store
from exam.store.copy import copy_store
from tests.exam.store.conftest import empty_postgres
from tests.exam.store.test_backends import attempt, cell, new_run


def filled(path) -> str:
    """A SQLite store with rows in every table."""
    s = Store(path)
    try:
        run_id = new_run(s)
        queued = new_run(s, version="v2", status="queued", source="api")
        # claimed by a worker long gone (its lease has run out): no run is held by a live
        # process, which the copy would refuse (test_a_run_still_running_...)
        s.claim_run("host-a:1", 0.0)
        for repeat in (1, 2):
            for case_no in ("Q-01", "Q-02", "Q-10"):
                s.record_cell(cell(run_id, case_no, repeat, "timeout" if case_no == "Q-02"
                                   else "ok"), [attempt(1), attempt(2, body=None)],
                              ("1.0.0", "pass", [{"name": "fact[0]"}]))
        s.record_cell(cell(queued, "Q-01"), [attempt(1, body="長" * 3000)])
        s.retire_failed_cells(run_id)
        s.record_cell(cell(run_id, "Q-02"), [attempt(3)])
        s.add_notification(batch="b", channel="line", target="C", run_ids=[run_id],
                           retry_key="k", payload=[{"type": "text", "text": "✓"}])
        s.record_line_events([("01E", "MessageEvent", '{"type": "message"}')], 60)
        s.add_group("C")
        s.add_adjudication(reply_digest="d", check_name="*", question_digest="q",
                           rule_version="1", decision="pass", reason="", reviewer="Mei",
                           agent="T", case_no="Q-01")
        s.add_rebalance_snapshot("T", None, {"roles": {}})
        s.cache_grades("rules", [(f"r{i}", "q", "pass", "[]") for i in range(1200)])
        s.set_excluded(queued, "a test")
        s.set_run_status(run_id, "interrupted", "stopped by Ctrl-C")
    finally:
        s.close()
    return str(path)


def rows(path) -> dict[str, list[tuple]]:
    con = sqlite3.connect(path)
    try:
        return {t.name: con.execute(f"SELECT * FROM {t.name} ORDER BY rowid").fetchall()
                for t in TABLES}
    finally:
        con.close()


def test_a_store_goes_to_postgresql_and_back_with_nothing_lost(tmp_path, postgres_url):
    src = filled(tmp_path / "src.db")
    url = empty_postgres(postgres_url)
    there = copy_store(src, url)
    assert {t.table for t in there} == {t.name for t in TABLES}
    assert all(t.same for t in there) and sum(t.src_rows for t in there) > 1200
    # planned on what is there from the first read (as after a restore), not after autovacuum
    from sqlalchemy import create_engine, text

    engine = create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.connect() as con:
            done = con.execute(text("SELECT last_vacuum IS NOT NULL, last_analyze IS NOT NULL "
                                    "FROM pg_stat_user_tables WHERE relname = 'cells'")).one()
    finally:
        engine.dispose()
    assert tuple(done) == (True, True)
    back = copy_store(url, str(tmp_path / "back.db"))
    assert [(t.src_rows, t.src_digest) for t in back] == [(t.src_rows, t.src_digest) for t in there]
    assert rows(tmp_path / "back.db") == rows(src)  # byte for byte, in the same order
    # PostgreSQL's ids go on after the copied ones
    s = Store(url)
    try:
        assert new_run(s) == 3
    finally:
        s.close()


def test_a_store_that_is_not_empty_is_not_overwritten(tmp_path, postgres_url):
    src = filled(tmp_path / "src.db")
    url = empty_postgres(postgres_url)
    copy_store(src, url)
    s = Store(src)
    try:
        new_run(s, version="v3", status="done")  # SRC moved on: DST is no longer its copy
    finally:
        s.close()
    with pytest.raises(StoreError, match=r"DST is not empty \(2 in runs.*--replace"):
        copy_store(src, url)
    assert all(t.same for t in copy_store(src, url, replace=True))


@pytest.mark.parametrize("what", ["a row more", "a row changed"])
def test_a_store_holding_other_rows_is_refused_however_alike(tmp_path, what):
    src = filled(tmp_path / "src.db")
    dst = str(tmp_path / "dst.db")
    copy_store(src, dst)
    with closing(sqlite3.connect(dst)) as con:
        if what == "a row more":
            con.execute("INSERT INTO line_groups VALUES ('C2', 1.0)")
        else:  # the same counts: only the digests tell
            con.execute("UPDATE runs SET version = 'v9' WHERE id = 1")
        con.commit()
    with pytest.raises(StoreError, match="DST is not empty .* and is not a copy of "):
        copy_store(src, dst)


def test_a_copy_stopped_after_it_committed_is_verified_when_run_again(tmp_path, postgres_url,
                                                                       monkeypatch):
    """Killed between the commit and the check: DST holds the copy, unverified. Run again,
    the copy compares it (the same counts and digests) and says so, instead of refusing a
    DST that is not empty."""
    from exam.store import copy as copy_mod

    src = filled(tmp_path / "src.db")
    url = empty_postgres(postgres_url)

    def killed(*_a, **_k):
        raise KeyboardInterrupt  # what a signal does to the process here

    monkeypatch.setattr(copy_mod, "_compared", killed)
    with pytest.raises(KeyboardInterrupt):
        copy_store(src, url)
    monkeypatch.undo()
    again = CliRunner().invoke(main, ["store", "copy", src, url])
    assert again.exit_code == 0, again.output
    assert "DST already held this copy" in again.output.splitlines()[-1]
    assert "every count and digest equal" in again.output


def test_the_cli_copies_and_prints_each_tables_counts_and_digests(tmp_path, postgres_url):
    src = filled(tmp_path / "src.db")
    url = empty_postgres(postgres_url)
    result = CliRunner().invoke(main, ["store", "copy", src, url])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    words = next(line for line in lines if line.startswith("runs ")).split()
    # runs  2 rows  <digest>  =  2 rows  <digest>
    assert (words[1], words[5]) == ("2", "2") and words[3] == words[7] and len(words[3]) == 16
    assert "every count and digest equal" in lines[-1]
    again = CliRunner().invoke(main, ["store", "copy", src, url])  # the same rows: compared
    assert again.exit_code == 0 and "DST already held this copy" in again.output


def test_an_older_sqlite_source_is_copied_from_a_snapshot_and_left_as_it_was(tmp_path):
    """Moving a store must leave the original usable by the agent-exam that wrote it: an
    older SQLite source is not migrated in place; its snapshot is, and that is copied."""
    from tests.exam.test_store_migrations import old_store

    src, _ = old_store(tmp_path, 7)
    before = Path(src).read_bytes()
    dst = str(tmp_path / "new.db")
    tables = copy_store(src, dst)
    assert all(t.same for t in tables)
    assert {t.table: t.src_rows for t in tables}["runs"] >= 1
    assert Path(src).read_bytes() == before  # not one byte changed, schema 7 still
    with closing(sqlite3.connect(src)) as con:
        assert con.execute("PRAGMA user_version").fetchone()[0] == 7
    with pytest.raises(StoreError, match="SRC and DST are the same store"):
        copy_store(src, src)


def test_a_source_that_cannot_be_written_is_read_from_a_snapshot(tmp_path, monkeypatch):
    """A backup on read-only storage (its folder not writable either): the copy reads it
    without opening it as a store, which would need to write beside it."""
    import os

    from exam.store import copy as copy_mod

    src = filled(tmp_path / "backup.db")
    real = os.access
    monkeypatch.setattr(copy_mod.os, "access", lambda p, mode, **kw: False if mode == os.W_OK
                        else real(p, mode, **kw))  # the tests run as root, who may write anyway
    opened, snapshot = [], copy_mod._sqlite_snapshot
    monkeypatch.setattr(copy_mod, "_sqlite_snapshot", lambda s, d: opened.append(s) or snapshot(s, d))
    tables = copy_store(src, str(tmp_path / "out.db"))
    assert opened == [src] and all(t.same for t in tables)


def test_grades_kept_on_sqlite_are_not_read_on_postgresql_where_a_text_reads_otherwise(
        tmp_path, postgres_url):
    """PostgreSQL keeps a reply's NUL as U+FFFD: a run graded and kept on SQLite, copied, is
    graded again from what PostgreSQL holds (its evidence and its reply digest, which review
    decisions are keyed by), and the report equals a fresh re-grade there."""
    from exam.reports.regrade import regrade
    from exam.reports.selection import select_runs
    from tests.exam.conftest import History
    from tests.exam.reports.test_grade_cache import assert_same

    history = History(tmp_path)
    history.bank("A", [("A-01", "c", "major")])
    history.run("A", "v1", {"A-01": "pfh"}, texts={"A-01": "備註\x00"})
    regrade(history.store, select_runs(history.store))  # graded and kept on SQLite
    history.store.close()
    url = empty_postgres(postgres_url)
    copy_store(history.store.path, url)
    s = Store(url)
    try:
        runs = select_runs(s)
        assert all("\ufffd" in c.text for c in s.cells([r.id for r in runs]))
        fresh = regrade(s, runs, cache=False)
        assert_same(regrade(s, runs), fresh)
        assert_same(regrade(s, runs), fresh)  # and kept again, as PostgreSQL reads them
    finally:
        s.close()


def test_a_run_still_running_in_the_source_is_refused_unless_asked(tmp_path, postgres_url):
    """What a run still running stores after the copy's moment would not be in DST: the copy
    is refused, naming the run, unless --while-running, which copies and says what to do."""
    src = filled(tmp_path / "src.db")
    s = Store(src)
    try:
        live = new_run(s, version="v3")  # `exam run` in this very process: alive
    finally:
        s.close()
    url = empty_postgres(postgres_url)
    refused = CliRunner().invoke(main, ["store", "copy", src, url])
    assert refused.exit_code == 2, refused.output
    assert f"1 run(s) still running: {live} (T v3, in " in refused.output
    assert "--while-running" in refused.output and "Traceback" not in refused.output
    dst = Store(url)
    try:
        assert dst.list_runs() == []  # nothing copied
    finally:
        dst.close()
    copied = CliRunner().invoke(main, ["store", "copy", "--while-running", src, url])
    assert copied.exit_code == 0, copied.output
    assert f"warning: run {live} (T v3) is still running in " in copied.output
    assert f"`exam resume {live}` finishes it" in copied.output
    assert "every count and digest equal" in copied.output


SLOW_COPY = """
import sys, time
from pathlib import Path
from exam.store import copy as copy_mod

def slow(*args, **kwargs):  # the snapshot made: the copy is under way
    Path(sys.argv[3]).write_text("copying")
    time.sleep(120)

copy_mod._copy = slow
copy_mod.copy_store(sys.argv[1], sys.argv[2])
"""


@pytest.mark.slow  # an `exam` Python process each, stopped by a real signal
@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_copy_stopped_by_a_signal_leaves_no_snapshot(tmp_path, signame):
    """A source's snapshot (as big as the store) is deleted however the copy is stopped."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from tests.exam.test_store_migrations import old_store

    src, _ = old_store(tmp_path, 7)  # an older schema: copied from a snapshot
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    ready = tmp_path / "ready"
    proc = subprocess.Popen([sys.executable, "-c", SLOW_COPY, src, str(tmp_path / "dst.db"),
                             str(ready)], env={**os.environ, "TMPDIR": str(tmpdir)})
    try:
        deadline = time.monotonic() + 60
        while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ready.exists() and [p.name[:10] for p in tmpdir.iterdir()] == ["exam-copy-"]
        proc.send_signal(getattr(signal, signame))
        proc.wait(60)
    finally:
        proc.kill()
    assert proc.returncode != 0
    assert list(tmpdir.iterdir()) == []


@pytest.mark.slow  # a Python process killed with -9
def test_a_snapshot_left_by_a_copy_killed_with_kill_9_is_deleted_by_the_next(tmp_path,
                                                                           monkeypatch):
    import os
    import subprocess
    import sys

    from tests.exam.test_store_migrations import old_store

    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # TMPDIR read again
    (tmp_path / "tmp").mkdir()
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    left = {}
    for name, pid in (("exam-copy-dead", gone.stdout.strip()), ("exam-copy-live", os.getpid()),
                      ("other-tool", gone.stdout.strip())):
        folder = tmp_path / "tmp" / name
        folder.mkdir()
        (folder / "owner.pid").write_text(str(pid))
        (folder / "source.db").write_bytes(b"x" * 1024)
        left[name] = folder
    src, _ = old_store(tmp_path, 7)
    assert all(t.same for t in copy_store(src, str(tmp_path / "dst.db")))
    assert sorted(p.name for p in (tmp_path / "tmp").iterdir()) == ["exam-copy-live",
                                                                     "other-tool"]
