"""`NotifyStore`: the adapter in one object, and `forget_person`."""

from __future__ import annotations

from collections.abc import Sequence

from notify_core.hints.levels import LevelFacts, Target
from notify_pg.db.migrate import DEFAULT_SCHEMA
from notify_pg.db.plan import Plan, one_row, run_plan
from notify_pg.db.seam import Conn, Seam
from notify_pg.stores.events import EventLog
from notify_pg.stores.facts import FactsReader
from notify_pg.stores.ports import HostPorts
from notify_pg.stores.preferences import PreferenceRepository
from notify_pg.stores.quiet_hours import QuietHoursRepository
from notify_pg.stores.values import QuietFacts, StoreConfig, StoredPreference

__all__ = ["NotifyStore", "forget_person", "forgotten", "forgotten_plan"]


class NotifyStore:
    """The PostgreSQL adapter of notify, bound to one schema and one host.

    Args:
        host: the host's implementation of the ports (`notify_pg.stores.ports.HostPorts`).
        schema: the library's schema (migrated with `notify_pg.db.migrate`).
        config: the adapter's settings.

    Attributes:
        events: the event log appender.
        preferences: the ``notification_preferences`` repository.
        quiet_hours: the ``quiet_hours`` repository.
        facts: the batched reads of the pipeline.

    Example:
        >>> store = NotifyStore(ReferenceHost(), schema="notify")  # doctest: +SKIP
        >>> store.preferences.put(conn, "u-ana", Target(kind="channel", id="c-dev"),
        ...                       Preference(level="all"))  # doctest: +SKIP
    """

    def __init__(
        self,
        host: HostPorts,
        *,
        schema: str = DEFAULT_SCHEMA,
        config: StoreConfig | None = None,
    ) -> None:
        self.schema = schema
        self.config = config or StoreConfig()
        self.events = EventLog(schema, max_payload_bytes=self.config.event_payload_max_bytes)
        self.preferences = PreferenceRepository(host, self.events, schema)
        self.quiet_hours = QuietHoursRepository(self.events, schema, people=host)
        self.facts = FactsReader(host, self.config, schema)

    def level_facts(
        self, conn: Conn, thread_id: str, user_ids: Sequence[str]
    ) -> dict[str, LevelFacts]:
        """Return the L3 facts of many people for one thread (`FactsReader.level_facts`)."""
        return self.facts.level_facts(conn, thread_id, user_ids)

    def quiet_rules(self, conn: Conn, user_ids: Sequence[str]) -> dict[str, QuietFacts]:
        """Return the zones and enabled rules of many people (`FactsReader.quiet_rules`)."""
        return self.facts.quiet_rules(conn, user_ids)

    def remove_preferences_on_archive(
        self, conn: Conn, target: Target, *, actor: str | None = None
    ) -> list[StoredPreference]:
        """Clean up after archiving a space or channel (see `remove_for_archive`)."""
        return self.preferences.remove_for_archive(conn, target, actor=actor)

    def forget_person(self, conn: Conn, user_id: str) -> None:
        """Erase what the library stores about a person (`forget_person`)."""
        forget_person(conn, user_id, self.schema)


def forget_person(conn: Conn, user_id: str, schema: str = DEFAULT_SCHEMA) -> None:
    """Erase what the library stores about one person, in one transaction.

    The library's tables have no foreign keys into the host's tables, so a host that deletes
    a person calls this in the same transaction. It removes the person's preference rows, their
    quiet-hour rules and the idempotency keys of their creates, the personal events whose
    audience is the person (their payloads are the person's settings), their push
    registrations and their pending due work (windows, delayed pushes, badge syncs, push
    sends), their inbox entries and choices, their audited unsubscribes and the audit rows of
    their preference changes. It appends no event. Events the person only caused (``actor``)
    stay: their payloads are about other people (so do audit rows of the instance's settings
    they changed).

    It keeps a digest of the id keyed with the unsubscribe secret (`forgotten`): a token
    signed for the person before is then invalid and writes nothing (U3), without the id
    being kept.
    """
    seam = Seam("notify_pg", schema)
    params = {"user_id": user_id}
    with seam.transaction(conn):
        # First: a one-click unsubscribe of the person running now finishes before the rows
        # go, and one that waits finds the person forgotten.
        seam.one(conn, "forget_lock_person", params)
        seam.run(conn, "forget_remember", {"user_key": user_id.encode("utf-8")})
        seam.run(conn, "forget_preferences", params)
        seam.run(conn, "forget_quiet_hours", params)
        seam.run(conn, "forget_quiet_hours_idempotency", params)
        seam.run(conn, "forget_events", params)
        # Part 2 (the pipeline): registrations and due work of the person.
        for query in (
            "forget_push_registrations",
            "forget_windows",
            "forget_releases",
            "forget_badge_syncs",
            "forget_push_sends",
            # The inbox (docs/inbox.md): entries and choices of the person.
            "forget_inbox_entries",
            "forget_inbox_preferences",
            "forget_unsubscribe_audit",
            "forget_inbox_audit",
        ):
            seam.run(conn, query, params)


def forgotten(conn: Conn, user_id: str, schema: str = DEFAULT_SCHEMA) -> bool:
    """Tell whether `forget_person` erased this person (an unsubscribe token of theirs is
    invalid, U3)."""
    return run_plan(conn, forgotten_plan(user_id, schema))


def forgotten_plan(user_id: str, schema: str = DEFAULT_SCHEMA) -> Plan[bool]:
    """`forgotten` as a plan (`notify_pg.db.plan`)."""
    params = {"user_key": user_id.encode("utf-8")}
    row = yield from one_row(Seam("notify_pg", schema), "forgotten_check", params)
    return bool(row is not None and row[0])
