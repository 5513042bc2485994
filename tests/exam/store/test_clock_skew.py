"""Hosts whose clocks disagree share one store: every lease and claim is judged on the store's
clock, so a host whose clock runs ahead takes no live lease over early, and one whose clock
runs behind neither keeps an expired lease nor renews one short. On both backends.

Each host is this process with ``time.time`` set ahead or behind just before it acts (the
``clock`` fixture), as a host's wrong clock would be for everything it runs."""

from __future__ import annotations

import re
import time

import pytest

from exam.errors import RunBusy
from exam.store import held_elsewhere
from tests.exam.store.test_backends import new_run

SKEWS = [(0, 120), (0, -120), (120, 0), (-120, 0)]  # (holder's clock, other host's): seconds off


@pytest.fixture
def clock(monkeypatch):
    """``clock(s, host)``: this process's clock reads ``s`` seconds off from now on (and, with
    ``host``, it is that host: EXAM_HOST_ID)."""
    real = time.time

    def off_by(seconds: float, host: str | None = None) -> None:
        monkeypatch.setattr(time, "time", lambda: real() + seconds)
        if host:
            monkeypatch.setenv("EXAM_HOST_ID", host)
    return off_by


@pytest.mark.parametrize(("holder", "other"), SKEWS)
def test_a_skewed_clock_neither_takes_a_live_lease_early_nor_keeps_an_expired_one(
        store, hosts, clock, holder, other):
    live, dead = (new_run(store, status="queued", source="api") for _ in range(2))
    a, b = hosts
    clock(holder)
    assert a.claim_run("host-a:1", 30.0).id == live
    assert a.heartbeat(live)  # renewed by its worker
    assert a.claim_run("host-a:2", 0.0).id == dead  # its worker is gone: the lease ran out
    clock(other)  # the service and a worker on the other host
    assert [store.get_run(r).shown_status for r in (live, dead)] == ["running", "interrupted"]
    assert b.claim_run("host-b:1", 30.0).id == dead
    assert b.claim_run("host-b:1", 30.0) is None


@pytest.mark.parametrize(("holder", "other"), SKEWS)
def test_exam_resume_on_a_host_with_a_skewed_clock_waits_for_the_lease_it_names(
        store, hosts, clock, holder, other):
    a, b = hosts
    clock(holder, "laptop")
    run_id = new_run(a)
    a.hold_run(run_id, 30.0)  # `exam run`, renewing its lease
    clock(other, "server")
    why = held_elsewhere(store.get_run(run_id))
    assert why is not None and 1 <= int(re.search(r"within (\d+) s", why)[1]) <= 30
    with pytest.raises(RunBusy):
        b.hold_run(run_id)
    clock(holder, "laptop")
    a.hold_run(run_id, 0.0)  # the process stops renewing: its lease runs out
    clock(other, "server")
    assert held_elsewhere(store.get_run(run_id)) is None
    assert b.hold_run(run_id, 30.0).lease_token == 3


@pytest.mark.parametrize(("holder", "other"), SKEWS)
def test_a_skewed_clock_neither_takes_a_held_line_event_early_nor_leaves_an_expired_one(
        hosts, clock, holder, other):
    first, second = hosts  # two service instances
    clock(holder)
    held = first.record_line_events([("01LIVE", "Message", "{}")], 60)["01LIVE"]
    assert first.hold_line_event("01LIVE", held, 60) is not None  # renewed as it is handled
    first.record_line_events([("01DEAD", "Message", "{}")], 0)  # its instance died at once
    clock(other)
    assert [i for i, _, _ in second.claim_unhandled_line_events(60)] == ["01DEAD"]
