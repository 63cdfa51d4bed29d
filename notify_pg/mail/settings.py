"""Audited changes of a person's notification preferences and of the instance's settings on
PostgreSQL (rules H2, H2a).

- `preferences` / `change_preferences`: the person's effective grid (every category and
  channel, its default, whether their own row differs, whether email is available to them by
  N4, their email schedule and daily hour), changed member by member;
- `instance_settings` / `change_settings`: ``email_delay_s``, ``retention_days``,
  ``mail_batch_size`` and ``sections`` (never the unsubscribe secret);
- `audit_log`: the audit rows, newest first.

Each change is one transaction: the current values are read under a lock, the core decides
(`notify_core.inbox.admin`), the new values are written (the choices in the library's
``inbox_preferences``, the schedule and the settings through the host's ports,
`AdminHostPorts`), the person's pending emails move when their schedule changed (E3), and one
row of ``inbox_audit`` records who, when, the person or ``instance``, and the members before
and after. A change that changes nothing writes no row; reads are never audited.

H2a is kept at the write: a change of ``retention_days`` and a change of a schedule both take
one advisory lock first, then read what the check weighs, so two at once cannot both pass.
Writes a host makes itself, around these functions, are outside that guarantee.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Final, Protocol

import attrs
from psycopg.types.json import Jsonb

from notify_core.inbox.admin import (
    InstanceSettings,
    PreferenceState,
    audit_diff,
    preference_audit_json,
    preference_change,
    preference_grid,
    settings_change,
    visible_categories,
)
from notify_core.inbox.categories import Category
from notify_core.inbox.pipeline import email_schedule
from notify_core.inbox.prefs import CHANNELS, InboxPrefs
from notify_core.mail.cadence import EmailSchedule
from notify_core.mail.message import mail_locale
from notify_pg.db.errors import NotFound
from notify_pg.db.migrate import DEFAULT_SCHEMA
from notify_pg.db.plan import Plan, port, run_plan
from notify_pg.db.seam import Conn, Seam
from notify_pg.inbox.host_categories import host_registry, host_registry_plan
from notify_pg.inbox.reads import InboxPreferences
from notify_pg.mail.drain import MailHostPorts, reschedule_pending

__all__ = [
    "INSTANCE",
    "PREFERENCE_PORTS",
    "AdminHostPorts",
    "AuditRow",
    "audit_log",
    "change_preferences",
    "change_settings",
    "instance_settings",
    "lock_retention",
    "preferences",
    "preferences_plan",
]

#: The subject of an audit row of the instance's settings.
INSTANCE: Final = "instance"


class AdminHostPorts(MailHostPorts, Protocol):
    """What the administration reads and writes of the host (its people and settings): the
    mail drain's ports (`MailHostPorts`: sites, people with their addresses, sections and
    whether mail is configured, schedules) and the methods below.

    `notify_reference_host.wiki.ReferenceWiki` implements it on its tables; every method
    gets the connection of the change's transaction.
    """

    def inbox_retention_days(self, conn: Conn) -> int:
        """Return how many days entries are kept (H3)."""

    def inbox_email_delay(self, conn: Conn) -> timedelta:
        """Return the instance's email delay (E2)."""

    def inbox_instance_settings(self, conn: Conn) -> InstanceSettings:
        """Return the settings an administrator changes."""

    def inbox_set_instance_settings(self, conn: Conn, settings: InstanceSettings) -> None:
        """Store the settings an administrator changed."""

    def inbox_digest_schedules(self, conn: Conn) -> bool:
        """Tell whether anyone has an ``hourly`` or ``daily`` email schedule (H2a)."""

    def inbox_set_schedule(self, conn: Conn, person: str, schedule: EmailSchedule) -> bool:
        """Set a person's email schedule; ``False`` when the host has no such person."""


@attrs.frozen(kw_only=True)
class AuditRow:
    """One audited change: ``subject`` is the person, or `INSTANCE` for the settings."""

    id: int
    at: datetime
    actor: str
    kind: str
    subject: str
    before: Mapping[str, Any]
    after: Mapping[str, Any]

    def as_json(self) -> dict[str, Any]:
        """The row as ``notify records inbox-audit --json`` prints it (instants RFC 3339)."""
        from notify_core.values.instants import format_instant

        return {
            "id": self.id,
            "at": format_instant(self.at),
            "actor": self.actor,
            "kind": self.kind,
            "subject": self.subject,
            "before": dict(self.before),
            "after": dict(self.after),
        }


def lock_retention(conn: Conn, schema: str = DEFAULT_SCHEMA) -> None:
    """Take H2a's lock for the rest of the caller's transaction.

    Every write that H2a weighs takes it before it reads what the check needs: a change of
    ``retention_days`` or ``email_delay_s`` and a change of someone's schedule. A host that
    writes any of them itself (as the reference host's log loader does) takes it too.
    """
    Seam("notify_pg", schema).one(conn, "admin_lock_retention")


def _state(conn: Conn, host: AdminHostPorts, person: str, schema: str) -> PreferenceState:
    rows = InboxPreferences(schema).rows(conn, [person]).get(person, {})
    user = host.inbox_users(conn, [person]).get(person)
    schedule = email_schedule(user) if user is not None else EmailSchedule()
    return PreferenceState(prefs=InboxPrefs(rows=rows), schedule=schedule)


def _grid(
    conn: Conn,
    host: AdminHostPorts,
    person: str,
    state: PreferenceState,
    known: Mapping[str, Category],
) -> dict[str, Any]:
    settings = host.inbox_settings(conn)
    facts = host.inbox_people(conn, [person]).get(person)
    # N4: mail configured for the instance, an address, and the address verified.
    available = bool(settings.mail_configured and facts and facts.email and facts.verified)
    # N13: a host category shows only to those holding its visible_to.
    shown: Iterable[Category] = known.values()
    if any(c.visible_to is not None for c in known.values()):
        groups = facts.groups if facts is not None else frozenset()
        shown = visible_categories(known, groups, host.inbox_groups(conn))
    user = host.inbox_users(conn, [person]).get(person)
    locale = mail_locale(user.locale if user is not None else None, None)
    return preference_grid(state, settings, available, shown, locale=locale)


def preferences(
    conn: Conn, host: AdminHostPorts, person: str, *, schema: str = DEFAULT_SCHEMA
) -> dict[str, Any]:
    """Return a person's effective preference grid (`notify_core.inbox.admin.preference_grid`).

    Not audited: a read.
    """
    return run_plan(conn, preferences_plan(host, person, schema=schema))


#: The host's ports `preferences_plan` reads (their plan forms, where the host has them).
PREFERENCE_PORTS: Final = ("inbox_users", "inbox_settings", "inbox_people", "inbox_groups")


def preferences_plan(
    host: AdminHostPorts, person: str, *, schema: str = DEFAULT_SCHEMA
) -> Plan[dict[str, Any]]:
    """`preferences` as a plan (`notify_pg.db.plan`: the host's ports of `PREFERENCE_PORTS`
    through `notify_pg.db.plan.port`), the same grid."""
    known = yield from host_registry_plan(schema)
    rows = (yield from InboxPreferences(schema).rows_plan([person])).get(person, {})
    user = (yield from port(host, "inbox_users", [person])).get(person)
    schedule = email_schedule(user) if user is not None else EmailSchedule()
    state = PreferenceState(prefs=InboxPrefs(rows=rows), schedule=schedule)
    settings = yield from port(host, "inbox_settings")
    facts = (yield from port(host, "inbox_people", [person])).get(person)
    # N4: mail configured for the instance, an address, and the address verified.
    available = bool(settings.mail_configured and facts and facts.email and facts.verified)
    # N13: a host category shows only to those holding its visible_to.
    shown: Iterable[Category] = known.values()
    if any(c.visible_to is not None for c in known.values()):
        groups = facts.groups if facts is not None else frozenset()
        shown = visible_categories(known, groups, (yield from port(host, "inbox_groups")))
    locale = mail_locale(user.locale if user is not None else None, None)
    return preference_grid(state, settings, available, shown, locale=locale)


def _audit(
    seam: Seam,
    conn: Conn,
    *,
    kind: str,
    person: str | None,
    actor: str,
    at: datetime,
    before: Mapping[str, Any],
    after: Mapping[str, Any],
) -> bool:
    old, new = audit_diff(before, after)
    if not old and not new:
        return False
    seam.run(
        conn,
        "admin_audit_insert",
        {
            "at": at,
            "actor": actor,
            "kind": kind,
            "user_id": person,
            "before": Jsonb(old),
            "after": Jsonb(new),
        },
    )
    return True


def change_preferences(
    conn: Conn,
    host: AdminHostPorts,
    person: str,
    body: object,
    *,
    actor: str | None = None,
    at: datetime | None = None,
    schema: str = DEFAULT_SCHEMA,
) -> dict[str, Any]:
    """Change a person's grid member by member and audit it, in one transaction (H2, H2a).

    Args:
        body: the change as JSON (`notify_core.inbox.admin.preference_change`).
        actor: who changes it (default the person).
        at: the change's time (default now): the audit's time and E3's.

    Returns:
        The grid after the change.

    Raises:
        InvalidInput: a malformed change, or one H2a refuses (``invalid_retention``);
            nothing was written.
        NotFound: a schedule change for a person the host does not know.
        StorageError: PostgreSQL failed; nothing was written.
    """
    when = at or datetime.now(UTC)
    seam = Seam("notify_pg", schema)
    schedule_named = isinstance(body, dict) and ("email_schedule" in body or "daily_hour" in body)
    with seam.transaction(conn):
        if schedule_named:
            seam.one(conn, "admin_lock_retention")
        seam.one(conn, "admin_lock_person", {"user_id": person})
        state = _state(conn, host, person, schema)
        known = host_registry(conn, schema=schema)
        new = preference_change(
            state, body, retention_days=host.inbox_retention_days(conn), known=known
        )
        store = InboxPreferences(schema)
        for category in known.values():
            was, now = state.prefs.choice(category), new.prefs.choice(category)
            for channel in CHANNELS:
                if getattr(was, channel) != getattr(now, channel):
                    store.set(conn, person, category.key, channel, getattr(now, channel))
        if new.schedule != state.schedule:
            _set_schedule(conn, host, person, new.schedule, when, schema)
        _audit(
            seam,
            conn,
            kind="preferences",
            person=person,
            actor=actor or person,
            at=when,
            before=preference_audit_json(state, known),
            after=preference_audit_json(new, known),
        )
        return _grid(conn, host, person, new, known)


def _set_schedule(
    conn: Conn,
    host: AdminHostPorts,
    person: str,
    schedule: EmailSchedule,
    at: datetime,
    schema: str,
) -> None:
    before = host.inbox_users(conn, [person]).get(person)
    if before is None or not host.inbox_set_schedule(conn, person, schedule):
        raise NotFound("not_found", "the host knows no such person", "/email_schedule")
    after = before._replace(email_schedule=schedule.schedule.value, daily_hour=schedule.daily_hour)
    # E3: the person's pending digest emails move with the schedule, in this transaction.
    reschedule_pending(
        conn, host, before, after, at=at, delay=host.inbox_email_delay(conn), schema=schema
    )


def instance_settings(conn: Conn, host: AdminHostPorts) -> dict[str, Any]:
    """Return the instance's settings and, read-only, whether mail is configured.

    Never the unsubscribe secret. Not audited: a read.
    """
    return {
        **host.inbox_instance_settings(conn).as_json(),
        "mail_configured": host.inbox_settings(conn).mail_configured,
    }


def change_settings(
    conn: Conn,
    host: AdminHostPorts,
    body: object,
    *,
    actor: str,
    at: datetime | None = None,
    schema: str = DEFAULT_SCHEMA,
) -> dict[str, Any]:
    """Change the instance's settings member by member and audit it, in one transaction.

    Args:
        body: the change as JSON (`notify_core.inbox.admin.settings_change`).
        actor: the administrator.
        at: the change's time (default now).

    Returns:
        The settings after the change (as `instance_settings`).

    Raises:
        InvalidInput: a malformed change, a retention under 2 days while anyone has an
            hourly or daily schedule, or a delay left at or above ``retention_days - 1`` days
            (``invalid_retention``, H2a); nothing was written.
        StorageError: PostgreSQL failed; nothing was written.
    """
    when = at or datetime.now(UTC)
    seam = Seam("notify_pg", schema)
    with seam.transaction(conn):
        seam.one(conn, "admin_lock_retention")
        current = host.inbox_instance_settings(conn)
        new = settings_change(current, body, digest_schedules=host.inbox_digest_schedules(conn))
        if new != current:
            host.inbox_set_instance_settings(conn, new)
            _audit(
                seam,
                conn,
                kind="settings",
                person=None,
                actor=actor,
                at=when,
                before=current.as_json(),
                after=new.as_json(),
            )
        return instance_settings(conn, host)


def audit_log(
    conn: Conn,
    *,
    person: str | None = None,
    instance: bool = False,
    since: datetime | None = None,
    limit: int = 100,
    schema: str = DEFAULT_SCHEMA,
) -> list[AuditRow]:
    """Return the newest ``limit`` audited changes, newest first.

    Args:
        person: only the changes of this person's preferences.
        instance: only the changes of the instance's settings.
        since: only changes at or after this instant.
    """
    rows = Seam("notify_pg", schema).all(
        conn,
        "admin_audit_list",
        {"user_id": person, "instance": instance, "since": since, "limit": limit},
    )
    return [
        AuditRow(
            id=int(id_),
            at=at,
            actor=actor,
            kind=kind,
            subject=INSTANCE if user_id is None else user_id,
            before=before,
            after=after,
        )
        for id_, at, actor, kind, user_id, before, after in rows
    ]
