"""The connection seam: psycopg errors become the library's errors in one place (style.md)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from pgworld import ALEX

from notify_core.levels import Preference, Target
from notify_core.quiet import QuietRule
from notify_pg import Conflict, NotifyStore, StorageError
from notify_pg.db.errors import translate
from notify_pg.db.ids import new_id
from notify_pg.reference_host import ReferenceHost

RULE = QuietRule(weekdays=1, start_local="22:00", end_local="07:00")


def test_missing_schema_says_to_migrate(new_database: Callable[[str | None], str]) -> None:
    with psycopg.connect(new_database(None), autocommit=True) as conn:
        store = NotifyStore(ReferenceHost())
        with pytest.raises(StorageError) as info:
            store.quiet_hours.list(conn, ALEX)
    assert info.value.code == "schema_missing" and "notify db migrate" in str(info.value)


def test_closed_connection_is_storage_unavailable(
    conn: psycopg.Connection[Any], store: NotifyStore
) -> None:
    conn.close()
    with pytest.raises(StorageError) as info:
        store.preferences.upsert(conn, ALEX, Target(kind="space", id="s"), Preference(level="all"))
    assert info.value.code == "storage_unavailable" and not info.value.retryable


def test_taken_rule_id_is_a_conflict(conn: psycopg.Connection[Any], store: NotifyStore) -> None:
    store.quiet_hours.create(conn, ALEX, RULE, rule_id="r-1")
    with pytest.raises(Conflict) as info:
        store.quiet_hours.create(conn, "u-sam", RULE, rule_id="r-1")
    assert info.value.code == "already_exists"
    assert [r.id for r in store.quiet_hours.list(conn, "u-sam")] == []


def test_serialization_failures_are_retryable() -> None:
    error = translate(psycopg.errors.SerializationFailure("could not serialize"))
    assert isinstance(error, StorageError) and error.retryable
    assert error.code == "storage_conflict"


def test_new_ids_are_uuid7_in_creation_order() -> None:
    ids = [new_id() for _ in range(200)]
    assert all(uuid.UUID(i).version == 7 for i in ids)
    assert len(set(ids)) == 200
    stamps = [i[:13] for i in ids]  # the millisecond part
    assert stamps == sorted(stamps)
