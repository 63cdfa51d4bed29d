"""The statements that write a fan-out's entries (`notify_pg.inbox.fanout.InboxFanOut`): the
coalescing ``INSERT ... ON CONFLICT`` parameters of a batch and the entries' due times."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import attrs

from notify_core.inbox.access import AccessCache, Group
from notify_core.inbox.coalesce import EmailState
from notify_core.inbox.fanout import EntryDecision, InboxEvent
from notify_core.inbox.pipeline import EmailAfter, due_is_shared, scheduled_email_after
from notify_core.inbox.ports import PageInfo, SiteInfo, WikiUser
from notify_core.inbox.prefs import InboxSettings
from notify_pg.db.seam import array_element, text_array

__all__ = ["EventFacts", "email_dues", "entry_statements"]


@attrs.frozen
class EventFacts:
    """What every batch of one event's fan-out shares."""

    inbox: InboxEvent
    page: PageInfo
    site: SiteInfo | None
    groups: Mapping[str, Group]
    settings: InboxSettings
    delay: timedelta
    access: AccessCache
    values: dict[str, Any]


def entry_statements(
    the_event: EventFacts,
    decisions: Sequence[EntryDecision],
    users: Mapping[str, WikiUser],
    *,
    write_batch: int,
    email_after: EmailAfter,
) -> tuple[dict[str, Any], ...]:
    """The parameters of the statements coalescing a batch, ``write_batch`` rows each, the
    due times by the cadence ``email_after``."""
    inbox, values = the_event.inbox, the_event.values
    dues = email_dues(email_after, decisions, users, values["at"], the_event.delay, the_event.site)
    # The per-person columns go as array literals built here: psycopg dumps a list element
    # by element in Python. What repeats (category, group key, in_app, email state, due
    # time) goes once per kind, and each row names its kind by number (from 1): an event's
    # rows are of a few kinds, the due times of a few schedules.
    group_keys: dict[str, str] = {}
    pending, none = EmailState.PENDING.value, EmailState.NONE.value
    out: list[dict[str, Any]] = []
    for start in range(0, len(decisions), write_batch):
        end = start + write_batch
        kinds: dict[tuple[str, bool, bool, datetime | None], str] = {}
        numbers: list[str] = []
        for d, due in zip(decisions[start:end], dues[start:end], strict=True):
            kind = (d.category.key, d.in_app, d.email, due)
            number = kinds.get(kind)
            if number is None:
                number = kinds[kind] = str(len(kinds) + 1)
                if kind[0] not in group_keys:
                    group_keys[kind[0]] = d.category.group_key(inbox.ids)
            numbers.append(number)
        out.append(
            {
                **values,
                "user_id": text_array([d.recipient for d in decisions[start:end]]),
                "kind": _array(numbers),
                "category": text_array([k[0] for k in kinds]),
                "group_key": text_array([group_keys[k[0]] for k in kinds]),
                "in_app": _array(["t" if k[1] else "f" for k in kinds]),
                "email_state": text_array([pending if k[2] else none for k in kinds]),
                "email_after": _array([_timestamp_literal(k[3]) for k in kinds]),
            }
        )
    return tuple(out)


def email_dues(
    email_after: EmailAfter,
    decisions: Sequence[EntryDecision],
    users: Mapping[str, WikiUser],
    at: datetime,
    delay: timedelta,
    site: SiteInfo | None,
) -> list[datetime | None]:
    """``email_after`` of each decision (``None`` without email), as a replay computes it.

    With the default cadence a due time that depends on no person (``immediate``, a
    category without digest) is computed once per schedule (`due_is_shared`).
    """
    shared_ok = email_after is scheduled_email_after
    shared: dict[tuple[str, int | None, bool], datetime] = {}
    out: list[datetime | None] = []
    for d in decisions:
        if not d.email:
            out.append(None)
            continue
        user = users.get(d.recipient)
        if not shared_ok or user is None:
            out.append(email_after(user, d.category, at, delay, site))
            continue
        schedule, hour = user.email_schedule, user.daily_hour
        if type(schedule) is not str or not (hour is None or type(hour) is int):
            out.append(email_after(user, d.category, at, delay, site))
            continue
        memo = (schedule, hour, d.category.digest)
        due = shared.get(memo)
        if due is None:
            due = email_after(user, d.category, at, delay, site)
            if due_is_shared(user, d.category):
                shared[memo] = due
        out.append(due)
    return out


def _array(elements: Sequence[str]) -> str:
    """A PostgreSQL array literal of elements already quoted (or ``NULL``)."""
    return "{" + ",".join(elements) + "}"


def _timestamp_literal(value: datetime | None) -> str:
    """An array element of an instant (``NULL`` for none)."""
    if value is None:
        return "NULL"
    # isoformat keeps the offset and the microseconds: the same instant as psycopg's.
    return array_element(value.isoformat())
