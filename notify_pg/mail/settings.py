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
from notify_core.inbox.ports import WikiUser
from notify_core.inbox.prefs import CHANNELS, InboxPrefs
from notify_core.mail.cadence import EmailSchedule
from notify_core.mail.message import mail_locale
from notify_pg.db.errors import NotFound
from notify_pg.db.migrate import DEFAULT_SCHEMA
from notify_pg.db.plan import Plan, atomic, one_row, port, run_plan, touched
from notify_pg.db.seam import Conn, Seam
from notify_pg.inbox.host_categories import host_registry_plan
from notify_pg.inbox.reads import InboxPreferences
from notify_pg.mail.drain import MailHostPorts
from notify_pg.mail.reschedule import reschedule_pending_plan

__all__ = [
    "INSTANCE",
    "PREFERENCE_CHANGE_PORTS",
    "PREFERENCE_PORTS",
    "SETTINGS_CHANGE_PORTS",
    "SETTINGS_PORTS",
    "AdminHostPorts",
    "AuditRow",
    "audit_log",
    "change_preferences",
    "change_preferences_plan",
    "change_settings",
    "change_settings_plan",
    "instance_settings",
    "instance_settings_plan",
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
    gets the connection of the change's transaction. A host may give each method a plan form
    too (``inbox_retention_days_plan()`` for ``inbox_retention_days(conn)``, and so on:
    `notify_pg.db.plan.port`): with those of `PREFERENCE_CHANGE_PORTS` and
    `SETTINGS_CHANGE_PORTS`, ``notify serve`` answers the preference and settings routes on
    its asyncio connections, with no thread.
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


def preferences(
    conn: Conn, host: AdminHostPorts, person: str, *, schema: str = DEFAULT_SCHEMA
) -> dict[str, Any]:
    """Return a person's effective preference grid (`notify_core.inbox.admin.preference_grid`).

    Not audited: a read.
    """
    return run_plan(conn, preferences_plan(host, person, schema=schema))


#: The host's ports `preferences_plan` reads (their plan forms, where the host has them).
PREFERENCE_PORTS: Final = ("inbox_users", "inbox_settings", "inbox_people", "inbox_groups")
#: The host's ports `change_preferences_plan` reads and writes (E3's move of pending emails
#: reads ``inbox_site``).
PREFERENCE_CHANGE_PORTS: Final = (
    *PREFERENCE_PORTS,
    "inbox_retention_days",
    "inbox_set_schedule",
    "inbox_email_delay",
    "inbox_site",
)
#: The host's ports `instance_settings_plan` reads.
SETTINGS_PORTS: Final = ("inbox_instance_settings", "inbox_settings")
#: The host's ports `change_settings_plan` reads and writes.
SETTINGS_CHANGE_PORTS: Final = (
    *SETTINGS_PORTS,
    "inbox_digest_schedules",
    "inbox_set_instance_settings",
)


def _state_plan(
    host: AdminHostPorts, person: str, schema: str
) -> Plan[tuple[PreferenceState, WikiUser | None]]:
    """The person's choices and schedule, and what the host holds of them (``None``: not a
    person the host knows)."""
    rows = (yield from InboxPreferences(schema).rows_plan([person])).get(person, {})
    user = (yield from port(host, "inbox_users", [person])).get(person)
    schedule = email_schedule(user) if user is not None else EmailSchedule()
    return PreferenceState(prefs=InboxPrefs(rows=rows), schedule=schedule), user


def _grid_plan(
    host: AdminHostPorts,
    person: str,
    state: PreferenceState,
    known: Mapping[str, Category],
    user: WikiUser | None,
) -> Plan[dict[str, Any]]:
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


def preferences_plan(
    host: AdminHostPorts, person: str, *, schema: str = DEFAULT_SCHEMA
) -> Plan[dict[str, Any]]:
    """`preferences` as a plan (`notify_pg.db.plan`: the host's ports of `PREFERENCE_PORTS`
    through `notify_pg.db.plan.port`), the same grid."""
    known = yield from host_registry_plan(schema)
    state, user = yield from _state_plan(host, person, schema)
    return (yield from _grid_plan(host, person, state, known, user))


def _audit_plan(
    seam: Seam,
    *,
    kind: str,
    person: str | None,
    actor: str,
    at: datetime,
    before: Mapping[str, Any],
    after: Mapping[str, Any],
) -> Plan[bool]:
    old, new = audit_diff(before, after)
    if not old and not new:
        return False
    params = {
        "at": at,
        "actor": actor,
        "kind": kind,
        "user_id": person,
        "before": Jsonb(old),
        "after": Jsonb(new),
    }
    yield from touched(seam, "admin_audit_insert", params)
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
    plan = change_preferences_plan(host, person, body, actor=actor, at=at, schema=schema)
    return run_plan(conn, plan)


def change_preferences_plan(
    host: AdminHostPorts,
    person: str,
    body: object,
    *,
    actor: str | None = None,
    at: datetime | None = None,
    schema: str = DEFAULT_SCHEMA,
) -> Plan[dict[str, Any]]:
    """`change_preferences` as a plan (`notify_pg.db.plan`; run async when the host has the
    plan forms of `PREFERENCE_CHANGE_PORTS`): one transaction step, which raises as
    `change_preferences` does."""
    when = at or datetime.now(UTC)
    steps = _preference_steps(host, person, body, actor or person, when, schema)
    return (yield from atomic(steps))


def _preference_steps(
    host: AdminHostPorts, person: str, body: object, actor: str, when: datetime, schema: str
) -> Plan[dict[str, Any]]:
    seam = Seam("notify_pg", schema)
    if isinstance(body, dict) and ("email_schedule" in body or "daily_hour" in body):
        yield from one_row(seam, "admin_lock_retention")
    yield from one_row(seam, "admin_lock_person", {"user_id": person})
    state, user = yield from _state_plan(host, person, schema)
    known = yield from host_registry_plan(schema)
    retention = yield from port(host, "inbox_retention_days")
    new = preference_change(state, body, retention_days=retention, known=known)
    store = InboxPreferences(schema)
    for category in known.values():
        was, now = state.prefs.choice(category), new.prefs.choice(category)
        for channel in CHANNELS:
            if getattr(was, channel) != getattr(now, channel):
                yield from store.set_plan(person, category.key, channel, getattr(now, channel))
    if new.schedule != state.schedule:
        yield from _set_schedule_plan(host, person, new.schedule, when, schema)
    yield from _audit_plan(
        seam,
        kind="preferences",
        person=person,
        actor=actor,
        at=when,
        before=preference_audit_json(state, known),
        after=preference_audit_json(new, known),
    )
    return (yield from _grid_plan(host, person, new, known, user))


def _set_schedule_plan(
    host: AdminHostPorts, person: str, schedule: EmailSchedule, at: datetime, schema: str
) -> Plan[None]:
    before = (yield from port(host, "inbox_users", [person])).get(person)
    if before is None or not (yield from port(host, "inbox_set_schedule", person, schedule)):
        raise NotFound("not_found", "the host knows no such person", "/email_schedule")
    after = before._replace(email_schedule=schedule.schedule.value, daily_hour=schedule.daily_hour)
    # E3: the person's pending digest emails move with the schedule, in this transaction.
    delay = yield from port(host, "inbox_email_delay")
    yield from reschedule_pending_plan(host, before, after, at=at, delay=delay, schema=schema)


def instance_settings(conn: Conn, host: AdminHostPorts) -> dict[str, Any]:
    """Return the instance's settings and, read-only, whether mail is configured.

    Never the unsubscribe secret. Not audited: a read.
    """
    return run_plan(conn, instance_settings_plan(host))


def instance_settings_plan(host: AdminHostPorts) -> Plan[dict[str, Any]]:
    """`instance_settings` as a plan (the host's ports of `SETTINGS_PORTS`)."""
    current = yield from port(host, "inbox_instance_settings")
    settings = yield from port(host, "inbox_settings")
    return {**current.as_json(), "mail_configured": settings.mail_configured}


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
    return run_plan(conn, change_settings_plan(host, body, actor=actor, at=at, schema=schema))


def change_settings_plan(
    host: AdminHostPorts,
    body: object,
    *,
    actor: str,
    at: datetime | None = None,
    schema: str = DEFAULT_SCHEMA,
) -> Plan[dict[str, Any]]:
    """`change_settings` as a plan (`notify_pg.db.plan`; run async when the host has the
    plan forms of `SETTINGS_CHANGE_PORTS`): one transaction step."""
    when = at or datetime.now(UTC)
    return (yield from atomic(_settings_steps(host, body, actor, when, schema)))


def _settings_steps(
    host: AdminHostPorts, body: object, actor: str, when: datetime, schema: str
) -> Plan[dict[str, Any]]:
    seam = Seam("notify_pg", schema)
    yield from one_row(seam, "admin_lock_retention")
    current = yield from port(host, "inbox_instance_settings")
    digests = yield from port(host, "inbox_digest_schedules")
    new = settings_change(current, body, digest_schedules=digests)
    if new != current:
        yield from port(host, "inbox_set_instance_settings", new)
        yield from _audit_plan(
            seam,
            kind="settings",
            person=None,
            actor=actor,
            at=when,
            before=current.as_json(),
            after=new.as_json(),
        )
    return (yield from instance_settings_plan(host))


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
