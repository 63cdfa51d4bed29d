"""The replay's mail drain (rule E4): due entries planned into mails and marked.

At a drain instant the pending entries due at or before it are grouped into mails by the
core's `plan_mails` with the host's facts of that instant, and each entry is marked ``sent``
or ``skipped`` (an email-only entry closes with it, N12). A replay sends nothing: the
`MailLine` values are its output. Split from `notify_core.inbox.pipeline` (which re-exports
`MailLine`) so that the drain side of the pipeline has a room of its own.
"""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from notify_core.inbox.access import PageFacts
from notify_core.inbox.coalesce import mail_done
from notify_core.inbox.drain import DrainAccess, MailSkip, plan_mails
from notify_core.inbox.ports import Entry, EntryStore, WikiFacts

__all__ = ["MailLine", "drain_mails"]


class MailLine(NamedTuple):
    """One mail of a drain, or one reason due entries were skipped (formats.md section 4)."""

    at: datetime
    recipient: str
    site: str
    decision: str
    entries: tuple[Entry, ...]
    reason: MailSkip | None = None
    template: str | None = None
    more: int = 0
    unsubscribe: tuple[str, ...] = ()


def drain_mails(wiki: WikiFacts, entries: EntryStore, at: datetime) -> list[MailLine]:
    """Send (in a replay: decide) the mails of every pending entry due at or before ``at``.

    Entries sent become ``sent``, skipped ones ``skipped``; email-only ones close (N12).
    The people, sections, groups and pages are those of the instant: the person is checked
    again (``inactive``, ``no_access``, E4). Lines come by recipient, then site: the send
    first, then skips by reason.
    """
    due = entries.due(at)
    if not due:
        return []

    def site_on(site: str) -> bool:
        info = wiki.site(site)
        return info is None or info.notifications

    pages: dict[str, PageFacts] = {}
    for page_id in {e.target.page for e in due if e.target.page is not None}:
        page = wiki.page(page_id)
        if page is not None:
            pages[page_id] = page.access
    plans = plan_mails(
        due,
        site_on=site_on,
        people=wiki.people({e.person for e in due}),
        settings=wiki.settings(),
        first_site=wiki.first_site(),
        access=DrainAccess(groups=wiki.groups(), pages=pages),
        known=wiki.categories(),
    )
    lines = []
    for plan in plans:
        sent = plan.skip is None
        for entry in plan.sent if sent else plan.entries:
            entries.save(entry._replace(state=mail_done(entry.state, sent)))
        lines.append(
            MailLine(
                at,
                plan.recipient,
                plan.site,
                "send" if sent else "skip",
                plan.entries,
                plan.skip,
                plan.template,
                plan.more,
                plan.unsubscribe,
            )
        )
    return lines
