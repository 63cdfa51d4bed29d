"""`NotifyStore`: the adapter in one object, `forget_person`, and the marks of forgotten ids
(U3: `forgotten`, `person_created`, `generation`, `generations`)."""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence

from notify_core.hints.levels import LevelFacts, Target
from notify_pg.db.migrate import DEFAULT_SCHEMA
from notify_pg.db.plan import Plan, one_row, run_plan
from notify_pg.db.seam import Conn, Seam, text_array
from notify_pg.stores.events import EventLog
from notify_pg.stores.facts import FactsReader
from notify_pg.stores.ports import HostPorts
from notify_pg.stores.preferences import PreferenceRepository
from notify_pg.stores.quiet_hours import QuietHoursRepository
from notify_pg.stores.values import QuietFacts, StoreConfig, StoredPreference

__all__ = [
    "NotifyStore",
    "forget_person",
    "forgotten",
    "generation",
    "generation_plan",
    "generations",
    "person_created",
]


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

    def person_created(self, conn: Conn, user_id: str) -> int:
        """Tell the library the host created a person (`person_created`)."""
        return person_created(conn, user_id, self.schema)


def forget_person(conn: Conn, user_id: str, schema: str = DEFAULT_SCHEMA) -> None:
    """Erase what the library stores about one person, in one transaction.

    The library's tables have no foreign keys into the host's tables, so a host that deletes
    a person calls this in the same transaction. It removes the person's preference rows, their
    quiet-hour rules and the idempotency keys of their creates, the personal events whose
    audience is the person (their payloads are the person's settings), their push
    registrations and their pending due work (windows, delayed pushes, badge syncs, push
    sends), the audit of their push deliveries (``push_deliveries``, ``push_holds``,
    ``push_day_counts``), their inbox entries and choices, their audited unsubscribes and the
    audit rows of their preference changes. It appends no event. Events the person only
    caused (``actor``) stay: their payloads are about other people (so do audit rows of the
    instance's settings they changed).

    It keeps a digest of the id keyed with the unsubscribe secret (generated here where
    missing), without the id itself: from then on the id is forgotten (`forgotten`, U3): a
    token signed for the person before is invalid and writes nothing, and the person gets no
    entry and no mail (``inactive``), whatever the host still says of them, until the host
    creates the id again and says so (`person_created`). The person created again is a new
    person of the next generation (`generation`).
    """
    seam = Seam("notify_pg", schema)
    params = {"user_id": user_id}
    with seam.transaction(conn):
        # First: a one-click unsubscribe of the person running now finishes before the rows
        # go, and one that waits finds the person forgotten.
        seam.one(conn, "forget_lock_person", params)
        seam.run(conn, "forget_secret", {"secret": secrets.token_bytes(_SECRET_BYTES)})
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
            # The audit of their deliveries (M6) and their pushes per day (M4).
            "forget_push_deliveries",
            "forget_push_holds",
            "forget_push_day_counts",
            # The inbox (docs/inbox.md): entries and choices of the person.
            "forget_inbox_entries",
            "forget_inbox_preferences",
            "forget_unsubscribe_audit",
            "forget_inbox_audit",
        ):
            seam.run(conn, query, params)


def forgotten(conn: Conn, user_id: str, schema: str = DEFAULT_SCHEMA) -> bool:
    """Tell whether `forget_person` erased this person and the host has not created the id
    again since (`person_created`): every unsubscribe token of theirs is invalid, and they
    get no entry and no mail (U3)."""
    params = {"user_key": user_id.encode("utf-8")}
    row = Seam("notify_pg", schema).one(conn, "forgotten_check", params)
    return bool(row is not None and row[0])


def person_created(conn: Conn, user_id: str, schema: str = DEFAULT_SCHEMA) -> int:
    """Tell the library that the host created a person; return their generation (U3).

    A host calls it in the transaction that creates the person. For an id `forget_person`
    erased, the person is a new one: they get entries and mail again, and their tokens carry
    the generation (how often the id was forgotten, ``"g"`` of U1); a token of an earlier
    generation stays invalid. For any other id it changes nothing and answers 0.

    Example:
        >>> forget_person(conn, "u-ana")  # doctest: +SKIP
        >>> person_created(conn, "u-ana")  # doctest: +SKIP
        1
    """
    params = {"user_key": user_id.encode("utf-8")}
    row = Seam("notify_pg", schema).one(conn, "person_recreated", params)
    return 0 if row is None else int(row[0])


def generation(conn: Conn, user_id: str, schema: str = DEFAULT_SCHEMA) -> int | None:
    """Return the person's generation: the only one whose unsubscribe tokens are valid (0 for
    an id never forgotten), or ``None`` while the id is forgotten (no token is valid, U3)."""
    return run_plan(conn, generation_plan(user_id, schema))


def generation_plan(user_id: str, schema: str = DEFAULT_SCHEMA) -> Plan[int | None]:
    """`generation` as a plan (`notify_pg.db.plan`)."""
    params = {"user_key": user_id.encode("utf-8")}
    row = yield from one_row(Seam("notify_pg", schema), "person_generation", params)
    if row is None:
        return 0
    return None if row[1] else int(row[0])


def generations(
    conn: Conn, user_ids: Sequence[str], schema: str = DEFAULT_SCHEMA
) -> Mapping[str, int | None]:
    """Return `generation` of the people among ``user_ids`` whose id was ever forgotten, in
    one query (a fan-out's batch, a drain's people): ``None`` for those forgotten now, who
    get no entry and no mail. The others are of generation 0 and absent here."""
    if not user_ids:
        return {}
    params = {"ids": text_array(user_ids), "keys": [u.encode("utf-8") for u in user_ids]}
    rows = Seam("notify_pg", schema).all(conn, "people_generations", params)
    return {str(person): None if now else int(n) for person, n, now in rows}


#: The length of the unsubscribe secret (`notify_pg.mail.secret.SECRET_BYTES`, U1).
_SECRET_BYTES = 32
