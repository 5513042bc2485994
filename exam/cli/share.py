"""`exam share`: revoke a read-only share link that leaked, see what a link opens, list the
links revoked (exam/share.py). Links are not recorded when they are made (a link is its
own credential): a link is revoked by pasting it, or every link to a page made until now."""

from __future__ import annotations

import click

from exam.cli.common import InputError, db_option, format_option, open_store

KEY_HINT = ("the link is not this service's, or this shell's EXAM_SECRET_KEY (or "
            "EXAM_API_TOKEN) is not the service's")


@click.group("share")
def share_cmd() -> None:
    """Share links: revoke one that leaked, see what one opens, list the revoked ones."""


def _secret() -> str:
    import os

    from exam.share import secret_from_env

    secret = secret_from_env(os.environ)
    if not secret:
        raise InputError("EXAM_SECRET_KEY (or EXAM_API_TOKEN) is not set: a share link is "
                         "checked with the key that signed it; run with the service's "
                         "settings (docs/deployment.md, section 3)")
    return secret


def _link(text: str, *, expired_ok: bool, now: float | None = None):
    """The link pasted, checked with the service's key (and, unless ``expired_ok``, expiry
    at ``now``: the store's time); one line saying why not."""
    from exam.share import ForeignLink, ShareError, decode_token, link_to_revoke, token_of

    secret = _secret()
    try:
        return decode_token(secret, token_of(text)) if expired_ok else \
            link_to_revoke(secret, text, now)
    except ForeignLink as exc:
        raise InputError(f"{exc}: {KEY_HINT}") from None
    except ShareError as exc:
        raise InputError(str(exc)) from None


def _page(text: str, labels: set[tuple[str, str]]) -> str:
    """The scorecard page a share link names, from its path or its address, as the dashboard
    signs it: a trailing or doubled slash dropped, and the agent and version spelled as the
    store has them (``/scorecard/w3/v2`` is W3's page when only W3 has runs). ``labels``:
    the store's (agent, version) pairs. A share link, another page (links are made only to
    scorecards) or one no stored run opens is refused: revoking it would revoke nothing."""
    from urllib.parse import urlsplit

    from exam.share import SHARE_PATH, page_of

    text = text.strip()
    path = page_of(urlsplit(text).path if "://" in text else text)
    if SHARE_PATH.search(path):
        raise InputError("--page: that is a share link, not a page: give it as LINK to revoke "
                         "it alone (exam share show LINK names its page)")
    parts = [p for p in path.split("/") if p]
    if not path.startswith("/") or any(c.isspace() for c in path) or len(parts) != 3 \
            or parts[0].lower() != "scorecard":
        raise InputError(f"--page: expected a scorecard page, such as /scorecard/W1/v2 or its "
                         f"address (share links open scorecards only), found {text[:80]!r}")
    agent, version = parts[1], parts[2]
    if (agent, version) not in labels:
        same = sorted(x for x in labels if (x[0].casefold(), x[1].casefold()) ==
                      (agent.casefold(), version.casefold()))
        if len(same) != 1:
            spelled = ", ".join(f"/scorecard/{a}/{v}" for a, v in same)
            raise InputError(
                f"--page: no share link opens /scorecard/{agent}/{version}: the store has no "
                f"run of {agent} {version}" + (f" (it has {spelled}: give the one meant)"
                                                 if same else " (exam runs lists them)"))
        agent, version = same[0]
    return f"/scorecard/{agent}/{version}"


@share_cmd.command("revoke")
@click.argument("link", required=False)
@click.option("--page", metavar="PAGE",
              help="Instead of one link: every link to this page (/scorecard/W1/v2, or its "
                   "address) made until now.")
@click.option("--reason", help="Why (kept for the team, never shown to the link's "
                                           "holder; exam share list shows it).")
@db_option
def revoke_cmd(link, page, reason, db) -> None:
    """Revoke the share link LINK (pasted whole, https://…/share/<token>, or the token alone),
    or with --page every link to a page made until now: refused from the next request on
    every instance sharing the store, by browsers that opened it already too. Reads the key
    that signs links (EXAM_SECRET_KEY, else EXAM_API_TOKEN) to check LINK is the service's.

    \b
    Exit status: 0 revoked (or revoked already) · 2 bad input (not a link of this service,
    expired, no key, an unreadable store).
    """

    from exam.share import when

    if link and page:
        raise InputError("LINK and --page: give one (LINK revokes that link, --page every "
                         "link to a page made until now)")
    if not link and not page:
        raise InputError("give the share LINK to revoke (pasted whole, or its token), or "
                         "--page PAGE for every link to a page made until now")
    reason = (reason or "").strip()[:500]
    if page:
        store = open_store(db)
        target = _page(page, {(r.agent, r.version) for r in store.list_runs()})
        # links made before now by the store's clock, which signs and judges them
        done = store.revoke_share_page(target, store.now(), reason)
        click.echo(f"revoked every share link to {target} made before "
                   f"{when(done.made_before)}: refused on every instance from the next request; "
                   f"links made from now on work (exam notify sends a new one)")
        return
    _secret()  # no key: said before the store is opened
    store = open_store(db)
    found = _link(link, expired_ok=False, now=store.now())  # expired by the store's clock
    done, new = store.revoke_share_link(found.id, found.page, found.until, reason)
    if not new:
        click.echo(f"the share link to {found.page} (id {found.id[:12]}) was already revoked on "
                   f"{when(done.revoked_at)}: nothing changed")
        return
    click.echo(f"revoked the share link to {found.page} (id {found.id[:12]}, it would have "
               f"worked until {when(found.until)}): refused on every instance from the next "
               f"request")


@share_cmd.command("show")
@click.argument("link")
@db_option
def show_cmd(link, db) -> None:
    """What the share LINK opens, until when, when it was made and whether it is revoked,
    revoking nothing: to tell apart the links in a chat before revoking one.

    \b
    Exit status: 0 shown · 2 bad input (not a link of this service, no key).
    """
    from exam.share import revoked, when

    found = _link(link, expired_ok=True)
    store = open_store(db)
    rows = store.share_revocations([found.id], [found.page])
    gone = revoked(found, rows)
    click.echo(f"page     {found.page}")
    click.echo(f"{'expired ' if found.expired(store.now()) else 'until   '} {when(found.until)}")
    made = when(found.made) if found.made is not None else "not said (made by an older agent-exam)"
    click.echo(f"made     {made}")
    click.echo(f"id       {found.id}")
    if gone is None:
        state = "no"
    elif gone.link is not None:
        state = f"yes, on {when(gone.revoked_at)}"
    else:
        state = (f"yes, on {when(gone.revoked_at)}: every link to its page made before "
                 f"{when(gone.made_before)}")
    click.echo(f"revoked  {state}")


@share_cmd.command("list")
@format_option
@db_option
def list_cmd(fmt, db) -> None:
    """The share links revoked, oldest first: one link (by its id) or every link to a page
    made before a time. The links themselves are never stored.

    \b
    Exit status: 0 listed · 2 bad input (an unreadable store).
    """
    import json

    from exam.share import when

    store = open_store(db)
    rows = store.all_share_revocations()
    if fmt == "json":
        click.echo(json.dumps([{"link": r.link, "page": r.page, "until": r.until,
                                "made_before": r.made_before, "revoked_at": r.revoked_at,
                                "reason": r.reason} for r in rows], ensure_ascii=False, indent=2))
        return
    if not rows:
        click.echo("no share link is revoked")
        return
    now = store.now()  # the clock links are judged by
    for r in rows:
        if r.link is not None:
            what = (f"link {r.link[:12]}  {r.page}  "
                    f"{'expired' if (r.until or 0) < now else 'until'} {when(r.until or 0)}")
        else:
            what = f"page {r.page}  every link made before {when(r.made_before or 0)}"
        click.echo(f"{what}  revoked {when(r.revoked_at)}" + (f"  ({r.reason})" if r.reason else ""))
