"""Notifications and LINE: pushes with their retry keys, webhook events, groups joined.

Every push is stored before it is sent (``add_notification``), with the retry key each resend
reuses, so a scorecard is never posted twice. LINE webhook events are recorded before they are
handled and held by the instance handling them (``record_line_events``, ``hold_line_event``),
so a redelivery, or the same event posted to another instance, is handled once; an event whose
instance died is claimed again (``claim_unhandled_line_events``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from sqlalchemy import delete, insert, select, update

from exam.db.clock import store_now
from exam.db.schema import line_events, line_groups, notifications
from exam.store.base import StoreBase


class Notifications(StoreBase):
    """Notifications kept and updated; LINE events recorded, held, handled, pruned; groups."""

    def add_notification(self, *, batch: str, channel: str, target: str, run_ids: Sequence[int],
                         retry_key: str, payload: list[dict[str, Any]]) -> int:
        with self.tx() as db:
            return int(db.execute(insert(notifications).values(
                batch=batch, channel=channel, target=target, run_ids=json.dumps(list(run_ids)),
                retry_key=retry_key, payload=json.dumps(payload, ensure_ascii=False),
                status="pending", created_at=time.time()).returning(notifications.c.id)
            ).scalar_one())

    def update_notification(self, nid: int, status: str, attempts: int,
                            error: str | None = None) -> None:
        n = notifications.c
        values: dict[str, Any] = dict(status=status, attempts=n.attempts + attempts,
                                      last_error=error)
        if status == "delivered":
            values["delivered_at"] = time.time()
        with self.tx() as db:
            db.execute(update(notifications).where(n.id == nid).values(**values))

    def notifications(self, status: str | None = None, batch: str | None = None,
                      ids: Sequence[int] = ()) -> list[dict[str, Any]]:
        n = notifications.c
        stmt = select(notifications).order_by(n.id)
        if status:
            stmt = stmt.where(n.status == status)
        if batch:
            stmt = stmt.where(n.batch == batch)
        if ids:
            stmt = stmt.where(n.id.in_(list(ids)))
        return [{**dict(r._mapping), "run_ids": json.loads(r.run_ids),
                 "payload": json.loads(r.payload)} for r in self._rows(stmt)]

    def record_line_events(self, events: Sequence[tuple[str, str, str | None]], claim_s: float
                           ) -> dict[str, float]:
        """Record LINE webhook events, ``(webhookEventId, type, event JSON without its reply
        token, or None for an event not worth handling again)``, before they are handled, each
        held by the caller for ``claim_s``: {id recorded now: the end of its hold}
        (``hold_line_event`` renews it). An id seen before (a redelivery, or the same event
        posted to another service instance sharing this store) is not recorded again and not
        returned."""
        now = time.time()
        new: dict[str, float] = {}
        with self.tx() as db:
            for event_id, kind, event in events:
                # held until the store's clock + claim_s, as every claim (exam/db/clock.py)
                until = db.execute(self._insert(line_events).values(
                    webhook_event_id=event_id, type=kind, received_at=now, event=event,
                    claimed_until=store_now() + claim_s).on_conflict_do_nothing()
                    .returning(line_events.c.claimed_until)).scalar()
                if until is not None:
                    new[event_id] = until
        return new

    def hold_line_event(self, event_id: str, held_until: float, claim_s: float) -> float | None:
        """Renew the caller's hold on an event it recorded or claimed (``held_until``: the end
        of that hold), just before handling it: the new end, or None when the event is no
        longer the caller's to handle (handled, or claimed by another instance once the hold
        ran out: that instance answers it)."""
        e = line_events.c
        with self.tx() as db:
            return db.execute(update(line_events).where(
                e.webhook_event_id == event_id, e.handled_at.is_(None),
                e.claimed_until == held_until).values(claimed_until=store_now() + claim_s)
                .returning(e.claimed_until)).scalar()

    def line_event_handled(self, event_id: str) -> None:
        """Mark an event handled and drop its JSON (people's words and user ids), needed only
        to handle it again: its id (for de-duplication), type and times stay."""
        with self.tx() as db:
            db.execute(update(line_events).where(line_events.c.webhook_event_id == event_id)
                       .values(handled_at=time.time(), event=None))

    def prune_line_events(self, handled_before: float | None) -> int:
        """Delete the events handled before ``handled_before`` (epoch seconds; None: none):
        how many. An event not yet handled is never deleted, however old. A redelivery of a
        deleted id is recorded as new (LINE redelivers within hours, the ids are kept for
        days). Also drops the JSON that events handled by an older version still hold (it is
        dropped as each event is marked handled now)."""
        e = line_events.c
        with self.tx() as db:
            db.execute(update(line_events).where(e.handled_at.is_not(None), e.event.is_not(None))
                       .values(event=None))
            if handled_before is None:
                return 0
            return db.execute(delete(line_events).where(
                e.handled_at.is_not(None), e.handled_at < handled_before)).rowcount

    def claim_unhandled_line_events(self, claim_s: float, limit: int = 20
                                    ) -> list[tuple[str, str, float]]:
        """Recorded events never marked handled whose claim ran out (the instance handling them
        died after answering LINE), oldest first, as ``(id, event JSON, end of the hold)``;
        each is now held by the caller for ``claim_s``. Concurrent claimers take different
        events (FOR UPDATE SKIP LOCKED on PostgreSQL, BEGIN IMMEDIATE on SQLite)."""
        e = line_events.c
        now = time.time()
        stmt = (select(e.webhook_event_id, e.event)
                .where(e.handled_at.is_(None), e.event.is_not(None),
                       e.claimed_until <= store_now())
                .order_by(e.received_at).limit(limit))
        if self.backend == "postgresql":
            stmt = stmt.with_for_update(skip_locked=True)
        with self.tx() as db:
            # an event recorded with nothing to handle again (a chat line, not a command) whose
            # instance died before marking it: nothing is owed, so it is marked handled here
            # (else it stayed unhandled, and kept, for ever)
            db.execute(update(line_events).where(
                e.handled_at.is_(None), e.event.is_(None), e.claimed_until <= store_now())
                .values(handled_at=now))
            found = [(r.webhook_event_id, r.event) for r in db.execute(stmt)]
            if not found:
                return []
            held = dict(db.execute(update(line_events)
                                   .where(e.webhook_event_id.in_([i for i, _ in found]))
                                   .values(claimed_until=store_now() + claim_s)
                                   .returning(e.webhook_event_id, e.claimed_until)).all())
        return [(i, event, held[i]) for i, event in found]

    def line_event_state(self, event_id: str) -> str | None:
        """``handled``, ``pending`` (recorded, not yet handled) or None (never recorded)."""
        e = line_events.c
        row = self._rows(select(e.handled_at).where(e.webhook_event_id == event_id))
        if not row:
            return None
        return "pending" if row[0].handled_at is None else "handled"

    def add_group(self, group_id: str) -> None:
        with self.tx() as db:
            db.execute(self._insert(line_groups).values(group_id=group_id, joined_at=time.time())
                       .on_conflict_do_nothing())
