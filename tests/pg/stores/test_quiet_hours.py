"""Quiet-hour rules: lifecycle, validation, the payload bound and the batched read
(seed 000 notes 9 and 13, rules Q1-Q7, formats.md section 2 ``quiet_hours.updated``)."""

from __future__ import annotations

import importlib
import logging
from datetime import UTC, datetime
from typing import Any

import attrs
import psycopg
import pytest
from pgworld import ALEX, ROBIN, SAM, SCHEMA, events, last_seq

from notify_core.hints.quiet import QuietRule, in_quiet_hours
from notify_core.values.errors import InvalidRule, UsageError
from notify_core.values.zones import validate_time_zone
from notify_pg import Conflict, LimitReached, NotFound, NotifyStore, StoreConfig, payload_size
from notify_reference_host import ReferenceHost

pytestmark = pytest.mark.usefixtures("world")

Conn = psycopg.Connection[Any]
FRIDAY = 16


def rule(**kw: Any) -> QuietRule:
    values: dict[str, Any] = {
        "weekdays": 31,
        "start_local": "19:00",
        "end_local": "07:00",
        "time_zone": "Europe/Berlin",
        "enabled": True,
    }
    values.update(kw)
    return QuietRule(**values)


def test_lifecycle(conn: Conn, store: NotifyStore) -> None:
    """Seed 000 TestQuietHours_Lifecycle, notes 9d and 9e."""
    first = store.quiet_hours.create(conn, ALEX, rule())
    assert first.version == 1 and first.time_zone == "Europe/Berlin"
    [event] = events(conn)
    assert event["type"] == "quiet_hours.updated"
    assert event["actor"] == ALEX and event["audience"] == ALEX and "scope" not in event
    assert event["payload"] == {
        "rules": [
            {
                "id": first.id,
                "weekdays": 31,
                "start_local": "19:00",
                "end_local": "07:00",
                "time_zone": "Europe/Berlin",
                "enabled": True,
                "version": 1,
            }
        ]
    }
    second = store.quiet_hours.create(conn, ALEX, rule(weekdays=96, end_local="19:00"))
    assert [r["id"] for r in events(conn)[-1]["payload"]["rules"]] == sorted(  # type: ignore[index]
        [first.id, second.id]
    )

    seq = last_seq(conn)
    same = store.quiet_hours.put(conn, ALEX, first.id, rule())
    assert not same.changed and same.rule == first and last_seq(conn) == seq

    cleared = store.quiet_hours.put(conn, ALEX, first.id, rule(time_zone=None))
    assert cleared.changed and cleared.rule.version == 2 and cleared.rule.time_zone is None
    item = next(r for r in events(conn)[-1]["payload"]["rules"] if r["id"] == first.id)  # type: ignore[union-attr,index]
    assert "time_zone" not in item and item["version"] == 2

    store.quiet_hours.delete(conn, ALEX, first.id)
    assert events(conn)[-1]["payload"] == {"rules": [second.to_json()]}
    with pytest.raises(NotFound):
        store.quiet_hours.delete(conn, ALEX, first.id)
    assert [r.id for r in store.quiet_hours.list(conn, ALEX)] == [second.id]


def test_foreign_and_unknown_rules_are_not_found(conn: Conn, store: NotifyStore) -> None:
    """Seed 000 TestQuietHours_Lifecycle and TestPersonalDataNotRetrievable: identical 404."""
    mine = store.quiet_hours.create(conn, ALEX, rule())
    seq = last_seq(conn)
    errors = []
    for rule_id in (mine.id, "00000000-0000-7000-8000-000000000000"):
        with pytest.raises(NotFound) as put:
            store.quiet_hours.put(conn, SAM, rule_id, rule(weekdays=1))
        with pytest.raises(NotFound) as delete:
            store.quiet_hours.delete(conn, SAM, rule_id)
        errors += [str(put.value), str(delete.value)]
    assert len(set(errors)) == 1
    assert store.quiet_hours.list(conn, SAM) == []
    assert last_seq(conn) == seq
    assert store.quiet_hours.list(conn, ALEX) == [mine]


def test_create_repeated_with_its_idempotency_key_writes_nothing(
    conn: Conn, store: NotifyStore
) -> None:
    """Seed 000 note 9d and TestQuietHours_Lifecycle: a replay with the same key answers the
    stored rule and adds no row and no event; the stored answer outlives a later put and
    delete; another person's key of the same text is theirs."""
    first = store.quiet_hours.create_idempotent(conn, ALEX, rule(), "key-1")
    assert first.changed and first.rule.version == 1
    seq = last_seq(conn)
    again = store.quiet_hours.create_idempotent(conn, ALEX, rule(), "key-1")
    assert again == attrs.evolve(first, changed=False)
    assert store.quiet_hours.create(conn, ALEX, rule(), idempotency_key="key-1") == first.rule
    assert store.quiet_hours.list(conn, ALEX) == [first.rule] and last_seq(conn) == seq
    # The answer is what the first call answered, also after the rule changed or went.
    store.quiet_hours.put(conn, ALEX, first.rule.id, rule(weekdays=1))
    store.quiet_hours.delete(conn, ALEX, first.rule.id)
    seq = last_seq(conn)
    replay = store.quiet_hours.create_idempotent(conn, ALEX, rule(), "key-1", rule_id=first.rule.id)
    assert replay == attrs.evolve(first, changed=False)
    assert store.quiet_hours.list(conn, ALEX) == [] and last_seq(conn) == seq
    # Keys are per person; a new key creates again.
    sams = store.quiet_hours.create_idempotent(conn, SAM, rule(), "key-1")
    assert sams.changed and sams.rule.id != first.rule.id
    other = store.quiet_hours.create(conn, ALEX, rule(), idempotency_key="key-2")
    assert store.quiet_hours.list(conn, ALEX) == [other] and last_seq(conn) == seq + 2


def test_idempotency_key_sent_with_another_rule_is_refused(conn: Conn, store: NotifyStore) -> None:
    """A key names one request: sent again with another rule (or another rule id) it is a
    conflict, and nothing is written."""
    first = store.quiet_hours.create(conn, ALEX, rule(), idempotency_key="k")
    seq = last_seq(conn)
    for call in (
        lambda: store.quiet_hours.create(conn, ALEX, rule(weekdays=1), idempotency_key="k"),
        lambda: store.quiet_hours.create(conn, ALEX, rule(time_zone=None), idempotency_key="k"),
        lambda: store.quiet_hours.create_idempotent(conn, ALEX, rule(), "k", rule_id="r-other"),
    ):
        with pytest.raises(Conflict) as info:
            call()
        assert info.value.as_json() == {
            "code": "idempotency_key_reused",
            "pointer": "/idempotency_key",
        }
    assert store.quiet_hours.list(conn, ALEX) == [first] and last_seq(conn) == seq
    for bad in ("", None, 7):
        with pytest.raises(UsageError) as usage:
            store.quiet_hours.create_idempotent(conn, ALEX, rule(), bad)  # type: ignore[arg-type]
        assert usage.value.code == "invalid_idempotency_key"
    assert last_seq(conn) == seq


def test_forget_person_removes_the_idempotency_keys(conn: Conn, store: NotifyStore) -> None:
    store.quiet_hours.create(conn, ALEX, rule(), idempotency_key="k")
    store.quiet_hours.create(conn, SAM, rule(), idempotency_key="k")
    store.forget_person(conn, ALEX)
    left = conn.execute(f"SELECT user_id FROM {SCHEMA}.quiet_hours_idempotency").fetchall()
    assert left == [(SAM,)]
    assert store.quiet_hours.create_idempotent(conn, ALEX, rule(), "k").changed


@pytest.mark.parametrize("zone", ["Mars/Olympus", "Local", "", "posix/Europe/Berlin"])
def test_unknown_time_zone(zone: str) -> None:
    """Seed 000 TestQuietHours_Validation (Q3): unknown_time_zone at /time_zone."""
    with pytest.raises(InvalidRule) as info:
        rule(time_zone=zone)
    assert info.value.as_json() == {"code": "unknown_time_zone", "pointer": "/time_zone"}


@pytest.mark.parametrize(
    ("fields", "code", "pointer"),
    [
        ({"weekdays": 0}, "invalid_weekdays", "/weekdays"),
        ({"weekdays": 128}, "invalid_weekdays", "/weekdays"),
        ({"start_local": "24:00"}, "invalid_local_time", "/start_local"),
        ({"end_local": "7:00"}, "invalid_local_time", "/end_local"),
    ],
)
def test_malformed_rules_never_reach_the_store(
    fields: dict[str, Any], code: str, pointer: str
) -> None:
    """Seed 000 TestQuietHours_Validation (Q2, Q3): the repository takes only valid rules."""
    with pytest.raises(InvalidRule) as info:
        rule(**fields)
    assert info.value.as_json() == {"code": code, "pointer": pointer}


def test_whole_day_rule_is_stored(conn: Conn, store: NotifyStore) -> None:
    """Seed 000 TestQuietHours_Validation: 00:00 to 00:00 is a whole day and is stored."""
    stored = store.quiet_hours.create(conn, ALEX, rule(start_local="00:00", end_local="00:00"))
    assert store.quiet_hours.list(conn, ALEX) == [stored]


def test_list_is_bound_by_payload_size(conn: Conn, host: ReferenceHost) -> None:
    """Seed 000 TestQuietHours_ListBoundByPayloadSize, note 9c: limit_reached, nothing stored."""
    item_size = payload_size({"rules": [_item()]}) - payload_size({"rules": []})
    bound = payload_size({"rules": []}) + 3 * item_size + 2  # three rules and their commas fit
    store = NotifyStore(host, schema=SCHEMA, config=StoreConfig(event_payload_max_bytes=bound))
    created = [store.quiet_hours.create(conn, ALEX, rule()) for _ in range(3)]
    seq = last_seq(conn)
    with pytest.raises(LimitReached) as info:
        store.quiet_hours.create(conn, ALEX, rule())
    assert info.value.as_json() == {"code": "limit_reached", "pointer": ""}
    with pytest.raises(LimitReached):
        store.quiet_hours.create(conn, ALEX, rule(), idempotency_key="full")
    assert len(store.quiet_hours.list(conn, ALEX)) == 3 and last_seq(conn) == seq
    # The refused create kept no key: once there is room, the same key creates.
    store.quiet_hours.delete(conn, ALEX, created[2].id)
    assert store.quiet_hours.create_idempotent(conn, ALEX, rule(), "full").changed
    store.quiet_hours.delete(conn, ALEX, store.quiet_hours.list(conn, ALEX)[-1].id)
    created = [*created[:2], store.quiet_hours.create(conn, ALEX, rule())]
    seq = last_seq(conn)
    kept = store.quiet_hours.put(conn, ALEX, created[0].id, rule(start_local="20:00"))
    assert kept.changed
    with pytest.raises(LimitReached):
        store.quiet_hours.put(
            conn, ALEX, created[0].id, rule(time_zone="America/Argentina/Buenos_Aires")
        )
    assert store.quiet_hours.list(conn, ALEX)[0].start_local.hour == 20


def _item() -> dict[str, object]:
    """An item of the size a stored rule() has (a UUIDv7 id is 36 characters)."""
    return {
        "id": "019a0000-0000-7000-8000-000000000000",
        "weekdays": 31,
        "start_local": "19:00",
        "end_local": "07:00",
        "time_zone": "Europe/Berlin",
        "enabled": True,
        "version": 1,
    }


def test_berlin_case_through_quiet_rules(
    conn: Conn, store: NotifyStore, host: ReferenceHost
) -> None:
    """Seed 000 TestQuietRules_UserTimeZone (13 3.4, Q1, Q4): the person's zone applies."""
    host.set_time_zone(conn, ALEX, "Europe/Berlin")
    created = store.quiet_hours.create(
        conn, ALEX, rule(weekdays=FRIDAY, start_local="22:00", time_zone=None)
    )
    facts = store.quiet_rules(conn, [ALEX])[ALEX]
    assert facts.user_zone == "Europe/Berlin"
    assert in_quiet_hours(facts.rules, datetime(2026, 10, 23, 21, 30, tzinfo=UTC), facts.user_zone)
    assert not in_quiet_hours(
        facts.rules, datetime(2026, 10, 23, 19, 30, tzinfo=UTC), facts.user_zone
    )
    store.quiet_hours.put(
        conn, ALEX, created.id, rule(weekdays=FRIDAY, start_local="22:00", time_zone="UTC")
    )
    facts = store.quiet_rules(conn, [ALEX])[ALEX]
    assert not in_quiet_hours(
        facts.rules, datetime(2026, 10, 23, 21, 30, tzinfo=UTC), facts.user_zone
    )
    assert in_quiet_hours(facts.rules, datetime(2026, 10, 23, 22, 30, tzinfo=UTC), facts.user_zone)


def test_quiet_rules_batch_zone_sources_and_fallback(
    conn: Conn,
    store: NotifyStore,
    host: ReferenceHost,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Seed 000 TestQuietRules_ZoneSources (note 13, Q7, docs/decisions.md first row)."""
    host.set_time_zone(conn, SAM, "Atlantis/Capital")
    host.set_time_zone(conn, ALEX, "Europe/Berlin")
    store.quiet_hours.create(conn, ALEX, rule(time_zone="Europe/Lisbon"))
    store.quiet_hours.create(conn, ALEX, rule(time_zone=None))
    store.quiet_hours.create(conn, ALEX, rule(enabled=False))
    store.quiet_hours.create(conn, SAM, rule(time_zone=None))
    store.quiet_hours.create(conn, SAM, rule(time_zone="Europe/Berlin"))
    # A zone that no longer loads, written the way an old row would look.
    conn.execute(
        f"UPDATE {SCHEMA}.quiet_hours SET time_zone = 'Atlantis/Capital' "
        "WHERE user_id = %s AND time_zone = 'Europe/Berlin'",
        [SAM],
    )
    facts_module = importlib.import_module("notify_pg.stores.facts")
    loads: list[str] = []

    def counting(name: object, pointer: str = "/time_zone") -> str:
        loads.append(str(name))
        return validate_time_zone(name, pointer)

    monkeypatch.setattr(facts_module, "validate_time_zone", counting)
    with caplog.at_level(logging.WARNING, logger="notify_pg"):
        facts = store.quiet_rules(conn, [ALEX, SAM, ROBIN, ALEX])
    assert set(facts) == {ALEX, SAM, ROBIN}
    assert [r.time_zone for r in facts[ALEX].rules] == ["Europe/Lisbon", None]
    assert facts[ALEX].user_zone == "Europe/Berlin"
    assert [r.time_zone for r in facts[SAM].rules] == [None, "UTC"]
    assert facts[SAM].user_zone == "UTC"
    assert facts[ROBIN].user_zone is None and facts[ROBIN].rules == ()
    assert sorted(loads) == sorted(set(loads))  # each zone name once per call
    warnings = [r for r in caplog.records if r.name == "notify_pg"]
    assert len(warnings) == 1
    text = warnings[0].getMessage()
    assert "Atlantis" not in text and SAM not in text and ALEX not in text
    # The listed rule keeps its stored zone; only evaluation falls back.
    assert {r.time_zone for r in store.quiet_hours.list(conn, SAM)} == {None, "Atlantis/Capital"}
