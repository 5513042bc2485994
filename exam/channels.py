"""The notification channels shipped, by name: where each one's code is, and which of the
settings it reads are secrets.

A channel is declared here once, with its secrets: ``exam.notify`` imports its code from
``where`` on first use (the SDKs are heavy), and redaction (``exam.redact.service_secrets``)
reads its secrets from here, so an agent echoing a channel's token never has it stored,
whether or not that channel was ever imported. A leaf: the pipeline, which redacts, sits
below the channels, which read reports.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ChannelEntry:
    where: str  # "module:attribute" of the channel (the ``exam.notify.Channel`` protocol)
    # environment settings whose values are secrets (a token; "Bearer xyz": xyz alone too)
    secrets: tuple[str, ...] = ()
    # environment settings holding a URL whose userinfo and query values are secrets
    secret_urls: tuple[str, ...] = ()


BUILT_IN: dict[str, ChannelEntry] = {
    "line": ChannelEntry("exam.notify.line:CHANNEL",
                         secrets=("LINE_CHANNEL_ACCESS_TOKEN", "LINE_CHANNEL_SECRET")),
    "webhook": ChannelEntry("exam.notify.webhook:CHANNEL", secrets=("EXAM_WEBHOOK_AUTH",),
                            secret_urls=("EXAM_WEBHOOK_URL",)),
}
