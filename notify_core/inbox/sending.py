"""The replay's mail drain (rule E4): due entries planned into mails and marked.

At a drain instant the pending entries due at or before it are grouped into mails by the
core's `plan_mails` with the host's facts of that instant, and each entry is marked ``sent``
or ``skipped`` (an email-only entry closes with it, N12). A replay sends nothing: the
`MailLine` values are its output. Split from `notify_core.inbox.pipeline` (which re-exports
`MailLine`) so that the drain side of the pipeline has a room of its own.

With the people's preference records (`RecordFacts`), a mail the checks of E4 let go is
checked against the record in effect at the drain (M1-M5): ``suspended`` and
``record_channel_off`` skip it, over the cap (``frequency_cap``) its entries wait to the
person's next local midnight, where they go as one mail; a mail sent names its record (M6)
and, under ``"format": "plain"``, has the text body only (M5).
"""

from __future__ import annotations

from datetime import datetime
from typing import Final, NamedTuple

import attrs

from notify_core.inbox.access import PageFacts
from notify_core.inbox.coalesce import mail_done
from notify_core.inbox.drain import DrainAccess, MailSkip, plan_mails
from notify_core.inbox.ports import Entry, EntryStore, WikiFacts
from notify_core.values.record_rules import (
    DeliveryChannel,
    RecordFacts,
    RecordInEffect,
    RecordReason,
    local_day,
    next_local_midnight,
    verdict,
)

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
    #: The preference id of the record that governed a sent mail (M6).
    record: str | None = None
    #: The record asks for the text body only (M5).
    plain: bool = False


_EMAIL: Final = DeliveryChannel.EMAIL


def drain_mails(
    wiki: WikiFacts, entries: EntryStore, at: datetime, records: RecordFacts | None = None
) -> list[MailLine]:
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
    held = False
    for plan in plans:
        sent = plan.skip is None
        record = None
        if sent and records is not None:
            record, skip = _record_check(wiki, entries, records, plan.recipient, plan.sent, at)
            if skip is not None:
                lines.append(MailLine(at, plan.recipient, plan.site, "skip", plan.sent, skip))
                held = True
                continue
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
                None if record is None else record.preference_id,
                record is not None and record.email.plain,
            )
        )
    if held:  # a send turned into a skip goes among its (person, site)'s skips, by reason
        lines.sort(key=_line_order)
    return lines


def _line_order(line: MailLine) -> tuple[str, str, bool, str]:
    return (line.recipient, line.site, line.reason is not None, line.reason or "")


def _record_check(
    wiki: WikiFacts,
    entries: EntryStore,
    records: RecordFacts,
    person: str,
    due: tuple[Entry, ...],
    at: datetime,
) -> tuple[RecordInEffect | None, MailSkip | None]:
    """M1-M4 at the drain for one mail about to go: its record, or why it does not go.

    A mail allowed is counted on the person's local day. Over the cap its entries wait to
    the person's next local midnight (still ``pending``); suspended or off, they are skipped.
    """
    record = records.records_in_effect((person,), at).get(person)
    if record is None:
        return None, None
    info = wiki.user(person)
    zone = info.time_zone if info is not None else None
    day = local_day(at, zone)
    reason = verdict(record, _EMAIL, records.deliveries_on(person, _EMAIL, day))
    if reason is None:
        records.count_delivery(person, _EMAIL, day)
        return record, None
    if reason is RecordReason.FREQUENCY_CAP:
        wait = next_local_midnight(at, zone)
        for entry in due:
            entries.save(entry._replace(state=attrs.evolve(entry.state, email_after=wait)))
    else:
        for entry in due:
            entries.save(entry._replace(state=mail_done(entry.state, False)))
    return record, MailSkip(reason.value)
