"""LINE events a dead instance left unhandled are answered without another webhook: every
service process looks for them on a timer (exam/web/line.py), and the store's claim lets one
looker win, so each is pushed to its group once. Real gunicorn processes (the fork model), a
fake LINE API the real SDK talks to, on SQLite and PostgreSQL."""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections import Counter

import pytest

import exam.web.line as line_bp
from exam.store import Store
from exam.web.app import create_app
from tests.exam.helpers import wait_for
from tests.exam.web.test_line_webhook import GROUP, SECRET, as_kept, event
from tests.fakes.line_api import FakeLineApi
from tests.processes import exam_env, gunicorn

TOKEN = "sweep-token-3b9d"


@pytest.fixture
def line_api():
    with FakeLineApi() as fake:
        yield fake


def left_unhandled(db: str, ids: list[str], text: str = "exam status") -> None:
    """What instances leave when they die after LINE's 200 and before handling: each event
    recorded (without its reply token), its claim run out, not handled; and no webhook after."""
    kept = [(i, "MessageEvent", as_kept(event("message", i, text))) for i in ids]
    store = Store(db)
    try:
        assert set(store.record_line_events(kept, 0)) == set(ids)
    finally:
        store.close()


def pushed(line_api: FakeLineApi) -> Counter:
    """How often each event was pushed, by the retry key made from its id."""
    return Counter(p["headers"].get("X-Line-Retry-Key") for p in line_api.pushes())


def key_of(event_id: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"line-event:{event_id}"))


def service_env(db: str, registry_path, line_api: FakeLineApi) -> dict[str, str]:
    return exam_env(db, registry_path, EXAM_API_TOKEN=TOKEN, LINE_CHANNEL_SECRET=SECRET,
                    LINE_CHANNEL_ACCESS_TOKEN="line-token", LINE_API_HOST=line_api.host,
                    EXAM_LINE_ALLOWED_GROUPS=GROUP, EXAM_LINE_SWEEP_SECONDS="1")


def test_events_left_unhandled_are_pushed_once_without_another_webhook(
        store_url, registry_path, line_api, tmp_path):
    """Two instances of two gunicorn workers each: four processes look every second, at once
    or not; no webhook arrives; each event is pushed to its group once."""
    env = service_env(store_url, registry_path, line_api)
    ids = [f"01SWEEP{n:02d}" for n in range(6)]
    with gunicorn(env, tmp_path / "a.log", workers=2, threads=2), \
            gunicorn(env, tmp_path / "b.log", workers=2, threads=2):
        left_unhandled(store_url, ids)
        wait_for(lambda: set(pushed(line_api)) >= {key_of(i) for i in ids},
                 "every event left unhandled to be pushed", timeout=120)
        # a later event, answered by a later look: by then every process has looked again
        # after the first ones were handled, and none of them answered those again
        left_unhandled(store_url, ["01SWEEPLATE"])
        wait_for(lambda: key_of("01SWEEPLATE") in pushed(line_api),
                 "the later event to be pushed", timeout=120)
        # the instances' threads answering at this moment have released what they held
        store = Store(store_url)
        try:
            wait_for(lambda: all(store.line_event_state(i) == "handled"
                                 for i in [*ids, "01SWEEPLATE"]), "the events marked handled")
        finally:
            store.close()
    assert pushed(line_api) == Counter({key_of(i): 1 for i in [*ids, "01SWEEPLATE"]})
    for push in line_api.pushes():
        assert push["body"]["to"] == GROUP
        assert push["body"]["messages"][0]["text"] == "No runs yet."
    assert line_api.replies() == []  # no reply token was kept: a push is the only answer
    logs = (tmp_path / "a.log").read_text() + (tmp_path / "b.log").read_text()
    assert logs.count("was left unhandled (its instance stopped)") == len(ids) + 1
    # each of the four workers said once that its timer runs: what an operator looks for
    assert logs.count("looking for LINE events left unhandled every 1 s") == 4


def test_a_preloaded_gunicorn_sweeps_in_its_workers_not_its_master(
        registry_path, line_api, tmp_path):
    """With --preload the app is made in the master, which then forks the workers: the timer
    moves to the workers (a process that forks leaves the sweeping to its children)."""
    db = str(tmp_path / "exam.db")
    log = tmp_path / "gunicorn.log"
    with gunicorn(service_env(db, registry_path, line_api), log, workers=2,
                  extra=("--preload",)):
        left_unhandled(db, ["01PRELOAD"])
        wait_for(lambda: line_api.pushes(), "the event to be pushed", timeout=120)
    text = log.read_text()
    master = re.search(r"Listening at: \S+ \((\d+)\)", text).group(1)
    workers = set(re.findall(r"Booting worker with pid: (\d+)", text))
    (swept,) = re.findall(r"\[(\d+)\] \[WARNING\] LINE event 01PRELOAD was left unhandled", text)
    assert swept in workers and swept != master, text
    assert len(line_api.pushes()) == 1


def test_lookers_at_once_push_each_event_once(store_url, line_api, monkeypatch):
    """Four instances' sweeps start together (one connection each), ten times over: the
    store's claim gives each event to one of them."""
    monkeypatch.setenv("LINE_CHANNEL_ACCESS_TOKEN", "line-token")
    monkeypatch.setenv("LINE_API_HOST", line_api.host)
    cfg = {"DB": store_url, "AGENTS": "", "LINE_ALLOWED_GROUPS": GROUP, "LINE_RUN_GROUPS": "",
           "PUBLIC_URL": None}
    ids = []
    for n in range(10):
        round_ids = [f"01RACE{n:02d}{k}" for k in range(3)]
        ids += round_ids
        left_unhandled(store_url, round_ids)
        start = threading.Barrier(4)
        failed: list[BaseException] = []

        def look(start=start, failed=failed) -> None:
            start.wait(timeout=30)
            try:
                line_bp._sweep_left(cfg)
            except BaseException as exc:  # shown by the assertion below
                failed.append(exc)

        lookers = [threading.Thread(target=look) for _ in range(4)]
        for t in lookers:
            t.start()
        for t in lookers:
            t.join(timeout=60)
        assert failed == []
        assert pushed(line_api) == Counter({key_of(i): 1 for i in ids}), n
    store = Store(store_url)
    try:
        assert {store.line_event_state(i) for i in ids} == {"handled"}
    finally:
        store.close()


def sweeper_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "line-sweep"]


@pytest.mark.parametrize(("line", "config", "runs"), [
    (False, {}, False),                              # LINE not configured
    (True, {"TESTING": True}, False),                # a test app, unless it asks
    (True, {"LINE_SWEEP_SECONDS": 0}, False),        # turned off
    (True, {}, True),
], ids=["no-line", "testing", "off", "serving"])
def test_the_timer_runs_only_in_a_serving_app_with_line(line, config, runs, monkeypatch,
                                                        tmp_path):
    if line:
        monkeypatch.setenv("LINE_CHANNEL_SECRET", SECRET)
    else:
        monkeypatch.delenv("LINE_CHANNEL_SECRET", raising=False)
    before = sweeper_threads()
    try:
        create_app({"API_TOKEN": TOKEN, "DB": str(tmp_path / "exam.db"), **config})
        create_app({"API_TOKEN": TOKEN, "DB": str(tmp_path / "exam.db"), **config})
        assert len(sweeper_threads()) == len(before) + runs  # one per process and store
    finally:
        line_bp.stop_sweeping()
    assert sweeper_threads() == []


def test_a_store_out_of_reach_is_logged_once_not_at_every_look(tmp_path, monkeypatch, caplog):
    from exam.errors import StoreError

    looks: list[float] = []
    reachable = threading.Event()

    def claim(self, claim_s, limit=20):
        looks.append(claim_s)
        if not reachable.is_set():
            raise StoreError("the store is unreachable")
        return []

    monkeypatch.setattr(Store, "claim_unhandled_line_events", claim)
    cfg = {"DB": str(tmp_path / "exam.db"), "AGENTS": "", "LINE_ALLOWED_GROUPS": "",
           "LINE_RUN_GROUPS": "", "PUBLIC_URL": None}
    with caplog.at_level("INFO", logger="exam.line"):
        line_bp._start(cfg, 0.02)
        try:
            wait_for(lambda: len(looks) >= 5, "five looks")
            reachable.set()
            wait_for(lambda: "works again" in caplog.text, "the timer to say it works again")
        finally:
            line_bp.stop_sweeping()
    assert [r.getMessage() for r in caplog.records] == [
        "looking for LINE events left unhandled every 0.02 s",  # the timer's one sign it runs
        "looking for LINE events left unhandled failed; trying again every 0.02 s",
        "looking for LINE events left unhandled works again"]


def test_every_child_of_a_forking_process_runs_its_timers(tmp_path):
    """A gunicorn master under --preload forks a worker for each slot and again whenever one
    dies (a crash, --max-requests, a timeout): every worker it forks runs the timer it
    stopped, not only the first one (the master itself runs none after its first fork)."""
    import os

    cfg = {"DB": str(tmp_path / "exam.db"), "AGENTS": "", "LINE_ALLOWED_GROUPS": "",
           "LINE_RUN_GROUPS": "", "PUBLIC_URL": None}
    line_bp._start(cfg, 3600.0)  # no look during the test: only whether a timer runs
    seen = []
    try:
        for _ in range(3):  # the first worker, the second, and one forked to replace one
            read, write = os.pipe()
            pid = os.fork()
            if pid == 0:  # pragma: no cover - the child reports through the pipe
                os.write(write, b"1" if sweeper_threads() else b"0")
                os._exit(0)
            os.close(write)
            seen.append(os.read(read, 1) == b"1")
            os.close(read)
            os.waitpid(pid, 0)
        assert seen == [True, True, True]
        assert sweeper_threads() == []  # the forking process leaves the looking to its children
    finally:
        line_bp.stop_sweeping()
        line_bp._for_children.clear()


DAY = 86400.0


def sweep_settings(db: str, monkeypatch, **env: str) -> dict:
    """The settings a serving app hands its timer (``line.SETTINGS``), from its environment."""
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    app = create_app({"API_TOKEN": TOKEN, "DB": db, "TESTING": True})
    return {k: app.config[k] for k in line_bp.SETTINGS}


def events_at(db: str, **times: tuple[float, float | None]) -> None:
    """Events recorded as if at those times (``{id: (received_at, handled_at or None)}``)."""
    from tests.exam.store.test_backends import line_events_at

    store = Store(db)
    try:
        line_events_at(store, **times)
    finally:
        store.close()


def recorded(db: str) -> set[str]:
    from tests.exam.store.test_backends import line_rows

    store = Store(db)
    try:
        return set(line_rows(store))
    finally:
        store.close()


def test_handled_events_older_than_30_days_are_deleted_at_most_once_an_hour(
        store_url, monkeypatch, caplog):
    monkeypatch.setattr(line_bp, "_last_prune", {})
    cfg = sweep_settings(store_url, monkeypatch)
    assert cfg["LINE_EVENTS_KEEP_DAYS"] == 30  # the default
    now = time.time()
    events_at(store_url, **{"01PRUNE1": (now - 32 * DAY, now - 31 * DAY),
                            "01RECENT": (now - 30 * DAY, now - 29 * DAY),
                            "01ANCIENT": (now - 400 * DAY, None)})  # never handled
    with caplog.at_level("INFO", logger="exam.line"):
        assert line_bp._prune_if_due(cfg, now) == 1
    assert "deleted 1 LINE event(s) handled more than 30 day(s) ago" in caplog.text
    assert recorded(store_url) == {"01RECENT", "01ANCIENT"}
    events_at(store_url, **{"01PRUNE2": (now - 32 * DAY, now - 31 * DAY)})
    for later in (1.0, 10.0, 3599.0):  # the timer's later looks within the hour
        assert line_bp._prune_if_due(cfg, now + later) is None
    assert "01PRUNE2" in recorded(store_url)
    assert line_bp._prune_if_due(cfg, now + 3600) == 1
    assert recorded(store_url) == {"01RECENT", "01ANCIENT"}  # never an unhandled one
    caplog.clear()
    with caplog.at_level("INFO", logger="exam.line"):
        assert line_bp._prune_if_due(cfg, now + 7200) == 0
    assert caplog.text == ""  # nothing deleted: nothing said


def test_keep_days_0_keeps_every_handled_event(store_url, monkeypatch):
    monkeypatch.setattr(line_bp, "_last_prune", {})
    cfg = sweep_settings(store_url, monkeypatch, EXAM_LINE_EVENTS_KEEP_DAYS="0")
    assert cfg["LINE_EVENTS_KEEP_DAYS"] == 0
    # handled as an older version did: its JSON still kept
    events_at(store_url, **{"01FOREVER": (time.time() - 3001 * DAY, time.time() - 3000 * DAY)})
    assert rows(store_url)["01FOREVER"]["event"] is not None
    assert line_bp._prune_if_due(cfg) == 0
    assert recorded(store_url) == {"01FOREVER"}
    assert rows(store_url)["01FOREVER"]["event"] is None  # kept: its id, type and times only


def rows(db: str) -> dict[str, dict]:
    from tests.exam.store.test_backends import line_rows

    store = Store(db)
    try:
        return line_rows(store)
    finally:
        store.close()


def test_the_timer_prunes_once_an_hour_not_at_every_look(tmp_path, monkeypatch):
    monkeypatch.setattr(line_bp, "_last_prune", {})
    looks: list[float] = []
    prunes: list[float] = []
    monkeypatch.setattr(Store, "claim_unhandled_line_events",
                        lambda self, claim_s, limit=20: looks.append(claim_s) or [])
    monkeypatch.setattr(Store, "prune_line_events",
                        lambda self, handled_before: prunes.append(handled_before) or 0)
    cfg = sweep_settings(str(tmp_path / "exam.db"), monkeypatch)
    started = time.time()
    line_bp._start(cfg, 0.02)
    try:
        wait_for(lambda: len(looks) >= 10, "ten looks")
    finally:
        line_bp.stop_sweeping()
    (cutoff,) = prunes  # the first look pruned; the others within the hour did not
    assert started - 30 * DAY <= cutoff <= time.time() - 30 * DAY
