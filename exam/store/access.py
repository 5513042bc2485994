"""Who may read: dashboard sessions, and the share links revoked before they expire.

A dashboard login is a row until it is logged out or its lifetime ends by the store's clock,
so every service instance sharing the store agrees. A share link carries its own signature
and expiry (``exam/web/share.py``); what the store keeps is only the links, or pages, revoked.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, and_, bindparam, delete, insert, or_, select

from exam.db.clock import store_now
from exam.db.schema import sessions, share_revocations
from exam.store.base import StoreBase

# how long a link's revocation is kept after the link expired: the instances' clocks may
# disagree, and an instance whose clock is behind still opens the link until its own says so
REVOCATION_AFTER_EXPIRY_S = 86400.0


@dataclass(frozen=True, slots=True)
class Revocation:
    """A share link revoked (``link``: its id), or, with ``link`` None, every link to ``page``
    made before ``made_before`` (exam/web/share.py)."""

    id: int
    link: str | None
    page: str
    until: float | None  # the revoked link's own expiry
    made_before: float | None
    revoked_at: float
    reason: str


def _prune_revocations(db: Connection) -> None:
    """Delete the revocations of links expired ``REVOCATION_AFTER_EXPIRY_S`` ago: they refuse
    nothing an expired link is not refused for already. Run as a revocation is written (the
    only time the table grows). A page's revocation is kept: it says before when its links
    were made, not until when they work (``SHARE_LINK_DAYS`` has no upper bound, and a link
    from before schema 13 does not say when it was made)."""
    v = share_revocations.c
    db.execute(delete(share_revocations).where(
        v.link.is_not(None), v.until < time.time() - REVOCATION_AFTER_EXPIRY_S))



@functools.cache
def _sql(name: str) -> Any:
    """A statement every request through a login or a share link runs, built once."""
    if name == "session_role":  # a dashboard login still open, by the store's clock
        return select(sessions.c.role).where(sessions.c.id == bindparam("sid"),
                                             sessions.c.until > store_now())
    if name == "share_revocations":  # of these link ids, or of every link to these pages
        v = share_revocations.c
        return select(share_revocations).where(or_(
            v.link.in_(bindparam("links", expanding=True)),
            and_(v.page.in_(bindparam("pages", expanding=True)), v.link.is_(None))))
    raise KeyError(name)


class Access(StoreBase):
    """Sessions opened, looked up and closed; share links and pages revoked and looked up."""

    def open_session(self, session_id: str, role: str, lifetime_s: float) -> None:
        """Keep a dashboard login (``session_id``: a digest of the id its cookie holds) until
        ``lifetime_s`` from now by the store's clock; sessions past their end are deleted on
        the way, so the table holds the live ones and a few."""
        v = sessions.c
        with self.tx() as db:
            db.execute(delete(sessions).where(v.until <= store_now()))
            db.execute(insert(sessions).values(id=session_id, role=role, created_at=store_now(),
                                               until=store_now() + lifetime_s))

    def session_role(self, session_id: str) -> str | None:
        """The role of a dashboard login still open (not logged out, not past its end by the
        store's clock), or None."""
        return self._value(_sql("session_role"), {"sid": session_id})

    def close_session(self, session_id: str) -> None:
        """Log a dashboard session out, on every instance from their next request."""
        with self.tx() as db:
            db.execute(delete(sessions).where(sessions.c.id == session_id))

    def revoke_share_link(self, link: str, page: str, until: float, reason: str = ""
                          ) -> tuple[Revocation, bool]:
        """Revoke one share link by its id (never its token): the revocation in force, and
        whether it is new (a link revoked before keeps its first revocation). The revocations
        of links expired a day ago go (``_prune_revocations``), here and in
        ``revoke_share_page``."""
        v = share_revocations.c
        with self.tx() as db:
            _prune_revocations(db)
            new = db.execute(self._insert(share_revocations).values(
                link=link, page=page, until=until, revoked_at=time.time(), reason=reason)
                .on_conflict_do_nothing().returning(v.id)).first() is not None
            row = db.execute(select(share_revocations).where(v.link == link)).one()
        return Revocation(**row._mapping), new

    def revoke_share_page(self, page: str, made_before: float, reason: str = "") -> Revocation:
        """Revoke every share link to ``page`` made before ``made_before`` (epoch seconds)."""
        with self.tx() as db:
            _prune_revocations(db)
            row = db.execute(insert(share_revocations).values(
                page=page, made_before=made_before, revoked_at=time.time(), reason=reason)
                .returning(*share_revocations.c)).one()
        return Revocation(**row._mapping)

    def share_revocations(self, links: Sequence[str], pages: Sequence[str]
                          ) -> list[Revocation]:
        """The revocations of these link ids, and of every link to these pages: what a
        request read through share links looks up, one read by two indexes (links and
        pages ≤ MAX_GRANTS)."""
        if not links and not pages:
            return []
        rows = self._rows(_sql("share_revocations"),
                          {"links": list(links), "pages": list(pages)})
        return [Revocation(**r._mapping) for r in rows]

    def all_share_revocations(self, page: str | None = None) -> list[Revocation]:
        """Every revocation (of links to ``page``), oldest first (``exam share list``, the
        scorecard page's admin)."""
        stmt = select(share_revocations).order_by(share_revocations.c.id)
        if page is not None:
            stmt = stmt.where(share_revocations.c.page == page)
        return [Revocation(**r._mapping) for r in self._rows(stmt)]
