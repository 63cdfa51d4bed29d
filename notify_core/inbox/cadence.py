"""When an inbox entry's email falls due (rules E2, E3), as the inbox pipeline asks it.

`scheduled_email_after` is `notify_core.mail.email_after_for` (E2) with the person's schedule
and zones, and the site's zone; `reschedule_entries` moves a person's pending entries when
their schedule changes (E3). Split from `notify_core.inbox.pipeline` so that the fan-out, the
drain and the reads each live in a module of their own; the pipeline re-exports every name.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Final

import attrs

from notify_core.events.log import Event
from notify_core.inbox.categories import CATEGORIES, Category
from notify_core.inbox.coalesce import EmailState
from notify_core.inbox.ports import EntryStore, SiteInfo, WikiFacts, WikiUser
from notify_core.mail import EmailSchedule, QueuedEmail, Schedule, email_after_for, reschedule

__all__ = [
    "DIGEST_CATEGORIES",
    "EmailAfter",
    "due_is_shared",
    "email_schedule",
    "immediate_email_after",
    "reschedule_entries",
    "reschedule_person",
    "scheduled_email_after",
]

#: The categories whose mails may wait for a digest (E2, E3).
DIGEST_CATEGORIES: Final = frozenset(c.key for c in CATEGORIES if c.digest)

#: Computes ``email_after`` (E2) for a person (``None``: unknown), a category, an instant, the
#: email delay and the entry's site (``None``: unknown).
EmailAfter = Callable[[WikiUser | None, Category, datetime, timedelta, SiteInfo | None], datetime]


def immediate_email_after(
    user: WikiUser | None,
    category: Category,
    now: datetime,
    delay: timedelta,
    site: SiteInfo | None = None,
) -> datetime:
    """E2's ``immediate`` rule: ``now + email_delay``, whatever the schedule."""
    return now + delay


def email_schedule(user: WikiUser) -> EmailSchedule:
    """Return a person's email schedule with its daily hour (E2)."""
    schedule, hour = user.email_schedule, user.daily_hour
    if type(schedule) is str and (hour is None or type(hour) is int):
        return _schedule(schedule, hour)
    return EmailSchedule(schedule=schedule, daily_hour=hour)


@functools.lru_cache(maxsize=256)
def _schedule(schedule: str, hour: int | None) -> EmailSchedule:
    # A fan-out asks for the schedule of every person it starts an email for, and there are a
    # handful of distinct ones: a validated value (frozen, so shared) is built once per pair.
    # Only exact str and int/None reach here, so equal keys (1 == True) mean equal values; an
    # invalid pair raises and is not cached.
    return EmailSchedule(schedule=schedule, daily_hour=hour)


def scheduled_email_after(
    user: WikiUser | None,
    category: Category,
    now: datetime,
    delay: timedelta,
    site: SiteInfo | None = None,
) -> datetime:
    """`email_after_for` (E2) with the person's schedule, zone and the site's zone.

    A person the host does not know is ``immediate``; a category with ``digest: no`` always is.
    """
    if user is None:
        return now + delay
    return email_after_for(
        email_schedule(user),
        now,
        person=user.id,
        digest=category.digest,
        time_zone=user.time_zone,
        site_time_zone=site.time_zone if site is not None else None,
        delay=delay,
    )


def due_is_shared(user: WikiUser, category: Category) -> bool:
    """Whether `scheduled_email_after` gives every person of this schedule the same due time.

    ``immediate`` and a category without digest give ``now + delay`` whoever the person is
    (`email_after_for` reads neither the person's offset nor a zone then); ``hourly`` and
    ``daily`` depend on the person's offset.
    """
    return not category.digest or email_schedule(user).schedule is Schedule.IMMEDIATE


def reschedule_entries(
    wiki: WikiFacts,
    entries: EntryStore,
    before: WikiUser | None,
    after: WikiUser | None,
    now: datetime,
) -> None:
    """E3: a changed schedule (daily: hour or zone) moves the person's pending entries.

    ``before`` and ``after`` are the person as the host knew them before and after the
    update; ``now`` is the update's time.
    """
    if before is None or after is None or before == after:
        return
    pending = [e for e in entries.unread_of(after.id) if e.state.email is EmailState.PENDING]
    if not pending:
        return
    zones = {}
    for entry in pending:
        site = wiki.site(entry.target.site) if entry.target.site is not None else None
        zones[entry.id] = site.time_zone if site is not None else None
    moved = reschedule(
        (
            QueuedEmail(
                entry=e.id,
                category=e.category,
                email=e.state.email.value,
                email_after=e.state.email_after,
                site_time_zone=zones[e.id],
            )
            for e in pending
        ),
        person=after.id,
        old=email_schedule(before),
        new=email_schedule(after),
        old_time_zone=before.time_zone,
        new_time_zone=after.time_zone,
        now=now,
        digest_categories=frozenset(k for k, c in wiki.categories().items() if c.digest),
        delay=wiki.email_delay(),
    )
    for entry in pending:
        due = moved.get(entry.id)
        if due is not None:
            entries.save(entry._replace(state=attrs.evolve(entry.state, email_after=due)))


def reschedule_person(
    wiki: WikiFacts, entries: EntryStore, event: Event, before: WikiUser | None
) -> None:
    """E3 on a ``user.updated`` event: `reschedule_entries` from the person as they were
    (``before``) to the person as the host knows them once the event is recorded."""
    after = wiki.user(str(event.payload["user"]))
    reschedule_entries(wiki, entries, before, after, event.occurred_at)
