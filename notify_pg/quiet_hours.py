"""The repository of ``quiet_hours`` (seed 000 note 9).

Every write of a person first takes a transaction-scoped advisory lock of that person, so the
writes of one person run one after the other and each ``quiet_hours.updated`` carries the
complete list as of its own commit, in ascending id. A write whose list would make the event
payload larger than `StoreConfig.event_payload_max_bytes` is refused with `LimitReached` and
stores nothing. A put with the stored values changes nothing and appends no event.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import time
from typing import TypedDict

import attrs

from notify_core.quiet import QuietRule, validate_time_zone
from notify_pg.errors import NotFound
from notify_pg.events import QUIET_HOURS_UPDATED, EventLog, NewEvent
from notify_pg.ids import new_id
from notify_pg.seam import Conn, Seam
from notify_pg.values import RuleResult, StoredRule

__all__ = ["QuietHoursRepository"]


class QuietHoursRepository:
    """Reads and writes the quiet-hour rules of people (rules Q1-Q4).

    Args:
        events: the event log the changes are appended to (it holds the payload bound).
        schema: the library's schema.
    """

    def __init__(self, events: EventLog, schema: str) -> None:
        self._events = events
        self._seam = Seam("notify_pg", schema)
        self._schema = schema

    def list(self, conn: Conn, user_id: str) -> builtins.list[StoredRule]:
        """Return all rules of the person, disabled ones included, in ascending id."""
        return self._list(conn, user_id)

    def create(
        self,
        conn: Conn,
        user_id: str,
        rule: QuietRule,
        *,
        rule_id: str | None = None,
        actor: str | None = None,
    ) -> StoredRule:
        """Store a new rule with version 1 and append the complete list.

        Args:
            conn: the connection; runs in its transaction, or in a new one when idle.
            user_id: the person.
            rule: the validated rule (`QuietRule` refuses an unknown zone with
                ``unknown_time_zone``).
            rule_id: the id to use; a new UUIDv7 when absent.
            actor: who acts, for the event; the person when absent.

        Raises:
            LimitReached: the complete list would exceed the payload bound; nothing stored.
            Conflict: ``rule_id`` is taken (``already_exists``).
        """
        _check_zone(rule)
        with self._seam.transaction(conn):
            current = self._locked_list(conn, user_id)
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
            NotFound: no rule with that id belongs to the person (unknown and foreign ids
                answer the same).
            LimitReached: the complete list would exceed the payload bound; nothing stored.
        """
        _check_zone(rule)
        with self._seam.transaction(conn):
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
            NotFound: no rule with that id belongs to the person (also when already deleted).
        """
        with self._seam.transaction(conn):
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
