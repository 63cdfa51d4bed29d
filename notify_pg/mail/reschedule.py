"""Pending emails moved after a person changes their schedule (rule E3)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, Final

from notify_core.inbox.categories import CATEGORIES
from notify_core.inbox.pipeline import email_schedule
from notify_core.inbox.ports import WikiUser
from notify_core.mail import QueuedEmail, reschedule
from notify_pg.db.migrate import DEFAULT_SCHEMA
from notify_pg.db.plan import Plan, all_rows, port, run_plan, touched
from notify_pg.db.seam import Conn, Seam
from notify_pg.inbox.host_categories import host_registry_plan
from notify_pg.mail.ports import MailHostPorts

__all__ = ["reschedule_pending", "reschedule_pending_plan"]


#: The categories whose emails may wait for a digest (E3 moves only theirs).
_DIGEST: Final = frozenset(c.key for c in CATEGORIES if c.digest)
_BUILT_IN: Final = frozenset(c.key for c in CATEGORIES)


def _host_digests(schema: str, rows: list[tuple[Any, ...]]) -> Plan[frozenset[str]]:
    """The host's own digest categories (N13), read only when a pending row is of one."""
    if all(category in _BUILT_IN for _id, category, _due, _site in rows):
        return frozenset()
    known = yield from host_registry_plan(schema)
    return frozenset(key for key, category in known.items() if category.digest)


def reschedule_pending(
    conn: Conn,
    host: MailHostPorts,
    before: WikiUser,
    after: WikiUser,
    *,
    at: datetime,
    delay: timedelta,
    schema: str = DEFAULT_SCHEMA,
) -> int:
    """Move a person's pending emails after a change of their schedule (rule E3).

    The host calls it in the transaction that changes the person's ``email_schedule``,
    ``daily_hour`` or zone, with the person's values before and after and the change's time:
    every ``pending`` email of a digest category gets its due time anew from ``at`` under the
    new values (the core's `reschedule`); the others keep theirs, and an update that repeats
    the current values changes nothing. Returns how many rows moved.
    """
    plan = reschedule_pending_plan(host, before, after, at=at, delay=delay, schema=schema)
    return run_plan(conn, plan)


def reschedule_pending_plan(
    host: MailHostPorts,
    before: WikiUser,
    after: WikiUser,
    *,
    at: datetime,
    delay: timedelta,
    schema: str = DEFAULT_SCHEMA,
) -> Plan[int]:
    """`reschedule_pending` as a plan (`notify_pg.db.plan`: the host's ``inbox_site``
    through `notify_pg.db.plan.port`)."""
    seam = Seam("notify_pg", schema)
    old, new = email_schedule(before), email_schedule(after)
    if old == new and before.time_zone == after.time_zone:
        return 0
    rows = yield from all_rows(seam, "mail_pending_of", {"user_id": after.id})
    if not rows:
        return 0
    zones: dict[str, str | None] = {}
    for _id, _category, _due, site in rows:
        if site is not None and site not in zones:
            info = yield from port(host, "inbox_site", site)
            zones[site] = info.time_zone if info is not None else None
    digests = _DIGEST | (yield from _host_digests(schema, rows))
    moved = reschedule(
        (
            QueuedEmail(
                entry=str(id_),
                category=category,
                email="pending",
                email_after=due.astimezone(UTC),
                site_time_zone=zones.get(site) if site is not None else None,
            )
            for id_, category, due, site in rows
        ),
        person=after.id,
        old=old,
        new=new,
        old_time_zone=before.time_zone,
        new_time_zone=after.time_zone,
        now=at,
        digest_categories=digests,
        delay=delay,
    )
    if moved:
        ids = sorted(moved, key=int)
        params = {"ids": [int(i) for i in ids], "dues": [moved[i] for i in ids]}
        yield from touched(seam, "mail_reschedule", params)
    return len(moved)
