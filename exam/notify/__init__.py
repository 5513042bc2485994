"""Notifications: what a scorecard says (exam/notify/summary.py), told on a channel.

A channel turns the channel-neutral summaries into its own messages and sends one of them
at a time; each send is recorded in the store's ``notifications`` table under the channel's
name, with a retry key the channel reuses on every retry and resend, before it is attempted;
its share links are made as of when it was recorded, so a resend carries the same body.
A failed send never touches stored results: it is recorded, and ``exam notify CHANNEL
--resend ID`` sends it again. Channels are registered by name; ``exam notify`` and
``exam run --notify`` offer exactly the registered ones. A channel shipped with agent-exam is
declared in exam/channels.py with the settings that are its secrets (redaction reads them
there).
"""

from __future__ import annotations

import importlib
import inspect
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from exam.channels import BUILT_IN
from exam.errors import ExamError
from exam.notify.summary import summaries_for
from exam.store import Store

# the shipped channels (exam/channels.py: where each is, its secrets) are imported on first
# use: their SDKs are heavy


class DeliveryError(ExamError):
    """A send failed; the message says why without any secret."""


class Channel(Protocol):
    """One way of telling the team. ``payload`` is whatever one send carries (JSON-able, no
    secrets: it is stored, so a share link in it is the marker ``summary.scorecard_link``
    gives, made a link by ``send``); ``settings`` whatever the channel reads from the
    environment."""

    name: str  # the CLI's word and the store's ``channel`` column
    label: str  # how messages name it ("LINE")
    help: str  # the help of `exam notify NAME`: what is sent where, which settings it reads

    def settings(self, env: Mapping[str, str], *, sending: bool = True) -> Any:
        """Read the channel's settings; ExamError naming what is missing. ``sending=False``
        (a dry run) needs no credentials."""

    def target(self, settings: Any) -> str:
        """Where sends go (a group id, an address): stored with each notification."""

    def payloads(self, summaries: Sequence[dict[str, Any]], settings: Any) -> list[Any]:
        """The summaries as the channel's messages, grouped one payload per send."""

    def preview(self, payloads: Sequence[Any], out_path: str) -> tuple[list[str], Any]:
        """For a dry run: lines to print, and a JSON-able document written to ``out_path``,
        its share-link markers the plain pages (``summary.page_link``): no live link in a
        file."""

    def send(self, settings: Any, target: str, payload: Any, retry_key: str,
             sleep: Any = None, made: float | None = None) -> int:
        """Send one payload (retrying with ``retry_key``); the attempts made. Raises
        DeliveryError. Its share links are made here (``summary.made_links``, on each place
        ``payloads`` put one), once, before the first try, as of ``made`` (when the
        notification was recorded): every try of a send, and every resend, carries the same
        body (until that link's last day, ``summary.link_made``, docs/webhook.md)."""


_CHANNELS: dict[str, Channel] = {}


# how the rest of the system calls a channel: method → (positional, keyword) arguments
_CALLS: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {
    "settings": (({},), {"sending": False}),
    "target": ((None,), {}),
    "payloads": (([], None), {}),
    "preview": (([], ""), {}),
    "send": ((None, "", None, ""), {"sleep": None, "made": 0.0}),
}


def _protocol(method: str) -> inspect.Signature:
    """The protocol's signature of ``method``, as a channel's bound method shows it."""
    empty = inspect.Parameter.empty
    params = list(inspect.signature(getattr(Channel, method)).parameters.values())[1:]
    return inspect.Signature([p.replace(annotation=empty) for p in params])


def register(channel: Channel) -> Channel:
    """Add (or replace) a channel under its name. A channel missing an attribute of the
    ``Channel`` protocol, or with a method that cannot take the protocol's arguments, is a
    TypeError naming both, here rather than halfway through a send."""
    for attr in ("name", "label", "help"):
        if not isinstance(getattr(channel, attr, None), str):
            raise TypeError(f"channel {channel!r}: {attr} must be a string (the Channel protocol)")
    for method, (args, kwargs) in _CALLS.items():
        try:
            inspect.signature(getattr(channel, method)).bind(*args, **kwargs)
        except (AttributeError, TypeError, ValueError) as exc:
            raise TypeError(f"channel {channel.name!r}: {method} must be callable as "
                            f"{method}{_protocol(method)} (the Channel protocol): {exc}") from None
    _CHANNELS[channel.name] = channel
    return channel


def unregister(name: str) -> None:
    _CHANNELS.pop(name, None)


def names() -> list[str]:
    """Every channel's name, without importing any channel's SDK."""
    return sorted({*BUILT_IN, *_CHANNELS})


def get(name: str) -> Channel:
    if name not in _CHANNELS and name in BUILT_IN:
        module, attr = BUILT_IN[name].where.split(":")
        register(getattr(importlib.import_module(module), attr))
    try:
        return _CHANNELS[name]
    except KeyError:
        raise ExamError(f"no notification channel {name!r} "
                        f"(channels: {', '.join(names())})") from None


def deliver(store: Store, channel: Channel, settings: Any, nids: Sequence[int],
            sleep: Any = None) -> list[dict[str, Any]]:
    """Send recorded notifications; each outcome is recorded, none touches stored results."""
    found = store.notifications(ids=list(nids))
    for n in found:  # before anything is sent
        if n["channel"] != channel.name:
            raise ExamError(f"notification {n['id']} was made for {n['channel']}: resend it with "
                            f"exam notify {n['channel']} --resend {n['id']}")
    results = []
    for n in found:
        if n["status"] == "delivered":
            results.append({**n, "outcome": "already delivered"})
            continue
        try:
            tries = channel.send(settings, n["target"], n["payload"], n["retry_key"],
                                 sleep=sleep, made=n["created_at"])
        except DeliveryError as exc:
            store.update_notification(n["id"], "failed", 1, str(exc))
            results.append({**n, "status": "failed", "outcome": str(exc)})
            continue
        store.update_notification(n["id"], "delivered", tries)
        results.append({**n, "status": "delivered",
                        "outcome": f"delivered in {tries} attempt(s)"})
    return results


def notify_runs(store: Store, channel: Channel, settings: Any, run_ids: Sequence[int],
                compare_to: str | None = None, sleep: Any = None) -> list[dict[str, Any]]:
    """Summarise these runs, record one notification per send, deliver them."""

    return notify_summaries(store, channel, settings, summaries_for(store, run_ids, compare_to),
                            run_ids, sleep=sleep)


def notify_summaries(store: Store, channel: Channel, settings: Any, summaries: Sequence[Any],
                     run_ids: Sequence[int], batch: str | None = None,
                     sleep: Any = None) -> list[dict[str, Any]]:
    """Record one notification per send of these summaries (about ``run_ids``, under
    ``batch``: a fresh one by default) and deliver them."""
    payloads = channel.payloads(summaries, settings)
    batch = batch or uuid.uuid4().hex
    nids = [store.add_notification(batch=batch, channel=channel.name,
                                   target=channel.target(settings), run_ids=run_ids,
                                   retry_key=str(uuid.uuid4()), payload=payload)
            for payload in payloads]
    return deliver(store, channel, settings, nids, sleep=sleep)
