"""The event log in the replay format (formats.md section 2, G5) and its reader."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from pgworld import ALEX, SCHEMA, T, thread

from notify_core.hints.levels import Preference
from notify_core.values.errors import UsageError
from notify_core.values.instants import parse_instant
from notify_pg import LimitReached, NewEvent, NotifyStore, read_event_log

Conn = psycopg.Connection[Any]


def test_reader_yields_the_replay_format_in_seq_order(conn: Conn, store: NotifyStore) -> None:
    early = datetime(2026, 10, 23, 8, 0, tzinfo=UTC)
    store.events.append(
        conn, NewEvent(type="space.created", payload={"space": "s-eng"}, occurred_at=early)
    )
    store.events.append_many(
        conn,
        [
            NewEvent(
                type="message.created",
                payload={"message": "m-1", "thread": "t-42"},
                actor="u-ben",
                scope={"space": "s-eng", "channel": "c-dev", "thread": "t-42"},
                occurred_at=early - timedelta(hours=1),  # goes back: raised to the last instant
            ),
            NewEvent(type="user.created", payload={"user": "u-ana", "kind": "human"}),
        ],
    )
    log = list(read_event_log(conn, SCHEMA, page_size=2))
    assert [e["seq"] for e in log] == sorted(e["seq"] for e in log)  # type: ignore[type-var]
    assert log[0] == {
        "seq": log[0]["seq"],
        "type": "space.created",
        "occurred_at": "2026-10-23T08:00:00Z",
        "payload": {"space": "s-eng"},
    }
    assert log[1]["occurred_at"] == "2026-10-23T08:00:00Z"
    assert log[1]["scope"] == {"space": "s-eng", "channel": "c-dev", "thread": "t-42"}
    assert list(log[1]) == ["seq", "type", "occurred_at", "actor", "scope", "payload"]
    instants = [parse_instant(e["occurred_at"]) for e in log]
    assert instants == sorted(instants)
    assert list(read_event_log(conn, SCHEMA, after_seq=int(log[1]["seq"]))) == log[2:]  # type: ignore[call-overload]


def test_occurred_at_never_decreases_with_writes(
    conn: Conn, store: NotifyStore, world: None
) -> None:
    for lv in ["all", "mute", "mentions", "all"]:
        store.preferences.put(conn, ALEX, thread(T), Preference(level=lv))
    instants = [parse_instant(e["occurred_at"]) for e in read_event_log(conn, SCHEMA)]
    assert len(instants) == 4 and instants == sorted(instants)


def test_null_and_oversized_payloads_are_refused(conn: Conn, store: NotifyStore) -> None:
    """G5: no null in any JSON the library writes; the log bounds the payload size."""
    with pytest.raises(UsageError) as info:
        NewEvent(type="x", payload={"a": [1, None]})
    assert "/payload/a/1" in str(info.value)
    with pytest.raises(LimitReached):
        store.events.append(conn, NewEvent(type="x", payload={"a": "x" * 70000}))
    assert list(read_event_log(conn, SCHEMA)) == []


def test_origin_is_kept_and_user_is_not_stored(conn: Conn, store: NotifyStore) -> None:
    """formats.md section 4: a wiki event's top-level origin (default user) reads back as
    written; the default is stored as NULL, so it reads back without the member."""
    store.events.append_many(
        conn,
        [
            NewEvent(type="page.edited", payload={"page": "p-1"}, origin="import"),
            NewEvent(type="page.deleted", payload={"page": "p-1"}, actor="ana", origin="bulk"),
            NewEvent(type="page.restored", payload={"page": "p-1"}, actor="ana", origin="user"),
            NewEvent(type="page.edited", payload={"page": "p-1"}, actor="ana"),
        ],
    )
    log = list(read_event_log(conn, SCHEMA))
    assert [e.get("origin") for e in log] == ["import", "bulk", None, None]
    assert list(log[1]) == ["seq", "type", "occurred_at", "actor", "origin", "payload"]
    stored = conn.execute(f"SELECT origin FROM {SCHEMA}.event_log ORDER BY seq").fetchall()
    assert stored == [("import",), ("bulk",), (None,), (None,)]
    with pytest.raises(UsageError, match="origin"):
        NewEvent(type="page.edited", payload={"page": "p-1"}, origin="sync")
