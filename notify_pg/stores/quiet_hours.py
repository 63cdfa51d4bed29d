"""The repository of ``quiet_hours`` (Q1-Q7; docs/postgresql.md, Quiet hours).

Every write of a person first takes a transaction-scoped advisory lock of that person, so the
writes of one person run one after the other and each ``quiet_hours.updated`` carries the
complete list as of its own commit, in ascending id. A write whose list would make the event
payload larger than `StoreConfig.event_payload_max_bytes` is refused with `LimitReached` and
stores nothing. A put with the stored values changes nothing and appends no event. A create
repeated by the person with the same idempotency key returns the rule stored the first time and
writes nothing, so a client may send a create again after a lost answer.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import time
from typing import TypedDict

import attrs

from notify_core.hints.quiet import QuietRule
from notify_core.values.errors import UsageError
from notify_core.values.zones import validate_time_zone
from notify_pg.db.errors import Conflict, NotFound
from notify_pg.db.ids import new_id
from notify_pg.db.seam import Conn, Seam
from notify_pg.stores.events import QUIET_HOURS_UPDATED, EventLog, NewEvent
from notify_pg.stores.ports import PeoplePort
from notify_pg.stores.subjects import require_humans
from notify_pg.stores.values import RuleResult, StoredRule

__all__ = ["QuietHoursRepository"]


class QuietHoursRepository:
    """Reads and writes the quiet-hour rules of people (rules Q1-Q4).

    Every operation refuses a person (or actor) the host knows as an agent or an app with
    `Forbidden` (``subject_kind_not_allowed``: settings of humans only) before it reads a rule.

    Args:
        events: the event log the changes are appended to (it holds the payload bound).
        schema: the library's schema.
        people: the host's principals, to refuse agents and apps.
    """

    def __init__(self, events: EventLog, schema: str, *, people: PeoplePort) -> None:
        self._people = people
        self._events = events
        self._seam = Seam("notify_pg", schema)
        self._schema = schema

    def list(self, conn: Conn, user_id: str) -> builtins.list[StoredRule]:
        """Return all rules of the person, disabled ones included, in ascending id.

        Raises:
            Forbidden: the host knows the person as an agent or an app.
        """
        require_humans(self._people, conn, user_id, None)
        return self._list(conn, user_id)

    def create(
        self,
        conn: Conn,
        user_id: str,
        rule: QuietRule,
        *,
        rule_id: str | None = None,
        actor: str | None = None,
        idempotency_key: str | None = None,
    ) -> StoredRule:
        """Store a new rule with version 1 and append the complete list.

        Args:
            conn: the connection; runs in its transaction, or in a new one when idle.
            user_id: the person.
            rule: the validated rule (`QuietRule` refuses an unknown zone with
                ``unknown_time_zone``).
            rule_id: the id to use; a new UUIDv7 when absent.
            actor: who acts, for the event; the person when absent.
            idempotency_key: the client's key (an HTTP ``Idempotency-Key``); a create the
                person repeats with it returns the rule stored the first time and writes
                nothing (`create_idempotent`, which also tells a replay apart).

        Raises:
            Forbidden: the host knows the person or the actor as an agent or an app
                (``subject_kind_not_allowed``), checked before anything else is read.
            LimitReached: the complete list would exceed the payload bound; nothing stored.
            Conflict: ``rule_id`` is taken (``already_exists``), or ``idempotency_key`` was
                used by the person for another rule (``idempotency_key_reused``).
            UsageError: ``idempotency_key`` is empty or not a string.
        """
        if idempotency_key is not None:
            return self.create_idempotent(
                conn, user_id, rule, idempotency_key, rule_id=rule_id, actor=actor
            ).rule
        _check_zone(rule)
        with self._seam.transaction(conn):
            require_humans(self._people, conn, user_id, actor)
            current = self._locked_list(conn, user_id)
            return self._insert(conn, user_id, rule, current, rule_id=rule_id, actor=actor)

    def create_idempotent(
        self,
        conn: Conn,
        user_id: str,
        rule: QuietRule,
        idempotency_key: str,
        *,
        rule_id: str | None = None,
        actor: str | None = None,
    ) -> RuleResult:
        """Create a rule once per idempotency key of the person (Q1; docs/decisions.md).

        The first call with a key stores the rule as `create` does and remembers it under the
        key in the same transaction. A later call of the same person with the same key and
        the same rule (and ``rule_id``, when one is given) answers the rule as stored by the
        first call, version 1, also when it has been changed or deleted since, and writes
        nothing: no row, no event. The person's quiet-hours lock serializes both, so two
        parallel calls with one key store one rule. Keys of different people never meet.

        Returns:
            The rule and ``changed``: ``True`` when this call stored it, ``False`` for a
            replay (a host answers it like the first call, for example with
            ``Idempotent-Replay: true``).

        Raises:
            Forbidden: the host knows the person or the actor as an agent or an app
                (``subject_kind_not_allowed``), checked before anything else is read.
            Conflict: the person used the key for another rule (``idempotency_key_reused``,
                pointer ``/idempotency_key``), or ``rule_id`` is taken (``already_exists``).
            LimitReached: a first call whose list would exceed the payload bound.
            UsageError: ``idempotency_key`` is empty or not a string
                (``invalid_idempotency_key``).
        """
        if not isinstance(idempotency_key, str) or not idempotency_key:
            raise UsageError(
                "invalid_idempotency_key",
                "an idempotency key must be a non-empty string",
                "/idempotency_key",
            )
        _check_zone(rule)
        key = {"user_id": user_id, "idempotency_key": idempotency_key}
        with self._seam.transaction(conn):
            require_humans(self._people, conn, user_id, actor)
            current = self._locked_list(conn, user_id)
            row = self._seam.one(conn, "get_idempotent_create", key)
            if row is not None:
                stored_id, weekdays, start_local, end_local, time_zone, enabled = row
                first = StoredRule(
                    id=stored_id,
                    user_id=user_id,
                    weekdays=weekdays,
                    start_local=start_local,
                    end_local=end_local,
                    time_zone=time_zone,
                    enabled=enabled,
                    version=1,
                )
                if not first.same_values(rule) or rule_id not in (None, stored_id):
                    raise Conflict(
                        "idempotency_key_reused",
                        "the idempotency key was used for another quiet-hours rule",
                        "/idempotency_key",
                    )
                return RuleResult(rule=first, changed=False)
            new = self._insert(conn, user_id, rule, current, rule_id=rule_id, actor=actor)
            self._seam.run(conn, "insert_idempotent_create", {**key, "id": new.id, **_fields(rule)})
        return RuleResult(rule=new, changed=True)

    def _insert(
        self,
        conn: Conn,
        user_id: str,
        rule: QuietRule,
        current: Sequence[StoredRule],
        *,
        rule_id: str | None,
        actor: str | None,
    ) -> StoredRule:
        """Store a new rule and append the list; the caller holds the person's lock."""
        new = StoredRule(id=rule_id or new_id(), user_id=user_id, version=1, **_fields(rule))
        after = sorted([*current, new], key=lambda r: r.id)
        payload = _payload(after)
        self._events.check_size(payload)
        self._seam.run(conn, "insert_rule", {"id": new.id, "user_id": user_id, **_fields(rule)})
        self._append(conn, user_id, actor, payload)
        return new

    def put(
        self,
        conn: Conn,
        user_id: str,
        rule_id: str,
        rule: QuietRule,
        *,
        actor: str | None = None,
    ) -> RuleResult:
        """Replace the whole rule (an absent zone clears it) and raise its version.

        Returns:
            The stored rule and whether it changed; equal values change nothing (no event).

        Raises:
            Forbidden: the host knows the person or the actor as an agent or an app
                (``subject_kind_not_allowed``), checked before anything else is read.
            NotFound: no rule with that id belongs to the person (unknown and foreign ids
                answer the same).
            LimitReached: the complete list would exceed the payload bound; nothing stored.
        """
        _check_zone(rule)
        with self._seam.transaction(conn):
            require_humans(self._people, conn, user_id, actor)
            current = self._locked_list(conn, user_id)
            old = next((r for r in current if r.id == rule_id), None)
            if old is None:
                raise NotFound()
            if old.same_values(rule):
                return RuleResult(rule=old, changed=False)
            new = attrs.evolve(old, version=old.version + 1, **_fields(rule))
            payload = _payload([new if r.id == rule_id else r for r in current])
            self._events.check_size(payload)
            row = self._seam.one(
                conn, "update_rule", {"id": rule_id, "user_id": user_id, **_fields(rule)}
            )
            assert row is not None and row[0] == new.version
            self._append(conn, user_id, actor, payload)
        return RuleResult(rule=new, changed=True)

    def delete(self, conn: Conn, user_id: str, rule_id: str, *, actor: str | None = None) -> None:
        """Remove a rule and append the list without it.

        Raises:
            Forbidden: the host knows the person or the actor as an agent or an app
                (``subject_kind_not_allowed``), checked before anything else is read.
            NotFound: no rule with that id belongs to the person (also when already deleted).
        """
        with self._seam.transaction(conn):
            require_humans(self._people, conn, user_id, actor)
            current = self._locked_list(conn, user_id)
            if not any(r.id == rule_id for r in current):
                raise NotFound()
            self._seam.run(conn, "delete_rule", {"id": rule_id, "user_id": user_id})
            self._append(conn, user_id, actor, _payload([r for r in current if r.id != rule_id]))

    def _locked_list(self, conn: Conn, user_id: str) -> builtins.list[StoredRule]:
        self._seam.one(
            conn, "lock_person_quiet_hours", {"schema": self._schema, "user_id": user_id}
        )
        return self._list(conn, user_id)

    def _list(self, conn: Conn, user_id: str) -> builtins.list[StoredRule]:
        return [
            StoredRule(
                id=rule_id,
                user_id=user_id,
                weekdays=weekdays,
                start_local=start_local,
                end_local=end_local,
                time_zone=time_zone,
                enabled=enabled,
                version=version,
            )
            for rule_id, weekdays, start_local, end_local, time_zone, enabled, version in (
                self._seam.all(conn, "list_rules", {"user_id": user_id})
            )
        ]

    def _append(
        self, conn: Conn, user_id: str, actor: str | None, payload: dict[str, object]
    ) -> None:
        self._events.append(
            conn,
            NewEvent(
                type=QUIET_HOURS_UPDATED,
                payload=payload,
                actor=actor or user_id,
                audience=user_id,
            ),
        )


def _check_zone(rule: QuietRule) -> None:
    # QuietRule validated the zone already; checking again guards against values built with
    # attrs.evolve or object.__setattr__ around the validator.
    if rule.time_zone is not None:
        validate_time_zone(rule.time_zone)


class _Fields(TypedDict):
    weekdays: int
    start_local: time
    end_local: time
    time_zone: str | None
    enabled: bool


def _fields(rule: QuietRule) -> _Fields:
    return {
        "weekdays": rule.weekdays,
        "start_local": rule.start_local,
        "end_local": rule.end_local,
        "time_zone": rule.time_zone,
        "enabled": rule.enabled,
    }


def _payload(rules: Sequence[StoredRule]) -> dict[str, object]:
    return {"rules": [r.to_json() for r in rules]}
