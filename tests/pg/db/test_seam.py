"""The connection seam: psycopg errors become the library's errors in one place
(docs/postgresql.md#repositories)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pgworld import ALEX

from notify_core.hints.levels import Preference, Target
from notify_core.hints.quiet import QuietRule
from notify_pg import Conflict, NotifyStore, StorageError
from notify_pg.db.errors import translate
from notify_pg.db.ids import new_id
from notify_pg.db.seam import Seam, array_casts, array_literal
from notify_reference_host import ReferenceHost

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


def test_array_casts_are_the_parameters_only_ever_cast_to_one_array() -> None:
    text = (
        "SELECT * FROM t WHERE a = ANY(%(ids)s::text[]) AND b = ANY(%(ns)s::bigint[])"
        " AND c = ANY(%(ids)s::text[]) AND d = %(both)s AND e = ANY(%(both)s::text[])"
        " AND f = ANY(%(ts)s::timestamptz[]) AND g = %(one)s AND h = ANY(%(ks)s::integer[])"
    )
    assert array_casts(text) == {"ids": "::text[]", "ns": "::bigint[]", "ks": "::integer[]"}


def test_an_array_literal_is_made_of_plain_strs_or_ints_only() -> None:
    assert array_literal(["a", "b"], "::text[]") == '{"a","b"}'
    assert array_literal([3, -1], "::bigint[]") == "{3,-1}"
    assert array_literal([], "::integer[]") == "{}"
    for value, cast in (
        (["a", None], "::text[]"),
        ([1, True], "::integer[]"),
        (["1"], "::bigint[]"),
        (("a",), "::text[]"),
        ("{a}", "::text[]"),
        (None, "::text[]"),
    ):
        assert array_literal(value, cast) is None  # psycopg passes it as it is


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(st.text(st.characters(blacklist_characters="\x00", blacklist_categories=["Cs"]))),
    st.lists(st.integers(-(2**63), 2**63 - 1)),
)
def test_a_seams_array_literal_reads_back_as_the_list_it_was_made_of(
    conn: psycopg.Connection[Any], texts: list[str], numbers: list[int]
) -> None:
    """A list the seam sends as one literal reads back as the same values, in order."""
    seam = Seam("notify_pg", "notify")
    seam._texts = {"q": "SELECT %(texts)s::text[], %(numbers)s::bigint[]"}  # type: ignore[assignment]
    params = seam.params("q", {"texts": texts, "numbers": numbers})
    assert params is not None
    assert isinstance(params["texts"], str) and isinstance(params["numbers"], str)
    assert seam.one(conn, "q", {"texts": texts, "numbers": numbers}) == (texts, numbers)
